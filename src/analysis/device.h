// Small accelerator summaries over the model's device tables, for any source
// (CUDA, OpenCL, HSA; strata or imported traces): per-device busy and idle time,
// kernels by total time, transfers with bandwidth, and API-to-device launch
// latency. Pure functions of the model; plain result structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/summary.h"
#include "model/trace.h"

namespace strata::analysis {

struct DeviceUsage {
  int32_t device = 0;      // Device::id / DeviceActivityTable.device
  std::string label;       // "device 64 (pthread-skylake, opencl)"
  int64_t first_ns = 0;    // first activity start
  int64_t last_ns = 0;     // last activity end
  // Union of the intervals in which the device executed work (kernels, copies,
  // fills, other queue commands), across its queues: concurrent kernels count
  // once. Synchronization records are waits, not work, and are left out.
  int64_t busy_ns = 0;
  int64_t idle_ns = 0;     // (last - first) - busy
  uint64_t kernels = 0, copies = 0, fills = 0, other = 0;
  int64_t kernel_ns = 0, copy_ns = 0, fill_ns = 0;  // summed durations
};
std::vector<DeviceUsage> DeviceUsages(const model::Trace& t);

struct KernelStats {
  int32_t device = 0;
  std::string name;
  uint64_t count = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0;
};
// Per device, kernels grouped by name, largest total first.
std::vector<KernelStats> KernelsByTime(const model::Trace& t);

struct TransferStats {
  int32_t device = 0;
  model::CopyKind kind = model::CopyKind::kUnknown;
  uint64_t count = 0;
  uint64_t bytes = 0;
  int64_t total_ns = 0;
  double bandwidth = 0;  // bytes / total time, B/s (0 when no time)
  uint64_t pinned = 0, pageable = 0;  // copies by host-memory kind (the rest unknown)
};
// Per device and direction.
std::vector<TransferStats> Transfers(const model::Trace& t);

struct LaunchLatency {
  std::string api;            // the API call's name
  Distribution latency;       // device start - API call start, ns
  Distribution call;          // API call duration, ns
};
// Device activities linked to the API call that caused them, by call name,
// most activities first.
std::vector<LaunchLatency> LaunchLatencies(const model::Trace& t);

// "device 64 (name, api)" from the trace's device descriptions.
std::string DeviceLabel(const model::Trace& t, int32_t device);

}  // namespace strata::analysis

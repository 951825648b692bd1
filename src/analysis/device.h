// Per-device activity over the model's device tables, for any source (CUDA,
// OpenCL, HSA; strata or imported traces): busy and idle time and activity
// counts. Kernels, transfers and launch statistics are in kernels.h/transfers.h.
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

// "device 64 (name, api)" from the trace's device descriptions.
std::string DeviceLabel(const model::Trace& t, int32_t device);

}  // namespace strata::analysis

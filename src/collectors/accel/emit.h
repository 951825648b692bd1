// What every accelerator collector (CUPTI, OpenCL, HSA) writes, encoded once:
// the event classes of format/schema_accel.h through the recorder's API
// (recorder/runtime.h). Collectors fill plain structs; these functions lay out
// the payloads. Nothing here blocks or allocates on the per-call paths.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "format/schema_accel.h"
#include "recorder/runtime.h"

namespace strata::accel {

using format::ApiDomain;
using format::CopyKind;
using format::MemoryKind;
using format::MemoryOp;
using format::SyncType;
using recorder::ExternalStream;

// --- API calls on the calling thread (stamped now) ------------------------------

void ApiBegin(uint32_t name, ApiDomain domain, uint64_t correlation);
void ApiEnd(int64_t result);

struct LaunchArgs {
  uint64_t correlation = 0;
  uint32_t kernel = 0;  // interned name
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t shared_mem = 0;
  uint32_t device = 0;
  uint64_t queue = 0;
};
void ApiLaunch(const LaunchArgs& a);
void ApiArg(uint32_t key, uint64_t value);
void ApiArgStr(uint32_t key, uint32_t value);
void RangeBegin(uint64_t id, uint32_t name, uint32_t domain);
void RangeEnd(uint64_t id);

// --- API calls and tool overhead reported afterwards, with explicit times -------

void ApiCall(ExternalStream* thread_stream, uint64_t start, uint64_t end, uint32_t name, ApiDomain domain,
             uint64_t correlation, int64_t result);
void Overhead(ExternalStream* thread_stream, uint64_t start, uint64_t end, uint32_t name);

// --- device activity (trace-clock ns) ---------------------------------------------

// A device queue's stream with its route (recorder::RouteOf), looked up once
// per stream: kernels and copies are then written straight into the recorder's
// buffer. Collectors that hold only the stream pass it; the route is looked up
// per event.
struct Queue {
  ExternalStream* stream = nullptr;
  uint32_t route = recorder::kNoRoute;
  Queue() = default;
  Queue(ExternalStream* s) : stream(s), route(recorder::RouteOf(s)) {}  // NOLINT(google-explicit-constructor)
  Queue(ExternalStream* s, uint32_t r) : stream(s), route(r) {}
};

struct KernelActivity {
  uint64_t start = 0, end = 0, correlation = 0;
  uint32_t name = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t shared_static = 0, shared_dynamic = 0, registers = 0;
  uint64_t queued = 0, submitted = 0;
};
void EmitKernel(const Queue& q, const KernelActivity& k);

struct CopyActivity {
  uint64_t start = 0, end = 0, correlation = 0, bytes = 0;
  CopyKind kind = CopyKind::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown, dst_kind = MemoryKind::kUnknown;
  uint32_t src_device = 0, dst_device = 0;
  uint8_t flags = 0;  // format::kCopyAsync, kCopyBlocking
};
void EmitCopy(const Queue& q, const CopyActivity& c);

void EmitFill(ExternalStream* s, uint64_t start, uint64_t end, uint64_t correlation, uint64_t bytes, uint32_t value,
              MemoryKind kind);
void EmitSync(ExternalStream* s, uint64_t start, uint64_t end, uint64_t correlation, SyncType type);
void EmitMemory(ExternalStream* s, uint64_t ts, uint64_t correlation, uint64_t address, uint64_t bytes, MemoryOp op,
                MemoryKind kind);
void EmitCommand(ExternalStream* s, uint64_t start, uint64_t end, uint64_t correlation, uint32_t name, uint64_t bytes);

// --- process-level facts ------------------------------------------------------------

struct DeviceInfo {
  uint32_t device = 0;
  std::string api, name, vendor, properties;
  uint32_t compute_units = 0, clock_khz = 0;
  uint64_t memory_bytes = 0;
  double memory_bandwidth = 0, peak_flops_f64 = 0, peak_flops_f32 = 0, peak_flops_f16 = 0;
};
void EmitDeviceInfo(const DeviceInfo& d);
void EmitQueueInfo(uint32_t device, uint64_t queue, std::string_view name);
// Running total of records `source` lost before strata saw them.
void EmitRecordsLost(std::string_view source, uint64_t total);

struct KernelMetrics {
  uint64_t correlation = 0;
  uint32_t device = 0;
  double flops_f64 = 0, flops_f32 = 0, flops_f16 = 0, dram_bytes = 0, achieved_occupancy = 0;
  std::string raw;  // "metric=value;..." as the profiler reported them
};
void EmitKernelMetrics(const KernelMetrics& m);

// --- clocks -------------------------------------------------------------------------

// CLOCK_MONOTONIC minus another clock, measured by bracketing one read of the
// other clock between two CLOCK_MONOTONIC reads and keeping the tightest of
// `tries` (the error is half that window: ~20 ns on an idle host).
int64_t MeasureClockOffset(clockid_t other, int tries = 9);
// Same, for a clock read through a function (HSA system timestamps, ...), scaled
// to ns by `ns_per_tick`.
int64_t MeasureClockOffset(uint64_t (*read)(void*), void* arg, double ns_per_tick, int tries = 9);

// A foreign clock mapped to the trace clock by an offset that is re-measured
// at most every `period_ns` (NTP slews CLOCK_MONOTONIC but not _RAW). Lock-free:
// any thread may call ToTrace; one of them re-measures when due.
class ClockMapper {
 public:
  explicit ClockMapper(clockid_t other, uint64_t period_ns = 1'000'000'000) : other_(other), period_(period_ns) {
    Remeasure();
  }
  uint64_t ToTrace(uint64_t t) {
    // The coarse clock (a few ns, tick resolution) is plenty to know when to re-measure.
    uint64_t now = CoarseNow();
    uint64_t last = last_.load(std::memory_order_relaxed);
    if (now - last > period_ && last_.compare_exchange_strong(last, now, std::memory_order_relaxed))
      offset_.store(MeasureClockOffset(other_), std::memory_order_relaxed);
    return static_cast<uint64_t>(static_cast<int64_t>(t) + offset_.load(std::memory_order_relaxed));
  }
  int64_t offset() const { return offset_.load(std::memory_order_relaxed); }
  void Remeasure() {
    offset_.store(MeasureClockOffset(other_), std::memory_order_relaxed);
    last_.store(CoarseNow(), std::memory_order_relaxed);
  }

 private:
  static uint64_t CoarseNow();
  clockid_t other_;
  uint64_t period_;
  std::atomic<uint64_t> last_{0};
  std::atomic<int64_t> offset_{0};
};

}  // namespace strata::accel

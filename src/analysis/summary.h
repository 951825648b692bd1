// Trace-level statistics: what is in the trace, span time by name, steps, counters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

struct StreamStats {
  std::string process;  // "pid 1234 (python3)"
  int64_t pid = 0;
  int64_t tid = 0;
  std::string name;     // thread name, or device/queue
  std::string kind;     // thread, device, cpu
  uint64_t events = 0;
  uint64_t lost = 0;
};

struct TraceOverview {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t duration_ns = 0;
  uint64_t events = 0;
  uint64_t lost_events = 0;
  size_t processes = 0;
  size_t threads = 0;
  std::vector<StreamStats> streams;
  std::vector<std::string> warnings;
};
TraceOverview Overview(const model::Trace& t);

struct SpanStats {
  std::string name;
  std::string kind;     // model::SliceKindName
  uint64_t count = 0;
  int64_t total_ns = 0;  // inclusive
  int64_t self_ns = 0;   // exclusive of child slices on the same track
  int64_t max_ns = 0;
};
// Host-side slices (not device activity) grouped by (kind, name), sorted by total time.
std::vector<SpanStats> SpanTable(const model::Trace& t);
// Self time of every slice (dur minus the durations of its direct children).
// A column: on a large trace it spills past the memory budget (model/column.h).
model::Column<int64_t> SelfTimes(const model::Trace& t);
// The same, computed once per trace while a Memo lives and shared by the
// analyses that ask (a report's sections, the findings): one array of a
// slice's size instead of one per analysis.
std::shared_ptr<const model::Column<int64_t>> SharedSelfTimes(const model::Trace& t);

struct Distribution {
  uint64_t count = 0;
  double mean = 0;
  int64_t min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Distribution Distribute(std::vector<int64_t> v);

struct StepStats {
  uint64_t count = 0;
  Distribution duration;
  std::vector<int64_t> durations_ns;  // in step order
  std::vector<uint64_t> numbers;
  double batch_size = 0;      // as given
  double throughput_per_s = 0;  // batch_size / mean step time, when batch_size > 0
};
// `batch_size` (samples or tokens per step) gives the throughput; 0 when unknown.
StepStats Steps(const model::Trace& t, double batch_size = 0);

struct CounterStats {
  std::string name;
  std::string process;
  std::string unit;  // the series' unit ("bytes", "bytes/s", "%"); empty when none
  uint64_t samples = 0;
  double min = 0, max = 0, mean = 0, last = 0;
};
std::vector<CounterStats> Counters(const model::Trace& t);

std::string ProcessLabel(const model::Trace& t, uint32_t process);

}  // namespace strata::analysis

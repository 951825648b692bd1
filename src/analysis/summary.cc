#include "analysis/summary.h"

#include <tuple>
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "analysis/memo.h"
#include "analysis/name_slots.h"
#include "base/int_math.h"

namespace strata::analysis {

std::string ProcessLabel(const model::Trace& t, uint32_t process) {
  if (process == model::kNoProcess) return "os";
  if (process >= t.processes.size()) return "?";
  const model::Process& p = t.processes[process];
  std::string name(t.strings.Get(p.name));
  auto slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  std::string out = (p.is_device ? "device " : "pid ") + std::to_string(p.pid);
  if (!name.empty()) out += " (" + name + ")";
  return out;
}

TraceOverview Overview(const model::Trace& t) {
  TraceOverview o;
  std::tie(o.start_ns, o.end_ns) = t.span_ns();
  o.duration_ns = o.end_ns - o.start_ns;
  o.events = t.events_read;
  o.lost_events = t.events_lost;
  o.processes = t.processes.size();
  o.warnings = t.warnings;
  for (const model::Track& trk : t.tracks) {
    if (trk.kind == model::TrackKind::kThread) ++o.threads;
    StreamStats s;
    s.process = ProcessLabel(t, trk.process);
    s.pid = trk.process < t.processes.size() ? t.processes[trk.process].pid : 0;
    s.tid = trk.tid;
    s.name = std::string(t.strings.Get(trk.name));
    s.kind = trk.kind == model::TrackKind::kThread ? "thread" : trk.kind == model::TrackKind::kDeviceQueue ? "device" : "cpu";
    s.events = trk.events;
    s.lost = trk.lost;
    o.streams.push_back(std::move(s));
  }
  std::sort(o.streams.begin(), o.streams.end(), [](const StreamStats& a, const StreamStats& b) {
    return a.events != b.events ? a.events > b.events : a.tid < b.tid;
  });
  return o;
}

model::Column<int64_t> SelfTimes(const model::Trace& t) {
  const auto& s = t.slices;
  model::Column<int64_t> self(s.dur.span());
  for (size_t i = 0; i < s.size(); ++i) {
    int32_t p = s.parent[i];
    if (p != model::kNone) self[static_cast<size_t>(p)] = SatSub(self[static_cast<size_t>(p)], s.dur[i]);
  }
  for (auto& v : self) v = std::max<int64_t>(v, 0);
  return self;
}

std::shared_ptr<const model::Column<int64_t>> SharedSelfTimes(const model::Trace& t) {
  using Ptr = std::shared_ptr<const model::Column<int64_t>>;
  auto compute = [&t]() -> Ptr { return std::make_shared<const model::Column<int64_t>>(SelfTimes(t)); };
  Memo* memo = Memo::Of(t);
  return memo ? memo->Get<Ptr>("self_times", compute) : compute();
}

std::vector<SpanStats> SpanTable(const model::Trace& t) {
  const auto& s = t.slices;
  auto self_times = SharedSelfTimes(t);
  const model::Column<int64_t>& self = *self_times;
  NameSlots<SpanStats> by(t.strings.size());
  for (size_t i = 0; i < s.size(); ++i) {
    // Device activity (whatever its kind, e.g. an OpenCL map) has its own tables; steps have theirs.
    if (model::IsDeviceKind(s.kind[i]) || s.kind[i] == model::SliceKind::kStep ||
        t.tracks[s.track[i]].kind == model::TrackKind::kDeviceQueue)
      continue;
    SpanStats& st = by(static_cast<int>(s.kind[i]), s.name[i]);
    st.count++;
    st.total_ns = SatAdd(st.total_ns, s.dur[i]);
    st.self_ns = SatAdd(st.self_ns, self[i]);
    st.max_ns = std::max(st.max_ns, s.dur[i]);
  }
  std::vector<NameSlots<SpanStats>::Row> rows = std::move(by).Sorted();
  std::vector<SpanStats> out;
  out.reserve(rows.size());
  for (auto& row : rows) {
    row.value.kind = model::SliceKindName(static_cast<model::SliceKind>(row.key));
    row.value.name = std::string(t.strings.Get(row.name));
    out.push_back(std::move(row.value));
  }
  std::sort(out.begin(), out.end(), [](const SpanStats& a, const SpanStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

Distribution Distribute(std::vector<int64_t> v) {
  Distribution d;
  d.count = v.size();
  if (v.empty()) return d;
  // The sum is of whole nanoseconds below 2^53 (a hundred days): exact in any order.
  d.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  d.min = *lo;
  d.max = *hi;
  // Nearest-rank percentiles: the value at or below which p% of samples fall.
  // Three selections, each in the part above the last (linear, not a sort:
  // a trace's millions of launches are summarized in every report).
  auto rank = [n = v.size()](double p) {
    size_t r = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
    return std::min(n - 1, r == 0 ? 0 : r - 1);
  };
  size_t from = 0;
  auto select = [&v, &from](size_t r) {
    std::nth_element(v.begin() + static_cast<ptrdiff_t>(from), v.begin() + static_cast<ptrdiff_t>(r), v.end());
    from = r;
    return v[r];
  };
  d.p50 = select(rank(50));
  d.p90 = select(rank(90));
  d.p99 = select(rank(99));
  return d;
}

StepStats Steps(const model::Trace& t, double batch_size) {
  StepStats st;
  const auto& s = t.slices;
  std::vector<std::pair<int64_t, size_t>> steps;
  for (size_t i = 0; i < s.size(); ++i)
    if (s.kind[i] == model::SliceKind::kStep) steps.emplace_back(s.ts[i], i);
  std::sort(steps.begin(), steps.end());
  for (auto& [ts, i] : steps) {
    st.durations_ns.push_back(s.dur[i]);
    st.numbers.push_back(s.arg[i]);
  }
  st.count = steps.size();
  st.duration = Distribute(st.durations_ns);
  st.batch_size = batch_size;
  if (batch_size > 0 && st.duration.mean > 0) st.throughput_per_s = batch_size / (st.duration.mean / 1e9);
  return st;
}

std::vector<CounterStats> Counters(const model::Trace& t) {
  std::vector<CounterStats> out(t.counter_series.size());
  std::vector<int64_t> last_ts(out.size(), INT64_MIN);
  for (size_t i = 0; i < t.counters.size(); ++i) {
    auto& c = out[t.counters.series[i]];
    double v = t.counters.value[i];
    if (c.samples == 0) c.min = c.max = v;
    c.min = std::min(c.min, v);
    c.max = std::max(c.max, v);
    c.mean += v;
    if (t.counters.ts[i] >= last_ts[t.counters.series[i]]) {
      last_ts[t.counters.series[i]] = t.counters.ts[i];
      c.last = v;
    }
    ++c.samples;
  }
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k].samples) out[k].mean /= static_cast<double>(out[k].samples);
    out[k].name = std::string(t.strings.Get(t.counter_series[k].name));
    out[k].unit = std::string(t.strings.Get(t.counter_series[k].unit));
    if (int32_t trk = t.counter_series[k].track; trk >= 0 && static_cast<size_t>(trk) < t.tracks.size()) {
      // A thread's own series: say whose.
      std::string_view tn = t.strings.Get(t.tracks[static_cast<size_t>(trk)].name);
      out[k].name += " [" + (tn.empty() ? std::string("tid") : std::string(tn)) + " " +
                     std::to_string(t.tracks[static_cast<size_t>(trk)].tid) + "]";
    }
    out[k].process = ProcessLabel(t, t.counter_series[k].process);
  }
  return out;
}

}  // namespace strata::analysis

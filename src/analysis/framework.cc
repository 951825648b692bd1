#include "analysis/framework.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "analysis/name_slots.h"
#include "base/int_math.h"

namespace strata::analysis {
namespace {

using model::kNone;
using model::SliceKind;

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Slice [first, last) of a track whose start lies in [from, to).
std::pair<size_t, size_t> SlicesStartingIn(const model::Trace& t, uint32_t track, int64_t from, int64_t to) {
  if (track >= t.track_slices.size()) return {0, 0};
  auto [first, last] = t.track_slices[track];
  auto b = t.slices.ts.begin();
  size_t lo = static_cast<size_t>(std::lower_bound(b + first, b + last, from) - b);
  size_t hi = static_cast<size_t>(std::lower_bound(b + first, b + last, to) - b);
  return {lo, hi};
}

}  // namespace

int32_t EnclosingOfKind(const model::Trace& t, int32_t slice, SliceKind kind) {
  for (int32_t s = slice; s != kNone; s = t.slices.parent[static_cast<size_t>(s)])
    if (t.slices.kind[static_cast<size_t>(s)] == kind) return s;
  return kNone;
}

TrainingSteps Training(const model::Trace& t, const FrameworkOptions& opt) {
  TrainingSteps out;
  const auto& s = t.slices;
  std::vector<size_t> steps;
  for (size_t i = 0; i < s.size(); ++i)
    if (s.kind[i] == SliceKind::kStep) steps.push_back(i);
  std::stable_sort(steps.begin(), steps.end(), [&](size_t a, size_t b) { return s.ts[a] < s.ts[b]; });

  std::unordered_set<model::StringId> loader_names;
  for (size_t i = 0; i < t.strings.size(); ++i)
    if (std::string_view n = t.strings.Get(static_cast<model::StringId>(i));
        StartsWith(n, "enumerate(DataLoader)#") || n == "tf.data.next")
      loader_names.insert(static_cast<model::StringId>(i));
  model::StringId batch_key = t.strings.Find("batch_size");
  model::StringId partial_key = t.strings.Find("partial_step");
  model::StringId profiled_key = t.strings.Find("profiled_step");
  MemoryTimelines mem = BuildMemoryTimelines(t);
  std::vector<TimelineMax> maxes;
  maxes.reserve(mem.devices.size());
  for (const DeviceMemory& d : mem.devices) maxes.emplace_back(&d.timeline);

  std::vector<int64_t> counted;
  int64_t counted_ns = 0, counted_samples = 0, wait_ns = 0;
  bool samples_known = true;
  int64_t common_batch = -1;
  for (size_t k = 0; k < steps.size(); ++k) {
    size_t i = steps[k];
    TrainingStep st;
    st.number = s.arg[i];
    st.slice = static_cast<int32_t>(i);
    st.ts = s.ts[i];
    st.dur = s.dur[i];
    st.skipped = static_cast<int64_t>(k) < opt.skip_steps;
    auto [lo, hi] = SlicesStartingIn(t, s.track[i], s.ts[i], s.end(i));
    for (size_t j = lo; j < hi; ++j)
      if (s.kind[j] == SliceKind::kSpan && loader_names.count(s.name[j]) && s.end(j) <= s.end(i)) st.data_wait_ns = SatAdd(st.data_wait_ns, s.dur[j]);
    // The step's arguments: its batch size, and whether it is partial (a found
    // first step begins at its first activity, not where the loop's first
    // iteration began: left out of the figures like warm-up).
    for (auto a = std::lower_bound(t.args.slice.begin(), t.args.slice.end(), static_cast<uint32_t>(i));
         a != t.args.slice.end() && *a == i; ++a) {
      size_t r = static_cast<size_t>(a - t.args.slice.begin());
      if (partial_key != model::StringPool::kNotFound && t.args.key[r] == partial_key) st.skipped = st.partial = true;
      if (profiled_key != model::StringPool::kNotFound && t.args.key[r] == profiled_key) st.skipped = st.profiled = true;
      // (A number from the trace: converting one outside int64 would be undefined.)
      if (batch_key != model::StringPool::kNotFound && t.args.key[r] == batch_key && t.args.num[r] >= 0 &&
          t.args.num[r] < 9.2e18)
        st.samples = static_cast<int64_t>(t.args.num[r]);
    }
    if (opt.batch_size > 0) st.samples = opt.batch_size;
    uint32_t process = s.track[i] < t.tracks.size() ? t.tracks[s.track[i]].process : 0;
    if (const DeviceMemory* d = mem.Find(process, kNone)) {
      const TimelineMax& mx = maxes[static_cast<size_t>(d - mem.devices.data())];
      st.mem_peak = mx.Max(st.ts, st.ts + st.dur);
      st.allocs = mx.Raises(st.ts, st.ts + st.dur);
    }
    if (!st.skipped) {
      counted.push_back(st.dur);
      counted_ns = SatAdd(counted_ns, st.dur);
      wait_ns = SatAdd(wait_ns, st.data_wait_ns);
      if (st.samples > 0) {
        counted_samples = SatAdd(counted_samples, st.samples);
        common_batch = common_batch == -1 ? st.samples : (common_batch == st.samples ? common_batch : 0);
      } else {
        samples_known = false;
      }
    } else {
      ++out.skipped;
    }
    out.steps.push_back(st);
  }
  out.duration = Distribute(counted);
  if (samples_known && counted_ns > 0 && counted_samples > 0) {
    out.samples_per_s = static_cast<double>(counted_samples) * 1e9 / static_cast<double>(counted_ns);
    out.batch_size = common_batch > 0 ? common_batch : 0;
  }
  if (counted_ns > 0) out.data_wait_pct = 100.0 * static_cast<double>(wait_ns) / static_cast<double>(counted_ns);
  return out;
}

FrameworkOpsSummary FrameworkOps(const model::Trace& t) {
  FrameworkOpsSummary out;
  out.mode = t.ops_mode;
  const auto& s = t.slices;
  auto self_times = SharedSelfTimes(t);
  const model::Column<int64_t>& self = *self_times;

  // Outermost estimated ops carry the FLOP/byte totals.
  std::vector<bool> counted_cost(t.ops.size(), false);
  for (size_t r = 0; r < t.ops.size(); ++r) {
    if (t.ops.flops[r] < 0 && t.ops.bytes[r] < 0) continue;
    bool outermost = true;
    for (int32_t p = s.parent[t.ops.slice[r]]; p != kNone; p = s.parent[static_cast<size_t>(p)]) {
      int32_t pr = t.OpRow(static_cast<uint32_t>(p));
      if (pr != kNone && (t.ops.flops[static_cast<size_t>(pr)] >= 0 || t.ops.bytes[static_cast<size_t>(pr)] >= 0)) {
        outermost = false;
        break;
      }
    }
    counted_cost[r] = outermost;
  }

  NameSlots<FrameworkOpStats> ops(t.strings.size()), modules(t.strings.size());
  int64_t op_self_total = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.kind[i] == SliceKind::kModule) {
      FrameworkOpStats& m = modules(0, s.name[i]);
      ++m.count;
      m.total_ns = SatAdd(m.total_ns, s.dur[i]);
      m.self_ns = SatAdd(m.self_ns, self[i]);
      m.max_ns = std::max(m.max_ns, s.dur[i]);
      continue;
    }
    if (s.kind[i] != SliceKind::kOp) continue;
    int32_t r = t.OpRow(static_cast<uint32_t>(i));
    model::OpScope scope = r == kNone ? model::OpScope::kFunction : t.ops.scope[static_cast<size_t>(r)];
    FrameworkOpStats& o = ops(static_cast<int>(scope), s.name[i]);
    ++o.count;
    ++out.ops;
    o.total_ns = SatAdd(o.total_ns, s.dur[i]);
    o.self_ns = SatAdd(o.self_ns, self[i]);
    o.max_ns = std::max(o.max_ns, s.dur[i]);
    op_self_total = SatAdd(op_self_total, self[i]);
    if (r != kNone) {
      size_t rr = static_cast<size_t>(r);
      if (t.ops.flops[rr] >= 0) o.flops = SatAdd(o.flops < 0 ? 0 : o.flops, t.ops.flops[rr]);
      if (t.ops.bytes[rr] >= 0) o.bytes = SatAdd(o.bytes < 0 ? 0 : o.bytes, t.ops.bytes[rr]);
      if (counted_cost[rr]) {
        if (t.ops.flops[rr] >= 0) out.flops = SatAdd(out.flops, t.ops.flops[rr]);
        if (t.ops.bytes[rr] >= 0) out.bytes = SatAdd(out.bytes, t.ops.bytes[rr]);
      }
      // AccumulateGrad and other nodes without a sequence number have no forward op.
      if (scope == model::OpScope::kBackward && t.ops.seq[rr] >= 0) {
        ++out.backward;
        if (t.ops.forward[rr] != kNone) {
          ++out.backward_linked;
          ++o.backward_linked;
        }
      }
    }
  }
  for (auto& row : std::move(ops).Sorted()) {
    FrameworkOpStats& o = row.value;
    o.name = std::string(t.strings.Get(row.name));
    o.scope = model::OpScopeName(static_cast<model::OpScope>(row.key));
    o.self_pct = op_self_total > 0 ? 100.0 * static_cast<double>(o.self_ns) / static_cast<double>(op_self_total) : 0;
    out.ops_by_name.push_back(std::move(o));
  }
  std::sort(out.ops_by_name.begin(), out.ops_by_name.end(), [](const FrameworkOpStats& a, const FrameworkOpStats& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.name < b.name;
  });
  for (auto& row : std::move(modules).Sorted()) {
    FrameworkOpStats& m = row.value;
    m.name = std::string(t.strings.Get(row.name));
    m.scope = "module";
    out.modules.push_back(std::move(m));
  }
  std::sort(out.modules.begin(), out.modules.end(), [](const FrameworkOpStats& a, const FrameworkOpStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });

  // Coverage: each process ran from its first op window to its last event.
  std::map<uint32_t, int64_t> first_window, process_end;
  for (const model::OpWindow& w : t.op_windows) {
    out.recorded_ns = SatAdd(out.recorded_ns, w.dur);
    auto [it, inserted] = first_window.try_emplace(w.process, w.ts);
    if (!inserted) it->second = std::min(it->second, w.ts);
    int64_t& e = process_end[w.process];
    e = std::max(e, w.ts + w.dur);
  }
  for (size_t i = 0; i < s.size(); ++i) {
    uint32_t p = s.track[i] < t.tracks.size() ? t.tracks[s.track[i]].process : 0;
    auto it = process_end.find(p);
    if (it != process_end.end()) it->second = std::max(it->second, s.end(i));
  }
  for (auto& [p, first] : first_window) out.run_ns = SatAdd(out.run_ns, SatSub(process_end[p], first));
  if (out.run_ns > 0) out.coverage = std::min(1.0, static_cast<double>(out.recorded_ns) / static_cast<double>(out.run_ns));
  return out;
}

DataflowSummary Dataflow(const model::Trace& t) {
  DataflowSummary out;
  out.edges = t.edges.size();
  std::unordered_set<int32_t> ops;
  std::map<std::string, uint64_t> pairs;
  for (size_t i = 0; i < t.edges.size(); ++i) {
    int32_t a = t.edges.from[i], b = t.edges.to[i];
    if (a == kNone || b == kNone) continue;
    ops.insert(a);
    ops.insert(b);
    ++pairs[std::string(t.strings.Get(t.slices.name[static_cast<size_t>(a)])) + " -> " +
            std::string(t.strings.Get(t.slices.name[static_cast<size_t>(b)]))];
  }
  out.ops_with_edges = ops.size();
  for (auto& [k, v] : pairs) out.top_pairs.emplace_back(k, v);
  std::sort(out.top_pairs.begin(), out.top_pairs.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  for (const model::Graph& g : t.graphs)
    out.graphs.push_back({std::string(t.strings.Get(g.name)), ProcessLabel(t, g.process), g.nodes.size(), g.edges.size()});
  return out;
}

}  // namespace strata::analysis

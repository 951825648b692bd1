#include "analysis/framework.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace strata::analysis {
namespace {

using model::kNone;
using model::SliceKind;

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Range maximum over a timeline with a per-block maximum: O(n / 64 + 128) per query.
class RangeMax {
 public:
  explicit RangeMax(const std::vector<MemoryPoint>* v) : v_(v) {
    for (size_t b = 0; b * kBlock < v->size(); ++b) {
      int64_t m = INT64_MIN;
      for (size_t i = b * kBlock; i < std::min(v->size(), (b + 1) * kBlock); ++i) m = std::max(m, (*v)[i].bytes);
      blocks_.push_back(m);
    }
  }
  // Max over [lo, hi) indices; INT64_MIN when empty.
  int64_t Max(size_t lo, size_t hi) const {
    int64_t m = INT64_MIN;
    while (lo < hi && lo % kBlock) m = std::max(m, (*v_)[lo++].bytes);
    while (lo + kBlock <= hi) {
      m = std::max(m, blocks_[lo / kBlock]);
      lo += kBlock;
    }
    while (lo < hi) m = std::max(m, (*v_)[lo++].bytes);
    return m;
  }

 private:
  static constexpr size_t kBlock = 64;
  const std::vector<MemoryPoint>* v_;
  std::vector<int64_t> blocks_;
};

// First index with ts >= t.
size_t LowerTs(const std::vector<MemoryPoint>& v, int64_t t) {
  return static_cast<size_t>(
      std::lower_bound(v.begin(), v.end(), t, [](const MemoryPoint& p, int64_t x) { return p.ts < x; }) - v.begin());
}

// Level just before `t` (0 before the first event).
int64_t LevelBefore(const std::vector<MemoryPoint>& v, int64_t t) {
  size_t i = LowerTs(v, t);
  return i == 0 ? 0 : v[i - 1].bytes;
}

struct Timelines {
  std::vector<DeviceMemory> devices;
  std::map<std::pair<uint32_t, int32_t>, size_t> index;  // (process, device) -> devices[i]
  const DeviceMemory* Find(uint32_t process, int32_t device) const {
    auto it = index.find({process, device});
    return it == index.end() ? nullptr : &devices[it->second];
  }
};

Timelines BuildTimelines(const model::Trace& t) {
  Timelines out;
  const model::MemoryTable& m = t.memory;
  std::vector<uint32_t> order(m.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return m.ts[a] < m.ts[b]; });
  std::vector<int64_t> running;
  for (uint32_t i : order) {
    uint32_t process = m.track[i] < t.tracks.size() ? t.tracks[m.track[i]].process : 0;
    auto [it, inserted] = out.index.try_emplace({process, m.device[i]}, out.devices.size());
    if (inserted) {
      DeviceMemory d;
      d.process = process;
      d.process_label = ProcessLabel(t, process);
      d.device = m.device[i];
      out.devices.push_back(std::move(d));
      running.push_back(0);
    }
    DeviceMemory& d = out.devices[it->second];
    int64_t& run = running[it->second];
    run += m.bytes[i];
    // The allocator's own total when it reports one (it also counts what other
    // threads allocated between our events); our running sum otherwise.
    int64_t level = m.total_allocated[i] >= 0 ? m.total_allocated[i] : run;
    d.timeline.push_back({m.ts[i], level});
    if (m.bytes[i] > 0) {
      ++d.allocs;
      d.bytes_allocated += m.bytes[i];
    } else {
      ++d.frees;
    }
    if (level > d.peak_bytes) {
      d.peak_bytes = level;
      d.peak_ts = m.ts[i];
    }
  }
  return out;
}

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
    if (StartsWith(t.strings.Get(static_cast<model::StringId>(i)), "enumerate(DataLoader)#"))
      loader_names.insert(static_cast<model::StringId>(i));
  model::StringId batch_key = t.strings.Find("batch_size");
  Timelines mem = BuildTimelines(t);
  std::vector<RangeMax> maxes;
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
    st.ts = s.ts[i];
    st.dur = s.dur[i];
    st.skipped = static_cast<int64_t>(k) < opt.skip_steps;
    auto [lo, hi] = SlicesStartingIn(t, s.track[i], s.ts[i], s.end(i));
    for (size_t j = lo; j < hi; ++j)
      if (s.kind[j] == SliceKind::kSpan && loader_names.count(s.name[j]) && s.end(j) <= s.end(i)) st.data_wait_ns += s.dur[j];
    if (opt.batch_size > 0) {
      st.samples = opt.batch_size;
    } else if (batch_key != model::StringPool::kNotFound) {
      auto a = std::lower_bound(t.args.slice.begin(), t.args.slice.end(), static_cast<uint32_t>(i));
      for (; a != t.args.slice.end() && *a == i; ++a) {
        size_t r = static_cast<size_t>(a - t.args.slice.begin());
        if (t.args.key[r] == batch_key) st.samples = static_cast<int64_t>(t.args.num[r]);
      }
    }
    uint32_t process = s.track[i] < t.tracks.size() ? t.tracks[s.track[i]].process : 0;
    auto it = mem.index.find({process, kNone});
    if (it != mem.index.end()) {
      const DeviceMemory& d = mem.devices[it->second];
      size_t a = LowerTs(d.timeline, st.ts), b = LowerTs(d.timeline, st.ts + st.dur + 1);
      int64_t before = LevelBefore(d.timeline, st.ts);
      int64_t m = maxes[it->second].Max(a, b);
      st.mem_peak = std::max(before, m);
      st.allocs = 0;
      for (size_t x = a; x < b; ++x)
        if (x == 0 ? d.timeline[x].bytes > 0 : d.timeline[x].bytes > d.timeline[x - 1].bytes) ++st.allocs;
    }
    if (!st.skipped) {
      counted.push_back(st.dur);
      counted_ns += st.dur;
      wait_ns += st.data_wait_ns;
      if (st.samples > 0) {
        counted_samples += st.samples;
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
  std::vector<int64_t> self = SelfTimes(t);

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

  std::map<std::pair<int, model::StringId>, FrameworkOpStats> ops, modules;
  int64_t op_self_total = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.kind[i] == SliceKind::kModule) {
      FrameworkOpStats& m = modules[{0, s.name[i]}];
      ++m.count;
      m.total_ns += s.dur[i];
      m.self_ns += self[i];
      m.max_ns = std::max(m.max_ns, s.dur[i]);
      continue;
    }
    if (s.kind[i] != SliceKind::kOp) continue;
    int32_t r = t.OpRow(static_cast<uint32_t>(i));
    model::OpScope scope = r == kNone ? model::OpScope::kFunction : t.ops.scope[static_cast<size_t>(r)];
    FrameworkOpStats& o = ops[{static_cast<int>(scope), s.name[i]}];
    ++o.count;
    ++out.ops;
    o.total_ns += s.dur[i];
    o.self_ns += self[i];
    o.max_ns = std::max(o.max_ns, s.dur[i]);
    op_self_total += self[i];
    if (r != kNone) {
      size_t rr = static_cast<size_t>(r);
      if (t.ops.flops[rr] >= 0) o.flops = (o.flops < 0 ? 0 : o.flops) + t.ops.flops[rr];
      if (t.ops.bytes[rr] >= 0) o.bytes = (o.bytes < 0 ? 0 : o.bytes) + t.ops.bytes[rr];
      if (counted_cost[rr]) {
        if (t.ops.flops[rr] >= 0) out.flops += t.ops.flops[rr];
        if (t.ops.bytes[rr] >= 0) out.bytes += t.ops.bytes[rr];
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
  for (auto& [key, o] : ops) {
    o.name = std::string(t.strings.Get(key.second));
    o.scope = model::OpScopeName(static_cast<model::OpScope>(key.first));
    o.self_pct = op_self_total > 0 ? 100.0 * static_cast<double>(o.self_ns) / static_cast<double>(op_self_total) : 0;
    out.ops_by_name.push_back(std::move(o));
  }
  std::sort(out.ops_by_name.begin(), out.ops_by_name.end(), [](const FrameworkOpStats& a, const FrameworkOpStats& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.name < b.name;
  });
  for (auto& [key, m] : modules) {
    m.name = std::string(t.strings.Get(key.second));
    m.scope = "module";
    out.modules.push_back(std::move(m));
  }
  std::sort(out.modules.begin(), out.modules.end(), [](const FrameworkOpStats& a, const FrameworkOpStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });

  // Coverage: each process ran from its first op window to its last event.
  std::map<uint32_t, int64_t> first_window, process_end;
  for (const model::OpWindow& w : t.op_windows) {
    out.recorded_ns += w.dur;
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
  for (auto& [p, first] : first_window) out.run_ns += process_end[p] - first;
  if (out.run_ns > 0) out.coverage = std::min(1.0, static_cast<double>(out.recorded_ns) / static_cast<double>(out.run_ns));
  return out;
}

MemorySummary Memory(const model::Trace& t) {
  MemorySummary out;
  Timelines tl = BuildTimelines(t);
  std::vector<RangeMax> maxes;
  maxes.reserve(tl.devices.size());
  for (const DeviceMemory& d : tl.devices) maxes.emplace_back(&d.timeline);

  // Allocations made directly inside each op slice.
  const model::MemoryTable& m = t.memory;
  std::unordered_map<int32_t, std::pair<uint64_t, int64_t>> by_slice;  // op slice -> (allocs, bytes)
  std::unordered_map<int32_t, int32_t> device_of_slice;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.bytes[i] <= 0) continue;
    int32_t op = EnclosingOfKind(t, t.SliceAt(m.track[i], m.ts[i]), SliceKind::kOp);
    if (op == kNone) continue;
    auto& e = by_slice[op];
    ++e.first;
    e.second += m.bytes[i];
    device_of_slice.try_emplace(op, m.device[i]);
  }
  std::map<model::StringId, OpMemory> by_name;
  for (auto& [slice, e] : by_slice) {
    size_t si = static_cast<size_t>(slice);
    OpMemory& o = by_name[t.slices.name[si]];
    o.allocs += e.first;
    o.bytes += e.second;
    uint32_t process = t.tracks[t.slices.track[si]].process;
    auto it = tl.index.find({process, device_of_slice[slice]});
    if (it == tl.index.end()) continue;
    const DeviceMemory& d = tl.devices[it->second];
    size_t a = LowerTs(d.timeline, t.slices.ts[si]), b = LowerTs(d.timeline, t.slices.end(si) + 1);
    int64_t before = LevelBefore(d.timeline, t.slices.ts[si]);
    int64_t hi = maxes[it->second].Max(a, b);
    if (hi != INT64_MIN) o.peak_increase = std::max(o.peak_increase, hi - before);
  }
  for (auto& [name, o] : by_name) {
    o.name = std::string(t.strings.Get(name));
    out.ops.push_back(std::move(o));
  }
  std::sort(out.ops.begin(), out.ops.end(), [](const OpMemory& a, const OpMemory& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  out.devices = std::move(tl.devices);
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

#include "analysis/gpu.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>

#include "base/int_math.h"

namespace strata::analysis {

const char* WorkTypeName(WorkType t) {
  switch (t) {
    case WorkType::kCompute: return "compute";
    case WorkType::kCommunication: return "communication";
    case WorkType::kMemory: return "memory";
    case WorkType::kOther: return "other";
  }
  return "?";
}

WorkType ClassifyByName(std::string_view n) {
  auto starts = [&n](std::string_view p) { return n.substr(0, p.size()) == p; };
  auto contains = [&n](std::string_view p) { return n.find(p) != std::string_view::npos; };
  if (starts("nccl") && n.find("Kernel", 4) != std::string_view::npos) return WorkType::kCommunication;
  if (starts("Memcpy") || starts("Memset") || starts("dma")) return WorkType::kMemory;
  if (contains("Memcpy") || contains("Sync")) return WorkType::kOther;
  return WorkType::kCompute;
}

namespace {

bool IsCommunicationKernel(std::string_view n) {
  return (n.substr(0, 4) == "nccl" && n.find("Kernel", 4) != std::string_view::npos) || n.substr(0, 4) == "rccl";
}

// HTA reads microseconds as doubles; a fractional trace is rounded start up,
// end (start + dur, added as doubles) down. Nanoseconds -> that double.
double MicrosAsHtaReadsThem(int64_t ns) {
  int64_t whole = ns / 1000, frac = ns % 1000;
  return static_cast<double>(whole) + static_cast<double>(frac) / 1000.0;
}

// Start and end of a slice as the selected mode sees them.
struct Clock {
  bool hta = false;
  bool round = false;
  int64_t Start(int64_t ts) const {
    return round ? static_cast<int64_t>(std::ceil(MicrosAsHtaReadsThem(ts))) * 1000 : ts;
  }
  int64_t End(int64_t ts, int64_t dur) const {
    if (!round) return ts + dur;
    double e = MicrosAsHtaReadsThem(ts) + MicrosAsHtaReadsThem(dur);
    return static_cast<int64_t>(std::floor(e)) * 1000;
  }
};

std::string GroupLabel(int64_t rank, int32_t device) {
  std::string s = rank >= 0 ? "rank " + std::to_string(rank) : "";
  if (device != model::kNone) s += (s.empty() ? "" : " ") + std::string("GPU ") + std::to_string(device);
  return s.empty() ? "all GPUs" : s;
}

int64_t RankOfTrack(const model::Trace& t, uint32_t track) {
  const model::Track& trk = t.tracks[track];
  return trk.process < t.processes.size() ? t.processes[trk.process].rank : -1;
}

}  // namespace

GpuWorkSet CollectGpuWork(const model::Trace& t, const AnalysisOptions& opt) {
  GpuWorkSet out;
  Clock clk{opt.hta_compat, opt.hta_compat && t.source_fractional_us};
  const auto& s = t.slices;
  const auto& d = t.device;

  // HTA drops the last ProfilerStep when there are two or more, with the
  // device work launched at or after its start.
  int64_t cut = INT64_MAX;
  if (opt.hta_compat) {
    std::unordered_set<model::StringId> step_names;
    int64_t last_start = INT64_MIN;
    for (size_t i = 0; i < s.size(); ++i) {
      std::string_view n = t.strings.Get(s.name[i]);
      if (n.find("ProfilerStep") == std::string_view::npos) continue;
      step_names.insert(s.name[i]);
      if (t.device_row_of_slice[i] == model::kNone) last_start = std::max(last_start, clk.Start(s.ts[i]));
    }
    if (step_names.size() >= 2 && last_start != INT64_MIN) {
      cut = last_start;
      out.last_step_dropped = true;
    }
  }

  std::map<std::pair<int64_t, int32_t>, size_t> group_of;
  auto group = [&](int64_t rank, int32_t device) -> GpuGroup& {
    if (opt.hta_compat) {
      device = model::kNone;
      if (rank < 0) rank = 0;  // HTA's default rank
    }
    auto [it, inserted] = group_of.try_emplace({rank, device}, out.groups.size());
    if (inserted) {
      out.groups.emplace_back();
      out.groups.back().rank = rank;
      out.groups.back().device = device;
      out.groups.back().label = GroupLabel(rank, device);
    }
    return out.groups[it->second];
  };

  for (size_t r = 0; r < d.size(); ++r) {
    uint32_t i = d.slice[r];
    model::SliceKind k = s.kind[i];
    bool queued = k == model::SliceKind::kKernel || k == model::SliceKind::kMemcpy || k == model::SliceKind::kMemset;
    GpuWork w;
    w.slice = i;
    w.device_row = static_cast<int32_t>(r);
    w.stream = d.stream[r];
    w.queued = queued;
    w.launch_slice = d.launch[r];
    if (opt.hta_compat) {
      if (d.stream[r] == -1) continue;  // HTA: no stream number, not GPU work
      if (cut != INT64_MAX && (w.launch_slice == model::kNone ||
                               clk.Start(s.ts[static_cast<size_t>(w.launch_slice)]) >= cut))
        continue;
      w.type = ClassifyByName(t.strings.Get(s.name[i]));
    } else {
      if (!queued) continue;  // syncs are waits, annotations are ranges: not work
      if (k == model::SliceKind::kKernel)
        w.type = IsCommunicationKernel(t.strings.Get(s.name[i])) ? WorkType::kCommunication : WorkType::kCompute;
      else
        w.type = WorkType::kMemory;
    }
    w.ts = clk.Start(s.ts[i]);
    w.end = clk.End(s.ts[i], s.dur[i]);
    if (w.launch_slice != model::kNone) w.launch_ts = clk.Start(s.ts[static_cast<size_t>(w.launch_slice)]);
    group(RankOfTrack(t, s.track[i]), d.device[r]).work.push_back(w);
  }

  if (opt.hta_compat) {
    // Host ops that carry a stream argument count as GPU work for HTA.
    model::StringId stream_key = t.strings.Find("stream");
    if (stream_key != model::StringPool::kNotFound) {
      for (size_t a = 0; a < t.args.size(); ++a) {
        if (t.args.key[a] != stream_key) continue;
        uint32_t i = t.args.slice[a];
        if (t.device_row_of_slice[i] != model::kNone) continue;
        double v = t.args.num[a];
        if (std::isnan(v) || v == -1) continue;
        if (clk.Start(s.ts[i]) >= cut) continue;
        GpuWork w;
        w.slice = i;
        w.stream = static_cast<int64_t>(v);
        w.ts = clk.Start(s.ts[i]);
        w.end = clk.End(s.ts[i], s.dur[i]);
        w.type = ClassifyByName(t.strings.Get(s.name[i]));
        group(RankOfTrack(t, s.track[i]), model::kNone).work.push_back(w);
      }
    }
    // Steps kept: CPU steps before the cut.
    for (size_t i = 0; i < s.size(); ++i)
      if (s.kind[i] == model::SliceKind::kStep && clk.Start(s.ts[i]) < cut) out.steps_kept.push_back(s.arg[i]);
    std::sort(out.steps_kept.begin(), out.steps_kept.end());
    out.steps_kept.erase(std::unique(out.steps_kept.begin(), out.steps_kept.end()), out.steps_kept.end());
  }
  for (auto& g : out.groups)
    std::sort(g.work.begin(), g.work.end(),
              [](const GpuWork& a, const GpuWork& b) { return a.ts != b.ts ? a.ts < b.ts : a.slice < b.slice; });
  std::sort(out.groups.begin(), out.groups.end(), [](const GpuGroup& a, const GpuGroup& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.device < b.device;
  });
  return out;
}

namespace {

// HTA's merge: over intervals sorted by start, a new group starts when a start
// is past every end so far; returns the summed group lengths, and the span
// from the first start to the last group's end.
struct Union {
  int64_t length = 0;
  int64_t first = 0, last_end = 0;
  bool any = false;
};
template <typename Pred>
Union MergedLength(const model::Column<GpuWork>& w, Pred keep) {
  Union u;
  int64_t gs = 0, ge = 0;
  for (const GpuWork& x : w) {
    if (!keep(x)) continue;
    if (!u.any) {
      u.any = true;
      u.first = gs = x.ts;
      ge = x.end;
      continue;
    }
    if (x.ts > ge) {
      u.length += ge - gs;
      gs = x.ts;
      ge = x.end;
    } else {
      ge = std::max(ge, x.end);
    }
  }
  if (u.any) {
    u.length += ge - gs;
    u.last_end = ge;
  }
  return u;
}

}  // namespace

TimeBreakdown TemporalBreakdown(const GpuGroup& g) {
  TimeBreakdown b;
  Union all = MergedLength(g.work, [](const GpuWork&) { return true; });
  if (!all.any) return b;
  b.span_ns = all.last_end - all.first;
  b.busy_ns = all.length;
  b.idle_ns = b.span_ns - b.busy_ns;
  Union comp = MergedLength(g.work, [](const GpuWork& x) { return x.type == WorkType::kCompute; });
  Union comp_comm = MergedLength(g.work, [](const GpuWork& x) {
    return x.type == WorkType::kCompute || x.type == WorkType::kCommunication;
  });
  Union typed = MergedLength(g.work, [](const GpuWork& x) { return x.type != WorkType::kOther; });
  b.compute_ns = comp.length;
  b.communication_ns = comp_comm.length - comp.length;
  b.memory_ns = typed.length - comp_comm.length;
  b.other_ns = b.busy_ns - typed.length;
  b.valid = b.span_ns > 0 && b.idle_ns >= 0;
  return b;
}

IdleBreakdown IdleTimeBreakdown(const GpuGroup& g, const AnalysisOptions& opt) {
  IdleBreakdown out;
  std::map<int64_t, std::vector<const GpuWork*>> by_stream;
  for (const GpuWork& w : g.work)
    if (w.queued) by_stream[w.stream].push_back(&w);
  for (auto& [stream, ws] : by_stream) {
    StreamIdle si;
    si.stream = stream;
    si.kernels = ws.size();
    int64_t prev_end = 0;
    for (size_t i = 0; i < ws.size(); ++i) {
      const GpuWork& w = *ws[i];
      if (i > 0) {
        // HTA measures from the predecessor's own end and keeps negative gaps
        // (overlaps); strata measures from the latest end so far and counts no
        // idle time inside overlapping work.
        int64_t gap = w.ts - prev_end;
        if (!opt.hta_compat && gap < 0) gap = 0;
        if (w.launch_ts != INT64_MIN && w.launch_ts > prev_end) si.host_wait_ns = SatAdd(si.host_wait_ns, gap);
        else if (gap < opt.kernel_wait_threshold_ns) si.kernel_wait_ns = SatAdd(si.kernel_wait_ns, gap);
        else si.other_ns = SatAdd(si.other_ns, gap);
      }
      prev_end = opt.hta_compat || i == 0 ? w.end : std::max(prev_end, w.end);
    }
    out.host_wait_ns = SatAdd(out.host_wait_ns, si.host_wait_ns);
    out.kernel_wait_ns = SatAdd(out.kernel_wait_ns, si.kernel_wait_ns);
    out.other_ns = SatAdd(out.other_ns, si.other_ns);
    out.streams.push_back(si);
  }
  return out;
}

std::vector<OverlapState> KernelTypeTable(const GpuGroup& g) {
  // Merge each type, then sweep the merged boundaries with a bitmask.
  struct Edge {
    int64_t t;
    int bit;
    int delta;
  };
  // Each type's edges come in time order (its work is sorted by start and its
  // groups are disjoint): three runs merged, not a sort. (Edges at one instant
  // may come in any order: the sweep below only adds time between instants.)
  auto by_time = [](const Edge& a, const Edge& b) {
    return a.t != b.t ? a.t < b.t : a.delta < b.delta;  // ends first: touching groups do not overlap
  };
  model::Column<Edge> runs[3];
  const WorkType types[3] = {WorkType::kCompute, WorkType::kCommunication, WorkType::kMemory};
  for (int k = 0; k < 3; ++k) {
    model::Column<Edge>& edges = runs[k];
    int64_t gs = 0, ge = 0;
    bool any = false;
    for (const GpuWork& x : g.work) {
      if (x.type != types[k]) continue;
      if (!any) {
        any = true;
        gs = x.ts;
        ge = x.end;
      } else if (x.ts > ge) {
        edges.push_back({gs, 1 << k, +1});
        edges.push_back({ge, 1 << k, -1});
        gs = x.ts;
        ge = x.end;
      } else {
        ge = std::max(ge, x.end);
      }
    }
    if (any) {
      edges.push_back({gs, 1 << k, +1});
      edges.push_back({ge, 1 << k, -1});
    }
  }
  model::Column<Edge> two, edges;
  two.resize(runs[0].size() + runs[1].size());
  std::merge(runs[0].begin(), runs[0].end(), runs[1].begin(), runs[1].end(), two.begin(), by_time);
  edges.resize(two.size() + runs[2].size());
  std::merge(two.begin(), two.end(), runs[2].begin(), runs[2].end(), edges.begin(), by_time);
  int64_t state_ns[8] = {};
  int mask = 0;
  int counts[3] = {};
  int64_t prev = 0;
  for (const Edge& e : edges) {
    if (mask) state_ns[mask] += e.t - prev;
    int k = e.bit == 1 ? 0 : e.bit == 2 ? 1 : 2;
    counts[k] += e.delta;
    mask = (counts[0] > 0 ? 1 : 0) | (counts[1] > 0 ? 2 : 0) | (counts[2] > 0 ? 4 : 0);
    prev = e.t;
  }
  static const char* kNames[3] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
  std::vector<OverlapState> out;
  for (int m = 1; m < 8; ++m) {
    if (state_ns[m] == 0) continue;
    std::string label;
    for (int k = 0; k < 3; ++k)
      if (m & (1 << k)) label += (label.empty() ? "" : " overlapping ") + std::string(kNames[k]);
    out.push_back({label, state_ns[m]});
  }
  return out;
}

std::vector<KernelStats> KernelNameTable(const model::Trace& t, const std::vector<const GpuGroup*>& groups) {
  struct Acc {
    uint64_t n = 0;
    int64_t sum = 0, mn = INT64_MAX, mx = INT64_MIN;
    double sumsq = 0;  // of deviations, by Welford
    double mean = 0;
  };
  std::map<std::pair<int, model::StringId>, Acc> by;
  for (const GpuGroup* g : groups)
    for (const GpuWork& w : g->work) {
      if (w.type == WorkType::kOther) continue;
      Acc& a = by[{static_cast<int>(w.type), t.slices.name[w.slice]}];
      int64_t dur = w.end - w.ts;
      ++a.n;
      a.sum = SatAdd(a.sum, dur);
      a.mn = std::min(a.mn, dur);
      a.mx = std::max(a.mx, dur);
      double delta = static_cast<double>(dur) - a.mean;
      a.mean += delta / static_cast<double>(a.n);
      a.sumsq += delta * (static_cast<double>(dur) - a.mean);
    }
  std::vector<KernelStats> out;
  out.reserve(by.size());
  for (auto& [key, a] : by) {
    KernelStats k;
    k.type = static_cast<WorkType>(key.first);
    k.name = std::string(t.strings.Get(key.second));
    k.count = a.n;
    k.total_ns = a.sum;
    k.min_ns = a.mn;
    k.max_ns = a.mx;
    k.mean_ns = static_cast<double>(a.sum) / static_cast<double>(a.n);
    k.std_ns = a.n > 1 ? std::sqrt(a.sumsq / static_cast<double>(a.n - 1)) : 0.0;
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

namespace {

bool IsQueueLaunchName(std::string_view n) {
  static const std::string_view kNames[] = {"cudaLaunchKernel",  "cudaLaunchKernelExC", "cuLaunchKernel",
                                            "cudaMemcpyAsync",   "cudaMemsetAsync",     "hipLaunchKernel",
                                            "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
                                            "hipMemcpyWithStream", "runFunction - job_prep_and_submit_for_execution"};
  for (auto k : kNames)
    if (n == k) return true;
  return false;
}

}  // namespace

std::vector<CounterSeriesOut> QueueLengthSeries(const model::Trace& t, const GpuGroup& g, const AnalysisOptions& opt) {
  struct Point {
    int64_t ts;
    int delta;
  };
  std::map<int64_t, model::Column<Point>> by_stream;  // columns: spill past the memory budget
  for (const GpuWork& w : g.work) {
    if (w.launch_slice == model::kNone) continue;
    if (opt.hta_compat) {
      if (!IsQueueLaunchName(t.strings.Get(t.slices.name[static_cast<size_t>(w.launch_slice)]))) continue;
    }
    auto& pts = by_stream[w.stream];
    pts.push_back({w.launch_ts, +1});
    pts.push_back({w.ts, -1});
  }
  std::vector<CounterSeriesOut> out;
  for (auto& [stream, pts] : by_stream) {
    // At equal times the launch counts first. (Points equal in both are
    // interchangeable: no stable sort needed.)
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.delta > b.delta;
    });
    CounterSeriesOut s;
    s.key = std::to_string(stream);
    int64_t q = 0;
    s.points.reserve(pts.size());
    for (const Point& p : pts) {
      q += p.delta;
      s.points.push_back({p.ts, static_cast<double>(q)});
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<CounterSeriesOut> MemoryBandwidthSeries(const model::Trace& t, const GpuGroup& g, const AnalysisOptions& opt) {
  struct Point {
    int64_t ts;
    double delta;
  };
  std::map<std::string, std::vector<Point>> by_key;
  model::StringId bw_key = t.strings.Find("memory bandwidth (GB/s)");
  for (const GpuWork& w : g.work) {
    if (w.type != WorkType::kMemory || w.device_row == model::kNone) continue;
    size_t r = static_cast<size_t>(w.device_row);
    uint32_t i = w.slice;
    std::string key;
    if (opt.hta_compat) {
      std::string_view n = t.strings.Get(t.slices.name[i]);
      if (n.substr(0, 6) == "Memset") key = "Memset";
      else if (n.substr(0, 6) == "Memcpy") key = std::string(n.substr(0, 11));
      else key = "Memcpy Unknown";
    } else {
      key = t.slices.kind[i] == model::SliceKind::kMemset ? "Memset"
                                                            : std::string("Memcpy ") + model::CopyKindName(t.device.copy_kind[r]);
    }
    // Bytes per nanosecond is GB/s; measured on the source's own duration.
    int64_t dur = t.slices.dur[i];
    double bw = dur > 0 ? static_cast<double>(t.device.bytes[r]) / static_cast<double>(dur) : 0.0;
    if (opt.hta_compat) {
      // HTA takes the profiler's own figure (computed from its unrounded
      // duration), 0 when the trace has none.
      int32_t a = bw_key == model::StringPool::kNotFound ? model::kNone : t.FindArg(i, bw_key);
      bw = a == model::kNone || std::isnan(t.args.num[static_cast<size_t>(a)]) ? 0.0 : t.args.num[static_cast<size_t>(a)];
    }
    int64_t end = w.end;
    if (end <= w.ts) end = w.ts + (opt.hta_compat ? 1000 : 1);  // HTA: a zero duration becomes one unit
    auto& pts = by_key[key];
    pts.push_back({w.ts, bw});
    pts.push_back({end, -bw});
  }
  std::vector<CounterSeriesOut> out;
  for (auto& [key, pts] : by_key) {
    std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.ts < b.ts; });
    CounterSeriesOut s;
    s.key = key;
    double v = 0;
    for (const Point& p : pts) {
      v += p.delta;
      s.points.push_back({p.ts, v});
    }
    out.push_back(std::move(s));
  }
  return out;
}

SeriesSummary Summarize(const CounterSeriesOut& s, bool positive_only) {
  SeriesSummary r;
  r.key = s.key;
  std::vector<double> v;
  v.reserve(s.points.size());
  for (const CounterPoint& p : s.points)
    if (!positive_only || p.value > 0) v.push_back(p.value);
  r.count = v.size();
  if (v.empty()) return r;
  double sum = 0;
  for (double x : v) sum += x;
  r.mean = sum / static_cast<double>(v.size());
  std::sort(v.begin(), v.end());
  r.min = v.front();
  r.max = v.back();
  // Linear interpolation between closest ranks, as pandas does.
  double pos = 0.5 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  r.p50 = v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  return r;
}

}  // namespace strata::analysis

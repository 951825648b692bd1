// The findings' shared context (findings_context.h): the measured steps,
// the critical paths of the walked ones, their breakdown and replay graphs,
// and the helpers the rules express a cost per step with.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "analysis/critical_path.h"
#include "analysis/findings_context.h"
#include "analysis/roofline.h"
#include "analysis/summary.h"
#include "analysis/track_rows.h"
#include "base/intervals.h"
#include "base/parallel.h"

namespace strata::analysis {

// --- context ------------------------------------------------------------------

namespace {

uint32_t MainHostThread(const model::Trace& t) {
  std::vector<uint64_t> count(t.tracks.size(), 0);
  for (size_t i = 0; i < t.slices.size(); ++i) {
    model::SliceKind k = t.slices.kind[i];
    if (k == model::SliceKind::kOp || k == model::SliceKind::kRuntime) ++count[t.slices.track[i]];
  }
  auto it = std::max_element(count.begin(), count.end());
  return it == count.end() || *it == 0 ? UINT32_MAX : static_cast<uint32_t>(it - count.begin());
}

}  // namespace

Framework DetectFramework(const model::Trace& t) {
  for (const auto& c : t.collectors) {
    if (c.state != "ok") continue;
    if (c.collector == "pytorch") return Framework::kPyTorch;
    if (c.collector == "tensorflow" || c.collector == "keras") return Framework::kTensorFlow;
    if (c.collector == "jax") return Framework::kJax;
    if (c.collector == "onnxruntime") return Framework::kOnnxRuntime;
  }
  if (t.source == "kineto") return Framework::kPyTorch;
  if (t.source == "xplane") {
    for (auto k : t.slices.kind)
      if (k == model::SliceKind::kOp) return Framework::kTensorFlow;
    return t.strings.Find("hlo_module") != model::StringPool::kNotFound ? Framework::kJax : Framework::kTensorFlow;
  }
  return Framework::kUnknown;
}

FindingsContext::FindingsContext(const model::Trace& trace, const DiagnosisOptions& options)
    : t(trace), opt(options), framework(DetectFramework(trace)) {
  CriticalPathOptions cpo;
  cpo.max_steps = 1u << 30;
  cpo.max_walked = std::max<size_t>(1, opt.max_walked_steps);
  // The measured steps: every step in time order (the paths' order), less the
  // warm-up and, when there are others, the steps a framework's own profiler
  // ran in (--ops-steps: not the program's usual steps, left out as the step
  // statistics leave them out).
  std::vector<uint32_t> order = StepSlicesByTime(t);
  std::vector<size_t> kept(order.size());
  for (size_t k = 0; k < kept.size(); ++k) kept[k] = k;
  if (kept.size() >= 3) kept.erase(kept.begin(), kept.begin() + static_cast<ptrdiff_t>(std::min(opt.skip_steps, kept.size() - 1)));
  if (model::StringId key = t.strings.Find("profiled_step"); key != model::StringPool::kNotFound && kept.size() >= 3) {
    auto profiled = [&](size_t k) { return t.FindArg(order[k], key) != model::kNone; };
    if (static_cast<size_t>(std::count_if(kept.begin(), kept.end(), profiled)) < kept.size()) std::erase_if(kept, profiled);
  }
  auto measure = [&] {
    self = SharedSelfTimes(t);
    std::vector<StepWindow> w;
    for (size_t k = 0; k < windows.size(); ++k) {
      uint32_t track = windows[k].track;
      // No steps: the thread that ran the most framework ops and launches stands for the program.
      if (track == UINT32_MAX) track = MainHostThread(t);
      w.push_back({k, windows[k].start, windows[k].end - windows[k].start, track, true, walked[k] != 0});
    }
    std::vector<std::vector<HostInterval>> timelines;
    breakdown = BreakdownWindows(t, w, &timelines);
    replay = std::make_unique<Replay>(t, w, timelines);
  };
  if (order.empty()) {
    // No steps: the whole trace is one window if it has a path.
    walked_paths = WalkedCriticalPaths(t, cpo);
    for (const auto& p : *walked_paths) {
      paths.push_back(&p);
      windows.push_back({p.start, p.end, UINT32_MAX});
    }
    walked.assign(windows.size(), 1);
    measure();
  } else {
    for (size_t k : kept) {
      uint32_t i = order[k];
      windows.push_back({t.slices.ts[i], t.slices.end(i), t.slices.track[i]});
    }
    // The steps CriticalPaths walks (all of them, or kMaxWalkedSteps evenly
    // spread): ComputePaths' choice, made here too so that the breakdown keeps
    // the replay's pieces of those steps only.
    std::vector<uint8_t> chosen(order.size(), 0);
    for (size_t k : EvenlySpread(order.size(), cpo.max_walked)) chosen[k] = 1;
    walked.resize(kept.size());
    for (size_t j = 0; j < kept.size(); ++j) walked[j] = chosen[kept[j]];
    // The critical paths beside the breakdown and the replay's graphs.
    base::ParallelFor(2, [&](size_t job) {
      if (job == 0) walked_paths = WalkedCriticalPaths(t, cpo);
      else measure();
    });
    const std::vector<StepCriticalPath>& walks = *walked_paths;
    // Aligned with the windows: a walked step's path, else its step alone.
    std::vector<size_t> walk_of(order.size(), SIZE_MAX);
    for (size_t k = 0, w = 0; k < order.size() && w < walks.size(); ++k)
      if (chosen[k]) walk_of[k] = w++;
    paths.resize(kept.size());
    for (size_t j = 0; j < kept.size(); ++j) {
      size_t wi = walk_of[kept[j]];
      if (walked[j] && wi < walks.size()) {
        paths[j] = &walks[wi];
      } else {
        walked[j] = 0;
        uint32_t i = order[kept[j]];
        StepCriticalPath& p = unwalked_paths.emplace_back();
        p.step_slice = static_cast<int32_t>(i);
        p.step = t.slices.arg[i];
        p.start = t.slices.ts[i];
        p.end = t.slices.end(i);
        paths[j] = &p;
      }
    }
  }
  walked_steps = static_cast<size_t>(std::count(walked.begin(), walked.end(), 1));
  has_steps = !order.empty() && !paths.empty();
  for (const auto& w : windows) total_step_ns += w.end - w.start;
  steps = windows.size();
  step_ns = steps ? static_cast<double>(total_step_ns) / static_cast<double>(steps) : 0;
}

ReplayResult FindingsContext::Replayed(Finding* f, const ReplayFix& fix) const {
  ReplayResult r = replay->Run(fix);
  f->estimated_gain_pct = std::max(0.0, r.GainPct());
  f->step_after_ns = r.StepAfterNs();
  f->metrics.push_back({"replayed_step_ns", r.baseline_ns});
  f->metrics.push_back({"replayed_step_after_ns", r.fixed_ns});
  return r;
}

FindingsContext::CpuUse FindingsContext::ProgramCpu() const {
  const auto& st = t.thread_states;
  CpuUse use;
  if (st.size() == 0 || steps == 0) return use;
  // Each step process's thread tracks, its children's with them: their rows
  // in the thread states, found once.
  using Rows = std::pair<size_t, size_t>;
  std::map<uint32_t, std::vector<Rows>> threads_of;  // step process -> its threads' rows
  std::map<uint32_t, double> on_cpu;                     // CPU -> running ns
  double total = 0;
  for (const Window& w : windows) {
    if (w.track >= t.tracks.size()) continue;
    const uint32_t proc = t.tracks[w.track].process;
    auto it = threads_of.find(proc);
    if (it == threads_of.end()) {
      std::vector<Rows> v;
      for (uint32_t k = 0; k < t.tracks.size(); ++k) {
        if (t.tracks[k].kind != model::TrackKind::kThread || t.tracks[k].process >= t.processes.size()) continue;
        uint32_t p = t.tracks[k].process;
        if (p == proc || (t.processes[p].ppid >= 0 && t.processes[p].ppid == t.processes[proc].pid))
          v.push_back(TrackRows(st, k));
      }
      it = threads_of.emplace(proc, std::move(v)).first;
    }
    for (const Rows& rows : it->second)
      RowsIn(st, rows, w.start, w.end, [&](size_t r) {
        if (st.state[r] != model::ThreadState::kRunning) return;
        double ns = static_cast<double>(Overlap(st.ts[r], st.ts[r] + st.dur[r], w.start, w.end));
        total += ns;
        if (st.cpu[r] >= 0) on_cpu[st.cpu[r]] += ns;
      });
  }
  use.ns_per_step = PerStep(total);
  use.cpus = RecordedHostPeaks(t).cpu_count;
  if (use.cpus <= 0) {
    use.cpus = 0;
    for (const auto& [cpu, ns] : on_cpu)
      if (ns >= 0.02 * total) ++use.cpus;
  }
  return use;
}

int FindingsContext::WindowOf(int64_t ts) const {
  auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                             [](int64_t v, const Window& w) { return v < w.start; });
  if (it == windows.begin()) return -1;
  --it;
  return ts < it->end ? static_cast<int>(it - windows.begin()) : -1;
}

bool FindingsContext::InSteps(size_t slice) const { return WindowOf(t.slices.ts[slice]) >= 0; }

std::string_view FindingsContext::Name(size_t slice) const { return t.strings.Get(t.slices.name[slice]); }

double FindingsContext::PerStep(double total_ns) const { return steps ? total_ns / static_cast<double>(steps) : 0; }

double FindingsContext::Pct(double per_step_ns) const { return step_ns > 0 ? 100.0 * per_step_ns / step_ns : 0; }

int64_t FindingsContext::PathTime(const std::function<bool(const PathSegment&)>& pred) const {
  int64_t sum = 0;
  for (const StepCriticalPath* p : paths)
    for (const auto& s : p->segments)
      if (pred(s)) sum += s.end - s.start;
  if (walked_steps == 0 || walked_steps == paths.size()) return sum;
  return static_cast<int64_t>(static_cast<double>(sum) * static_cast<double>(paths.size()) /
                              static_cast<double>(walked_steps));
}

int64_t FindingsContext::PathTimeInside(const std::function<bool(size_t)>& is_target) const {
  // Time on the path spent in slices that are, or are nested in, a target slice.
  const auto& sl = t.slices;
  model::Column<int8_t> memo(sl.size(), -1);
  std::function<bool(int32_t)> inside = [&](int32_t s) -> bool {
    if (s == model::kNone) return false;
    auto& m = memo[static_cast<size_t>(s)];
    if (m >= 0) return m;
    bool r = is_target(static_cast<size_t>(s)) || inside(sl.parent[static_cast<size_t>(s)]);
    m = r ? 1 : 0;
    return r;
  };
  return PathTime([&](const PathSegment& g) { return g.slice != model::kNone && inside(g.slice); });
}

}  // namespace strata::analysis

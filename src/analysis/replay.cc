#include "analysis/replay.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <map>
#include <utility>

#include "analysis/name_classes.h"
#include "base/intervals.h"

namespace strata::analysis {

namespace {

using model::kNone;
using model::SliceKind;

// A task starting this soon after the previous one on its queue ended waited
// for the queue, not for its launch: its launch latency is not measured.
constexpr int64_t kQueueGap = 2000;
// A copy call that returns this soon after its copy ended waited for it.
constexpr int64_t kWaitSlack = 1000;

bool IsRuntimeKind(SliceKind k) { return k == SliceKind::kRuntime || k == SliceKind::kDriver; }

bool IsTaskKind(SliceKind k) { return k == SliceKind::kKernel || k == SliceKind::kMemcpy || k == SliceKind::kMemset; }

// The piece containing `at` (the last starting at or before it), or -1.
int32_t PieceAt(const std::vector<ReplayPiece>& ps, int64_t at) {
  auto it = std::upper_bound(ps.begin(), ps.end(), at, [](int64_t v, const ReplayPiece& p) { return v < p.start; });
  if (it == ps.begin()) return -1;
  --it;
  return at < it->start + std::max<int64_t>(it->dur, 1) ? static_cast<int32_t>(it - ps.begin()) : -1;
}

// Launch latencies (device start - launch call start) of the tasks whose queue
// was free when they were launched; their median stands for the others.
struct Latencies {
  model::Column<int64_t> of_row;  // per device row, -1 unknown
  int64_t typical = 0;
};

Latencies MeasureLatencies(const model::Trace& t) {
  const auto& s = t.slices;
  Latencies out;
  out.of_row.assign(t.device.size(), -1);
  std::map<uint32_t, std::vector<uint32_t>> by_queue;
  for (size_t r = 0; r < t.device.size(); ++r)
    if (IsTaskKind(s.kind[t.device.slice[r]])) by_queue[s.track[t.device.slice[r]]].push_back(static_cast<uint32_t>(r));
  std::vector<int64_t> free;
  for (auto& [q, rows] : by_queue) {
    std::sort(rows.begin(), rows.end(),
              [&](uint32_t a, uint32_t b) { return s.ts[t.device.slice[a]] < s.ts[t.device.slice[b]]; });
    int64_t prev_end = INT64_MIN;
    for (uint32_t r : rows) {
      size_t d = t.device.slice[r];
      int32_t l = t.device.launch[r];
      if (l != kNone) {
        int64_t lat = std::max<int64_t>(0, s.ts[d] - s.ts[static_cast<size_t>(l)]);
        out.of_row[r] = lat;
        if (prev_end == INT64_MIN || s.ts[d] - prev_end > kQueueGap) free.push_back(lat);
        else out.of_row[r] = -2;  // queue-bound: resolved below
      }
      prev_end = std::max(prev_end, s.end(d));
    }
  }
  if (!free.empty()) {
    std::nth_element(free.begin(), free.begin() + static_cast<std::ptrdiff_t>(free.size() / 2), free.end());
    out.typical = free[free.size() / 2];
  }
  for (size_t r = 0; r < out.of_row.size(); ++r)
    if (out.of_row[r] == -2) {
      int32_t l = t.device.launch[r];
      out.of_row[r] = std::min(out.typical, std::max<int64_t>(0, s.ts[t.device.slice[r]] - s.ts[static_cast<size_t>(l)]));
    }
  return out;
}

}  // namespace

Replay::Replay(const model::Trace& t, const std::vector<StepWindow>& windows,
               const std::vector<std::vector<HostInterval>>& timelines) {
  const auto& s = t.slices;
  Latencies lat = MeasureLatencies(t);
  // Device tasks by start, with the longest duration to find those running into a window.
  std::vector<uint32_t> rows;
  int64_t longest = 0;
  for (size_t r = 0; r < t.device.size(); ++r) {
    size_t d = t.device.slice[r];
    if (!IsTaskKind(s.kind[d])) continue;
    rows.push_back(static_cast<uint32_t>(r));
    longest = std::max(longest, s.dur[d]);
  }
  std::sort(rows.begin(), rows.end(),
            [&](uint32_t a, uint32_t b) { return s.ts[t.device.slice[a]] < s.ts[t.device.slice[b]]; });
  auto process_of = [&](uint32_t track) { return track < t.tracks.size() ? t.tracks[track].process : model::kNoProcess; };

  NameClasses nc(t);
  for (size_t k = 0; k < windows.size() && k < timelines.size(); ++k) {
    const StepWindow& w = windows[k];
    if (!w.counted || !w.detail || w.dur <= 0) continue;
    ReplayStep st;
    st.window = k;
    st.ts = w.ts;
    st.dur = w.dur;
    st.pieces.reserve(timelines[k].size());
    for (const HostInterval& iv : timelines[k]) {
      ReplayPiece p;
      p.start = iv.start;
      p.dur = iv.end - iv.start;
      p.part = iv.part;
      p.slice = iv.slice;
      p.elsewhere = iv.elsewhere;
      p.own = p.dur;
      if (p.slice != kNone) {
        auto i = static_cast<size_t>(p.slice);
        if (IsRuntimeKind(s.kind[i]) && nc.Is(s.name[i], kNameSync)) p.wait = ReplayPiece::kWaitDevice;
      }
      st.pieces.push_back(p);
    }
    // The device tasks of the step's process running in the window.
    uint32_t proc = process_of(w.track);
    std::map<uint32_t, uint32_t> queue_of;
    std::vector<ReplayTask> launched, fixed;
    const int64_t w_end = w.ts + w.dur;
    auto first = std::lower_bound(rows.begin(), rows.end(), w.ts - longest,
                                  [&](uint32_t r, int64_t v) { return s.ts[t.device.slice[r]] < v; });
    for (auto it = first; it != rows.end() && s.ts[t.device.slice[*it]] < w_end; ++it) {
      uint32_t r = *it;
      size_t d = t.device.slice[r];
      if (s.end(d) <= w.ts) continue;
      int32_t l = t.device.launch[r];
      if (l != kNone && process_of(s.track[static_cast<size_t>(l)]) != proc) continue;
      ReplayTask task;
      task.row = r;
      task.queue = queue_of.try_emplace(s.track[d], static_cast<uint32_t>(queue_of.size())).first->second;
      task.start = s.ts[d] - w.ts;
      task.dur = s.dur[d];
      auto ls = static_cast<size_t>(l);
      if (l != kNone && s.ts[ls] >= w.ts && s.ts[ls] < w_end) {
        task.piece = PieceAt(st.pieces, s.ts[ls]);
        // Launched by another thread while the step thread waited for it:
        // the launch moves with that wait.
        if (task.piece >= 0 && s.track[ls] != w.track && !st.pieces[static_cast<size_t>(task.piece)].elsewhere)
          task.piece = -1;
        if (task.piece >= 0) {
          task.offset = s.ts[ls] - st.pieces[static_cast<size_t>(task.piece)].start;
          task.latency = std::max<int64_t>(0, lat.of_row[r]);
          launched.push_back(task);
          continue;
        }
      }
      task.piece = -1;
      fixed.push_back(task);
    }
    std::stable_sort(launched.begin(), launched.end(), [](const ReplayTask& a, const ReplayTask& b) {
      return a.piece != b.piece ? a.piece < b.piece : a.offset < b.offset;
    });
    st.tasks = std::move(launched);
    st.launched = st.tasks.size();
    st.tasks.insert(st.tasks.end(), fixed.begin(), fixed.end());  // by start: `rows` is
    st.queues = static_cast<uint32_t>(queue_of.size());
    // A copy call that returned only once its copy had ended waited for it.
    for (size_t j = 0; j < st.tasks.size(); ++j) {
      const ReplayTask& task = st.tasks[j];
      if (task.piece < 0 || s.kind[t.device.slice[task.row]] != SliceKind::kMemcpy) continue;
      auto ls = static_cast<size_t>(t.device.launch[task.row]);
      int64_t copy_end = w.ts + task.start + task.dur;
      if (s.end(ls) + kWaitSlack < copy_end || copy_end <= s.ts[ls]) continue;
      int32_t at = PieceAt(st.pieces, std::min(copy_end, s.end(ls) - 1));
      if (at < task.piece) continue;
      ReplayPiece& p = st.pieces[static_cast<size_t>(at)];
      if (p.wait != ReplayPiece::kNoWait) continue;
      p.wait = ReplayPiece::kWaitTask;
      p.wait_task = static_cast<int32_t>(j);
      p.own = std::max<int64_t>(0, p.dur - std::max<int64_t>(0, std::min(copy_end, p.start + p.dur) - p.start));
    }
    // A sync's own cost: its time less the wait for the work launched before
    // it (by this thread: in an earlier piece; elsewhere: started before the
    // sync returned).
    std::vector<std::pair<int64_t, int64_t>> fixed_ends;  // (start, latest end of fixed tasks started so far)
    for (size_t j = st.launched; j < st.tasks.size(); ++j)
      fixed_ends.emplace_back(st.tasks[j].start, st.tasks[j].start + st.tasks[j].dur);
    for (size_t j = 1; j < fixed_ends.size(); ++j)
      fixed_ends[j].second = std::max(fixed_ends[j].second, fixed_ends[j - 1].second);
    size_t next_task = 0;
    int64_t launched_done = INT64_MIN;
    for (size_t i = 0; i < st.pieces.size(); ++i) {
      for (; next_task < st.launched && st.tasks[next_task].piece < static_cast<int32_t>(i); ++next_task)
        launched_done = std::max(launched_done, st.tasks[next_task].start + st.tasks[next_task].dur);
      ReplayPiece& p = st.pieces[i];
      if (p.wait != ReplayPiece::kWaitDevice) continue;
      int64_t rel = p.start - w.ts, done = launched_done;
      auto it = std::lower_bound(fixed_ends.begin(), fixed_ends.end(), std::make_pair(rel + p.dur, INT64_MIN));
      if (it != fixed_ends.begin()) done = std::max(done, std::prev(it)->second);
      int64_t waited = done == INT64_MIN ? 0 : std::clamp<int64_t>(done - rel, 0, p.dur);
      p.own = p.dur - waited;
    }
    steps_.push_back(std::move(st));
  }
  baseline_.reserve(steps_.size());
  for (const ReplayStep& st : steps_) baseline_.push_back(ReplayOne(st, nullptr));
}

double Replay::ReplayOne(const ReplayStep& s, const ReplayFix* fix) const {
  const size_t n = s.tasks.size();
  std::vector<double> qfree(s.queues, -1e300), qbusy(s.queues, 0), end(n, 0);
  // Fixed tasks (by start) keep their measured times.
  const size_t first_fixed = s.launched;
  std::vector<std::vector<uint32_t>> fixed_of(s.queues);
  for (size_t j = first_fixed; j < n; ++j) {
    const ReplayTask& task = s.tasks[j];
    double d = fix && fix->device ? fix->device(s, task) : static_cast<double>(task.dur);
    end[j] = static_cast<double>(task.start) + d;
    fixed_of[task.queue].push_back(static_cast<uint32_t>(j));
  }
  std::vector<size_t> next_fixed(s.queues, 0);
  double done_all = -1e300;  // the latest end of device work scheduled so far
  // Fixed work started before a host piece (measured) counts for its waits.
  size_t fixed_ptr = first_fixed;

  double t = 0, input = 0;
  size_t next = 0;  // next launched task
  for (size_t i = 0; i < s.pieces.size(); ++i) {
    const ReplayPiece& p = s.pieces[i];
    int64_t rel = p.start - s.ts;
    while (fixed_ptr < n && s.tasks[fixed_ptr].start < rel + p.dur) done_all = std::max(done_all, end[fixed_ptr++]);
    double own = fix && fix->host ? std::max(0.0, fix->host(s, p)) : static_cast<double>(p.own);
    double scale = p.own > 0 ? own / static_cast<double>(p.own) : 1.0;
    bool aside = fix && (fix->overlap_parts & (1u << static_cast<unsigned>(p.part)));
    double start = t;
    for (; next < first_fixed && s.tasks[next].piece == static_cast<int32_t>(i); ++next) {
      const ReplayTask& task = s.tasks[next];
      double d = fix && fix->device ? std::max(0.0, fix->device(s, task)) : static_cast<double>(task.dur);
      double at = start + std::min(own, static_cast<double>(task.offset) * scale) + static_cast<double>(task.latency);
      at = std::max(at, qfree[task.queue]);
      auto& fq = fixed_of[task.queue];
      for (size_t& k = next_fixed[task.queue]; k < fq.size() && static_cast<double>(s.tasks[fq[k]].start) <= at; ++k)
        at = std::max(at, end[fq[k]]);
      end[next] = at + d;
      qfree[task.queue] = end[next];
      qbusy[task.queue] += d;
      done_all = std::max(done_all, end[next]);
    }
    if (aside) {
      input += own;
      continue;
    }
    bool waits = p.wait != ReplayPiece::kNoWait && !(fix && fix->drop_wait && fix->drop_wait(s, p));
    // A wait ends its own cost after what it waits for (the wake-up, the
    // copy-out): measured, what the call took after the device was done.
    double ready = start;
    if (waits && p.wait == ReplayPiece::kWaitDevice) ready = std::max(ready, done_all);
    if (waits && p.wait == ReplayPiece::kWaitTask && p.wait_task >= 0) ready = std::max(ready, end[static_cast<size_t>(p.wait_task)]);
    t = ready + own;
  }
  double step = std::max(t, input);
  // A host that never waits for its device cannot run ahead of it for long.
  for (double b : qbusy) step = std::max(step, b);
  return step;
}

ReplayResult Replay::Run(const ReplayFix& fix) const {
  ReplayResult r;
  r.steps = steps_.size();
  if (steps_.empty()) return r;
  for (size_t k = 0; k < steps_.size(); ++k) {
    r.measured_ns += static_cast<double>(steps_[k].dur);
    r.baseline_ns += baseline_[k];
    r.fixed_ns += ReplayOne(steps_[k], &fix);
  }
  double n = static_cast<double>(steps_.size());
  r.measured_ns /= n;
  r.baseline_ns /= n;
  r.fixed_ns /= n;
  return r;
}

double Replay::BaselineErrorPct() const {
  if (steps_.empty()) return 0;
  double sum = 0;
  for (size_t k = 0; k < steps_.size(); ++k)
    sum += std::fabs(baseline_[k] - static_cast<double>(steps_[k].dur)) / static_cast<double>(std::max<int64_t>(1, steps_[k].dur));
  return 100.0 * sum / static_cast<double>(steps_.size());
}

ReplayFix ReduceParts(const std::vector<PartCut>& cuts, const std::vector<ReplayStep>& steps) {
  std::array<double, kStepParts> total{}, keep{};
  keep.fill(1.0);
  for (const ReplayStep& s : steps)
    for (const ReplayPiece& p : s.pieces) total[static_cast<size_t>(p.part)] += static_cast<double>(p.own);
  // Takes `want` (over all steps) from the parts; returns what they could not give.
  auto take = [&](const std::vector<StepPart>& parts, double want) {
    double left = 0;
    for (StepPart p : parts) left += total[static_cast<size_t>(p)] * keep[static_cast<size_t>(p)];
    if (left <= 0 || want <= 0) return std::max(0.0, want);
    double k = std::clamp(1 - want / left, 0.0, 1.0);
    for (StepPart p : parts) keep[static_cast<size_t>(p)] *= k;
    return std::max(0.0, want - left);
  };
  for (const PartCut& cut : cuts) take(cut.then, take(cut.parts, cut.ns_per_step * static_cast<double>(steps.size())));
  ReplayFix fix;
  fix.host = [keep](const ReplayStep&, const ReplayPiece& p) {
    return static_cast<double>(p.own) * keep[static_cast<size_t>(p.part)];
  };
  return fix;
}

ReplayFix RemoveTime(std::vector<Intervals> per_window) {
  ReplayFix fix;
  fix.host = [per_window = std::move(per_window)](const ReplayStep& s, const ReplayPiece& p) {
    double own = static_cast<double>(p.own);
    if (s.window >= per_window.size() || p.dur <= 0 || per_window[s.window].empty()) return own;
    const Intervals& v = per_window[s.window];
    const int64_t a = p.start, b = p.start + p.dur;
    const int64_t inside = OverlapWith(v, a, b);
    return std::max(0.0, own * (1 - static_cast<double>(inside) / static_cast<double>(p.dur)));
  };
  return fix;
}

ReplayFix ScaleTasks(std::function<bool(uint32_t row)> pick, double keep) {
  ReplayFix fix;
  fix.device = [pick = std::move(pick), keep](const ReplayStep&, const ReplayTask& task) {
    double d = static_cast<double>(task.dur);
    return pick(task.row) ? d * keep : d;
  };
  return fix;
}

bool WithinAny(const model::Trace& t, int32_t slice, const std::set<int32_t>& set) {
  for (int32_t s = slice; s != kNone; s = t.slices.parent[static_cast<size_t>(s)])
    if (set.count(s)) return true;
  return false;
}

}  // namespace strata::analysis

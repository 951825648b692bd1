// The straggler findings: a tail of slow steps (which steps, their period,
// what they do more of: a child scope, a Python function, time blocked or
// waiting for a CPU) and a slow process among several (its work per step
// against the others'). Split from rules_os.cc, whose OS tables they read.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "analysis/findings_context.h"
#include "analysis/os.h"
#include "analysis/step_breakdown.h"
#include "analysis/summary.h"
#include "analysis/track_rows.h"
#include "base/intervals.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

using model::ThreadState;

std::string Ms(double ns) { return HumanDuration(ns); }

// The period P of the slow steps when most of them (3 and more, 60%) are
// P steps apart (n, n+P, n+2P...) and most steps of that series within the
// measured steps [first, last] are slow (75%): a few stray slow steps do not
// hide the period, nor make up a shorter one. 0 if none.
uint64_t Periodicity(const std::vector<uint64_t>& numbers, uint64_t first, uint64_t last) {
  if (numbers.size() < 3) return 0;
  for (size_t i = 1; i < numbers.size(); ++i)
    if (numbers[i] <= numbers[i - 1]) return 0;  // several processes' steps interleaved
  uint64_t best = 0;
  size_t best_n = 0;
  for (size_t i = 0; i < numbers.size(); ++i)
    for (size_t j = i + 1; j < numbers.size(); ++j) {
      uint64_t p = numbers[j] - numbers[i];
      if (p < 2) continue;
      uint64_t r = numbers[i] % p;
      size_t n = 0;
      for (uint64_t x : numbers) n += x % p == r;
      uint64_t start = first + (r + p - first % p) % p;  // the series' first step >= first
      size_t expected = start > last ? 0 : static_cast<size_t>((last - start) / p + 1);
      if (n * 4 < expected * 3) continue;
      if (n > best_n || (n == best_n && p < best)) {
        best_n = n;
        best = p;
      }
    }
  return best_n >= 3 && best_n * 5 >= numbers.size() * 3 ? best : 0;
}

// The Python code that slow steps run more than the other steps: per Python
// function (its name and first line, whatever line it is at), the step
// thread's CPU samples with it on the stack, in the slow steps and in the
// others. Candidates are not the loop itself (on the stack in at most half the
// other steps' samples), are on it at least 3x as often per slow step as per
// other step (a checkpoint every 8th step that is slow only at times counts),
// are in a fifth of the slow steps' samples and account for half or more of
// their extra samples. Of those, the one with the most extra samples, the
// outermost among equals: the program's own call (validate(),
// save_checkpoint()) rather than what it calls.
struct SlowCode {
  std::string function;  // FunctionLabel; "" when the samples name none
  double slow_share = 0, typical_share = 0;
};
SlowCode SlowStepsCode(const model::Trace& t, const std::vector<FindingsContext::Window>& windows,
                       const std::vector<bool>& is_slow, double n_slow, double n_typ) {
  const auto& cs = t.cpu_samples;
  SlowCode out;
  if (cs.size() == 0 || n_slow <= 0 || n_typ <= 0) return out;
  struct Counts {
    double n[2] = {0, 0};  // [slow?] samples with the function on the stack
    uint16_t depth = 0;
    uint32_t frame = 0;
  };
  using Key = std::tuple<model::StringId, model::StringId, uint64_t>;  // function, module, first line
  std::map<Key, Counts> by;
  double samples[2] = {0, 0};
  std::vector<Key> seen;
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto& w = windows[i];
    if (w.track == UINT32_MAX) continue;
    const int slow = is_slow[i] ? 1 : 0;
    RowsIn(cs, TrackRows(cs, w.track), w.start, w.end, [&](size_t r) {
      if (cs.ts[r] < w.start) return;
      samples[slow] += 1;
      seen.clear();
      for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
        uint32_t fr = t.callsites.frame[static_cast<size_t>(k)];
        if (t.frames.kind[fr] != model::FrameKind::kPython || t.frames.pc[fr] == 0) continue;
        Key key{t.frames.function[fr], t.frames.module[fr], t.frames.pc[fr]};
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;  // recursion: once a sample
        seen.push_back(key);
        Counts& e = by[key];
        e.n[slow] += 1;
        e.depth = t.callsites.depth[static_cast<size_t>(k)];
        e.frame = fr;
      }
    });
  }
  if (samples[1] < 10) return out;
  const double extra_all = samples[1] / n_slow - samples[0] / n_typ;
  const Counts* best = nullptr;
  double best_extra = 0;
  for (const auto& [key, e] : by) {
    double slow_share = e.n[1] / samples[1], typ_share = samples[0] > 0 ? e.n[0] / samples[0] : 0;
    double slow_rate = e.n[1] / n_slow, typ_rate = e.n[0] / n_typ, extra = slow_rate - typ_rate;
    if (typ_share > 0.5 || slow_share < 0.2 || slow_rate < 3 * typ_rate) continue;
    if (extra_all > 0 && extra < 0.5 * extra_all) continue;
    if (!best || extra > 1.05 * best_extra || (extra >= best_extra / 1.05 && e.depth < best->depth)) {
      best = &e;
      best_extra = extra;
    }
  }
  if (!best) return out;
  out.function = FunctionLabel(t, best->frame);
  out.slow_share = best->n[1] / samples[1];
  out.typical_share = samples[0] > 0 ? best->n[0] / samples[0] : 0;
  return out;
}

// "2nd", "3rd", "10th", "12th", "21st".
std::string Ordinal(uint64_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

// Whether the host ran ahead of its work in the steps before the slow ones
// (see SlowStepsTail): in each such step, work it had queued ran for half of
// the step or more, on a device or on another thread of the step thread's
// process (XLA's CPU backend, a runtime's workers), while the step's thread
// went on without waiting for it.
bool RanAhead(const model::Trace& t, const std::vector<FindingsContext::Window>& windows,
              const std::vector<bool>& is_slow) {
  const auto& sl = t.slices;
  const auto& st = t.thread_states;
  Intervals busy_device;
  for (size_t r = 0; r < t.device.size(); ++r) {
    size_t d = t.device.slice[r];
    busy_device.emplace_back(sl.ts[d], sl.end(d));
  }
  SortAndMerge(busy_device);
  size_t ahead = 0, asked = 0;
  for (size_t i = 1; i < windows.size(); ++i) {
    if (!is_slow[i] || is_slow[i - 1] || windows[i - 1].track == UINT32_MAX) continue;
    const auto& w = windows[i - 1];
    ++asked;
    int64_t device = OverlapWith(busy_device, w.start, w.end), threads = 0;
    const uint32_t process = t.tracks[w.track].process;
    for (uint32_t k = 0; k < t.tracks.size() && st.size() > 0; ++k) {
      if (k == w.track || t.tracks[k].kind != model::TrackKind::kThread || t.tracks[k].process != process) continue;
      threads += RunningIn(st, TrackRows(st, k), w.start, w.end);
    }
    ahead += 2 * std::max(device, std::min(threads, w.end - w.start)) >= w.end - w.start;
  }
  return asked > 0 && ahead * 3 >= asked * 2;
}

void SlowStepsTail(FindingsContext& c, std::vector<Finding>* out) {
  if (!c.has_steps || c.steps < 8) return;
  const model::Trace& t = c.t;
  std::vector<int64_t> durs;
  for (const auto& w : c.windows) durs.push_back(w.end - w.start);
  Distribution d = Distribute(durs);
  double p50 = static_cast<double>(d.p50);
  if (p50 <= 0) return;
  // Slow steps: twice the median and more, and beyond the steps' usual spread
  // (6 median absolute deviations: a busy machine's jitter is not a tail).
  // What they take beyond the median is what a fix of their cause saves.
  std::vector<int64_t> dev;
  for (int64_t x : durs) dev.push_back(std::abs(x - d.p50));
  double mad = static_cast<double>(Distribute(dev).p50);
  double threshold = p50 + std::max(p50, 6 * mad);
  // A step slowed down mostly by waiting for a CPU is contention (the
  // cpu_contention rule's), not something the step itself did.
  const auto& st = t.thread_states;
  // The step's work waits for a CPU on its own thread, and on the threads of
  // its process it blocks for (an op's intra-op pool, a TorchScript forward's
  // workers): while the step's thread is blocked, the time any of those is
  // runnable counts too.
  auto runnable_in = [&](const FindingsContext::Window& w) {
    int64_t r = 0;
    if (st.size() == 0 || w.track == UINT32_MAX) return r;
    std::vector<std::pair<int64_t, int64_t>> blocked;
    RowsIn(st, TrackRows(st, w.track), w.start, w.end, [&](size_t q) {
      int64_t a = std::max(st.ts[q], w.start), b = std::min(st.ts[q] + st.dur[q], w.end);
      if (b <= a) return;
      if (st.state[q] == ThreadState::kRunnable) r += b - a;
      else if (st.state[q] != ThreadState::kRunning && st.state[q] != ThreadState::kUnknown) blocked.emplace_back(a, b);
    });
    if (blocked.empty()) return r;
    std::vector<uint32_t> process_threads;
    for (uint32_t k = 0; k < t.tracks.size(); ++k)
      if (k != w.track && t.tracks[k].kind == model::TrackKind::kThread && t.tracks[k].process == t.tracks[w.track].process)
        process_threads.push_back(k);
    std::vector<std::pair<int64_t, int64_t>> waiting;  // others' runnable time inside the blocked stretches
    for (uint32_t k : process_threads)
      RowsIn(st, TrackRows(st, k), w.start, w.end, [&](size_t q) {
        if (st.state[q] != ThreadState::kRunnable) return;
        auto it = std::upper_bound(blocked.begin(), blocked.end(), std::make_pair(st.ts[q], INT64_MAX));
        if (it != blocked.begin()) --it;
        for (; it != blocked.end() && it->first < st.ts[q] + st.dur[q]; ++it) {
          int64_t a = std::max(st.ts[q], it->first), b = std::min(st.ts[q] + st.dur[q], it->second);
          if (b > a) waiting.emplace_back(a, b);
        }
      });
    std::sort(waiting.begin(), waiting.end());
    int64_t end = INT64_MIN;
    for (auto [a, b] : waiting) {  // their union
      a = std::max(a, end);
      if (b > a) r += b - a, end = b;
    }
    return r;
  };
  std::vector<size_t> slow;
  double excess = 0;
  // (The first measured step is not a tail: the program may still warm up in
  // it, its caches, allocator and lazily built state, as in the step before.)
  for (size_t i = 1; i < c.windows.size(); ++i) {
    double x = static_cast<double>(durs[i]);
    if (x >= threshold && static_cast<double>(runnable_in(c.windows[i])) < 0.5 * (x - p50)) {
      slow.push_back(i);
      excess += x - p50;
    }
  }
  if (slow.size() < 2 || slow.size() * 3 > c.steps) return;  // a third of the steps slow: that is the norm, not a tail
  double pct = 100.0 * excess / static_cast<double>(c.total_step_ns);
  if (pct < 3) return;

  std::vector<uint64_t> numbers;
  for (size_t i : slow) {
    int32_t s = c.paths[i]->step_slice;
    numbers.push_back(s == model::kNone ? i : t.slices.arg[static_cast<size_t>(s)]);
  }
  // The same step slow on every rank of a job is one slow iteration (a
  // hiccup all of them waited out), not a tail: two distinct steps at least.
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  if (numbers.size() < 2) return;
  std::vector<bool> is_slow(c.windows.size(), false);
  for (size_t i : slow) is_slow[i] = true;
  // What the slow steps do more of: the step's direct children by name, and
  // the step thread's time on CPU, waiting for a CPU and blocked.
  std::map<std::string, std::pair<double, double>> child;  // name -> (slow total, typical total)
  double os[2][3] = {{0, 0, 0}, {0, 0, 0}};                  // [slow?][running, runnable, blocked]
  std::map<std::string, double> blocked_in;                  // slow steps' blocking causes
  for (size_t i = 0; i < c.windows.size(); ++i) {
    int32_t s = c.paths[i]->step_slice;
    if (s == model::kNone) continue;
    size_t step = static_cast<size_t>(s);
    auto [first, last] = t.track_slices[t.slices.track[step]];
    for (size_t k = step + 1; k < last && t.slices.ts[k] < t.slices.end(step); ++k)
      if (t.slices.parent[k] == s) {
        auto& e = child[std::string(t.strings.Get(t.slices.name[k]))];
        (is_slow[i] ? e.first : e.second) += static_cast<double>(t.slices.dur[k]);
      }
    (void)first;
    const auto& w = c.windows[i];
    if (st.size() == 0 || w.track == UINT32_MAX) continue;
    RowsIn(st, TrackRows(st, w.track), w.start, w.end, [&](size_t r) {
      double o = static_cast<double>(Overlap(st.ts[r], st.ts[r] + st.dur[r], w.start, w.end));
      if (o <= 0 || st.state[r] == ThreadState::kUnknown) return;
      int k = st.state[r] == ThreadState::kRunning ? 0 : st.state[r] == ThreadState::kRunnable ? 1 : 2;
      os[is_slow[i]][k] += o;
      if (k == 2 && is_slow[i]) blocked_in[OffCpuCauseOf(t, r).cause] += o;
    });
  }
  double n_slow = static_cast<double>(slow.size()), n_typ = static_cast<double>(c.steps - slow.size());
  double excess_mean = 0;  // how much longer than the median a slow step takes, on average
  for (size_t i : slow) excess_mean += (static_cast<double>(durs[i]) - p50) / n_slow;
  // When another finding's fix takes the slow steps' extra away too, that
  // finding says how uneven the waits are and this one stays silent.
  auto defer_to = [&](const char* category, double extra, double share, const char* waiting) {
    if (extra <= share * excess_mean) return false;
    for (Finding& g : *out)
      if (g.category == category) {
        g.evidence += fmt::format(" The waits are uneven: {} of {} steps take {:.1f}x the median step, {} more {} in them.",
                                  slow.size(), c.steps, (p50 + excess_mean) / p50, Ms(extra), waiting);
        return true;
      }
    return false;
  };
  const SlowCode code = SlowStepsCode(t, c.windows, is_slow, n_slow, n_typ);
  std::string top_child;
  double top_child_extra = 0;
  for (auto& [name, v] : child) {
    double extra = v.first / n_slow - v.second / n_typ;
    if (extra > top_child_extra) {
      top_child_extra = extra;
      top_child = name;
    }
  }
  const char* kState[] = {"on CPU", "waiting for a CPU", "blocked"};
  int top_state = -1;
  double top_state_extra = 0;
  for (int k = 0; k < 3; ++k) {
    double extra = os[1][k] / n_slow - os[0][k] / n_typ;
    if (extra > top_state_extra) {
      top_state_extra = extra;
      top_state = k;
    }
  }
  // Slow steps that wait for a result more than the others (a device sync,
  // .item(), a JAX result read, for the log every Nth step) pay for the work
  // the steps before them queued: the host ran ahead of an asynchronous device
  // or runtime, and only a step that reads a value waits. Taking the wait away
  // saves none of that work, so this is no tail (a sync's own cost, the device
  // running dry behind it, is host_sync's finding). The other steps must not
  // wait in it and must have run ahead (RanAhead): a slow step that queues its
  // own work (an evaluation every Nth step) and waits for it stays a tail.
  if (!top_child.empty() && IsSyncName(top_child)) {
    const auto& v = child[top_child];
    if (top_child_extra > 0.5 * excess_mean && v.second / n_typ < 0.1 * excess_mean && RanAhead(t, c.windows, is_slow))
      return;
  }
  // Slow steps that are slow because the step's thread sleeps while another
  // Python thread holds the GIL are that finding's (rules_gil.cc, run before
  // this one).
  if (top_state == 2 && defer_to("gil_contention", top_state_extra, 0.3, "blocked")) return;
  // Slow steps that are slow because they wait longer for their batch (a
  // producer thread that is late at times, a loader's uneven reads) are the
  // input pipeline's finding: its fix takes their wait away too.
  if (c.breakdown.steps.size() == c.windows.size()) {
    double slow_input = 0, typ_input = 0;
    for (size_t i = 0; i < c.windows.size(); ++i)
      (is_slow[i] ? slow_input : typ_input) +=
          static_cast<double>(c.breakdown.steps[i].host[static_cast<size_t>(StepPart::kInput)]);
    if (defer_to("input_pipeline", slow_input / n_slow - typ_input / n_typ, 0.5, "waiting for input")) return;
  }
  std::string blocked_cause;
  if (top_state == 2 && !blocked_in.empty())
    blocked_cause = std::max_element(blocked_in.begin(), blocked_in.end(), [](const auto& a, const auto& b) {
                      return a.second < b.second;
                    })->first;
  if (blocked_cause == "blocked") blocked_cause.clear();  // no syscall or stack to say more

  std::string list;
  for (size_t k = 0; k < numbers.size() && k < 12; ++k) list += (k ? ", " : "") + std::to_string(numbers[k]);
  if (numbers.size() > 12) list += fmt::format(" and {} more", numbers.size() - 12);
  uint64_t first_step = UINT64_MAX, last_step = 0;
  for (const StepCriticalPath* p : c.paths)
    if (p->step_slice != model::kNone) {
      first_step = std::min(first_step, t.slices.arg[static_cast<size_t>(p->step_slice)]);
      last_step = std::max(last_step, t.slices.arg[static_cast<size_t>(p->step_slice)]);
    }
  uint64_t period = Periodicity(numbers, first_step, last_step);
  double slow_mean = 0;
  for (size_t i : slow) slow_mean += static_cast<double>(durs[i]);
  slow_mean /= n_slow;

  Finding f;
  f.category = "straggler";
  f.title = fmt::format("{} of {} steps take {:.1f}x the median step{}", slow.size(), c.steps, slow_mean / p50,
                        period ? fmt::format(": every {} step", Ordinal(period)) : "");
  std::string why;
  if (!top_child.empty() && top_child_extra > 0.3 * (slow_mean - p50))
    why += fmt::format(" In the slow steps, '{}' takes {} more than in the others.", top_child, Ms(top_child_extra));
  if (top_state >= 0 && top_state_extra > 0.3 * (slow_mean - p50))
    why += fmt::format(" The step's thread spends {} more {}{} in them.", Ms(top_state_extra), kState[top_state],
                       blocked_cause.empty() ? "" : " (mostly " + blocked_cause + ")");
  if (!code.function.empty())
    why += fmt::format(" The Python function {} is on the step thread's stack in {:.0f}% of its CPU samples in the slow "
                       "steps and in {:.0f}% of the other steps' samples.",
                       code.function, 100 * code.slow_share, 100 * code.typical_share);
  f.evidence = fmt::format("Steps {} take {} on average against a median of {} (p90/p50 {:.2f}); their time beyond the "
                           "median is {:.0f}% of all step time.{}",
                           list, Ms(slow_mean), Ms(p50), static_cast<double>(d.p90) / p50, pct, why);
  f.metrics = {{"slow_steps", n_slow},       {"steps", static_cast<double>(c.steps)},
               {"period_steps", static_cast<double>(period)},
               {"p50_ns", p50},              {"p90_ns", static_cast<double>(d.p90)},
               {"slow_step_mean_ns", slow_mean}, {"excess_pct", pct}};
  if (!code.function.empty()) f.metrics.emplace_back("slow_function_sample_share", code.slow_share);
  for (size_t k = 0; k < numbers.size() && k < 20; ++k) f.involved.push_back(fmt::format("step {}", numbers[k]));
  if (!top_child.empty() && top_child_extra > 0.3 * (slow_mean - p50)) f.involved.push_back(top_child);
  if (!code.function.empty()) f.involved.push_back(code.function);
  // The program's own call is the better lead than an op or module it runs.
  std::string candidate = !code.function.empty()                                       ? code.function
                          : !top_child.empty() && top_child_extra > 0.3 * (slow_mean - p50) ? top_child
                                                                                            : "";
  // A what-if on the sequence of steps, not on one step's graph: each slow
  // step at the median.
  f.estimated_gain_pct = pct;
  f.what_if = fmt::format("each slow step at the median step ({}); the other steps as measured", Ms(p50));
  if (top_state == 1)
    f.suggestion = "The slow steps wait for a CPU: other work preempts the step's thread at times (see the cpu_contention "
                   "finding); give the job dedicated cores.";
  else
    f.suggestion = fmt::format(
        "Find what the slow steps do that the others do not{} and take it off the step's path: move periodic work "
        "(checkpoints, logging, evaluation, garbage collection) to a background thread or do it less often, and "
        "balance the work per step.",
        candidate.empty() ? "" : fmt::format(" ('{}' is the candidate)", candidate));
  out->push_back(std::move(f));
}

void SlowRank(FindingsContext& c, std::vector<Finding>* out) {
  // Processes (ranks, workers) stepping in lockstep: the slowest sets every
  // step's pace, the others wait for it at their synchronization. A step's
  // work is its thread's time on CPU (not blocked at the barrier or in a
  // collective, not waiting for a CPU): equal step times, unequal work.
  const model::Trace& t = c.t;
  const auto& st = t.thread_states;
  struct PerProcess {
    std::vector<int64_t> work, dur;
  };
  std::map<uint32_t, PerProcess> by_process;
  std::vector<size_t> steps;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == model::SliceKind::kStep) steps.push_back(i);
  std::sort(steps.begin(), steps.end(), [&t](size_t a, size_t b) { return t.slices.ts[a] < t.slices.ts[b]; });
  for (size_t i : steps) {
    uint32_t trk = t.slices.track[i];
    int64_t a = t.slices.ts[i], b = t.slices.end(i), blocked = 0;
    if (st.size() > 0)
      RowsIn(st, TrackRows(st, trk), a, b, [&](size_t q) {
        // Waiting for a CPU is not work either: workers sharing too few cores.
        if (st.state[q] != ThreadState::kRunning && st.state[q] != ThreadState::kUnknown)
          blocked += Overlap(st.ts[q], st.ts[q] + st.dur[q], a, b);
      });
    PerProcess& p = by_process[t.tracks[trk].process];
    p.work.push_back(b - a - blocked);
    p.dur.push_back(b - a);
  }
  struct Rank {
    double work, dur;
    uint32_t process;
  };
  std::vector<Rank> ranks;
  for (auto& [proc, p] : by_process) {
    if (p.work.size() < 3) continue;
    size_t skip = p.work.size() > 4 ? 1 : 0;  // the first step warms up
    std::vector<int64_t> w(p.work.begin() + static_cast<ptrdiff_t>(skip), p.work.end());
    std::vector<int64_t> d(p.dur.begin() + static_cast<ptrdiff_t>(skip), p.dur.end());
    ranks.push_back({static_cast<double>(Distribute(w).p50), static_cast<double>(Distribute(d).p50), proc});
  }
  if (ranks.size() < 2) return;
  std::sort(ranks.begin(), ranks.end(), [](const Rank& x, const Rank& y) { return x.work < y.work; });
  const Rank& slowest = ranks.back();
  double typical = ranks[(ranks.size() - 1) / 2].work;
  double mean_work = 0;
  for (const Rank& r : ranks) mean_work += r.work / static_cast<double>(ranks.size());
  if (typical <= 0 || slowest.work < 1.2 * typical || slowest.dur <= 0) return;
  // Balanced, each process would do the mean work: the step shrinks by what
  // the slowest does beyond it.
  double pct = 100.0 * (slowest.work - mean_work) / slowest.dur;
  if (pct < 3) return;
  Finding f;
  f.category = "straggler";
  f.title = fmt::format("{} is the straggler: its steps do {:.1f}x the work of the other processes'",
                        ProcessLabel(t, slowest.process), slowest.work / typical);
  std::string all;
  for (const Rank& r : ranks)
    all += fmt::format("{}{} {} of {}", all.empty() ? "" : ", ", ProcessLabel(t, r.process), Ms(r.work), Ms(r.dur));
  f.evidence = fmt::format("Median time on CPU per step of each process (of its step time): {}. The others wait for "
                           "the slowest at their synchronization.",
                           all);
  f.metrics = {{"slowest_work_ns", slowest.work}, {"typical_work_ns", typical}, {"processes", static_cast<double>(ranks.size())}};
  f.involved.push_back(ProcessLabel(t, slowest.process));
  // A what-if across processes: the slowest one's work at the typical.
  f.estimated_gain_pct = pct;
  f.what_if = fmt::format("the slowest process's work at the others' typical ({}): the rest stop waiting for it",
                          Ms(typical));
  f.suggestion = "Balance the work across processes: check the straggler's data shard or batch size, its device or host "
                 "(CPU pinning, a slower or shared GPU/node), and its extra duties (logging, checkpointing on rank 0).";
  out->push_back(std::move(f));
}

}  // namespace

void Straggler(FindingsContext& c, std::vector<Finding>* out) {
  // With collectives recorded, RankStraggler (rules_comms.cc) says which rank
  // the others wait for, from the collectives themselves.
  if (c.t.collectives.size() == 0) SlowRank(c, out);
  SlowStepsTail(c, out);
}

}  // namespace strata::analysis

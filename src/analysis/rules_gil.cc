// Another Python thread of the program holding the GIL as a cause: the step's
// thread is blocked (not in I/O, not producing its batch) while a thread of
// the same process runs Python code. Each time the step's thread lets the GIL
// go (inside ops, in backward), such a thread takes it and keeps it for up to
// the interpreter's switch interval (5 ms), however many cores are free.
// Without the wait's user stack (take_gil), the sign is the overlap: the
// step's thread asleep while that thread is on a CPU running Python.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/findings_context.h"
#include "analysis/os.h"
#include "analysis/program_frames.h"
#include "analysis/track_rows.h"
#include "base/intervals.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

using Interval = std::pair<int64_t, int64_t>;
using model::ThreadState;

// Sorted, disjoint union of intervals.
std::vector<Interval> Union(std::vector<Interval> v) {
  SortAndMerge(v);
  return v;
}

// A thread's CPU samples in the steps: how many, how many with a Python frame
// on the stack, and the Python function most of those were in.
struct PythonUse {
  size_t samples = 0, python = 0;
  std::string function;
};

PythonUse PythonUseOf(const FindingsContext& c, uint32_t track) {
  const model::Trace& t = c.t;
  const auto& cs = t.cpu_samples;
  auto rows = TrackRows(cs, track);
  PythonUse u;
  std::map<std::string, size_t> count;
  for (const auto& w : c.windows) {
    auto [lo, hi] = RowsAt(cs, rows, w.start, w.end);
    for (size_t r = lo; r < hi; ++r) {
      ++u.samples;
      for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
        uint32_t f = t.callsites.frame[static_cast<size_t>(k)];
        if (t.frames.kind[f] != model::FrameKind::kPython) continue;
        ++u.python;
        std::string_view file = t.strings.Get(t.frames.module[f]);
        auto slash = file.rfind('/');
        ++count[fmt::format("{} ({})", t.strings.Get(t.frames.function[f]),
                            slash == std::string_view::npos ? file : file.substr(slash + 1))];
        break;
      }
    }
  }
  u.function = MostCommon(count);
  return u;
}

}  // namespace

void GilContention(FindingsContext& c, std::vector<Finding>* out) {
  const model::Trace& t = c.t;
  const auto& st = t.thread_states;
  if (st.size() == 0 || t.cpu_samples.size() == 0 || !c.has_steps || !c.replay || c.windows.empty()) return;
  const uint32_t track = c.windows.front().track;
  if (track == UINT32_MAX) return;
  const uint32_t process = t.tracks[track].process;
  // The process's other threads that run Python in the steps (most of their
  // samples have a Python frame), and when they ran.
  std::vector<Interval> running;
  std::vector<std::pair<double, std::string>> who;  // samples, "thread (function)"
  for (uint32_t k = 0; k < t.tracks.size(); ++k) {
    if (k == track || t.tracks[k].kind != model::TrackKind::kThread || t.tracks[k].process != process ||
        IsStrataThread(t, k))
      continue;
    PythonUse u = PythonUseOf(c, k);
    if (u.samples < 5 || 2 * u.python < u.samples) continue;
    auto rows = TrackRows(st, k);
    for (size_t r = rows.first; r < rows.second; ++r)
      if (st.state[r] == ThreadState::kRunning) running.emplace_back(st.ts[r], st.ts[r] + st.dur[r]);
    std::string name(t.strings.Get(t.tracks[k].name));
    who.emplace_back(static_cast<double>(u.samples),
                     fmt::format("{} {} ({})", name.empty() ? "tid" : name, t.tracks[k].tid, u.function));
  }
  if (who.empty()) return;
  running = Union(std::move(running));
  std::sort(who.rbegin(), who.rend());
  // Per replayed step: the step thread asleep (not preempted, not in the
  // disk's sleep) while such a thread runs, outside the parts where waiting
  // is the step's own business (its input: a queue fed by that very thread;
  // its I/O; a device sync or copy).
  auto st_rows = TrackRows(st, track);
  std::vector<std::vector<Interval>> held(c.windows.size());
  double total = 0;
  size_t steps = 0;
  for (const ReplayStep& s : c.replay->steps()) {
    if (s.window >= c.windows.size()) continue;
    ++steps;
    std::vector<Interval> asleep;
    RowsIn(st, st_rows, s.ts, s.ts + s.dur, [&](size_t r) {
      ThreadState x = st.state[r];
      if (x != ThreadState::kSleeping && x != ThreadState::kBlocked) return;
      int64_t a = std::max(st.ts[r], s.ts), b = std::min(st.ts[r] + st.dur[r], s.ts + s.dur);
      if (b > a) asleep.emplace_back(a, b);
    });
    if (asleep.empty()) continue;
    std::vector<Interval> gil;
    for (const ReplayPiece& p : s.pieces) {
      if (p.part == StepPart::kInput || p.part == StepPart::kIo || p.part == StepPart::kSync || p.part == StepPart::kCopy ||
          p.dur <= 0)
        continue;
      for (const Interval& a : asleep) {
        int64_t lo = std::max(a.first, p.start), hi = std::min(a.second, p.start + p.dur);
        if (hi <= lo) continue;
        // The parts of [lo, hi) during which a Python thread ran.
        auto it = std::upper_bound(running.begin(), running.end(), Interval{lo, INT64_MAX});
        if (it != running.begin()) --it;
        for (; it != running.end() && it->first < hi; ++it) {
          int64_t x = std::max(lo, it->first), y = std::min(hi, it->second);
          if (y > x) gil.emplace_back(x, y);
        }
      }
    }
    held[s.window] = Union(std::move(gil));
    for (const Interval& g : held[s.window]) total += static_cast<double>(g.second - g.first);
  }
  if (steps == 0) return;
  const double per_step = total / static_cast<double>(steps);
  const double pct = c.Pct(per_step);
  if (pct < 5) return;
  Finding f;
  f.category = "gil_contention";
  f.title = fmt::format("The step's thread waits {:.0f}% of each step while {} runs Python: the GIL", pct,
                        who.front().second);
  std::string threads;
  for (size_t k = 0; k < who.size() && k < 3; ++k) {
    threads += fmt::format("{}{}", k ? ", " : "", who[k].second);
    f.involved.push_back(who[k].second);
  }
  f.evidence = fmt::format(
      "The step's thread is asleep (not in its input, I/O, or a device sync or copy) {} per step of a {} step, and in that "
      "time a Python thread of the same process is on a CPU: {}. Python runs one thread at a time; each time the "
      "step's thread lets the GIL go (inside ops, in backward) such a thread takes it, for up to the interpreter's "
      "switch interval (5 ms) each time ({} steps measured).",
      HumanDuration(per_step), HumanDuration(c.step_ns), threads, steps);
  f.metrics = {{"gil_wait_ns_per_step", per_step}, {"gil_wait_pct", pct}, {"python_threads", static_cast<double>(who.size())}};
  // Replayed: the step's thread no longer waits in those intervals.
  c.Replayed(&f, RemoveTime(std::move(held)));
  f.what_if = fmt::format("the step without its waits for the GIL ({} per step): that thread's work in a separate "
                          "process",
                          HumanDuration(per_step));
  f.suggestion = fmt::format(
      "Move the work of {} out of the training process (multiprocessing, a DataLoader's workers: processes have a GIL "
      "each), or make it release the GIL (whole-array NumPy/torch operations instead of Python loops), or run it less "
      "often; a smaller switch interval (sys.setswitchinterval(0.0005)) shortens each wait. Fewer threads for the "
      "ops do not help.",
      who.front().second);
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

// Findings from the OS level: tiny I/O system calls and CPU contention (the
// straggling steps are rules_straggler.cc's). They read the model's OS tables
// (thread states, system calls, CPU samples) on the thread that ran each
// measured step.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "analysis/findings_context.h"
#include "analysis/os.h"
#include "analysis/program_frames.h"
#include "analysis/summary.h"
#include "analysis/track_rows.h"
#include "base/intervals.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

using model::ThreadState;

// Durations and counts as people read them (base/units.h).
std::string Ms(double ns) { return HumanDuration(ns); }
std::string Us(double ns) { return HumanDuration(ns); }

std::string ThreadName(const model::Trace& t, uint32_t track) {
  const model::Track& trk = t.tracks[track];
  std::string name(t.strings.Get(trk.name));
  return fmt::format("{} {}", name.empty() ? "tid" : name, trk.tid);
}

// What a thread was doing inside the steps' windows, from its CPU samples: its
// most sampled innermost Python function where the stack has one ("importing
// modules" for the import machinery), else its innermost user-space native
// function (the code that asked: memset, not the kernel's clear_page_erms
// serving its page faults), else its innermost kernel function; "" without
// samples.
std::string BusyWith(const FindingsContext& c, uint32_t track) {
  const model::Trace& t = c.t;
  const auto& cs = t.cpu_samples;
  auto rows = TrackRows(cs, track);
  std::map<std::string, size_t> count;
  for (const auto& w : c.windows) {
    auto [lo, hi] = RowsAt(cs, rows, w.start, w.end);
    for (size_t r = lo; r < hi; ++r) {
      std::string label;
      std::string_view kernel;  // the innermost kernel function, for a stack with no user-space one
      bool python = false;
      for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
        uint32_t f = t.callsites.frame[static_cast<size_t>(k)];
        std::string_view fn = t.strings.Get(t.frames.function[f]);
        if (t.frames.kind[f] == model::FrameKind::kKernel) {
          if (kernel.empty() && !fn.empty() && fn[0] != '[') kernel = fn;
          continue;
        }
        if (t.frames.kind[f] == model::FrameKind::kPython) {
          std::string_view file = t.strings.Get(t.frames.module[f]);
          if (file.find("importlib") != std::string_view::npos) {
            label = "importing modules";
            break;
          }
          if (!python) {
            python = true;
            auto slash = file.rfind('/');
            label = fmt::format("{} ({})", fn, slash == std::string_view::npos ? file : file.substr(slash + 1));
          }
          continue;
        }
        if (label.empty() && !fn.empty() && fn[0] != '[') label = std::string(fn);
      }
      if (label.empty()) label = std::string(kernel);
      if (!label.empty()) ++count[label];
    }
  }
  return MostCommon(count);
}

std::string ThreadWithProcess(const model::Trace& t, uint32_t track) {
  return fmt::format("{} in {}", ThreadName(t, track), ProcessLabel(t, t.tracks[track].process));
}

// --- io_syscalls ------------------------------------------------------------------

enum class IoDir { kNone, kRead, kWrite };

IoDir IoCall(std::string_view n) {
  static const std::set<std::string_view> kRead = {"read", "pread64", "readv", "preadv", "preadv2", "recvfrom", "recvmsg"};
  static const std::set<std::string_view> kWrite = {"write", "pwrite64", "writev", "pwritev", "pwritev2", "sendto", "sendmsg"};
  if (kRead.count(n)) return IoDir::kRead;
  if (kWrite.count(n)) return IoDir::kWrite;
  return IoDir::kNone;
}

// A call moving less than a page is "small": buffered readers and writers
// (stdio, Python's io: 4-8 KiB and more) and block reads move at least that.
constexpr int64_t kSmallIo = 4096;
// Consecutive small calls closer than this belong to one read loop; the time
// between them (the program issuing the next call) goes with the loop.
constexpr int64_t kLoopGap = 50'000;
// What reading the same bytes in large blocks still costs: one call per MiB,
// and copying out of the page cache (a conservative 2 GB/s).
constexpr double kLargeBlock = 1 << 20;
constexpr double kCopyBytesPerNs = 2.0;

void IoSyscallsFromSyscalls(FindingsContext& c, std::vector<Finding>* out) {
  const model::Trace& t = c.t;
  const auto& sc = t.syscalls;
  const auto& st = t.thread_states;
  double calls = 0, call_ns = 0, loop_gap_ns = 0, bytes = 0, reads = 0, writes = 0;
  std::map<std::string, double> by_name;
  std::vector<int64_t> call_durs;
  for (const auto& w : c.windows) {
    if (w.track == UINT32_MAX) continue;
    auto rows = TrackRows(sc, w.track);
    auto st_rows = TrackRows(st, w.track);
    int64_t prev_end = -1;
    RowsIn(sc, rows, w.start, w.end, [&](size_t r) {
      if (sc.ts[r] < w.start) return;
      std::string_view name = t.strings.Get(sc.name[r]);
      IoDir dir = IoCall(name);
      if (dir == IoDir::kNone || sc.returned[r] != 1 || sc.ret[r] < 0 || sc.ret[r] >= kSmallIo) {
        prev_end = -1;
        return;
      }
      int64_t end = std::min(sc.ts[r] + sc.dur[r], w.end);
      calls += 1;
      (dir == IoDir::kRead ? reads : writes) += 1;
      call_ns += static_cast<double>(end - sc.ts[r]);
      call_durs.push_back(sc.dur[r]);
      bytes += static_cast<double>(sc.ret[r]);
      by_name[std::string(name)] += 1;
      if (prev_end >= 0) {
        // A gap in which the thread was preempted is still the loop: it waits
        // for the CPU to issue the next call.
        int64_t gap = sc.ts[r] - prev_end, waiting = 0;
        if (gap >= kLoopGap && st.size() > 0)
          RowsIn(st, st_rows, prev_end, sc.ts[r], [&](size_t q) {
            if (st.state[q] == ThreadState::kRunnable) waiting += Overlap(st.ts[q], st.ts[q] + st.dur[q], prev_end, sc.ts[r]);
          });
        if (gap - waiting < kLoopGap || 2 * waiting >= gap) loop_gap_ns += static_cast<double>(gap);
      }
      prev_end = end;
    });
  }
  double per_step_calls = c.PerStep(calls);
  if (per_step_calls < 64) return;
  double loop_ns = c.PerStep(call_ns + loop_gap_ns);
  double step_bytes = c.PerStep(bytes);
  Distribution d = Distribute(call_durs);
  double large_cost = std::ceil(step_bytes / kLargeBlock) * static_cast<double>(d.p50) + step_bytes / kCopyBytesPerNs;
  double saved = std::max(0.0, loop_ns - large_cost);
  double pct = c.Pct(saved);
  if (pct < 3) return;
  double mean_bytes = calls > 0 ? bytes / calls : 0;
  Finding f;
  f.category = "io_syscalls";
  f.title = fmt::format("{:.0f} small I/O system calls per step ({:.0f} bytes each) take {:.0f}% of the step",
                        per_step_calls, mean_bytes, c.Pct(loop_ns));
  std::string names;
  for (auto& [n, k] : by_name) names += fmt::format("{}{} {:.0f}/step", names.empty() ? "" : ", ", n, c.PerStep(k));
  f.evidence = fmt::format(
      "On the step's thread, {:.0f} reads and {:.0f} writes per step move under {} KiB each (mean {:.0f} bytes; {}): "
      "{} per step inside the calls (median {} each) and {} between them (issuing the next one, or preempted), {} of a "
      "{} step, to move {} per "
      "step. The same bytes in {} KiB blocks would take about {}.",
      c.PerStep(reads), c.PerStep(writes), kSmallIo / 1024, mean_bytes, names, Ms(c.PerStep(call_ns)),
      Us(static_cast<double>(d.p50)), Ms(c.PerStep(loop_gap_ns)), Ms(loop_ns), Ms(c.step_ns), HumanBytes(step_bytes),
      static_cast<int>(kLargeBlock / 1024), Ms(large_cost));
  f.metrics = {{"syscalls_per_step", per_step_calls},
               {"mean_bytes_per_call", mean_bytes},
               {"syscall_ns_per_step", c.PerStep(call_ns)},
               {"loop_ns_per_step", loop_ns},
               {"bytes_per_step", step_bytes},
               {"step_ns", c.step_ns}};
  for (auto& [n, k] : by_name) f.involved.push_back(n);
  // Replayed: the calls and the loop issuing them (the program's code between
  // them) cut to what the same bytes in large blocks would take.
  double io_cut = std::max(0.0, c.step_ns * pct / 100);
  c.Replayed(&f, ReduceParts({{{StepPart::kIo}, io_cut, {StepPart::kInput, StepPart::kPython, StepPart::kIdle}}},
                             c.replay->steps()));
  f.suggestion = "Read and write in large blocks: open files with a buffer (Python: open(path, 'rb') with the default "
                 "or a larger buffering=, not buffering=0 or os.read of a few bytes; C: fread/ifstream or one read() of "
                 "the whole record), read whole records or files at once (np.fromfile, mmap), and batch small writes.";
  out->push_back(std::move(f));
}

// The torch.save spans on the steps' threads, sorted: the reads and writes in
// them are the checkpoint rule's (rules_checkpoint.cc), not this one's.
std::vector<std::pair<int64_t, int64_t>> SaveSpans(const FindingsContext& c) {
  const model::Trace& t = c.t;
  std::vector<std::pair<int64_t, int64_t>> v;
  model::StringId save = t.strings.Find("torch.save");
  if (save == model::StringPool::kNotFound) return v;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.name[i] == save && t.slices.kind[i] == model::SliceKind::kSpan) v.emplace_back(t.slices.ts[i], t.slices.end(i));
  std::sort(v.begin(), v.end());
  return v;
}

bool InAny(const std::vector<std::pair<int64_t, int64_t>>& v, int64_t ts) {
  auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(ts, INT64_MAX));
  return it != v.begin() && ts < std::prev(it)->second;
}

void IoSyscallsFromSamples(FindingsContext& c, std::vector<Finding>* out) {
  // No system call trace: the share of the step thread's CPU samples whose
  // stack is in the read/write path, times its CPU time in the steps.
  const model::Trace& t = c.t;
  const auto& cs = t.cpu_samples;
  const auto& st = t.thread_states;
  // Each sample: in the read/write path or not, and the innermost Python line
  // it ran for (the program's line that made the call). The other samples on a
  // line that issues the reads are the calls' own cost in the interpreter
  // (argument parsing, a bytes object per call): the fix saves them too.
  double samples = 0, io_samples = 0, on_cpu = 0;
  std::vector<std::pair<bool, int64_t>> seen;  // (in the io path, Python line key or -1)
  std::set<int64_t> io_lines;
  const auto saves = SaveSpans(c);
  for (const auto& w : c.windows) {
    if (w.track == UINT32_MAX) continue;
    RowsIn(cs, TrackRows(cs, w.track), w.start, w.end, [&](size_t r) {
      if (cs.ts[r] < w.start) return;
      samples += 1;
      if (!saves.empty() && InAny(saves, cs.ts[r])) return;  // a checkpoint's writes
      bool io = false;
      int64_t line = -1;
      for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
        uint32_t fr = t.callsites.frame[static_cast<size_t>(k)];
        if (t.frames.kind[fr] == model::FrameKind::kPython) {
          line = (static_cast<int64_t>(t.frames.module[fr]) << 32) | t.frames.line[fr];
          break;
        }
        if (!io && IsIoFrame(t.strings.Get(t.frames.function[fr]))) io = true;
      }
      if (io) {
        io_samples += 1;
        if (line >= 0) io_lines.insert(line);
      }
      seen.emplace_back(io, line);
    });
    if (st.size() > 0) on_cpu += static_cast<double>(RunningIn(st, TrackRows(st, w.track), w.start, w.end));
  }
  if (io_samples < 10 || samples <= 0) return;
  double issuing = 0;
  for (const auto& [io, line] : seen)
    if (!io && line >= 0 && io_lines.count(line)) issuing += 1;
  double cpu_per_step = st.size() > 0 ? c.PerStep(on_cpu) : c.step_ns;
  double io_ns = cpu_per_step * io_samples / samples;
  double issuing_ns = cpu_per_step * issuing / samples;
  double pct = c.Pct(io_ns);
  if (pct < 10) return;
  Finding f;
  f.category = "io_syscalls";
  f.title = fmt::format("Read/write system calls take {:.0f}% of the step's CPU time", 100.0 * io_samples / samples);
  f.evidence = fmt::format(
      "{:.0f} of the step thread's {:.0f} CPU samples in the measured steps are inside read/write system calls: about "
      "{} of a {} step; {:.0f} more are on the Python lines that make those calls ({}). Record with --syscalls to see "
      "how many calls and how many bytes each.",
      io_samples, samples, Ms(io_ns), Ms(c.step_ns), issuing, Ms(issuing_ns));
  f.metrics = {{"io_samples", io_samples},
               {"issuing_samples", issuing},
               {"samples", samples},
               {"io_ns_per_step", io_ns},
               {"issuing_ns_per_step", issuing_ns},
               {"step_ns", c.step_ns}};
  f.involved = {"read/write"};
  // Without call sizes, what a fix keeps (copying the bytes) is unknown; the
  // per-call cost that dominates small calls goes, in the kernel and in the
  // interpreter's calls.
  c.Replayed(&f, ReduceParts({{{StepPart::kIo}, 0.8 * io_ns, {StepPart::kInput, StepPart::kPython}},
                              {{StepPart::kInput, StepPart::kPython}, 0.8 * issuing_ns}},
                             c.replay->steps()));
  f.what_if = fmt::format("the read path ({}) and the Python lines issuing the calls ({}) as a few large reads: a fifth "
                          "of that time stays (the bytes are still copied)",
                          Ms(io_ns), Ms(issuing_ns));
  f.suggestion = "If these are many small calls, read and write in large blocks: buffered files (Python: open() "
                 "without buffering=0), whole records per call, np.fromfile or mmap; batch small writes.";
  out->push_back(std::move(f));
}

}  // namespace

void IoSyscalls(FindingsContext& c, std::vector<Finding>* out) {
  if (c.t.syscalls.size() > 0) IoSyscallsFromSyscalls(c, out);
  else if (c.t.cpu_samples.size() > 0) IoSyscallsFromSamples(c, out);
}

void CpuContention(FindingsContext& c, std::vector<Finding>* out) {
  const model::Trace& t = c.t;
  const auto& st = t.thread_states;
  if (st.size() == 0) return;
  std::set<uint32_t> step_tracks;
  for (const auto& w : c.windows)
    if (w.track != UINT32_MAX) step_tracks.insert(w.track);
  if (step_tracks.empty()) return;
  // Running intervals of every other traced thread, per CPU. One CPU runs one
  // thread at a time, so each CPU's intervals are sorted by end as well.
  std::map<int, std::vector<size_t>> running;
  for (size_t r = 0; r < st.size(); ++r)
    if (st.state[r] == ThreadState::kRunning && st.cpu[r] >= 0 && !step_tracks.count(st.track[r])) running[st.cpu[r]].push_back(r);
  for (auto& [cpu, v] : running)
    std::sort(v.begin(), v.end(), [&](size_t a, size_t b) { return st.ts[a] < st.ts[b]; });

  double runnable = 0, preemptions = 0, on_cpu = 0;
  std::map<uint32_t, double> by_competitor;  // track -> time it ran on the CPU the step's thread waited for
  std::map<int, double> step_cpus;            // CPU -> step thread's running time
  for (const auto& w : c.windows) {
    if (w.track == UINT32_MAX) continue;
    RowsIn(st, TrackRows(st, w.track), w.start, w.end, [&](size_t r) {
      int64_t a = std::max(st.ts[r], w.start), b = std::min(st.ts[r] + st.dur[r], w.end);
      if (b <= a) return;
      if (st.state[r] == ThreadState::kRunning) {
        on_cpu += static_cast<double>(b - a);
        step_cpus[st.cpu[r]] += static_cast<double>(b - a);
        return;
      }
      if (st.state[r] != ThreadState::kRunnable) return;
      runnable += static_cast<double>(b - a);
      if (st.ts[r] >= w.start) preemptions += 1;
      auto it = running.find(st.cpu[r]);
      if (it == running.end()) return;
      const auto& v = it->second;
      auto first = std::lower_bound(v.begin(), v.end(), a, [&](size_t x, int64_t val) { return st.ts[x] + st.dur[x] <= val; });
      for (auto k = first; k != v.end() && st.ts[*k] < b; ++k)
        by_competitor[st.track[*k]] += static_cast<double>(Overlap(st.ts[*k], st.ts[*k] + st.dur[*k], a, b));
    });
  }
  double per_step = c.PerStep(runnable);
  double pct = c.Pct(per_step);
  if (pct < 5) return;
  std::vector<std::pair<double, uint32_t>> comp;
  double traced = 0;
  for (auto& [trk, ns] : by_competitor) {
    comp.emplace_back(ns, trk);
    traced += ns;
  }
  std::sort(comp.rbegin(), comp.rend());
  traced = std::min(traced, runnable);
  double outside = runnable - traced;
  // The CPUs each side ran on (5% of its time and more): pinned to the same core shows as one CPU each.
  auto cpus_of = [&](uint32_t trk, const std::map<int, double>* given) {
    std::map<int, double> m;
    if (given) m = *given;
    auto rows = TrackRows(st, trk);
    for (size_t r = rows.first; r < rows.second && !given; ++r)
      if (st.state[r] == ThreadState::kRunning && st.cpu[r] >= 0) m[st.cpu[r]] += static_cast<double>(st.dur[r]);
    double total = 0;
    for (auto& [k, v] : m) total += v;
    std::string s;
    for (auto& [k, v] : m)
      if (v * 20 >= total) s += fmt::format("{}{}", s.empty() ? "" : ",", k);
    return s;
  };
  uint32_t step_track = *step_tracks.begin();
  std::string waits = fmt::format(
      "The step's thread ({}, on CPUs {}) is runnable but not running {} per step ({:.0f}% of a {} step, {} "
      "preemptions per step) and on CPU {}.",
      ThreadName(t, step_track), cpus_of(step_track, &step_cpus), Ms(per_step), pct, Ms(c.step_ns),
      HumanCount(c.PerStep(preemptions)),
      Ms(c.PerStep(on_cpu)));
  auto metrics = [&](double part) {
    return std::vector<std::pair<std::string, double>>{{"runnable_ns_per_step", per_step},
                                                       {"runnable_pct", pct},
                                                       {"preemptions_per_step", c.PerStep(preemptions)},
                                                       {"on_cpu_ns_per_step", c.PerStep(on_cpu)},
                                                       {"competitor_ns_per_step", c.PerStep(part)}};
  };
  // With the CPU shared fairly, a competitor removed from the step's core gives
  // back what it ran there while the step's thread waited: each cause's
  // estimate is its own part of the wait. The job's own threads and the rest
  // of the machine are fixed differently, so they are two findings.
  if (c.Pct(c.PerStep(traced)) >= 5) {
    Finding f;
    f.category = "cpu_contention";
    std::string main_competitor = ThreadWithProcess(t, comp[0].second);
    f.title = fmt::format("The step's thread waits {:.0f}% of each step for a CPU taken by {}", c.Pct(c.PerStep(traced)),
                          main_competitor);
    std::string who;
    std::string python_thread;  // a thread of the step's process running the program's Python
    for (size_t k = 0; k < comp.size() && k < 4; ++k)
      if (comp[k].first >= 0.05 * runnable) {
        // Who it is: a thread of the step's own process (a BLAS or OpenMP
        // worker, a DataLoader thread) is fixed differently from another program.
        uint32_t trk = comp[k].second;
        std::string busy = BusyWith(c, trk);
        std::string role = t.tracks[trk].process == t.tracks[step_track].process ? "a thread of the step's own process" : "";
        if (!busy.empty())
          role += fmt::format("{}{}{}", role.empty() ? "" : ", ", busy == "importing modules" ? "" : "running ", busy);
        if (python_thread.empty() && t.tracks[trk].process == t.tracks[step_track].process && busy.ends_with(".py)"))
          python_thread = fmt::format("{} ({})", ThreadWithProcess(t, trk), busy);
        who += fmt::format(" {}{} ran {:.0f}% of that wait on the same CPU (it ran on CPUs {}).",
                           ThreadWithProcess(t, trk), role.empty() ? "" : " (" + role + ")",
                           100.0 * comp[k].first / runnable, cpus_of(trk, nullptr));
        f.involved.push_back(ThreadWithProcess(t, comp[k].second));
      }
    f.evidence = waits + who;
    if (outside >= 0.05 * runnable)
      f.evidence += fmt::format(" Tasks outside the recording took {:.0f}% of the wait.", 100.0 * outside / runnable);
    f.metrics = metrics(traced);
    // Replayed: the step thread no longer waits for its CPU (its off-CPU time first).
    c.Replayed(&f, ReduceParts({{{StepPart::kIdle},
                                 c.PerStep(traced),
                                 {StepPart::kCompute, StepPart::kPython, StepPart::kDispatch, StepPart::kInput}}},
                               c.replay->steps()));
    f.suggestion = fmt::format(
        "Give the step's thread and {} different cores: fix the CPU affinity (taskset -c, numactl, "
        "os.sched_setaffinity, a container's cpuset) so that they do not share one core, and keep busy threads to the "
        "cores you have ({}); or lower the competitor's priority (nice).",
        main_competitor,
        c.Fix("torch.set_num_threads, OMP_NUM_THREADS, the number of DataLoader workers",
              "tf.config.threading.set_intra_op_parallelism_threads and set_inter_op_parallelism_threads, "
              "OMP_NUM_THREADS, tf.data's num_parallel_calls"));
    // A Python thread of the program takes the interpreter too: each time the
    // step's thread releases the GIL (inside ops, backward), it may wait for
    // it the whole switch interval, whatever the cores.
    if (!python_thread.empty())
      f.suggestion += fmt::format(
          " {} runs Python in a thread of the program: besides a CPU it takes the GIL each time the step's thread "
          "releases it (inside ops and backward), for up to the interpreter's switch interval (5 ms) each time (fewer threads for the ops "
          "do not change that); run that work in a separate process (multiprocessing, a "
          "DataLoader's workers), as whole-array operations that release the GIL, or less often.",
          python_thread);
    out->push_back(std::move(f));
  }
  if (c.Pct(c.PerStep(outside)) >= 10) {
    Finding f;
    f.category = "cpu_contention";
    f.title = fmt::format("The step's thread waits {:.0f}% of each step for a CPU taken by processes outside the job",
                          c.Pct(c.PerStep(outside)));
    f.evidence = waits + fmt::format(" {:.0f}% of the wait went to tasks outside the recording.", 100.0 * outside / runnable);
    f.metrics = metrics(outside);
    f.involved.push_back("(outside the recording)");
    c.Replayed(&f, ReduceParts({{{StepPart::kIdle},
                                 c.PerStep(outside),
                                 {StepPart::kCompute, StepPart::kPython, StepPart::kDispatch, StepPart::kInput}}},
                               c.replay->steps()));
    f.suggestion = "Other processes on the machine take the step's CPU: run on dedicated cores or a less loaded machine "
                   "(a cgroup cpuset, the scheduler's exclusive allocation), and keep the job's threads to its cores.";
    out->push_back(std::move(f));
  }
}

}  // namespace strata::analysis

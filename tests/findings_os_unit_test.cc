// The OS-level findings rules (analysis/rules_os.cc) on hand-built traces:
// exact numbers where recorded programs give only ranges, and a run of the
// rules under the sanitizers (the recorded examples run in
// bottlenecks_os_test, outside them).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "analysis/findings.h"
#include "model/trace.h"

namespace strata {
namespace {

using model::SliceKind;
using model::ThreadState;

constexpr int64_t kMs = 1'000'000;

double Metric(const analysis::Finding& f, const std::string& name) {
  for (const auto& [k, v] : f.metrics)
    if (k == name) return v;
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

const analysis::Finding* Find(const std::vector<analysis::Finding>& fs, const std::string& category) {
  for (const auto& f : fs)
    if (f.category == category) return &f;
  return nullptr;
}

// A trace with a process (pid 100) whose thread "main" (track 0) runs `steps`
// steps of 1 ms back to back from t=0.
model::Trace StepTrace(int steps) {
  model::Trace t;
  t.processes.push_back({.pid = 100, .name = t.strings.Intern("trainer")});
  t.tracks.push_back({model::TrackKind::kThread, 0, 100, t.strings.Intern("main")});
  for (int i = 0; i < steps; ++i)
    t.slices.Add(i * kMs, kMs, 0, t.strings.Intern("step"), SliceKind::kStep, static_cast<uint64_t>(i));
  return t;
}

// Each of the ten 1 ms steps: the step's thread (track 0) runs 0.5 ms, then
// waits 0.5 ms runnable on CPU 0 while track 1 runs there. (The OS tables are
// sorted by (track, ts), as the importers leave them.)
void ShareOneCpu(model::Trace& t) {
  for (int i = 0; i < 10; ++i) {
    t.thread_states.Add(i * kMs, kMs / 2, 0, ThreadState::kRunning, 0);
    t.thread_states.Add(i * kMs + kMs / 2, kMs / 2, 0, ThreadState::kRunnable, 0);
  }
  for (int i = 0; i < 10; ++i) {
    t.thread_states.Add(i * kMs, kMs / 2, 1, ThreadState::kRunnable, 0);
    t.thread_states.Add(i * kMs + kMs / 2, kMs / 2, 1, ThreadState::kRunning, 0);
  }
}

TEST(FindingsOs, CpuContentionNamesTheThreadThatRanWhileTheStepWaited) {
  model::Trace t = StepTrace(10);
  // A second process's thread on the same CPU: each step, main runs 0.5 ms,
  // then waits 0.5 ms runnable while "hog" runs.
  t.processes.push_back({.pid = 200, .name = t.strings.Intern("hog")});
  t.tracks.push_back({model::TrackKind::kThread, 1, 200, t.strings.Intern("hog")});
  ShareOneCpu(t);
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  ASSERT_FALSE(fs.empty());
  const analysis::Finding& f = fs.front();
  EXPECT_EQ(f.category, "cpu_contention");
  ASSERT_EQ(f.involved.size(), 1u);
  EXPECT_EQ(f.involved[0], "hog 200 in pid 200 (hog)");
  EXPECT_NEAR(f.estimated_gain_pct, 50, 0.01);
  EXPECT_NEAR(Metric(f, "runnable_pct"), 50, 0.01);
  EXPECT_NEAR(Metric(f, "preemptions_per_step"), 1, 0.01);
  // Nothing else took the CPU: no finding about the rest of the machine.
  EXPECT_EQ(std::count_if(fs.begin(), fs.end(), [](const auto& x) { return x.category == "cpu_contention"; }), 1);
}

// Ten 1 ms steps on thread 0 of pid 100; a second thread of the same process
// (tid 101) runs while the step's thread waits for the CPU, one CPU sample a
// step in the one frame `fn` of `module` (called into the kernel's
// `kernel_fn`, innermost, where one is given).
model::Trace SameProcessCompetitor(const char* fn, const char* module, model::FrameKind kind,
                                   const char* kernel_fn = nullptr) {
  model::Trace t = StepTrace(10);
  t.tracks.push_back({model::TrackKind::kThread, 0, 101, t.strings.Intern("")});
  t.frames.function.push_back(t.strings.Intern(fn));
  t.frames.module.push_back(t.strings.Intern(module));
  t.frames.kind.push_back(kind);
  t.frames.pc.push_back(10);
  t.frames.line.push_back(12);
  t.callsites.parent.push_back(model::kNone);
  t.callsites.frame.push_back(0);
  t.callsites.depth.push_back(0);
  int32_t sampled = 0;
  if (kernel_fn) {
    t.frames.function.push_back(t.strings.Intern(kernel_fn));
    t.frames.module.push_back(t.strings.Intern("[kernel]"));
    t.frames.kind.push_back(model::FrameKind::kKernel);
    t.frames.pc.push_back(20);
    t.frames.line.push_back(0);
    t.callsites.parent.push_back(0);
    t.callsites.frame.push_back(1);
    t.callsites.depth.push_back(1);
    sampled = 1;
  }
  ShareOneCpu(t);
  for (int i = 0; i < 10; ++i) {
    t.cpu_samples.ts.push_back(i * kMs + kMs * 3 / 4);
    t.cpu_samples.track.push_back(1);
    t.cpu_samples.cpu.push_back(0);
    t.cpu_samples.callsite.push_back(sampled);
  }
  t.Finalize();
  return t;
}

// A competitor in the step's own process (a BLAS library's worker thread) is
// said to be one, with what its CPU samples ran.
TEST(FindingsOs, CpuContentionSaysWhatTheCompetitorRan) {
  model::Trace t = SameProcessCompetitor("sgemm_kernel", "libblas.so", model::FrameKind::kNative);
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "cpu_contention");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("tid 101 in pid 100 (trainer) (a thread of the step's own process, running sgemm_kernel)"),
            std::string::npos)
      << f->evidence;
  EXPECT_EQ(f->suggestion.find("GIL"), std::string::npos) << f->suggestion;
}

// A competitor whose samples are in the kernel (zeroing pages for its page
// faults) is named by the user-space function that asked, not the kernel's.
TEST(FindingsOs, CpuContentionNamesTheCompetitorsUserSpaceFunctionOverTheKernels) {
  // Every sample's stack: clear_page_erms (kernel, innermost) called from memset.
  model::Trace t = SameProcessCompetitor("memset", "libc.so.6", model::FrameKind::kNative, "clear_page_erms");
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "cpu_contention");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("(a thread of the step's own process, running memset)"), std::string::npos) << f->evidence;
  // A stack with kernel frames only is still named, by the innermost of them.
  model::Trace k = SameProcessCompetitor("clear_page_erms", "[kernel]", model::FrameKind::kKernel);
  fs = analysis::Diagnose(k);
  f = Find(fs, "cpu_contention");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("running clear_page_erms)"), std::string::npos) << f->evidence;
}

// A competitor running the program's Python in a thread of its process also
// takes the GIL: the suggestion says so (a process, not fewer op threads).
TEST(FindingsOs, CpuContentionByAPythonThreadOfTheProgramMentionsTheGil) {
  model::Trace t = SameProcessCompetitor("stats", "/src/train.py", model::FrameKind::kPython);
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "cpu_contention");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("(a thread of the step's own process, running stats (train.py))"), std::string::npos)
      << f->evidence;
  EXPECT_NE(f->suggestion.find("runs Python in a thread of the program: besides a CPU it takes the GIL"),
            std::string::npos)
      << f->suggestion;
}

TEST(FindingsOs, CpuContentionFromOutsideTheRecording) {
  model::Trace t = StepTrace(10);
  for (int i = 0; i < 10; ++i) {
    t.thread_states.Add(i * kMs, kMs * 3 / 4, 0, ThreadState::kRunning, 1);
    t.thread_states.Add(i * kMs + kMs * 3 / 4, kMs / 4, 0, ThreadState::kRunnable, 1);
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "cpu_contention");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->involved, std::vector<std::string>{"(outside the recording)"});
  EXPECT_NEAR(f->estimated_gain_pct, 25, 0.01);
}

TEST(FindingsOs, IoSyscallsCountsSmallReadsAndTheTimeBetweenThem) {
  model::Trace t = StepTrace(10);
  model::StringId read = t.strings.Intern("read");
  // Per step: 100 reads of 64 bytes, 5 us each, 2 us apart, then 300 us of other work.
  for (int i = 0; i < 10; ++i)
    for (int k = 0; k < 100; ++k) {
      auto& sc = t.syscalls;
      sc.ts.push_back(i * kMs + k * 7000);
      sc.dur.push_back(5000);
      sc.track.push_back(0);
      sc.name.push_back(read);
      sc.nr.push_back(0);
      sc.ret.push_back(64);
      sc.returned.push_back(1);
    }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  ASSERT_FALSE(fs.empty());
  const analysis::Finding& f = fs.front();
  EXPECT_EQ(f.category, "io_syscalls");
  EXPECT_EQ(f.involved, std::vector<std::string>{"read"});
  EXPECT_DOUBLE_EQ(Metric(f, "syscalls_per_step"), 100);
  EXPECT_DOUBLE_EQ(Metric(f, "mean_bytes_per_call"), 64);
  EXPECT_DOUBLE_EQ(Metric(f, "syscall_ns_per_step"), 500'000);
  EXPECT_DOUBLE_EQ(Metric(f, "loop_ns_per_step"), 500'000 + 99 * 2000);
  // 698 us of a 1 ms step, less one 1 MiB read (5 us) and copying 6400 bytes (3.2 us).
  EXPECT_NEAR(f.estimated_gain_pct, 100.0 * (698'000 - 5000 - 3200) / kMs, 0.01);
}

TEST(FindingsOs, IoSyscallsIgnoresLargeReads) {
  model::Trace t = StepTrace(10);
  model::StringId read = t.strings.Intern("read");
  for (int i = 0; i < 10; ++i)
    for (int k = 0; k < 100; ++k) {
      auto& sc = t.syscalls;
      sc.ts.push_back(i * kMs + k * 7000);
      sc.dur.push_back(5000);
      sc.track.push_back(0);
      sc.name.push_back(read);
      sc.nr.push_back(0);
      sc.ret.push_back(1 << 20);
      sc.returned.push_back(1);
    }
  t.Finalize();
  EXPECT_EQ(Find(analysis::Diagnose(t), "io_syscalls"), nullptr);
}

TEST(FindingsOs, StragglerFindsThePeriodAndWhatTheSlowStepsDo) {
  model::Trace t;
  t.processes.push_back({.pid = 100, .name = t.strings.Intern("trainer")});
  t.tracks.push_back({model::TrackKind::kThread, 0, 100, t.strings.Intern("main")});
  model::StringId step = t.strings.Intern("step"), compute = t.strings.Intern("compute"), ckpt = t.strings.Intern("ckpt");
  int64_t at = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    bool slow = i > 0 && i % 10 == 0;
    int64_t d = slow ? 6 * kMs : kMs + static_cast<int64_t>(i % 3) * 1000;
    t.slices.Add(at, d, 0, step, SliceKind::kStep, i);
    t.slices.Add(at, kMs, 0, compute, SliceKind::kSpan);
    if (slow) t.slices.Add(at + kMs, 5 * kMs, 0, ckpt, SliceKind::kSpan);
    at += d;
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  ASSERT_FALSE(fs.empty());
  const analysis::Finding& f = fs.front();
  EXPECT_EQ(f.category, "straggler");
  EXPECT_EQ(f.involved, (std::vector<std::string>{"step 10", "step 20", "step 30", "ckpt"}));
  EXPECT_DOUBLE_EQ(Metric(f, "period_steps"), 10);
  EXPECT_NE(f.title.find("every 10th step"), std::string::npos) << f.title;
  // The slow steps' time beyond the median, as a share of all step time (step 0 left out as warm-up).
  double total = 3 * 6.0 * kMs;
  for (uint64_t i = 1; i < 40; ++i)
    if (i % 10) total += static_cast<double>(kMs + static_cast<int64_t>(i % 3) * 1000);
  EXPECT_NEAR(f.estimated_gain_pct, 100.0 * 3 * (6 * kMs - (kMs + 1000)) / total, 0.01);
}

// Slow steps whose thread is blocked on a thread of its own process (an
// op's intra-op worker) while that worker waits for a CPU are slowed by
// contention, not a tail of their own: every 10th step the worker is runnable
// 5 ms while the step's thread blocks on it. No straggler finding; with the
// worker running those 5 ms instead (the step's own work), one.
TEST(FindingsOs, StepsBlockedOnTheirProcesssRunnableWorkerAreNoTail) {
  for (ThreadState worker_state : {ThreadState::kRunnable, ThreadState::kRunning}) {
    model::Trace t;
    t.processes.push_back({.pid = 100, .name = t.strings.Intern("trainer")});
    t.tracks.push_back({model::TrackKind::kThread, 0, 100, t.strings.Intern("main")});
    t.tracks.push_back({model::TrackKind::kThread, 0, 101, t.strings.Intern("worker")});
    model::StringId step = t.strings.Intern("step"), mm = t.strings.Intern("aten::addmm");
    int64_t at = 0;
    for (uint64_t i = 0; i < 40; ++i) {
      const bool slow = i > 0 && i % 10 == 0;
      const int64_t d = slow ? 6 * kMs : kMs;
      t.slices.Add(at, d, 0, step, SliceKind::kStep, i);
      t.slices.Add(at, d, 0, mm, SliceKind::kOp);
      t.thread_states.Add(at, kMs, 0, ThreadState::kRunning, 0);
      if (slow) t.thread_states.Add(at + kMs, 5 * kMs, 0, ThreadState::kSleeping, 0);
      at += d;
    }
    at = 0;
    for (uint64_t i = 0; i < 40; ++i) {  // (the OS tables sorted by track, then time)
      const bool slow = i > 0 && i % 10 == 0;
      const int64_t d = slow ? 6 * kMs : kMs;
      t.thread_states.Add(at, kMs, 1, ThreadState::kSleeping, 1);
      if (slow) t.thread_states.Add(at + kMs, 5 * kMs, 1, worker_state, 1);
      at += d;
    }
    t.Finalize();
    auto fs = analysis::Diagnose(t);
    if (worker_state == ThreadState::kRunnable) {
      EXPECT_EQ(Find(fs, "straggler"), nullptr) << Find(fs, "straggler")->evidence;
    } else {
      EXPECT_NE(Find(fs, "straggler"), nullptr);
    }
  }
}

// The step thread's Python stacks say which of the program's functions the
// slow steps run: validate() on every 10th step, never otherwise; not the
// loop's own frame (<module>, in every sample) nor what validate() calls
// (forward, in every step).
TEST(FindingsOs, StragglerNamesThePythonFunctionTheSlowStepsRun) {
  model::Trace t;
  t.processes.push_back({.pid = 100, .name = t.strings.Intern("trainer")});
  t.tracks.push_back({model::TrackKind::kThread, 0, 100, t.strings.Intern("main")});
  auto frame = [&](const char* fn, const char* file, uint64_t first_line) {
    t.frames.function.push_back(t.strings.Intern(fn));
    t.frames.module.push_back(t.strings.Intern(file));
    t.frames.kind.push_back(model::FrameKind::kPython);
    t.frames.pc.push_back(first_line);
    t.frames.line.push_back(static_cast<uint32_t>(first_line + 2));
    return static_cast<uint32_t>(t.frames.size() - 1);
  };
  auto callsite = [&](int32_t parent, uint32_t fr) {
    t.callsites.parent.push_back(parent);
    t.callsites.frame.push_back(fr);
    t.callsites.depth.push_back(parent < 0 ? 0 : static_cast<uint16_t>(t.callsites.depth[static_cast<size_t>(parent)] + 1));
    return static_cast<int32_t>(t.callsites.size() - 1);
  };
  const int32_t loop = callsite(model::kNone, frame("<module>", "/src/train.py", 1));
  const int32_t fwd = callsite(loop, frame("forward", "/src/model.py", 20));
  const int32_t val = callsite(loop, frame("validate", "/src/train.py", 9));
  const int32_t val_fwd = callsite(val, frame("forward", "/src/model.py", 20));
  model::StringId step = t.strings.Intern("step");
  int64_t at = 0;
  for (uint64_t i = 0; i < 30; ++i) {
    const bool slow = i > 0 && i % 10 == 0;
    const int64_t d = slow ? 5 * kMs : kMs;
    t.slices.Add(at, d, 0, step, SliceKind::kStep, i);
    // A sample every 0.1 ms: the loop's forward for the first 1 ms, then validate's.
    for (int64_t k = 0; k < d / (kMs / 10); ++k) {
      t.cpu_samples.ts.push_back(at + k * (kMs / 10) + 1);
      t.cpu_samples.track.push_back(0);
      t.cpu_samples.cpu.push_back(0);
      t.cpu_samples.callsite.push_back(k < 10 ? fwd : val_fwd);
    }
    at += d;
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(std::find(f->involved.begin(), f->involved.end(), "validate (train.py:9)"), f->involved.end())
      << f->evidence;
  EXPECT_DOUBLE_EQ(Metric(*f, "slow_function_sample_share"), 0.8);  // 40 of the slow steps' 50 samples
  EXPECT_NE(f->suggestion.find("'validate (train.py:9)' is the candidate"), std::string::npos) << f->suggestion;
  EXPECT_EQ(f->evidence.find("forward"), std::string::npos) << f->evidence;
}

TEST(FindingsOs, StragglerProcessDoesMoreWorkPerStep) {
  // Three processes in lockstep: equal step times, process 3 on CPU 3x as long.
  model::Trace t;
  for (int p = 0; p < 3; ++p) {
    t.processes.push_back({.pid = 100 + p, .name = t.strings.Intern("worker")});
    t.tracks.push_back({model::TrackKind::kThread, static_cast<uint32_t>(p), 100 + p, t.strings.Intern("main")});
    int64_t work = p == 2 ? 900'000 : 300'000;
    for (int i = 0; i < 10; ++i) {
      t.slices.Add(i * kMs, kMs, static_cast<uint32_t>(p), t.strings.Intern("step"), SliceKind::kStep, static_cast<uint64_t>(i));
      t.thread_states.Add(i * kMs, work, static_cast<uint32_t>(p), ThreadState::kRunning, static_cast<int16_t>(p % 2));
      t.thread_states.Add(i * kMs + work, kMs - work, static_cast<uint32_t>(p), ThreadState::kSleeping, -1);
    }
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->involved, std::vector<std::string>{"pid 102 (worker)"});
  // Balanced, each would work 500 us: 400 us of the 1 ms step go.
  EXPECT_NEAR(f->estimated_gain_pct, 40, 0.01);
}

// Three ranks in lockstep, 12 steps each. `slow` lists (rank, step) pairs
// that take 5 ms instead of 1 ms.
model::Trace RanksWithSlowSteps(const std::vector<std::pair<int, uint64_t>>& slow) {
  model::Trace t;
  model::StringId step = t.strings.Intern("step");
  for (int p = 0; p < 3; ++p) {
    t.processes.push_back({.pid = 100 + p, .name = t.strings.Intern("worker")});
    t.tracks.push_back({model::TrackKind::kThread, static_cast<uint32_t>(p), 100 + p, t.strings.Intern("main")});
    int64_t at = 0;
    for (uint64_t i = 0; i < 12; ++i) {
      bool is_slow = std::find(slow.begin(), slow.end(), std::make_pair(p, i)) != slow.end();
      int64_t d = is_slow ? 5 * kMs : kMs;
      t.slices.Add(at, d, static_cast<uint32_t>(p), step, SliceKind::kStep, i);
      at += d;
    }
  }
  t.Finalize();
  return t;
}

bool HasSlowStepsFinding(const std::vector<analysis::Finding>& fs) {
  return std::any_of(fs.begin(), fs.end(), [](const analysis::Finding& f) {
    return f.category == "straggler" && f.title.find("steps take") != std::string::npos;
  });
}

TEST(FindingsOs, OneStepSlowOnEveryRankIsNoTail) {
  // Step 7 slow on all three ranks: one slow iteration of the job (a hiccup
  // the ranks waited out together), which once read as "3 of 36 steps".
  EXPECT_FALSE(HasSlowStepsFinding(analysis::Diagnose(RanksWithSlowSteps({{0, 7}, {1, 7}, {2, 7}}))));
  // Steps 3 and 9 slow on every rank: two slow iterations, a tail.
  auto fs = analysis::Diagnose(RanksWithSlowSteps({{0, 3}, {1, 3}, {2, 3}, {0, 9}, {1, 9}, {2, 9}}));
  ASSERT_TRUE(HasSlowStepsFinding(fs));
  const analysis::Finding* f = Find(fs, "straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("Steps 3, 9 take"), std::string::npos) << f->evidence;  // each step named once
  // Every third step slow on every rank: periodic across the ranks' interleaved steps.
  std::vector<std::pair<int, uint64_t>> every3;
  for (int p = 0; p < 3; ++p)
    for (uint64_t i : {3, 6, 9}) every3.emplace_back(p, i);
  auto periodic = analysis::Diagnose(RanksWithSlowSteps(every3));
  const analysis::Finding* g = Find(periodic, "straggler");
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->title.find("every 3rd step"), std::string::npos) << g->title;
}

// A call site of one frame (`fn` of `module`, at `line`), and a CPU sample of
// it on `track`, CPU `cpu` at `ts` (the OS tables are sorted when finalized).
int32_t Site(model::Trace& t, const char* fn, const char* module, model::FrameKind kind, uint32_t line = 0) {
  t.frames.function.push_back(t.strings.Intern(fn));
  t.frames.module.push_back(t.strings.Intern(module));
  t.frames.kind.push_back(kind);
  t.frames.pc.push_back(0);
  t.frames.line.push_back(line);
  t.callsites.parent.push_back(model::kNone);
  t.callsites.frame.push_back(static_cast<uint32_t>(t.frames.size() - 1));
  t.callsites.depth.push_back(0);
  return static_cast<int32_t>(t.callsites.size() - 1);
}

void SampleAt(model::Trace& t, int64_t ts, uint32_t track, int32_t cpu, int32_t site) {
  t.cpu_samples.ts.push_back(ts);
  t.cpu_samples.track.push_back(track);
  t.cpu_samples.cpu.push_back(cpu);
  t.cpu_samples.callsite.push_back(site);
}

// StepTrace(10) where each step first waits 0.7 ms for its batch (`wait`
// adds what the thread does then, from the step's start) and then runs its
// model's forward for the rest of the step.
model::Trace WaitThenForward(const std::function<void(model::Trace&, int64_t)>& wait) {
  model::Trace t = StepTrace(10);
  for (int i = 0; i < 10; ++i) {
    int64_t s = i * kMs;
    wait(t, s);
    t.slices.Add(s + 700'000, 290'000, 0, t.strings.Intern("Sequential"), SliceKind::kModule);
    t.slices.Add(s + 705'000, 280'000, 0, t.strings.Intern("aten::addmm"), SliceKind::kOp);
  }
  t.Finalize();
  return t;
}

TEST(FindingsOs, ALoopBlockedOnItsProducerWaitsForInput) {
  // Each 1 ms step: the loop blocks 0.7 ms (off CPU: queue.get() on a queue a
  // producer thread fills), then runs its model 0.3 ms. No data loader scope:
  // the wait is the program's own code before the forward. The fix is more
  // producers; with twice as many a batch is ready every 0.5 ms.
  auto fs = analysis::Diagnose(WaitThenForward([](model::Trace& t, int64_t s) {
    t.thread_states.Add(s, 700'000, 0, ThreadState::kSleeping, 0);
    t.thread_states.Add(s + 700'000, 300'000, 0, ThreadState::kRunning, 0);
  }));
  ASSERT_FALSE(fs.empty());
  const analysis::Finding& f = fs[0];
  EXPECT_EQ(f.category, "input_pipeline") << f.title;
  EXPECT_NEAR(Metric(f, "own_code_input_ns_per_step"), 700'000, 10'000);
  EXPECT_NEAR(Metric(f, "input_waiting_ns_per_step"), 700'000, 10'000);
  EXPECT_NE(f.suggestion.find("does not keep up"), std::string::npos) << f.suggestion;
  // Twice the producers: the step takes max(0.5 ms, 0.3 ms).
  EXPECT_NEAR(f.estimated_gain_pct, 50.0, 2.0) << f.what_if;
}

TEST(FindingsOs, BatchesBuiltWhereTheCpusAreBusyNameTheirLinesAndAskForCheaperBatches) {
  // Each 1 ms step: the step's thread builds its batch on CPU for 0.7 ms (its
  // CPU samples at the program's line train.py:18), then runs its model; a
  // second thread of the process (the framework's own, spinning) runs on the
  // other CPU for 0.8 ms of each. Loader workers would have 0.2 ms of CPU a
  // step: the step cannot go below 1.8 ms of CPU over 2 CPUs, 0.9 ms (a 10%
  // gain, where the overlap alone says 65%), and the advice is to make the
  // batch cheaper, at that line.
  model::Trace t = StepTrace(10);
  t.tracks.push_back({model::TrackKind::kThread, 0, 101, t.strings.Intern("omp")});
  const int32_t line = Site(t, "<module>", "/home/u/train.py", model::FrameKind::kPython, 18);
  for (int i = 0; i < 10; ++i) {
    int64_t s = i * kMs;
    t.slices.Add(s + 700'000, 290'000, 0, t.strings.Intern("Sequential"), SliceKind::kModule);
    t.slices.Add(s + 705'000, 280'000, 0, t.strings.Intern("aten::addmm"), SliceKind::kOp);
    t.thread_states.Add(s, kMs, 0, ThreadState::kRunning, 0);
    SampleAt(t, s + 300'000, 0, 0, line);
  }
  for (int i = 0; i < 10; ++i) t.thread_states.Add(i * kMs, 800'000, 1, ThreadState::kRunning, 1);
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "input_pipeline");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(Metric(*f, "own_code_input_ns_per_step"), 700'000, 10'000);
  EXPECT_NEAR(Metric(*f, "program_cpu_ns_per_step"), 1'800'000, 10'000);
  EXPECT_NEAR(f->estimated_gain_pct, 10.0, 0.5) << f->what_if;
  EXPECT_NE(f->evidence.find("by line of the program: train.py:18 (<module>) 100%"), std::string::npos) << f->evidence;
  EXPECT_EQ(f->suggestion.find("Make each batch cheaper to produce first"), 0u) << f->suggestion;
}

TEST(FindingsOs, APipelinesPythonRunsUnderOneGilWhateverItsParallelCalls) {
  // A TensorFlow loop: each 1 ms step waits 0.8 ms in the tf.data iterator
  // while a pipeline thread of the process runs its py_function's Python
  // (0.8 ms on CPU a step, 4 samples, each with the interpreter on the
  // stack), then runs its model 0.2 ms (1 sample). Parallel calls would overlap the
  // loading with the model (the step at 0.2 ms and the rest), but one
  // interpreter runs the 0.8 ms of Python a step however many threads call it.
  model::Trace t = StepTrace(10);
  t.collectors.push_back({0, "tensorflow", "ok", ""});
  t.tracks.push_back({model::TrackKind::kThread, 0, 101, t.strings.Intern("tf_data_private_threadpool")});
  const int32_t interpreter =
      Site(t, "_PyEval_EvalFrameDefault", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", model::FrameKind::kNative);
  const int32_t graph = Site(t, "tensorflow::DirectSession::Run", "libtensorflow_cc.so.2", model::FrameKind::kNative);
  for (int i = 0; i < 10; ++i) SampleAt(t, i * kMs + 900'000, 0, 0, graph);  // the step's thread, in the model's graph
  for (int i = 0; i < 10; ++i) {
    int64_t s = i * kMs;
    t.slices.Add(s, 800'000, 0, t.strings.Intern("IteratorGetNext"), SliceKind::kSpan);
    t.slices.Add(s + 800'000, 190'000, 0, t.strings.Intern("tf.function train_step"), SliceKind::kSpan);
    t.thread_states.Add(s, 800'000, 0, ThreadState::kSleeping, 0);
    t.thread_states.Add(s + 800'000, 200'000, 0, ThreadState::kRunning, 0);
  }
  for (int i = 0; i < 10; ++i) {
    int64_t s = i * kMs;
    t.thread_states.Add(s, 800'000, 1, ThreadState::kRunning, 1);
    t.thread_states.Add(s + 800'000, 200'000, 1, ThreadState::kSleeping, 1);
    for (int k = 0; k < 4; ++k) SampleAt(t, s + k * 200'000 + 1, 1, 1, interpreter);
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "input_pipeline");
  ASSERT_NE(f, nullptr);
  // 0.8 ms of the process's on-CPU time per step, all of its samples in the interpreter.
  EXPECT_NEAR(Metric(*f, "process_python_ns_per_step"), 800'000, 10'000);
  EXPECT_NEAR(f->estimated_gain_pct, 20.0, 1.0) << f->what_if;
  EXPECT_NE(f->what_if.find("one interpreter runs one thread's Python at a time"), std::string::npos) << f->what_if;
  EXPECT_EQ(f->suggestion.find("The pipeline's per-element Python"), 0u) << f->suggestion;
}

TEST(FindingsOs, ALoopWaitingForItsLoadersWorkersWaitsForInput) {
  // The same pace set by a DataLoader's worker processes: each 1 ms step
  // waits 0.7 ms in the loader's __next__ for their batch. More workers is
  // the fix; with twice as many, a batch every 0.5 ms.
  auto fs = analysis::Diagnose(WaitThenForward([](model::Trace& t, int64_t s) {
    t.slices.Add(s, 700'000, 0, t.strings.Intern("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"),
                 SliceKind::kSpan);
  }));
  ASSERT_FALSE(fs.empty());
  const analysis::Finding& f = fs[0];
  EXPECT_EQ(f.category, "input_pipeline") << f.title;
  EXPECT_NE(f.suggestion.find("workers do not keep up"), std::string::npos) << f.suggestion;
  EXPECT_NEAR(f.estimated_gain_pct, 50.0, 2.0) << f.what_if;
}

// A loop that loads in line (0.7 ms in a single-process DataLoader, on CPU)
// and then runs its model (0.3 ms), with an intra-op thread of the framework
// busy beside the forward: 1.3 ms of CPU per 1 ms step. Loading in 3 workers
// beside the rest would leave 0.3 ms steps (70%) on cores enough; on the 2
// CPUs the manifest says, the 1.3 ms take at least 0.65 ms (35%).
TEST(FindingsOs, LoadingMovedToWorkersStillNeedsTheCores) {
  for (int cpus : {2, 8}) {
    model::Trace t = WaitThenForward([](model::Trace& tr, int64_t s) {
      tr.slices.Add(s, 700'000, 0, tr.strings.Intern("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
                    SliceKind::kSpan);
      tr.thread_states.Add(s, kMs, 0, ThreadState::kRunning, static_cast<int16_t>(s / kMs % 2));
    });
    t.tracks.push_back({model::TrackKind::kThread, 0, 101, t.strings.Intern("intra-op")});
    for (int i = 0; i < 10; ++i) {
      int64_t s = i * kMs;
      t.thread_states.Add(s, 700'000, 1, ThreadState::kSleeping, 1);
      t.thread_states.Add(s + 700'000, 300'000, 1, ThreadState::kRunning, static_cast<int16_t>(1 - i % 2));
    }
    t.manifest_json = R"({"host": {"cpu_count": )" + std::to_string(cpus) + "}}";
    auto fs = analysis::Diagnose(t);
    const analysis::Finding* f = Find(fs, "input_pipeline");
    ASSERT_NE(f, nullptr) << cpus;
    EXPECT_NEAR(f->estimated_gain_pct, cpus == 2 ? 35.0 : 70.0, 2.0) << cpus << ": " << f->what_if;
    EXPECT_EQ(f->what_if.find("CPUs that takes at least") != std::string::npos, cpus == 2) << f->what_if;
  }
}

TEST(FindingsOs, StepsSlowFromALongerWaitForInputAreTheInputPipelinesFinding) {
  // Twenty steps of a loop blocked on its producer (0.7 ms, then a 0.3 ms
  // forward), where the producer is late at times: steps 5, 11 and 17 wait
  // 2.7 ms. They are a tail of slow steps, but their cause is the input the
  // input_pipeline finding names (more producers take those waits away too):
  // no straggler finding, and the input finding says how uneven the waits are.
  model::Trace t;
  t.processes.push_back({.pid = 100, .name = t.strings.Intern("server")});
  t.tracks.push_back({model::TrackKind::kThread, 0, 100, t.strings.Intern("main")});
  int64_t s = 0;
  for (int i = 0; i < 20; ++i) {
    int64_t wait = i % 6 == 5 ? 2'700'000 : 700'000;
    t.slices.Add(s, wait + 300'000, 0, t.strings.Intern("step"), SliceKind::kStep, static_cast<uint64_t>(i));
    t.thread_states.Add(s, wait, 0, ThreadState::kSleeping, 0);
    t.thread_states.Add(s + wait, 300'000, 0, ThreadState::kRunning, 0);
    t.slices.Add(s + wait, 290'000, 0, t.strings.Intern("Sequential"), SliceKind::kModule);
    t.slices.Add(s + wait + 5'000, 280'000, 0, t.strings.Intern("aten::addmm"), SliceKind::kOp);
    s += wait + 300'000;
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs[0].category, "input_pipeline") << fs[0].title;
  EXPECT_NE(fs[0].evidence.find("The waits are uneven: 3 of "), std::string::npos) << fs[0].evidence;
  EXPECT_EQ(Find(fs, "straggler"), nullptr) << Find(fs, "straggler")->title;
}

}  // namespace
}  // namespace strata

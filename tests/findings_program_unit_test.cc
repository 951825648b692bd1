// The rules about what the program does in its steps besides the model
// (analysis/rules_checkpoint.cc, rules_eager.cc; where dispatch overhead's
// tiny ops come from, findings.cc) on hand-built traces: exact
// numbers, and a run under the sanitizers (the recorded programs run in
// bottlenecks_os_test and the workload checks, outside them).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "analysis/findings.h"
#include "model/trace.h"

namespace strata {
namespace {

using model::SliceKind;
using model::ThreadState;

constexpr int64_t kMs = 1'000'000;

const analysis::Finding* Find(const std::vector<analysis::Finding>& fs, const std::string& category) {
  for (const auto& f : fs)
    if (f.category == category) return &f;
  return nullptr;
}

double Metric(const analysis::Finding& f, const std::string& name) {
  for (const auto& [k, v] : f.metrics)
    if (k == name) return v;
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

// A process (pid 100) whose thread "main" (track 0) runs 10 steps of 4 ms.
model::Trace StepTrace() {
  model::Trace t;
  t.processes.push_back({.pid = 100, .name = t.strings.Intern("trainer")});
  t.tracks.push_back({model::TrackKind::kThread, 0, 100, t.strings.Intern("main")});
  for (int i = 0; i < 10; ++i)
    t.slices.Add(i * 4 * kMs, 4 * kMs, 0, t.strings.Intern("step"), SliceKind::kStep, static_cast<uint64_t>(i));
  return t;
}

// A native frame `fn` of `module`, as the only frame of a call site.
int32_t NativeSite(model::Trace& t, const char* fn, const char* module) {
  t.frames.function.push_back(t.strings.Intern(fn));
  t.frames.module.push_back(t.strings.Intern(module));
  t.frames.kind.push_back(model::FrameKind::kNative);
  t.frames.pc.push_back(0);
  t.frames.line.push_back(0);
  t.callsites.parent.push_back(model::kNone);
  t.callsites.frame.push_back(static_cast<uint32_t>(t.frames.size() - 1));
  t.callsites.depth.push_back(0);
  return static_cast<int32_t>(t.callsites.size() - 1);
}

void Sample(model::Trace& t, int64_t ts, int32_t site) {
  t.cpu_samples.ts.push_back(ts);
  t.cpu_samples.track.push_back(0);
  t.cpu_samples.cpu.push_back(0);
  t.cpu_samples.callsite.push_back(site);
}

// Each step: 1 ms of an op, then torch.save for 2 ms, then 1 ms of the program's code.
TEST(FindingsProgram, CheckpointClaimsTheTimeInsideTorchSave) {
  model::Trace t = StepTrace();
  model::StringId op = t.strings.Intern("aten::mm"), save = t.strings.Intern("torch.save");
  for (int i = 0; i < 10; ++i) {
    t.slices.Add(i * 4 * kMs, kMs, 0, op, SliceKind::kOp, 0);
    t.slices.Add(i * 4 * kMs + kMs, 2 * kMs, 0, save, SliceKind::kSpan, 0);
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "checkpoint");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(&fs.front(), f) << fs.front().title;
  EXPECT_DOUBLE_EQ(Metric(*f, "saves"), 9);  // (the first step is partial: not measured)
  EXPECT_DOUBLE_EQ(Metric(*f, "save_ns_per_step"), 2.0 * kMs);
  // Replayed without the saves: 4 ms -> 2 ms.
  EXPECT_NEAR(f->estimated_gain_pct, 50, 0.5);
  EXPECT_NE(f->evidence.find("torch.save runs 9 times in 9 of the 9 measured steps"), std::string::npos) << f->evidence;
  EXPECT_NE(f->suggestion.find("in every step"), std::string::npos) << f->suggestion;
}

TEST(FindingsProgram, NoCheckpointFindingForARareSave) {
  model::Trace t = StepTrace();
  model::StringId save = t.strings.Intern("torch.save");
  t.slices.Add(9 * 4 * kMs + kMs, kMs, 0, save, SliceKind::kSpan, 0);  // 1 ms in 40 ms of steps: 2.5%
  t.Finalize();
  EXPECT_EQ(Find(analysis::Diagnose(t), "checkpoint"), nullptr);
}

// An eager TensorFlow loop: each step is marked by keras.optimizer.apply; of
// the step thread's samples, a quarter are in an Eigen kernel.
TEST(FindingsProgram, EagerExecutionIsTheTimeOutsideOpKernels) {
  model::Trace t = StepTrace();
  model::StringId apply = t.strings.Intern("keras.optimizer.apply");
  int32_t kernel = NativeSite(t, "Eigen::internal::TensorExecutor<...>::run", "libtensorflow_cc.so.2");
  int32_t eager = NativeSite(t, "_PyEval_EvalFrameDefault", "libpython3.11.so.1.0");
  for (int i = 0; i < 10; ++i) {
    t.slices.Add(i * 4 * kMs + 2 * kMs, 2 * kMs, 0, apply, SliceKind::kSpan, 0);
    t.thread_states.Add(i * 4 * kMs, 4 * kMs, 0, ThreadState::kRunning, 0);
    for (int k = 0; k < 4; ++k) Sample(t, i * 4 * kMs + k * kMs + 1, k == 0 ? kernel : eager);
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "eager_execution");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(Metric(*f, "kernel_sample_share"), 0.25);
  EXPECT_DOUBLE_EQ(Metric(*f, "eager_overhead_ns_per_step"), 3.0 * kMs);
  EXPECT_NEAR(f->estimated_gain_pct, 75, 0.5);
  EXPECT_NE(f->suggestion.find("@tf.function"), std::string::npos);
}

// An eager JAX loop: each step is marked by a gradient taken outside any
// jitted function; the step thread runs Python for its 4 ms (4 samples a step),
// and the runtime's thread (same process) runs the primitives' compiled code
// for 1 sample a step, plus 2 samples a step in its thread pool's loop, which
// are not kernels. Kernels: 1 ms of the 4 ms step; the rest goes with jax.jit.
TEST(FindingsProgram, EagerJaxIsTheStepLessItsPrimitivesCompiledCode) {
  model::Trace t = StepTrace();
  t.tracks.push_back({model::TrackKind::kThread, 0, 101, t.strings.Intern("xla-cpu")});
  model::StringId grad = t.strings.Intern("jax.value_and_grad loss_fn");
  int32_t py = NativeSite(t, "_PyEval_EvalFrameDefault", "libpython3.11.so.1.0");
  int32_t xla = NativeSite(t, "fusion.3", "anon");
  int32_t pool = NativeSite(t, "Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)",
                            "libjax_common.so");
  for (int i = 0; i < 10; ++i) {
    t.slices.Add(i * 4 * kMs + kMs, 2 * kMs, 0, grad, SliceKind::kSpan, 0);
    t.thread_states.Add(i * 4 * kMs, 4 * kMs, 0, ThreadState::kRunning, 0);
    for (int k = 0; k < 4; ++k) Sample(t, i * 4 * kMs + k * kMs + 1, py);
  }
  for (int i = 0; i < 10; ++i)
    for (int k = 0; k < 3; ++k) {
      t.cpu_samples.ts.push_back(i * 4 * kMs + k * kMs + 2);
      t.cpu_samples.track.push_back(1);
      t.cpu_samples.cpu.push_back(1);
      t.cpu_samples.callsite.push_back(k == 0 ? xla : pool);
    }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "eager_execution");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(Metric(*f, "kernel_ns_per_step"), 1.0 * kMs);
  EXPECT_DOUBLE_EQ(Metric(*f, "eager_overhead_ns_per_step"), 3.0 * kMs);
  EXPECT_NEAR(f->estimated_gain_pct, 75, 0.5);
  EXPECT_NE(f->title.find("JAX runs eagerly"), std::string::npos) << f->title;
  EXPECT_NE(f->suggestion.find("@jax.jit"), std::string::npos) << f->suggestion;
}

// The same loop calling a jitted function in its steps: not eager.
TEST(FindingsProgram, NoEagerJaxFindingWhenAJittedFunctionRuns) {
  model::Trace t = StepTrace();
  model::StringId grad = t.strings.Intern("jax.grad loss_fn"), fn = t.strings.Intern("jax.jit update");
  int32_t py = NativeSite(t, "_PyEval_EvalFrameDefault", "libpython3.11.so.1.0");
  for (int i = 0; i < 10; ++i) {
    t.slices.Add(i * 4 * kMs, 2 * kMs, 0, grad, SliceKind::kSpan, 0);
    t.slices.Add(i * 4 * kMs + 2 * kMs, kMs, 0, fn, SliceKind::kSpan, 0);
    for (int k = 0; k < 4; ++k) Sample(t, i * 4 * kMs + k * kMs + 1, py);
  }
  t.Finalize();
  EXPECT_EQ(Find(analysis::Diagnose(t), "eager_execution"), nullptr);
}

// Each step: a forward of "Net.rnn (LSTM)" whose aten::lstm (0.4 ms) makes,
// in the backward, 150 autograd nodes of 10 us, 22 us apart (a recurrent
// layer stepping through time). The dispatch finding names the layer's
// backward as where its tiny calls come from, and says what to do about a
// recurrent layer.
TEST(FindingsProgram, TinyOpsOfALayersBackwardNameTheLayer) {
  model::Trace t = StepTrace();
  model::StringId net = t.strings.Intern("Net"), rnn = t.strings.Intern("Net.rnn (LSTM)");
  model::StringId lstm = t.strings.Intern("aten::lstm");
  model::StringId eval = t.strings.Intern("autograd::engine::evaluate_function: MulBackward0");
  model::StringId node = t.strings.Intern("MulBackward0");
  std::vector<std::pair<uint32_t, uint32_t>> links;  // (backward node slice, forward op slice)
  for (int i = 0; i < 10; ++i) {
    int64_t s0 = i * 4 * kMs;
    t.slices.Add(s0, 600'000, 0, net, SliceKind::kModule);
    t.slices.Add(s0 + 50'000, 500'000, 0, rnn, SliceKind::kModule);
    uint32_t fwd = t.slices.Add(s0 + 100'000, 400'000, 0, lstm, SliceKind::kOp);
    t.ops.Add(fwd, model::OpScope::kFunction, i);
    for (int k = 0; k < 150; ++k) {
      int64_t b = s0 + 600'000 + k * 22'000;
      t.ops.Add(t.slices.Add(b, 10'000, 0, eval, SliceKind::kOp), model::OpScope::kFunction, -1);
      uint32_t n = t.slices.Add(b + 1'000, 8'000, 0, node, SliceKind::kOp);
      t.ops.forward[t.ops.Add(n, model::OpScope::kBackward, i)] = static_cast<int32_t>(fwd);
    }
    t.thread_states.Add(s0, 4 * kMs, 0, ThreadState::kRunning, 0);
  }
  t.Finalize();
  auto fs = analysis::Diagnose(t);
  const analysis::Finding* f = Find(fs, "dispatch_overhead");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(Metric(*f, "tiny_ops_per_step"), 150);
  EXPECT_DOUBLE_EQ(Metric(*f, "tiny_ops_in_top_module_per_step"), 150);
  EXPECT_NE(f->evidence.find("150 of the tiny calls per step are autograd nodes of the backward of Net.rnn (LSTM)"),
            std::string::npos)
      << f->evidence;
  EXPECT_NE(f->suggestion.find("PackedSequence"), std::string::npos) << f->suggestion;
}

// The same loop with its step compiled (a tf.function runs in each step): not eager.
TEST(FindingsProgram, NoEagerFindingWhenAStepFunctionRuns) {
  model::Trace t = StepTrace();
  model::StringId apply = t.strings.Intern("keras.optimizer.apply"), fn = t.strings.Intern("tf.function train_step");
  int32_t eager = NativeSite(t, "_PyEval_EvalFrameDefault", "libpython3.11.so.1.0");
  for (int i = 0; i < 10; ++i) {
    t.slices.Add(i * 4 * kMs, 2 * kMs, 0, fn, SliceKind::kSpan, 0);
    t.slices.Add(i * 4 * kMs + 2 * kMs, 2 * kMs, 0, apply, SliceKind::kSpan, 0);
    for (int k = 0; k < 4; ++k) Sample(t, i * 4 * kMs + k * kMs + 1, eager);
  }
  t.Finalize();
  EXPECT_EQ(Find(analysis::Diagnose(t), "eager_execution"), nullptr);
}

// The step's thread sleeps 2 ms of each 4 ms step inside its op while another
// thread of the process runs Python (its samples): the GIL's. A second
// process's thread doing the same is not.
model::Trace GilTrace(uint32_t other_process) {
  model::Trace t = StepTrace();
  t.processes.push_back({.pid = 200, .name = t.strings.Intern("other")});
  t.tracks.push_back({model::TrackKind::kThread, other_process, 101, t.strings.Intern("stats")});
  t.frames.function.push_back(t.strings.Intern("running_stats"));
  t.frames.module.push_back(t.strings.Intern("/src/train.py"));
  t.frames.kind.push_back(model::FrameKind::kPython);
  t.frames.pc.push_back(1);
  t.frames.line.push_back(3);
  t.callsites.parent.push_back(model::kNone);
  t.callsites.frame.push_back(0);
  t.callsites.depth.push_back(0);
  model::StringId op = t.strings.Intern("aten::mm"), fwd = t.strings.Intern("Net");
  for (int i = 0; i < 10; ++i) {
    int64_t s = i * 4 * kMs;
    t.slices.Add(s, 4 * kMs, 0, fwd, SliceKind::kModule, 0);
    t.slices.Add(s, 4 * kMs, 0, op, SliceKind::kOp, 0);
    t.thread_states.Add(s, kMs, 0, ThreadState::kRunning, 0);
    t.thread_states.Add(s + kMs, 2 * kMs, 0, ThreadState::kSleeping, 0);
    t.thread_states.Add(s + 3 * kMs, kMs, 0, ThreadState::kRunning, 0);
    t.cpu_samples.ts.push_back(s + 2 * kMs);
    t.cpu_samples.track.push_back(1);
    t.cpu_samples.cpu.push_back(1);
    t.cpu_samples.callsite.push_back(0);
  }
  // (The OS tables are sorted by (track, ts), as the importers leave them.)
  for (int i = 0; i < 10; ++i) {
    int64_t s = i * 4 * kMs;
    t.thread_states.Add(s, kMs, 1, ThreadState::kSleeping, 1);
    t.thread_states.Add(s + kMs, 2 * kMs, 1, ThreadState::kRunning, 1);
    t.thread_states.Add(s + 3 * kMs, kMs, 1, ThreadState::kSleeping, 1);
  }
  t.Finalize();
  return t;
}

TEST(FindingsProgram, GilContentionIsTheSleepWhileAPythonThreadRuns) {
  auto fs = analysis::Diagnose(GilTrace(0));
  const analysis::Finding* f = Find(fs, "gil_contention");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(Metric(*f, "gil_wait_ns_per_step"), 2.0 * kMs);
  EXPECT_NEAR(f->estimated_gain_pct, 50, 0.5);
  EXPECT_EQ(f->involved, std::vector<std::string>{"stats 101 (running_stats (train.py))"});
}

TEST(FindingsProgram, NoGilContentionWithAnotherProcessesThread) {
  EXPECT_EQ(Find(analysis::Diagnose(GilTrace(1)), "gil_contention"), nullptr);
}

// 20 steps of a JAX-like loop: 2 ms each, but every 5th reads the loss
// (jax.device_read, 38 ms) and waits for what the steps before it queued.
// `workers_busy`: the process's other thread computes all along (the host ran
// ahead of it: not a tail), or only while the slow step waits (the slow step
// queued that work itself: a tail).
model::Trace AsyncReadTrace(bool workers_busy) {
  model::Trace t;
  t.processes.push_back({.pid = 100, .name = t.strings.Intern("trainer")});
  t.tracks.push_back({model::TrackKind::kThread, 0, 100, t.strings.Intern("main")});
  t.tracks.push_back({model::TrackKind::kThread, 0, 101, t.strings.Intern("worker")});
  model::StringId step = t.strings.Intern("step"), jit = t.strings.Intern("jax.jit update"),
                  read = t.strings.Intern("jax.device_read");
  std::vector<std::pair<int64_t, int64_t>> waits;
  int64_t s = 0;
  for (int i = 0; i < 20; ++i) {
    const bool reads = i % 5 == 4;
    const int64_t dur = reads ? 40 * kMs : 2 * kMs;
    t.slices.Add(s, dur, 0, step, SliceKind::kStep, static_cast<uint64_t>(i));
    t.slices.Add(s, kMs, 0, jit, SliceKind::kSpan, 0);
    if (reads) {
      t.slices.Add(s + 2 * kMs, 38 * kMs, 0, read, SliceKind::kSpan, 0);
      waits.emplace_back(s + 2 * kMs, 38 * kMs);
    }
    t.thread_states.Add(s, reads ? 2 * kMs : dur, 0, ThreadState::kRunning, 0);
    if (reads) t.thread_states.Add(s + 2 * kMs, 38 * kMs, 0, ThreadState::kSleeping, 0);
    s += dur;
  }
  if (workers_busy) {
    t.thread_states.Add(0, s, 1, ThreadState::kRunning, 1);
  } else {
    int64_t at = 0;
    for (auto [w, d] : waits) {
      t.thread_states.Add(at, w - at, 1, ThreadState::kSleeping, 1);
      t.thread_states.Add(w, d, 1, ThreadState::kRunning, 1);
      at = w + d;
    }
  }
  t.Finalize();
  return t;
}

TEST(FindingsProgram, AWaitForWorkQueuedByEarlierStepsIsNoStraggler) {
  EXPECT_EQ(Find(analysis::Diagnose(AsyncReadTrace(true)), "straggler"), nullptr);
  auto fs = analysis::Diagnose(AsyncReadTrace(false));
  const analysis::Finding* f = Find(fs, "straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(Metric(*f, "period_steps"), 5);
}

}  // namespace
}  // namespace strata

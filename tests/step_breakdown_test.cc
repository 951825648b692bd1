// The step breakdown on hand-built traces whose every nanosecond is known: each
// part gets exactly the time planted in it, and the parts sum to the step.
#include <gtest/gtest.h>

#include "analysis/framework.h"
#include "analysis/step_breakdown.h"

namespace strata {
namespace {

using analysis::StepPart;
using model::SliceKind;

int64_t Part(const analysis::StepBreakdown& b, StepPart p) { return b.host[static_cast<size_t>(p)]; }

struct Builder {
  model::Trace t;
  Builder() {
    t.processes.push_back({});
    t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  }
  uint32_t Add(int64_t ts, int64_t dur, const char* name, SliceKind k, uint32_t track = 0) {
    return t.slices.Add(ts, dur, track, t.strings.Intern(name), k);
  }
  analysis::StepBreakdowns Run() {
    t.Finalize();
    return analysis::BreakdownSteps(t, analysis::Training(t, {}));
  }
};

TEST(StepBreakdown, EveryPartOfATrainingIterationOnTheCpu) {
  Builder b;
  b.Add(0, 1'000'000, "step", SliceKind::kStep);
  // 0-100 us: the program reads and decodes its batch (its own code), then a forward.
  b.Add(100'000, 5'000, "aten::to", SliceKind::kOp);              // copy: 5 us
  b.Add(105'000, 395'000, "Sequential", SliceKind::kModule);      // forward 105-500 us
  b.Add(110'000, 200'000, "aten::addmm", SliceKind::kOp);         // compute 200 us
  b.Add(310'000, 4'000, "aten::relu", SliceKind::kOp);            // tiny: dispatch 4 us
  b.Add(320'000, 100'000, "aten::empty", SliceKind::kOp);         // allocation 100 us
  // module self time: 105-110, 314-320, 420-500 = 5 + 6 + 80 us of dispatch
  b.Add(510'000, 300'000, "aten::mm", SliceKind::kOp);            // compute 300 us (10 us gap before: dispatch)
  b.Add(900'000, 50'000, "aten::item", SliceKind::kOp);           // sync 50 us: a device value's read
  b.Add(905'000, 40'000, "aten::_local_scalar_dense", SliceKind::kOp);  // inside the sync: sync
  b.Add(910'000, 30'000, "cudaMemcpyAsync", SliceKind::kRuntime);  // the read: a runtime call
  // 810-900 us: the program's own code (90 us, longer than a dispatch gap, before no forward)
  // 950-1000 us: 50 us of its own code at the end.
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& s = r.steps[0];
  EXPECT_EQ(Part(s, StepPart::kInput), 100'000) << "code before the forward produces the batch";
  EXPECT_EQ(Part(s, StepPart::kCopy), 5'000);
  EXPECT_EQ(Part(s, StepPart::kCompute), 500'000);
  EXPECT_EQ(Part(s, StepPart::kAllocation), 100'000);
  EXPECT_EQ(Part(s, StepPart::kDispatch), 4'000 + 5'000 + 6'000 + 80'000 + 10'000);
  EXPECT_EQ(Part(s, StepPart::kSync), 50'000);
  EXPECT_EQ(Part(s, StepPart::kPython), 90'000 + 50'000);
  int64_t sum = 0;
  for (int64_t v : s.host) sum += v;
  EXPECT_EQ(sum, s.dur);
  EXPECT_EQ(s.device_busy, -1) << "no device activity";
}

TEST(StepBreakdown, AllTheCodeBeforeTheForwardProducesTheBatch) {
  // An inference iteration from the loop's head: it parses its requests (its
  // own code), builds the batch tensor with an op, parses more, runs the
  // model, then writes its results (its own code after the forward).
  Builder b;
  b.Add(0, 1'000'000, "step", SliceKind::kStep);
  b.Add(300'000, 20'000, "aten::lift_fresh", SliceKind::kOp);  // torch.tensor(lists): 0-300 us before it
  b.Add(500'000, 200'000, "Sequential", SliceKind::kModule);   // 320-500 us of parsing before the forward
  b.Add(510'000, 180'000, "aten::addmm", SliceKind::kOp);
  // 700-1000 us: writing the results.
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& s = r.steps[0];
  EXPECT_EQ(Part(s, StepPart::kInput), 300'000 + 180'000) << "both stretches of code before the forward";
  EXPECT_EQ(Part(s, StepPart::kPython), 300'000) << "the code after the forward is not the batch's";
  EXPECT_EQ(Part(s, StepPart::kCompute), 20'000 + 180'000);
}

TEST(StepBreakdown, CodeInAStepWithoutAForwardIsThePrograms) {
  // No model forward in the step (a framework without module scopes): its own
  // code stays the program's, whatever precedes what.
  Builder b;
  b.Add(0, 1'000'000, "step", SliceKind::kStep);
  b.Add(300'000, 200'000, "aten::mm", SliceKind::kOp);
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(Part(r.steps[0], StepPart::kInput), 0);
  EXPECT_EQ(Part(r.steps[0], StepPart::kPython), 800'000);
}

// A checkpoint written in the step (strata._torch's torch.save span) is the
// step's I/O, the ops it runs to serialize tensors included.
TEST(StepBreakdown, TorchSaveIsTheStepsIo) {
  Builder b;
  b.Add(0, 1'000'000, "step", SliceKind::kStep);
  b.Add(0, 400'000, "Sequential", SliceKind::kModule);
  b.Add(0, 400'000, "aten::addmm", SliceKind::kOp);               // compute 400 us
  b.Add(500'000, 400'000, "torch.save", SliceKind::kSpan);         // 500-900 us
  b.Add(600'000, 100'000, "aten::copy_", SliceKind::kOp);          // inside the save
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& s = r.steps[0];
  EXPECT_EQ(Part(s, StepPart::kIo), 400'000);
  EXPECT_EQ(Part(s, StepPart::kCompute), 400'000);
  EXPECT_EQ(Part(s, StepPart::kPython), 200'000);  // 400-500 and 900-1000 us: the program's code
}

TEST(StepBreakdown, AJaxResultReadOnTheCpuBackendIsCompute) {
  // jax.jit returns at once; reading the result waits while XLA's CPU threads
  // compute it. With no device in the trace the wait is the computation.
  Builder b;
  b.Add(0, 1'000'000, "step", SliceKind::kStep);
  b.Add(0, 100'000, "jax.jit update", SliceKind::kSpan);
  b.Add(200'000, 700'000, "jax.device_read", SliceKind::kSpan);
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(Part(r.steps[0], StepPart::kSync), 0);
  EXPECT_EQ(Part(r.steps[0], StepPart::kCompute), 800'000);
}

TEST(StepBreakdown, ACpuTensorsItemWaitsForNothing) {
  // AdamW reads its CPU step counters with .item() for every parameter: no
  // runtime call, no wait for a device, so the op's time is not sync.
  Builder b;
  b.Add(0, 100'000, "step", SliceKind::kStep);
  b.Add(10'000, 30'000, "aten::item", SliceKind::kOp);
  b.Add(12'000, 25'000, "aten::_local_scalar_dense", SliceKind::kOp);
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(Part(r.steps[0], StepPart::kSync), 0);
  EXPECT_EQ(Part(r.steps[0], StepPart::kCompute), 30'000);
}

TEST(StepBreakdown, DeviceIdleIsPutOnWhatTheHostDidMeanwhile) {
  Builder b;
  b.t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7});
  b.Add(0, 1'000'000, "step", SliceKind::kStep);
  uint32_t op = b.Add(10'000, 30'000, "aten::mm", SliceKind::kOp);
  uint32_t launch = b.Add(20'000, 10'000, "cudaLaunchKernel", SliceKind::kRuntime);
  b.Add(600'000, 300'000, "cudaDeviceSynchronize", SliceKind::kRuntime);
  uint32_t k = b.Add(100'000, 500'000, "gemm", SliceKind::kKernel, 1);
  (void)op;
  b.t.device.Add(k, 0, 7, 1);
  b.t.device.launch.back() = static_cast<int32_t>(launch);
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& s = r.steps[0];
  // The op launched device work: its host time is dispatch, not compute.
  EXPECT_EQ(Part(s, StepPart::kDispatch), 30'000);
  EXPECT_EQ(Part(s, StepPart::kCompute), 0);
  EXPECT_EQ(Part(s, StepPart::kSync), 300'000);
  EXPECT_EQ(Part(s, StepPart::kPython), 10'000 + 560'000 + 100'000);
  EXPECT_EQ(s.device_busy, 500'000);
  // Idle 0-100 us (host: own code 0-10, the op 10-40, own code 40-100) and
  // 600-1000 us (the sync 600-900, own code after).
  EXPECT_EQ(s.device_idle[static_cast<size_t>(StepPart::kDispatch)], 30'000);
  EXPECT_EQ(s.device_idle[static_cast<size_t>(StepPart::kSync)], 300'000);
  EXPECT_EQ(s.device_idle[static_cast<size_t>(StepPart::kPython)], 10'000 + 60'000 + 100'000);
}

TEST(StepBreakdown, TheWaitForABackwardOnAnotherThreadIsTheBackwardsTime) {
  Builder b;
  b.t.tracks.push_back({model::TrackKind::kThread, 0, 2});
  b.Add(0, 1'000'000, "step", SliceKind::kStep);
  b.Add(100'000, 600'000, "autograd::engine::evaluate_function: MmBackward0", SliceKind::kOp, 1);
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(Part(r.steps[0], StepPart::kCompute), 600'000);
  EXPECT_EQ(Part(r.steps[0], StepPart::kPython), 400'000);
}

TEST(StepBreakdown, IdleThatBeganUnderAnEarlierSyncIsSetApart) {
  // Three stages, each: write its input, launch, wait (clFinish). The device
  // runs dry under the first two waits and idles while the host produces the
  // next stage's input; the step's last wait is the one it needs.
  Builder b;
  b.t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7});
  b.Add(0, 1'000'000, "step", SliceKind::kStep);
  int64_t stage[3][3] = {{0, 200'000, 200'000}, {400'000, 600'000, 600'000}, {800'000, 950'000, 1'000'000}};
  for (auto& st : stage) {
    int64_t t0 = st[0];
    b.Add(t0, 10'000, "clEnqueueWriteBuffer", SliceKind::kRuntime);
    b.Add(t0 + 10'000, 10'000, "clEnqueueNDRangeKernel", SliceKind::kRuntime);
    b.Add(t0 + 20'000, st[2] - t0 - 20'000, "clFinish", SliceKind::kRuntime);
    uint32_t k = b.Add(t0 + 20'000, st[1] - t0 - 20'000, "stage", SliceKind::kKernel, 1);
    b.t.device.Add(k, 0, 7, 1);
  }
  auto r = b.Run();
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& s = r.steps[0];
  int64_t idle = 0, after = 0;
  for (size_t k = 0; k < analysis::kStepParts; ++k) {
    idle += s.device_idle[k];
    after += s.device_idle_after_sync[k];
    EXPECT_LE(s.device_idle_after_sync[k], s.device_idle[k]);
  }
  // Idle 0-20 us (the step's start), 200-420 and 600-820 us (after the first
  // two waits), 950-1000 us (under the last wait).
  EXPECT_EQ(idle, 20'000 + 220'000 + 220'000 + 50'000);
  EXPECT_EQ(after, 220'000 + 220'000);
  EXPECT_EQ(s.device_idle_after_sync[static_cast<size_t>(StepPart::kSync)], 0) << "the step's last wait is its own";
  EXPECT_EQ(s.device_idle[static_cast<size_t>(StepPart::kSync)], 50'000);
  EXPECT_EQ(r.device_idle_after_sync, s.device_idle_after_sync) << "the step is counted";
}

}  // namespace
}  // namespace strata

// The what-if replay on hand-built steps whose schedule is known: the unchanged
// graph replays to the measured step exactly, and each fix gives the step that
// the same schedule worked out by hand gives.
#include <cmath>

#include <gtest/gtest.h>

#include "analysis/findings.h"
#include "analysis/framework.h"
#include "analysis/replay.h"
#include "analysis/step_breakdown.h"

namespace strata {
namespace {

using analysis::Replay;
using analysis::ReplayFix;
using analysis::ReplayPiece;
using analysis::ReplayStep;
using analysis::ReplayTask;
using analysis::StepPart;
using model::SliceKind;

constexpr int64_t kUs = 1000;

struct Builder {
  model::Trace t;
  Builder() {
    t.processes.push_back({});
    t.tracks.push_back({model::TrackKind::kThread, 0, 1});
    t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7});
  }
  uint32_t Add(int64_t ts, int64_t dur, const char* name, SliceKind k, uint32_t track = 0) {
    return t.slices.Add(ts, dur, track, t.strings.Intern(name), k);
  }
  // A device task on the queue, launched by `launch`.
  void Device(uint32_t launch, int64_t ts, int64_t dur, const char* name, SliceKind k, uint64_t bytes = 0,
              int8_t pinned = -1) {
    uint32_t s = Add(ts, dur, name, k, 1);
    uint32_t r = t.device.Add(s, 0, 7, launch);
    t.device.launch[r] = static_cast<int32_t>(launch);
    t.device.bytes[r] = bytes;
    t.device.pinned[r] = pinned;
    if (k == SliceKind::kMemcpy) t.device.copy_kind[r] = model::CopyKind::kHtoD;
  }
  Replay Build() {
    t.Finalize();
    auto steps = analysis::Training(t, {});
    std::vector<analysis::StepWindow> w;
    for (const auto& st : steps.steps)
      w.push_back({st.number, st.ts, st.dur, t.slices.track[static_cast<size_t>(st.slice)], true});
    std::vector<std::vector<analysis::HostInterval>> timelines;
    analysis::BreakdownWindows(t, w, &timelines);
    return Replay(t, w, timelines);
  }
};

// Four iterations of: launch a 100 us kernel (10 us call, the kernel starts
// 5 us after the call), synchronize (returns 2 us after the kernel ends), 50 us
// of the program's own code. Each iteration takes 10 + 97 + 50 = 157 us.
Builder SyncLoop() {
  Builder b;
  b.Add(0, 4 * 157 * kUs, "step", SliceKind::kStep);
  for (int i = 0; i < 4; ++i) {
    int64_t a = i * 157 * kUs;
    uint32_t l = b.Add(a, 10 * kUs, "cudaLaunchKernel", SliceKind::kRuntime);
    b.Device(l, a + 5 * kUs, 100 * kUs, "gemm", SliceKind::kKernel);
    b.Add(a + 10 * kUs, 97 * kUs, "cudaStreamSynchronize", SliceKind::kRuntime);
  }
  return b;
}

TEST(Replay, TheUnchangedGraphReplaysToTheMeasuredStep) {
  Builder b = SyncLoop();
  Replay r = b.Build();
  ASSERT_EQ(r.steps().size(), 1u);
  const ReplayStep& s = r.steps()[0];
  EXPECT_EQ(s.tasks.size(), 4u);
  int waits = 0;
  for (const ReplayPiece& p : s.pieces)
    if (p.wait == ReplayPiece::kWaitDevice) {
      ++waits;
      EXPECT_EQ(p.own, 2 * kUs) << "the sync's cost after the kernel ended";
    }
  EXPECT_EQ(waits, 4);
  auto res = r.Run({});
  EXPECT_DOUBLE_EQ(res.baseline_ns, 628.0 * kUs);
  EXPECT_DOUBLE_EQ(res.fixed_ns, 628.0 * kUs);
  EXPECT_DOUBLE_EQ(r.BaselineErrorPct(), 0.0);
}

TEST(Replay, SyncsRemovedLetTheHostQueueAhead) {
  Builder b = SyncLoop();
  Replay r = b.Build();
  // All but the last sync dropped: the host runs 10 + 2 + 50 = 62 us per
  // iteration; kernels queue back to back from 5 us: they end at 405 us. The
  // last sync (starting at 3 * 62 + 10 = 196 us) returns at 405 + 2, and the
  // program's 50 us follow: 457 us.
  const auto& slices = b.t.slices;
  int64_t last_sync = 3 * 157 * kUs + 10 * kUs;
  ReplayFix fix;
  fix.drop_wait = [&](const ReplayStep&, const ReplayPiece& p) { return slices.ts[static_cast<size_t>(p.slice)] != last_sync; };
  auto res = r.Run(fix);
  EXPECT_DOUBLE_EQ(res.fixed_ns, 457.0 * kUs);
  EXPECT_NEAR(res.GainPct(), 100.0 * (1 - 457.0 / 628.0), 1e-9);
  // Every sync dropped: the host no longer waits at all, and the step is
  // bound by the device's 400 us of work, not the host's 248 us.
  ReplayFix all;
  all.drop_wait = [](const ReplayStep&, const ReplayPiece&) { return true; };
  EXPECT_DOUBLE_EQ(r.Run(all).fixed_ns, 400.0 * kUs);
}

TEST(Replay, APageableCopyPinnedAndAsynchronous) {
  // A 1 MB pageable copy the call waits for (200 us; the call returns 3 us
  // after it), a 50 us kernel, a sync, and the program's code: 400 us.
  Builder b;
  b.Add(0, 400 * kUs, "step", SliceKind::kStep);
  uint32_t c = b.Add(10 * kUs, 213 * kUs, "cudaMemcpyAsync", SliceKind::kRuntime);
  b.Device(c, 20 * kUs, 200 * kUs, "Memcpy HtoD (Pageable -> Device)", SliceKind::kMemcpy, 1'000'000, 0);
  uint32_t l = b.Add(230 * kUs, 5 * kUs, "cudaLaunchKernel", SliceKind::kRuntime);
  b.Device(l, 235 * kUs, 50 * kUs, "relu", SliceKind::kKernel);
  b.Add(240 * kUs, 50 * kUs, "cudaDeviceSynchronize", SliceKind::kRuntime);
  Replay r = b.Build();
  ASSERT_EQ(r.steps().size(), 1u);
  const ReplayStep& s = r.steps()[0];
  int copy_waits = 0;
  for (const ReplayPiece& p : s.pieces) copy_waits += p.wait == ReplayPiece::kWaitTask;
  EXPECT_EQ(copy_waits, 1) << "the copy call waited for its copy";
  EXPECT_DOUBLE_EQ(r.Run({}).baseline_ns, 400.0 * kUs);
  // Pinned at 50 GB/s: 20 us, and the call returns at once (its 3 us stay):
  // the copy runs 20-40 us (launched at 10 us, 10 us latency), the call ends
  // at 13 us; the launch at 20 us (after 7 us of glue), the kernel at
  // max(25, 40) = 40 to 90 us; the sync from 30 us returns 5 us after it, at
  // 95 us; the 110 us of the program's code after it: 205 us.
  ReplayFix fix;
  fix.device = [&](const ReplayStep&, const ReplayTask& task) {
    return b.t.device.pinned[task.row] == 0 ? b.t.device.bytes[task.row] / 50e9 * 1e9 : static_cast<double>(task.dur);
  };
  fix.drop_wait = [](const ReplayStep&, const ReplayPiece& p) { return p.wait == ReplayPiece::kWaitTask; };
  EXPECT_DOUBLE_EQ(r.Run(fix).fixed_ns, 205.0 * kUs);
}

TEST(Replay, TheBackwardOnAutogradsThreadMovesWithTheStepThreadsWait) {
  // The step thread launches a 300 us kernel and synchronizes (returns 5 us
  // after it, at 310 us); from 320 to 480 us the autograd engine's thread runs
  // the backward (it launches a 100 us kernel at 330 us, which starts 15 us
  // later) while the step thread waits for it; a sync at 500 us (10 us of its
  // own), 90 us of the program's code: 600 us.
  Builder b;
  b.t.tracks.push_back({model::TrackKind::kThread, 0, 2});
  b.Add(0, 600 * kUs, "step", SliceKind::kStep);
  uint32_t l1 = b.Add(0, 10 * kUs, "cudaLaunchKernel", SliceKind::kRuntime);
  b.Device(l1, 5 * kUs, 300 * kUs, "gemm", SliceKind::kKernel);
  b.Add(10 * kUs, 300 * kUs, "cudaStreamSynchronize", SliceKind::kRuntime);
  b.Add(320 * kUs, 160 * kUs, "autograd::engine::evaluate_function: AddmmBackward0", SliceKind::kOp, 2);
  uint32_t l2 = b.Add(330 * kUs, 10 * kUs, "cudaLaunchKernel", SliceKind::kRuntime, 2);
  b.Device(l2, 345 * kUs, 100 * kUs, "gemm_backward", SliceKind::kKernel);
  b.Add(500 * kUs, 10 * kUs, "cudaDeviceSynchronize", SliceKind::kRuntime);
  Replay r = b.Build();
  ASSERT_EQ(r.steps().size(), 1u);
  EXPECT_EQ(r.steps()[0].launched, 2u) << "the backward's kernel is launched by the step thread's wait for it";
  EXPECT_DOUBLE_EQ(r.Run({}).baseline_ns, 600.0 * kUs);
  // The first sync removed: the host reaches the backward at 25 us; its
  // kernel, launched at 50 us, queues behind the first one (305-405 us); the
  // last sync from 205 us returns at 415 us; 505 us. (Were the backward's
  // kernel fixed at its measured 345-445 us, the step would stay at 545 us.)
  ReplayFix fix;
  fix.drop_wait = [&](const ReplayStep&, const ReplayPiece& p) { return b.t.slices.ts[static_cast<size_t>(p.slice)] == 10 * kUs; };
  EXPECT_DOUBLE_EQ(r.Run(fix).fixed_ns, 505.0 * kUs);
}

TEST(Replay, PartCutsTakeFromTheirPartsThenTheFallback) {
  // A CPU step: 300 us of allocation ops and 700 us of the program's code.
  Builder b;
  b.Add(0, 1000 * kUs, "step", SliceKind::kStep);
  b.Add(100 * kUs, 300 * kUs, "aten::empty", SliceKind::kOp);
  Replay r = b.Build();
  auto alloc = analysis::ReduceParts({{{StepPart::kAllocation}, 200 * kUs}}, r.steps());
  EXPECT_DOUBLE_EQ(r.Run(alloc).fixed_ns, 800.0 * kUs);
  // More than the part holds: the rest from the fallback parts.
  auto more = analysis::ReduceParts({{{StepPart::kAllocation}, 500 * kUs, {StepPart::kPython, StepPart::kInput}}}, r.steps());
  EXPECT_DOUBLE_EQ(r.Run(more).fixed_ns, 500.0 * kUs);
  // Input overlapped: the 100 us of code before... there is no forward here,
  // so it is the program's code: nothing moves.
  ReplayFix overlap;
  overlap.Overlap(StepPart::kInput);
  EXPECT_DOUBLE_EQ(r.Run(overlap).fixed_ns, 1000.0 * kUs);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// The diagnosis on torch 2.x's .item() per iteration as an H200 recorded it
// (op, copy-out, stream sync): the replayed gain covers what removing the read
// really saves (gpu_item_sync).
const analysis::Finding* Find(const std::vector<analysis::Finding>& fs, std::string_view category) {
  for (const auto& f : fs)
    if (f.category == category) return &f;
  return nullptr;
}

TEST(ReplayDiagnosis, ARemovedItemTakesItsCallAndItsWaitAway) {
  // Six 1 ms steps of 4 iterations: a 50 us kernel launched (10 us), then
  // .item(): 100 us of the op's own work on the host, a 5 us copy-out call and
  // a sync that waits for the kernel; 40 us of the program's code. The last
  // .item() of each step is the one the step needs.
  Builder b;
  for (int i = 0; i < 6; ++i) {
    int64_t a = i * 1000 * kUs;
    b.Add(a, 1000 * kUs, "ProfilerStep#1", SliceKind::kStep);
    for (int k = 0; k < 4; ++k) {
      int64_t s = a + k * 250 * kUs;
      uint32_t l = b.Add(s, 10 * kUs, "cudaLaunchKernel", SliceKind::kRuntime);
      b.Device(l, s + 5 * kUs, 50 * kUs, "gemm", SliceKind::kKernel);
      uint32_t item = b.Add(s + 20 * kUs, 190 * kUs, "aten::item", SliceKind::kOp);
      // Where the program called it (the observer's call sites): three in the
      // forward, the step's last in the loop.
      uint32_t row = b.t.ops.Add(item, model::OpScope::kFunction, -1);
      b.t.ops.site[row] = b.t.strings.Intern(k < 3 ? "/src/train.py:57 (forward)" : "/src/train.py:80 (<module>)");
      b.Add(s + 20 * kUs, 190 * kUs, "aten::_local_scalar_dense", SliceKind::kOp);
      b.Add(s + 120 * kUs, 5 * kUs, "cudaMemcpyAsync", SliceKind::kRuntime);
      b.Add(s + 125 * kUs, 85 * kUs, "cudaStreamSynchronize", SliceKind::kRuntime);
    }
  }
  b.t.Finalize();
  auto fs = analysis::Diagnose(b.t);
  const analysis::Finding* h = Find(fs, "host_sync");
  ASSERT_NE(h, nullptr);
  // Three reads of 190 us removed per 1 ms step: 57%.
  EXPECT_NEAR(h->estimated_gain_pct, 57, 2) << h->what_if;
  EXPECT_EQ(h->where, (std::vector<std::string>{"/src/train.py:57 (forward) (3 per step)", "/src/train.py:80 (<module>) (1 per step)"}));
  EXPECT_NE(h->evidence.find("Called at /src/train.py:57 (forward) (3 per step)"), std::string::npos) << h->evidence;
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(ReplayDiagnosis, APageableCopyPerStepIsAMemcpyFindingWithItsReplayedGain) {
  // Six 1.2 ms steps: a 6.4 MB pageable host-to-device copy whose call stages
  // the bytes (the call from 10 to 913 us, the copy from 20 to 910 us), a
  // 100 us kernel, a sync, and the program's code.
  Builder b;
  for (int i = 0; i < 6; ++i) {
    int64_t a = i * 1200 * kUs;
    b.Add(a, 1200 * kUs, "ProfilerStep#1", SliceKind::kStep);
    uint32_t c = b.Add(a + 10 * kUs, 903 * kUs, "cudaMemcpyAsync", SliceKind::kRuntime);
    b.Device(c, a + 20 * kUs, 890 * kUs, "Memcpy HtoD (Pageable -> Device)", SliceKind::kMemcpy, 6'400'000, 0);
    uint32_t l = b.Add(a + 920 * kUs, 5 * kUs, "cudaLaunchKernel", SliceKind::kRuntime);
    b.Device(l, a + 930 * kUs, 100 * kUs, "gemm", SliceKind::kKernel);
    b.Add(a + 930 * kUs, 105 * kUs, "cudaStreamSynchronize", SliceKind::kRuntime);
  }
  b.t.Finalize();
  auto fs = analysis::Diagnose(b.t);
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs[0].category, "memcpy");
  const analysis::Finding* m = Find(fs, "memcpy");
  ASSERT_NE(m, nullptr);
  double pageable = -1;
  for (const auto& [k, v] : m->metrics)
    if (k == "pageable_copies_per_step") pageable = v;
  EXPECT_EQ(pageable, 1);
  EXPECT_EQ(m->evidence.find("0.0 GB/s"), std::string::npos) << m->evidence;
  // No pinned copy and no device to go by: PCIe 3 x16's 12 GB/s, the copy
  // 533.3 us; its call a 10 us launch that no longer waits. The copy runs from
  // 20 us (launched at 10 us, its measured 10 us latency) to 553.3 us; the
  // kernel, launched at 25 us, queues behind it (553.3-653.3 us); the sync
  // from 35 us returns with 5 us of its own at 658.3 us; the program's 165 us
  // follow: 823.3 of 1200 us.
  EXPECT_NEAR(m->estimated_gain_pct, 100.0 * (1 - 823.33 / 1200.0), 0.5) << m->what_if;
}

// A trace of more steps than are walked (analysis::kMaxWalkedSteps): the
// findings walk and replay an evenly spread sample and scale it to every step,
// and say what walking them all says. 700 steps of three kinds (a pageable
// copy of 6.4, 3.2 or 9.6 MB, a kernel, a sync, and the program's code).
TEST(ReplayDiagnosis, StepsPastTheWalkedOnesAreASampleWithTheSameFindings) {
  Builder b;
  int64_t a = 0;
  for (int i = 0; i < 700; ++i) {
    const int64_t copy = (i % 3 == 0 ? 890 : i % 3 == 1 ? 445 : 1335) * kUs;
    const int64_t dur = copy + 310 * kUs;
    b.Add(a, dur, "ProfilerStep#1", SliceKind::kStep);
    uint32_t c = b.Add(a + 10 * kUs, copy + 13 * kUs, "cudaMemcpyAsync", SliceKind::kRuntime);
    b.Device(c, a + 20 * kUs, copy, "Memcpy HtoD (Pageable -> Device)", SliceKind::kMemcpy,
             static_cast<uint64_t>(copy / kUs) * 7191, 0);
    uint32_t l = b.Add(a + copy + 30 * kUs, 5 * kUs, "cudaLaunchKernel", SliceKind::kRuntime);
    b.Device(l, a + copy + 40 * kUs, 100 * kUs, "gemm", SliceKind::kKernel);
    b.Add(a + copy + 40 * kUs, 105 * kUs, "cudaStreamSynchronize", SliceKind::kRuntime);
    a += dur;
  }
  b.t.Finalize();
  analysis::DiagnosisOptions sampled, all;
  all.max_walked_steps = SIZE_MAX;
  analysis::ReplayCheck sampled_check, all_check;
  auto fs = analysis::Diagnose(b.t, sampled, &sampled_check);
  auto want = analysis::Diagnose(b.t, all, &all_check);
  // The walked steps are spread over all 700, the first (a warm-up) among them.
  EXPECT_EQ(sampled_check.steps, analysis::kMaxWalkedSteps - 1) << "the replay should hold the walked steps only";
  EXPECT_EQ(all_check.steps, 699u);
  EXPECT_NEAR(sampled_check.measured_ns, all_check.measured_ns, 0.01 * all_check.measured_ns);
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(fs.size(), want.size());
  for (size_t k = 0; k < fs.size(); ++k) {
    EXPECT_EQ(fs[k].category, want[k].category);
    EXPECT_NEAR(fs[k].estimated_gain_pct, want[k].estimated_gain_pct, 1.0) << fs[k].category;
    // Every figure of the evidence (per step, of the step): within 3%.
    ASSERT_EQ(fs[k].metrics.size(), want[k].metrics.size()) << fs[k].category;
    for (size_t m = 0; m < fs[k].metrics.size(); ++m)
      EXPECT_NEAR(fs[k].metrics[m].second, want[k].metrics[m].second, 0.03 * std::fabs(want[k].metrics[m].second) + 1e-9)
          << fs[k].category << " " << fs[k].metrics[m].first;
  }
  EXPECT_EQ(fs[0].category, "memcpy");
}

}  // namespace
}  // namespace strata

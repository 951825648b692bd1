// Steps found from optimizer steps (importers/strata/torch_steps.h), on
// hand-built boundaries: where each step ends given the Python side's
// loop-head marks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "importers/strata/decoder.h"
#include "importers/strata/torch_steps.h"
#include "model/trace.h"

namespace strata::importers::strata_ctf {
namespace {

constexpr int64_t kMs = 1'000'000;

struct Loop {
  LoadContext ctx;
  uint32_t process = 0, track = 0;
  std::vector<FoundStep> found;
  std::vector<OptimizerMark> marks;
  Loop() {
    process = ctx.Process(4242, 0).index;
    track = ctx.Track(process, model::TrackKind::kThread, 4242, -1);
    // Three iterations of 100 ms: the first activity at +10 ms, the optimizer
    // step from +70 ms (the Python side's mark) to +80 ms.
    for (int64_t k = 0; k < 3; ++k) {
      found.push_back({(10 + 100 * k) * kMs, (80 + 100 * k) * kMs, track, process, static_cast<uint64_t>(k)});
      marks.push_back({track, (70 + 100 * k) * kMs, 0});
    }
  }
  // The (begin, end) of each step the function adds, in order.
  std::vector<std::pair<int64_t, int64_t>> Steps(const std::vector<LoopHead>& heads) {
    model::Trace& t = ctx.trace();
    AddFoundSteps(ctx, found, marks, heads, t.strings.Intern("step"));
    std::vector<std::pair<int64_t, int64_t>> v;
    for (size_t i = 0; i < t.slices.size(); ++i)
      if (t.slices.kind[i] == model::SliceKind::kStep) v.emplace_back(t.slices.ts[i], t.slices.end(i));
    std::sort(v.begin(), v.end());
    return v;
  }
};

// Steps end at the loop's head the Python side saw after each optimizer step.
TEST(FoundSteps, EndAtTheLoopHeadAfterTheOptimizerStep) {
  Loop l;
  auto s = l.Steps({{l.track, 95 * kMs, true}, {l.track, 195 * kMs, true}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].second, 95 * kMs);
  EXPECT_EQ(s[1].first, 95 * kMs);
  EXPECT_EQ(s[1].second, 195 * kMs);
  EXPECT_EQ(s[2].first, 195 * kMs);
}

// The Python side gave up looking for the head while the optimizer step was
// still unwinding (its thread preempted there: seen under load), so its "gave
// up" mark lies inside that step, before its end. It belongs after the end:
// the step runs on to the next iteration's first activity (its tail, an
// evaluation say, stays in it), not to the optimizer step's end.
TEST(FoundSteps, AGiveUpMarkInsideTheOptimizerStepCountsFromItsEnd) {
  Loop l;
  auto s = l.Steps({{l.track, 95 * kMs, true}, {l.track, 179 * kMs, false}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].second, 95 * kMs);
  EXPECT_EQ(s[1].second, 210 * kMs) << "ended at " << s[1].second / kMs << " ms";
  EXPECT_EQ(s[2].first, 210 * kMs);
}

// A mark before the optimizer step began (an earlier call's) is not moved.
TEST(FoundSteps, AGiveUpMarkBeforeTheOptimizerStepIsNotMoved) {
  Loop l;
  auto s = l.Steps({{l.track, 95 * kMs, true}, {l.track, 160 * kMs, false}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].second, 180 * kMs) << "ended at " << s[1].second / kMs << " ms";
}

// Two optimizers taking turns (0, 1, 0, 1, ...), each step followed by the
// loop's head at one line (the loop's): every optimizer step ends an
// iteration. The same steps where the head after optimizer 0's steps is an
// inner loop's (another line) and only optimizer 1's are followed by the outer
// one (a WGAN's critic and generator): two optimizer steps per iteration.
TEST(FoundSteps, OptimizersTakingTurnsAreAnIterationEachWhereTheLoopHeadSaysSo) {
  for (bool inner_loop : {false, true}) {
    LoadContext ctx;
    uint32_t process = ctx.Process(4242, 0).index;
    uint32_t track = ctx.Track(process, model::TrackKind::kThread, 4242, -1);
    std::vector<FoundStep> found;
    std::vector<OptimizerMark> marks;
    std::vector<LoopHead> heads;
    for (int64_t k = 0; k < 12; ++k) {
      found.push_back({(10 + 100 * k) * kMs, (80 + 100 * k) * kMs, track, process, static_cast<uint64_t>(k)});
      marks.push_back({track, (70 + 100 * k) * kMs, static_cast<uint32_t>(k % 2)});
      uint32_t line = inner_loop && k % 2 == 0 ? 45 : 40;
      heads.push_back({track, (90 + 100 * k) * kMs, true, line});
    }
    model::Trace& t = ctx.trace();
    std::map<uint32_t, size_t> periods;
    AddFoundSteps(ctx, found, marks, heads, t.strings.Intern("step"), &periods);
    size_t steps = 0;
    for (size_t i = 0; i < t.slices.size(); ++i) steps += t.slices.kind[i] == model::SliceKind::kStep;
    EXPECT_EQ(steps, inner_loop ? 6u : 12u) << "inner loop: " << inner_loop;
    EXPECT_EQ(periods.count(track), inner_loop ? 1u : 0u);
  }
}

// One step of 100 ms on one thread, for the samples tests: forwards and spans
// are added to it, then BatchSize() attaches the step's samples from the
// batch marks and reads them back.
struct OneStep {
  model::Trace t;
  OneStep() {
    t.processes.push_back({.pid = 7});
    t.tracks.push_back({model::TrackKind::kThread, 0, 7});
    t.slices.Add(0, 100 * kMs, 0, t.strings.Intern("step"), model::SliceKind::kStep, 0);
  }
  void Add(int64_t ts, int64_t dur, const char* name, model::SliceKind kind = model::SliceKind::kModule) {
    t.slices.Add(ts, dur, 0, t.strings.Intern(name), kind);
  }
  // The step's batch_size argument (-1 when there is none).
  int64_t BatchSize(const std::vector<BatchMark>& marks) {
    t.Finalize();
    AttachStepSamples(t, marks, {}, {}, {});
    model::StringId key = t.strings.Find("batch_size");
    if (key == model::StringPool::kNotFound) return -1;
    int32_t arg = t.FindArg(0, key);
    return arg == model::kNone ? -1 : t.args.num[static_cast<size_t>(arg)];
  }
};

// A step's samples are its root forwards' batches, less those of forwards
// that raised (flag 4, a batch the loop skipped): two training forwards of 32
// in the step, the second raising, give 32; a raised forward that gave no
// batch mark (no tensor input) takes none from the one before it.
TEST(StepSamples, AForwardThatRaisedCountsNoSamples) {
  for (bool second_has_mark : {true, false}) {
    OneStep s;
    s.Add(10 * kMs, 20 * kMs, "Net");
    s.Add(50 * kMs, 5 * kMs, "Net");
    std::vector<BatchMark> marks = {{0, 10 * kMs + 1, 32, 3}};
    if (second_has_mark) marks.push_back({0, 50 * kMs + 1, 32, 3});
    marks.push_back({0, 55 * kMs - 1, 0, 5});
    EXPECT_EQ(s.BatchSize(marks), 32) << "second forward with a mark: " << second_has_mark;
  }
}

// Forwards inside an optimizer's step() re-evaluate the step's batch
// (LBFGS's closure, 4 per step here): one batch of 2048, not 4. With a
// forward before the step() too (a sharpness-aware optimizer's first pass),
// that forward's batch alone.
TEST(StepSamples, ForwardsInsideTheOptimizerStepAreTheStepsBatchAgain) {
  for (bool forward_before : {false, true}) {
    OneStep s;
    std::vector<BatchMark> marks;
    if (forward_before) {
      s.Add(2 * kMs, 5 * kMs, "Sequential");
      marks.push_back({0, 2 * kMs + 1, 2048, 3});
    }
    s.Add(10 * kMs, 80 * kMs, "Optimizer.step#LBFGS.step", model::SliceKind::kSpan);
    for (int64_t k = 0; k < 4; ++k) {
      s.Add((12 + 15 * k) * kMs, 5 * kMs, "Sequential");
      marks.push_back({0, (12 + 15 * k) * kMs + 1, 2048, 3});
    }
    EXPECT_EQ(s.BatchSize(marks), 2048) << "a forward before the step(): " << forward_before;
  }
}

// Training forwards of one module with no backward pass between them (flag 8
// on the second: two views of the same 64 images, or a decoder called per
// time step) process the same samples again: one run counts its largest
// batch once. With a backward between them (gradient accumulation's
// micro-batches: no flag), each counts.
TEST(StepSamples, ForwardsWithNoBackwardBetweenThemCountTheirBatchOnce) {
  struct Case {
    std::vector<std::pair<uint64_t, uint32_t>> forwards;  // (batch, flags)
    int64_t samples;
  };
  for (const Case& c : std::vector<Case>{{{{64, 3}, {64, 3 | 8}}, 64},
                                         {{{16, 3}, {16, 3}, {16, 3}}, 48},
                                         {{{8, 3}, {8, 3 | 8}, {12, 3 | 8}, {8, 3}, {8, 3 | 8}}, 20},
                                         {{{32, 3 | 8}}, 32}}) {
    OneStep s;
    std::vector<BatchMark> marks;
    for (size_t k = 0; k < c.forwards.size(); ++k) {
      int64_t ts = (5 + 10 * static_cast<int64_t>(k)) * kMs;
      s.Add(ts, 5 * kMs, "Encoder");
      marks.push_back({0, ts + 1, c.forwards[k].first, c.forwards[k].second});
    }
    EXPECT_EQ(s.BatchSize(marks), c.samples) << ::testing::PrintToString(c.forwards);
  }
}

// A root forward whose 2-D output has fewer rows than its first input (flag
// 16, from the hooks as it returned: 8 graphs given as their 640 nodes)
// counts the output's rows: its mark replaces the one its begin gave. Two
// such forwards (gradient accumulation) count 16; the replacement takes
// nothing from a forward before it.
TEST(StepSamples, AnOutputOfFewerRowsThanTheInputReplacesItsBatch) {
  OneStep s;
  s.Add(10 * kMs, 20 * kMs, "GNN");
  s.Add(50 * kMs, 20 * kMs, "GNN");
  std::vector<BatchMark> marks = {{0, 10 * kMs + 1, 640, 3}, {0, 30 * kMs - 1, 8, 3 | 16},
                                  {0, 50 * kMs + 1, 600, 3}, {0, 70 * kMs - 1, 8, 3 | 16}};
  EXPECT_EQ(s.BatchSize(marks), 16);
}

}  // namespace
}  // namespace strata::importers::strata_ctf

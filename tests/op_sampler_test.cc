// The --ops sampled budget (collectors/torch/sampler.h), driven by a simulated
// clock: step boundaries and control-thread ticks as a training loop and a
// loaded machine would deliver them.
#include "collectors/torch/sampler.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace strata::collectors::torch {
namespace {

constexpr uint64_t kMs = 1'000'000;

struct Window {
  uint64_t begin, end;
  bool step;
};

// Runs the sampler the way the observer does: ticks at the times Tick asks for
// (no later than `tick_late` past them), and boundaries at `boundaries`, until
// `end`. Returns the windows it opened.
class Sim {
 public:
  Sim(uint32_t window_ms, uint32_t period_ms, uint64_t seed) {
    s_.Configure(window_ms, period_ms);
    s_.Start(now_, seed);
  }
  void Boundary(uint64_t at) {
    TickUntil(at);
    bool was = s_.open();
    s_.StepBoundary(at);
    Note(was, at);
  }
  void TickUntil(uint64_t until) {
    while (next_tick_ <= until) {
      now_ = next_tick_;
      bool was = s_.open();
      uint64_t wait = s_.Tick(now_);
      Note(was, now_);
      next_tick_ = now_ + std::max<uint64_t>(wait, kMs) + tick_late;
    }
    now_ = until;
  }
  void Finish(uint64_t end) {
    TickUntil(end);
    if (s_.open()) windows.push_back({open_at_, end, open_step_});
  }
  double Share(uint64_t from, uint64_t to) const {
    uint64_t in = 0;
    for (const Window& w : windows)
      if (w.end > from && w.begin < to) in += std::min(w.end, to) - std::max(w.begin, from);
    return static_cast<double>(in) / static_cast<double>(to - from);
  }

  std::vector<Window> windows;
  uint64_t tick_late = 0;

 private:
  // A window never closes and reopens in one call: closing sets the next start
  // at least 3.5x its length ahead.
  void Note(bool was_open, uint64_t at) {
    if (was_open && !s_.open()) windows.push_back({open_at_, at, open_step_});
    if (!was_open && s_.open()) {
      open_at_ = at;
      open_step_ = s_.step_window();
    }
  }

  OpSampler s_;
  uint64_t now_ = 1000 * kMs;
  uint64_t next_tick_ = 1000 * kMs;
  uint64_t open_at_ = 0;
  bool open_step_ = false;
};

TEST(OpSampler, StepsOfAnyLengthAreSampledAtTheDutyRatio) {
  for (uint64_t step_ms : {1, 7, 50, 400}) {
    SCOPED_TRACE(step_ms);
    Sim sim(5, 40, 42 + step_ms);
    uint64_t t = 1000 * kMs + 3 * kMs;
    for (int i = 0; i < 4000; ++i, t += step_ms * kMs) sim.Boundary(t);
    sim.Finish(t);
    ASSERT_GT(sim.windows.size(), 20u);
    for (const Window& w : sim.windows) EXPECT_TRUE(w.step);
    // Every window is one whole step.
    for (const Window& w : sim.windows) EXPECT_EQ(w.end - w.begin, step_ms * kMs);
    double share = sim.Share(sim.windows.front().begin, t);
    EXPECT_GT(share, 0.125 * 0.7);
    EXPECT_LT(share, 0.125 * 1.3);
  }
}

TEST(OpSampler, EachWindowIsFollowedByItsShareOfGap) {
  Sim sim(5, 40, 7);
  uint64_t t = 1000 * kMs;
  // Irregular steps: 2 ms mostly, every 10th one 30 ms (an eval, a checkpoint).
  for (int i = 0; i < 3000; ++i) {
    t += (i % 10 == 9 ? 30 : 2) * kMs;
    sim.Boundary(t);
  }
  sim.Finish(t);
  ASSERT_GT(sim.windows.size(), 20u);
  for (size_t i = 0; i + 1 < sim.windows.size(); ++i) {
    uint64_t d = sim.windows[i].end - sim.windows[i].begin;
    EXPECT_GE(sim.windows[i + 1].begin - sim.windows[i].end, d * 7 / 2) << i;
  }
}

TEST(OpSampler, TimeWindowsWithoutStepsAndALateControlThreadKeepTheBudget) {
  for (uint64_t late_ms : {0, 15}) {
    SCOPED_TRACE(late_ms);
    Sim sim(5, 40, 3);
    sim.tick_late = late_ms * kMs;
    sim.Finish(1000 * kMs + 20'000 * kMs);
    ASSERT_GT(sim.windows.size(), 50u);
    for (const Window& w : sim.windows) EXPECT_FALSE(w.step);
    // A window closed late (the thread slept past its end) is charged its real length.
    for (size_t i = 0; i + 1 < sim.windows.size(); ++i) {
      uint64_t d = sim.windows[i].end - sim.windows[i].begin;
      EXPECT_GE(d, 5 * kMs);
      EXPECT_GE(sim.windows[i + 1].begin - sim.windows[i].end, d * 7 / 2) << i;
    }
    double share = sim.Share(sim.windows.front().begin, sim.windows.back().end);
    EXPECT_GT(share, 0.125 * 0.7);
    EXPECT_LT(share, 0.125 * 1.3);
  }
}

TEST(OpSampler, StepsTakingOverFromATimeWindowWaitForTheBudget) {
  // No steps for the first 2 s (imports, data set-up): time windows; then 1 ms
  // steps. The time window open when the first step comes is closed by it and
  // charged: no sampled step starts right after it.
  for (uint64_t seed = 1; seed < 40; ++seed) {
    Sim sim(5, 40, seed);
    uint64_t t = 1000 * kMs + 2000 * kMs + seed * kMs / 3;
    for (int i = 0; i < 500; ++i, t += kMs) sim.Boundary(t);
    sim.Finish(t);
    for (size_t i = 0; i + 1 < sim.windows.size(); ++i) {
      uint64_t d = sim.windows[i].end - sim.windows[i].begin;
      EXPECT_GE(sim.windows[i + 1].begin - sim.windows[i].end, d * 7 / 2) << "seed " << seed << " window " << i;
    }
  }
}

TEST(OpSampler, TheStepNoStepFollowsClosesInsteadOfRecordingTheRest) {
  // 200 steps of 2 ms, then 5 s of teardown with no step. Whichever boundary
  // opened the last window, it closes 3x the longest recent step after it, or
  // at the control thread's next tick (20 ms apart while steps come), not at
  // the end of the program.
  for (uint64_t seed = 1; seed < 60; ++seed) {
    Sim sim(5, 40, seed);
    uint64_t t = 1000 * kMs + 100 * kMs;
    for (int i = 0; i < 200; ++i, t += 2 * kMs) sim.Boundary(t);
    uint64_t last = t - 2 * kMs;
    sim.Finish(t + 5000 * kMs);
    for (const Window& w : sim.windows) {
      if (w.begin < last) continue;
      EXPECT_LE(w.end - w.begin, 20 * kMs + kMs) << "seed " << seed;
    }
    // Time windows take over once the steps are no longer recent.
    EXPECT_FALSE(sim.windows.back().step) << "seed " << seed;
    EXPECT_LT(sim.Share(last, t + 5000 * kMs), 0.2);
  }
}

TEST(OpSampler, StopClosesWithoutCharging) {
  OpSampler s;
  s.Configure(5, 40);
  s.Start(0, 9);
  s.StepBoundary(200 * kMs);  // past the first window's earliest start (60 ms at most)
  ASSERT_TRUE(s.open());
  s.Stop();
  EXPECT_FALSE(s.open());
  s.StepBoundary(202 * kMs);  // nothing was charged: the next boundary opens a window again
  EXPECT_TRUE(s.open());
}

}  // namespace
}  // namespace strata::collectors::torch

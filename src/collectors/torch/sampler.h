// --ops sampled: when the op windows open and close. No PyTorch in here: the
// observer holds one OpSampler under its lock, feeds it step boundaries and the
// control thread's ticks, and records ops while open() is true.
//
// Two kinds of window. While steps come (a boundary in the last max(1 s, 4
// periods)), a window is one whole step: it opens at a boundary and closes at
// the next. Without steps, time windows of `window` ms open on their own.
// Either way one duty budget holds: after a window of length d, the next one
// opens no sooner than d * (period/window - 1), jittered 0.5x..1.5x, so recorded
// time stays ~window/period of the run whatever the step length or however late
// a loaded machine closes a window, and periodic patterns (an eval every 10
// steps, the program's own step period) are not locked onto.
#pragma once

#include <array>
#include <cstdint>

namespace strata::collectors::torch {

class OpSampler {
 public:
  // Window length and period in ms (0 window is 1; a period under the window is
  // the window). Takes effect from the next window.
  void Configure(uint32_t window_ms, uint32_t period_ms);

  // The first window comes 0.5..1.5 periods in, not at once: the first steps of
  // a run (warm-up: allocator growth, kernel selection) are not typical and
  // would weigh heavily in a handful of samples.
  void Start(uint64_t now_ns, uint64_t seed);

  // A step boundary: closes the sampled step, or the time window steps take
  // over from, and opens the next step's window if the budget allows.
  void StepBoundary(uint64_t now_ns);

  // Time passing (the control thread): opens and closes time windows while no
  // steps come, and closes a sampled step that is overdue: one still open 3x
  // past the longest of the last 8 gaps between boundaries (and past a window)
  // is the one the last boundary of a loop opened, that no step follows; it
  // closes there rather than record the rest of the program. Returns how long
  // until the next thing Tick would do, in ns.
  uint64_t Tick(uint64_t now_ns);

  // Sampling is switched off (another mode): closes any window, charging nothing.
  void Stop();

  bool open() const { return open_; }
  bool step_window() const { return step_window_; }

 private:
  bool StepsRecent(uint64_t now_ns) const;
  void Close(uint64_t now_ns);
  uint64_t Random();

  uint64_t window_ns_ = 10'000'000, period_ns_ = 200'000'000;
  bool open_ = false;
  bool step_window_ = false;       // the open window is a sampled step
  uint64_t begin_ns_ = 0;          // when the open window opened
  uint64_t time_end_ns_ = 0;       // a time window's planned end
  uint64_t next_ns_ = 0;           // earliest start of the next window (the budget)
  uint64_t last_boundary_ns_ = 0;  // 0: no step yet
  std::array<uint64_t, 8> gaps_ns_{};  // the last boundary-to-boundary gaps (a ring)
  uint32_t gap_next_ = 0;
  uint64_t rng_ = 0x9E3779B97F4A7C15ull;
};

}  // namespace strata::collectors::torch

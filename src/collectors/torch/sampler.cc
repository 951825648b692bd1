#include "collectors/torch/sampler.h"

#include <algorithm>

namespace strata::collectors::torch {

namespace {
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kIdleTickNs = 20 * kMs;  // nothing to do soon: look again then
}  // namespace

void OpSampler::Configure(uint32_t window_ms, uint32_t period_ms) {
  window_ns_ = uint64_t{std::max<uint32_t>(window_ms, 1)} * kMs;
  period_ns_ = std::max(uint64_t{period_ms} * kMs, window_ns_);
}

void OpSampler::Start(uint64_t now_ns, uint64_t seed) {
  rng_ = seed | 1;  // xorshift's state must not be 0
  next_ns_ = now_ns + period_ns_ / 2 + Random() % (period_ns_ + 1);
}

uint64_t OpSampler::Random() {
  uint64_t x = rng_;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  rng_ = x;
  return x;
}

bool OpSampler::StepsRecent(uint64_t now_ns) const {
  return last_boundary_ns_ != 0 && now_ns - last_boundary_ns_ < std::max<uint64_t>(1000 * kMs, 4 * period_ns_);
}

void OpSampler::Close(uint64_t now_ns) {
  uint64_t d = std::max<uint64_t>(1, now_ns - begin_ns_);
  double ratio = static_cast<double>(period_ns_) / static_cast<double>(window_ns_) - 1.0;
  double jitter = 0.5 + static_cast<double>(Random() % 1001) / 1000.0;
  next_ns_ = std::max(next_ns_, now_ns + static_cast<uint64_t>(static_cast<double>(d) * ratio * jitter));
  open_ = false;
  step_window_ = false;
}

void OpSampler::StepBoundary(uint64_t now_ns) {
  if (last_boundary_ns_ != 0) gaps_ns_[gap_next_++ % gaps_ns_.size()] = now_ns - last_boundary_ns_;
  last_boundary_ns_ = now_ns;
  if (open_) Close(now_ns);
  if (now_ns >= next_ns_) {
    open_ = true;
    step_window_ = true;
    begin_ns_ = now_ns;
  }
}

uint64_t OpSampler::Tick(uint64_t now_ns) {
  if (step_window_) {
    uint64_t longest = *std::max_element(gaps_ns_.begin(), gaps_ns_.end());
    uint64_t due = begin_ns_ + std::max(3 * longest, window_ns_);
    if (now_ns < due) return std::min(due - now_ns, kIdleTickNs);
    Close(now_ns);
  }
  if (StepsRecent(now_ns)) return kIdleTickNs;  // the steps open the windows
  if (open_ && now_ns >= time_end_ns_) {
    Close(now_ns);
  } else if (!open_ && now_ns >= next_ns_) {
    open_ = true;
    begin_ns_ = now_ns;
    time_end_ns_ = now_ns + window_ns_;
  }
  uint64_t next = open_ ? time_end_ns_ : next_ns_;
  return std::min(next > now_ns ? next - now_ns : 0, kIdleTickNs);
}

void OpSampler::Stop() {
  open_ = false;
  step_window_ = false;
}

}  // namespace strata::collectors::torch

// Waits (up to 20 s) for the supervisor to switch the "shapes" tier on through
// the control block, then records what it saw and exits.
#include <chrono>
#include <cstdio>
#include <thread>

#include "format/control.h"
#include "recorder/runtime.h"
#include "strata/strata.h"

int main() {
  const strata::format::ControlBlock* c = strata::recorder::Control();
  if (!c) {
    std::fprintf(stderr, "control_watch: no control block mapped\n");
    return 4;
  }
  uint32_t start_gen = c->generation.load(std::memory_order_acquire);
  strata_counter(strata_intern("initial_tiers"), strata::format::GetTiers(*c));
  std::printf("ready\n");
  std::fflush(stdout);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (c->generation.load(std::memory_order_acquire) != start_gen &&
        (strata::format::GetTiers(*c) & strata::format::kTierShapes)) {
      strata_instant(strata_intern("saw_shapes"));
      strata_counter(strata_intern("window_first"), static_cast<double>(c->detail_first_step.load()));
      strata_counter(strata_intern("window_last"), static_cast<double>(c->detail_last_step.load()));
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return 3;
}

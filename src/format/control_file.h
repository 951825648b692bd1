// The supervisor's side of the control block (format/control.h): changes the
// switches of a running recording, in the vocabulary of tiers.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "format/control.h"

namespace strata::format {

class ControlFile {
 public:
  // Maps <dir>/control of a recording read-write.
  static StatusOr<ControlFile> Open(const std::string& dir);

  uint32_t tiers() const { return GetTiers(*block_); }
  // The detail window, or -1 when the detail tier applies to every step.
  int64_t first_step() const { return block_->detail_first_step.load(std::memory_order_relaxed); }
  int64_t last_step() const { return block_->detail_last_step.load(std::memory_order_relaxed); }
  uint32_t generation() const { return block_->generation.load(std::memory_order_acquire); }
  // The tiers the step window turns on.
  uint32_t window_tiers() const { return WindowTiers(*block_); }
  // The step last begun in a traced process, -1 before the first.
  int64_t current_step() const { return block_->current_step.load(std::memory_order_relaxed); }
  CudaActivity cuda_activity() const {
    return static_cast<CudaActivity>(block_->cuda_activity.load(std::memory_order_relaxed));
  }
  uint32_t cuda_sample_every() const { return block_->cuda_sample_every.load(std::memory_order_relaxed); }
  const ControlBlock& block() const { return *block_; }
  // Publishes new settings: fields first, then the generation (release).
  void Set(uint32_t tiers, int64_t first_step, int64_t last_step);
  // The same, with what the window turns on and how CUDA activity is recorded.
  void Set(uint32_t tiers, int64_t first_step, int64_t last_step, uint32_t window_tiers, CudaActivity cuda);
  // Asks for `window_tiers` over the next `steps` steps (from the one after the
  // step now running); the window set, as [*first, *last].
  void RequestNextSteps(int64_t steps, uint32_t window_tiers, int64_t* first, int64_t* last);

 private:
  ControlBlock* block_ = nullptr;  // mapped for the life of the process
};

// "ops,shapes,memory,cuda" <-> tier bits. Unknown names are an error.
StatusOr<uint32_t> ParseTiers(const std::string& list);
std::string TierNames(uint32_t tiers);

}  // namespace strata::format

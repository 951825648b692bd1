// The supervisor's side of the control block (format/control.h): changes the
// switches of a running recording, in the vocabulary of tiers.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "format/control.h"

namespace strata::cli {

class ControlFile {
 public:
  // Maps <dir>/control of a recording read-write.
  static StatusOr<ControlFile> Open(const std::string& dir);

  uint32_t tiers() const { return format::GetTiers(*block_); }
  // The detail window, or -1 when the detail tier applies to every step.
  int64_t first_step() const { return block_->detail_first_step.load(std::memory_order_relaxed); }
  int64_t last_step() const { return block_->detail_last_step.load(std::memory_order_relaxed); }
  uint32_t generation() const { return block_->generation.load(std::memory_order_acquire); }
  // Publishes new settings: fields first, then the generation (release).
  void Set(uint32_t tiers, int64_t first_step, int64_t last_step);

 private:
  format::ControlBlock* block_ = nullptr;  // mapped for the life of the process
};

// "ops,shapes,memory" <-> tier bits. Unknown names are an error.
StatusOr<uint32_t> ParseTiers(const std::string& list);
std::string TierNames(uint32_t tiers);

}  // namespace strata::cli

// The supervisor's side of the control block (format/control.h): creates
// <trace>/control and changes tiers while programs run.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "format/control.h"

namespace strata::cli {

class ControlFile {
 public:
  ControlFile() = default;
  ControlFile(ControlFile&& o) noexcept : block_(o.block_) { o.block_ = nullptr; }
  ControlFile& operator=(ControlFile&& o) noexcept;
  ~ControlFile();

  // Creates (or truncates) <dir>/control with these initial settings.
  static StatusOr<ControlFile> Create(const std::string& dir, uint32_t tiers);
  // Maps an existing control file read-write (a running recording).
  static StatusOr<ControlFile> Open(const std::string& dir);

  uint32_t tiers() const { return block_->tiers.load(std::memory_order_relaxed); }
  uint64_t first_step() const { return block_->detail_first_step.load(std::memory_order_relaxed); }
  uint64_t last_step() const { return block_->detail_last_step.load(std::memory_order_relaxed); }
  uint32_t generation() const { return block_->generation.load(std::memory_order_acquire); }
  // Publishes new settings: fields first, then the generation (release).
  void Set(uint32_t tiers, uint64_t first_step, uint64_t last_step);

 private:
  format::ControlBlock* block_ = nullptr;
};

// "ops,shapes,memory" <-> tier bits. Unknown names are an error.
StatusOr<uint32_t> ParseTiers(const std::string& list);
std::string TierNames(uint32_t tiers);

}  // namespace strata::cli

#include "format/control_file.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/files.h"

namespace strata::format {
namespace {

struct TierName {
  const char* name;
  uint32_t bit;
};
constexpr TierName kTierNames[] = {
    {"ops", kTierOps},           {"ops-sampled", kTierOpsSampled},
    {"shapes", kTierShapes},     {"memory", kTierMemory},
    {"gpu-metrics", kTierGpuMetrics}, {"cuda", kTierCuda},
    {"paused", kTierPaused},
};

}  // namespace

StatusOr<ControlFile> ControlFile::Open(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(ControlBlock * b, MapControlFile(JoinPath(dir, kControlFileName)));
  ControlFile f;
  f.block_ = b;
  return f;
}

void ControlFile::Set(uint32_t tiers, int64_t first_step, int64_t last_step) {
  Set(tiers, first_step, last_step, window_tiers(), cuda_activity());
}

void ControlFile::Set(uint32_t tiers, int64_t first_step, int64_t last_step, uint32_t window_tiers,
                      CudaActivity cuda) {
  SetTiers(block_, tiers);
  block_->detail_first_step.store(first_step, std::memory_order_relaxed);
  block_->detail_last_step.store(last_step, std::memory_order_relaxed);
  block_->window_tiers.store(window_tiers & ~kTierPaused, std::memory_order_relaxed);
  block_->cuda_activity.store(static_cast<uint32_t>(cuda), std::memory_order_relaxed);
  block_->generation.fetch_add(1, std::memory_order_release);
}

void ControlFile::RequestNextSteps(int64_t steps, uint32_t window_tiers, int64_t* first, int64_t* last) {
  // The step now running may be half done: the window starts at the next one.
  *first = std::max<int64_t>(0, current_step() + 1);
  *last = *first + std::max<int64_t>(1, steps) - 1;
  Set(tiers(), *first, *last, window_tiers, cuda_activity());
}

StatusOr<uint32_t> ParseTiers(const std::string& list) {
  uint32_t bits = 0;
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    std::string name = list.substr(i, j - i);
    if (!name.empty()) {
      bool found = false;
      for (const TierName& t : kTierNames)
        if (name == t.name) {
          bits |= t.bit;
          found = true;
        }
      if (!found) return Err(StatusCode::kInvalidArgument, "unknown tier '{}' (known: ops, ops-sampled, shapes, memory, gpu-metrics, cuda, paused)", name);
    }
    i = j + 1;
  }
  return bits;
}

std::string TierNames(uint32_t tiers) {
  std::string out;
  for (const TierName& t : kTierNames)
    if (tiers & t.bit) out += (out.empty() ? "" : ",") + std::string(t.name);
  return out.empty() ? "none" : out;
}

}  // namespace strata::format

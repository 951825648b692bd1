#include "cli/control_file.h"

#include <cstring>

#include "base/error.h"
#include "base/files.h"

namespace strata::cli {
namespace {

struct TierName {
  const char* name;
  uint32_t bit;
};
constexpr TierName kTierNames[] = {
    {"ops", format::kTierOps},           {"ops-sampled", format::kTierOpsSampled},
    {"shapes", format::kTierShapes},     {"memory", format::kTierMemory},
    {"gpu-metrics", format::kTierGpuMetrics}, {"paused", format::kTierPaused},
};

}  // namespace

StatusOr<ControlFile> ControlFile::Open(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(format::ControlBlock * b, format::MapControlFile(JoinPath(dir, format::kControlFileName)));
  ControlFile f;
  f.block_ = b;
  return f;
}

void ControlFile::Set(uint32_t tiers, int64_t first_step, int64_t last_step) {
  format::SetTiers(block_, tiers);
  block_->detail_first_step.store(first_step, std::memory_order_relaxed);
  block_->detail_last_step.store(last_step, std::memory_order_relaxed);
  block_->generation.fetch_add(1, std::memory_order_release);
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
      if (!found) return Err(StatusCode::kInvalidArgument, "unknown tier '{}' (known: ops, ops-sampled, shapes, memory, gpu-metrics, paused)", name);
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

}  // namespace strata::cli

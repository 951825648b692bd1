#include "cli/control_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
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

StatusOr<format::ControlBlock*> Map(const std::string& path, bool create) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0644);
  if (fd < 0) return ErrnoErr(errno, "cannot open {}", path);
  if (create && ::ftruncate(fd, static_cast<off_t>(format::kControlFileSize)) != 0) {
    int e = errno;
    ::close(fd);
    return ErrnoErr(e, "cannot size {}", path);
  }
  void* p = ::mmap(nullptr, format::kControlFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) return ErrnoErr(e, "cannot map {}", path);
  return static_cast<format::ControlBlock*>(p);
}

}  // namespace

ControlFile& ControlFile::operator=(ControlFile&& o) noexcept {
  if (this != &o) {
    if (block_) ::munmap(block_, format::kControlFileSize);
    block_ = o.block_;
    o.block_ = nullptr;
  }
  return *this;
}

ControlFile::~ControlFile() {
  if (block_) ::munmap(block_, format::kControlFileSize);
}

StatusOr<ControlFile> ControlFile::Create(const std::string& dir, uint32_t tiers) {
  STRATA_ASSIGN_OR_RETURN(format::ControlBlock * b, Map(JoinPath(dir, "control"), true));
  // The file is fresh (zeroed): fill it, then publish the magic last so that a
  // reader never accepts a half-initialized block.
  b->tiers.store(tiers, std::memory_order_relaxed);
  b->detail_first_step.store(0, std::memory_order_relaxed);
  b->detail_last_step.store(UINT64_MAX, std::memory_order_relaxed);
  b->size = sizeof(format::ControlBlock);
  b->version = format::kControlVersion;
  b->generation.store(1, std::memory_order_release);
  __atomic_store_n(&b->magic, format::kControlMagic, __ATOMIC_RELEASE);
  ControlFile f;
  f.block_ = b;
  return f;
}

StatusOr<ControlFile> ControlFile::Open(const std::string& dir) {
  std::string path = JoinPath(dir, "control");
  STRATA_ASSIGN_OR_RETURN(format::ControlBlock * b, Map(path, false));
  ControlFile f;
  f.block_ = b;
  if (b->magic != format::kControlMagic || b->version < 1)
    return Err(StatusCode::kCorrupt, "{}: not a strata control block", path);
  return f;
}

void ControlFile::Set(uint32_t tiers, uint64_t first_step, uint64_t last_step) {
  block_->tiers.store(tiers, std::memory_order_relaxed);
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

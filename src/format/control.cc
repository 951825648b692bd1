#include "format/control.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "base/error.h"
#include "base/files.h"

namespace strata::format {

const char* OpsModeName(OpsMode m) {
  switch (m) {
    case OpsMode::kOff: return "off";
    case OpsMode::kSampled: return "sampled";
    case OpsMode::kAll: return "all";
  }
  return "?";
}

bool ParseOpsMode(std::string_view s, OpsMode* out) {
  if (s == "off") *out = OpsMode::kOff;
  else if (s == "sampled") *out = OpsMode::kSampled;
  else if (s == "all") *out = OpsMode::kAll;
  else return false;
  return true;
}

uint32_t GetTiers(const ControlBlock& cb) {
  uint32_t t = 0;
  switch (static_cast<OpsMode>(cb.ops_mode.load(std::memory_order_relaxed))) {
    case OpsMode::kAll: t |= kTierOps; break;
    case OpsMode::kSampled: t |= kTierOpsSampled; break;
    case OpsMode::kOff: break;
  }
  if (cb.detail.load(std::memory_order_relaxed)) t |= kTierShapes;
  if (cb.memory.load(std::memory_order_relaxed)) t |= kTierMemory;
  if (cb.gpu_metrics.load(std::memory_order_relaxed)) t |= kTierGpuMetrics;
  if (cb.paused.load(std::memory_order_relaxed)) t |= kTierPaused;
  return t;
}

void SetTiers(ControlBlock* cb, uint32_t t) {
  OpsMode m = (t & kTierOps) ? OpsMode::kAll : (t & kTierOpsSampled) ? OpsMode::kSampled : OpsMode::kOff;
  cb->ops_mode.store(static_cast<uint32_t>(m), std::memory_order_relaxed);
  cb->detail.store((t & kTierShapes) ? 1 : 0, std::memory_order_relaxed);
  cb->memory.store((t & kTierMemory) ? 1 : 0, std::memory_order_relaxed);
  cb->gpu_metrics.store((t & kTierGpuMetrics) ? 1 : 0, std::memory_order_relaxed);
  cb->paused.store((t & kTierPaused) ? 1 : 0, std::memory_order_relaxed);
}

void InitControlBlock(ControlBlock* cb) {
  std::memset(static_cast<void*>(cb), 0, sizeof *cb);
  cb->magic = kControlMagic;
  cb->version = kControlVersion;
  cb->size = sizeof(ControlBlock);
  cb->generation.store(1, std::memory_order_relaxed);
  cb->ops_mode.store(static_cast<uint32_t>(OpsMode::kAll), std::memory_order_relaxed);
  cb->sample_window_ms.store(10, std::memory_order_relaxed);
  cb->sample_period_ms.store(200, std::memory_order_relaxed);
  cb->detail_first_step.store(-1, std::memory_order_relaxed);
  cb->detail_last_step.store(-1, std::memory_order_relaxed);
  cb->memory.store(1, std::memory_order_relaxed);
  cb->modules.store(1, std::memory_order_relaxed);
}

Status WriteControlFile(const std::string& path, const ControlBlock& cb) {
  // One page: room to grow without changing the mapping size.
  std::string page(4096, '\0');
  std::memcpy(page.data(), static_cast<const void*>(&cb), sizeof cb);
  return WriteFileAtomic(path, page);
}

StatusOr<ControlBlock*> MapControlFile(const std::string& path) {
  // Written through a shared mapping: never follow a link planted in the trace
  // directory, and never map (or block on) anything but a regular file.
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno == ELOOP)
    return Err(StatusCode::kPermission, "{} is a symbolic link: refusing to follow it", path);
  if (fd < 0) return ErrnoErr(errno, "open {}", path);
  struct stat st;
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Err(StatusCode::kInvalidArgument, "{} is not a regular file", path);
  }
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(ControlBlock))) {
    ::close(fd);
    return Err(StatusCode::kCorrupt, "{}: shorter than a control block", path);
  }
  void* m = ::mmap(nullptr, sizeof(ControlBlock), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return ErrnoErr(errno, "mmap {}", path);
  auto* cb = static_cast<ControlBlock*>(m);
  if (cb->magic != kControlMagic || cb->version != kControlVersion) {
    ::munmap(m, sizeof(ControlBlock));
    return Err(StatusCode::kUnsupported, "{}: not a version {} control block", path, kControlVersion);
  }
  return cb;
}

}  // namespace strata::format

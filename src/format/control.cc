#include "format/control.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

bool ParseCudaActivity(std::string_view s, CudaActivity* out) {
  if (s == "all") *out = CudaActivity::kAll;
  else if (s == "sampled") *out = CudaActivity::kSampled;
  else if (s == "window") *out = CudaActivity::kWindow;
  else if (s == "off") *out = CudaActivity::kOff;
  else return false;
  return true;
}

void PublishStepBegin(ControlBlock* cb, int64_t step) {
  // Several processes may step (ranks): the control block keeps the highest.
  int64_t cur = cb->current_step.load(std::memory_order_relaxed);
  while (step > cur && !cb->current_step.compare_exchange_weak(cur, step, std::memory_order_relaxed)) {
  }
}

void PublishStepEnd(ControlBlock* cb, int64_t step, uint64_t begin_ns, uint64_t end_ns, uint32_t pid, uint32_t tiers,
                    uint32_t optimizer) {
  uint64_t i = cb->live_steps_written.fetch_add(1, std::memory_order_relaxed);
  LiveStep& e = cb->live_steps[i % kLiveSteps];
  e.seq.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  e.step.store(step, std::memory_order_relaxed);
  e.begin_ns.store(begin_ns, std::memory_order_relaxed);
  e.end_ns.store(end_ns, std::memory_order_relaxed);
  e.pid.store(pid, std::memory_order_relaxed);
  e.tiers.store(tiers, std::memory_order_relaxed);
  e.optimizer.store(optimizer, std::memory_order_relaxed);
  e.seq.store(i + 1, std::memory_order_release);
}

void ReadLiveSteps(const ControlBlock& cb, uint64_t from, std::vector<LiveStepRecord>* out, uint64_t* next,
                   uint64_t* missed) {
  uint64_t written = cb.live_steps_written.load(std::memory_order_acquire);
  uint64_t first = written > kLiveSteps ? written - kLiveSteps : 0;
  if (from < first) {
    *missed += first - from;
    from = first;
  }
  uint64_t i = from;
  for (; i < written; ++i) {
    const LiveStep& e = cb.live_steps[i % kLiveSteps];
    if (e.seq.load(std::memory_order_acquire) != i + 1) {
      // Claimed but not filled yet: read it next time. Overwritten: lost.
      if (written - i >= kLiveSteps) {
        ++*missed;
        continue;
      }
      break;
    }
    LiveStepRecord r{e.step.load(std::memory_order_relaxed), e.begin_ns.load(std::memory_order_relaxed),
                     e.end_ns.load(std::memory_order_relaxed), e.pid.load(std::memory_order_relaxed),
                     e.tiers.load(std::memory_order_relaxed), e.optimizer.load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.seq.load(std::memory_order_relaxed) != i + 1) {
      ++*missed;
      continue;
    }
    out->push_back(r);
  }
  *next = i;
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
  cb->current_step.store(-1, std::memory_order_relaxed);
  cb->cuda_activity.store(static_cast<uint32_t>(CudaActivity::kAll), std::memory_order_relaxed);
  cb->cuda_sample_every.store(50, std::memory_order_relaxed);
}

Status WriteControlFile(const std::string& path, const ControlBlock& cb) {
  // Whole pages: room to grow without changing the mapping size.
  std::string page((sizeof cb + 4095) / 4096 * 4096, '\0');
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

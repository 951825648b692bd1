#include "model/column.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

#include "base/huge_pages.h"

namespace strata::model {
namespace {

// Columns smaller than this never spill: a file per small column would cost
// more than the memory it saves.
constexpr size_t kMinSpillBytes = size_t{1} << 20;

// Columns of at least this many bytes on the heap are anonymous mappings of
// their own, grown by mremap: their pages move, none is copied. Through
// malloc, a column growing by doubling was copied at every step up to
// malloc's own mapping threshold (which the CLI raises to keep freed memory
// for reuse) and once more past it, each copy faulting in fresh pages: a
// fifth of building the index of a counter-heavy trace. Smaller columns stay
// with malloc and reuse its freed memory.
constexpr size_t kMapBytes = size_t{16} << 20;

size_t PageRound(size_t bytes) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
bool IsMapped(size_t bytes) { return bytes >= kMapBytes; }

// Heap storage of `bytes` holding the first `keep` bytes of `old` (of
// `old_bytes`, heap storage too, or null): malloc below kMapBytes, a mapping
// of its own from there.
void* HeapGrow(void* old, size_t old_bytes, size_t keep, size_t bytes) {
  if (IsMapped(old_bytes) && IsMapped(bytes)) {
    void* p = ::mremap(old, PageRound(old_bytes), PageRound(bytes), MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base::AdviseHugePagesIfFree(p, PageRound(bytes));
    return p;
  }
  if (!IsMapped(old_bytes) && !IsMapped(bytes)) {
    void* p = std::realloc(old, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void* p = nullptr;
  if (IsMapped(bytes)) {
    p = ::mmap(nullptr, PageRound(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base::AdviseHugePagesIfFree(p, PageRound(bytes));
  } else {
    p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
  }
  if (keep) std::memcpy(p, old, keep);
  if (old == nullptr) return p;
  if (IsMapped(old_bytes)) {
    ::munmap(old, PageRound(old_bytes));
  } else {
    std::free(old);
  }
  return p;
}
void HeapFree(void* p, size_t bytes) {
  if (IsMapped(bytes)) {
    ::munmap(p, PageRound(bytes));
  } else {
    std::free(p);
  }
}

struct SpillState {
  std::mutex mu;
  std::string dir;
  std::atomic<size_t> budget{0};  // 0: no spilling
  std::atomic<size_t> heap_bytes{0};              // owned heap rows of all columns
  std::unordered_map<void*, int> files;           // spilled mapping -> its file
};
SpillState& Spill() {
  static SpillState* s = new SpillState;  // never destroyed: columns may outlive statics
  return *s;
}

// A file that lives as long as its mapping: unlinked at once (O_TMPFILE), so
// nothing is left behind when the process dies.
int OpenSpillFile(const std::string& dir) {
  int fd = -1;
#ifdef O_TMPFILE
  fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
#endif
  std::string templ = dir + "/.strata-spill-XXXXXX";
  fd = ::mkostemp(templ.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(templ.c_str());
  return fd;
}

// Sizes the file to `bytes` with its blocks allocated, so that a full disk
// fails here (ENOSPC) rather than as a SIGBUS on a write through the mapping.
bool SizeFile(int fd, size_t old_bytes, size_t bytes) {
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return false;
  if (bytes > old_bytes) {
    int rc = ::posix_fallocate(fd, static_cast<off_t>(old_bytes), static_cast<off_t>(bytes - old_bytes));
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) return false;
  }
  return true;
}

void* SpillGrow(void* old, size_t old_bytes, size_t bytes) {
  SpillState& s = Spill();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.files.find(old);
  if (it == s.files.end()) throw std::bad_alloc();
  int fd = it->second;
  if (!SizeFile(fd, old_bytes, bytes)) throw std::bad_alloc();
  void* p = ::mremap(old, old_bytes, bytes, MREMAP_MAYMOVE);
  if (p == MAP_FAILED) throw std::bad_alloc();
  s.files.erase(it);
  s.files.emplace(p, fd);
  GetColumnStats().spilled_bytes.fetch_add(bytes - old_bytes, std::memory_order_relaxed);
  return p;
}

// A new spilled mapping of `bytes`, or null when it cannot be made (the
// column then stays on the heap).
void* SpillNew(size_t bytes) {
  SpillState& s = Spill();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.dir.empty()) return nullptr;
  int fd = OpenSpillFile(s.dir);
  if (fd < 0) return nullptr;
  void* p = SizeFile(fd, 0, bytes) ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (p == MAP_FAILED) {
    ::close(fd);
    return nullptr;
  }
  s.files.emplace(p, fd);
  GetColumnStats().spilled_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return p;
}

void SpillFree(void* p, size_t bytes) {
  SpillState& s = Spill();
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.files.find(p);
    if (it != s.files.end()) {
      fd = it->second;
      s.files.erase(it);
    }
  }
  ::munmap(p, bytes);
  if (fd >= 0) ::close(fd);
  GetColumnStats().spilled_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace

void SetColumnSpill(const std::string& dir, size_t threshold_bytes) {
  SpillState& s = Spill();
  std::lock_guard<std::mutex> lock(s.mu);
  s.dir = dir;
  s.budget = threshold_bytes;
}

ScopedColumnSpill::ScopedColumnSpill(const std::string& dir, size_t threshold_bytes) {
  SpillState& s = Spill();
  std::lock_guard<std::mutex> lock(s.mu);
  old_dir_ = s.dir;
  old_threshold_ = s.budget.load();
  s.dir = dir;
  s.budget = dir.empty() ? 0 : threshold_bytes;
}

ScopedColumnSpill::~ScopedColumnSpill() { SetColumnSpill(old_dir_, old_threshold_); }

std::string ColumnSpillDir() {
  SpillState& s = Spill();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.dir;
}

ColumnStats& GetColumnStats() {
  static ColumnStats* stats = new ColumnStats;
  return *stats;
}

namespace column_detail {

void* Grow(void* old, size_t old_bytes, size_t keep, size_t bytes, bool* spill) {
  SpillState& s = Spill();
  if (bytes == 0) {  // (a file mapping cannot shrink to nothing: freed instead)
    Free(old, old_bytes, *spill);
    *spill = false;
    return nullptr;
  }
  if (*spill) {
    try {
      return SpillGrow(old, old_bytes, bytes);
    } catch (const std::bad_alloc&) {
      // The disk beside the index is full (or the mapping failed): the
      // column goes back to the heap rather than failing the command.
      void* p = HeapGrow(nullptr, 0, 0, bytes);
      if (keep) std::memcpy(p, old, keep);
      Free(old, old_bytes, true);
      *spill = false;
      s.heap_bytes.fetch_add(bytes, std::memory_order_relaxed);
      return p;
    }
  }
  // On the heap: move to a file when this column is large and the heap's
  // columns would pass the budget.
  size_t budget = s.budget.load(std::memory_order_relaxed);
  if (bytes >= kMinSpillBytes && budget > 0 &&
      s.heap_bytes.load(std::memory_order_relaxed) - old_bytes + bytes > budget) {
    if (void* p = SpillNew(bytes)) {
      if (keep) std::memcpy(p, old, keep);
      Free(old, old_bytes, false);
      *spill = true;
      return p;
    }
  }
  void* p = HeapGrow(old, old_bytes, keep, bytes);
  s.heap_bytes.fetch_add(bytes, std::memory_order_relaxed);
  s.heap_bytes.fetch_sub(old_bytes, std::memory_order_relaxed);
  return p;
}

void Free(void* p, size_t bytes, bool spill) {
  if (p == nullptr) return;
  if (spill) return SpillFree(p, bytes);
  HeapFree(p, bytes);
  Spill().heap_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace column_detail
}  // namespace strata::model

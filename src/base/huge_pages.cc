#include "base/huge_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace strata::base {
namespace {

constexpr uintptr_t kHuge = uintptr_t{2} << 20;

// The buddy order of a 2 MiB block: 9 on 4 KiB pages.
int HugeOrder() {
  static const int order = [] {
    long page = ::sysconf(_SC_PAGESIZE);
    int o = 0;
    while (page > 0 && (static_cast<uintptr_t>(page) << o) < kHuge) ++o;
    return o;
  }();
  return order;
}

}  // namespace

size_t FreeHugePageBytes() {
  int fd = ::open("/proc/buddyinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  size_t len = 0;
  for (ssize_t n; len < sizeof buf - 1 && (n = ::read(fd, buf + len, sizeof buf - 1 - len)) != 0;) {
    if (n < 0) break;
    len += static_cast<size_t>(n);
  }
  ::close(fd);
  buf[len] = '\0';
  // Lines: "Node 0, zone   Normal  77833  44937 ...": free blocks of order 0, 1, ...
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const int huge_order = HugeOrder();
  size_t bytes = 0;
  for (char* line = buf; *line;) {
    char* end = std::strchr(line, '\n');
    if (end) *end = '\0';
    char* p = std::strstr(line, "zone");
    if (p) {
      p += 4;
      while (*p == ' ') ++p;
      while (*p && *p != ' ') ++p;  // the zone's name
      for (int order = 0;; ++order) {
        char* next = nullptr;
        unsigned long long count = std::strtoull(p, &next, 10);
        if (next == p) break;
        p = next;
        if (order >= huge_order && order < 40) bytes += static_cast<size_t>(count) * (page << order);
      }
    }
    if (!end) break;
    line = end + 1;
  }
  return bytes;
}

bool AdviseHugePagesIfFree(void* p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < 4 * kHuge) return false;
  uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (e <= a) return false;
  bool huge = FreeHugePageBytes() >= 2 * (e - a);
  (void)::madvise(reinterpret_cast<void*>(a), e - a, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return huge;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

}  // namespace strata::base

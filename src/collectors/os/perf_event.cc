#include "collectors/os/perf_event.h"

#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <ctime>

#include "base/error.h"

namespace strata::collectors::os {

perf_event_attr BaseAttr(bool exclude_kernel) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.sample_period = 1;
  // IDENTIFIER first (and last in the sample_id trailer) lets the reader find
  // the event, and so the layout, of any record before parsing it.
  a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  a.disabled = 1;
  a.enable_on_exec = 1;
  a.inherit = 1;
  a.sample_id_all = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  if (exclude_kernel) {
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
  }
  a.exclude_callchain_kernel = 1;
  return a;
}

StatusOr<int> PerfEventOpen(const perf_event_attr& attr, pid_t pid, int cpu, std::string_view what, int* err) {
  perf_event_attr a = attr;
  long fd = ::syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (err) *err = fd < 0 ? errno : 0;
  if (fd < 0)
    return ErrnoErr(errno, "perf_event_open({}, pid={}, cpu={})", what, static_cast<int>(pid), cpu);
  return static_cast<int>(fd);
}

StatusOr<uint64_t> PerfEventId(int fd) {
  uint64_t id = 0;
  if (::ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) return ErrnoErr(errno, "ioctl(PERF_EVENT_IOC_ID)");
  return id;
}

Status PerfSetOutput(int fd, int ring_fd) {
  if (::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) != 0) return ErrnoErr(errno, "ioctl(PERF_EVENT_IOC_SET_OUTPUT)");
  return OkStatus();
}

Status PerfSetFilter(int fd, const std::string& filter) {
  if (::ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter.c_str()) != 0)
    return ErrnoErr(errno, "ioctl(PERF_EVENT_IOC_SET_FILTER, \"{}\")", filter);
  return OkStatus();
}

int PerfEventParanoid() {
  std::ifstream f("/proc/sys/kernel/perf_event_paranoid");
  int v = 2;
  if (!(f >> v)) return 2;
  return v;
}

bool HasPerfmonPrivilege() {
  if (::geteuid() == 0) return true;
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &hdr, data) != 0) return false;
  auto has = [&data](int cap) { return (data[cap / 32].effective >> (cap % 32)) & 1u; };
  constexpr int kCapSysAdmin = 21, kCapPerfmon = 38;
  return has(kCapPerfmon) || has(kCapSysAdmin);
}

PerfRing::PerfRing(PerfRing&& o) noexcept { *this = std::move(o); }

PerfRing& PerfRing::operator=(PerfRing&& o) noexcept {
  if (this != &o) {
    if (base_) ::munmap(base_, map_size_);
    fd_ = o.fd_;
    base_ = o.base_;
    map_size_ = o.map_size_;
    data_size_ = o.data_size_;
    o.base_ = nullptr;
    o.fd_ = -1;
  }
  return *this;
}

PerfRing::~PerfRing() {
  if (base_) ::munmap(base_, map_size_);
}

StatusOr<PerfRing> PerfRing::Map(int fd, size_t data_pages) {
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  PerfRing r;
  r.fd_ = fd;
  r.map_size_ = (data_pages + 1) * page;
  void* p = ::mmap(nullptr, r.map_size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return ErrnoErr(errno, "mmap of a {} KiB perf ring", data_pages * page / 1024);
  r.base_ = p;
  auto* meta = static_cast<perf_event_mmap_page*>(p);
  r.data_size_ = meta->data_size ? meta->data_size : data_pages * page;
  return r;
}

size_t PerfRing::Available() const {
  if (!base_) return 0;
  auto* meta = static_cast<perf_event_mmap_page*>(base_);
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  return static_cast<size_t>(head - meta->data_tail);
}

size_t PerfRing::CopyOut(std::vector<uint8_t>* out) {
  if (!base_) return 0;
  auto* meta = static_cast<perf_event_mmap_page*>(base_);
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  size_t n = static_cast<size_t>(head - tail);
  if (n == 0) return 0;
  if (n > data_size_) n = data_size_;  // cannot happen with a sane kernel; never read past the ring
  const uint8_t* data = static_cast<const uint8_t*>(base_) + (meta->data_offset ? meta->data_offset : 4096);
  size_t off = static_cast<size_t>(tail & (data_size_ - 1));
  size_t first = std::min(n, data_size_ - off);
  size_t old = out->size();
  out->resize(old + n);
  std::memcpy(out->data() + old, data + off, first);
  if (first < n) std::memcpy(out->data() + old + first, data, n - first);
  // Release: our copies complete before the kernel may reuse the space.
  __atomic_store_n(&meta->data_tail, tail + n, __ATOMIC_RELEASE);
  return n;
}

}  // namespace strata::collectors::os

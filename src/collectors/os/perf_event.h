// The one wrapper around perf_event_open(2) and its ring buffer.
//
// Every call goes through PerfEventOpen(), which turns a failure into a Status
// carrying the call's text ("perf_event_open(sched:sched_switch, pid=123, cpu=0):
// Permission denied"), so what the kernel refused reaches the user verbatim.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::collectors::os {

// A perf_event_attr with strata's common settings: disabled until exec of the
// traced command, inherited by its threads and children, stamped with
// CLOCK_MONOTONIC (the trace clock), and with the sample id on every record.
perf_event_attr BaseAttr(bool exclude_kernel);

// Opens one event; `what` names it in errors. Returns the fd (close-on-exec).
// `*err` (optional) receives the errno of a failure, for callers that retry.
StatusOr<int> PerfEventOpen(const perf_event_attr& attr, pid_t pid, int cpu, std::string_view what, int* err = nullptr);

// PERF_EVENT_IOC_ID of an open event.
StatusOr<uint64_t> PerfEventId(int fd);

// Sends another event's records to `ring_fd`'s ring (same CPU, same clock).
Status PerfSetOutput(int fd, int ring_fd);

// Installs a tracepoint filter (e.g. "id != 39").
Status PerfSetFilter(int fd, const std::string& filter);

// The perf_event_paranoid sysctl, or 2 (the default) when unreadable.
int PerfEventParanoid();

// True when this process may use kernel tracepoints and system-wide events:
// euid 0, or CAP_PERFMON / CAP_SYS_ADMIN in the effective set.
bool HasPerfmonPrivilege();

// The mmap'ed ring of one event: one metadata page, then 2^n data pages.
//
// Single consumer: the kernel produces at data_head (published with a release
// barrier, read here with acquire), we consume at data_tail (stored with release
// so the kernel never overwrites bytes we are still copying).
class PerfRing {
 public:
  PerfRing() = default;
  PerfRing(PerfRing&& o) noexcept;
  PerfRing& operator=(PerfRing&& o) noexcept;
  PerfRing(const PerfRing&) = delete;
  PerfRing& operator=(const PerfRing&) = delete;
  ~PerfRing();

  // Maps `data_pages` (a power of two) data pages of `fd`'s ring.
  static StatusOr<PerfRing> Map(int fd, size_t data_pages);

  int fd() const { return fd_; }
  size_t data_size() const { return data_size_; }
  bool mapped() const { return base_ != nullptr; }

  // Bytes written by the kernel and not yet consumed.
  size_t Available() const;

  // Appends every available record to `out` (unwrapped: each record is
  // contiguous) and releases the space to the kernel. Returns bytes copied.
  size_t CopyOut(std::vector<uint8_t>* out);

 private:
  int fd_ = -1;
  void* base_ = nullptr;
  size_t map_size_ = 0;
  size_t data_size_ = 0;
};

}  // namespace strata::collectors::os

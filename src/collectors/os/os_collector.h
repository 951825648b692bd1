// The OS level of `strata record`: kernel events for the traced process tree,
// CPU samples with stacks, and /proc counters, collected by the supervisor with
// perf_event_open directly (no daemon, no kernel module).
//
// Layout (see the research note on perf_event): for each CPU, a dummy "leader"
// event owns a ring and carries the side-band records (context switches, task
// fork/exit, comm, mmap2); every other event (tracepoints, cpu-clock sampling,
// page faults) is redirected into that CPU's ring with SET_OUTPUT. All events
// are opened with pid = the child, inherit = 1 (so threads and children created
// later are followed), enable_on_exec = 1 (they arm exactly when the child
// execs the command) and CLOCK_MONOTONIC (the trace clock).
//
// Threads: a reader drains the rings (epoll on the ring fds, a pidfd of the
// child and a stop eventfd) into a bounded queue; a writer encodes records into
// cpu streams (OsEncoder) and writes them. When the queue is full the reader
// leaves records in the rings and the kernel drops and counts (PERF_RECORD_LOST)
// what does not fit, so every loss is counted exactly, into events_discarded.
//
// Session: Open(child) while the child is parked before exec, Start(), then
// Stop() once the child has exited. Grandchildren that outlive the child are
// followed until Stop() (they are not waited for; their in-process recorder
// keeps writing its own streams).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/tsdl.h"

namespace strata::collectors::os {

enum class Unwind { kFramePointer, kDwarf };

struct OsOptions {
  bool perf = true;                  // kernel events (false: /proc counters only)
  bool sched_detail = false;         // sched_switch (sleep state, blocked stacks) + sched_wakeup: 1-3 us per switch
  bool syscalls = false;             // raw_syscalls enter/exit: ~1-2 us per syscall
  uint32_t sample_hz = 99;           // cpu-clock sampling frequency; 0 = off
  Unwind unwind = Unwind::kFramePointer;
  uint32_t dwarf_stack_bytes = 8192; // user stack copied per sample with --unwind dwarf
  bool page_faults = false;
  bool block_io = false;
  bool python = true;                // CPython 3.11 stacks for samples of interpreter threads
  uint32_t proc_hz = 10;             // /proc counters; 0 = off
  uint32_t ring_kb = 0;              // per-CPU ring; 0 = automatic
  uint32_t flush_ms = 100;           // how long encoded events may wait before reaching the file
  uint64_t queue_bytes = 64ull << 20;  // reader -> writer bound
};

// One part of the collector and what it could do: for the manifest's
// collectors[] and the message printed at record start.
struct CollectorNote {
  std::string name;    // os.sched, os.sched_detail, os.syscalls, os.samples, os.python, os.faults, os.block, os.proc
  std::string state;   // ok, partial, unavailable, off
  std::string detail;
};

struct OsStats {
  uint64_t events = 0;          // cpu-stream events written
  uint64_t records = 0;         // ring records read
  uint64_t lost = 0;            // records the kernel dropped (exact, from PERF_RECORD_LOST)
  uint64_t throttled = 0;
  uint64_t malformed = 0;
  uint64_t reordered = 0;       // events stamped earlier than their CPU's previous one, raised to it (CTF
                                // streams are monotonic; the kernel stamps before it reserves ring space)
  uint64_t bytes_read = 0;      // ring bytes
  uint64_t samples = 0;
  uint64_t python_samples = 0;
  uint64_t proc_samples = 0;
  uint32_t cpus = 0;
  uint32_t ring_kb = 0;
  double reader_wakeups = 0;
};

class OsCollector {
 public:
  OsCollector(OsOptions opt, std::string ctf_dir, const format::Uuid& uuid);
  ~OsCollector();
  OsCollector(const OsCollector&) = delete;
  OsCollector& operator=(const OsCollector&) = delete;

  // Opens the events for `child`, which must not have exec'd yet. Never fails
  // the recording: whatever the kernel refuses is left out and described in notes().
  void Open(pid_t child);
  // Starts the reader, writer and /proc threads.
  void Start();
  // Drains what the kernel still holds, stops the threads and closes the streams.
  Status Stop();

  const std::vector<CollectorNote>& notes() const;
  OsStats stats() const;
  bool active() const;  // some kernel events are being collected

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::collectors::os

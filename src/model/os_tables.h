// OS-level tables of the analysis model: scheduling states, system calls, CPU
// samples with their stacks, page faults and block I/O of traced threads.
// Filled by importers/strata/os_events.cc from the supervisor's cpu streams;
// read by analysis/os.h. Columnar like the rest of the model (trace.h).
#pragma once

#include <cstdint>
#include <vector>

#include "model/columns.h"

namespace strata::model {

using StringId = uint32_t;

// What a thread was doing over an interval.
enum class ThreadState : uint8_t {
  kRunning,    // on a CPU
  kRunnable,   // off CPU although runnable: preempted, or not yet given a CPU after a wakeup or creation
  kSleeping,   // blocked, interruptible (S): waiting for an event (I/O readiness, a lock, a timer)
  kDiskSleep,  // blocked, uninterruptible (D): usually disk I/O or a page fault
  kBlocked,    // blocked, S or D unknown (the kernel's sleep state needs root or CAP_PERFMON)
  kStopped,    // stopped or traced (T, t)
  kUnknown,    // before the first scheduling event of a thread that existed already
};
const char* ThreadStateName(ThreadState s);
inline bool IsOnCpu(ThreadState s) { return s == ThreadState::kRunning; }

// Intervals of each thread's scheduling state. Sorted by (track, ts); the
// intervals of one track do not overlap. Built from context-switch records,
// refined by sched_switch (sleep state) and sched_wakeup (waker).
#define STRATA_THREAD_STATE_COLUMNS(X)                                                      \
  X(int64_t, ts)                                                                             \
  X(int64_t, dur)                                                                            \
  X(uint32_t, track)                                                                         \
  X(ThreadState, state)                                                                      \
  X(int16_t, cpu)      /* where it ran (running) or which CPU it left (off CPU); -1 unknown */ \
  X(int32_t, syscall)  /* off CPU inside a system call: its SyscallTable row; kNone otherwise */ \
  X(int32_t, waker)    /* off CPU: the track of the thread that woke it (when traced); kNone */ \
  X(int32_t, callsite) /* blocked: the user stack it blocked in (CallsiteTable row); kNone */
struct ThreadStateTable {
  STRATA_COLUMNS(STRATA_THREAD_STATE_COLUMNS)
  size_t size() const { return ts.size(); }
  uint32_t Add(int64_t t, int64_t d, uint32_t trk, ThreadState s, int16_t c) {
    ts.push_back(t);
    dur.push_back(d);
    track.push_back(trk);
    state.push_back(s);
    cpu.push_back(c);
    syscall.push_back(-1);
    waker.push_back(-1);
    callsite.push_back(-1);
    return static_cast<uint32_t>(ts.size() - 1);
  }
};

// System calls (entry to exit) of traced threads. Sorted by (track, ts).
// ret: the return value (-errno on failure).
// returned: 0: never returned (exit, exit_group, execve that replaced the image,
// or still blocked at the end of the trace); dur then runs to that point.
// 1: returned. 2: kernel records were lost between its entry and its exit,
// which cannot be paired: duration unknown (dur 0), no ret.
#define STRATA_SYSCALL_COLUMNS(X)                                                           \
  X(int64_t, ts) X(int64_t, dur) X(uint32_t, track) X(StringId, name) X(uint32_t, nr) X(int64_t, ret) \
  X(uint8_t, returned)
struct SyscallTable {
  STRATA_COLUMNS(STRATA_SYSCALL_COLUMNS)
  size_t size() const { return ts.size(); }
};

enum class FrameKind : uint8_t { kNative, kPython, kKernel, kUnknown };
const char* FrameKindName(FrameKind k);

// Code locations of sampled stacks.
//
// function: demangled C/C++ name, Python qualified name, kernel symbol.
// module: library or executable base name; the .py file for Python frames.
// pc: native: the (return) address in the process; Python: the function's
// first line (co_firstlineno). line: Python: the line being executed; 0 otherwise.
#define STRATA_FRAME_COLUMNS(X) \
  X(StringId, function) X(StringId, module) X(FrameKind, kind) X(uint64_t, pc) X(uint32_t, line)
struct FrameTable {
  STRATA_COLUMNS(STRATA_FRAME_COLUMNS)
  size_t size() const { return function.size(); }
};

// Stacks as a prefix tree: a callsite is a frame called from its parent
// callsite (kNone at the outermost frame). A parent's row precedes its children's.
#define STRATA_CALLSITE_COLUMNS(X) \
  X(int32_t, parent) X(uint32_t, frame) X(uint16_t, depth) /* 0 at the outermost frame */
struct CallsiteTable {
  STRATA_COLUMNS(STRATA_CALLSITE_COLUMNS)
  size_t size() const { return parent.size(); }
};

// CPU samples (cpu-clock) of traced threads. Sorted by (track, ts).
#define STRATA_CPU_SAMPLE_COLUMNS(X) \
  X(int64_t, ts) X(uint32_t, track) X(int16_t, cpu) \
  X(int32_t, callsite) /* the innermost frame's callsite; kNone when the stack is unknown */
struct CpuSampleTable {
  STRATA_COLUMNS(STRATA_CPU_SAMPLE_COLUMNS)
  size_t size() const { return ts.size(); }
};

#define STRATA_PAGE_FAULT_COLUMNS(X) \
  X(int64_t, ts) X(uint32_t, track) X(uint64_t, addr) X(int32_t, callsite) /* the faulting instruction */
struct PageFaultTable {
  STRATA_COLUMNS(STRATA_PAGE_FAULT_COLUMNS)
  size_t size() const { return ts.size(); }
};

// Block requests issued by traced threads (issue only: completions happen in
// interrupt context, outside any traced task).
#define STRATA_BLOCK_IO_COLUMNS(X) \
  X(int64_t, ts) X(uint32_t, track) X(uint32_t, dev) X(uint64_t, sector) X(uint32_t, bytes) \
  X(StringId, rwbs) /* "R", "W", "WS", "RA", ... */
struct BlockIoTable {
  STRATA_COLUMNS(STRATA_BLOCK_IO_COLUMNS)
  size_t size() const { return ts.size(); }
};

}  // namespace strata::model

// OS-level tables of the analysis model: scheduling states, system calls, CPU
// samples with their stacks, page faults and block I/O of traced threads.
// Filled by importers/strata/os_events.cc from the supervisor's cpu streams;
// read by analysis/os.h. Columnar like the rest of the model (trace.h).
#pragma once

#include <cstdint>
#include <vector>

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
struct ThreadStateTable {
  std::vector<int64_t> ts;
  std::vector<int64_t> dur;
  std::vector<uint32_t> track;
  std::vector<ThreadState> state;
  std::vector<int16_t> cpu;      // where it ran (running) or which CPU it left (off CPU); -1 unknown
  std::vector<int32_t> syscall;  // off CPU inside a system call: its SyscallTable row; kNone otherwise
  std::vector<int32_t> waker;    // off CPU: the track of the thread that woke it (when traced); kNone
  std::vector<int32_t> callsite; // blocked: the user stack it blocked in (CallsiteTable row); kNone
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
struct SyscallTable {
  std::vector<int64_t> ts;
  std::vector<int64_t> dur;
  std::vector<uint32_t> track;
  std::vector<StringId> name;
  std::vector<uint32_t> nr;
  std::vector<int64_t> ret;       // the return value (-errno on failure)
  std::vector<uint8_t> returned;  // 0: never returned (exit, exit_group, execve that replaced the image,
                                  // or still blocked at the end of the trace); dur then runs to that point.
                                  // 1: returned. 2: kernel records were lost between its entry and its
                                  // exit, which cannot be paired: duration unknown (dur 0), no ret
  size_t size() const { return ts.size(); }
};

enum class FrameKind : uint8_t { kNative, kPython, kKernel, kUnknown };
const char* FrameKindName(FrameKind k);

// Code locations of sampled stacks.
struct FrameTable {
  std::vector<StringId> function;  // demangled C/C++ name, Python qualified name, kernel symbol
  std::vector<StringId> module;    // library or executable base name; the .py file for Python frames
  std::vector<FrameKind> kind;
  std::vector<uint64_t> pc;        // native: the (return) address in the process; Python: the function's
                                   // first line (co_firstlineno)
  std::vector<uint32_t> line;      // Python: the line being executed; 0 otherwise
  size_t size() const { return function.size(); }
};

// Stacks as a prefix tree: a callsite is a frame called from its parent
// callsite (kNone at the outermost frame). A parent's row precedes its children's.
struct CallsiteTable {
  std::vector<int32_t> parent;
  std::vector<uint32_t> frame;
  std::vector<uint16_t> depth;  // 0 at the outermost frame
  size_t size() const { return parent.size(); }
};

// CPU samples (cpu-clock) of traced threads. Sorted by (track, ts).
struct CpuSampleTable {
  std::vector<int64_t> ts;
  std::vector<uint32_t> track;
  std::vector<int16_t> cpu;
  std::vector<int32_t> callsite;  // the innermost frame's callsite; kNone when the stack is unknown
  size_t size() const { return ts.size(); }
};

struct PageFaultTable {
  std::vector<int64_t> ts;
  std::vector<uint32_t> track;
  std::vector<uint64_t> addr;
  std::vector<int32_t> callsite;  // the faulting instruction
  size_t size() const { return ts.size(); }
};

// Block requests issued by traced threads (issue only: completions happen in
// interrupt context, outside any traced task).
struct BlockIoTable {
  std::vector<int64_t> ts;
  std::vector<uint32_t> track;
  std::vector<uint32_t> dev;
  std::vector<uint64_t> sector;
  std::vector<uint32_t> bytes;
  std::vector<StringId> rwbs;  // "R", "W", "WS", "RA", ...
  size_t size() const { return ts.size(); }
};

}  // namespace strata::model

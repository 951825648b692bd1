// Event classes of the OS level (cpu stream class): written by the `strata record`
// supervisor from perf_event rings and /proc, decoded by importers/strata/os_events.cc.
//
// One cpu stream per CPU ring (context cpu_id = the CPU), plus one stream with
// cpu_id = kSupervisorCpuId for what the supervisor samples itself (/proc counters).
// Every event names the process and thread it is about, because a CPU's ring
// interleaves all traced threads that ran there.
//
// Stacks are interned by the writer so that a sample costs 12 bytes on disk:
//   frame    {id, kind, pc, function, module, line}   one per distinct (address space, pc)
//   callsite {id, parent, frame}                      a prefix tree, root = outermost frame
//   cpu_sample {pid, tid, stack}                      stack = the leaf callsite
// Definitions may appear in any cpu stream and after their first use (symbols
// are resolved once a batch of samples has been read); the importer resolves
// them after reading every stream. Callsite and frame id 0 mean "none".
#pragma once

#include <cstdint>

namespace strata::format {

inline constexpr uint32_t kSupervisorCpuId = 0xFFFFFFFFu;

// Ids within the cpu stream class (0..63). 0..30 get the compact header, so the
// per-syscall and per-switch events come first.
enum CpuEvent : uint32_t {
  kSwitchOut = 0,      // {u32 pid, u32 tid, u8 preempted}: PERF_RECORD_SWITCH, task leaves the CPU
  kSwitchIn = 1,       // {u32 pid, u32 tid}
  kSysEnter = 2,       // {u32 pid, u32 tid, u32 nr}
  kSysExit = 3,        // {u32 pid, u32 tid, u32 nr, i64 ret}
  kSchedSwitch = 4,    // {u32 pid, u32 tid, u64 prev_state, u32 next_tid, u32 stack}: tracepoint, prev = tid;
                       //   stack = the user stack the thread blocked in (0: none)
  kSchedWakeup = 5,    // {u32 waker_pid, u32 waker_tid, u32 tid, u32 target_cpu}
  kCpuSample = 6,      // {u32 pid, u32 tid, u32 stack}: stack = the leaf callsite id
  kPageFault = 7,      // {u32 pid, u32 tid, u64 addr, u32 stack}
  kBlockIssue = 8,     // {u32 pid, u32 tid, u32 dev, u64 sector, u32 bytes, string rwbs}
  kTaskNew = 9,        // {u32 pid, u32 ppid, u32 tid, u32 ptid}: PERF_RECORD_FORK (threads too)
  kTaskExit = 10,      // {u32 pid, u32 ppid, u32 tid, u32 ptid}
  kComm = 11,          // {u32 pid, u32 tid, u8 exec, string comm}
  kMmap = 12,          // {u32 pid, u32 tid, u64 start, u64 len, u64 pgoff, string build_id, string path}
  kFrame = 13,         // {u32 id, u8 kind, u64 pc, string function, string module, u32 line}; Python
                       //   frames: pc = the function's first line, line = the line being executed
  kCallsite = 14,      // {u32 id, u32 parent, u32 frame}
  kSyscallName = 15,   // {u32 nr, string name}
  kLost = 16,          // {u64 lost}: the kernel dropped this many records on this CPU (exact)
  kThreadStat = 17,    // {u32 pid, u32 tid, u64 utime_ns, u64 stime_ns, u64 vol_cs, u64 invol_cs, u32 cpu}
  kProcessStat = 18,   // {u32 pid, u64 rss_bytes, u64 vm_bytes, u64 rchar, u64 wchar, u64 read_bytes,
                       //  u64 write_bytes, u64 minflt, u64 majflt, u32 threads}
};

// kFrame.kind
enum FrameKind : uint8_t { kFrameNative = 0, kFramePython = 1, kFrameKernel = 2, kFrameUnknown = 3 };

}  // namespace strata::format

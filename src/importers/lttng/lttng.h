// Importer for LTTng traces (CTF 1.8 as LTTng 2.x writes them), read through
// libbabeltrace2's source.ctf.fs and flt.utils.muxer components.
//
// `path` is an LTTng trace directory (one with a `metadata` file and its
// stream files) or a session's output holding several (kernel/ and
// ust/uid/<uid>/64-bit/ ...): every trace under it is loaded into one model,
// in time order across them.
//
// What goes where in the model:
//   kernel domain
//     sched_switch                  -> ThreadStateTable: on-CPU intervals, and
//                                      off-CPU ones whose state comes from
//                                      prev_state (0: preempted, runnable;
//                                      S, D, T: blocked), as strata's own OS
//                                      level builds them
//     sched_waking / sched_wakeup   -> the waker of the off-CPU interval
//     sched_process_fork/exec/exit,
//     lttng_statedump_process_state -> processes and threads (pid, ppid,
//                                      names); threads without any of these
//                                      are their own process (pid = tid)
//     syscall_entry_X/syscall_exit_X-> SyscallTable rows named X, paired per
//                                      thread (nr is 0: LTTng names calls, it
//                                      does not number them)
//     irq_handler_entry/exit,
//     irq_softirq_entry/exit        -> kOther slices on the CPU's track
//                                      ("irq:<name>", "softirq:<vector>")
//     any other kernel event        -> an instant on the CPU's track
//   Kernel events carry no thread: each is the CPU's current thread's, as
//   the last sched_switch on that CPU says (or the tid/pid contexts when the
//   session added them).
//   user-space domain (threads from the vpid/vtid contexts)
//     lttng_ust_cyg_profile(_fast):func_entry/func_exit
//                                   -> kSpan slices named by the address, as
//                                      "module+0xoffset" when the statedump's
//                                      bin_info / dlopen events map it
//     lttng_ust_tracef:event, lttng_ust_tracelog:*
//                                   -> instants named by the message
//     provider:X_entry / provider:X_exit
//                                   -> a kSpan slice "provider:X" with the
//                                      entry's fields as args
//     any other tracepoint          -> a zero-length kOther slice named
//                                      "provider:event", its fields as args
//   discarded events / packets      -> Trace::events_lost, Track::lost of the
//                                      CPU's track (kernel), and a warning
//                                      saying how many, in which stream, CPU and
//                                      time range; OS intervals and system calls
//                                      across such a gap are unknown
// Time: babeltrace2's nanoseconds from the clock's origin (LTTng: the Unix
// epoch), so Trace::clock_offset_ns is 0.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "importers/load_options.h"
#include "model/trace.h"

namespace strata::importers {

// Whether this build reads LTTng traces (it was built with libbabeltrace2).
bool LttngImportAvailable();

// True when `dir` is, or holds (a few levels down), a CTF trace whose metadata
// says LTTng wrote it. strata's own traces (ctf/metadata, tracer "strata") are not.
bool IsLttngTraceDir(const std::string& dir);

// The trace directories (those with a `metadata` file) at or under `dir`, sorted.
std::vector<std::string> FindCtfTraceDirs(const std::string& dir);

StatusOr<model::Trace> LoadLttngTrace(const std::string& path, const LoadOptions& opt = {});

}  // namespace strata::importers

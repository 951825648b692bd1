// What the LTTng reader (lttng_reader.cc) keeps of each babeltrace2 message,
// for the replay (lttng_replay.cc) to build the model from. The reader runs
// the babeltrace2 graph; the replay never sees a babeltrace2 type.
//
// Kernel events name threads by tid only, and which process a tid is in is
// learned along the way (fork, statedump), sometimes after its first events:
// so every event is kept first, and the model built once all are known.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::importers::lttng {

enum class Ev : uint8_t {
  // kernel
  kSwitch,        // a prev_tid, b next_tid, c prev_state; s1 prev_comm, s2 next_comm
  kWakeup,        // a woken tid; created: c = 1 (sched_wakeup_new)
  kFork,          // a parent pid, b child tid, c child pid; s1 child comm
  kExec,          // a tid; s1 filename
  kExit,          // a tid
  kStatedump,     // a tid, b pid, c ppid; s1 name
  kSysEntry,      // a nr (syscall_entry_unknown's id, else 0); s1 call name
  kSysExit,       // a nr; b ret; s1 call name
  kIrqEntry,      // a irq; s1 "irq:<name>"
  kIrqExit,       // a irq
  kSoftirqEntry,  // a vector; s1 "softirq:<name>"
  kSoftirqExit,   // a vector
  kKernelOther,   // s1 event name
  // user space
  kFuncEntry,     // a address
  kFuncExit,      // a address
  kBinInfo,       // a base address, b size; s1 path (statedump bin_info, dlopen)
  kMessage,       // s1 the message (tracef, tracelog)
  kUserEntry,     // s1 "provider:X" of provider:X_entry; args
  kUserExit,      // s1 "provider:X" of provider:X_exit
  kUserPoint,     // s1 event name; args
};

struct Event {
  int64_t ts = 0;
  int64_t a = 0, b = 0, c = 0;
  int32_t pid = -1, tid = -1;  // from the event's context (pid/tid, vpid/vtid); -1 when it has none
  int16_t cpu = -1;            // the packet's cpu_id; -1 when unknown
  Ev type = Ev::kKernelOther;
  model::StringId s1 = 0, s2 = 0;
  uint32_t args = 0, nargs = 0;  // rows [args, args + nargs) of LttngEvents' arg columns
};

// A discarded-events or discarded-packets message: the tracer's ring was full.
struct Loss {
  int64_t from = 0, to = 0;  // the time range it covers (ns from origin); 0 when the stream has no clock
  uint64_t count = 0;        // events or packets; 0 when the tracer did not say how many
  bool packets = false;
  bool kernel = false;
  uint32_t stream = 0;       // LttngEvents::streams row
};

struct StreamDesc {
  std::string trace;  // the trace's name ("host/kernel") or its directory
  std::string name;   // the stream file
  int16_t cpu = -1;
  bool kernel = false;
};

struct LttngEvents {
  std::vector<Event> events;
  std::vector<model::StringId> arg_key, arg_str;
  std::vector<double> arg_num;  // NaN for string values
  std::vector<Loss> losses;
  std::vector<StreamDesc> streams;
  uint64_t total = 0;  // every event message, mapped or not
  std::string hostname;
  std::vector<std::string> traces;  // names of the traces read
};

}  // namespace strata::importers::lttng

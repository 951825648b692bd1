// The OS level's events as the strata importer collects them from the cpu
// streams (os_events.cc), and their replay into the model's OS tables
// (os_replay.cc): the two halves of importing format/schema_os.h.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "importers/strata/decoder.h"

namespace strata::importers::strata_ctf {

enum class Ev : uint8_t {
  kTaskNew,  // first so that, at equal times, a thread exists before its events
  kComm,
  kSchedSwitch,
  kSwitchOut,
  kSwitchIn,
  kWakeup,
  kSysEnter,
  kSysExit,
  kSample,
  kFault,
  kBlock,
  kTaskExit,
  kLost,  // the kernel dropped records on this CPU (a: how many)
};

struct OsEvent {
  int64_t ts;
  uint32_t seq;
  Ev type;
  int16_t cpu;
  uint32_t pid, tid;
  uint64_t a;  // switch: preempted; sched_switch: prev_state; wakeup: wakee tid; sys: nr; sample/fault: stack;
               // task: ppid; block: sector; comm: index into comms
  int64_t b;   // sys_exit: ret; fault: addr; wakeup: waker pid; block: (dev << 32) | bytes
  uint32_t c;  // block: rwbs string id
};

struct FrameDef {
  uint8_t kind;
  uint64_t pc;
  model::StringId function, module;
  uint32_t line;
};

struct StatSample {
  int64_t ts;
  bool thread;
  uint32_t pid, tid;
  uint64_t v[9];
};

struct OsState {
  std::vector<OsEvent> events;
  std::vector<std::string> comms;
  std::unordered_map<uint32_t, FrameDef> frames;
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> callsites;  // id -> (parent, frame)
  std::unordered_map<uint32_t, model::StringId> syscall_names;
  std::vector<StatSample> stats;
  uint32_t seq = 0;
  uint64_t lost = 0;
  // Where records are missing: from the last event a CPU's stream kept before
  // a loss to the loss record (written once the ring had room again).
  struct LossWindow {
    int16_t cpu;
    int64_t from, to;
  };
  std::vector<LossWindow> loss_windows;
  std::unordered_map<int16_t, int64_t> last_ts;  // per CPU, while decoding
};

// Builds on/off-CPU intervals, system calls, samples, stacks and /proc counters
// from `st`'s events (in time order per thread), into ctx's trace.
void ReplayOs(LoadContext& ctx, OsState& st);

}  // namespace strata::importers::strata_ctf

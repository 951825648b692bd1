// What the three writers export beyond the model's tables as they are, derived
// once so that every format holds the same events:
//  - each track's timeline: its slices and, on thread tracks, its system calls,
//    in begin order, each in a lane: 0 for items that nest, 1.. for items that
//    overlap an earlier one without nesting (a timeline cannot stack those);
//  - flows: every arrow between two slices, once (launch -> device work,
//    forward op -> the backward op it created, the source's own flows);
//  - what was not recorded, the exit status and the host kernel, from the manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::exporters {

struct TimelineItem {
  int64_t ts = 0;
  int64_t dur = 0;
  uint32_t row = 0;      // slice row, or syscall row when `syscall`
  uint32_t lane = 0;
  bool syscall = false;
  int64_t end() const { return ts + dur; }
};

enum class FlowKind : uint8_t {
  kLaunch,    // a runtime/driver API call -> the device work it launched
  kBackward,  // a forward op -> the backward op (autograd node) it created
  kSource,    // a flow the source recorded (strata flow events, Kineto's fwdbwd/ac2g)
};
const char* FlowKindName(FlowKind k);

struct Flow {
  uint32_t from = 0, to = 0;  // slice rows
  FlowKind kind = FlowKind::kSource;
};

// A collector's last word in one process, when it was not "ok".
struct NotRecorded {
  std::string process;    // "pid 123 (python3)", "supervisor"
  std::string collector;  // "torch", "os.sched", ...
  std::string state;      // "partial", "unavailable", ...
  std::string detail;
};

struct ExportView {
  std::vector<std::vector<TimelineItem>> timeline;  // per track
  std::vector<uint32_t> lanes;                      // per track, at least 1
  std::vector<Flow> flows;                          // one per (from, to)
  std::vector<NotRecorded> not_recorded;
  std::string command;        // the recorded command line ("" unknown)
  std::string exit_status;    // the manifest's exit_status as JSON text ("" unknown)
  std::string kernel;         // "Linux 6.1.0-18-amd64" ("" unknown)
  std::string machine;        // "x86_64"
};

ExportView BuildView(const model::Trace& t);

// Lane of each item of one track's timeline (sorted by begin, longest first):
// an item goes to the first lane where, once finished items are popped, it
// fits inside the open one. Returns the number of lanes used.
uint32_t AssignLanes(std::vector<TimelineItem>& items);

// "pid 123 (python3)", "device 0 (...)", "os" for CPU tracks' kNoProcess.
std::string ProcessName(const model::Trace& t, uint32_t process);

}  // namespace strata::exporters

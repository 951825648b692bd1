// What one member of a job (a host's or a rank's trace) contributes to the
// analyses across ranks, read where the trace is: its clock, its ranks, its
// collectives and messages (local times), its ranks' steps and their parts,
// and its own report. A few kilobytes per thousand collectives, against the
// trace's gigabytes: what crosses the network when a job is analysed on a
// cluster (`strata summarize` on a worker, job/combine.h on the client).
//
//   {"format": "strata-member-summary", "version": 1, "path": "node1/trace",
//    "clock": {"key": "node1 <boot> <time ns>", "host": "node1", "wall_offset_ns": ...},
//    "ranks": [0, 1], "events": 1234567,
//    "comms": {"ranks": [{"rank": 0, "pid": 41, "label": "rank 0 (pid 41)", "steps": 50, ...}],
//              "names": ["gloo:all_reduce", ...],
//              "rows": {"rank": [...], "name": [...], "seq": [...], "ts": [...], "dur": [...],
//                       "bytes": [...], "tensors": [...]}},
//    "messages": {"sends": [[from, to, order, ts], ...], "receives": [...]},
//    "report": {...the member's JSON report...}}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/clock_sync.h"
#include "analysis/comms.h"
#include "base/status.h"
#include "model/trace.h"

namespace strata::job {

struct MemberSummary {
  std::string path;             // as the job names it
  std::string clock_key;        // what tells its clock apart (hostname, boot, time namespace)
  std::string host;
  int64_t wall_offset_ns = 0;   // its clock -> wall time (0: not known)
  std::vector<int64_t> ranks;   // ascending
  uint64_t events = 0;          // rows of its model
  analysis::CommsInput comms;   // local times
  std::vector<analysis::MessageEnd> sends, receives;  // local times; `clock` unset
  nlohmann::json report;        // its own report (JSON), or null
};

// The summary of `t`, read from `path`; `report` is its JSON report (or null).
MemberSummary Summarize(const model::Trace& t, const std::string& path, nlohmann::json report);

// Its text, and back (an error names what is wrong in it).
std::string SummaryJson(const MemberSummary& s);
StatusOr<MemberSummary> ParseSummary(std::string_view text);

// The clock a trace was recorded on (its manifest's hostname, boot and time
// namespace; a clock of its own where the manifest does not say), and its host.
std::pair<std::string, std::string> ClockKey(const model::Trace& t, const std::string& path);

}  // namespace strata::job

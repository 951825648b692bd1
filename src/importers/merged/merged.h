// A merged trace: the traces of one job's ranks and hosts on one time base
// (`strata merge`). A directory holding `strata-merge.json`, which names each
// member trace (any format strata reads; relative paths from the directory)
// and the clock it was recorded on, with that clock's map onto the reference
// clock and how well it is known. Opening it opens every member and appends
// them (model/append.h) with their clock's map applied: one model, read by
// every analysis, export and view like any other trace.
//
//   {"format": "strata-merge", "version": 1,
//    "clocks": [{"host": "node1", "reference": true, "offset_ns": 0, "drift": 0, "center_ns": 0,
//                "method": "reference", "uncertainty_ns": 0, ...}, ...],
//    "members": [{"path": "../node1", "clock": 0, "host": "node1", "ranks": [0, 1]}, ...]}
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "importers/load_options.h"
#include "model/append.h"
#include "model/trace.h"

namespace strata::importers {

inline constexpr char kMergeFile[] = "strata-merge.json";

struct MergeClock {
  std::string host;            // "node1" (the hostname the members' manifests give, or the member's name)
  std::string key;             // what told the clocks apart (hostname, boot, time namespace)
  bool reference = false;
  model::ClockMap map;         // this clock -> the reference's
  std::string method;          // "reference", "communication", "wall clock", ...
  int64_t uncertainty_ns = -1; // half the width of the offsets communication allows; -1 unknown
  int64_t wall_offset_ns = 0;  // the offset the wall clocks gave
  uint64_t constraints = 0;
  int64_t via = -1;
  int64_t violation_ns = 0;
  uint64_t dropped = 0;         // bounds left out as from mismatched works
};

struct MergeMember {
  std::string path;  // as written: relative to the merged directory, or absolute
  uint32_t clock = 0;
  std::string host;
  std::vector<int64_t> ranks;
};

struct MergePlan {
  std::vector<MergeClock> clocks;
  std::vector<MergeMember> members;
};

bool IsMergedTraceDir(const std::string& path);
StatusOr<MergePlan> ReadMergePlan(const std::string& dir);
// The plan's text (parsing it back gives the same plan), and writing it into `dir`.
std::string MergePlanJson(const MergePlan& plan);
// One clock as the plan (and the job report) writes it.
nlohmann::json MergeClockJson(const MergeClock& c);
StatusOr<MergePlan> ParseMergePlan(const std::string& text);
Status WriteMergePlan(const std::string& dir, const MergePlan& plan);
// A member's path as the merged directory `dir` names it, resolved.
std::string MemberPath(const std::string& dir, const MergeMember& m);

// Opens every member with `open` (the index layer passes its own, so that
// members are read through their indexes) and appends them in order.
using OpenMember = std::function<StatusOr<model::Trace>(const std::string& path)>;
StatusOr<model::Trace> LoadMergedTrace(const std::string& dir, const OpenMember& open);

}  // namespace strata::importers

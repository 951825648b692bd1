// A job's analysis from its members' summaries (job/summary.h), on the
// client: the members' clocks put on one time base from the wall clocks and
// what their collectives and messages bound (analysis/clock_sync.h, as
// `strata merge` does), then the analyses across ranks (analysis/comms.h)
// and their findings. Memory and time in the summaries' size, not the traces'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/clock_sync.h"
#include "analysis/comms.h"
#include "analysis/findings.h"
#include "importers/merged/merged.h"
#include "job/summary.h"

namespace strata::job {

struct JobClocks {
  std::vector<importers::MergeClock> clocks;  // as strata-merge.json has them
  std::vector<uint32_t> clock_of_member;
  std::vector<bool> wall_known;               // per clock: its member paired it with a wall clock
  uint32_t reference = 0;                     // the clock of the lowest rank
  std::vector<analysis::HappenedBefore> pairs;
  size_t collective_bounds = 0;               // pairs[0, this) are from collectives, the rest from messages
  analysis::OrderCheck check;                 // of every pair after the maps
};
JobClocks SynchronizeMembers(const std::vector<MemberSummary>& members);

// How far apart two hosts' wall clocks may be taken to be where nothing
// better bounds them (NTP-disciplined hosts on one network: a few ms).
inline constexpr int64_t kWallClockErrorNs = 10'000'000;

struct JobAnalysis {
  JobClocks clocks;
  analysis::CommsSummary comms;           // on the reference clock
  std::vector<analysis::Finding> findings;  // straggler, communication
  // Why no straggler is named where one rank arrived last at most
  // collectives: its clock is not known well enough against the others'
  // (its margin is inside their uncertainty). Empty otherwise.
  std::string straggler_withheld;
};
JobAnalysis AnalyzeJob(const std::vector<MemberSummary>& members);

}  // namespace strata::job

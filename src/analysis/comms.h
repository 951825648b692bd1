// Communication across ranks: the collectives each process handed to its
// backend (model::CollectiveTable), matched across processes (a rank's n-th
// work of one name is every other rank's n-th of that name: ranks issue
// collectives in one order, and this holds where a backend's worker threads
// begin neighbours in either order), and what that says:
//  - skew: how far apart the ranks entered each collective; a rank that enters
//    after the others makes them wait (its lateness is their wait);
//  - per rank: steps, collectives, bytes, time with a collective in flight,
//    time waited for the others, how often it was the last to arrive and the
//    wait that cost the others;
//  - the straggler: the rank that arrives last at most collectives, with the
//    phase of its steps that makes it late (its step breakdown against the
//    other ranks', the time spent waiting in collectives set apart);
//  - collectives by kind and bandwidth by message size.
// Pure functions over the model; one pass over the collectives, sorted once.
// In two halves, so that a job's ranks can be analysed where their traces are
// and only the small part crosses the network (job/): what each rank's own
// trace says (CommsInputOf: its steps, their parts, its collectives' rows)
// and what the ranks say together (CombineComms: matching, waits, the
// straggler).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/findings.h"
#include "analysis/step_breakdown.h"
#include "model/append.h"
#include "model/trace.h"

namespace strata::analysis {

struct RankComms {
  uint32_t process = 0;     // in the trace it came from (in a CommsInput: the index of the rank's own input)
  int64_t rank = -1;        // the launcher's rank (-1: not known; `label` names the pid)
  int64_t pid = 0;
  std::string label;        // "rank 2 (pid 1234)"
  size_t steps = 0;         // its steps (kStep slices of its threads)
  int64_t step_p50 = 0;     // ns, warm-up step left out
  uint64_t collectives = 0;
  int64_t bytes = 0;
  int64_t in_flight_ns = 0;    // time with a collective of its in flight (union)
  int64_t waited_ns = 0;       // time between its arrival and the last rank's, at matched collectives (union)
  uint64_t last_arrivals = 0;  // matched collectives it entered last
  int64_t late_ns = 0;         // time between the second-to-last arrival and its own, where it was last (union)
  // Its counted steps' time by part (per step, ns), with the time its thread
  // waited while a collective of its was in flight taken out of idle/sync and
  // kept in `comm_wait`.
  StepParts parts{};
  int64_t comm_wait = 0;
  size_t counted_steps = 0;
};

struct CollectiveKind {
  std::string name;  // the backend's title: "gloo:all_reduce"
  uint64_t count = 0;      // rows (every rank's)
  int64_t bytes = 0;
  int64_t total_ns = 0;    // begin to completion, summed
  int64_t skew_p50 = 0, skew_max = 0;  // of the matched instances
};

struct SizeBucket {
  int64_t min_bytes = 0, max_bytes = 0;  // [min, max)
  uint64_t count = 0;
  int64_t bytes = 0, ns = 0;  // begin to completion
};

struct CommsSummary {
  std::vector<RankComms> ranks;       // by rank, then pid
  std::vector<CollectiveKind> kinds;  // most time first
  std::vector<SizeBucket> sizes;      // powers of 4, ascending
  uint64_t instances = 0;   // distinct collectives (name, occurrence)
  uint64_t matched = 0;     // entered by every rank
  uint64_t partial = 0;     // by some ranks only
  uint64_t mismatched = 0;  // sequence numbers whose works' names differ across ranks (begun in another order)
  // How instances were found: "occurrence" (a rank's n-th of a name is every
  // other's n-th), or "time" (where more than a fifth of the synchronizing
  // instances so found had their ranks never all inside at once: traces of
  // different subsets of the collectives, as sampled ones are; `apart` of
  // `checked` were).
  std::string matched_by = "occurrence";
  uint64_t apart = 0, checked = 0;
  // The straggler (index into ranks, -1: none), the part of its steps that
  // makes it late, and by how much (per step, against the others' median).
  int straggler = -1;
  std::string phase;        // StepPartName, or "" when no part stands out
  int phase_part = -1;      // ...as a StepPart
  int64_t phase_excess_ns = 0;
  int64_t late_per_step_ns = 0;  // what the others wait for it per step
  double late_share = 0;         // of the matched collectives, those it entered last
  bool empty() const { return ranks.size() < 2; }
};

// What the ranks' own traces say: per rank (a process with collectives) its
// steps, their parts, its collectives' count, bytes and time in flight (the
// fields CombineComms does not set), and every collective row, whose
// `process` is the rank's index in `ranks`; times on the trace's clock.
struct CommsInput {
  std::vector<RankComms> ranks;
  model::CollectiveTable collectives;  // track and end_track unused
  model::StringPool names;             // of collectives.name
  // How far apart the ranks' clocks may be (ns): an instance whose ranks were
  // never all inside at once by more than this was matched wrongly. -1: the
  // clocks are not known to agree; instances are matched by occurrence only.
  int64_t clock_tolerance_ns = 1'000'000;
};
CommsInput CommsInputOf(const model::Trace& t);
// Appends `more` (the input of another trace) to `in`, its times mapped onto
// `in`'s clock by `clock`.
void AppendCommsInput(CommsInput* in, const CommsInput& more, const model::ClockMap& clock = {});
// The analysis across ranks. Empty (fewer than two ranks) when the input has
// no collectives of two or more ranks.
CommsSummary CombineComms(const CommsInput& in);

// CombineComms(CommsInputOf(t)).
CommsSummary AnalyzeComms(const model::Trace& t);

// The findings the communication gives (rules_comms.cc): the straggler, and
// collectives every rank waits for where no rank is one (none where `out`
// already has a communication or straggler finding).
void StragglerFinding(const CommsSummary& s, std::vector<Finding>* out);
void ExposedCollectivesFinding(const CommsSummary& s, std::vector<Finding>* out);

}  // namespace strata::analysis

// Putting the clocks of many hosts on one time base, for `strata merge`.
//
// Each host (each boot, each time namespace) records on its own
// CLOCK_MONOTONIC. The wall clocks the manifests pair with it give a first
// offset, as good as the hosts' NTP (milliseconds apart at times). The
// communication between the hosts bounds the offsets much more tightly:
// whatever one host saw begin before another saw it end happened in that
// order, whatever the clocks say — a synchronizing collective (all-reduce,
// all-gather, barrier...) ends on every rank after every rank began it, and a
// receive ends after its send began (much tighter: the one-way latency).
//
// For one clock against the reference (clock = reference + offset + drift *
// (t - center)), every such pair bounds the offset at a given drift from one
// side. This is the convex-hull method of offline trace synchronization
// (Duda et al. 1987; Jezequel et al. 2012): only the vertices of the upper
// hull of the lower bounds and of the lower hull of the upper bounds matter;
// the offsets allowed at a drift form an interval whose width is concave in
// the drift. strata keeps no drift when offsets without one satisfy every
// bound (over a job's minutes, NTP-disciplined clocks drift less than loose
// bounds can tell), else takes the drift where the interval is widest; the
// offset is the middle of the interval, and half its width the residual
// uncertainty. Bounds that contradict each other at every drift come from
// works matched wrongly (ranks whose sampled traces kept different
// collectives): the wall clock is kept then, and the contradiction reported.
// Clocks with no
// communication with the reference are synchronized through those that have
// some (breadth first); clocks with none keep the wall-clock offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/append.h"
#include "model/trace.h"

namespace strata::analysis {

// The event at local time `before` on clock `a` happened before the event at
// local time `after` on clock `b`.
struct HappenedBefore {
  uint32_t a = 0, b = 0;
  int64_t before = 0, after = 0;
};

struct ClockSync {
  model::ClockMap map;          // local time -> the reference clock
  std::string method;           // "reference", "communication", "wall clock"
  int64_t uncertainty_ns = -1;  // half the width of the offsets the communication allows; -1: unbounded
  int64_t wall_error_ns = 0;    // how far the wall-clock offset was from the one found
  size_t constraints = 0;       // happened-before pairs that bounded it
  int64_t via = -1;             // the clock it was synchronized through, when not the reference
  int64_t violation_ns = 0;     // > 0: its constraints contradict each other by this much (a best fit is kept)
  size_t dropped = 0;           // contradicting bounds: those that disagree with the offset most others agree with
};

// wall[i]: clock i's offset to the reference by the wall clocks (wall[reference] = 0).
std::vector<ClockSync> SynchronizeClocks(size_t clocks, uint32_t reference, const std::vector<int64_t>& wall,
                                         const std::vector<HappenedBefore>& pairs);

// The pairs that matched synchronizing collectives give (collective_match.h):
// for each collective and each two clocks among its ranks, the last begin on
// one happened before the first end on the other. Times are each row's own
// clock's; clock_of_process[p] is the clock of c.process == p.
std::vector<HappenedBefore> CollectivePairs(const model::CollectiveTable& c, const model::StringPool& names,
                                            const std::vector<uint32_t>& clock_of_process);

// One end of a point-to-point message as its rank saw it: a send when it was
// issued (the torch.distributed.send/isend span's begin, which the Python hook
// records with the peer's rank: python/strata/_torch.py; MPI's mpi.send and
// mpi.isend spans, collectors/mpi), a receive when its data had arrived (its
// recv work's completion; a blocking recv's span end; an MPI_Irecv's row end,
// when its request completed).
struct MessageEnd {
  int64_t from = -1, to = -1;  // global ranks
  uint32_t clock = 0;
  int64_t order = 0;           // when it was issued (the n-th of a pair is the n-th issued)
  int64_t ts = 0;              // sent / received
};
void CollectMessages(const model::Trace& t, uint32_t clock, std::vector<MessageEnd>* sends,
                     std::vector<MessageEnd>* receives);
// Each (from, to)'s n-th send happened before its n-th receive ended (messages
// of one pair arrive in order), for the pairs on two clocks.
std::vector<HappenedBefore> MessagePairs(std::vector<MessageEnd> sends, std::vector<MessageEnd> receives);

// How many pairs the maps leave in the wrong order, and by how much at worst.
struct OrderCheck {
  size_t pairs = 0;
  size_t violated = 0;
  int64_t worst_ns = 0;
};
OrderCheck CheckOrder(const std::vector<HappenedBefore>& pairs, const std::vector<model::ClockMap>& maps);

}  // namespace strata::analysis

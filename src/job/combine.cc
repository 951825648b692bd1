#include "job/combine.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "base/units.h"

namespace strata::job {

JobClocks SynchronizeMembers(const std::vector<MemberSummary>& members) {
  JobClocks j;
  std::map<std::string, uint32_t> clock_of_key;
  std::vector<int64_t> clock_wall;  // each clock's wall-clock offset (add to its times for wall time)
  // Every member's collectives in one table (local times), for the bounds.
  analysis::CommsInput all;
  std::vector<uint32_t> clock_of_rank;
  std::vector<analysis::MessageEnd> sends, receives;
  int64_t best_rank = INT64_MAX;
  for (const MemberSummary& m : members) {
    auto [it, added] = clock_of_key.emplace(m.clock_key, static_cast<uint32_t>(j.clocks.size()));
    if (added) {
      importers::MergeClock c;
      c.host = m.host;
      c.key = m.clock_key;
      j.clocks.push_back(c);
      clock_wall.push_back(m.wall_offset_ns);
      j.wall_known.push_back(m.wall_offset_ns != 0);
    }
    const uint32_t clock = it->second;
    j.clock_of_member.push_back(clock);
    if (!m.ranks.empty() && m.ranks.front() < best_rank) best_rank = m.ranks.front(), j.reference = clock;
    clock_of_rank.resize(clock_of_rank.size() + m.comms.ranks.size(), clock);
    analysis::AppendCommsInput(&all, m.comms);
    for (analysis::MessageEnd e : m.sends) e.clock = clock, sends.push_back(e);
    for (analysis::MessageEnd e : m.receives) e.clock = clock, receives.push_back(e);
  }
  if (j.clocks.empty()) return j;
  // Offsets by the wall clocks (0 where a trace does not pair its clock with one).
  std::vector<int64_t> wall(j.clocks.size(), 0);
  for (size_t k = 0; k < wall.size(); ++k)
    if (j.wall_known[k] && j.wall_known[j.reference]) wall[k] = clock_wall[k] - clock_wall[j.reference];
  j.pairs = analysis::CollectivePairs(all.collectives, all.names, clock_of_rank);
  j.collective_bounds = j.pairs.size();
  std::vector<analysis::HappenedBefore> messages = analysis::MessagePairs(std::move(sends), std::move(receives));
  j.pairs.insert(j.pairs.end(), messages.begin(), messages.end());
  const std::vector<analysis::ClockSync> sync =
      analysis::SynchronizeClocks(j.clocks.size(), j.reference, wall, j.pairs);
  std::vector<model::ClockMap> maps;
  for (size_t k = 0; k < sync.size(); ++k) {
    importers::MergeClock& c = j.clocks[k];
    c.reference = k == j.reference;
    c.map = sync[k].map;
    c.method = sync[k].method;
    c.uncertainty_ns = sync[k].uncertainty_ns;
    c.wall_offset_ns = wall[k];
    c.constraints = sync[k].constraints;
    c.via = sync[k].via;
    c.violation_ns = sync[k].violation_ns;
    c.dropped = sync[k].dropped;
    maps.push_back(c.map);
  }
  j.check = analysis::CheckOrder(j.pairs, maps);
  return j;
}

JobAnalysis AnalyzeJob(const std::vector<MemberSummary>& members) {
  JobAnalysis a;
  a.clocks = SynchronizeMembers(members);
  // Every rank's input with its times on the reference clock.
  analysis::CommsInput all;
  for (size_t m = 0; m < members.size(); ++m) {
    analysis::AppendCommsInput(&all, members[m].comms, a.clocks.clocks[a.clocks.clock_of_member[m]].map);
  }
  // How well the ranks' clocks agree: the two worst clocks' uncertainties
  // (the wall clocks' assumed error where communication did not bound them).
  std::vector<bool> used(a.clocks.clocks.size(), false);
  for (size_t m = 0; m < members.size(); ++m)
    if (!members[m].comms.ranks.empty()) used[a.clocks.clock_of_member[m]] = true;
  std::vector<int64_t> unc;
  bool unknown = false;
  for (size_t k = 0; k < used.size(); ++k) {
    if (!used[k]) continue;
    const importers::MergeClock& c = a.clocks.clocks[k];
    if (c.uncertainty_ns >= 0) unc.push_back(c.uncertainty_ns);
    else if (a.clocks.wall_known[k] && a.clocks.wall_known[a.clocks.reference]) unc.push_back(kWallClockErrorNs);
    else unknown = true;
  }
  std::sort(unc.rbegin(), unc.rend());
  const int64_t bound = unc.size() >= 2 ? unc[0] + unc[1] : unc.empty() ? 0 : unc[0];
  const bool several = unc.size() + (unknown ? 1 : 0) >= 2;
  // Instances are checked against the clocks (matched by time where their
  // occurrences do not correspond), unless nothing says how far apart they are.
  all.clock_tolerance_ns = unknown ? -1 : std::max<int64_t>(1'000'000, bound);
  a.comms = analysis::CombineComms(all);
  // Who arrives last is measured across clocks: it holds only where they are
  // known better than the straggler's margin (its lateness per collective it
  // was last at).
  if (a.comms.straggler >= 0) {
    const analysis::RankComms& w = a.comms.ranks[static_cast<size_t>(a.comms.straggler)];
    const int64_t margin = w.late_ns / static_cast<int64_t>(std::max<uint64_t>(1, w.last_arrivals));
    if (several && (unknown || margin <= bound)) {
      a.straggler_withheld =
          unknown ? fmt::format("{} arrives last at {} of {} collectives, but the clocks of the hosts are not "
                                "synchronized (no communication bounds that agree, no wall clock): who waits for whom "
                                "cannot be told across them",
                                w.label, w.last_arrivals, a.comms.matched)
                  : fmt::format("{} arrives last at {} of {} collectives by {} each, within the clocks' uncertainty "
                                "({}): who waits for whom cannot be told across them",
                                w.label, w.last_arrivals, a.comms.matched, HumanDuration(static_cast<double>(margin)),
                                HumanDuration(static_cast<double>(bound)));
      a.comms.straggler = -1;
      a.comms.phase.clear();
      a.comms.phase_part = -1;
    }
  }
  analysis::StragglerFinding(a.comms, &a.findings);
  analysis::ExposedCollectivesFinding(a.comms, &a.findings);
  return a;
}

}  // namespace strata::job

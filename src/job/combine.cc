#include "job/combine.h"

#include <map>
#include <string>

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
  a.comms = analysis::CombineComms(all);
  analysis::StragglerFinding(a.comms, &a.findings);
  analysis::ExposedCollectivesFinding(a.comms, &a.findings);
  return a;
}

}  // namespace strata::job

// A job member's summary (job/summary.h) written and read back, bad ones
// refused with a reason; the job's analysis from summaries (job/combine.h)
// as the analysis of the same ranks in one model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/comms.h"
#include "job/combine.h"
#include "job/summary.h"

namespace strata {
namespace {

// Two ranks in one trace: rank 1 enters every all-reduce 3 ms after rank 0.
model::Trace TwoRanks(int64_t shift, int64_t first_rank) {
  model::Trace t;
  for (int64_t r = 0; r < 2; ++r) {
    model::Process p;
    p.pid = 100 + first_rank + r;
    p.rank = first_rank + r;
    t.processes.push_back(p);
  }
  const model::StringId ar = t.strings.Intern("gloo:all_reduce");
  for (uint32_t p = 0; p < 2; ++p)
    for (uint64_t k = 0; k < 20; ++k) {
      int64_t begin = shift + static_cast<int64_t>(k) * 10'000'000 + (p == 1 ? 3'000'000 : 0);
      int64_t end = shift + static_cast<int64_t>(k) * 10'000'000 + 3'500'000;
      t.collectives.process.push_back(p);
      t.collectives.name.push_back(ar);
      t.collectives.seq.push_back(k);
      t.collectives.ts.push_back(begin);
      t.collectives.dur.push_back(end - begin);
      t.collectives.track.push_back(0);
      t.collectives.end_track.push_back(0);
      t.collectives.bytes.push_back(4096);
      t.collectives.tensors.push_back(1);
    }
  t.manifest_json = R"({"host": {"hostname": "n1", "boot_id": "b", "time_namespace": "t"}})";
  return t;
}

TEST(JobSummary, RoundTripsAndRefusesBadOnes) {
  model::Trace t = TwoRanks(0, 0);
  job::MemberSummary s = job::Summarize(t, "n1/trace", nlohmann::json{{"findings", nlohmann::json::array()}});
  EXPECT_EQ(s.clock_key, "n1 b t");
  EXPECT_EQ(s.ranks, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(s.comms.ranks.size(), 2u);
  EXPECT_EQ(s.comms.collectives.size(), 40u);
  std::string text = job::SummaryJson(s);
  auto back = job::ParseSummary(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(job::SummaryJson(*back), text);
  EXPECT_EQ(back->comms.ranks[1].label, s.comms.ranks[1].label);

  auto refused = [&](const std::string& from, const std::string& to) {
    std::string bad = text;
    size_t at = bad.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return std::string();
    bad.replace(at, from.size(), to);
    auto r = job::ParseSummary(bad);
    EXPECT_FALSE(r.ok()) << "accepted with " << to;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(refused("strata-member-summary", "other").find("format"), std::string::npos);
  EXPECT_NE(refused("\"version\":1", "\"version\":9").find("version 9"), std::string::npos);
  EXPECT_NE(refused("\"rank\":[0,", "\"rank\":[7,").find("no rank"), std::string::npos);
  EXPECT_NE(refused("\"ts\":[0,", "\"ts\":[\"0\",").find("not integers"), std::string::npos);
  EXPECT_NE(refused("\"ts\":[0,", "\"ts\":[").find("unequal"), std::string::npos);
  EXPECT_NE(refused("\"ts\":[0,", "\"ts\":[4611686018427387904,").find("out of range"), std::string::npos);
  EXPECT_FALSE(job::ParseSummary(text.substr(0, text.size() / 2)).ok());
  EXPECT_FALSE(job::ParseSummary("").ok());
}

// One host's ranks 0-1 and another's 2-3 (its clock 7 s ahead, the wall
// clocks not knowing): the job's analysis finds the offset from the
// collectives, and its figures are those of the four ranks in one model.
TEST(JobSummary, TheJobFromSummariesIsTheJobInOneModel) {
  model::Trace a = TwoRanks(0, 0);
  model::Trace b = TwoRanks(7'000'000'000, 2);
  b.manifest_json = R"({"host": {"hostname": "n2", "boot_id": "c", "time_namespace": "t"}})";
  std::vector<job::MemberSummary> members;
  members.push_back(job::Summarize(a, "a", nullptr));
  members.push_back(job::Summarize(b, "b", nullptr));
  job::JobAnalysis j = job::AnalyzeJob(members);
  ASSERT_EQ(j.clocks.clocks.size(), 2u);
  EXPECT_EQ(j.clocks.clocks[1].method, "communication");
  // Every all-reduce ends at 3.5 ms on both; ranks 1 and 3 enter at 3 ms.
  EXPECT_NEAR(static_cast<double>(j.clocks.clocks[1].map.offset_ns), -7e9, 3.5e6);
  EXPECT_EQ(j.clocks.check.violated, 0u);
  ASSERT_EQ(j.comms.ranks.size(), 4u);
  EXPECT_EQ(j.comms.matched, 20u);
  EXPECT_EQ(j.comms.ranks[2].rank, 2);

  // The same four ranks in one model, on one clock.
  model::Trace one = TwoRanks(0, 0);
  model::Trace two = TwoRanks(0, 2);
  model::ClockMap id;
  model::Trace all;
  model::AppendTrace(&all, one, id, "a");
  model::AppendTrace(&all, two, id, "b");
  all.Finalize();
  analysis::CommsSummary direct = analysis::AnalyzeComms(all);
  ASSERT_EQ(direct.ranks.size(), 4u);
  EXPECT_EQ(direct.matched, j.comms.matched);
  EXPECT_EQ(direct.kinds.size(), j.comms.kinds.size());
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(direct.ranks[k].label, j.comms.ranks[k].label);
    EXPECT_EQ(direct.ranks[k].collectives, j.comms.ranks[k].collectives);
    EXPECT_EQ(direct.ranks[k].last_arrivals, j.comms.ranks[k].last_arrivals);
  }
}

// Two hosts whose ranks meet only at broadcasts (which bound no clock): rank 3
// is last at each by 5 ms. With no wall clock either, that cannot be told
// from clock error and no straggler is named; with the wall clocks (10 ms
// assumed error each) it still cannot; by 50 ms it can.
TEST(JobSummary, AStragglerIsNamedOnlyWhereTheClocksAreKnownBetterThanItsMargin) {
  auto job = [](int64_t late, bool wall) {
    std::vector<job::MemberSummary> members;
    for (int64_t host = 0; host < 2; ++host) {
      model::Trace t;
      for (int64_t r = 0; r < 2; ++r) {
        model::Process p;
        p.pid = 100 + 2 * host + r;
        p.rank = 2 * host + r;
        t.processes.push_back(p);
      }
      const model::StringId bc = t.strings.Intern("gloo:broadcast");
      for (uint32_t p = 0; p < 2; ++p)
        for (uint64_t k = 0; k < 20; ++k) {
          int64_t begin = static_cast<int64_t>(k) * 100'000'000 + (host == 1 && p == 1 ? late : 0);
          t.collectives.process.push_back(p);
          t.collectives.name.push_back(bc);
          t.collectives.seq.push_back(k);
          t.collectives.ts.push_back(begin);
          t.collectives.dur.push_back(1'000'000);
          t.collectives.track.push_back(0);
          t.collectives.end_track.push_back(0);
          t.collectives.bytes.push_back(4096);
          t.collectives.tensors.push_back(1);
        }
      t.manifest_json = "{\"host\": {\"hostname\": \"n" + std::to_string(host) + "\", \"boot_id\": \"b\"}}";
      if (wall) t.clock_offset_ns = 1'700'000'000'000'000'000;
      members.push_back(job::Summarize(t, "n" + std::to_string(host), nullptr));
      for (analysis::RankComms& r : members.back().comms.ranks) r.steps = 20, r.step_p50 = 100'000'000;
    }
    return job::AnalyzeJob(members);
  };
  job::JobAnalysis none = job(5'000'000, false);
  EXPECT_LT(none.comms.straggler, 0);
  EXPECT_NE(none.straggler_withheld.find("not synchronized"), std::string::npos) << none.straggler_withheld;
  EXPECT_TRUE(none.findings.empty());
  job::JobAnalysis close = job(5'000'000, true);
  EXPECT_LT(close.comms.straggler, 0);
  EXPECT_NE(close.straggler_withheld.find("within the clocks' uncertainty"), std::string::npos)
      << close.straggler_withheld;
  job::JobAnalysis far = job(50'000'000, true);
  ASSERT_GE(far.comms.straggler, 0) << far.straggler_withheld;
  EXPECT_EQ(far.comms.ranks[static_cast<size_t>(far.comms.straggler)].rank, 3);
  EXPECT_TRUE(far.straggler_withheld.empty());
  ASSERT_FALSE(far.findings.empty());
  EXPECT_EQ(far.findings[0].category, "straggler");
}

// Two ranks on one clock whose traces hold different subsets of the job's
// all-reduces (rank 0's begins one earlier, rank 1's misses one in the
// middle, as sampled traces do): matched by occurrence, the n-th of each are
// never inside together; matched by time, the common ones are, with their
// real skew (1 ms).
TEST(CollectiveMatch, TracesOfDifferentSubsetsAreMatchedByTime) {
  model::Trace t;
  for (int64_t r = 0; r < 2; ++r) {
    model::Process p;
    p.pid = 10 + r;
    p.rank = r;
    t.processes.push_back(p);
  }
  const model::StringId ar = t.strings.Intern("nccl:all_reduce");
  auto add = [&](uint32_t p, uint64_t seq, int64_t begin, int64_t end) {
    t.collectives.process.push_back(p);
    t.collectives.name.push_back(ar);
    t.collectives.seq.push_back(seq);
    t.collectives.ts.push_back(begin);
    t.collectives.dur.push_back(end - begin);
    t.collectives.track.push_back(0);
    t.collectives.end_track.push_back(0);
    t.collectives.bytes.push_back(1 << 20);
    t.collectives.tensors.push_back(1);
  };
  uint64_t seq0 = 0, seq1 = 0;
  for (int64_t k = 0; k < 12; ++k) {
    const int64_t at = k * 50'000'000;
    add(0, seq0++, at, at + 10'000'000);
    if (k != 0 && k != 6) add(1, seq1++, at + 1'000'000, at + 10'000'000);
  }
  analysis::CommsSummary s = analysis::AnalyzeComms(t);
  EXPECT_EQ(s.matched_by, "time");
  EXPECT_GT(s.apart * 5, s.checked);
  EXPECT_EQ(s.matched, 10u);
  EXPECT_EQ(s.partial, 2u);
  ASSERT_EQ(s.kinds.size(), 1u);
  EXPECT_EQ(s.kinds[0].skew_p50, 1'000'000);
  EXPECT_EQ(s.kinds[0].skew_max, 1'000'000);
  // With the clocks not known to agree, occurrences are all there is.
  analysis::CommsInput in = analysis::CommsInputOf(t);
  in.clock_tolerance_ns = -1;
  analysis::CommsSummary by_occurrence = analysis::CombineComms(in);
  EXPECT_EQ(by_occurrence.matched_by, "occurrence");
  EXPECT_EQ(by_occurrence.matched, 10u);
  EXPECT_GT(by_occurrence.kinds[0].skew_max, 40'000'000);
  // Complete traces stay matched by occurrence.
  model::Trace whole = TwoRanks(0, 0);
  EXPECT_EQ(analysis::AnalyzeComms(whole).matched_by, "occurrence");
}

}  // namespace
}  // namespace strata

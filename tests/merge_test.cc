// Many hosts on one time base (`strata merge`): the clock synchronization on
// bounds whose truth is known, the model append's renumbering, the merge
// plan's file, and a real gloo job of four ranks on two simulated hosts
// (network, UTS and time namespaces: tests/programs/two_hosts.sh) whose
// monotonic clocks are 1500 s apart and whose wall clocks are 5 ms off that.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/clock_sync.h"
#include "analysis/comms.h"
#include "importers/merged/merged.h"
#include "model/append.h"
#include "testing.h"

namespace strata {
namespace {

using analysis::HappenedBefore;

// Collectives on two clocks, clock 1 = true time + `offset` + drift * t: the
// ranks of clock 0 and 1 begin at random within `spread` and all end `latency`
// to `latency + jitter` after the last began.
std::vector<HappenedBefore> Collectives(int n, int64_t offset, double drift, int64_t period, int64_t spread,
                                        int64_t latency, int64_t jitter, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<HappenedBefore> out;
  for (int i = 0; i < n; ++i) {
    int64_t t0 = 1'000'000'000 + i * period;
    int64_t b0 = t0 + static_cast<int64_t>(rng() % spread), b1 = t0 + static_cast<int64_t>(rng() % spread);
    int64_t last = std::max(b0, b1);
    int64_t e0 = last + latency + static_cast<int64_t>(rng() % jitter);
    int64_t e1 = last + latency + static_cast<int64_t>(rng() % jitter);
    auto local1 = [&](int64_t t) { return t + offset + static_cast<int64_t>(drift * static_cast<double>(t)); };
    out.push_back({0, 1, b0, local1(e1)});
    out.push_back({1, 0, local1(b1), e0});
  }
  return out;
}

TEST(ClockSync, RecoversAnOffsetTheWallClocksMissed) {
  const int64_t offset = 1'500'000'000'000;  // clock 1 reads 1500 s more
  auto pairs = Collectives(200, offset, 0, 20'000'000, 2'000'000, 30'000, 200'000, 1);
  // The wall clocks say 5 ms less than the truth.
  auto s = analysis::SynchronizeClocks(2, 0, {0, -offset + 5'000'000}, pairs);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].method, "reference");
  EXPECT_EQ(s[1].method, "communication");
  EXPECT_EQ(s[1].map.drift, 0);
  // clock 1 -> clock 0 subtracts the offset; the truth lies inside the stated uncertainty.
  int64_t err = s[1].map.offset_ns + offset;
  EXPECT_LE(std::llabs(err), s[1].uncertainty_ns) << err;
  EXPECT_LE(s[1].uncertainty_ns, 40'000);
  EXPECT_NEAR(static_cast<double>(s[1].wall_error_ns), 5e6, 3e4);
  EXPECT_EQ(analysis::CheckOrder(pairs, {s[0].map, s[1].map}).violated, 0u);
}

TEST(ClockSync, FitsADriftOnlyWhenNoOffsetAloneFits) {
  const int64_t offset = -42'000'000;
  // 50 ppm over 200 s: 10 ms of drift against bounds 20 µs wide.
  auto pairs = Collectives(2000, offset, 50e-6, 100'000'000, 1'000'000, 5'000, 10'000, 2);
  auto s = analysis::SynchronizeClocks(2, 0, {0, 0}, pairs);
  EXPECT_NEAR(s[1].map.drift, -50e-6, 1e-6);
  EXPECT_EQ(s[1].violation_ns, 0);
  EXPECT_EQ(analysis::CheckOrder(pairs, {s[0].map, s[1].map}).violated, 0u);
  // Without drift the same clocks fit with no drift at all.
  auto still = Collectives(200, offset, 0, 100'000'000, 1'000'000, 5'000, 10'000, 3);
  EXPECT_EQ(analysis::SynchronizeClocks(2, 0, {0, 0}, still)[1].map.drift, 0);
}

TEST(ClockSync, OneSidedBoundsAClockThroughAnotherAndNone) {
  // Only clock 1's events come first: its offset is bounded from one side;
  // the wall clock is kept when it is inside the bound.
  std::vector<HappenedBefore> one = {{1, 0, 5'000, 1'000}};
  auto s = analysis::SynchronizeClocks(2, 0, {0, -10'000}, one);
  EXPECT_EQ(s[1].method, "wall clock, bounded by communication");
  EXPECT_EQ(s[1].map.offset_ns, -10'000);
  EXPECT_EQ(s[1].uncertainty_ns, -1);
  s = analysis::SynchronizeClocks(2, 0, {0, 0}, one);
  EXPECT_EQ(s[1].map.offset_ns, -4'000);  // moved into the bound
  // Clock 2 talks to clock 1 only; clock 3 to nobody.
  auto p01 = Collectives(50, 7'000'000, 0, 10'000'000, 100'000, 5'000, 5'000, 4);
  auto p12 = Collectives(50, 3'000'000, 0, 10'000'000, 100'000, 5'000, 5'000, 5);
  for (auto& p : p12) p.a += 1, p.b += 1;  // clock 2 = clock 1 + 3 ms
  std::vector<HappenedBefore> all = p01;
  all.insert(all.end(), p12.begin(), p12.end());
  s = analysis::SynchronizeClocks(4, 0, {0, 0, 0, 123}, all);
  EXPECT_EQ(s[2].via, 1);
  EXPECT_NEAR(static_cast<double>(s[2].map.offset_ns), -10e6, 2e4);
  EXPECT_EQ(s[3].method, "wall clock");
  EXPECT_EQ(s[3].map.offset_ns, 123);
}

TEST(ClockSync, MessagesPairNthSendWithNthReceive) {
  using analysis::MessageEnd;
  // rank 0 (clock 0) sends to rank 2 (clock 1) twice and to rank 3 (clock 1) once;
  // rank 2 answers on clock 1; rank 1 on clock 0 sends to rank 0 (same clock: no bound).
  std::vector<MessageEnd> sends = {{0, 2, 0, 20, 20}, {0, 2, 0, 10, 10}, {0, 3, 0, 15, 15}, {2, 0, 1, 30, 31},
                                   {1, 0, 0, 5, 5}};
  std::vector<MessageEnd> recvs = {{0, 2, 1, 8, 25}, {0, 2, 1, 9, 40}, {0, 3, 1, 1, 50}, {2, 0, 0, 0, 60},
                                   {1, 0, 0, 1, 7}};
  auto p = analysis::MessagePairs(sends, recvs);
  ASSERT_EQ(p.size(), 4u);
  // (from, to) order, then issue order: 0->2 #1 (sent 10, received 25), #2 (20, 40); 0->3; 2->0.
  EXPECT_EQ(p[0].before, 10);
  EXPECT_EQ(p[0].after, 25);
  EXPECT_EQ(p[1].before, 20);
  EXPECT_EQ(p[1].after, 40);
  EXPECT_EQ(p[2].after, 50);
  EXPECT_EQ(p[3].a, 1u);
  EXPECT_EQ(p[3].b, 0u);
  EXPECT_EQ(p[3].before, 31);
}

TEST(ClockSync, ContradictingBoundsAreReported) {
  // Clock 1's event both before and 1 ms after clock 0's, at the same times.
  std::vector<HappenedBefore> p = {{0, 1, 2'000'000, 1'000'000}, {1, 0, 1'000'000, 1'000'000}};
  auto s = analysis::SynchronizeClocks(2, 0, {0, 0}, p);
  EXPECT_GT(s[1].violation_ns, 0);
}

model::Trace Small(const std::string& proc, int64_t rank, int64_t t0) {
  model::Trace t;
  t.source = "strata";
  model::Process p;
  p.pid = 100 + rank;
  p.name = t.strings.Intern(proc);
  p.rank = rank;
  t.processes.push_back(p);
  model::Track tr;
  tr.process = 0;
  tr.tid = 100 + rank;
  tr.name = t.strings.Intern("main");
  t.tracks.push_back(tr);
  uint32_t s0 = t.slices.Add(t0, 1000, 0, t.strings.Intern("step"), model::SliceKind::kStep);
  uint32_t s1 = t.slices.Add(t0 + 10, 100, 0, t.strings.Intern("aten::mm"), model::SliceKind::kOp);
  t.ops.Add(s1, model::OpScope::kFunction, -1);
  t.flows.Add(7, static_cast<int32_t>(s0), static_cast<int32_t>(s1));
  t.args.Add(s1, t.strings.Intern("queued_ns"), 0, static_cast<double>(t0 + 5));
  model::CollectiveTable& c = t.collectives;
  c.process.push_back(0);
  c.name.push_back(t.strings.Intern("gloo:all_reduce"));
  c.seq.push_back(0);
  c.ts.push_back(t0 + 200);
  c.dur.push_back(50);
  c.track.push_back(0);
  c.end_track.push_back(UINT32_MAX);
  c.bytes.push_back(4);
  c.tensors.push_back(1);
  t.Finalize();
  return t;
}

TEST(AppendTrace, RenumbersAndMovesTheSecondTrace) {
  model::Trace a = Small("python", 0, 1'000), b = Small("trainer", 1, 5'000'000);
  model::Trace m;
  model::AppendTrace(&m, a, {}, "a");
  model::AppendTrace(&m, b, {-4'000'000, 0, 0}, "b");
  m.Finalize();
  ASSERT_EQ(m.processes.size(), 2u);
  ASSERT_EQ(m.tracks.size(), 2u);
  EXPECT_EQ(m.tracks[1].process, 1u);
  EXPECT_EQ(m.strings.Get(m.processes[1].name), "trainer");
  ASSERT_EQ(m.slices.size(), 4u);
  // b's slices: on track 1, 4 ms earlier, names re-interned, parent renumbered.
  EXPECT_EQ(m.slices.track[2], 1u);
  EXPECT_EQ(m.slices.ts[2], 1'000'000);
  EXPECT_EQ(m.strings.Get(m.slices.name[3]), "aten::mm");
  EXPECT_EQ(m.slices.parent[3], 2);
  EXPECT_EQ(m.ops.slice[1], 3u);
  EXPECT_EQ(m.flows.from[1], 2);
  EXPECT_EQ(m.flows.to[1], 3);
  EXPECT_EQ(m.FindArg(3, m.strings.Find("queued_ns")) >= 0, true);
  EXPECT_EQ(m.args.num[static_cast<size_t>(m.FindArg(3, m.strings.Find("queued_ns")))], 1'000'005);
  ASSERT_EQ(m.collectives.size(), 2u);
  EXPECT_EQ(m.collectives.process[1], 1u);
  EXPECT_EQ(m.collectives.ts[1], 1'000'200);
  EXPECT_EQ(m.collectives.end_track[1], UINT32_MAX);
  EXPECT_EQ(m.collectives.name[0], m.collectives.name[1]);
}

TEST(MergePlan, RoundTripsAndRefusesBadPlans) {
  importers::MergePlan p;
  importers::MergeClock c0, c1;
  c0.host = "a";
  c0.reference = true;
  c1.host = "b";
  c1.map = {-1'500'000'000'000, 2e-6, 77};
  c1.uncertainty_ns = 12'000;
  p.clocks = {c0, c1};
  p.members = {{"../a", 0, "a", {0, 1}}, {"/abs/b", 1, "b", {2, 3}}};
  auto back = importers::ParseMergePlan(importers::MergePlanJson(p));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->clocks[1].map.offset_ns, -1'500'000'000'000);
  EXPECT_EQ(back->clocks[1].map.drift, 2e-6);
  EXPECT_EQ(back->members[1].ranks, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(importers::MemberPath("/x/job", back->members[0]), "/x/a");
  EXPECT_EQ(importers::MemberPath("/x/job", back->members[1]), "/abs/b");
  for (const char* bad : {"", "[]", R"({"format":"strata-merge","version":2,"clocks":[{}],"members":[{}]})",
                          R"({"format":"strata-merge","version":1,"clocks":[],"members":[]})",
                          R"({"format":"strata-merge","version":1,"clocks":[{}],"members":[{"path":"a","clock":3}]})",
                          R"({"format":"strata-merge","version":1,"clocks":[{"drift":5}],"members":[{"path":"a","clock":0}]})"})
    EXPECT_FALSE(importers::ParseMergePlan(bad).ok()) << bad;
}

// The acceptance run: 4 ranks on two simulated hosts, merged.
void TwoHosts(const std::string& python, const std::string& name) {
  std::string dir = testing::TempDir(name);
  auto r = testing::RunCommand({testing::SourceDir() + "/tests/programs/two_hosts.sh", testing::StrataBin(),
                                python, testing::SourceDir() + "/tests/programs/multihost_train.py", dir},
                               {{"ITERS", "40"}}, 300);
  if (r.exit_code == 77) GTEST_SKIP() << r.out;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string job = dir + "/job";
  auto m = testing::RunCommand({testing::StrataBin(), "merge", "-o", job, dir + "/hostA", dir + "/hostB"});
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  std::cout << m.out;
  auto plan = importers::ReadMergePlan(job);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->clocks.size(), 2u);
  EXPECT_EQ(plan->clocks[0].host, "hostA");
  EXPECT_TRUE(plan->clocks[0].reference);
  EXPECT_EQ(plan->members[1].ranks, (std::vector<int64_t>{2, 3}));
  // hostB's clock reads 1500 s more; the wall clocks say 1500 s + 5 ms.
  const importers::MergeClock& b = plan->clocks[1];
  const int64_t err = b.map.offset_ns + 1'500'000'000'000;
  std::cout << "recovered offset error " << err << " ns, uncertainty " << b.uncertainty_ns << " ns\n";
  EXPECT_EQ(b.method, "communication");
  EXPECT_LE(std::llabs(err), b.uncertainty_ns);
  // Bounded by the ranks' collectives and, much tighter, by their messages.
  EXPECT_LE(std::llabs(err), 50'000);
  EXPECT_NEAR(static_cast<double>(b.wall_offset_ns - b.map.offset_ns), -5e6, 5e5);

  // One trace: four ranks; every send before its receive on the one time base.
  model::Trace t = testing::Load(job);
  std::map<int64_t, uint32_t> proc_of_rank;
  for (uint32_t p = 0; p < t.processes.size(); ++p)
    if (t.processes[p].rank >= 0) proc_of_rank[t.processes[p].rank] = p;
  ASSERT_EQ(proc_of_rank.size(), 4u);
  // rank r < 2 sends to r + 2 and then receives from it; r + 2 receives then
  // sends. A send is issued when torch.distributed.send is called (the span the
  // Python hook records, with the peer's rank); a receive has its data when
  // its gloo:recv work completes.
  std::map<uint32_t, std::vector<int64_t>> send_ops;  // process -> send calls, in time order
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.strings.Get(t.slices.name[i]) == "torch.distributed.send")
      send_ops[t.tracks[t.slices.track[i]].process].push_back(t.slices.ts[i]);
  for (auto& [p, v] : send_ops) std::sort(v.begin(), v.end());
  std::map<uint32_t, std::vector<int64_t>> recv_ends;  // process -> gloo:recv completions, in order
  const model::CollectiveTable& c = t.collectives;
  for (size_t i = 0; i < c.size(); ++i)
    if (t.strings.Get(c.name[i]) == "gloo:recv" && c.dur[i] >= 0) recv_ends[c.process[i]].push_back(c.ts[i] + c.dur[i]);
  for (auto& [p, v] : recv_ends) std::sort(v.begin(), v.end());
  size_t pairs = 0, late_sends = 0;
  for (int64_t lo = 0; lo < 2; ++lo)
    for (auto [from, to] : {std::pair{lo, lo + 2}, std::pair{lo + 2, lo}}) {
      const auto& sends = send_ops[proc_of_rank[from]];
      const auto& recvs = recv_ends[proc_of_rank[to]];
      ASSERT_EQ(sends.size(), recvs.size());
      ASSERT_GE(sends.size(), 40u);
      for (size_t i = 0; i < sends.size(); ++i, ++pairs) {
        EXPECT_LT(sends[i], recvs[i]) << "rank " << from << " send " << i << " after rank " << to
                                      << "'s receive ended";
        if (sends[i] >= recvs[i]) ++late_sends;
      }
    }
  EXPECT_GE(pairs, 160u);
  std::cout << late_sends << " of " << pairs << " sends after their receive ended\n";
  analysis::CommsSummary s = analysis::AnalyzeComms(t);
  EXPECT_EQ(s.ranks.size(), 4u);
  EXPECT_EQ(s.mismatched, 0u);
  // Every command reads it as one trace.
  auto rep = testing::RunCommand({testing::StrataBin(), "report", job});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("Ranks: 4"), std::string::npos) << rep.out;
}

TEST(Merge, TwoHostsWithSkewedClocks) {
  REQUIRE_TORCH();
  TwoHosts(testing::kPython, "merge-two-hosts");
}

// The same with torch 2.x from PyPI (STRATA_TORCH2_PYTHON names its python).
TEST(Merge, TwoHostsWithSkewedClocksTorch2) {
  const char* py = std::getenv("STRATA_TORCH2_PYTHON");
  if (!py || !*py) GTEST_SKIP() << "STRATA_TORCH2_PYTHON is not set";
  TwoHosts(py, "merge-two-hosts-torch2");
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// Two ranks of a 128-rank NCCL job (HTA's sampled traces): their NCCL
// collectives become rows (importers/kineto/comms.cc); each rank kept another
// subset of them, so some (name, occurrence) pairs are different works whose
// bounds contradict the rest. The merge says so and keeps the wall clocks,
// on which the same collectives end together.
TEST(Merge, SampledNcclRanksFromThePyTorchProfiler) {
  std::string ext = testing::ExternalDataDir();
  if (ext.empty()) GTEST_SKIP() << "../shared/data/external is absent";
  std::string r0 = ext + "/hta/trace_filter/sampled_rank-0.json.gz", r1 = ext + "/hta/trace_filter/sampled_rank-1.json.gz";
  std::string job = testing::TempDir("merge-hta") + "/job";
  auto m = testing::RunCommand({testing::StrataBin(), "merge", "-o", job, r0, r1}, {{"STRATA_INDEX", "cache"}});
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  std::cout << m.out;
  auto plan = importers::ReadMergePlan(job);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->clocks.size(), 2u);
  const importers::MergeClock& b = plan->clocks[1];
  EXPECT_EQ(b.constraints, 20u);
  EXPECT_EQ(b.method.rfind("wall clock (communication bounds contradict", 0), 0u) << b.method;
  EXPECT_GT(b.dropped, 0u);
  EXPECT_GT(b.violation_ns, 0);
  EXPECT_EQ(b.map.offset_ns, 0);
  model::Trace t = testing::Load(job);
  // The same collective on both ranks: matched by name and occurrence, the
  // instances that end within 1 ms of each other after the merge.
  const model::CollectiveTable& c = t.collectives;
  std::map<std::pair<std::string, int>, std::vector<int64_t>> ends;
  std::map<std::pair<uint32_t, std::string>, int> seen;
  std::vector<size_t> rows(c.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  std::sort(rows.begin(), rows.end(), [&c](size_t x, size_t y) {
    return c.process[x] != c.process[y] ? c.process[x] < c.process[y] : c.seq[x] < c.seq[y];
  });
  for (size_t i : rows) {
    std::string n(t.strings.Get(c.name[i]));
    ends[{n, seen[{c.process[i], n}]++}].push_back(c.ts[i] + c.dur[i]);
  }
  int together = 0;
  for (auto& [k, e] : ends)
    if (e.size() == 2 && std::llabs(e[0] - e[1]) < 1'000'000) ++together;
  std::cout << together << " of " << ends.size() << " matched NCCL collectives end within 1 ms of each other\n";
  EXPECT_GE(together, 4);
  // The ranks analysis sees that the n-th collectives do not correspond (the
  // traces hold different samples) and matches them by time: the kernels that
  // are in both traces line up, their ranks entering them tens of ms apart at
  // most (by occurrence, the skew was up to 231 ms).
  analysis::CommsSummary s = analysis::AnalyzeComms(t);
  EXPECT_EQ(s.matched_by, "time") << s.apart << " of " << s.checked << " apart";
  EXPECT_GE(s.matched, 5u);
  for (const auto& k : s.kinds) EXPECT_LT(k.skew_max, 25'000'000) << k.name;
}

}  // namespace
}  // namespace strata

#include "analysis/findings.h"

namespace strata {
namespace {

// TensorFlow's MultiWorkerMirroredStrategy on two workers (localhost), each
// recorded with its own profiler over steps 5-25 (--ops-steps), then merged:
// each worker's rank from TF_CONFIG, its CollectiveReduceV2 ops as collectives
// matched across the workers, and each worker's median step as its own.
// TensorFlow's profiler aborts a worker of this job in about 2 of 5 runs with
// or without strata ("free(): invalid pointer" as it collects): up to 3 tries.
TEST(Merge, TensorFlowMultiWorkerCollectives) {
  const char* py = std::getenv("STRATA_TF_PYTHON");
  if (!py || !*py) GTEST_SKIP() << "STRATA_TF_PYTHON is not set";
  std::string dir = testing::TempDir("merge-tf-multiworker");
  std::string prog = testing::SourceDir() + "/tests/programs/tf_multiworker.py";
  std::map<int, double> own;
  for (int attempt = 0; attempt < 3 && own.size() < 2; ++attempt) {
    own.clear();
    int port = 31000 + (::getpid() * 7 + attempt * 2) % 2000;
    auto config = [port](int i) {
      return "{\"cluster\": {\"worker\": [\"localhost:" + std::to_string(port) + "\", \"localhost:" +
             std::to_string(port + 1) + "\"]}, \"task\": {\"type\": \"worker\", \"index\": " + std::to_string(i) +
             "}}";
    };
    std::string script = "rm -rf w0 w1; TF_CONFIG='" + config(0) + "' '" + testing::StrataBin() +
                         "' record --ops-steps 5-25 -o w0 -- '" + py + "' '" + prog + "' > w0.log 2>&1 & TF_CONFIG='" +
                         config(1) + "' '" + testing::StrataBin() + "' record --ops-steps 5-25 -o w1 -- '" + py + "' '" +
                         prog + "' > w1.log 2>&1; wait; cat w0.log w1.log";
    auto r = testing::RunCommand({"sh", "-c", "mkdir -p '" + dir + "' && cd '" + dir + "' || exit 1; " + script}, {}, 400);
    std::regex line(R"(worker (\d) median iteration ([0-9.]+) ms)");
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line); it != std::sregex_iterator(); ++it)
      own[std::stoi((*it)[1])] = std::stod((*it)[2]);
    if (own.size() < 2) std::cout << "attempt " << attempt << ": a worker did not finish:\n" << r.out.substr(r.out.size() > 3000 ? r.out.size() - 3000 : 0) << r.err << "\n";
  }
  ASSERT_EQ(own.size(), 2u);
  auto m = testing::RunCommand({testing::StrataBin(), "merge", "-o", dir + "/job", dir + "/w0", dir + "/w1"});
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  model::Trace t = testing::Load(dir + "/job");
  analysis::CommsSummary s = analysis::AnalyzeComms(t);
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_GE(s.matched, 20u);  // an all-reduce per profiled step at least
  // The profilers' windows are the same steps on both workers; one may stop
  // with a collective more than the other.
  EXPECT_LE(s.partial, 2u);
  ASSERT_FALSE(s.kinds.empty());
  EXPECT_EQ(s.kinds[0].name, "tf:all_reduce");
  for (const auto& r : s.ranks) {
    ASSERT_TRUE(r.rank == 0 || r.rank == 1) << r.label;
    EXPECT_NEAR(static_cast<double>(r.step_p50) / 1e6, own[static_cast<int>(r.rank)], 0.1 * own[static_cast<int>(r.rank)])
        << r.label;
  }
}

// MPI through PMPI (collectors/mpi): 4 ranks under mpirun in one recording,
// each with its rank from Open MPI's environment, its all-reduces and
// barriers matched across the ranks, and its sends and receives with their
// peers (the spans `strata merge` pairs).
TEST(Mpi, PingPongAndAllreduceOnFourRanks) {
  std::string prog = testing::TestProgram("mpi_pingpong");
  if (::access(prog.c_str(), X_OK) != 0) GTEST_SKIP() << "built without MPI (libopenmpi-dev)";
  if (::access((testing::LibDir() + "/libstrata_mpi.so").c_str(), R_OK) != 0) GTEST_SKIP() << "no libstrata_mpi.so";
  std::string dir = testing::TempDir("mpi-pingpong");
  auto r = testing::Record(dir, {"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", prog, "40"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  model::Trace t = testing::Load(dir);
  std::map<int64_t, uint32_t> proc_of_rank;
  for (uint32_t p = 0; p < t.processes.size(); ++p)
    if (t.processes[p].rank >= 0) proc_of_rank[t.processes[p].rank] = p;
  ASSERT_EQ(proc_of_rank.size(), 4u);
  analysis::CommsSummary s = analysis::AnalyzeComms(t);
  ASSERT_EQ(s.ranks.size(), 4u);
  EXPECT_EQ(s.mismatched, 0u);
  std::map<std::string, uint64_t> count;
  for (const auto& k : s.kinds) count[k.name] = k.count;
  EXPECT_EQ(count["mpi:allreduce"], 4u * 2 * 40);
  EXPECT_EQ(count["mpi:barrier"], 4u * 4);
  EXPECT_EQ(count["mpi:send"], 4u * 40);
  EXPECT_EQ(count["mpi:recv"], 4u * 40);
  EXPECT_EQ(count["mpi:isend"], 4u * 40);
  EXPECT_EQ(count["mpi:irecv"], 4u * 40);
  // A nonblocking receive's row lasts until MPI_Waitall completed it: past
  // the end of its MPI_Irecv call.
  {
    std::vector<int64_t> call_ends, row_ends;
    for (size_t i = 0; i < t.slices.size(); ++i)
      if (t.strings.Get(t.slices.name[i]) == "mpi.irecv") call_ends.push_back(t.slices.ts[i] + t.slices.dur[i]);
    for (size_t i = 0; i < t.collectives.size(); ++i)
      if (t.strings.Get(t.collectives.name[i]) == "mpi:irecv") {
        ASSERT_GE(t.collectives.dur[i], 0) << "an irecv whose request never completed";
        row_ends.push_back(t.collectives.ts[i] + t.collectives.dur[i]);
      }
    std::sort(call_ends.begin(), call_ends.end());
    std::sort(row_ends.begin(), row_ends.end());
    ASSERT_EQ(call_ends.size(), row_ends.size());
    size_t later = 0;
    for (size_t i = 0; i < row_ends.size(); ++i) later += row_ends[i] > call_ends[i];
    EXPECT_GE(later, row_ends.size() * 9 / 10);
  }
  for (const auto& k : s.kinds) {
    if (k.name == "mpi:allreduce") {
      EXPECT_EQ(k.bytes, int64_t{4} * 40 * (65536 * 4 + 8));
    }
  }
  std::vector<analysis::MessageEnd> sends, receives;
  analysis::CollectMessages(t, 0, &sends, &receives);
  // Messages with their peers: the ping-pong's (r and r ^ 1, one each way)
  // and the ring's (r to r + 1), each iteration.
  ASSERT_EQ(sends.size(), 4u * 40 * 2);
  ASSERT_EQ(receives.size(), 4u * 40 * 2);
  for (const auto& m : sends) EXPECT_TRUE(m.to == (m.from ^ 1) || m.to == (m.from + 1) % 4) << m.from << "->" << m.to;
  // Each (from, to)'s n-th send began before its n-th receive returned (one clock).
  auto key = [](const analysis::MessageEnd& m) { return std::tie(m.from, m.to, m.order); };
  std::sort(sends.begin(), sends.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
  std::sort(receives.begin(), receives.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
  for (size_t i = 0; i < sends.size(); ++i) {
    ASSERT_EQ(sends[i].from, receives[i].from);
    ASSERT_EQ(sends[i].to, receives[i].to);
    EXPECT_LT(sends[i].ts, receives[i].ts);
  }
  auto manifest = testing::ManifestCollector(dir, "mpi");
  EXPECT_EQ(manifest["state"], "ok") << manifest.dump();
}

// A job built in memory: 4 ranks x 20 steps of 60 ms compute, then an
// all-reduce each rank waits for asleep (off CPU) until it completes 30 ms
// after the last rank entered; `late` ranks enter it `late_ns` later.
model::Trace CommJob(int late_rank, int64_t late_ns) {
  model::Trace t;
  model::StringId step = t.strings.Intern("step"), op = t.strings.Intern("aten::mm"),
                  coll = t.strings.Intern("gloo:all_reduce");
  const int64_t step_ns = 100'000'000;
  for (int r = 0; r < 4; ++r) {
    model::Process p;
    p.pid = 100 + r;
    p.rank = r;
    t.processes.push_back(p);
    t.tracks.push_back({model::TrackKind::kThread, static_cast<uint32_t>(r), 100 + r});
  }
  // Thread states sorted by (track, ts), as importers leave them.
  for (int r = 0; r < 4; ++r) {
    for (int s = 0; s < 20; ++s) {
      int64_t at = s * step_ns;
      int64_t last = at + 60'000'000 + late_ns;
      uint32_t trk = static_cast<uint32_t>(r);
      int64_t compute = 60'000'000 + (r == late_rank ? late_ns : 0);
      t.slices.Add(at, step_ns - 1, trk, step, model::SliceKind::kStep, static_cast<uint64_t>(s));
      t.slices.Add(at, compute, trk, op, model::SliceKind::kOp);
      int64_t enter = at + compute, done = last + 30'000'000;
      t.thread_states.Add(at, compute, trk, model::ThreadState::kRunning, 0);
      t.thread_states.Add(enter, done - enter, trk, model::ThreadState::kSleeping, -1);
      t.thread_states.Add(done, at + step_ns - done, trk, model::ThreadState::kRunning, 0);
      auto& c = t.collectives;
      c.process.push_back(static_cast<uint32_t>(r));
      c.name.push_back(coll);
      c.seq.push_back(static_cast<uint64_t>(s));
      c.ts.push_back(enter);
      c.dur.push_back(done - enter);
      c.track.push_back(trk);
      c.end_track.push_back(trk);
      c.bytes.push_back(int64_t{8} << 20);
      c.tensors.push_back(1);
    }
  }
  t.Finalize();
  return t;
}

const analysis::Finding* Category(const std::vector<analysis::Finding>& f, const std::string& c) {
  for (const auto& x : f)
    if (x.category == c) return &x;
  return nullptr;
}

TEST(CommFindings, EveryRankWaitingForItsCollectivesIsCommunication) {
  auto f = analysis::Diagnose(CommJob(-1, 0));
  const analysis::Finding* c = Category(f, "communication");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(Category(f, "straggler"), nullptr);
  // 30 ms of each 100 ms step asleep in the all-reduce: 60% of it hidden.
  double wait = -1;
  for (const auto& [k, v] : c->metrics)
    if (k == "comm_wait_ns_per_step") wait = v;
  EXPECT_NEAR(wait, 30e6, 1e6);
  EXPECT_NEAR(c->estimated_gain_pct, 18, 1.5);
  EXPECT_NE(c->suggestion.find("many bytes"), std::string::npos) << c->suggestion;  // 8 MiB each
}

TEST(CommFindings, ALateRankIsTheStragglerNotCommunication) {
  auto f = analysis::Diagnose(CommJob(2, 20'000'000));
  EXPECT_NE(Category(f, "straggler"), nullptr);
  EXPECT_EQ(Category(f, "communication"), nullptr);
}

}  // namespace
}  // namespace strata

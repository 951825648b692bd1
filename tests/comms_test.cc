// Ranks of a torch.distributed job recorded as one trace: every rank's
// collectives (gloo's works) with sequence numbers that match across ranks,
// each process's rank from its launcher, and the rank the others wait for
// named as the straggler with the phase of its steps that makes it late.
// Real DDP training (tests/programs/ddp_train.py), Debian's torch 1.13 through
// a torchrun-like launcher (its torchrun fails under Python 3.11), and torch
// 2.x from PyPI through its own torchrun where STRATA_TORCH2_PYTHON names it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/comms.h"
#include "analysis/findings.h"
#include "testing.h"

namespace strata {
namespace {

using testing::kPython;

std::string Program(const std::string& name) { return testing::SourceDir() + "/tests/programs/" + name; }

// rank -> (pid, its own median iteration in ms), from the program's output.
std::map<int64_t, std::pair<int64_t, double>> OwnTimes(const std::string& out) {
  std::map<int64_t, std::pair<int64_t, double>> r;
  std::regex line(R"(rank (\d+) pid (\d+) median iteration ([0-9.]+) ms)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it)
    r[std::stoll((*it)[1])] = {std::stoll((*it)[2]), std::stod((*it)[3])};
  return r;
}

struct Recorded {
  std::string dir;
  model::Trace trace;
  std::map<int64_t, std::pair<int64_t, double>> own;
};

Recorded RecordRanks(const std::string& name, const std::vector<std::string>& cmd, const std::map<std::string, std::string>& env) {
  std::string dir = testing::TempDir(name);
  auto r = testing::Record(dir, cmd, {}, env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return {dir, testing::Load(dir), OwnTimes(r.out)};
}

// Four ranks: each process has its rank, every collective appears on every
// rank with one sequence number, name and size, and each completed.
TEST(Comms, DdpCollectivesMatchAcrossFourRanks) {
  REQUIRE_TORCH();
  Recorded run = RecordRanks("comms-four", {kPython, Program("launch_ranks.py"), "4", Program("ddp_train.py")},
                        {{"ITERS", "8"}});
  const model::Trace& t = run.trace;
  ASSERT_EQ(run.own.size(), 4u);
  std::map<int64_t, uint32_t> process_of_rank;
  for (uint32_t p = 0; p < t.processes.size(); ++p)
    if (t.processes[p].rank >= 0) process_of_rank[t.processes[p].rank] = p;
  ASSERT_EQ(process_of_rank.size(), 4u);
  for (auto& [rank, own] : run.own) EXPECT_EQ(t.processes[process_of_rank[rank]].pid, own.first) << "rank " << rank;
  // The manifest lists them too, with where the rank came from.
  std::ifstream mf(run.dir + "/strata.json");
  nlohmann::json manifest = nlohmann::json::parse(mf);
  std::map<int64_t, int64_t> manifest_ranks;  // rank -> pid
  for (const auto& p : manifest["processes"])
    if (p.contains("rank")) {
      manifest_ranks[p["rank"].get<int64_t>()] = p["pid"].get<int64_t>();
      EXPECT_EQ(p["rank_from"], "RANK");
      EXPECT_EQ(p["world_size"], 4);
    }
  ASSERT_EQ(manifest_ranks.size(), 4u);
  for (auto& [rank, own] : run.own) EXPECT_EQ(manifest_ranks[rank], own.first) << "rank " << rank;

  const model::CollectiveTable& c = t.collectives;
  // Each rank numbers its works 0, 1, ... and holds the same ones (as many
  // of each name); gloo's two worker threads may begin neighbours in either
  // order, so the sequence numbers of works can differ by a swap.
  std::map<uint32_t, std::vector<uint64_t>> seqs;
  std::map<uint32_t, std::map<uint32_t, int>> works;
  std::set<std::string> names;
  for (size_t i = 0; i < c.size(); ++i) {
    seqs[c.process[i]].push_back(c.seq[i]);
    ++works[c.process[i]][c.name[i]];
    names.insert(std::string(t.strings.Get(c.name[i])));
    EXPECT_GE(c.dur[i], 0) << "collective " << c.seq[i] << " never completed";
    EXPECT_NE(c.end_track[i], UINT32_MAX);
  }
  EXPECT_TRUE(names.count("gloo:all_reduce")) << "collectives seen: " << names.size();
  EXPECT_TRUE(names.count("gloo:broadcast"));  // DDP's first synchronization of the parameters
  ASSERT_EQ(seqs.size(), 4u);
  for (auto& [p, v] : seqs) {
    ASSERT_GE(v.size(), 8u);  // an all-reduce per iteration at least
    for (size_t k = 0; k < v.size(); ++k) EXPECT_EQ(v[k], k) << "rank process " << p;
    EXPECT_EQ(works[p], works.begin()->second) << "rank process " << p;
  }
  // The all-reduces carry the gradients: 256x1024 + 1024x1024 + 1024x10
  // weights and their biases, in float32, per iteration, in DDP's buckets
  // (each all-reduce's size as the ranks that saw its inputs say). The
  // buckets of one iteration may reach the workers in either order on each
  // rank, so the sizes are compared as multisets, not by position: each
  // size counted as often as the rank that saw it most often.
  int64_t params = 256 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10;
  std::map<uint32_t, std::map<int64_t, int>> sizes;  // process -> bytes -> all-reduces
  for (size_t i = 0; i < c.size(); ++i)
    if (t.strings.Get(c.name[i]) == "gloo:all_reduce" && c.bytes[i] > 0) ++sizes[c.process[i]][c.bytes[i]];
  std::map<int64_t, int> most;  // bytes -> all-reduces of that size on the rank that saw most
  for (auto& [p, by_size] : sizes)
    for (auto& [bytes, n] : by_size) most[bytes] = std::max(most[bytes], n);
  int64_t all_reduced = 0;
  for (auto& [bytes, n] : most) all_reduced += bytes * n;
  EXPECT_EQ(all_reduced % (params * 4), 0) << all_reduced;
  EXPECT_GE(all_reduced / (params * 4), 8);

  // On the timeline: a span per all-reduce on the gloo worker thread that ran
  // it (not the program's main thread).
  size_t all_reduces = 0;
  for (size_t i = 0; i < c.size(); ++i)
    if (t.strings.Get(c.name[i]) == "gloo:all_reduce") {
      ++all_reduces;
      EXPECT_NE(t.tracks[c.track[i]].tid, t.processes[c.process[i]].pid);
      int32_t s = t.SliceAt(c.end_track[i], c.ts[i] + c.dur[i] / 2);
      ASSERT_GE(s, 0);
      EXPECT_EQ(t.strings.Get(t.slices.name[static_cast<size_t>(s)]), "gloo:all_reduce");
    }
  EXPECT_EQ(testing::CountSlices(t, "gloo:all_reduce"), all_reduces);

  analysis::CommsSummary s = analysis::AnalyzeComms(t);
  ASSERT_EQ(s.ranks.size(), 4u);
  EXPECT_EQ(s.matched, s.instances);
  EXPECT_EQ(s.partial, 0u);
  EXPECT_GE(s.matched, 8u);
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(s.ranks[k].rank, static_cast<int64_t>(k));
}

// Two ranks, one slowed in one phase: it is the straggler, with that phase;
// each rank's median step is its own median iteration.
void ExpectStraggler(const Recorded& run, int64_t slow_rank, const std::string& phase) {
  const model::Trace& t = run.trace;
  analysis::CommsSummary s = analysis::AnalyzeComms(t);
  ASSERT_EQ(s.ranks.size(), 2u);
  ASSERT_GE(s.straggler, 0);
  const analysis::RankComms& w = s.ranks[static_cast<size_t>(s.straggler)];
  EXPECT_EQ(w.rank, slow_rank);
  EXPECT_EQ(s.phase, phase);
  for (const analysis::RankComms& r : s.ranks) {
    ASSERT_TRUE(run.own.count(r.rank)) << r.label;
    double own = run.own.at(r.rank).second;
    EXPECT_NEAR(static_cast<double>(r.step_p50) / 1e6, own, 0.1 * own) << r.label;
  }
  std::vector<analysis::Finding> findings = analysis::Diagnose(t);
  const analysis::Finding* f = nullptr;
  std::string all;
  for (const auto& x : findings) {
    all += x.category + ": " + x.title + "\n";
    if (x.category == "straggler" && !f) f = &x;
  }
  ASSERT_NE(f, nullptr) << all;
  std::string label = "rank " + std::to_string(slow_rank) + " (pid " + std::to_string(run.own.at(slow_rank).first) + ")";
  EXPECT_EQ(f->involved.at(0), label) << f->evidence;
  EXPECT_NE(std::find(f->involved.begin(), f->involved.end(), "phase: " + phase), f->involved.end()) << f->evidence;
  EXPECT_GT(f->estimated_gain_pct, 5) << f->evidence;
}

TEST(Comms, RankWithSlowInputIsTheStraggler) {
  REQUIRE_TORCH();
  Recorded run = RecordRanks("comms-input", {kPython, Program("launch_ranks.py"), "2", Program("ddp_train.py")},
                        {{"SLOW_RANK", "1"}, {"SLOW_KIND", "input"}});
  ExpectStraggler(run, 1, "input");
}

TEST(Comms, RankWithLargerBatchesIsTheStragglerInCompute) {
  REQUIRE_TORCH();
  Recorded run = RecordRanks("comms-compute", {kPython, Program("launch_ranks.py"), "2", Program("ddp_train.py")},
                        {{"SLOW_RANK", "0"}, {"SLOW_KIND", "compute"}});
  ExpectStraggler(run, 0, "compute");
}

// torch 2.x started by its own torchrun (the observer found through the
// launcher script's #! line).
TEST(Comms, Torch2UnderTorchrun) {
  const char* py = std::getenv("STRATA_TORCH2_PYTHON");
  if (!py || !*py) GTEST_SKIP() << "STRATA_TORCH2_PYTHON names no Python with torch 2.x";
  std::string torchrun = std::string(py).substr(0, std::string(py).rfind('/')) + "/torchrun";
  if (testing::RunCommand({py, "-c", "import torch.distributed"}).exit_code != 0)
    GTEST_SKIP() << py << " cannot import torch.distributed";
  Recorded run = RecordRanks("comms-torch2",
                        {torchrun, "--standalone", "--nproc_per_node", "2", Program("ddp_train.py")},
                        {{"SLOW_RANK", "1"}, {"SLOW_KIND", "input"}});
  ExpectStraggler(run, 1, "input");
}

}  // namespace
}  // namespace strata

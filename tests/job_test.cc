// A job of four DDP ranks recorded as two "nodes" (two `strata record`s of
// two ranks each, one rank slowed in its input), reported as a job from its
// members' summaries: on local cores, on a real local Dask cluster (a
// scheduler and two worker processes: STRATA_DASK_PYTHON names a Python with
// `distributed`) with the same answer, and as the merged trace reports it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "testing.h"

namespace strata {
namespace {

using nlohmann::json;

std::string Program(const std::string& name) { return testing::SourceDir() + "/tests/programs/" + name; }

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// rank -> its own median iteration in ms, from the program's output.
std::map<int64_t, double> OwnTimes(const std::string& out) {
  std::map<int64_t, double> r;
  std::regex line(R"(rank (\d+) pid (\d+) median iteration ([0-9.]+) ms)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it)
    r[std::stoll((*it)[1])] = std::stod((*it)[3]);
  return r;
}

struct Job {
  std::string dir;
  std::map<int64_t, double> own;
};

// Two nodes of two ranks each, recorded at once; rank 3's input is slow.
const Job& TwoNodes() {
  static Job* job = [] {
    auto* j = new Job;
    j->dir = testing::TempDir("job-two-nodes");
    ::mkdir(j->dir.c_str(), 0755);
    const std::string port = std::to_string(20000 + ::getpid() % 20000);
    std::string script;
    for (int node = 0; node < 2; ++node)
      script += testing::StrataBin() + " record -q --force -o " + j->dir + "/node" + std::to_string(node) + " -- " +
                testing::kPython + " " + Program("launch_ranks.py") + " --nnodes 2 --node-rank " +
                std::to_string(node) + " --master-port " + port + " 2 " + Program("ddp_train.py") + " > " + j->dir +
                "/node" + std::to_string(node) + ".log 2>&1 & p" + std::to_string(node) + "=$!; ";
    script += "wait $p0; a=$?; wait $p1; b=$?; exit $((a | b))";
    auto r = testing::RunCommand({"bash", "-c", script}, {{"SLOW_RANK", "3"}, {"SLOW_KIND", "input"}, {"ITERS", "24"}},
                                 300);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err << ReadAll(j->dir + "/node0.log") << ReadAll(j->dir + "/node1.log");
    j->own = OwnTimes(ReadAll(j->dir + "/node0.log") + ReadAll(j->dir + "/node1.log"));
    return j;
  }();
  return *job;
}

TEST(Job, FourRanksOnTwoNodesFromTheirSummaries) {
  REQUIRE_TORCH();
  const Job& job = TwoNodes();
  ASSERT_EQ(job.own.size(), 4u);
  const std::string a = job.dir + "/node0", b = job.dir + "/node1";
  auto r = testing::RunCommand({testing::StrataBin(), "report", "--json", "-j", "2", a, b});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("summarized 2 traces on local cores"), std::string::npos) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["job"]["members"].size(), 2u);
  EXPECT_EQ(j["job"]["members"][0]["ranks"], json({0, 1}));
  EXPECT_EQ(j["job"]["members"][1]["ranks"], json({2, 3}));
  EXPECT_EQ(j["job"]["clocks"].size(), 1u) << "two recordings of one host share its clock";
  // Each member's own report came along.
  EXPECT_TRUE(j["job"]["members"][1]["report"].contains("findings"));
  // The straggler, with its phase; each rank's median step its own.
  const json& ranks = j["ranks"];
  ASSERT_EQ(ranks["ranks"].size(), 4u);
  ASSERT_TRUE(ranks["straggler"].is_object()) << ranks.dump(1);
  EXPECT_EQ(ranks["straggler"]["rank"], 3);
  EXPECT_EQ(ranks["straggler"]["phase"], "input");
  EXPECT_EQ(ranks["partial"], 0);
  for (const json& k : ranks["ranks"]) {
    double own = job.own.at(k["rank"].get<int64_t>());
    EXPECT_NEAR(k["step_p50_ns"].get<double>() / 1e6, own, 0.1 * own) << k.dump();
  }
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0]["category"], "straggler");
  EXPECT_EQ(j["findings"][0]["evidence"]["metrics"]["rank"], 3);

  // The merged trace reports the same ranks: one model of the whole job
  // against the members' summaries combined.
  const std::string merged = job.dir + "/merged";
  auto m = testing::RunCommand({testing::StrataBin(), "merge", "-f", "-o", merged, a, b});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  auto mr = testing::RunCommand({testing::StrataBin(), "report", "--json", merged});
  ASSERT_EQ(mr.exit_code, 0) << mr.err;
  EXPECT_EQ(json::parse(mr.out)["ranks"], ranks);
  // A merged trace reported as a job: its members' summaries.
  auto via_merged = testing::RunCommand({testing::StrataBin(), "report", "--json", "-j", "2", merged});
  ASSERT_EQ(via_merged.exit_code, 0) << via_merged.err;
  EXPECT_EQ(json::parse(via_merged.out)["ranks"], ranks);
  auto text = testing::RunCommand({testing::StrataBin(), "report", a, b});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Job: 2 traces, 4 ranks on 1 host"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("<- straggler"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[straggler] rank 3"), std::string::npos) << text.out;

  // On a real local Dask cluster: the same answer, byte for byte.
  const char* py = std::getenv("STRATA_DASK_PYTHON");
  if (!py || !*py || ::access(py, X_OK) != 0) GTEST_SKIP() << "STRATA_DASK_PYTHON names no Python with distributed";
  const std::string out = job.dir + "/dask.json";
  ::unlink(out.c_str());
  auto d = testing::RunCommand({Program("with_dask_cluster.sh"), py, job.dir + "/dask", "bash", "-c",
                                testing::StrataBin() + " report --json --cluster \"$DASK_SCHEDULER\" -o " + out + " " +
                                    a + " " + b},
                               {{"STRATA_DASK_PYTHON", py}}, 300);
  if (d.exit_code == 77) GTEST_SKIP() << d.out;
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_NE(d.err.find("on the Dask cluster at tcp://127.0.0.1:"), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("(2 workers)"), std::string::npos) << d.err;
  EXPECT_EQ(ReadAll(out), r.out);
}

TEST(Job, BadMembersAndClustersAreOneLineErrors) {
  const Job& job = TwoNodes();
  const std::string a = job.dir + "/node0";
  auto r = testing::RunCommand({testing::StrataBin(), "report", a, job.dir + "/missing"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("missing: no such file or directory"), std::string::npos) << r.err;
  // A member that is no trace: what its summary said.
  const std::string junk = job.dir + "/junk.json";
  std::ofstream(junk) << "{\"not\": \"a trace\"}";
  r = testing::RunCommand({testing::StrataBin(), "report", a, junk});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("junk.json: "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = testing::RunCommand({testing::StrataBin(), "report", "--html", "x.html", a, a});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // No scheduler there: said within the timeout (a failure, not bad input).
  const char* py = std::getenv("STRATA_DASK_PYTHON");
  if (!py || !*py) GTEST_SKIP() << "STRATA_DASK_PYTHON is not set";
  r = testing::RunCommand({testing::StrataBin(), "report", "--cluster", "tcp://127.0.0.1:9", a},
                          {{"STRATA_DASK_PYTHON", py}, {"STRATA_DASK_TIMEOUT", "2"}}, 120);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no Dask scheduler at tcp://127.0.0.1:9"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata

// The bundled example: `strata record -- dataflow` then `strata report --json`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "tests/testing.h"

namespace strata {
namespace {

TEST(Example, DataflowReportShowsTheDagNodesAndSteps) {
  std::string dir = testing::TempDir("dataflow");
  auto rec = testing::Record(dir, {DATAFLOW_BIN, "--steps", "12", "--threads", "2", "--size", "96"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  auto r = testing::RunCommand({testing::StrataBin(), "report", "--json", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["steps"]["count"], 12);
  EXPECT_GT(j["steps"]["p50_ns"].get<int64_t>(), 0);
  EXPECT_EQ(j["trace"]["lost_events"], 0);
  EXPECT_GT(j["trace"]["events"].get<int64_t>(), 12 * 9 * 2);
  const std::set<std::string> nodes = {"load_input", "conv3x3", "relu", "matmul_a", "matmul_b",
                                       "add", "tanh", "matmul_head", "reduce_loss"};
  std::set<std::string> seen;
  int64_t node_total = 0, matmul_self = 0, elementwise_self = 0;
  for (const auto& s : j["spans"]) {
    std::string name = s["name"];
    if (!nodes.count(name)) continue;
    seen.insert(name);
    EXPECT_EQ(s["count"], 12) << name;
    int64_t total = s["total_ns"], self = s["self_ns"];
    EXPECT_GT(total, 0) << name;
    // Nodes do not nest: self time is all of it.
    EXPECT_EQ(self, total) << name;
    node_total += total;
    if (name.rfind("matmul", 0) == 0) matmul_self += self;
    if (name == "relu" || name == "add") elementwise_self += self;
  }
  EXPECT_EQ(seen, nodes);
  // Plausible: O(n^3) matrix multiplies dominate O(n^2) elementwise nodes, and two
  // workers cannot do more than 2 x the wall time of the steps.
  EXPECT_GT(matmul_self, 5 * elementwise_self);
  int64_t steps_total = 0;
  for (const auto& d : j["steps"]["durations_ns"]) steps_total += d.get<int64_t>();
  EXPECT_LE(node_total, 2 * steps_total);
  testing::ExpectBabeltraceAgrees(dir);
}

}  // namespace
}  // namespace strata

// `strata sweep`: one recording per value, throughput per value, saturation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/summary.h"
#include "analysis/sweep.h"
#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

TEST(Sweep, ThroughputGrowsWithBatchSizeAndSummaryIsReportable) {
  std::string dir = testing::TempDir("sweep");
  auto r = testing::RunCommand({testing::StrataBin(), "sweep", "--param", "batch_size=1,4,16", "-o", dir, "--json",
                                "--", BATCHED_BIN, "--batch-size", "{batch_size}", "--steps", "9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 3u);
  EXPECT_EQ(j["throughput_unit"], "samples/s");
  std::vector<double> tp;
  for (const auto& p : j["points"]) {
    EXPECT_EQ(p["steps"], 8) << "9 steps minus 1 warm-up step";
    EXPECT_GT(p["step_p50_ns"].get<int64_t>(), 0);
    tp.push_back(p["throughput"]);
  }
  // Each figure is what the run's trace says: samples per step x measured steps
  // / their total duration, warm-up step excluded.
  const char* values[] = {"1", "4", "16"};
  for (int i = 0; i < 3; ++i) {
    model::Trace t = testing::Load(dir + "/batch_size=" + values[i]);
    auto steps = analysis::Steps(t);
    ASSERT_EQ(steps.count, 9u);
    double total = 0;
    for (size_t k = 1; k < steps.durations_ns.size(); ++k) total += static_cast<double>(steps.durations_ns[k]);
    EXPECT_NEAR(tp[static_cast<size_t>(i)], std::stod(values[i]) * 8 / (total / 1e9), 1e-6 * tp[static_cast<size_t>(i)]);
  }
  // A fixed per-batch stage amortized over 16x the samples: more samples/s
  // (about 6x on an idle machine; the margin leaves room for other jobs on it).
  EXPECT_GT(tp[2], 1.3 * tp[0]);
  EXPECT_TRUE(j["saturation"].is_string());
  for (const char* v : {"batch_size=1", "batch_size=4", "batch_size=16"})
    EXPECT_TRUE(IsDirectory(dir + "/" + v)) << v;
  auto rep = testing::RunCommand({testing::StrataBin(), "report", dir});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("Throughput saturates at batch_size="), std::string::npos) << rep.out;
}

TEST(Sweep, BadArgumentsExit2) {
  auto a = testing::RunCommand({testing::StrataBin(), "sweep", "--param", "batch_size", "--", "/bin/true"});
  EXPECT_EQ(a.exit_code, 2);
  auto b = testing::RunCommand({testing::StrataBin(), "sweep", "--param", "n=1,2", "--", "/bin/true"});
  EXPECT_EQ(b.exit_code, 2) << "no {n} placeholder and no --env";
  EXPECT_NE(b.err.find("placeholder"), std::string::npos);
}

TEST(Sweep, SaturationIsTheFirstPointWithin5PercentOfTheBest) {
  analysis::SweepSummary s;
  for (double t : {100.0, 180.0, 290.0, 300.0, 296.0}) {
    analysis::SweepPoint p;
    p.steps = 10;
    p.throughput = t;
    s.points.push_back(p);
  }
  analysis::SummarizeSweep(&s);
  EXPECT_EQ(s.best, 3);
  EXPECT_EQ(s.saturation, 2);  // 290 >= 0.95 * 300
  EXPECT_NEAR(s.gain_pct[1], 80.0, 1e-9);
}

}  // namespace
}  // namespace strata

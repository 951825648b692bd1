// The memory analysis and the memory_allocation finding on a real PyTorch CPU
// program with a known planted cause (tests/programs/torch_temporaries.py: a
// fresh 64 MiB zero-filled buffer in every step's forward). Recorded with
// `strata record` (python3 under LD_PRELOAD: not under ASan); skipped when this
// strata was built without libtorch or the system Python has no torch.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "analysis/memory.h"
#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

using testing::kPython;

using nlohmann::json;
constexpr int64_t kTempBytes = 64 << 20;  // --temp-mib 64: 16M float32 zeros

std::string Program() { return testing::SourceDir() + "/tests/programs/torch_temporaries.py"; }

// One recording shared by the tests (recording costs seconds).
const std::string& Recorded() {
  static std::string dir;
  if (dir.empty()) {
    dir = testing::TempDir("memory-temporaries");
    // Framework level only: the OS level adds seconds and nothing this test reads.
    auto rec = testing::Record(dir, {kPython, Program(), "--temp-mib", "64", "--steps", "6"}, {"--no-os"});
    EXPECT_EQ(rec.exit_code, 0) << rec.err;
  }
  return dir;
}

json ReportJson(const std::string& dir) {
  auto r = testing::RunCommand({testing::StrataBin(), "report", "--json", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

// Median step time of an unrecorded run (the median: the machine is shared).
double StepNs(const std::vector<std::string>& extra) {
  std::vector<std::string> cmd = {kPython, Program(), "--temp-mib", "64", "--steps", "8"};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  auto r = testing::RunCommand(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out)["median_step_ns"].get<double>() : 0;
}

TEST(MemoryTorch, PeakIsTheStepTemporaryAndItsOpIsNamed) {
  REQUIRE_TORCH();
  model::Trace t = testing::Load(Recorded());
  analysis::MemorySummary s = analysis::Memory(t);
  const analysis::DeviceMemory* host = nullptr;
  for (const auto& d : s.devices)
    if (d.device == model::kNone && (!host || d.peak_bytes > host->peak_bytes)) host = &d;
  ASSERT_NE(host, nullptr);
  // The peak is the 64 MiB buffer on top of a model of under 100 KiB.
  EXPECT_NEAR(static_cast<double>(host->peak_bytes), static_cast<double>(kTempBytes), 0.05 * kTempBytes);
  EXPECT_GE(host->peak_bytes, kTempBytes);
  EXPECT_GE(host->peak_step, 0) << "the peak lies inside a step";
  ASSERT_FALSE(host->live_at_peak.empty());
  EXPECT_EQ(host->live_at_peak[0].name, "aten::zeros");
  EXPECT_EQ(host->live_at_peak[0].bytes, kTempBytes);
  EXPECT_EQ(host->live_at_peak[0].count, 1u);
  // Every step allocates and frees the buffer: a temporary of at least 64 MiB per step.
  ASSERT_GE(host->churn.steps, 5u);
  EXPECT_GE(host->churn.temporary_bytes.mean, static_cast<double>(kTempBytes));
  EXPECT_GE(host->churn.bytes_allocated.mean, static_cast<double>(kTempBytes));
  EXPECT_GE(host->churn.allocs.mean, 5.0);

  // The report's JSON carries the same, with a timeline for the chart.
  json j = ReportJson(Recorded());
  ASSERT_TRUE(j.contains("memory"));
  bool found = false;
  for (const auto& d : j["memory"]["devices"]) {
    if (d["peak_bytes"] != host->peak_bytes) continue;
    found = true;
    EXPECT_EQ(d["device"], "host");
    EXPECT_EQ(d["live_at_peak"][0]["name"], "aten::zeros");
    EXPECT_LE(d["timeline"].size(), 2001u);
    EXPECT_GE(d["churn"]["temporary_bytes_per_step"]["mean"].get<double>(), static_cast<double>(kTempBytes));
  }
  EXPECT_TRUE(found);
}

// The top finding names the planted cause, and applying its suggestion (reuse a
// preallocated buffer: --reuse) gives the speed-up it estimated within a factor of 2.
TEST(MemoryTorch, FindingNamesTheTemporaryAndEstimatesTheFix) {
  REQUIRE_TORCH();
  json j = ReportJson(Recorded());
  ASSERT_TRUE(j.contains("findings"));
  ASSERT_FALSE(j["findings"].empty()) << j.dump(1).substr(0, 2000);
  const json& f = j["findings"][0];
  EXPECT_EQ(f["category"], "memory_allocation") << f.dump(1);
  const json& inv = f["evidence"]["involved"];
  ASSERT_FALSE(inv.empty());
  EXPECT_EQ(inv[0], "aten::zeros");
  const json& m = f["evidence"]["metrics"];
  EXPECT_GE(m["temporary_bytes_per_step"].get<double>(), static_cast<double>(kTempBytes));
  EXPECT_GT(m["allocation_ns_per_step"].get<double>(), 0);
  std::string suggestion = f["suggestion"];
  EXPECT_NE(suggestion.find("aten::zeros"), std::string::npos) << suggestion;
  EXPECT_NE(suggestion.find("out="), std::string::npos) << suggestion;

  double estimated = f["estimated_gain_pct"].get<double>();
  double before = StepNs({}), after = StepNs({"--reuse"});
  ASSERT_GT(before, 0);
  double actual = 100.0 * (before - after) / before;
  EXPECT_GE(estimated, actual / 2) << "estimated " << estimated << "%, measured " << actual << "%";
  EXPECT_LE(estimated, actual * 2) << "estimated " << estimated << "%, measured " << actual << "%";
}

// Tensors a Dataset makes for each sample (synthetic or decoded data) are the
// input's time, which input_pipeline claims: not temporaries the step could
// keep. (Before, memory_allocation said "79% of the step getting fresh memory"
// here, counting the data loading's aten::randn.)
TEST(MemoryTorch, AllocationsOfDataLoadingAreTheInputsNotTemporaries) {
  REQUIRE_TORCH();
  std::string dir = testing::TempDir("memory-dataset-alloc");
  auto rec = testing::Record(dir, {kPython, testing::SourceDir() + "/tests/programs/torch_dataset_alloc.py"}, {"--no-os"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  json j = ReportJson(dir);
  ASSERT_TRUE(j.contains("findings"));
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0]["category"], "input_pipeline") << j["findings"][0].dump(1);
  for (const json& f : j["findings"]) EXPECT_NE(f["category"], "memory_allocation") << f.dump(1);
}

}  // namespace
}  // namespace strata

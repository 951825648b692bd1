// Roofline and its findings on strata traces of real PyTorch programs on the CPU
// (recorded with `strata record --shapes`; peaks: the host's, measured by
// `strata record` into the manifest). Skipped when this strata was built
// without libtorch or the system Python has no torch.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/findings.h"
#include "analysis/roofline.h"
#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

using testing::kPython;

const analysis::RooflinePoint* Find(const std::vector<analysis::RooflinePoint>& v, std::string_view name) {
  for (const auto& p : v)
    if (p.name == name) return &p;
  return nullptr;
}

// The host roof must be the manifest's: the figures `strata record` measured.
void ExpectHostRoof(const model::Trace& t, const analysis::RooflineResult& r) {
  const analysis::Roof* roof = r.RoofOf(r.primary);
  ASSERT_NE(roof, nullptr) << "no host peaks in the manifest";
  EXPECT_EQ(roof->name, "host fp32");
  EXPECT_EQ(r.source, "manifest (host peaks measured by strata record)");
  nlohmann::json m = nlohmann::json::parse(t.manifest_json);
  EXPECT_DOUBLE_EQ(roof->peak_flops, m["host"]["peak_flops_f32"].get<double>());
  EXPECT_DOUBLE_EQ(roof->bandwidth, m["host"]["memory_bandwidth"].get<double>());
}

// An MLP's linears: estimated intensity against the analytic one, and the
// classification against the host's ridge point.
TEST(RooflineTorch, MlpLinearsMatchTheirAnalyticIntensity) {
  REQUIRE_TORCH();
  std::string dir = testing::TempDir("roofline-mlp");
  auto rec = testing::Record(dir, {kPython, testing::SourceDir() + "/tests/programs/torch_train.py", "--model", "mlp",
                                   "--steps", "3", "--batch", "64"},
                             {"--shapes"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  model::Trace t = testing::Load(dir);
  analysis::RooflineResult r = analysis::Roofline(t);
  ExpectHostRoof(t, r);
  const analysis::Roof* roof = r.RoofOf(r.primary);
  ASSERT_NE(roof, nullptr);

  // Linear(256, 512), Linear(512, 512), Linear(512, 10) on a batch of 64: each
  // forward runs all three, so the aggregate is their sums' ratio.
  auto flops = [](double b, double k, double n) { return 2 * b * k * n + b * n; };
  auto bytes = [](double b, double k, double n) { return 4 * (b * k + n * k + n + b * n); };
  double f = flops(64, 256, 512) + flops(64, 512, 512) + flops(64, 512, 10);
  double by = bytes(64, 256, 512) + bytes(64, 512, 512) + bytes(64, 512, 10);
  double analytic = f / by;
  const analysis::RooflinePoint* linear = Find(r.ops, "aten::linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_GT(linear->intensity, analytic / 1.5);
  EXPECT_LT(linear->intensity, analytic * 1.5);
  EXPECT_EQ(linear->count % 3, 0u);
  EXPECT_EQ(linear->bound, analytic >= roof->ridge() ? "compute" : "memory") << "ridge " << roof->ridge();
  // Elementwise ops: at most a few FLOPs per element of 4 bytes.
  for (const char* op : {"aten::relu", "aten::add_"}) {
    const analysis::RooflinePoint* p = Find(r.ops, op);
    ASSERT_NE(p, nullptr) << op;
    EXPECT_LT(p->intensity, 0.5) << op;
    EXPECT_EQ(p->bound, "memory") << op;
  }
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_GE(r.steps[0].count, 2u);
}

// Square matrix products: intensity n/6 (2n^3 FLOPs over three n x n fp32
// matrices), exactly as the cost model counts it.
TEST(RooflineTorch, MatmulIntensityIsAnalytic) {
  REQUIRE_TORCH();
  std::string dir = testing::TempDir("roofline-matmul");
  auto rec = testing::Record(dir, {kPython, testing::SourceDir() + "/tests/programs/roofline_workload.py", "--kind",
                                   "matmul", "--n", "192", "--steps", "3"},
                             {"--shapes"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  model::Trace t = testing::Load(dir);
  analysis::RooflineResult r = analysis::Roofline(t);
  ExpectHostRoof(t, r);
  const analysis::RooflinePoint* mm = Find(r.ops, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->count, 12u);
  EXPECT_DOUBLE_EQ(mm->intensity, 192.0 / 6);
  EXPECT_EQ(mm->bound, 192.0 / 6 >= r.RoofOf(r.primary)->ridge() ? "compute" : "memory");
}

// Elementwise ops on tensors larger than the caches: the memory_bound finding
// comes first and names them.
TEST(RooflineTorch, ElementwiseStepIsDiagnosedMemoryBound) {
  REQUIRE_TORCH();
  std::string dir = testing::TempDir("roofline-memory");
  auto rec = testing::Record(dir, {kPython, testing::SourceDir() + "/tests/programs/roofline_workload.py", "--kind",
                                   "memory", "--n", std::to_string(1 << 23), "--steps", "4"},
                             {"--shapes"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  model::Trace t = testing::Load(dir);
  std::vector<analysis::Finding> f = analysis::Diagnose(t);
  // The program's own causes: load from processes outside the recording (other
  // work on a shared machine) is reported too, but it is not this program's.
  std::erase_if(f, [](const analysis::Finding& x) {
    return std::find(x.involved.begin(), x.involved.end(), "(outside the recording)") != x.involved.end();
  });
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].category, "memory_bound") << f[0].title;
  std::set<std::string> involved(f[0].involved.begin(), f[0].involved.end());
  for (const char* op : {"aten::add", "aten::relu", "aten::mul"}) EXPECT_TRUE(involved.count(op)) << op;
  EXPECT_GT(f[0].estimated_gain_pct, 2.0);
  EXPECT_LE(f[0].estimated_gain_pct, 50.0) << "conservative: at most half the time at the gap to the roof";
  for (const auto& x : f) EXPECT_NE(x.category, "compute_bound");
}

}  // namespace
}  // namespace strata

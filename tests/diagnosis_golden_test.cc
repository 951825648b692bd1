// Golden files of the diagnosis on the shared real GPU traces (the same 11 the
// HTA goldens use): each step's critical path (its length and the items on it)
// and the findings (category, title, the involved names, estimated gain). An
// imported trace has no timing noise, so the figures are exact; a change here
// is a change of the analyses, to be reviewed. STRATA_UPDATE_GOLDEN=1 rewrites
// tests/golden/diagnosis/*.json. Skipped with a message where the shared folder
// is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/critical_path.h"
#include "analysis/findings.h"
#include "testing.h"

namespace strata {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

double Round(double v, double unit) { return std::round(v / unit) * unit; }

std::vector<std::string> Ids() {
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() + "/tests/golden/hta"))
    if (e.path().extension() == ".json") ids.push_back(e.path().stem().string());
  std::sort(ids.begin(), ids.end());
  return ids;
}

json Diagnosis(const model::Trace& t) {
  json cp = json::array();
  std::vector<analysis::StepCriticalPath> paths = analysis::CriticalPaths(t);
  for (const auto& p : paths) {
    json items = json::array();
    for (size_t i = 0; i < p.items.size() && i < 5; ++i)
      items.push_back({{"name", p.items[i].name}, {"kind", p.items[i].kind}, {"on_path_ns", p.items[i].on_path_ns},
                       {"share", Round(p.items[i].share, 1e-4)}});
    cp.push_back({{"step", p.step}, {"length_ns", p.end - p.start}, {"segments", p.segments.size()}, {"items", items}});
  }
  json findings = json::array();
  analysis::ReplayCheck check;
  for (const auto& f : analysis::Diagnose(t, {}, &check)) {
    std::vector<std::string> involved(f.involved.begin(), f.involved.begin() + std::min<size_t>(5, f.involved.size()));
    findings.push_back({{"category", f.category}, {"title", f.title}, {"involved", involved},
                        {"estimated_gain_pct", Round(f.estimated_gain_pct, 0.1)}});
  }
  // The what-if replay of the unchanged steps reproduces them: every gain is
  // relative to it.
  json replay = {{"steps", check.steps}, {"replayed_step_ns", Round(check.replayed_ns, 1)},
                 {"error_pct", Round(check.error_pct, 0.1)}};
  std::fprintf(stderr, "replay: %s\n", replay.dump().c_str());
  return {{"critical_path", cp}, {"findings", findings}, {"replay", replay}};
}

class DiagnosisGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DiagnosisGolden, MatchesGolden) {
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout: diagnosis goldens not checked";
  std::ifstream hta(testing::SourceDir() + "/tests/golden/hta/" + GetParam() + ".json");
  std::string source = json::parse(hta)["source"].get<std::string>();
  model::Trace t = testing::Load(data + "/" + source);
  json got = {{"source", source}, {"diagnosis", Diagnosis(t)}};
  // Every step with a critical path has items that tile it.
  for (const auto& p : got["diagnosis"]["critical_path"]) EXPECT_GT(p["segments"].get<size_t>(), 0u) << source;
  std::string path = testing::SourceDir() + "/tests/golden/diagnosis/" + GetParam() + ".json";
  if (std::getenv("STRATA_UPDATE_GOLDEN")) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << got.dump(1) << "\n";
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  json want = json::parse(in);
  EXPECT_EQ(got, want) << "got:\n" << got.dump(1);
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, DiagnosisGolden, ::testing::ValuesIn(Ids()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace strata

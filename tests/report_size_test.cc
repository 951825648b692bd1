// The JSON and HTML reports of a recorded PyTorch training loop stay sized for
// people: a 30 s Transformer run gave 95 MB of JSON (52 MB of critical-path
// segments) and 47 MB of HTML, a 22-iteration loop 6.5 MB. The summary must not
// grow with the number of steps; --full keeps every segment.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

TEST(ReportSize, TransformerLoopJsonIsASummaryAndFullKeepsTheDetail) {
  REQUIRE_TORCH();
  std::string dir = testing::TempDir("report_size_tlm");
  auto rec = testing::Record(dir, {testing::kPython, testing::SourceDir() + "/tests/workloads/transformer_lm.py",
                                   "--iters", "22", "--quiet"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  auto s = testing::RunCommand({testing::StrataBin(), "report", "--json", dir});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto f = testing::RunCommand({testing::StrataBin(), "report", "--json", "--full", dir});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  auto js = nlohmann::json::parse(s.out);
  auto jf = nlohmann::json::parse(f.out);
  ASSERT_GE(js["steps"]["count"].get<int>(), 22);
  // Before: 6.5 MB, most of it every segment of every step's critical path.
  EXPECT_LT(s.out.size(), 1024u * 1024) << "default JSON of a 22-step Transformer loop";
  for (const auto& st : js["critical_path"]["steps"]) EXPECT_FALSE(st.contains("segments"));
  EXPECT_LE(js["framework"]["ops"].size(), 20u);
  EXPECT_GT(js["detail"]["omitted_rows"]["framework.ops"].get<int>(), 0) << "the summary says what it left out";
  // --full: every analysed step's segments, and all the ops.
  size_t segments = 0;
  for (const auto& st : jf["critical_path"]["steps"]) segments += st["segments"].size();
  EXPECT_GT(segments, 22u * 100) << "a training step of a Transformer has hundreds of ops on its path";
  EXPECT_EQ(jf["framework"]["ops"].size(),
            js["framework"]["ops"].size() + js["detail"]["omitted_rows"]["framework.ops"].get<size_t>());
  EXPECT_GT(f.out.size(), 4 * s.out.size());
  // The HTML page embeds the summary.
  std::string html = dir + ".html";
  auto h = testing::RunCommand({testing::StrataBin(), "report", dir, "--html", html});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_LT(std::filesystem::file_size(html), 2u * 1024 * 1024);
}

}  // namespace
}  // namespace strata

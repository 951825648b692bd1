// `strata report --html`: one self-contained file that renders in headless Chromium
// with every chart the trace has data for.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

std::string Chromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"})
    if (testing::RunCommand({"sh", "-c", std::string("command -v ") + c}).exit_code == 0) return c;
  return "";
}

struct Rendered {
  std::string dom;
  double nonwhite = 0;
};

Rendered Render(const std::string& html_path, const std::string& png) {
  Rendered r;
  std::string chromium = Chromium();
  std::vector<std::string> common = {chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                     "--user-data-dir=" + html_path + ".profile"};
  auto dom_args = common;
  dom_args.insert(dom_args.end(), {"--virtual-time-budget=5000", "--dump-dom", "file://" + html_path});
  r.dom = testing::RunCommand(dom_args, {}, 120).out;
  auto shot_args = common;
  shot_args.insert(shot_args.end(), {"--window-size=1300,2400", "--screenshot=" + png, "file://" + html_path});
  testing::RunCommand(shot_args, {}, 120);
  auto stats = testing::RunCommand({"python3", testing::SourceDir() + "/tests/tools/png_stats.py", png});
  std::istringstream in(stats.out);
  int w = 0, h = 0;
  in >> w >> h >> r.nonwhite;
  return r;
}

TEST(HtmlReport, DataflowTraceRendersEveryChartInChromium) {
  if (Chromium().empty()) GTEST_SKIP() << "chromium is not installed; the HTML report was not rendered";
  std::string dir = testing::TempDir("html");
  ASSERT_EQ(testing::Record(dir, {DATAFLOW_BIN, "--steps", "6", "--size", "64"}).exit_code, 0);
  std::string html = dir + "/report.html";
  auto r = testing::RunCommand({testing::StrataBin(), "report", dir, "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto text = ReadFile(html);
  ASSERT_TRUE(text.ok());
  // Self-contained: nothing is fetched from anywhere.
  EXPECT_EQ(text->find("http://"), text->find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(text->find("https://"), std::string::npos);
  EXPECT_EQ(text->find("<script src"), std::string::npos);
  Rendered out = Render(html, dir + "/report.png");
  EXPECT_NE(out.dom.find("data-rendered=\"1\""), std::string::npos) << "the report script did not finish";
  for (const char* id : {"chart-steps", "chart-breakdown", "chart-critical-path", "chart-top-ops"})
    EXPECT_NE(out.dom.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  for (const char* id : {"overview", "findings", "steps", "critical-path", "top-ops", "streams"})
    EXPECT_NE(out.dom.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  // The screenshot is a page with content, not a blank or error page.
  EXPECT_GT(out.nonwhite, 0.03) << "screenshot looks empty";
}

// A real GPU trace (ResNet-50 on a V100, shapes recorded by torch.profiler):
// every chart of the report is drawn, and the roofline has its roofs and points.
TEST(HtmlReport, SharedGpuTraceRendersEveryChart) {
  if (Chromium().empty()) GTEST_SKIP() << "chromium is not installed; the HTML report was not rendered";
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout";
  std::string dir = testing::TempDir("html_roofline");
  std::filesystem::create_directories(dir);
  std::string html = dir + "/resnet50.html";
  auto r = testing::RunCommand({testing::StrataBin(), "report", "--html", html,
                                data + "/kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Rendered out = Render(html, dir + "/resnet50.png");
  size_t chart = out.dom.find("id=\"chart-roofline\"");
  ASSERT_NE(chart, std::string::npos);
  size_t end = out.dom.find("</svg>", chart);
  std::string svg = out.dom.substr(chart, end - chart);
  EXPECT_NE(svg.find("class=\"roof\""), std::string::npos) << "no roof drawn";
  size_t points = 0;
  for (size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1)) ++points;
  EXPECT_GE(points, 10u) << "kernel points";
  EXPECT_NE(out.dom.find("V100 SXM2 datasheet"), std::string::npos);
  for (const char* id : {"chart-steps", "chart-breakdown", "chart-top-ops", "chart-top-kernels", "chart-critical-path",
                         "chart-roofline", "chart-memory"})
    EXPECT_NE(out.dom.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  for (const char* id : {"overview", "findings", "steps", "roofline", "memory", "critical-path"})
    EXPECT_NE(out.dom.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_GT(out.nonwhite, 0.03);
}

TEST(HtmlReport, MemoryTimelineWithPeakAndLiveSet) {
  if (Chromium().empty()) GTEST_SKIP() << "chromium is not installed; the HTML report was not rendered";
  // A Kineto trace with "[memory]" events: 1 KiB allocated by aten::addmm on device 0.
  std::string dir = testing::TempDir("html_memory");
  std::filesystem::create_directories(dir);
  std::string html = dir + "/memory.html";
  auto r = testing::RunCommand(
      {testing::StrataBin(), "report", testing::SourceDir() + "/tests/data/kineto/small_trace.json", "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Rendered out = Render(html, dir + "/memory.png");
  EXPECT_NE(out.dom.find("data-rendered=\"1\""), std::string::npos) << "the report script did not finish";
  EXPECT_NE(out.dom.find("<section id=\"memory\""), std::string::npos);
  EXPECT_NE(out.dom.find("id=\"chart-memory\""), std::string::npos);
  EXPECT_NE(out.dom.find("class=\"mem-peak\""), std::string::npos) << "the peak is not marked";
  EXPECT_NE(out.dom.find("peak 1.00 KiB"), std::string::npos);
  EXPECT_NE(out.dom.find("<td class=\"\">aten::addmm</td>"), std::string::npos) << "no live-at-peak row";
}

// A plain C program (no framework, no instrumentation): the OS level has its
// sections, and nothing is drawn for what the trace does not have (the time
// breakdown and the top-spans table were drawn empty).
TEST(HtmlReport, PlainProgramShowsItsOsLevelAndNoEmptySection) {
  if (Chromium().empty()) GTEST_SKIP() << "chromium is not installed; the HTML report was not rendered";
  std::string dir = testing::TempDir("html_plain");
  ASSERT_EQ(testing::Record(dir, {testing::TestProgram("plain_c"), "10", "2"}).exit_code, 0);
  std::string html = dir + "/report.html";
  auto r = testing::RunCommand({testing::StrataBin(), "report", dir, "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Rendered out = Render(html, dir + "/report.png");
  EXPECT_NE(out.dom.find("data-rendered=\"1\""), std::string::npos) << "the report script did not finish";
  for (const char* id : {"overview", "os-threads", "os-samples", "not-recorded"})
    EXPECT_NE(out.dom.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  for (const char* id : {"breakdown", "top-ops", "steps", "throughput", "modules"})
    EXPECT_EQ(out.dom.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id << " drawn with nothing in it";
  EXPECT_NE(out.dom.find("id=\"chart-os-samples\""), std::string::npos);
  EXPECT_NE(out.dom.find(">worker<"), std::string::npos) << "the program's own function among the sampled ones";
  EXPECT_EQ(out.dom.find("<tbody></tbody>"), std::string::npos) << "a table with no rows";
}

// A PyTorch program: throughput and data wait per step, and its modules.
TEST(HtmlReport, PyTorchProgramShowsThroughputAndModules) {
  if (Chromium().empty()) GTEST_SKIP() << "chromium is not installed; the HTML report was not rendered";
  REQUIRE_TORCH();
  std::string dir = testing::TempDir("html_torch");
  ASSERT_EQ(testing::Record(dir, {testing::kPython, testing::SourceDir() + "/tests/workloads/transformer_lm.py", "--iters",
                                  "3", "--quiet", "--seq", "16", "--d-model", "32", "--layers", "1"})
                .exit_code,
            0);
  std::string html = dir + "/report.html";
  auto r = testing::RunCommand({testing::StrataBin(), "report", dir, "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Rendered out = Render(html, dir + "/report.png");
  for (const char* id : {"throughput", "modules", "os-threads", "os-samples", "top-ops"})
    EXPECT_NE(out.dom.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(out.dom.find("id=\"chart-data-wait\""), std::string::npos);
  EXPECT_NE(out.dom.find("id=\"chart-modules\""), std::string::npos);
}

TEST(HtmlReport, SweepDirectoryRendersTheThroughputCurve) {
  if (Chromium().empty()) GTEST_SKIP() << "chromium is not installed; the HTML report was not rendered";
  std::string dir = testing::TempDir("html_sweep");
  auto s = testing::RunCommand({testing::StrataBin(), "sweep", "--param", "batch_size=1,4", "-o", dir, "--", BATCHED_BIN,
                                "--batch-size", "{batch_size}", "--steps", "4"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::string html = dir + "/sweep.html";
  ASSERT_EQ(testing::RunCommand({testing::StrataBin(), "report", dir, "--html", html}).exit_code, 0);
  Rendered out = Render(html, dir + "/sweep.png");
  EXPECT_NE(out.dom.find("id=\"chart-sweep\""), std::string::npos);
  EXPECT_GT(out.nonwhite, 0.01);
}

}  // namespace
}  // namespace strata

// Work spread over cores (base/parallel.h) and the report built that way: each
// item runs once, an item's exception reaches the caller, and a report whose
// sections and critical paths are built in parallel is byte for byte the one
// built on one thread, on every shared trace and on recorded ones.
#include <cstdlib>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/parallel.h"
#include "importers/load.h"
#include "report/report.h"
#include "testing.h"

namespace strata {
namespace {

TEST(ParallelFor, RunsEveryItemOnceOnEveryThreadCount) {
  for (size_t threads : {1, 2, 3, 8}) {
    std::vector<std::atomic<int>> hits(1000);
    base::ParallelFor(hits.size(), [&](size_t i) { hits[i].fetch_add(1); }, threads);
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i << ", " << threads << " threads";
  }
  base::ParallelFor(0, [](size_t) { FAIL() << "an item of nothing ran"; }, 4);
}

TEST(ParallelFor, NestedLoopsFinish) {
  std::atomic<int> n{0};
  base::ParallelFor(4, [&](size_t) { base::ParallelFor(16, [&](size_t) { n.fetch_add(1); }, 3); }, 3);
  EXPECT_EQ(n.load(), 64);
}

TEST(ParallelFor, AnItemsExceptionReachesTheCaller) {
  std::atomic<int> ran{0};
  EXPECT_THROW(base::ParallelFor(
                   100,
                   [&](size_t i) {
                     ran.fetch_add(1);
                     if (i == 7) throw std::runtime_error("item 7");
                   },
                   4),
               std::runtime_error);
  EXPECT_GE(ran.load(), 8);
}

TEST(ParallelFor, ThreadsComeFromTheEnvironment) {
  ::setenv("STRATA_THREADS", "3", 1);
  EXPECT_EQ(base::WorkerThreads(), 3u);
  ::setenv("STRATA_THREADS", "zero", 1);
  EXPECT_GE(base::WorkerThreads(), 1u);
  ::unsetenv("STRATA_THREADS");
  EXPECT_GE(base::WorkerThreads(), 1u);
}

std::string ReportJson(const model::Trace& t, const char* threads) {
  ::setenv("STRATA_THREADS", threads, 1);
  report::ReportOptions opt;
  opt.full = true;
  opt.what_if = true;
  report::Report r(t, opt);
  std::string out = r.Json().dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + r.Text();
  ::unsetenv("STRATA_THREADS");
  return out;
}

void ExpectSameInParallel(const std::string& path) {
  SCOPED_TRACE(path);
  auto t = importers::LoadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::string one = ReportJson(*t, "1");
  // More threads than cores too: every interleaving the scheduler offers.
  for (const char* n : {"2", "6"}) {
    std::string many = ReportJson(*t, n);
    EXPECT_EQ(many.size(), one.size()) << n << " threads";
    EXPECT_TRUE(many == one) << "the report built on " << n << " threads differs from the one built on 1";
  }
}

TEST(ParallelReport, SharedTracesReportAsOnOneThread) {
  auto traces = testing::SharedTraces();
  if (traces.empty()) GTEST_SKIP() << "no shared external data (../shared/data/external)";
  for (const std::string& p : traces) ExpectSameInParallel(p);
}

TEST(ParallelReport, RecordedProgramsReportAsOnOneThread) {
  // Steps, spans, the OS level (no shared data needed); and PyTorch's ops,
  // modules and memory where this Python has torch.
  std::string dir = testing::TempDir("parallel_recorded") + "/trace";
  auto r = testing::Record(dir, {testing::kPython, testing::SourceDir() + "/tests/programs/periodic_stall.py", "25"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectSameInParallel(dir);
  if (testing::RunCommand({testing::kPython, "-c", "import torch"}).exit_code != 0)
    GTEST_SKIP() << testing::kPython << " cannot import torch";
  std::string torch_dir = testing::TempDir("parallel_torch") + "/trace";
  r = testing::Record(torch_dir, {testing::kPython, testing::SourceDir() + "/tests/programs/torch_train.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectSameInParallel(torch_dir);
}

}  // namespace
}  // namespace strata

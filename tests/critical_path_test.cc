// Critical path on real traces of the dataflow example and on hand-built traces
// with accelerator work.
#include <gtest/gtest.h>

#include <set>

#include "analysis/critical_path.h"
#include "tests/testing.h"

namespace strata {
namespace {

std::set<std::string> WorkOnPath(const analysis::StepCriticalPath& p) {
  std::set<std::string> out;
  for (const auto& it : p.items)
    if (it.kind != "wait") out.insert(it.name);
  return out;
}

void ExpectSegmentsCoverTheStep(const analysis::StepCriticalPath& p) {
  int64_t sum = 0, at = p.start;
  for (const auto& s : p.segments) {
    EXPECT_EQ(s.start, at) << "segments must tile the step without gaps or overlaps";
    EXPECT_GT(s.end, s.start);
    sum += s.end - s.start;
    at = s.end;
  }
  EXPECT_EQ(sum, p.end - p.start);
}

TEST(CriticalPath, DataflowDagOnTwoWorkersFollowsTheEdges) {
  std::string dir = testing::TempDir("cp_dataflow");
  ASSERT_EQ(testing::Record(dir, {DATAFLOW_BIN, "--steps", "6", "--threads", "2", "--size", "96"}).exit_code, 0);
  model::Trace t = testing::Load(dir);
  auto paths = analysis::CriticalPaths(t);
  ASSERT_EQ(paths.size(), 6u);
  for (const auto& p : paths) {
    ExpectSegmentsCoverTheStep(p);
    std::set<std::string> work = WorkOnPath(p);
    // The chain every step must go through, whichever worker ran each node.
    for (const char* n : {"load_input", "conv3x3", "relu", "add", "tanh", "matmul_head", "reduce_loss"})
      EXPECT_TRUE(work.count(n)) << n << " should be on step " << p.step << "'s critical path";
    EXPECT_TRUE(work.count("matmul_a") || work.count("matmul_b"));
    // Nothing else: every work item on the path is a node of the graph.
    EXPECT_LE(work.size(), 9u);
    // A matmul that ran beside the critical one shows up as slack, never on the path too.
    for (const auto& sl : p.slack) {
      EXPECT_FALSE(work.count(sl.name)) << sl.name;
      EXPECT_GE(sl.slack_ns, 0);
    }
  }
}

TEST(CriticalPath, SingleWorkerRunsEverythingOnThePath) {
  std::string dir = testing::TempDir("cp_dataflow_1");
  ASSERT_EQ(testing::Record(dir, {DATAFLOW_BIN, "--steps", "4", "--threads", "1", "--size", "96"}).exit_code, 0);
  model::Trace t = testing::Load(dir);
  auto paths = analysis::CriticalPaths(t);
  ASSERT_EQ(paths.size(), 4u);
  for (const auto& p : paths) {
    ExpectSegmentsCoverTheStep(p);
    EXPECT_EQ(WorkOnPath(p).size(), 9u) << "one worker runs all 9 nodes in sequence";
    EXPECT_TRUE(p.slack.empty());
  }
}

// A CPU thread launches two kernels on one stream and synchronizes: the path
// is launch -> kernel -> kernel (queue-bound) -> back to the thread.
TEST(CriticalPath, LaunchKernelsAndSynchronize) {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7});
  auto& sl = t.slices;
  auto name = [&t](const char* n) { return t.strings.Intern(n); };
  uint32_t step = sl.Add(0, 1000, 0, name("step"), model::SliceKind::kStep, 1);
  uint32_t l1 = sl.Add(10, 20, 0, name("cudaLaunchKernel"), model::SliceKind::kRuntime);
  uint32_t l2 = sl.Add(40, 20, 0, name("cudaLaunchKernel"), model::SliceKind::kRuntime);
  uint32_t sync = sl.Add(70, 890, 0, name("cudaDeviceSynchronize"), model::SliceKind::kRuntime);
  uint32_t k1 = sl.Add(50, 500, 1, name("gemm"), model::SliceKind::kKernel);
  uint32_t k2 = sl.Add(551, 400, 1, name("relu_kernel"), model::SliceKind::kKernel);
  (void)step;
  (void)sync;
  t.device.Add(k1, 0, 7, 1);
  t.device.launch.back() = static_cast<int32_t>(l1);
  t.device.Add(k2, 0, 7, 2);
  t.device.launch.back() = static_cast<int32_t>(l2);
  t.Finalize();
  auto paths = analysis::CriticalPaths(t);
  ASSERT_EQ(paths.size(), 1u);
  const auto& p = paths[0];
  ExpectSegmentsCoverTheStep(p);
  std::map<std::string, int64_t> on;
  for (const auto& it : p.items) on[it.kind + ":" + it.name] = it.on_path_ns;
  EXPECT_EQ(on["kernel:gemm"], 500);
  EXPECT_EQ(on["kernel:relu_kernel"], 400);
  // The second kernel waited for the first (1 ns gap), not for its launch.
  EXPECT_EQ(on["runtime:cudaLaunchKernel"], 20) << "only the first launch is on the path";
  // The sync returned 9 ns after the last kernel ended: that is all it adds.
  EXPECT_EQ(on["wait:in cudaDeviceSynchronize"], 9);
  // Before the first launch the thread did nothing recorded: 10 ns of wait.
  EXPECT_EQ(p.end - p.start, 1000);
}

}  // namespace
}  // namespace strata

#include "analysis/diff.h"

namespace strata {
namespace {

TEST(Diff, BiggerMatricesSlowTheMatmulsAndTheDiffSaysSo) {
  std::string a = testing::TempDir("diff_a"), b = testing::TempDir("diff_b");
  ASSERT_EQ(testing::Record(a, {DATAFLOW_BIN, "--steps", "8", "--threads", "1", "--size", "96"}).exit_code, 0);
  ASSERT_EQ(testing::Record(b, {DATAFLOW_BIN, "--steps", "8", "--threads", "1", "--size", "160"}).exit_code, 0);
  model::Trace ta = testing::Load(a), tb = testing::Load(b);
  analysis::TraceDiff d = analysis::Diff(ta, tb);
  EXPECT_EQ(d.a_steps, 7u);
  EXPECT_EQ(d.b_steps, 7u);
  ASSERT_GT(d.step_delta_ns, 0);
  // Critical-path items tile each step, so their changes add up to the step's change.
  double sum = 0;
  for (const auto& it : d.critical_path) sum += it.delta_ns;
  EXPECT_NEAR(sum, d.step_delta_ns, 0.01 * d.step_delta_ns);
  // O(n^3) matrix multiplies grow ~5x, O(n^2) nodes ~3x: the three matmuls
  // lead the work. (Idle time, the thread preempted on a loaded machine such
  // as a CI run on every core, may grow too: it is not the program's work.)
  // (On a quiet machine they are the top three; CPU contention spreads small
  // items' time, so: the two large ones in the top three, the head in the top five.)
  std::vector<std::string> work;
  for (const auto& it : d.critical_path)
    if (it.name.rfind("idle", 0) != 0) work.push_back(it.name);
  ASSERT_GE(work.size(), 5u);
  std::set<std::string> top3(work.begin(), work.begin() + 3), top5(work.begin(), work.begin() + 5);
  EXPECT_TRUE(top3.count("matmul_a") && top3.count("matmul_b")) << ::testing::PrintToString(work);
  EXPECT_TRUE(top5.count("matmul_head")) << ::testing::PrintToString(work);
  EXPECT_GT(d.top3_explained, 0.6);
  auto r = testing::RunCommand({testing::StrataBin(), "diff", a, b});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("The top 3 items explain"), std::string::npos);
  EXPECT_EQ(testing::RunCommand({testing::StrataBin(), "diff", a, "/no/such"}).exit_code, 3);  // an unreadable input (README "Exit codes")
}

}  // namespace
}  // namespace strata

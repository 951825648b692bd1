// The device-activity analyses on a small hand-written trace whose figures are
// worked out by hand in the comments, on a model filled the way strata's own
// collectors fill it (no Kineto involved), and the report's JSON against
// golden files (tests/golden/report; STRATA_UPDATE_GOLDEN=1 rewrites them).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/gpu.h"
#include "analysis/kernels.h"
#include "analysis/ops.h"
#include "analysis/summary.h"
#include "analysis/transfers.h"
#include "importers/kineto/kineto.h"
#include "tests/testing.h"

namespace strata {
namespace {

using analysis::AnalysisOptions;
constexpr int64_t kUs = 1000;

model::Trace Small() { return testing::Load(testing::SourceDir() + "/tests/data/kineto/small_trace.json"); }

// Device work in small_trace.json (us): gemm [1100,1200], bias [1210,1215],
// memcpy [1500,1550], memset [1610,1620] on stream 7; nccl [1650,1850] on
// stream 9; mul [2200,2230] on stream 7; a Stream Sync [1900,1905].
TEST(GpuAnalysis, TemporalBreakdown) {
  model::Trace t = Small();
  auto ws = analysis::CollectGpuWork(t, {});
  ASSERT_EQ(ws.groups.size(), 1u);
  EXPECT_EQ(ws.groups[0].rank, 3);
  EXPECT_EQ(ws.groups[0].device, 0);
  EXPECT_EQ(ws.groups[0].work.size(), 6u);  // the sync is a wait, not work
  auto b = analysis::TemporalBreakdown(ws.groups[0]);
  EXPECT_EQ(b.span_ns, 1130 * kUs);             // 1100 .. 2230
  EXPECT_EQ(b.busy_ns, 395 * kUs);              // 100+5+50+10+200+30
  EXPECT_EQ(b.idle_ns, 735 * kUs);
  EXPECT_EQ(b.compute_ns, 135 * kUs);           // gemm, bias, mul
  EXPECT_EQ(b.communication_ns, 200 * kUs);     // nccl
  EXPECT_EQ(b.memory_ns, 60 * kUs);             // memcpy, memset
  EXPECT_EQ(b.other_ns, 0);
  EXPECT_NEAR(b.Pct(b.compute_ns), 11.947, 0.001);
}

TEST(GpuAnalysis, IdleBreakdown) {
  model::Trace t = Small();
  auto ws = analysis::CollectGpuWork(t, {});
  auto ib = analysis::IdleTimeBreakdown(ws.groups[0], {});
  // Stream 7: bias 10us after gemm, launched before gemm ended -> kernel wait;
  // memcpy 285us after bias, launched at 1400 > 1215 -> host wait; memset 60us
  // (launch 1600 > 1550) and mul 580us (launch 2110 > 1620) -> host wait.
  EXPECT_EQ(ib.kernel_wait_ns, 10 * kUs);
  EXPECT_EQ(ib.host_wait_ns, 925 * kUs);
  EXPECT_EQ(ib.other_ns, 0);
  ASSERT_EQ(ib.streams.size(), 2u);
  EXPECT_EQ(ib.streams[1].stream, 9);
  EXPECT_EQ(ib.streams[1].total_ns(), 0);
  // A lower threshold turns the kernel wait into "other".
  AnalysisOptions o;
  o.kernel_wait_threshold_ns = 5 * kUs;
  EXPECT_EQ(analysis::IdleTimeBreakdown(ws.groups[0], o).other_ns, 10 * kUs);
}

TEST(GpuAnalysis, HtaCompatibleMode) {
  model::Trace t = Small();
  AnalysisOptions o;
  o.hta_compat = true;
  auto ws = analysis::CollectGpuWork(t, o);
  // Two steps: the last (ProfilerStep#8 at 2000us) goes, with mul (launched at 2110).
  EXPECT_TRUE(ws.last_step_dropped);
  EXPECT_EQ(ws.steps_kept, (std::vector<uint64_t>{7}));
  ASSERT_EQ(ws.groups.size(), 1u);
  EXPECT_EQ(ws.groups[0].device, model::kNone);
  EXPECT_EQ(ws.groups[0].work.size(), 6u);  // the Stream Sync counts, mul is gone
  auto b = analysis::TemporalBreakdown(ws.groups[0]);
  EXPECT_EQ(b.span_ns, 805 * kUs);  // 1100 .. 1905
  EXPECT_EQ(b.idle_ns, 435 * kUs);
  EXPECT_EQ(b.compute_ns, 105 * kUs);
  EXPECT_EQ(b.non_compute_ns(), 265 * kUs);  // nccl 200 + copies 60 + sync 5
  EXPECT_EQ(b.other_ns, 5 * kUs);
}

TEST(GpuAnalysis, ClassifiesLikeHta) {
  using analysis::WorkType;
  EXPECT_EQ(analysis::ClassifyByName("ncclKernel_AllReduce_RING_LL_Sum_float"), WorkType::kCommunication);
  EXPECT_EQ(analysis::ClassifyByName("ncclDevKernel_SendRecv"), WorkType::kCommunication);
  EXPECT_EQ(analysis::ClassifyByName("Memcpy DtoD (Device -> Device)"), WorkType::kMemory);
  EXPECT_EQ(analysis::ClassifyByName("Memset (Device)"), WorkType::kMemory);
  EXPECT_EQ(analysis::ClassifyByName("dma_copy"), WorkType::kMemory);
  EXPECT_EQ(analysis::ClassifyByName("Stream Sync"), WorkType::kOther);
  EXPECT_EQ(analysis::ClassifyByName("my_kernel_with_Sync"), WorkType::kOther);
  EXPECT_EQ(analysis::ClassifyByName("fused_Memcpy_kernel"), WorkType::kOther);
  EXPECT_EQ(analysis::ClassifyByName("Stream Wait Event"), WorkType::kCompute);
  EXPECT_EQ(analysis::ClassifyByName("volta_sgemm_64x64_nt"), WorkType::kCompute);
}

TEST(GpuAnalysis, KernelsLaunchesOpsTransfersSteps) {
  model::Trace t = Small();
  auto k = analysis::Kernels(t, AnalysisOptions{});
  EXPECT_EQ(k.gpu_time_ns, 395 * kUs);
  EXPECT_EQ(k.kernels, 4u);
  ASSERT_GE(k.rows.size(), 2u);
  EXPECT_EQ(k.rows[0].name, "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_NEAR(k.rows[0].pct_gpu_time, 100.0 * 200 / 395, 1e-9);
  EXPECT_EQ(k.histogram[1].count, 1u);  // bias, 5us
  EXPECT_EQ(k.histogram[3].count, 2u);  // gemm 100us, nccl 200us

  auto by_op = analysis::KernelsByOp(t, AnalysisOptions{});
  bool gemm_under_addmm = false;
  for (const auto& r : by_op) gemm_under_addmm |= r.op == "aten::addmm" && r.kernel == "gemm_kernel";
  EXPECT_TRUE(gemm_under_addmm);

  auto l = analysis::Launches(t, AnalysisOptions{});
  EXPECT_EQ(l.launches, 6u);
  EXPECT_EQ(l.short_kernels, 1u);  // bias: 5us kernel, 10us call
  EXPECT_EQ(l.late_starts, 1u);    // bias starts 150us after its call returned
  ASSERT_FALSE(l.by_api.empty());
  EXPECT_EQ(l.by_api[0].name, "cudaLaunchKernel");
  EXPECT_EQ(l.by_api[0].launches, 4u);
  EXPECT_EQ(l.delay_ns.max, 150 * kUs);

  auto ops = analysis::Ops(t, AnalysisOptions{});
  auto find = [&ops](const std::string& n) {
    for (const auto& o : ops)
      if (o.name == n) return o;
    return analysis::OpStats{};
  };
  auto linear = find("aten::linear"), addmm = find("aten::addmm"), mul = find("aten::mul");
  EXPECT_EQ(linear.total_ns, 300 * kUs);
  EXPECT_EQ(linear.self_ns, 100 * kUs);
  EXPECT_EQ(linear.gpu_ns, 105 * kUs);  // gemm + bias, launched by its child addmm
  EXPECT_EQ(linear.gpu_self_ns, 0);
  EXPECT_EQ(addmm.self_ns, 180 * kUs);  // minus two 10us launch calls
  EXPECT_EQ(addmm.gpu_self_ns, 105 * kUs);
  EXPECT_EQ(mul.self_ns, 41125);
  EXPECT_EQ(mul.gpu_ns, 30 * kUs);

  auto x = analysis::Transfers(t);
  ASSERT_EQ(x.rows.size(), 2u);
  EXPECT_EQ(x.rows[0].direction, "HtoD");
  EXPECT_EQ(x.rows[0].host_memory, "pinned");
  EXPECT_DOUBLE_EQ(x.rows[0].gbps, 10.0);  // 500 kB in 50 us
  EXPECT_EQ(x.rows[1].kind, "memset");

  auto s = analysis::Steps(t, 32);
  EXPECT_EQ(s.count, 2u);
  EXPECT_DOUBLE_EQ(s.duration.mean, 750250.0);
  EXPECT_NEAR(s.throughput_per_s, 32 / 750.25e-6, 1e-6);
}

// Five kernels of 73 years each (the longest a trace may hold) launched by one
// op: the sums of their times stop at the int64 limit instead of overflowing
// (undefined behaviour, found by fuzz_decoders; wrapped negative before).
TEST(GpuAnalysis, SumsOfExtremeDurationsSaturate) {
  std::string ev;
  for (int i = 0; i < 5; ++i)
    ev += fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 2305843009213693,
                         "args": {{"device": 0, "stream": 7, "correlation": {}}}}},
                       {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 1,
                         "args": {{"correlation": {}}}}},)", 100 + i, 100 + i);
  auto t = importers::ParseKinetoTrace(R"({"traceEvents": [)" + ev +
                                       R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 2305843009213693}]})");
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto k = analysis::Kernels(*t, AnalysisOptions{});
  EXPECT_EQ(k.kernels, 5u);
  EXPECT_EQ(k.gpu_time_ns, INT64_MAX);
  ASSERT_EQ(k.rows.size(), 1u);
  EXPECT_EQ(k.rows[0].total_ns, INT64_MAX);
  for (const auto& o : analysis::Ops(*t, AnalysisOptions{})) {
    if (o.name == "op") {
      EXPECT_EQ(o.gpu_ns, INT64_MAX);
    }
  }
}

TEST(GpuAnalysis, CountersOverTime) {
  model::Trace t = Small();
  auto ws = analysis::CollectGpuWork(t, {});
  auto q = analysis::QueueLengthSeries(t, ws.groups[0], {});
  ASSERT_EQ(q.size(), 2u);  // streams 7 and 9
  auto s7 = analysis::Summarize(q[0], false);
  EXPECT_EQ(q[0].key, "7");
  EXPECT_EQ(s7.count, 10u);  // 5 launches, 5 starts
  EXPECT_EQ(s7.max, 2);      // gemm and bias launched, neither started
  EXPECT_EQ(q[0].points.back().value, 0);
  auto bw = analysis::MemoryBandwidthSeries(t, ws.groups[0], {});
  ASSERT_EQ(bw.size(), 2u);
  EXPECT_EQ(bw[0].key, "Memcpy HtoD");
  EXPECT_DOUBLE_EQ(analysis::Summarize(bw[0], true).max, 10.0);
}

// A model as strata's own collectors fill it (an OpenCL queue): the same analyses apply.
TEST(GpuAnalysis, AnySourceOfDeviceActivity) {
  model::Trace t;
  t.source = "strata";
  t.processes.push_back({});
  model::Process dev;
  dev.is_device = true;
  dev.device = 0;
  t.processes.push_back(dev);
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 1, 1, 0, 0});
  auto enq = t.strings.Intern("clEnqueueNDRangeKernel"), rd = t.strings.Intern("clEnqueueReadBuffer");
  auto k = t.strings.Intern("saxpy"), copy = t.strings.Intern("read buffer");
  for (int i = 0; i < 3; ++i) {
    int64_t base = i * 100000;
    uint32_t call = t.slices.Add(base, 2000, 0, enq, model::SliceKind::kRuntime);
    uint32_t kern = t.slices.Add(base + 5000, 20000, 1, k, model::SliceKind::kKernel);
    uint32_t row = t.device.Add(kern, 0, 1, static_cast<uint64_t>(i + 1));
    t.device.launch[row] = static_cast<int32_t>(call);
  }
  uint32_t call = t.slices.Add(300000, 1000, 0, rd, model::SliceKind::kRuntime);
  uint32_t c = t.slices.Add(301000, 4000, 1, copy, model::SliceKind::kMemcpy);
  uint32_t row = t.device.Add(c, 0, 1, 9);
  t.device.launch[row] = static_cast<int32_t>(call);
  t.device.bytes[row] = 4000000;
  t.device.copy_kind[row] = model::CopyKind::kDtoH;
  t.Finalize();

  auto ws = analysis::CollectGpuWork(t, {});
  ASSERT_EQ(ws.groups.size(), 1u);
  auto b = analysis::TemporalBreakdown(ws.groups[0]);
  EXPECT_EQ(b.busy_ns, 64000);
  EXPECT_EQ(b.span_ns, 305000 - 5000);
  auto l = analysis::Launches(t, {});
  EXPECT_EQ(l.launches, 4u);
  EXPECT_EQ(l.by_api[0].name, "clEnqueueNDRangeKernel");
  EXPECT_EQ(l.by_api[0].delay_ns.p50, 3000);
  auto x = analysis::Transfers(t);
  EXPECT_DOUBLE_EQ(x.rows[0].gbps, 1000.0);
}

std::string ReadAll(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void CheckGolden(const std::vector<std::string>& extra, const std::string& golden) {
  std::vector<std::string> argv = {testing::StrataBin(), "report", "--json",
                                   testing::SourceDir() + "/tests/data/kineto/small_trace.json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = testing::RunCommand(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json got = nlohmann::json::parse(r.out);
  got["trace"].erase("path");  // where the checkout is
  std::string path = testing::SourceDir() + "/tests/golden/report/" + golden;
  if (std::getenv("STRATA_UPDATE_GOLDEN")) {
    std::ofstream(path) << got.dump(1) << "\n";
    GTEST_SKIP() << "rewrote " << path;
  }
  nlohmann::json want = nlohmann::json::parse(ReadAll(path));
  for (auto& [key, value] : want.items()) EXPECT_EQ(got[key], value) << "report key '" << key << "' differs from " << path;
  EXPECT_EQ(got.size(), want.size());
}

TEST(GpuAnalysis, ReportGolden) { CheckGolden({"--batch-size", "32"}, "small_trace.json"); }
TEST(GpuAnalysis, ReportGoldenHtaCompat) { CheckGolden({"--hta-compat"}, "small_trace_hta.json"); }
// Every row and every critical-path segment (the default JSON is a summary).
TEST(GpuAnalysis, ReportGoldenFull) { CheckGolden({"--batch-size", "32", "--full"}, "small_trace_full.json"); }

}  // namespace
}  // namespace strata

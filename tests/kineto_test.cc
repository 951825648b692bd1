// The PyTorch-profiler (Kineto) importer: a hand-written trace covering every
// category, batch boundaries anywhere, gzip, malformed input, and the real
// traces in shared/data/external.
#include <gtest/gtest.h>

#include "analysis/framework.h"
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "importers/kineto/kineto.h"
#include "importers/load.h"
#include "tests/testing.h"

namespace strata {
namespace {

using model::SliceKind;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string SmallTracePath() { return testing::SourceDir() + "/tests/data/kineto/small_trace.json"; }

std::string Gzip(const std::string& s) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, s.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  z.avail_in = static_cast<uInt>(s.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

int32_t FindSlice(const model::Trace& t, const std::string& name) {
  model::StringId id = t.strings.Find(name);
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.name[i] == id) return static_cast<int32_t>(i);
  return -1;
}

std::string ArgStr(const model::Trace& t, int32_t slice, const std::string& key) {
  int32_t a = t.FindArg(static_cast<uint32_t>(slice), t.strings.Find(key));
  if (a < 0) return "<none>";
  if (!std::isnan(t.args.num[static_cast<size_t>(a)])) return std::to_string(static_cast<int64_t>(t.args.num[static_cast<size_t>(a)]));
  return std::string(t.strings.Get(t.args.str[static_cast<size_t>(a)]));
}

TEST(Kineto, DetectsJsonTracesByContent) {
  EXPECT_EQ(importers::DetectFormat(SmallTracePath()), importers::TraceFormat::kChromeJson);
  EXPECT_TRUE(importers::LooksLikeJsonTrace("  \n{\"traceEvents\": []}"));
  EXPECT_TRUE(importers::LooksLikeJsonTrace("[{\"ph\": \"X\"}]"));
  EXPECT_FALSE(importers::LooksLikeJsonTrace("CTF"));
  EXPECT_FALSE(importers::LooksLikeJsonTrace(""));
}

TEST(Kineto, SmallTraceEveryCategory) {
  model::Trace t = testing::Load(SmallTracePath());
  EXPECT_EQ(t.source, "kineto");
  EXPECT_EQ(t.events_read, 33u);
  EXPECT_TRUE(t.source_fractional_us);
  EXPECT_EQ(t.clock_offset_ns, 1700000000000000000);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA Test GPU");
  EXPECT_EQ(t.devices[0].compute_units, 132u);
  for (const auto& p : t.processes) EXPECT_EQ(p.rank, 3);

  auto kind_of = [&](const std::string& n) { return t.slices.kind[static_cast<size_t>(FindSlice(t, n))]; };
  EXPECT_EQ(kind_of("ProfilerStep#7"), SliceKind::kStep);
  EXPECT_EQ(t.slices.arg[static_cast<size_t>(FindSlice(t, "ProfilerStep#8"))], 8u);
  EXPECT_EQ(kind_of("aten::linear"), SliceKind::kOp);
  EXPECT_EQ(kind_of("cudaLaunchKernel"), SliceKind::kRuntime);
  EXPECT_EQ(kind_of("gemm_kernel"), SliceKind::kKernel);
  EXPECT_EQ(kind_of("Memcpy HtoD (Pinned -> Device)"), SliceKind::kMemcpy);
  EXPECT_EQ(kind_of("Memset (Device)"), SliceKind::kMemset);
  EXPECT_EQ(kind_of("Stream Sync"), SliceKind::kDeviceSync);
  EXPECT_EQ(kind_of("forward"), SliceKind::kAnnotation);
  EXPECT_EQ(kind_of("train.py(10): step"), SliceKind::kPython);
  EXPECT_EQ(kind_of("mul_kernel \"v2\""), SliceKind::kKernel);  // escaped quotes in the name

  // Exact nanoseconds from fractional microseconds.
  int32_t mul = FindSlice(t, "aten::mul");
  EXPECT_EQ(t.slices.ts[static_cast<size_t>(mul)], 2100250);
  EXPECT_EQ(t.slices.dur[static_cast<size_t>(mul)], 50125);

  // Device rows: columns and the launch link by correlation id.
  int32_t gemm = FindSlice(t, "gemm_kernel");
  int32_t row = t.device_row_of_slice[static_cast<size_t>(gemm)];
  ASSERT_GE(row, 0);
  size_t r = static_cast<size_t>(row);
  EXPECT_EQ(t.device.stream[r], 7);
  EXPECT_EQ(t.device.correlation[r], 501u);
  EXPECT_EQ(t.device.grid[r], (std::array<uint32_t, 3>{4, 2, 1}));
  EXPECT_EQ(t.device.block[r], (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(t.device.shared_mem[r], 1024u);
  EXPECT_EQ(t.device.registers[r], 64u);
  EXPECT_FLOAT_EQ(t.device.occupancy[r], 0.5f);
  ASSERT_GE(t.device.launch[r], 0);
  size_t launch = static_cast<size_t>(t.device.launch[r]);
  EXPECT_EQ(t.strings.Get(t.slices.name[launch]), "cudaLaunchKernel");
  EXPECT_EQ(t.slices.ts[launch], 1030000);
  EXPECT_EQ(t.slices.arg[launch], 501u);  // runtime calls carry their correlation id
  // The launch call nests in aten::addmm, which nests in aten::linear.
  int32_t parent = t.slices.parent[launch];
  ASSERT_GE(parent, 0);
  EXPECT_EQ(t.strings.Get(t.slices.name[static_cast<size_t>(parent)]), "aten::addmm");

  int32_t copy = FindSlice(t, "Memcpy HtoD (Pinned -> Device)");
  size_t cr = static_cast<size_t>(t.device_row_of_slice[static_cast<size_t>(copy)]);
  EXPECT_EQ(t.device.copy_kind[cr], model::CopyKind::kHtoD);
  EXPECT_EQ(t.device.pinned[cr], 1);
  EXPECT_EQ(t.device.bytes[cr], 500000u);
  for (size_t i = 0; i < t.device.size(); ++i) EXPECT_GE(t.device.launch[i], 0) << "every device row is linked";

  // Args that have no column.
  int32_t linear = FindSlice(t, "aten::linear");
  EXPECT_EQ(ArgStr(t, linear, "External id"), "2");
  EXPECT_EQ(ArgStr(t, linear, "Input Dims"), "[[8, 16], [32, 16]]");
  EXPECT_EQ(t.slices.arg[static_cast<size_t>(linear)], 11u);  // sequence number

  // Memory, counters, instants, flows, names.
  ASSERT_EQ(t.memory.size(), 2u);
  EXPECT_EQ(t.memory.bytes[0] + t.memory.bytes[1], 0);
  EXPECT_EQ(t.memory.device[0], 0);
  EXPECT_EQ(t.memory.total_reserved[0], 2097152);
  ASSERT_EQ(t.counter_series.size(), 1u);
  EXPECT_EQ(t.strings.Get(t.counter_series[0].name), "queue");
  EXPECT_EQ(t.counters.size(), 2u);
  EXPECT_EQ(t.instants.size(), 1u);
  ASSERT_EQ(t.flows.size(), 1u);  // fwdbwd; the ac2g launch flow is the correlation link
  EXPECT_EQ(t.strings.Get(t.slices.name[static_cast<size_t>(t.flows.from[0])]), "aten::addmm");
  EXPECT_EQ(t.strings.Get(t.slices.name[static_cast<size_t>(t.flows.to[0])]), "aten::mul");
  bool named = false;
  for (const auto& trk : t.tracks) named |= t.strings.Get(trk.name) == "pt_autograd_0";
  EXPECT_TRUE(named);
  bool python3 = false;
  for (const auto& p : t.processes) python3 |= t.strings.Get(p.name) == "python3" && p.pid == 100;
  EXPECT_TRUE(python3);
}

void ExpectSameModel(const model::Trace& a, const model::Trace& b) {
  ASSERT_EQ(a.slices.size(), b.slices.size());
  EXPECT_EQ(a.slices.ts, b.slices.ts);
  EXPECT_EQ(a.slices.dur, b.slices.dur);
  EXPECT_EQ(a.device.launch, b.device.launch);
  EXPECT_EQ(a.args.size(), b.args.size());
  EXPECT_EQ(a.events_read, b.events_read);
  EXPECT_EQ(a.flows.size(), b.flows.size());
}

TEST(Kineto, AnyBatchBoundaryGivesTheSameModel) {
  model::Trace ref = testing::Load(SmallTracePath());
  for (size_t w : {64, 100, 257, 1000, 4096}) {
    importers::LoadOptions o;
    o.json_window = w;
    auto t = importers::LoadTrace(SmallTracePath(), o);
    ASSERT_TRUE(t.ok()) << "window " << w << ": " << t.status().message();
    SCOPED_TRACE("window " + std::to_string(w));
    ExpectSameModel(ref, *t);
  }
}

TEST(Kineto, GzipAndBareArray) {
  std::string json = ReadAll(SmallTracePath());
  model::Trace ref = testing::Load(SmallTracePath());
  auto gz = importers::ParseKinetoTrace(Gzip(json));
  ASSERT_TRUE(gz.ok()) << gz.status().message();
  ExpectSameModel(ref, *gz);
  // Two concatenated gzip members are one stream.
  std::string half = json.substr(0, json.size() / 2);
  auto two = importers::ParseKinetoTrace(Gzip(half) + Gzip(json.substr(half.size())));
  ASSERT_TRUE(two.ok()) << two.status().message();
  ExpectSameModel(ref, *two);

  auto arr = importers::ParseKinetoTrace(R"([{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 5, "dur": 2}])");
  ASSERT_TRUE(arr.ok()) << arr.status().message();
  EXPECT_EQ(arr->slices.size(), 1u);
  EXPECT_FALSE(arr->source_fractional_us);
}

TEST(Kineto, TruncatedGzipIsAClearError) {
  std::string gz = Gzip(ReadAll(SmallTracePath()));
  auto t = importers::ParseKinetoTrace(gz.substr(0, gz.size() / 2));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("truncated gzip"), std::string::npos) << t.status().message();
  std::string corrupt = gz;
  for (size_t i = 20; i < 60 && i < corrupt.size(); ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  auto c = importers::ParseKinetoTrace(corrupt);
  EXPECT_FALSE(c.ok());
}

struct BadCase {
  const char* json;
  bool ok;
  const char* expect;  // substring of the error, or of a warning when ok
};

TEST(Kineto, MalformedInputErrorsOrWarnsNeverCrashes) {
  const BadCase cases[] = {
      {"", false, "input ends"},
      {"   ", false, "input ends"},
      {"hello", false, "not a JSON trace"},
      {"{}", false, "no \"traceEvents\""},
      {"{\"traceEvents\": 5}", false, "no \"traceEvents\""},
      {"{\"traceEvents\": [", false, "truncated"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1", false, "truncated"},
      {"{\"traceEvents\": [{\"ph\": \"X\" \"ts\": 1}]}", false, "invalid JSON"},
      {"{\"traceEvents\": [1, 2]}", false, "not an object"},
      {"{\"traceEvents\": []} trailing", false, "after the end"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": \"x\", \"dur\": 1}]}", false,
       "malformed number"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"dur\": 1}]}", false, "without \"ts\""},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 3, \"dur\": -5}]}", true,
       "negative duration"},
      {"{\"traceEvents\": [{\"ph\": \"E\", \"pid\": 1, \"tid\": 1, \"ts\": 3}]}", false, "without a matching B"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": 7, \"pid\": 1, \"tid\": 1, \"ts\": 3, \"dur\": 1}]}", false,
       "malformed"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 1e400, \"dur\": 1}]}", false,
       "malformed"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"args\": [1], \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}]}",
       true, "non-object \"args\""},
      {"{\"traceEvents\": [{\"ph\": \"Q\", \"ts\": 1}]}", false, "phase 'Q'"},
      {"{\"traceEvents\": [{\"ts\": 1}]}", false, "without \"ph\""},
      {"{\"traceEvents\": [{\"ph\": \"\\n\", \"ts\": 1}]}", false, "phase 0x0a"},
      // Next to one good event, the same events are skipped with a warning.
      {"{\"traceEvents\": [{\"ph\": \"Q\", \"ts\": 1}, {\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}]}",
       true, "phase 'Q'"},
      {"{\"traceEvents\": [{\"ph\": \"B\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 1}, {\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}]}",
       true, "B events without a matching E"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1, \"args\": {\"x\": tru}}]}",
       true, "invalid JSON value"},
  };
  for (const BadCase& c : cases) {
    auto t = importers::ParseKinetoTrace(c.json);
    EXPECT_EQ(t.ok(), c.ok) << c.json << ": " << (t.ok() ? "ok" : t.status().message());
    if (!t.ok()) {
      EXPECT_NE(t.status().message().find(c.expect), std::string::npos) << c.json << ": " << t.status().message();
      EXPECT_EQ(t.status().message().find('\n'), std::string::npos) << "one line";
    } else {
      std::string all;
      for (const auto& w : t->warnings) all += w + "\n";
      EXPECT_NE(all.find(c.expect), std::string::npos) << c.json << ": warnings: " << all;
    }
  }
  // Deep nesting inside args: an error or a load, not a crash.
  std::string deep = "{\"traceEvents\": [{\"ph\": \"X\", \"args\": {\"a\": " + std::string(5000, '[') +
                     std::string(5000, ']') + "}}]}";
  (void)importers::ParseKinetoTrace(deep);
}

// A file whose events are all malformed is not an empty trace: the import
// fails with one line saying why (it used to give 0 streams and exit 0).
TEST(Kineto, AllEventsMalformedIsAnError) {
  std::string text = ReadAll(SmallTracePath());
  size_t n = 0;
  for (size_t at = text.find("\"ph\": \""); at != std::string::npos; at = text.find("\"ph\": \"", at + 1), ++n)
    text.replace(at, 7, "\"ph\": 5, \"phase\": \"");
  ASSERT_EQ(n, 33u);
  for (const std::string& bytes : {text, Gzip(text)}) {
    auto t = importers::ParseKinetoTrace(bytes);
    ASSERT_FALSE(t.ok()) << "loaded " << t->slices.size() << " slices";
    const std::string& m = t.status().message();
    EXPECT_EQ(t.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(m.find("no event could be imported: all 33 events"), std::string::npos) << m;
    EXPECT_NE(m.find("33 events with a malformed number or string field"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  // An empty event list is an empty trace, not an error.
  auto empty = importers::ParseKinetoTrace("{\"traceEvents\": []}");
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty->slices.size(), 0u);
}

TEST(Kineto, UnsortedEventsAreSorted) {
  auto t = importers::ParseKinetoTrace(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "child", "pid": 1, "tid": 1, "ts": 20, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "parent", "pid": 1, "tid": 1, "ts": 10, "dur": 50},
    {"ph": "B", "cat": "cpu_op", "name": "be", "pid": 1, "tid": 1, "ts": 30},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 40}]})");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->slices.size(), 3u);
  EXPECT_EQ(t->strings.Get(t->slices.name[0]), "parent");
  EXPECT_EQ(t->slices.parent[1], 0);
  EXPECT_EQ(t->strings.Get(t->slices.name[2]), "be");
  EXPECT_EQ(t->slices.dur[2], 10000);
  EXPECT_EQ(t->slices.parent[2], 0);
}

// torch's legacy autograd profiler (a PyTorch without Kineto: Debian's 1.13)
// writes a bare array with no categories under the process "CPU functions" and
// no ProfilerStep ranges: its ops are ops, its "Name#..." ranges annotations,
// and the steps come from the optimizer steps, tiling the loop.
TEST(Kineto, LegacyProfilerOpsAndStepsFromTheOptimizer) {
  std::string ev = "[";
  for (int i = 0; i < 3; ++i) {
    int64_t a = 100 + i * 1000;
    ev += fmt::format(R"({{"name": "aten::mm", "ph": "X", "ts": {}, "dur": 400, "tid": 1, "pid": "CPU functions", "args": {{}}}},)", a);
    ev += fmt::format(R"({{"name": "Optimizer.step#SGD.step", "ph": "X", "ts": {}, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {{}}}},)", a + 800);
    ev += fmt::format(R"({{"name": "aten::add_", "ph": "X", "ts": {}, "dur": 50, "tid": 1, "pid": "CPU functions", "args": {{}}}}{})", a + 820, i < 2 ? "," : "]");
  }
  auto t = importers::ParseKinetoTrace(ev);
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::vector<std::pair<int64_t, int64_t>> steps;
  size_t ops = 0, spans = 0;
  for (size_t i = 0; i < t->slices.size(); ++i) {
    if (t->slices.kind[i] == model::SliceKind::kStep) steps.emplace_back(t->slices.ts[i], t->slices.end(i));
    ops += t->slices.kind[i] == model::SliceKind::kOp;
    spans += t->slices.kind[i] == model::SliceKind::kSpan;
  }
  EXPECT_EQ(ops, 6u);
  EXPECT_EQ(spans, 3u);
  // From the thread's first event to the first optimizer step's end, then from
  // one optimizer step's end to the next.
  EXPECT_EQ(steps, (std::vector<std::pair<int64_t, int64_t>>{{100'000, 1'000'000}, {1'000'000, 2'000'000}, {2'000'000, 3'000'000}}));
  auto tr = analysis::Training(*t, {});
  ASSERT_EQ(tr.steps.size(), 3u);
  EXPECT_TRUE(tr.steps[0].partial);
}

// Correlation ids far apart index through one array per run of nearby ids
// (several traces' ids, ids offset per copy or rank), and ids with no such
// runs through a hash table: every kernel still finds its launch either way,
// and an id used twice links the later call.
void ExpectLaunchesLinked(const std::vector<uint64_t>& ids) {
  std::string ev = R"({"traceEvents": [)";
  int64_t ts = 100;
  for (uint64_t id : ids) {
    ev += fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {}}}}},)",
                      ts, id);
    ev += fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {}, "dur": 3, "args": {{"correlation": {}, "device": 0, "stream": 7}}}},)",
                      id, ts + 10, id);
    ts += 100;
  }
  // A second call with the first id, after its kernel: the later call is the one linked.
  ev += fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelAgain", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {}}}}}]}})",
                    ts, ids[0]);
  auto t = importers::ParseKinetoTrace(ev);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->device.size(), ids.size());
  const std::string first = fmt::format("k{}", ids[0]);
  for (size_t r = 0; r < t->device.size(); ++r) {
    std::string kernel(t->strings.Get(t->slices.name[t->device.slice[r]]));
    int32_t launch = t->device.launch[r];
    ASSERT_NE(launch, model::kNone) << kernel;
    std::string call(t->strings.Get(t->slices.name[static_cast<size_t>(launch)]));
    EXPECT_EQ(call, kernel == first ? "cudaLaunchKernelAgain" : "cudaLaunchKernel") << kernel;
    if (kernel != first) {
      EXPECT_EQ(t->slices.ts[static_cast<size_t>(launch)] + 10'000, t->slices.ts[t->device.slice[r]]) << kernel;
    }
  }
  EXPECT_NE(std::find_if(t->warnings.begin(), t->warnings.end(),
                         [](const std::string& w) { return w.rfind("1 API calls that share a correlation id", 0) == 0; }),
            t->warnings.end());
  EXPECT_EQ(std::find_if(t->warnings.begin(), t->warnings.end(),
                         [](const std::string& w) { return w.find("no launching API call") != std::string::npos; }),
            t->warnings.end());
}

TEST(Kineto, SparseAndDuplicateCorrelationIdsLink) {
  // Runs of nearby ids far apart, out of order.
  std::vector<uint64_t> runs;
  for (uint64_t base : {4000000000ull, 7ull, 90000000000000ull, 123456789ull})
    for (uint64_t k = 0; k < 5; ++k) runs.push_back(base + 3 * k);
  ExpectLaunchesLinked(runs);
  // Scattered ids: no runs to speak of.
  std::vector<uint64_t> scattered;
  for (uint64_t k = 1; k <= 60; ++k) scattered.push_back((k * 0x9E3779B97F4A7C15ull) >> 8);
  ExpectLaunchesLinked(scattered);
}

// Every table the importer fills, column by column (NaN args compared as bits).
void ExpectIdenticalModel(const model::Trace& a, const model::Trace& b) {
  ASSERT_EQ(a.strings.size(), b.strings.size());
  for (size_t i = 0; i < a.strings.size(); ++i)
    ASSERT_EQ(a.strings.Get(static_cast<model::StringId>(i)), b.strings.Get(static_cast<model::StringId>(i))) << i;
  EXPECT_EQ(a.slices.ts, b.slices.ts);
  EXPECT_EQ(a.slices.dur, b.slices.dur);
  EXPECT_EQ(a.slices.track, b.slices.track);
  EXPECT_EQ(a.slices.name, b.slices.name);
  EXPECT_EQ(a.slices.kind, b.slices.kind);
  EXPECT_EQ(a.slices.depth, b.slices.depth);
  EXPECT_EQ(a.slices.parent, b.slices.parent);
  EXPECT_EQ(a.slices.arg, b.slices.arg);
  EXPECT_EQ(a.device.slice, b.device.slice);
  EXPECT_EQ(a.device.stream, b.device.stream);
  EXPECT_EQ(a.device.correlation, b.device.correlation);
  EXPECT_EQ(a.device.launch, b.device.launch);
  EXPECT_EQ(a.device.bytes, b.device.bytes);
  EXPECT_EQ(a.device.grid, b.device.grid);
  EXPECT_EQ(a.device.registers, b.device.registers);
  EXPECT_EQ(a.args.slice, b.args.slice);
  EXPECT_EQ(a.args.key, b.args.key);
  EXPECT_EQ(a.args.str, b.args.str);
  ASSERT_EQ(a.args.num.size(), b.args.num.size());
  for (size_t i = 0; i < a.args.num.size(); ++i)
    EXPECT_EQ(std::memcmp(&a.args.num[i], &b.args.num[i], sizeof(double)), 0) << "arg " << i;
  EXPECT_EQ(a.flows.id, b.flows.id);
  EXPECT_EQ(a.flows.from, b.flows.from);
  EXPECT_EQ(a.flows.to, b.flows.to);
  EXPECT_EQ(a.instants.ts, b.instants.ts);
  EXPECT_EQ(a.instants.name, b.instants.name);
  EXPECT_EQ(a.counters.ts, b.counters.ts);
  EXPECT_EQ(a.counters.value, b.counters.value);
  EXPECT_EQ(a.memory.bytes, b.memory.bytes);
  EXPECT_EQ(a.processes.size(), b.processes.size());
  EXPECT_EQ(a.tracks.size(), b.tracks.size());
  EXPECT_EQ(a.warnings, b.warnings);
  EXPECT_EQ(a.events_read, b.events_read);
  EXPECT_EQ(a.source_fractional_us, b.source_fractional_us);
}

// The fast path reads plain events itself and leaves the rest to simdjson;
// events of every shape, interleaved with plain ones, must come out as
// simdjson alone reads them, wherever the batches split.
TEST(Kineto, FastPathAgreesWithSimdjson) {
  const std::string plain =
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 100.5, "dur": 3, "args": {"External id": 1, "Sequence number": 4}})";
  const std::string odd[] = {
      R"({"ph": "X", "cat": "cpu_op", "name": "a\"quoted\" op", "pid": 7, "tid": 7, "ts": 110, "dur": 1})",
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"caf\xC3\xA9\", \"pid\": 7, \"tid\": 7, \"ts\": 112, \"dur\": 1}",
      "{\n\t\"ph\" : \"X\" ,\r\n \"name\":\"spaced\",\"cat\":\"cpu_op\",\"tid\":7,\"pid\":7,\"dur\":2,\"ts\":120}",
      R"({"ph": "X", "cat": "cpu_op", "name": "strs", "pid": "7", "tid": "named thread", "ts": "130", "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "exp", "pid": 7, "tid": 7, "ts": 1.4e2, "dur": 1.23456})",
      R"({"ph": "X", "cat": "cpu_op", "name": "neg", "pid": -0, "tid": 7, "ts": -5, "dur": -1})",
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 150, "dur": 4, "args": {"device": 0, "stream": "7", "correlation": 9, "grid": [1, 2, 3] , "block": [ 4,5,6 ], "registers per thread": 32, "est. achieved occupancy %": 50, "t": [1, 2] , "x": null, "y": true, "z": -0, "w": 1e3, "u": {"a": [1, {"b": "]"}]}}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "escaped arg", "pid": 7, "tid": 7, "ts": 151, "dur": 1, "args": {"v": "esc\\aped \"q\"", "n": "12"}})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 149, "dur": 2, "args": {"correlation": 9, "cbid": 211}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "weird", "pid": 7, "tid": 7, "ts": 160, "dur": 1, "extra": {"nested": [[[]]]}, "args": {}})",
      R"({"ph": 5, "cat": "cpu_op", "name": "bad ph", "pid": 7, "tid": 7, "ts": 170, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": 12, "pid": 7, "tid": 7, "ts": 171, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "args list", "pid": 7, "tid": 7, "ts": 172, "dur": 1, "args": [1]})",
      R"({"ph": "X", "cat": "cpu_op", "name": "long ts", "pid": 7, "tid": 7, "ts": 12345678901234567890, "dur": 1})",
      R"({"ph": "B", "cat": "cpu_op", "name": "be", "pid": 7, "tid": 9, "ts": 180, "args": {"k": "v"}})",
      R"({"ph": "E", "pid": 7, "tid": 9, "ts": 185})",
      R"({"ph": "C", "name": "mem", "pid": 7, "ts": 190, "args": {"a": 1, "b": 2.5}})",
      R"({"ph": "i", "name": "[memory]", "pid": 7, "tid": 7, "ts": 191, "args": {"Bytes": 64, "Addr": 1234, "Total Allocated": 64}})",
      R"({"ph": "i", "name": "mark", "pid": 7, "tid": 7, "ts": 192, "s": "t"})",
      R"({"ph": "s", "id": 9, "pid": 7, "tid": 7, "ts": 149, "cat": "ac2g", "name": "ac2g"})",
      R"({"ph": "f", "id": "9", "pid": 0, "tid": 7, "ts": 150, "cat": "ac2g", "name": "ac2g", "bp": "e"})",
      R"({"ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "args": {"name": "main"}})",
      R"({"name": "no ph", "ts": 1})",
      R"({})",
  };
  std::string json = "{\"traceEvents\": [";
  for (size_t i = 0; i < std::size(odd); ++i) json += plain + ",\n" + odd[i] + ",\n";
  json += plain + "], \"traceName\": \"t\"}";
  for (size_t w : {size_t{0}, size_t{61}, size_t{200}, size_t{4096}}) {
    SCOPED_TRACE("window " + std::to_string(w));
    importers::LoadOptions o;
    o.json_window = w;
    auto fast = importers::ParseKinetoTrace(json, o);
    o.json_fast_path = false;
    auto slow = importers::ParseKinetoTrace(json, o);
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    ASSERT_TRUE(slow.ok()) << slow.status().message();
    ExpectIdenticalModel(*fast, *slow);
    EXPECT_NE(fast->strings.Find("a\"quoted\" op"), model::StringPool::kNotFound);
    EXPECT_NE(fast->strings.Find("caf\xC3\xA9"), model::StringPool::kNotFound);
    EXPECT_EQ(fast->events_read, 2 * std::size(odd) + 1);
  }
  // Errors stay errors on both paths.
  for (const char* bad : {R"({"traceEvents": [{"ph": "X"} {"ph": "X"}]})", R"({"traceEvents": [{"ph": "X"}, ]})",
                          "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\x01\"}]}",
                          "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"\xC3\"}]}"}) {
    for (bool fast_path : {true, false}) {
      importers::LoadOptions o;
      o.json_fast_path = fast_path;
      auto t = importers::ParseKinetoTrace(bad, o);
      EXPECT_FALSE(t.ok()) << bad << (fast_path ? " (fast path)" : "");
    }
  }
}

// The fast path and simdjson alone build the same model from every shared trace.
TEST(Kineto, FastPathAgreesOnSharedTraces) {
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(data)) {
    std::string p = entry.path().string();
    if (!entry.is_regular_file() || !(p.ends_with(".json") || p.ends_with(".json.gz"))) continue;
    SCOPED_TRACE(p);
    importers::LoadOptions o;
    auto fast = importers::LoadTrace(p, o);
    o.json_fast_path = false;
    auto slow = importers::LoadTrace(p, o);
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    ASSERT_TRUE(slow.ok()) << slow.status().message();
    ExpectIdenticalModel(*fast, *slow);
  }
}

// Every Kineto trace in shared/data/external: element counts as Python's json
// module counts them, every device activity linked where the trace has its launch.
TEST(Kineto, SharedTraces) {
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout";
  struct Want {
    const char* path;
    uint64_t events;
    size_t kernels, memcpy, memset, sync;
    size_t unlinked;
  };
  const Want traces[] = {
      {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 220, 14, 2, 0, 0, 0},
      {"hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", 1408, 79, 16, 3, 41, 0},
      {"hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", 149, 3, 0, 3, 5, 0},
      {"hta/nccl_parser_config/nccl_data.json.gz", 40573, 2700, 960, 114, 0, 0},
      {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 68692, 4350, 1600, 145, 0, 0},
      {"hta/trace_filter/sampled_rank-0.json.gz", 4855, 1154, 40, 10, 0, 0},
      {"hta/trace_filter/sampled_rank-1.json.gz", 4720, 1104, 40, 10, 0, 0},
      {"hta/triton_example/triton_example.json.gz", 71, 1, 0, 0, 0, 0},
      {"kineto/docs/traces/before_fix_trace.json", 75, 1, 0, 0, 2, 2},
      {"kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", 75718, 8772, 12, 312, 0, 0},
      {"tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz", 2551, 60, 1, 0, 0, 0},
  };
  for (const Want& w : traces) {
    SCOPED_TRACE(w.path);
    model::Trace t = testing::Load(data + "/" + w.path);
    EXPECT_EQ(t.events_read, w.events);
    size_t n[4] = {};
    size_t unlinked = 0;
    for (size_t r = 0; r < t.device.size(); ++r) {
      SliceKind k = t.slices.kind[t.device.slice[r]];
      n[0] += k == SliceKind::kKernel;
      n[1] += k == SliceKind::kMemcpy;
      n[2] += k == SliceKind::kMemset;
      n[3] += k == SliceKind::kDeviceSync;
      unlinked += t.device.launch[r] < 0;
    }
    EXPECT_EQ(n[0], w.kernels);
    EXPECT_EQ(n[1], w.memcpy);
    EXPECT_EQ(n[2], w.memset);
    EXPECT_EQ(n[3], w.sync);
    EXPECT_EQ(unlinked, w.unlinked);
  }
}

// `strata report` on a Kineto file: the JSON keys the issue names.
TEST(Kineto, ReportCommand) {
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout";
  auto r = testing::RunCommand({testing::StrataBin(), "report", "--json",
                                data + "/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "no progress bar when stderr is not a terminal";
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["steps"]["count"], 5);
  EXPECT_GT(j["steps"]["p50_ns"].get<int64_t>(), 0);
  ASSERT_EQ(j["gpu"]["devices"].size(), 1u);
  const auto& d = j["gpu"]["devices"][0];
  double sum = 0;
  for (const char* k : {"compute", "communication", "memory", "other", "idle"}) sum += d["breakdown_pct"][k].get<double>();
  EXPECT_NEAR(sum, 100, 0.05);
  for (const char* k : {"host_wait", "kernel_wait", "other"}) EXPECT_TRUE(d["idle_breakdown_pct"].contains(k));
  ASSERT_FALSE(j["kernels"].empty());
  for (const char* k : {"name", "count", "total_ns", "pct_gpu_time"}) EXPECT_TRUE(j["kernels"][0].contains(k)) << k;
  ASSERT_FALSE(j["ops"].empty());
  for (const char* k : {"name", "count", "total_ns", "self_ns", "gpu_ns"}) EXPECT_TRUE(j["ops"][0].contains(k)) << k;
  EXPECT_GT(j["transfers"]["bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(j["launches"]["count"].get<uint64_t>(), 0u);
}

TEST(Kineto, ReportCommandBadInput) {
  std::string dir = testing::TempDir("kineto-bad");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/bad.json") << "{\"traceEvents\": [{\"ph\": \"X\",";
  std::ofstream(dir + "/bin.dat") << std::string("\x01\x02\x03garbage", 10);
  auto r = testing::RunCommand({testing::StrataBin(), "report", dir + "/bad.json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = testing::RunCommand({testing::StrataBin(), "report", dir + "/bin.dat"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("unrecognized trace format"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata

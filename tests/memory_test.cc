// The memory analysis: on a hand-built trace whose live set, temporaries and
// steps are known, and golden files for the shared GPU traces with PyTorch
// "[memory]" events (tests/golden/memory; STRATA_UPDATE_GOLDEN=1 rewrites them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "analysis/findings.h"
#include "analysis/memory.h"
#include "report/section.h"
#include "tests/testing.h"

namespace strata {
namespace {

using model::SliceKind;
using nlohmann::json;

constexpr int64_t kMiB = 1 << 20;

// Two steps on one thread. Step 0 [0, 1000): aten::zeros (over aten::empty)
// allocates 8 MiB at 100, aten::mm allocates 1 MiB at 300 and its scratch of
// 2 MiB at 310 (freed at 320, inside the op); the 8 MiB block is freed at 900.
// A 4 MiB block allocated before the steps (at -50) stays live. Step 1 [2000,
// 3000) allocates 8 MiB again at 2100 and frees it at 2900. The allocator
// reports its totals and 16 MiB reserved.
model::Trace Synthetic() {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  auto name = [&](const char* n) { return t.strings.Intern(n); };
  t.slices.Add(0, 1000, 0, name("step"), SliceKind::kStep, 0);
  t.slices.Add(2000, 1000, 0, name("step"), SliceKind::kStep, 1);
  t.slices.Add(90, 100, 0, name("aten::zeros"), SliceKind::kOp);
  t.slices.Add(95, 10, 0, name("aten::empty"), SliceKind::kOp);
  t.slices.Add(290, 50, 0, name("aten::mm"), SliceKind::kOp);
  t.slices.Add(2090, 100, 0, name("aten::zeros"), SliceKind::kOp);
  t.slices.Add(2095, 10, 0, name("aten::empty"), SliceKind::kOp);
  t.Finalize();
  int64_t level = 0;
  auto ev = [&](int64_t ts, uint64_t addr, int64_t bytes) {
    level += bytes;
    t.memory.Add(ts, 0, model::kNone, addr, bytes, level, 16 * kMiB);
  };
  ev(-50, 0x1000, 4 * kMiB);
  ev(100, 0x2000, 8 * kMiB);
  ev(300, 0x3000, 1 * kMiB);
  ev(310, 0x4000, 2 * kMiB);
  ev(320, 0x4000, -2 * kMiB);
  ev(900, 0x2000, -8 * kMiB);
  ev(2100, 0x2000, 8 * kMiB);
  ev(2900, 0x2000, -8 * kMiB);
  return t;
}

TEST(Memory, PeakLiveSetAndChurnOfAKnownTrace) {
  model::Trace t = Synthetic();
  analysis::MemorySummary s = analysis::Memory(t);
  ASSERT_EQ(s.devices.size(), 1u);
  const auto& d = s.devices[0];
  EXPECT_EQ(d.peak_bytes, 15 * kMiB);
  EXPECT_EQ(d.peak_ts, 310);
  EXPECT_EQ(d.peak_step, 0);
  EXPECT_EQ(d.reserved_at_peak, 16 * kMiB);
  EXPECT_NEAR(d.fragmentation, 1.0 / 16, 1e-9);
  EXPECT_TRUE(d.allocator_totals);
  EXPECT_TRUE(d.addresses);
  // aten::empty under aten::zeros is charged to aten::zeros; the block from
  // before the steps to no op. The live blocks add up to the peak.
  ASSERT_EQ(d.live_at_peak.size(), 3u);
  EXPECT_EQ(d.live_at_peak[0].name, "aten::zeros");
  EXPECT_EQ(d.live_at_peak[0].bytes, 8 * kMiB);
  EXPECT_EQ(d.live_at_peak[1].name, "(outside any op)");
  EXPECT_EQ(d.live_at_peak[1].bytes, 4 * kMiB);
  EXPECT_EQ(d.live_at_peak[2].name, "aten::mm");
  EXPECT_EQ(d.live_at_peak[2].bytes, 3 * kMiB);
  EXPECT_EQ(d.live_at_peak[2].count, 2u);
  // Churn over the two steps: step 0 makes 3 allocations (11 MiB), step 1 one (8 MiB).
  const auto& c = d.churn;
  EXPECT_EQ(c.steps, 2u);
  EXPECT_DOUBLE_EQ(c.allocs.mean, 2.0);
  EXPECT_EQ(c.allocs.max, 3);
  EXPECT_DOUBLE_EQ(c.bytes_allocated.mean, 9.5 * kMiB);
  EXPECT_EQ(c.bytes_allocated.max, 11 * kMiB);
  EXPECT_DOUBLE_EQ(c.bytes_freed.mean, 9.0 * kMiB);
  // Temporaries: 8 + 2 MiB in step 0, 8 MiB in step 1; the 2 MiB scratch inside its op.
  EXPECT_DOUBLE_EQ(c.temporaries.mean, 1.5);
  EXPECT_DOUBLE_EQ(c.temporary_bytes.mean, 9.0 * kMiB);
  EXPECT_EQ(c.temporary_bytes.max, 10 * kMiB);
  EXPECT_DOUBLE_EQ(c.op_temporaries.mean, 0.5);
  EXPECT_EQ(c.op_temporary_bytes.max, 2 * kMiB);

  // For the finding: the allocation op that made the big temporaries.
  analysis::StepAllocations a = analysis::AllocationsInWindows(t, {{0, 1000, 0}, {2000, 3000, 1}});
  EXPECT_EQ(a.allocs, 4u);
  EXPECT_EQ(a.temporary_bytes, 18 * kMiB);
  ASSERT_FALSE(a.temporaries_by_name.empty());
  EXPECT_EQ(a.temporaries_by_name[0].name, "aten::zeros");
  EXPECT_EQ(a.temporaries_by_name[0].bytes, 16 * kMiB);
  ASSERT_EQ(a.allocating_slices.size(), 2u);
  for (int32_t sl : a.allocating_slices) EXPECT_EQ(t.strings.Get(t.slices.name[static_cast<size_t>(sl)]), "aten::zeros");
}

TEST(Memory, LevelsWithoutTotalsNeverGoBelowZero) {
  // Frees of blocks allocated before the trace began: at least that much was live.
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  t.Finalize();
  t.memory.Add(10, 0, 0, 0, -300, -1, -1);
  t.memory.Add(20, 0, 0, 0, 100, -1, -1);
  t.memory.Add(30, 0, 0, 0, 500, -1, -1);
  analysis::MemorySummary s = analysis::Memory(t);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_FALSE(s.devices[0].allocator_totals);
  EXPECT_FALSE(s.devices[0].addresses);
  EXPECT_EQ(s.devices[0].timeline[0].bytes, 0);
  EXPECT_EQ(s.devices[0].peak_bytes, 600);
  EXPECT_EQ(s.devices[0].fragmentation, -1);
  EXPECT_TRUE(s.devices[0].live_at_peak.empty());
}

// A PyTorch program on a GPU, as recorded on an H100: the caching allocator's
// blocks (strata's observer, with its totals) and, on the CUDA allocations
// track, the cudaMalloc segments it reserved plus module statics (CUPTI). Two
// levels of the same bytes: each has its own timeline, the allocator's is the
// device's level, and only its events count as the program's allocations.
TEST(Memory, AllocatorAndRuntimeLayersAreSeparateTimelines) {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, int64_t{1} << 32, 0, 0});
  t.slices.Add(0, 1000, 0, t.strings.Intern("step"), SliceKind::kStep, 0);
  t.slices.Add(100, 300, 0, t.strings.Intern("aten::mm"), SliceKind::kOp);
  t.Finalize();
  using model::MemoryLayer;
  t.memory.Add(50, 1, 0, 0xa000, 20 * kMiB, -1, -1, MemoryLayer::kRuntime);  // cudaMalloc: a segment
  t.memory.Add(60, 1, 0, 0xf000, 64, -1, -1, MemoryLayer::kRuntime);          // a module's statics
  t.memory.Add(200, 0, 0, 0xa000, 8 * kMiB, 8 * kMiB, 20 * kMiB);             // a block at the segment's start
  t.memory.Add(300, 0, 0, 0xa000 + 8 * kMiB, 4 * kMiB, 12 * kMiB, 20 * kMiB);
  t.memory.Add(350, 0, 0, 0xa000 + 8 * kMiB, -4 * kMiB, 8 * kMiB, 20 * kMiB);
  t.memory.Add(900, 0, 0, 0xa000, -8 * kMiB, 0, 20 * kMiB);
  analysis::MemorySummary s = analysis::Memory(t);
  ASSERT_EQ(s.devices.size(), 2u);
  const analysis::DeviceMemory* alloc = nullptr;
  const analysis::DeviceMemory* runtime = nullptr;
  for (const auto& d : s.devices) (d.layer == MemoryLayer::kRuntime ? runtime : alloc) = &d;
  ASSERT_TRUE(alloc && runtime);
  EXPECT_EQ(alloc->peak_bytes, 12 * kMiB);  // not 32 MiB: the segment is not summed with its blocks
  EXPECT_EQ(alloc->reserved_at_peak, 20 * kMiB);
  EXPECT_TRUE(alloc->allocator_totals);
  EXPECT_FALSE(alloc->shadowed);
  EXPECT_EQ(alloc->allocs, 2u);
  EXPECT_EQ(alloc->frees, 2u);
  EXPECT_EQ(alloc->churn.temporaries.mean, 2.0);
  EXPECT_EQ(runtime->peak_bytes, 20 * kMiB + 64);
  EXPECT_TRUE(runtime->shadowed);
  EXPECT_EQ(analysis::BuildMemoryTimelines(t).Find(0, 0)->layer, MemoryLayer::kAllocator);
  // The program's allocations in the step are the allocator's two blocks.
  analysis::StepAllocations a = analysis::AllocationsInWindows(t, {{0, 1000, 0}});
  EXPECT_EQ(a.allocs, 2u);
  EXPECT_EQ(a.bytes, 12 * kMiB);
  // Per op: aten::mm allocated both blocks, and raised the allocator's level
  // (not the runtime's, flat during the op) by 12 MiB.
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].bytes, 12 * kMiB);
  EXPECT_EQ(s.ops[0].peak_increase, 12 * kMiB);

  // A CUDA program without a framework allocator: the runtime's level is the device's.
  model::Trace plain;
  plain.processes.push_back({});
  plain.tracks.push_back({model::TrackKind::kDeviceQueue, 0, int64_t{1} << 32, 0, 0});
  plain.Finalize();
  plain.memory.Add(10, 0, 0, 0x1000, kMiB, -1, -1, MemoryLayer::kRuntime);
  plain.memory.Add(20, 0, 0, 0x1000, -kMiB, -1, -1, MemoryLayer::kRuntime);
  analysis::MemorySummary p = analysis::Memory(plain);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_FALSE(p.devices[0].shadowed);
  EXPECT_EQ(p.devices[0].peak_bytes, kMiB);
  EXPECT_EQ(analysis::AllocationsInWindows(plain, {{0, 100, 0}}).allocs, 1u);
}

TEST(Memory, DownsampledTimelineKeepsThePeakAndTroughs) {
  std::vector<analysis::MemoryPoint> v;
  for (int64_t i = 0; i < 100000; ++i) v.push_back({i, (i * 7919) % 1000});
  v[54321].bytes = 5000;
  v[12345].bytes = -7;
  auto d = analysis::DownsampleTimeline(v, 2000);
  EXPECT_LE(d.size(), 2001u);
  EXPECT_GE(d.size(), 1000u);
  int64_t hi = INT64_MIN, lo = INT64_MAX;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) {
      EXPECT_LT(d[i - 1].ts, d[i].ts);
    }
    hi = std::max(hi, d[i].bytes);
    lo = std::min(lo, d[i].bytes);
  }
  EXPECT_EQ(hi, 5000);
  EXPECT_EQ(lo, -7);
  EXPECT_EQ(d.back().ts, v.back().ts);
  EXPECT_EQ(analysis::DownsampleTimeline(std::vector<analysis::MemoryPoint>(v.begin(), v.begin() + 10), 2000).size(), 10u);
}

// --- golden: shared GPU traces ------------------------------------------------------

// The section's JSON with each timeline summarized (its points are checked here,
// not stored).
json MemoryJson(const model::Trace& t) {
  report::ReportOptions opt;
  auto s = report::MakeMemorySection();
  s->Build(t, opt);
  json root = json::object();
  s->RenderJson(root, opt);
  json m = root["memory"];
  for (auto& d : m["devices"]) {
    const json& tl = d["timeline"];
    EXPECT_LE(tl.size(), 2001u);
    int64_t hi = INT64_MIN;
    bool peak_kept = false;
    for (const auto& p : tl) {
      hi = std::max(hi, p[1].get<int64_t>());
      if (p[0] == d["peak_ts_ns"] && p[1] == d["peak_bytes"]) peak_kept = true;
    }
    EXPECT_EQ(hi, d["peak_bytes"].get<int64_t>());
    EXPECT_TRUE(peak_kept) << d["device"];
    d["timeline"] = {{"points", tl.size()}, {"first", tl.front()}, {"last", tl.back()}};
  }
  return m;
}

void CheckGolden(const std::string& source, const std::string& golden) {
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout: " << source << " not checked";
  model::Trace t = testing::Load(data + "/" + source);
  // Neither trace's steps are slowed by getting memory (ResNet50's cause is its
  // single-process data loading; BERT's the host launching): no memory_allocation finding.
  for (const auto& f : analysis::Diagnose(t)) EXPECT_NE(f.category, "memory_allocation") << f.title;
  json got = {{"source", source}, {"memory", MemoryJson(t)}};
  std::string path = testing::SourceDir() + "/tests/golden/memory/" + golden;
  if (std::getenv("STRATA_UPDATE_GOLDEN")) {
    std::ofstream(path) << got.dump(1) << "\n";
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  json want = json::parse(in);
  EXPECT_EQ(got, want) << "got:\n" << got.dump(1);
}

// H100 BERT-small inference: CUDA caching-allocator events with addresses and
// totals. The peak's live set is the activations of the step (the weights were
// allocated before the trace); reserved 116 MiB at a 96.6 MiB peak.
TEST(MemoryGolden, TraceLensBertH100) {
  CheckGolden("tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz", "tracelens-bert-h100.json");
}

// V100 ResNet50 training, legacy Kineto schema: sizes only (no addresses, no
// totals): levels, peaks and churn, no live set.
TEST(MemoryGolden, KinetoResnet50V100) {
  CheckGolden("kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
              "kineto-resnet50-v100.json");
}

}  // namespace
}  // namespace strata

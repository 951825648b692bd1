// TensorFlow's step stats merged into a trace (importers/strata/step_stats_merge):
// a RunMetadata that tensorflow-cpu 2.21 returned for one Session.run of
// tests/workloads/tf1_session.py with RunOptions(trace_level=FULL_TRACE), as
// strata._tf wrote it. The expected figures are TensorFlow's own, read from the
// same file with TensorFlow's RunMetadata class: 33 node runs, "MatMul" from
// all_start_nanos 1795698791075502710 for 80350 ns (Compute 76053 ns), the
// earliest node at 1795698791075389217, two nodes at a time at most.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "base/files.h"
#include "importers/strata/step_stats_merge.h"
#include "tests/testing.h"

namespace strata {
namespace {

using importers::strata_ctf::MergeRunMetadata;

constexpr int64_t kOffset = -1795698791000000000;  // wall clock -> the trace's

model::Trace Merged() {
  auto bytes = ReadFile(testing::SourceDir() + "/tests/data/tensorflow/tf1_step_stats.pb");
  EXPECT_TRUE(bytes.ok());
  model::Trace t;
  t.processes.emplace_back();
  EXPECT_TRUE(MergeRunMetadata(t, *bytes, 0, kOffset));
  t.Finalize();
  return t;
}

TEST(StepStats, EveryNodeRunIsAnOpWithTfsTimes) {
  model::Trace t = Merged();
  model::StringId tf_op = t.strings.Find("tf_op"), compute = t.strings.Find("compute_ns");
  size_t ops = 0;
  int64_t first = INT64_MAX;
  for (uint32_t i = 0; i < t.slices.size(); ++i) {
    ASSERT_EQ(t.slices.kind[i], model::SliceKind::kOp);
    ++ops;
    first = std::min(first, t.slices.ts[i]);
    int32_t a = t.FindArg(i, tf_op), c = t.FindArg(i, compute);
    ASSERT_NE(a, model::kNone);
    ASSERT_NE(c, model::kNone);
    std::string_view full = t.strings.Get(t.args.str[static_cast<size_t>(a)]);
    // "name:Type", the type the slice is named by (from the timeline label).
    EXPECT_EQ(full.substr(full.rfind(':') + 1), t.strings.Get(t.slices.name[i])) << full;
    EXPECT_LE(t.args.num[static_cast<size_t>(c)], static_cast<double>(t.slices.dur[i])) << full;
    if (full == "MatMul:MatMul") {
      EXPECT_EQ(t.slices.ts[i], 1795698791075502710 + kOffset);
      EXPECT_EQ(t.slices.dur[i], 80350);
      EXPECT_EQ(t.args.num[static_cast<size_t>(c)], 76053.0);
    }
  }
  EXPECT_EQ(ops, 33u);
  EXPECT_EQ(first, 1795698791075389217 + kOffset);
}

TEST(StepStats, ParallelNodesGoOnLanesThatNeverOverlap) {
  model::Trace t = Merged();
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> by_track;
  for (uint32_t i = 0; i < t.slices.size(); ++i) by_track[t.slices.track[i]].push_back({t.slices.ts[i], t.slices.end(i)});
  EXPECT_EQ(by_track.size(), 2u);  // two nodes at a time at most
  for (auto& [trk, spans] : by_track) {
    EXPECT_EQ(t.strings.Get(t.tracks[trk].name).substr(0, 20), "TF step stats CPU:0 ");
    EXPECT_LT(t.tracks[trk].tid, 0);  // not an OS thread
    std::sort(spans.begin(), spans.end());
    for (size_t k = 1; k < spans.size(); ++k) EXPECT_GE(spans[k].first, spans[k - 1].second);
  }
}

TEST(StepStats, RefusesWhatIsNoRunMetadata) {
  auto bytes = ReadFile(testing::SourceDir() + "/tests/data/tensorflow/tf1_step_stats.pb");
  ASSERT_TRUE(bytes.ok());
  model::Trace t;
  t.processes.emplace_back();
  EXPECT_FALSE(MergeRunMetadata(t, bytes->substr(0, bytes->size() / 2), 0, 0));  // truncated
  EXPECT_FALSE(MergeRunMetadata(t, "\xff\xff\xff\xff garbage", 0, 0));
}

}  // namespace
}  // namespace strata

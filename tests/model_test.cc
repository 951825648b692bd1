// The analysis model and the core analyses on hand-built traces.
#include <gtest/gtest.h>

#include "analysis/summary.h"
#include "model/trace.h"

namespace strata {
namespace {

model::Trace TwoTracks() {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  t.tracks.push_back({model::TrackKind::kThread, 0, 2});
  auto a = t.strings.Intern("a"), b = t.strings.Intern("b"), c = t.strings.Intern("c");
  // Added out of order, as importers do: children before parents.
  t.slices.Add(20, 10, 0, b, model::SliceKind::kSpan);   // child of a
  t.slices.Add(10, 100, 0, a, model::SliceKind::kSpan);
  t.slices.Add(40, 20, 0, c, model::SliceKind::kSpan);   // child of a
  t.slices.Add(45, 5, 0, b, model::SliceKind::kSpan);    // child of c
  t.slices.Add(0, 50, 1, a, model::SliceKind::kSpan);    // another track
  t.flows.Add(1, 0, 4);                                  // b(20) -> a on track 1
  t.Finalize();
  return t;
}

TEST(Model, FinalizeSortsNestsAndRemaps) {
  model::Trace t = TwoTracks();
  ASSERT_EQ(t.slices.size(), 5u);
  // Track 0 in time order: a(10) b(20) c(40) b(45), then track 1.
  EXPECT_EQ(t.slices.ts, (std::vector<int64_t>{10, 20, 40, 45, 0}));
  EXPECT_EQ(t.slices.depth, (std::vector<uint16_t>{0, 1, 1, 2, 0}));
  EXPECT_EQ(t.slices.parent, (std::vector<int32_t>{-1, 0, 0, 2, -1}));
  EXPECT_EQ(t.flows.from[0], 1);
  EXPECT_EQ(t.flows.to[0], 4);
  EXPECT_EQ(t.SliceAt(0, 47), 3);
  EXPECT_EQ(t.SliceAt(0, 35), 0);
  EXPECT_EQ(t.SliceAt(0, 5), -1);
  EXPECT_EQ(t.SliceAt(0, 200), -1);
  EXPECT_EQ(t.SliceAt(1, 49), 4);
}

TEST(Model, EqualBoundsKeepTheImportersNestingHint) {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({});
  auto outer = t.strings.Intern("outer"), inner = t.strings.Intern("inner");
  uint32_t i = t.slices.Add(5, 10, 0, inner, model::SliceKind::kSpan);
  t.slices.depth[i] = 1;
  t.slices.Add(5, 10, 0, outer, model::SliceKind::kSpan);
  t.Finalize();
  EXPECT_EQ(t.slices.name[0], outer);
  EXPECT_EQ(t.slices.parent[1], 0);
}

TEST(Analysis, SelfTimeAndSpanTable) {
  model::Trace t = TwoTracks();
  auto self = analysis::SelfTimes(t);
  EXPECT_EQ(self, (std::vector<int64_t>{70, 10, 15, 5, 50}));
  auto spans = analysis::SpanTable(t);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].name, "a");
  EXPECT_EQ(spans[0].count, 2u);
  EXPECT_EQ(spans[0].total_ns, 150);
  EXPECT_EQ(spans[0].self_ns, 120);
  EXPECT_EQ(spans[1].name, "c");
  EXPECT_EQ(spans[2].name, "b");
  EXPECT_EQ(spans[2].total_ns, 15);
}

TEST(Analysis, NearestRankPercentiles) {
  std::vector<int64_t> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  auto d = analysis::Distribute(v);
  EXPECT_EQ(d.count, 100u);
  EXPECT_EQ(d.p50, 50);
  EXPECT_EQ(d.p90, 90);
  EXPECT_EQ(d.p99, 99);
  EXPECT_EQ(d.min, 1);
  EXPECT_EQ(d.max, 100);
  EXPECT_DOUBLE_EQ(d.mean, 50.5);
  auto one = analysis::Distribute({7});
  EXPECT_EQ(one.p50, 7);
  EXPECT_EQ(one.p99, 7);
  EXPECT_EQ(analysis::Distribute({}).count, 0u);
}

}  // namespace
}  // namespace strata

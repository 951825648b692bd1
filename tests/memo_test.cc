// analysis::Memo: while one is alive, an analysis asked twice over the same
// trace is computed once and gives what it gives without the memo (the
// critical paths of all steps, and an evenly spread choice of them).
#include <gtest/gtest.h>

#include "analysis/critical_path.h"
#include "analysis/memo.h"

namespace strata {
namespace {

using model::SliceKind;

// Ten steps on one thread, each an op then a gap, the op's length growing.
model::Trace Steps() {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  model::StringId step = t.strings.Intern("step"), op = t.strings.Intern("aten::mm");
  for (int k = 0; k < 10; ++k) {
    int64_t at = k * 1000;
    t.slices.Add(at, 1000, 0, step, SliceKind::kStep, static_cast<uint64_t>(k));
    t.slices.Add(at + 100, 100 + 50 * k, 0, op, SliceKind::kOp);
  }
  t.Finalize();
  return t;
}

void ExpectSame(const std::vector<analysis::StepCriticalPath>& a, const std::vector<analysis::StepCriticalPath>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].step_slice, b[i].step_slice);
    ASSERT_EQ(a[i].items.size(), b[i].items.size());
    for (size_t k = 0; k < a[i].items.size(); ++k) EXPECT_EQ(a[i].items[k].on_path_ns, b[i].items[k].on_path_ns);
  }
}

TEST(Memo, SameResultsAsWithoutOneAndComputedOnce) {
  model::Trace t = Steps();
  analysis::CriticalPathOptions four;
  four.max_steps = 4;
  auto plain_all = analysis::CriticalPaths(t, {.max_steps = 100});
  auto plain_four = analysis::CriticalPaths(t, four);
  ASSERT_EQ(plain_all.size(), 10u);
  ASSERT_EQ(plain_four.size(), 4u);
  EXPECT_EQ(analysis::Memo::Of(t), nullptr);
  {
    analysis::Memo memo(t);
    EXPECT_EQ(analysis::Memo::Of(t), &memo);
    ExpectSame(analysis::CriticalPaths(t, four), plain_four);  // (computes all steps once)
    ExpectSame(analysis::CriticalPaths(t, {.max_steps = 100}), plain_all);
    int computed = 0;
    auto f = [&] { return ++computed; };
    EXPECT_EQ(memo.Get<int>("x", f), 1);
    EXPECT_EQ(memo.Get<int>("x", f), 1);
    EXPECT_EQ(computed, 1);
  }
  EXPECT_EQ(analysis::Memo::Of(t), nullptr);  // gone with its scope: nothing cached after
}

}  // namespace
}  // namespace strata

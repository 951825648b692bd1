// The --gpu-metrics tier's host side, offline: CUPTI's host profiler API needs
// no GPU or driver, so strata's metric set is checked against real chips here.
#include <gtest/gtest.h>

#include "collectors/cupti/range_profiler.h"

namespace strata {
namespace {

TEST(CuptiRangeProfiler, MetricsAreValidForCurrentChipsOffline) {
  // CUPTI's host-side profiler API needs no GPU: strata's metric set must be
  // accepted as is for the chips users run on, with a known replay cost.
  for (const char* chip : {"GA100", "GH100", "AD102", "GB100"}) {
    auto c = cupti::CheckMetricsOnHost(chip);
    EXPECT_TRUE(c.ok) << chip << ": " << c.error;
    EXPECT_GE(c.passes, 1u) << chip;
  }
  auto bad = cupti::CheckMetricsOnHost("NO_SUCH_CHIP");
  EXPECT_FALSE(bad.ok);
  EXPECT_FALSE(bad.error.empty());
}

}  // namespace
}  // namespace strata

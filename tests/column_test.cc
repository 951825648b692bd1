// model::Column: a vector's behaviour over owned rows, views that copy
// themselves on their first change (and say so), and columns that spill to
// files past the memory budget with the same rows.
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <filesystem>
#include <memory>
#include <numeric>

#include <gtest/gtest.h>

#include "base/huge_pages.h"
#include "model/column.h"
#include "testing.h"

namespace strata::model {
namespace {

TEST(Column, BehavesAsAVector) {
  Column<int64_t> c;
  EXPECT_TRUE(c.empty());
  for (int64_t i = 0; i < 1000; ++i) c.push_back(i * 3);
  ASSERT_EQ(c.size(), 1000u);
  EXPECT_EQ(c[999], 2997);
  EXPECT_EQ(c.back(), 2997);
  c.push_back(c[0]);  // a row of the column itself, across a growth
  EXPECT_EQ(c.back(), 0);
  c.resize(10);
  c.resize(12, 7);
  EXPECT_EQ(c, (std::vector<int64_t>{0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 7, 7}));
  Column<int64_t> d = c;
  d[0] = 100;
  EXPECT_EQ(c[0], 0);
  Column<int64_t> e = std::move(d);
  EXPECT_EQ(e[0], 100);
  EXPECT_EQ(d.size(), 0u);
  e.assign(3, 5);
  EXPECT_EQ(e, (std::vector<int64_t>{5, 5, 5}));
  std::vector<int64_t> more{1, 2};
  e.insert(e.end(), more.begin(), more.end());
  EXPECT_EQ(e, (std::vector<int64_t>{5, 5, 5, 1, 2}));
  e.clear();
  EXPECT_TRUE(e.empty());
}

// Large columns are mappings of their own, grown in place (mremap) rather
// than copied: rows survive growing into one from malloc's memory, growing
// within it, shrinking back below it, and a copy of one.
TEST(Column, LargeColumnsKeepTheirRowsAcrossEveryKindOfGrowth) {
  Column<int64_t> c;
  const int64_t n = (int64_t{48} << 20) / 8 + 12345;  // past 16 MiB, 32 MiB, to 64 MiB of capacity
  for (int64_t i = 0; i < n; ++i) c.push_back(i * 7 - 3);
  ASSERT_EQ(c.size(), static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i += 4093) ASSERT_EQ(c[static_cast<size_t>(i)], i * 7 - 3) << i;
  EXPECT_EQ(c.back(), (n - 1) * 7 - 3);
  Column<int64_t> copy = c;
  EXPECT_EQ(copy, c);
  c.resize(1000);
  c.shrink_to_fit();  // from a mapping back to malloc
  EXPECT_EQ(c.capacity(), 1000u);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(c[static_cast<size_t>(i)], i * 7 - 3);
  copy.resize(size_t{3} << 20);
  copy.shrink_to_fit();  // a mapping to a smaller mapping
  EXPECT_EQ(copy.back(), ((int64_t{3} << 20) - 1) * 7 - 3);
  copy.resize_for_overwrite(size_t{5} << 20);
  copy.back() = 42;
  EXPECT_EQ(copy.size(), size_t{5} << 20);
  EXPECT_EQ(copy.back(), 42);
}

// The VmFlags of the mapping of /proc/self/smaps that holds `p`.
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(p);
  bool in = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      in = lo <= at && at < hi;
    } else if (in && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

uint64_t MeminfoBytes(const std::string& key) {
  std::ifstream f("/proc/meminfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1)) * 1024;
  return 0;
}

TEST(Column, LargeColumnsAskForHugePagesOnlyWhileTheKernelHasThemFree) {
  if (!std::filesystem::exists("/proc/buddyinfo")) GTEST_SKIP() << "no /proc/buddyinfo";
  size_t free_huge = base::FreeHugePageBytes();
  // The free lists' 2 MiB-and-larger blocks are part of the free memory.
  EXPECT_LE(free_huge, MeminfoBytes("MemFree"));
  Column<int64_t> c;
  c.resize(size_t{8} << 20);  // 64 MiB: a mapping of its own
  std::string flags = VmFlagsOf(c.data());
  ASSERT_FALSE(flags.empty());
  if (free_huge >= size_t{1} << 30) {
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;  // MADV_HUGEPAGE
  } else if (free_huge < size_t{64} << 20) {
    EXPECT_NE(flags.find(" nh"), std::string::npos) << flags;  // MADV_NOHUGEPAGE
  }
  for (size_t i = 0; i < c.size(); i += 4096) c[i] = static_cast<int64_t>(i);
  EXPECT_EQ(c[4096 * 100], 4096 * 100);
}

TEST(Column, ViewIsReadInPlaceAndCopiedOnItsFirstChange) {
  auto rows = std::make_shared<std::vector<uint32_t>>(std::vector<uint32_t>{4, 5, 6});
  std::weak_ptr<std::vector<uint32_t>> alive = rows;
  Column<uint32_t> c;
  c.View(rows->data(), rows->size(), rows);
  rows.reset();  // the column keeps them alive
  ASSERT_FALSE(alive.expired());
  const Column<uint32_t>& cr = c;
  uint64_t copied = GetColumnStats().copied.load();
  EXPECT_EQ(cr.data(), alive.lock()->data());  // no copy to read
  EXPECT_EQ(cr[1], 5u);
  EXPECT_TRUE(c.is_view());
  EXPECT_EQ(GetColumnStats().copied.load(), copied);
  c[1] = 50;  // a change: the rows are copied first, the owner's are untouched
  EXPECT_FALSE(c.is_view());
  EXPECT_EQ(GetColumnStats().copied.load(), copied + 1);
  EXPECT_TRUE(alive.expired());
  EXPECT_EQ(c, (std::vector<uint32_t>{4, 50, 6}));
  Column<uint32_t> g;
  auto more = std::make_shared<std::vector<uint32_t>>(std::vector<uint32_t>{1});
  g.View(more->data(), 1, more);
  g.push_back(2);  // growth from a view (no capacity of its own)
  EXPECT_EQ(g, (std::vector<uint32_t>{1, 2}));
}

TEST(Column, PastTheBudgetLargeColumnsSpillToFilesWithTheSameRows) {
  std::string dir = testing::TempDir("column_spill");
  std::filesystem::create_directories(dir);
  const size_t n = 3u << 20;  // 24 MiB of int64
  uint64_t spilled0 = GetColumnStats().spilled_bytes.load();
  {
    ScopedColumnSpill spill(dir, 8u << 20);
    Column<int64_t> big, small;
    for (size_t i = 0; i < n; ++i) big.push_back(static_cast<int64_t>(i) * 7);
    for (int i = 0; i < 100; ++i) small.push_back(i);
    EXPECT_TRUE(big.is_spilled());
    EXPECT_FALSE(small.is_spilled());  // under the smallest size worth a file
    EXPECT_GE(GetColumnStats().spilled_bytes.load(), spilled0 + n * sizeof(int64_t));
    int64_t sum = std::accumulate(big.begin(), big.end(), int64_t{0});
    EXPECT_EQ(sum, 7 * static_cast<int64_t>(n) * static_cast<int64_t>(n - 1) / 2);
    Column<int64_t> copy = big;  // also past the budget: a file of its own
    EXPECT_EQ(copy, big);
    // The files are unlinked: nothing is left in the folder.
    EXPECT_TRUE(std::filesystem::is_empty(dir));
  }
  EXPECT_EQ(GetColumnStats().spilled_bytes.load(), spilled0);  // unmapped with their columns
  EXPECT_EQ(ColumnSpillDir(), "");
  Column<int64_t> after;
  for (size_t i = 0; i < n; ++i) after.push_back(1);
  EXPECT_FALSE(after.is_spilled());  // spilling ended with the scope
}

// A spilled column whose file cannot grow (a full disk: here a file-size
// limit) goes back to the heap with its rows, rather than failing.
// In a child process (a file-size limit): grows a column past it; exits 0 when
// the column spilled, came back to the heap, and kept every row.
[[noreturn]] void GrowPastAFullDisk(const std::string& dir) {
  std::signal(SIGXFSZ, SIG_IGN);  // past the limit: EFBIG instead of the signal
  rlimit lim{};
  lim.rlim_cur = lim.rlim_max = 4u << 20;
  ::setrlimit(RLIMIT_FSIZE, &lim);
  ScopedColumnSpill spill(dir, 1u << 20);
  Column<int64_t> big;
  const size_t n = 2u << 20;  // 16 MiB: spills at 1 MiB, cannot pass 4 MiB in a file
  bool was_spilled = false;
  for (size_t i = 0; i < n; ++i) {
    big.push_back(static_cast<int64_t>(i));
    was_spilled = was_spilled || big.is_spilled();
  }
  bool rows_ok = big.size() == n;
  for (size_t i = 0; rows_ok && i < n; ++i) rows_ok = big[i] == static_cast<int64_t>(i);
  std::exit(was_spilled && !big.is_spilled() && rows_ok ? 0 : 1);
}

// A spilled column whose file cannot grow (a full disk: here a file-size
// limit) goes back to the heap with its rows, rather than failing.
TEST(ColumnDeathTest, ASpilledColumnThatCannotGrowMovesBackToTheHeap) {
  std::string dir = testing::TempDir("column_spill_full");
  std::filesystem::create_directories(dir);
  EXPECT_EXIT(GrowPastAFullDisk(dir), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace strata::model

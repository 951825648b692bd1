// base/files.h: RemoveOldestDirectories, the pruning of a cache of builds
// (the PyTorch observers built per torch and per strata build).
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "base/files.h"
#include "testing.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

TEST(Files, RemoveOldestDirectoriesKeepsTheNewestAndTheOneInUse) {
  const fs::path root = testing::TempDir("files_prune");
  fs::create_directories(root);
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 6; ++i) {
    fs::path d = root / ("build" + std::to_string(i));
    fs::create_directories(d / "lib");
    std::ofstream(d / "lib" / "libstrata_torch.so") << "x";
    fs::last_write_time(d, now - std::chrono::hours(10 - i));  // build5 the newest
  }
  std::ofstream(root / "a-file") << "not a build";
  // build0, the oldest, is the one in use: it stays, with the newest two.
  RemoveOldestDirectories(root.string(), 3, (root / "build0").string());
  EXPECT_TRUE(fs::exists(root / "build0" / "lib" / "libstrata_torch.so"));
  EXPECT_TRUE(fs::exists(root / "build5"));
  EXPECT_TRUE(fs::exists(root / "build4"));
  for (int i = 1; i <= 3; ++i) EXPECT_FALSE(fs::exists(root / ("build" + std::to_string(i)))) << i;
  EXPECT_TRUE(fs::exists(root / "a-file")) << "only directories are pruned";
  // Within the bound: nothing goes. A root that does not exist: no error.
  RemoveOldestDirectories(root.string(), 3, "");
  EXPECT_TRUE(fs::exists(root / "build0") && fs::exists(root / "build4") && fs::exists(root / "build5"));
  RemoveOldestDirectories((root / "absent").string(), 1, "");
}

}  // namespace
}  // namespace strata

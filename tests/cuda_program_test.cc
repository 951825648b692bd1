// A CUDA program (nvcc-built, static and shared CUDA runtime) on a host without
// an NVIDIA driver: it runs unchanged under `strata record`, and the manifest and
// report say why there is no CUDA data.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

using testing::Record;
using testing::RunCommand;
using testing::StrataBin;
using testing::TempDir;
using testing::TestProgram;
using testing::LibDir;

class CudaWithoutDriver : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaWithoutDriver, ProgramRunsUnchangedAndTheTraceSaysWhyThereIsNoCudaData) {
  std::string prog = TestProgram("cuda_vector_add_" + GetParam());
  if (!std::filesystem::exists(prog)) GTEST_SKIP() << "no CUDA toolkit (nvcc) at build time";
  if (std::filesystem::exists("/proc/driver/nvidia/version"))
    GTEST_SKIP() << "this host has an NVIDIA driver: scripts/gpu-check covers it";
  auto plain = RunCommand({prog, "4096", "2"});
  std::string dir = TempDir("cuda_nodriver_" + GetParam());
  auto traced = Record(dir, {prog, "4096", "2"});
  // Unchanged: same output, same exit status (the program's own CUDA error).
  EXPECT_EQ(traced.exit_code, plain.exit_code) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_NE(plain.out.find("cuda error"), std::string::npos) << plain.out;
  if (!std::filesystem::exists(LibDir() + "/libstrata_cupti.so")) return;
  auto c = testing::ManifestCollector(dir, "cuda");
  EXPECT_EQ(c["state"], "unavailable") << c.dump();
  EXPECT_NE(c["detail"].get<std::string>().find("no NVIDIA driver"), std::string::npos) << c.dump();
  auto report = RunCommand({StrataBin(), "report", dir});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("no NVIDIA driver"), std::string::npos) << report.out;
  // The recorder itself ran in the program.
  auto text = ReadFile(dir + "/strata.json");
  auto m = nlohmann::json::parse(*text);
  EXPECT_EQ(m["processes"].size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Cudart, CudaWithoutDriver, ::testing::Values("static", "shared"));

}  // namespace
}  // namespace strata

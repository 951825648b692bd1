// `strata record` with the accelerator collectors: what it injects into the
// program's environment, and what the manifest and report say when a collector
// has nothing to record (a CUDA program on a host without an NVIDIA driver).
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

TEST(AccelRecord, CollectorLibrariesAreInjectedThroughTheirVendorsVariables) {
  std::string dir = TempDir("accel_env");
  auto r = Record(dir, {"sh", "-c", "echo CUDA=$CUDA_INJECTION64_PATH; echo NVTX=$NVTX_INJECTION64_PATH; "
                                    "echo CL=$OPENCL_LAYERS; echo HSA=$HSA_TOOLS_LIB"},
                  {}, {{"OPENCL_LAYERS", "/opt/user/layer.so"}, {"HSA_TOOLS_LIB", "/opt/user/tool.so"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct Lib {
    const char* name;
    const char* file;
    std::string want;
  };
  const Lib libs[] = {
      {"cuda", "libstrata_cupti.so", "CUDA=" + LibDir() + "/libstrata_cupti.so\nNVTX=" + LibDir() + "/libstrata_cupti.so\n"},
      {"opencl", "libstrata_opencl.so", "CL=" + LibDir() + "/libstrata_opencl.so:/opt/user/layer.so\n"},
      {"hsa", "libstrata_hsa.so", "HSA=" + LibDir() + "/libstrata_hsa.so /opt/user/tool.so\n"},
  };
  for (const Lib& l : libs) {
    auto c = testing::ManifestCollector(dir, l.name);
    ASSERT_FALSE(c.is_null()) << l.name;
    if (!std::filesystem::exists(LibDir() + "/" + l.file)) {
      // Not built here: the manifest says so, and the user's variable is left alone.
      EXPECT_EQ(c["state"], "unavailable") << c.dump();
      EXPECT_NE(c["detail"].get<std::string>().find("built without"), std::string::npos) << c.dump();
      continue;
    }
    EXPECT_NE(r.out.find(l.want), std::string::npos) << l.name << "\n" << r.out;
    // sh made no accelerator call: the manifest says why there is no data.
    EXPECT_EQ(c["state"], "unavailable") << c.dump();
    EXPECT_NE(c["detail"].get<std::string>().find("no "), std::string::npos) << c.dump();
  }
  // --accel none: nothing injected, the user's own settings untouched.
  std::string off = TempDir("accel_off");
  auto n = Record(off, {"sh", "-c", "echo CL=$OPENCL_LAYERS; echo CUDA=$CUDA_INJECTION64_PATH"}, {"--accel", "none"},
                  {{"OPENCL_LAYERS", "/opt/user/layer.so"}});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_NE(n.out.find("CL=/opt/user/layer.so\n"), std::string::npos) << n.out;
  EXPECT_NE(n.out.find("CUDA=\n"), std::string::npos) << n.out;
  EXPECT_EQ(testing::ManifestCollector(off, "cuda")["state"], "off");
  // Bad values are one-line errors before anything runs.
  auto bad = RunCommand({StrataBin(), "record", "--accel", "cuda,vulkan", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("vulkan"), std::string::npos);
  auto bad2 = RunCommand({StrataBin(), "record", "--gpu-metrics", "everything", "--", "true"});
  EXPECT_EQ(bad2.exit_code, 2);
  EXPECT_NE(bad2.err.find("--gpu-metrics"), std::string::npos);
  auto bad3 = RunCommand({StrataBin(), "record", "--cuda-api", "sometimes", "--", "true"});
  EXPECT_NE(bad3.exit_code, 0);
  EXPECT_NE(bad3.err.find("--cuda-api"), std::string::npos) << bad3.err;
  // The collectors' documented knobs pass from the caller's environment to the
  // program; strata's other variables (an outer recording's) do not.
  std::string knobs = TempDir("accel_knobs");
  auto k = Record(knobs, {"sh", "-c", "echo LH=$STRATA_TORCH_LOOP_HEAD CB=$STRATA_CUPTI_BUFFERS TL=$STRATA_TORCH_LIB."},
                  {"--accel", "none"},
                  {{"STRATA_TORCH_LOOP_HEAD", "0"}, {"STRATA_CUPTI_BUFFERS", "4"}, {"STRATA_TORCH_LIB", "/outer/lib.so"}});
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_NE(k.out.find("LH=0 CB=4 "), std::string::npos) << k.out;
  EXPECT_EQ(k.out.find("/outer/lib.so"), std::string::npos) << k.out;
  // --cuda-api reaches the CUDA collector (STRATA_CUDA_API; strata's own variables
  // from the caller's environment are dropped) and the manifest.
  if (std::filesystem::exists(LibDir() + "/libstrata_cupti.so")) {
    std::string api = TempDir("accel_cuda_api");
    auto a = Record(api, {"sh", "-c", "echo API=$STRATA_CUDA_API"}, {"--cuda-api", "activity"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_NE(a.out.find("API=activity\n"), std::string::npos) << a.out;
    auto m = nlohmann::json::parse(*ReadFile(api + "/strata.json"));
    EXPECT_EQ(m["options"]["cuda_api"], "activity") << m["options"].dump();
  }
}

}  // namespace
}  // namespace strata

// The OpenCL collector on a real OpenCL implementation (PoCL's CPU device):
// unmodified programs run under `strata record`, and the trace is checked
// against what the programs say they enqueued.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "analysis/device.h"
#include "base/files.h"
#include "report/report.h"
#include "tests/testing.h"

namespace strata {
namespace {

using model::SliceKind;
using testing::Load;
using testing::Record;
using testing::RunCommand;
using testing::TempDir;
using testing::TestProgram;

// "key=value" pairs of the program's "expect ..." / "gemm ..." lines.
std::map<std::string, std::string> Fields(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    auto eq = tok.find('=');
    if (eq != std::string::npos) out[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return out;
}

std::map<std::string, std::string> Expectations(const std::string& out) {
  std::map<std::string, std::string> all;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("expect ", 0) == 0)
      for (auto& [k, v] : Fields(line)) all[k] = v;
  return all;
}

uint64_t U(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  EXPECT_NE(it, m.end()) << k;
  return it == m.end() ? 0 : std::stoull(it->second);
}

bool HaveOpenCl() {
  return std::filesystem::exists(TestProgram("cl_pipeline")) &&
         RunCommand({"sh", "-c", "command -v clinfo >/dev/null && clinfo -l | grep -q Device"}).exit_code == 0;
}

// PoCL compiles kernels on first use (seconds for CLBlast) and caches them: one
// cache shared by the test runs (and the build types) keeps later tests fast.
std::map<std::string, std::string> ClEnv() {
  const char* tmp = std::getenv("TMPDIR");
  std::string cache = std::string(tmp ? tmp : "/tmp") + "/strata-pocl-cache";
  std::filesystem::create_directories(cache);
  return {{"POCL_CACHE_DIR", cache}};
}

std::string ArgStr(const model::Trace& t, uint32_t slice, const std::string& key) {
  model::StringId k = t.strings.Find(key);
  for (size_t i = 0; i < t.args.size(); ++i)
    if (t.args.slice[i] == slice && t.args.key[i] == k) return std::string(t.strings.Get(t.args.str[i]));
  return "";
}

double ArgNum(const model::Trace& t, uint32_t slice, const std::string& key, double def = -1) {
  model::StringId k = t.strings.Find(key);
  for (size_t i = 0; i < t.args.size(); ++i)
    if (t.args.slice[i] == slice && t.args.key[i] == k) return t.args.num[i];
  return def;
}

std::string Name(const model::Trace& t, size_t slice) { return std::string(t.strings.Get(t.slices.name[slice])); }

class OpenCl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveOpenCl()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd clinfo) or OpenCL tests not built";
  }
};

TEST_F(OpenCl, PipelineCommandsAreTimedInsideTheCallsThatWaitedForThem) {
  std::string dir = TempDir("cl_pipeline");
  auto r = Record(dir, {TestProgram("cl_pipeline"), "3", "4096"}, {}, ClEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto want = Expectations(r.out);
  model::Trace t = Load(dir);

  // The layer said it recorded everything.
  bool reported = false;
  for (const auto& c : t.collectors)
    if (c.collector == "opencl") {
      reported = true;
      EXPECT_EQ(c.state, "ok") << c.detail;
    }
  EXPECT_TRUE(reported);

  std::map<std::string, uint64_t> count;
  std::map<std::string, uint64_t> bytes;
  std::set<int64_t> queues;
  for (size_t r_ = 0; r_ < t.device.size(); ++r_) {
    uint32_t s = t.device.slice[r_];
    std::string name = Name(t, s);
    SliceKind k = t.slices.kind[s];
    std::string key = k == SliceKind::kKernel ? "kernel" : name;
    ++count[key];
    bytes[key] += t.device.bytes[r_];
    queues.insert(t.device.stream[r_]);
    EXPECT_EQ(t.device.device[r_], 64) << "the first OpenCL device is number 64";

    // Each device activity links to the API call that enqueued it, by a flow too.
    int32_t l = t.device.launch[r_];
    ASSERT_NE(l, model::kNone) << name;
    auto launch = static_cast<size_t>(l);
    EXPECT_EQ(t.slices.kind[launch], SliceKind::kRuntime);
    EXPECT_EQ(t.tracks[t.slices.track[launch]].kind, model::TrackKind::kThread);
    std::string api = Name(t, launch);
    if (k == SliceKind::kKernel) {
      EXPECT_EQ(api, "clEnqueueNDRangeKernel");
    }
    if (name == "Memcpy HtoD") {
      EXPECT_EQ(api, "clEnqueueWriteBuffer");
    }
    if (name == "Memcpy DtoH") {
      EXPECT_EQ(api, "clEnqueueReadBuffer");
    }
    if (name == "Memcpy DtoD") {
      EXPECT_EQ(api, "clEnqueueCopyBuffer");
    }
    if (name == "Memset") {
      EXPECT_EQ(api, "clEnqueueFillBuffer");
    }
    if (name == "Map") {
      EXPECT_EQ(api, "clEnqueueMapBuffer");
    }
    if (name == "Unmap") {
      EXPECT_EQ(api, "clEnqueueUnmapMemObject");
    }
    if (name == "Marker") {
      EXPECT_EQ(api, "clEnqueueMarkerWithWaitList");
    }
    if (name == "Barrier") {
      EXPECT_EQ(api, "clEnqueueBarrierWithWaitList");
    }
    bool flow = false;
    for (size_t f = 0; f < t.flows.size(); ++f) flow = flow || (t.flows.from[f] == l && t.flows.to[f] == static_cast<int32_t>(s));
    EXPECT_TRUE(flow) << name;

    // Device time inside the host interval: after the enqueue began, and done
    // before the call that waited for it returned (the blocking call itself, or
    // the next clFinish of its queue on that thread).
    int64_t start = t.slices.ts[s], end = t.slices.end(s);
    EXPECT_GE(start, t.slices.ts[launch]) << name << " started " << t.slices.ts[launch] - start << " ns before " << api
                                          << " was called";
    EXPECT_LE(start, end);
    if (ArgNum(t, static_cast<uint32_t>(launch), "blocking", 0) == 1) {
      EXPECT_LE(end, t.slices.end(launch)) << name << " ended after the blocking " << api << " returned";
      continue;
    }
    int64_t wait_end = -1;
    auto [first, last] = t.track_slices[t.slices.track[launch]];
    for (uint32_t i = first; i < last && wait_end < 0; ++i)
      if (Name(t, i) == "clFinish" && t.slices.ts[i] >= t.slices.end(launch) &&
          ArgNum(t, i, "queue") == static_cast<double>(t.device.stream[r_]))
        wait_end = t.slices.end(i);
    ASSERT_GE(wait_end, 0) << "no clFinish after " << api;
    EXPECT_LE(end, wait_end) << name << " ended " << end - wait_end << " ns after the clFinish that waited for it returned";
  }
  EXPECT_EQ(count["kernel"], U(want, "kernels"));
  EXPECT_EQ(count["Memcpy HtoD"], U(want, "writes"));
  EXPECT_EQ(count["Memcpy DtoH"], U(want, "reads"));
  EXPECT_EQ(count["Memcpy DtoD"], U(want, "copies"));
  EXPECT_EQ(count["Memset"], U(want, "fills"));
  EXPECT_EQ(count["Map"], U(want, "maps"));
  EXPECT_EQ(count["Unmap"], U(want, "unmaps"));
  EXPECT_EQ(count["Marker"], U(want, "markers"));
  EXPECT_EQ(count["Barrier"], U(want, "barriers"));
  // Exact bytes.
  EXPECT_EQ(bytes["Memcpy HtoD"], U(want, "bytes_written"));
  EXPECT_EQ(bytes["Memcpy DtoH"], U(want, "bytes_read"));
  EXPECT_EQ(bytes["Memcpy DtoD"], U(want, "bytes_copied"));
  EXPECT_EQ(bytes["Memset"], U(want, "bytes_filled"));
  EXPECT_EQ(bytes["Map"], U(want, "bytes_mapped"));
  EXPECT_EQ(queues.size(), 2u);

  // Kernels with their launch sizes: scale and partial_sum have 64-item groups,
  // add lets the driver choose (grid in work-items, block unknown).
  uint64_t n = U(want, "n"), groups = U(want, "groups");
  std::set<std::string> names;
  for (size_t r_ = 0; r_ < t.device.size(); ++r_) {
    uint32_t s = t.device.slice[r_];
    if (t.slices.kind[s] != SliceKind::kKernel) continue;
    std::string name = Name(t, s);
    names.insert(name);
    std::array<uint32_t, 3> grid = t.device.grid[r_], block = t.device.block[r_];
    if (name == "add") {
      EXPECT_EQ(grid, (std::array<uint32_t, 3>{static_cast<uint32_t>(n), 1, 1}));
      EXPECT_EQ(block, (std::array<uint32_t, 3>{0, 0, 0}));
    } else {
      EXPECT_EQ(grid, (std::array<uint32_t, 3>{static_cast<uint32_t>(groups), 1, 1})) << name;
      EXPECT_EQ(block, (std::array<uint32_t, 3>{64, 1, 1})) << name;
    }
    EXPECT_EQ(ArgStr(t, static_cast<uint32_t>(t.device.launch[r_]), "kernel"), name);
    EXPECT_GE(ArgNum(t, s, "queued_ns"), 0) << "queued time recorded";
    EXPECT_LE(ArgNum(t, s, "submitted_ns"), static_cast<double>(t.slices.ts[s]));
  }
  EXPECT_EQ(names, (std::set<std::string>{"scale", "add", "partial_sum"}));

  // Allocations and frees of the five buffers.
  int64_t allocated = 0, freed = 0;
  size_t allocs = 0, frees = 0;
  for (size_t i = 0; i < t.memory.size(); ++i) {
    if (t.memory.bytes[i] > 0) allocated += t.memory.bytes[i], ++allocs;
    else freed -= t.memory.bytes[i], ++frees;
  }
  EXPECT_EQ(allocs, U(want, "buffers"));
  EXPECT_EQ(frees, U(want, "buffers"));
  EXPECT_EQ(static_cast<uint64_t>(allocated), U(want, "buffer_bytes"));
  EXPECT_EQ(allocated, freed);

  // The device is described, and its queues are named.
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].api, "opencl");
  EXPECT_EQ(t.devices[0].id, 64);
  EXPECT_FALSE(t.devices[0].name.empty());
  EXPECT_GT(t.devices[0].compute_units, 0u);
  EXPECT_GT(t.devices[0].memory_bytes, 0u);
  for (const auto& trk : t.tracks) {
    if (trk.kind == model::TrackKind::kDeviceQueue && trk.tid > 0) {
      EXPECT_EQ(std::string(t.strings.Get(trk.name)), "OpenCL queue " + std::to_string(trk.tid));
    }
  }
  for (const auto& w : t.warnings) ADD_FAILURE() << "warning: " << w;
  testing::ExpectBabeltraceAgrees(dir);
}

TEST_F(OpenCl, ReportShowsDevicesBusyIdleKernelsTransfersAndLaunchLatency) {
  std::string dir = TempDir("cl_report");
  auto r = Record(dir, {TestProgram("cl_pipeline"), "2", "2048"}, {}, ClEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto want = Expectations(r.out);
  auto text = RunCommand({testing::StrataBin(), "report", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* s : {"Accelerators", "device 64", "opencl", "Device activity", "busy", "idle", "Top kernels",
                        "partial_sum", "Transfers", "HtoD", "GB/s", "Kernel launches", "clEnqueueNDRangeKernel"})
    EXPECT_NE(text.out.find(s), std::string::npos) << s << "\n" << text.out;
  auto js = RunCommand({testing::StrataBin(), "report", "--json", dir});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto all = nlohmann::json::parse(js.out);
  auto j = all["accelerators"];
  ASSERT_EQ(j["devices"].size(), 1u);
  ASSERT_EQ(j["device_activity"].size(), 1u);
  const auto& u = j["device_activity"][0];
  int64_t window = u["last_ns"].get<int64_t>() - u["first_ns"].get<int64_t>();
  EXPECT_GT(u["busy_ns"].get<int64_t>(), 0);
  EXPECT_EQ(u["busy_ns"].get<int64_t>() + u["idle_ns"].get<int64_t>(), window);
  EXPECT_EQ(u["kernels"].get<uint64_t>(), U(want, "kernels"));
  // The device-activity sections every source shares: kernels, transfers, launches.
  uint64_t kernels = 0;
  for (const auto& k : all["kernels"])
    if (k["type"] == "compute") kernels += k["count"].get<uint64_t>();
  EXPECT_EQ(kernels, U(want, "kernels"));
  uint64_t htod = 0;
  for (const auto& x : all["transfers"]["by_kind"]) {
    if (x["direction"] == "HtoD" || x["kind"] == "HtoD") htod += x["bytes"].get<uint64_t>();
    EXPECT_GT(x["gbps"].get<double>(), 0) << x.dump();
  }
  EXPECT_EQ(htod, U(want, "bytes_written"));
  bool ndrange = false;
  for (const auto& l : all["launches"]["by_api"])
    if (l["name"] == "clEnqueueNDRangeKernel") {
      ndrange = true;
      EXPECT_EQ(l["launches"].get<uint64_t>(), U(want, "kernels"));
      EXPECT_GE(l["delay_ns"]["min_ns"].get<int64_t>(), 0);
    }
  EXPECT_TRUE(ndrange);
}

TEST_F(OpenCl, ClblastGemmKernelsAppearWithTheirSizes) {
  if (!std::filesystem::exists(TestProgram("clblast_gemm"))) GTEST_SKIP() << "CLBlast not installed (libclblast-dev)";
  std::string dir = TempDir("clblast");
  // Small sizes: CLBlast takes its single-kernel "direct" GEMM path.
  auto r = Record(dir, {TestProgram("clblast_gemm"), "48", "96", "130"}, {}, ClEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::vector<std::map<std::string, std::string>> gemms;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("gemm ", 0) == 0) gemms.push_back(Fields(line));
  ASSERT_EQ(gemms.size(), 3u) << r.out;
  model::Trace t = Load(dir);

  std::vector<size_t> kernels;  // device rows of GEMM kernels, in time order
  for (size_t r_ = 0; r_ < t.device.size(); ++r_) {
    uint32_t s = t.device.slice[r_];
    ASSERT_NE(t.device.launch[r_], model::kNone) << Name(t, s);
    if (t.slices.kind[s] == SliceKind::kKernel && Name(t, s).rfind("XgemmDirect", 0) == 0) kernels.push_back(r_);
  }
  std::sort(kernels.begin(), kernels.end(),
            [&](size_t a, size_t b) { return t.slices.ts[t.device.slice[a]] < t.slices.ts[t.device.slice[b]]; });
  ASSERT_EQ(kernels.size(), gemms.size());
  for (size_t i = 0; i < gemms.size(); ++i) {
    auto split = [](const std::string& s) {
      auto x = s.find('x');
      return std::make_pair(std::stoul(s.substr(0, x)), std::stoul(s.substr(x + 1)));
    };
    auto [gx, gy] = split(gemms[i]["global"]);
    auto [lx, ly] = split(gemms[i]["local"]);
    size_t row = kernels[i];
    EXPECT_EQ(t.device.block[row], (std::array<uint32_t, 3>{static_cast<uint32_t>(lx), static_cast<uint32_t>(ly), 1}))
        << gemms[i]["m"];
    EXPECT_EQ(t.device.grid[row],
              (std::array<uint32_t, 3>{static_cast<uint32_t>(gx / lx), static_cast<uint32_t>(gy / ly), 1}))
        << gemms[i]["m"];
    // The enqueue call carries the same launch: grid in work-groups, block in work-items.
    auto launch = static_cast<uint32_t>(t.device.launch[row]);
    EXPECT_EQ(ArgStr(t, launch, "grid"), std::to_string(gx / lx) + "x" + std::to_string(gy / ly) + "x1");
    EXPECT_EQ(ArgStr(t, launch, "block"), gemms[i]["local"] + "x1");
    EXPECT_GT(t.slices.dur[t.device.slice[row]], 0);
  }
  // The program's uploads and downloads, byte for byte.
  uint64_t up = 0, down = 0, want_up = 0, want_down = 0;
  for (auto& g : gemms) want_up += std::stoull(g["bytes_in"]), want_down += std::stoull(g["bytes_out"]);
  for (size_t r_ = 0; r_ < t.device.size(); ++r_) {
    if (t.device.copy_kind[r_] == model::CopyKind::kHtoD) {
      up += t.device.bytes[r_];
    } else if (t.device.copy_kind[r_] == model::CopyKind::kDtoH) {
      down += t.device.bytes[r_];
    }
  }
  EXPECT_EQ(up, want_up);
  EXPECT_EQ(down, want_down);
}

TEST_F(OpenCl, LayerOutsideStrataRecordPassesEverythingThrough) {
  // A user who sets OPENCL_LAYERS by hand without recording: nothing changes.
  std::string lib = std::filesystem::path(testing::StrataBin()).parent_path().parent_path().string() +
                    "/lib/libstrata_opencl.so";
  auto plain = RunCommand({TestProgram("cl_pipeline"), "1", "512"}, ClEnv());
  auto env = ClEnv();
  env["OPENCL_LAYERS"] = lib;
  auto layered = RunCommand({TestProgram("cl_pipeline"), "1", "512"}, env);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(layered.exit_code, 0) << layered.err;
  EXPECT_EQ(layered.out, plain.out);
}

TEST_F(OpenCl, AccelNoneRecordsNoDeviceActivity) {
  std::string dir = TempDir("cl_off");
  auto r = Record(dir, {TestProgram("cl_pipeline"), "1", "512"}, {"--accel", "none"}, ClEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  model::Trace t = Load(dir);
  EXPECT_EQ(t.device.size(), 0u);
  auto m = nlohmann::json::parse(*ReadFile(dir + "/strata.json"));
  bool off = false;
  for (const auto& c : m["collectors"])
    if (c["name"] == "opencl") off = c["state"] == "off";
  EXPECT_TRUE(off) << m["collectors"].dump();
}

// --cuda-activity sampled (the same windows as CUDA's): 2,000 kernels in 50
// steps, one step in 10 wanted (5, 15, 25, 35, 45): those steps' 200 kernels
// are recorded with device times and no other command; every enqueue is
// still an API call in the trace.
TEST_F(OpenCl, DeviceActivityOnlyInTheStepsAskedFor) {
  std::string dir = TempDir("cl_windows");
  auto r = Record(dir, {TestProgram("cl_pipeline"), "--loop", "2000", "50"},
                  {"--cuda-activity", "sampled", "--cuda-sample-every", "10"}, ClEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  model::Trace t = Load(dir);
  std::vector<std::pair<int64_t, int64_t>> wanted;  // the sampled steps' spans
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == model::SliceKind::kStep && t.slices.arg[i] % 10 == 5)
      wanted.emplace_back(t.slices.ts[i], t.slices.end(i));
  ASSERT_EQ(wanted.size(), 5u);
  size_t kernels = 0, launches = 0;
  for (size_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices.kind[i] == model::SliceKind::kKernel) {
      ++kernels;
      // Its launch lies in a sampled step (the kernel itself may end after it).
      ASSERT_LT(i, t.device_row_of_slice.size());
      int32_t row = t.device_row_of_slice[i];
      ASSERT_NE(row, model::kNone);
      int32_t launch = t.device.launch[static_cast<size_t>(row)];
      ASSERT_NE(launch, model::kNone);
      int64_t at = t.slices.ts[static_cast<size_t>(launch)];
      EXPECT_TRUE(std::any_of(wanted.begin(), wanted.end(), [at](auto& w) { return at >= w.first && at < w.second; }))
          << "a kernel launched outside the sampled steps";
    }
    if (Name(t, i) == "clEnqueueNDRangeKernel") ++launches;
  }
  EXPECT_EQ(kernels, 200u);
  EXPECT_EQ(launches, 2000u + 100u) << "every enqueue is an API call (the 100 of warm-up too)";
  bool said = false;
  for (const auto& c : t.collectors)
    said = said || (c.collector == "opencl" && c.detail.find("device activity sampled") != std::string::npos);
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace strata

// Roofline: the op cost model as the analyses use it (torch.profiler inputs ->
// ArgDesc -> FLOPs/bytes), the table of known GPUs, and the classification of
// kernels and ops on real GPU traces recorded elsewhere (tests/golden/roofline;
// STRATA_UPDATE_GOLDEN=1 rewrites the golden files).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "analysis/device_peaks.h"
#include "analysis/findings.h"
#include "analysis/roofline.h"
#include "opcost/cost_model.h"
#include "opcost/profiler_args.h"
#include "tests/testing.h"

namespace strata {
namespace {

using nlohmann::json;
using opcost::ArgDesc;
using opcost::ArgKind;

ArgDesc In(std::vector<int64_t> dims, std::string_view type, std::string_view concrete = "") {
  return opcost::DescribeProfilerInput({dims, type, concrete});
}

TEST(OpCost, ProfilerInputsDescribeTensorsAndScalars) {
  ArgDesc t = In({1, 141, 512}, "c10::BFloat16");
  EXPECT_EQ(t.kind, ArgKind::kTensor);
  EXPECT_EQ(t.ndim, 3);
  EXPECT_EQ(t.elem_size, 2);
  EXPECT_EQ(t.bytes, 141 * 512 * 2);
  EXPECT_EQ(In({}, "float").kind, ArgKind::kTensor);  // a 0-d tensor
  EXPECT_EQ(In({}, "float").bytes, 4);
  EXPECT_EQ(In({}, "Scalar", "1").kind, ArgKind::kInt);
  EXPECT_EQ(In({}, "Scalar", "1").value, 1);
  EXPECT_EQ(In({}, "Scalar", "0.5").kind, ArgKind::kDouble);
  EXPECT_EQ(In({}, "Bool", "True").value, 1);
  ArgDesc l = In({}, "GenericList", "[2, 3]");
  ASSERT_EQ(l.kind, ArgKind::kIntList);
  EXPECT_EQ(l.ndim, 2);
  EXPECT_EQ(l.dims[1], 3);
  EXPECT_EQ(In({}, "GenericList").kind, ArgKind::kNone);  // no concrete value recorded
  EXPECT_EQ(In({}, "GenericList", "[a]").kind, ArgKind::kNone);
  EXPECT_EQ(In({}, "").kind, ArgKind::kNone);
  EXPECT_EQ(opcost::ElemSizeOfType("long int"), 8);
  EXPECT_EQ(opcost::ElemSizeOfType("c10::Half"), 2);
  EXPECT_EQ(opcost::ElemSizeOfType("Scalar"), 0);
  EXPECT_EQ(opcost::PrecisionOfType("c10::BFloat16"), "f16");
  EXPECT_EQ(opcost::PrecisionOfType("double"), "f64");
}

// The estimates the analyses get for ops exactly as torch.profiler recorded
// them (args of aten::addmm and aten::conv2d from the shared traces).
TEST(OpCost, EstimatesFromProfilerInputsMatchTheAnalyticCounts) {
  // aten::addmm(bias [512], x [141, 512], w^T [512, 512], beta, alpha) in bf16.
  std::vector<ArgDesc> addmm = {In({512}, "c10::BFloat16"), In({141, 512}, "c10::BFloat16"), In({512, 512}, "c10::BFloat16"),
                                In({}, "Scalar", "1"), In({}, "Scalar", "1")};
  opcost::OpCost c = opcost::EstimateCost("aten::addmm", addmm);
  EXPECT_EQ(c.flops, 2LL * 141 * 512 * 512 + 2LL * 141 * 512);
  EXPECT_EQ(c.bytes, 2LL * (512 + 141 * 512 + 512 * 512 + 141 * 512));
  // aten::conv2d(x [32, 3, 224, 224], w [64, 3, 7, 7], bias None, stride [2, 2], padding [3, 3], dilation [1, 1], groups 1).
  std::vector<ArgDesc> conv = {In({32, 3, 224, 224}, "float"), In({64, 3, 7, 7}, "float"), In({}, ""),
                               In({}, "GenericList", "[2, 2]"), In({}, "GenericList", "[3, 3]"),
                               In({}, "GenericList", "[1, 1]"), In({}, "Int", "1")};
  c = opcost::EstimateCost("aten::conv2d", conv);
  EXPECT_EQ(c.flops, 2LL * 32 * 64 * 112 * 112 * 3 * 7 * 7);
  EXPECT_EQ(c.bytes, 4LL * (32 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + 32 * 64 * 112 * 112));
}

TEST(DevicePeaks, MatchesKnownGpusByName) {
  struct Case {
    const char* name;
    uint64_t mem;
    uint32_t cus;
    const char* expect;
    double bw;
  };
  const uint64_t GB = 1ull << 30;
  for (const Case& k : std::vector<Case>{
           {"NVIDIA A100-SXM4-80GB", 80 * GB, 108, "A100 SXM4 80GB", 2039e9},
           {"NVIDIA A100-PG509-200", 39 * GB, 108, "A100 SXM4 40GB", 1555e9},
           {"NVIDIA A100 80GB PCIe", 80 * GB, 108, "A100 PCIe 80GB", 1935e9},
           {"NVIDIA A100-PCIE-40GB", 40 * GB, 108, "A100 PCIe 40GB", 1555e9},
           {"NVIDIA H100 80GB HBM3", 80 * GB, 132, "H100 SXM", 3350e9},
           {"NVIDIA H100 PCIe", 80 * GB, 114, "H100 PCIe", 2000e9},
           {"NVIDIA H100 NVL", 94 * GB, 132, "H100 NVL", 3900e9},
           {"NVIDIA H200", 141 * GB, 132, "H200 SXM", 4800e9},
           {"Tesla V100-DGXS-32GB", 32 * GB, 80, "V100 SXM2", 900e9},
           {"Tesla V100-PCIE-16GB", 16 * GB, 80, "V100 PCIe", 900e9},
           {"Tesla T4", 16 * GB, 40, "T4", 320e9},
           {"NVIDIA L4", 24 * GB, 58, "L4", 300e9},
           {"NVIDIA L40S", 48 * GB, 142, "L40S", 864e9},
           {"NVIDIA A10", 24 * GB, 72, "A10", 600e9},
           {"NVIDIA A10G", 24 * GB, 80, "A10G (A10 figures)", 600e9},
           {"NVIDIA GeForce RTX 3090", 24 * GB, 82, "GeForce RTX 3090", 936e9},
           {"NVIDIA GeForce RTX 4090", 24 * GB, 128, "GeForce RTX 4090", 1008e9},
           {"AMD Instinct MI300X", 192 * GB, 304, "Instinct MI300X", 5300e9},
           {"AMD Instinct MI250X", 64 * GB, 110, "Instinct MI250X (one GCD)", 1638.4e9},
           {"AMD Radeon Graphics", 64 * GB, 104, "Instinct MI250 (one GCD) / MI210", 1638.4e9},
       }) {
    auto p = analysis::LookupDevicePeaks(k.name, k.mem, k.cus);
    ASSERT_TRUE(p.has_value()) << k.name;
    EXPECT_EQ(p->name, k.expect) << k.name;
    EXPECT_DOUBLE_EQ(p->bandwidth, k.bw) << k.name;
    EXPECT_GT(p->fp32, 0) << k.name;
    EXPECT_GT(p->fp16, p->fp32) << k.name << ": tensor cores are faster than fp32 vector math";
  }
  EXPECT_EQ(analysis::LookupDevicePeaks("NVIDIA H100 80GB HBM3")->fp16, 989.5e12);
  EXPECT_EQ(analysis::LookupDevicePeaks("NVIDIA A100-SXM4-40GB")->fp32, 19.5e12);
  EXPECT_FALSE(analysis::LookupDevicePeaks("pthread-skylake-avx512").has_value());
  EXPECT_FALSE(analysis::LookupDevicePeaks("AMD Radeon Graphics", 8 * GB, 12).has_value());
}

TEST(Roofline, ClassifiesAgainstTheRidgePoint) {
  analysis::Roof roof{"fp32", 10e12, 1e12};  // ridge 10 FLOP/byte
  analysis::RooflinePoint p;
  p.flops = 1e9;
  p.bytes = 1e9;  // 1 FLOP/byte: memory-bound, roof 1 TFLOP/s
  p.time_ns = 2000000;  // 0.5 TFLOP/s achieved
  analysis::ClassifyPoint(p, &roof);
  EXPECT_EQ(p.bound, "memory");
  EXPECT_NEAR(p.pct_of_roof, 50, 1e-9);
  p.bytes = 1e7;  // 100 FLOP/byte: compute-bound, roof 10 TFLOP/s
  analysis::ClassifyPoint(p, &roof);
  EXPECT_EQ(p.bound, "compute");
  EXPECT_NEAR(p.pct_of_roof, 5, 1e-9);
  analysis::ClassifyPoint(p, nullptr);
  EXPECT_EQ(p.bound, "");
}

// --- the findings rules on a constructed GPU trace --------------------------------

// Four 10 ms steps on an A100 (fp32 roof 19.5 TFLOP/s, 2039 GB/s): in each, one op
// launches an 8 ms kernel and the thread waits for it, so the kernel is the step's
// critical path. The op's estimate sets where the kernel sits on the roofline.
model::Trace GpuSteps(const char* op, double flops, double bytes, const char* dtypes, double hw_flops = -1,
                      double hw_dram = -1) {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7, 0, 0});
  t.tracks.back().device = 0;
  model::Device d;
  d.name = "NVIDIA A100-SXM4-80GB";
  d.memory_bytes = 80ull << 30;
  t.devices.push_back(d);
  auto& sl = t.slices;
  auto name = [&t](const char* n) { return t.strings.Intern(n); };
  const int64_t ms = 1000000;
  for (int i = 0; i < 4; ++i) {
    int64_t s0 = i * 10 * ms;
    sl.Add(s0, 10 * ms, 0, name("ProfilerStep#1"), model::SliceKind::kStep, static_cast<uint64_t>(i));
    uint32_t o = sl.Add(s0 + ms / 10, ms / 5, 0, name(op), model::SliceKind::kOp);
    uint32_t l = sl.Add(s0 + ms / 10 + 1000, 5000, 0, name("cudaLaunchKernel"), model::SliceKind::kRuntime);
    sl.Add(s0 + ms / 2, 8 * ms, 0, name("cudaDeviceSynchronize"), model::SliceKind::kRuntime);
    uint32_t k = sl.Add(s0 + ms / 2, 8 * ms, 1, name("kernel"), model::SliceKind::kKernel);
    t.device.Add(k, 0, 7, static_cast<uint64_t>(i + 1));
    t.device.launch.back() = static_cast<int32_t>(l);
    if (hw_flops >= 0) {  // what strata --gpu-metrics attaches to a kernel (importers/strata/accel_events.cc)
      t.args.Add(k, name("flops_f32"), 0, hw_flops);
      t.args.Add(k, name("flops_f16"), 0, 0);
      t.args.Add(k, name("dram_bytes"), 0, hw_dram);
    }
    uint32_t r = t.ops.Add(o, model::OpScope::kFunction, -1);
    t.ops.flops[r] = static_cast<int64_t>(flops);
    t.ops.bytes[r] = static_cast<int64_t>(bytes);
    t.ops.dtypes[r] = name(dtypes);
  }
  t.Finalize();
  return t;
}

const analysis::Finding* FindingOf(const std::vector<analysis::Finding>& f, std::string_view category) {
  for (const auto& x : f)
    if (x.category == category) return &x;
  return nullptr;
}

TEST(RooflineRules, Fp32GemmNearTheRoofIsComputeBound) {
  // 80% of the fp32 roof at 200 FLOP/byte (ridge 9.6).
  double flops = 0.8 * 19.5e12 * 8e-3;
  model::Trace t = GpuSteps("aten::mm", flops, flops / 200, "[float, float]");
  analysis::RooflineResult r = analysis::Roofline(t);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].bound, "compute");
  EXPECT_NEAR(r.ops[0].pct_of_roof, 80, 0.01);
  std::vector<analysis::Finding> f = analysis::Diagnose(t);
  const analysis::Finding* cb = FindingOf(f, "compute_bound");
  ASSERT_NE(cb, nullptr);
  EXPECT_EQ(FindingOf(f, "memory_bound"), nullptr);
  EXPECT_EQ(cb->involved, std::vector<std::string>{"aten::mm"});
  // On TF32 tensor cores (156 TFLOP/s) at the same efficiency the 8 ms kernel
  // takes 1 ms: 7 ms of a 10 ms step, halved to be conservative.
  EXPECT_NEAR(cb->estimated_gain_pct, 35, 1);
  EXPECT_NE(cb->suggestion.find("tf32 tensor"), std::string::npos) << cb->suggestion;
}

// Hardware counters, when recorded, take precedence over the op's estimate.
TEST(Roofline, KernelHardwareCountersOverrideEstimates) {
  double flops = 0.8 * 19.5e12 * 8e-3;
  model::Trace t = GpuSteps("aten::mm", flops, flops / 200, "[float]", flops / 2, flops / 4);
  analysis::RooflineResult r = analysis::Roofline(t);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_TRUE(r.kernels[0].measured);
  EXPECT_EQ(r.kernels_measured, 4u);
  EXPECT_DOUBLE_EQ(r.kernels[0].flops, 4 * flops / 2);
  EXPECT_DOUBLE_EQ(r.kernels[0].intensity, 2.0);
  EXPECT_EQ(r.kernels[0].bound, "memory");  // 2 FLOP/byte measured, below the 9.6 ridge
  EXPECT_EQ(r.ops[0].bound, "compute");     // the op's own estimate: 200 FLOP/byte
  EXPECT_DOUBLE_EQ(r.kernel_time_covered, 1.0);
}

TEST(RooflineRules, LowIntensityKernelIsMemoryBound) {
  // 0.25 FLOP/byte at 40% of the bandwidth roof (815.6 GB/s of 2039).
  double bytes = 0.4 * 2039e9 * 8e-3;
  model::Trace t = GpuSteps("aten::add", bytes / 4, bytes, "[float, float, Scalar]");
  std::vector<analysis::Finding> f = analysis::Diagnose(t);
  const analysis::Finding* mb = FindingOf(f, "memory_bound");
  ASSERT_NE(mb, nullptr);
  EXPECT_EQ(FindingOf(f, "compute_bound"), nullptr);
  EXPECT_EQ(mb->involved, std::vector<std::string>{"aten::add"});
  // The gap to the bandwidth roof is 60% of 8 ms, halved: 2.4 ms of 10 ms.
  EXPECT_NEAR(mb->estimated_gain_pct, 24, 1);
  // The same op at the roof leaves nothing to gain from the kernel itself.
  model::Trace at_roof = GpuSteps("aten::add", 2039e9 * 8e-3 / 4, 2039e9 * 8e-3, "[float]");
  EXPECT_EQ(FindingOf(analysis::Diagnose(at_roof), "memory_bound"), nullptr);
}

// --- real GPU traces ----------------------------------------------------------

const analysis::RooflinePoint* Find(const std::vector<analysis::RooflinePoint>& v, std::string_view name) {
  for (const auto& p : v)
    if (p.name == name) return &p;
  return nullptr;
}

// Golden: device, peak source, and every op point's classification and intensity.
void CheckGolden(const std::string& id, const std::string& rel, const analysis::RooflineResult& r) {
  json got = {{"source", rel}, {"device", r.device}, {"peaks", r.source}, {"roof", r.RoofOf(r.primary)->name}};
  json pts = json::array();
  auto add = [&](const analysis::RooflinePoint& p) {
    pts.push_back({{"name", p.name},
                   {"level", analysis::RooflineLevelName(p.level)},
                   {"count", p.count},
                   {"bound", p.bound},
                   {"intensity", std::round(p.intensity * 1000) / 1000}});
  };
  for (const auto& p : r.steps) add(p);
  for (const auto& p : r.ops) add(p);
  for (size_t i = 0; i < r.kernels.size() && i < 10; ++i) add(r.kernels[i]);
  got["points"] = pts;
  std::string path = testing::SourceDir() + "/tests/golden/roofline/" + id + ".json";
  if (std::getenv("STRATA_UPDATE_GOLDEN")) {
    std::ofstream(path) << got.dump(1) << "\n";
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  json want = json::parse(in);
  EXPECT_EQ(got["device"], want["device"]);
  EXPECT_EQ(got["peaks"], want["peaks"]);
  EXPECT_EQ(got["roof"], want["roof"]);
  ASSERT_EQ(got["points"].size(), want["points"].size());
  for (size_t i = 0; i < want["points"].size(); ++i) {
    const json& g = got["points"][i];
    const json& w = want["points"][i];
    EXPECT_EQ(g["name"], w["name"]) << i;
    EXPECT_EQ(g["level"], w["level"]) << w["name"];
    EXPECT_EQ(g["count"], w["count"]) << w["name"];
    EXPECT_EQ(g["bound"], w["bound"]) << w["name"];
    EXPECT_NEAR(g["intensity"].get<double>(), w["intensity"].get<double>(), 1e-3 * w["intensity"].get<double>() + 1e-3)
        << w["name"];
  }
}

// ResNet-50 training on a V100 (legacy Kineto schema: no concrete inputs, so
// convolution geometry comes from the next op's input).
TEST(RooflineGolden, ResNet50OnV100) {
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout";
  std::string rel = "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";
  model::Trace t = testing::Load(data + "/" + rel);
  analysis::RooflineResult r = analysis::Roofline(t);
  EXPECT_EQ(r.device, "Tesla V100-DGXS-32GB");
  EXPECT_EQ(r.source, "table: V100 SXM2 datasheet");
  const analysis::Roof* roof = r.RoofOf(r.primary);
  ASSERT_NE(roof, nullptr);
  EXPECT_EQ(roof->name, "fp32");
  EXPECT_NEAR(roof->ridge(), 15.7e12 / 900e9, 1e-9);

  // The stem convolution (7x7, stride 2, padding 3 on 224x224): its exact count.
  const double stem_flops = 2.0 * 32 * 64 * 112 * 112 * 3 * 7 * 7;
  const double stem_bytes = 4.0 * (32 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + 32 * 64 * 112 * 112);
  int stems = 0;
  for (const auto& it : r.items)
    if (t.strings.Get(t.slices.name[static_cast<size_t>(it.slice)]) == "aten::conv2d" && it.flops == stem_flops) {
      ++stems;
      EXPECT_EQ(it.bytes, stem_bytes);
    }
  EXPECT_GE(stems, 5) << "one stem convolution per step";

  // Convolutions: intensity of the whole model's convs within a factor 2 of
  // ResNet-50's (4.1 GFLOP per 224x224 image forward, multiply-add = 2 FLOPs).
  const auto* conv = Find(r.ops, "aten::conv2d");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->bound, "compute");
  EXPECT_GT(conv->intensity, roof->ridge());
  double per_image = conv->flops / static_cast<double>(conv->count / 53) / 32;  // 53 convolutions per forward
  EXPECT_GT(per_image, 0.5 * 2 * 4.1e9);
  EXPECT_LT(per_image, 2.0 * 2 * 4.1e9);
  for (const char* mem : {"aten::batch_norm", "aten::add_", "aten::relu_", "aten::threshold_backward"}) {
    const auto* p = Find(r.ops, mem);
    ASSERT_NE(p, nullptr) << mem;
    EXPECT_EQ(p->bound, "memory") << mem;
    EXPECT_LT(p->intensity, 1.0) << mem;
  }
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].count, 5u) << "6 profiler steps, the first skipped as warm-up";
  EXPECT_GT(r.kernel_time_covered, 0.3);
  CheckGolden("resnet50-v100", rel, r);
}

// BERT-small inference in bf16 on an H100: GEMMs at M=141 are memory-bound on
// the bf16 tensor-core roof (ridge ~295 FLOP/byte).
TEST(RooflineGolden, BertBf16OnH100) {
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout";
  std::string rel = "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz";
  model::Trace t = testing::Load(data + "/" + rel);
  analysis::RooflineResult r = analysis::Roofline(t);
  EXPECT_EQ(r.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.source, "table: H100 SXM datasheet");
  const analysis::Roof* roof = r.RoofOf(r.primary);
  ASSERT_NE(roof, nullptr);
  EXPECT_EQ(roof->name, "fp16/bf16 tensor");
  // The 512x512 projections: linear([1, 141, 512], [512, 512], [512]) in bf16.
  const double flops = 2.0 * 141 * 512 * 512 + 141 * 512;
  const double bytes = 2.0 * (141 * 512 + 512 * 512 + 512 + 141 * 512);
  int found = 0;
  for (const auto& it : r.items)
    if (t.strings.Get(t.slices.name[static_cast<size_t>(it.slice)]) == "aten::linear" && it.flops == flops) {
      ++found;
      EXPECT_EQ(it.bytes, bytes);
      EXPECT_TRUE(it.on_gpu);
      EXPECT_EQ(r.RoofOf(it.roof)->name, "fp16/bf16 tensor");
    }
  EXPECT_GE(found, 16);
  const auto* linear = Find(r.ops, "aten::linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->bound, "memory");
  EXPECT_GT(linear->intensity, 0.5 * flops / bytes);
  EXPECT_LT(linear->intensity, 2.0 * flops / bytes);
  EXPECT_EQ(Find(r.ops, "aten::add")->bound, "memory");
  CheckGolden("bert-bf16-h100", rel, r);
}

}  // namespace
}  // namespace strata

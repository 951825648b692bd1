// Per-layer analysis (analysis/layers.h): PyTorch module scopes and TF name
// scopes on hand-built traces, the report section, and the layers of a real
// PyTorch program recorded with `strata record` against the program's own
// module names and forward calls.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/layers.h"
#include "base/files.h"
#include "importers/load.h"
#include "report/report.h"
#include "tests/testing.h"

namespace strata {
namespace {

using model::SliceKind;

const analysis::LayerStats* Find(const analysis::LayersSummary& s, std::string_view name) {
  for (const auto& l : s.layers)
    if (l.name == name) return &l;
  return nullptr;
}

// One step of a model "Net" on a GPU: fc1 (called twice) and act inside it,
// each running an op that launches one kernel; allocator events on the thread.
//
//   step  [0, 1000)
//   Net   [10, 900)
//     fc1 [20, 300)  aten::linear [30, 290)  launch [40, 60)   -> kernel [100, 400)
//     act [310, 400) aten::relu   [320, 390) launch [330, 340) -> kernel [400, 450)
//     fc1 [410, 700) aten::linear [420, 690) launch [430, 440) -> kernel [450, 750)
model::Trace ModuleTrace() {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7, 0, 0});
  t.tracks.back().device = 0;
  model::Device d;
  d.name = "NVIDIA A100-SXM4-80GB";  // fp32 roof from the table: ridge ~9.6 FLOP/byte
  d.memory_bytes = 80ull << 30;
  t.devices.push_back(d);
  auto& sl = t.slices;
  auto name = [&t](const char* n) { return t.strings.Intern(n); };
  sl.Add(0, 1000, 0, name("step"), SliceKind::kStep, 1);
  sl.Add(10, 890, 0, name("Net"), SliceKind::kModule);
  uint64_t corr = 0;
  auto call = [&](const char* module, int64_t ts, int64_t end, const char* op, int64_t flops, int64_t bytes,
                  int64_t launch_ts, int64_t launch_dur, int64_t k_ts, int64_t k_dur) {
    sl.Add(ts, end - ts, 0, name(module), SliceKind::kModule);
    uint32_t o = sl.Add(ts + 10, end - ts - 20, 0, name(op), SliceKind::kOp);
    uint32_t r = t.ops.Add(o, model::OpScope::kFunction, -1);
    t.ops.flops[r] = flops;
    t.ops.bytes[r] = bytes;
    t.ops.dtypes[r] = name("[float]");
    uint32_t l = sl.Add(launch_ts, launch_dur, 0, name("cudaLaunchKernel"), SliceKind::kRuntime);
    uint32_t k = sl.Add(k_ts, k_dur, 1, name("kernel"), SliceKind::kKernel);
    t.device.Add(k, 0, 7, ++corr);
    t.device.launch.back() = static_cast<int32_t>(l);
  };
  call("Net.fc1 (Linear)", 20, 300, "aten::linear", 2000, 100, 40, 20, 100, 300);
  call("Net.act (ReLU)", 310, 400, "aten::relu", 100, 800, 330, 10, 400, 50);
  call("Net.fc1 (Linear)", 410, 700, "aten::linear", 2000, 100, 430, 10, 450, 300);
  t.memory.Add(25, 0, 0, 0x1000, 1000, -1, -1);   // in fc1's first call
  t.memory.Add(315, 0, 0, 0x2000, 500, -1, -1);   // in act
  t.memory.Add(395, 0, 0, 0x2000, -500, -1, -1);  // freed in act
  t.memory.Add(800, 0, 0, 0x3000, 200, -1, -1);   // in Net only
  t.Finalize();
  return t;
}

TEST(Layers, ModulesAreInclusiveWithDepthAndLeaves) {
  model::Trace t = ModuleTrace();
  analysis::LayersSummary s = analysis::Layers(t);
  ASSERT_EQ(s.layers.size(), 3u);
  EXPECT_EQ(s.layers[0].name, "Net");  // by total time
  EXPECT_EQ(s.layers[1].name, "Net.fc1 (Linear)");
  EXPECT_EQ(s.layers[2].name, "Net.act (ReLU)");

  const analysis::LayerStats& net = s.layers[0];
  EXPECT_EQ(net.framework, analysis::LayerFramework::kPyTorch);
  EXPECT_EQ(net.depth, 0);
  EXPECT_FALSE(net.leaf);
  EXPECT_EQ(net.occurrences, 1u);
  EXPECT_EQ(net.total_ns, 890);
  EXPECT_EQ(net.self_ns, 890 - 280 - 90 - 290);
  // Host work inside: the ops' self time plus their launch calls.
  EXPECT_EQ(net.cpu_ns, (240 + 20) + (60 + 10) + (260 + 10));
  EXPECT_EQ(net.ops, 3u);
  EXPECT_EQ(net.device_ns, 300 + 50 + 300);
  EXPECT_EQ(net.kernels, 3u);
  EXPECT_EQ(net.alloc_bytes, 1700);
  EXPECT_EQ(net.allocs, 3u);
  EXPECT_EQ(net.peak_bytes, 1500);
  EXPECT_DOUBLE_EQ(net.flops, 4100);
  EXPECT_DOUBLE_EQ(net.bytes, 1000);
  EXPECT_NEAR(net.step_pct, 89.0, 1e-9);

  const analysis::LayerStats& fc1 = s.layers[1];
  EXPECT_EQ(fc1.depth, 1);
  EXPECT_TRUE(fc1.leaf);
  EXPECT_EQ(fc1.occurrences, 2u);
  EXPECT_EQ(fc1.total_ns, 570);
  EXPECT_EQ(fc1.mean_ns, 285);
  EXPECT_EQ(fc1.max_ns, 290);
  EXPECT_EQ(fc1.self_ns, 570);
  EXPECT_EQ(fc1.cpu_ns, 260 + 270);
  EXPECT_EQ(fc1.device_ns, 600);
  EXPECT_EQ(fc1.alloc_bytes, 1000);
  EXPECT_EQ(fc1.peak_bytes, 1000);
  EXPECT_DOUBLE_EQ(fc1.intensity, 20);
  ASSERT_NE(s.RoofOf(fc1.roof), nullptr);
  EXPECT_GT(20, s.RoofOf(fc1.roof)->ridge());
  EXPECT_EQ(fc1.bound, "compute");

  const analysis::LayerStats& act = s.layers[2];
  EXPECT_TRUE(act.leaf);
  EXPECT_EQ(act.device_ns, 50);
  EXPECT_EQ(act.alloc_bytes, 500);
  EXPECT_EQ(act.peak_bytes, 500);
  EXPECT_DOUBLE_EQ(act.intensity, 0.125);
  EXPECT_EQ(act.bound, "memory");

  // Totals count each slice once: the root's figures, not the sum of the rows.
  EXPECT_EQ(s.total_ns, 890);
  EXPECT_EQ(s.device_ns, 650);
  EXPECT_EQ(s.alloc_bytes, 1700);
  EXPECT_DOUBLE_EQ(s.flops, 4100);
  EXPECT_EQ(s.step_basis, "steps");
  EXPECT_EQ(s.step_ns, 1000);
  EXPECT_TRUE(s.has_device && s.has_memory && s.has_cost && s.has_ops);
  EXPECT_FALSE(s.has_backward);
}

TEST(Layers, TfLayerIsTheNodesNameScope) {
  bool bwd = true;
  EXPECT_EQ(analysis::TfLayerOf("sequential/dense_1/MatMul", &bwd), "sequential/dense_1");
  EXPECT_FALSE(bwd);
  EXPECT_EQ(analysis::TfLayerOf("StatefulPartitionedCall/sequential/dense_1/BiasAdd:BiasAdd", &bwd), "sequential/dense_1");
  EXPECT_EQ(analysis::TfLayerOf("StatefulPartitionedCall_2/model/conv/Conv2D", &bwd), "model/conv");
  EXPECT_EQ(analysis::TfLayerOf("gradient_tape/sequential/dense_1/MatMul/MatMul_1", &bwd), "sequential/dense_1");
  EXPECT_TRUE(bwd);
  EXPECT_EQ(analysis::TfLayerOf("sequential/dense/Tensordot/MatMul", &bwd), "sequential/dense");
  EXPECT_FALSE(bwd);
  EXPECT_EQ(analysis::TfLayerOf("Adam/Cast", &bwd), "Adam");
  EXPECT_EQ(analysis::TfLayerOf("MatMul", &bwd), "");
  EXPECT_EQ(analysis::TfLayerOf("StatefulPartitionedCall/MatMul", &bwd), "");
  EXPECT_EQ(analysis::TfLayerOf("StatefulPartitionedCallX/a/b", &bwd), "StatefulPartitionedCallX/a");
}

// Two steps of a Keras model whose ops run on two threads; dense_1's forward
// ops overlap, its gradient runs later in step 1; a kernel names its op.
model::Trace TfTrace() {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  t.tracks.push_back({model::TrackKind::kThread, 0, 2});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7, 0, 0});
  auto& sl = t.slices;
  auto name = [&t](std::string_view n) { return t.strings.Intern(n); };
  model::StringId tf_op = name("tf_op");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  sl.Add(0, 1000, 0, name("train_step"), SliceKind::kStep, 1);
  sl.Add(1000, 1000, 0, name("train_step"), SliceKind::kStep, 2);
  auto op = [&](uint32_t track, int64_t ts, int64_t dur, std::string_view node) {
    std::string_view type = node.substr(node.rfind(':') + 1);
    uint32_t s = sl.Add(ts, dur, track, name(type), SliceKind::kOp);
    t.args.Add(s, tf_op, name(node), nan);
    return s;
  };
  op(0, 100, 100, "StatefulPartitionedCall/sequential/dense_1/MatMul:MatMul");
  op(1, 150, 100, "StatefulPartitionedCall/sequential/dense_1/BiasAdd:BiasAdd");
  op(0, 300, 50, "StatefulPartitionedCall/sequential/dense/Tensordot/MatMul:MatMul");
  op(1, 400, 50, "StatefulPartitionedCall/gradient_tape/sequential/dense_1/MatMul/MatMul_1:MatMul");
  op(0, 600, 10, "_Send:_Send");
  op(0, 1100, 80, "StatefulPartitionedCall/sequential/dense_1/MatMul:MatMul");
  uint32_t k = sl.Add(1200, 30, 2, name("volta_sgemm"), SliceKind::kKernel);
  t.device.Add(k, 0, 7, 1);
  t.args.Add(k, tf_op, name("sequential/dense_1/MatMul:MatMul"), nan);
  t.Finalize();
  return t;
}

TEST(Layers, TfLayersAreNameScopesOccurringPerStep) {
  model::Trace t = TfTrace();
  analysis::LayersSummary s = analysis::Layers(t);
  ASSERT_EQ(s.layers.size(), 2u);
  const analysis::LayerStats* d1 = Find(s, "sequential/dense_1");
  ASSERT_NE(d1, nullptr);
  EXPECT_EQ(d1->framework, analysis::LayerFramework::kTensorFlow);
  EXPECT_EQ(d1->occurrences, 2u);
  EXPECT_EQ(d1->total_ns, (150 + 50) + 80);  // union of the overlapping forward ops, plus the gradient
  EXPECT_EQ(d1->max_ns, 200);
  EXPECT_EQ(d1->backward_ns, 50);
  EXPECT_EQ(d1->ops, 4u);
  EXPECT_EQ(d1->cpu_ns, 100 + 100 + 50 + 80);
  EXPECT_EQ(d1->device_ns, 30);
  const analysis::LayerStats* d0 = Find(s, "sequential/dense");
  ASSERT_NE(d0, nullptr);
  EXPECT_EQ(d0->occurrences, 1u);
  EXPECT_EQ(d0->total_ns, 50);
  EXPECT_EQ(s.total_ns, 330);
  EXPECT_EQ(s.step_ns, 2000);
  EXPECT_TRUE(s.has_backward);
  EXPECT_TRUE(s.has_device);
  EXPECT_FALSE(s.has_cost);
  EXPECT_EQ(s.layers[0].name, "sequential/dense_1");
}

TEST(Layers, ReportShowsOnlyColumnsWithData) {
  model::Trace t = ModuleTrace();
  report::ReportOptions opt;
  std::string text = report::Report(t, opt).Text();
  ASSERT_NE(text.find("Layers (PyTorch modules"), std::string::npos) << text;
  EXPECT_NE(text.find("FLOP/byte"), std::string::npos);
  EXPECT_NE(text.find("device"), std::string::npos);
  nlohmann::json j = report::Report(t, opt).Json();
  ASSERT_TRUE(j.contains("layers"));
  ASSERT_EQ(j["layers"]["layers"].size(), 3u);
  EXPECT_EQ(j["layers"]["layers"][0]["name"], "Net");
  EXPECT_EQ(j["layers"]["layers"][1]["bound"], "compute");

  // CPU only, no estimates: no device or FLOP columns, and one line on how to get FLOPs.
  model::Trace c;
  c.processes.push_back({});
  c.tracks.push_back({model::TrackKind::kThread, 0, 1});
  c.slices.Add(0, 100, 0, c.strings.Intern("Mlp"), SliceKind::kModule);
  uint32_t o = c.slices.Add(10, 50, 0, c.strings.Intern("aten::mm"), SliceKind::kOp);
  c.ops.Add(o, model::OpScope::kFunction, -1);
  c.Finalize();
  text = report::Report(c, opt).Text();
  size_t at = text.find("Layers (PyTorch modules");
  ASSERT_NE(at, std::string::npos) << text;
  std::string section = text.substr(at, text.find("\n\n", at) - at);
  EXPECT_EQ(section.find("device"), std::string::npos) << section;
  EXPECT_EQ(section.find("FLOP/byte"), std::string::npos) << section;
  EXPECT_NE(section.find("record with --shapes"), std::string::npos) << section;

  // No layers: no section.
  model::Trace none;
  none.processes.push_back({});
  none.tracks.push_back({model::TrackKind::kThread, 0, 1});
  none.slices.Add(0, 100, 0, none.strings.Intern("aten::mm"), SliceKind::kOp);
  none.Finalize();
  EXPECT_EQ(report::Report(none, opt).Text().find("Layers ("), std::string::npos);
  EXPECT_FALSE(report::Report(none, opt).Json().contains("layers"));
}

// A real program: tests/workloads/inference_loop.py's nn.Sequential, recorded
// with framework ops and their shapes. Its layers are the model's modules, named as
// named_modules() names them, each called once per iteration.
// torch.profiler's own trace with with_modules=True (a BERT step on an H100,
// ../shared/data/external/tracelens): its "nn.Module: Class_N" events are the
// layers, nested as the model nests them, with the kernels they launched.
TEST(Layers, KinetoModuleEventsAreLayers) {
  std::string data = testing::ExternalDataDir();
  std::string path = data + "/tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz";
  if (data.empty() || !PathExists(path)) GTEST_SKIP() << "shared trace absent: " << path;
  auto t = importers::LoadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  analysis::LayersSummary s = analysis::Layers(*t);
  const analysis::LayerStats* root = Find(s, "BertLMHeadModel_0");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->depth, 0);
  EXPECT_FALSE(root->leaf);
  ASSERT_NE(Find(s, "BertModel_0"), nullptr);
  EXPECT_EQ(Find(s, "BertModel_0")->depth, 1);
  for (const char* layer : {"BertLayer_0", "BertLayer_1", "BertLayer_2", "BertLayer_3"}) {
    const analysis::LayerStats* l = Find(s, layer);
    ASSERT_NE(l, nullptr) << layer;
    EXPECT_EQ(l->depth, 3) << layer;
    EXPECT_EQ(l->occurrences, 1u) << layer;
    EXPECT_GT(l->device_ns, 0) << layer;  // its kernels, through their launches
    EXPECT_LE(l->total_ns, root->total_ns) << layer;
  }
  for (const auto& l : s.layers) EXPECT_EQ(l.name.find("nn.Module"), std::string::npos) << l.name;
}

TEST(LayersTorch, RecordedLayersAreTheProgramsModules) {
  REQUIRE_TORCH();
  const int iters = 4;
  std::string dir = testing::TempDir("layers-inference");
  std::string workloads = testing::SourceDir() + "/tests/workloads";
  auto rec = testing::Record(dir, {testing::kPython, workloads + "/inference_loop.py", "--iters", std::to_string(iters),
                                   "--batch", "4", "--quiet"},
                             {"--shapes"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  // The program's own module names: root class, then "<root>.<attr> (<class>)".
  auto names = testing::RunCommand(
      {testing::kPython, "-c",
       "import sys; sys.path.insert(0, '" + workloads + "')\n"
       "from inference_loop import make_model\n"
       "m = make_model(); root = type(m).__name__; print(root)\n"
       "for n, c in m.named_modules():\n"
       "    if n: print('%s.%s (%s)' % (root, n, type(c).__name__))\n"});
  ASSERT_EQ(names.exit_code, 0) << names.err;
  std::vector<std::string> expected;
  std::istringstream in(names.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) expected.push_back(line);
  ASSERT_GT(expected.size(), 10u);

  model::Trace t = testing::Load(dir);
  analysis::LayersSummary s = analysis::Layers(t);
  std::vector<std::string> got;
  for (const auto& l : s.layers) got.push_back(l.name);
  std::sort(got.begin(), got.end());
  std::vector<std::string> want = expected;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  for (const auto& l : s.layers) {
    EXPECT_EQ(l.occurrences, static_cast<uint64_t>(iters)) << l.name;
    EXPECT_EQ(l.framework, analysis::LayerFramework::kPyTorch);
    EXPECT_EQ(l.depth, l.name == expected[0] ? 0 : 1) << l.name;
    EXPECT_EQ(l.leaf, l.name != expected[0]) << l.name;
    EXPECT_GT(l.total_ns, 0) << l.name;
  }
  const analysis::LayerStats* root = Find(s, expected[0]);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(s.layers[0].name, expected[0]);  // the root holds all the others
  EXPECT_EQ(s.total_ns, root->total_ns);
  EXPECT_TRUE(s.has_ops);
  // An inference loop's steps are not called training steps.
  auto text = testing::RunCommand({testing::StrataBin(), "report", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Inference steps: "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("Training steps"), std::string::npos) << text.out;
  EXPECT_GT(root->cpu_ns, 0);
  EXPECT_LE(root->cpu_ns, root->total_ns);
  const analysis::LayerStats* conv = Find(s, expected[0] + ".0 (Conv2d)");
  ASSERT_NE(conv, nullptr);
  EXPECT_GT(conv->ops, 0u);
  EXPECT_GT(conv->flops, 0);  // the convolutions' estimates, from --shapes
  EXPECT_GT(conv->intensity, 0);
  EXPECT_TRUE(s.has_cost);
}

}  // namespace
}  // namespace strata

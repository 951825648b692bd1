// Placement analysis (analysis/placement.h) on a hand-built placed graph: four
// layers alternating between two devices, each crossing a Send -> Recv, timed
// in two calls; the devices, the crossings with their Send and wait, the replay
// of the calls as measured, and the contiguous placement with its replay.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/findings.h"
#include "analysis/placement.h"
#include "model/trace.h"

namespace strata {
namespace {

using model::SliceKind;

constexpr const char* kDev0 = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr const char* kDev1 = "/job:localhost/replica:0/task:0/device:CPU:1";

// l0 (CPU:0) -> l1 (CPU:1) -> l2 (CPU:0) -> l3 (CPU:1), 100 ns each; every
// boundary is a 10 ns Send, and the consumer starts 100 ns after it ends.
// Calls at [0, 1000) and [2000, 3000): l0 at 10, Send 110, l1 220, Send 320,
// l2 430, Send 530, l3 640-740.
model::Trace AlternatingTrace() {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 1});
  auto s = [&t](const std::string& n) { return t.strings.Intern(n); };
  model::Graph g;  // the placed graph
  g.name = s("tf.function f (placed)");
  auto node = [&](const std::string& name, const char* type, const char* dev, std::vector<uint32_t> in) {
    uint32_t i = static_cast<uint32_t>(g.nodes.size());
    g.nodes.push_back(s(type));
    g.node_names.push_back(s(name));
    g.node_devices.push_back(s(dev));
    g.node_bytes.push_back(type == std::string("_Send") ? 4096 : -1);
    for (uint32_t f : in) g.edges.emplace_back(f, i);
    return i;
  };
  uint32_t prev = node("x", "_Arg", kDev0, {});
  const char* devs[] = {kDev0, kDev1, kDev0, kDev1};
  for (int l = 0; l < 4; ++l) {
    std::string layer = "l" + std::to_string(l);
    uint32_t mm = node(layer + "/MatMul", "MatMul", devs[l], {prev});
    prev = mm;
    if (l < 3) {
      uint32_t send = node(layer + "/MatMul/_" + std::to_string(2 * l), "_Send", devs[l], {mm});
      prev = node(layer + "/MatMul/_" + std::to_string(2 * l + 1), "_Recv", devs[l + 1], {send});
    }
  }
  t.graphs.push_back(g);
  model::Graph plain;  // the program's graph: the layers' requested devices
  plain.name = s("tf.function f");
  for (int l = 0; l < 4; ++l) {
    plain.nodes.push_back(s("MatMul"));
    plain.node_names.push_back(s("l" + std::to_string(l) + "/MatMul"));
    plain.node_devices.push_back(s(l % 2 ? "/device:CPU:1" : "/device:CPU:0"));
    if (l > 0) plain.edges.emplace_back(l - 1, l);
  }
  t.graphs.push_back(plain);
  model::StringId key = s("tf_op");
  for (int64_t call : {0, 2000}) {
    t.slices.Add(call, 1000, 0, s("tf.function f"), SliceKind::kSpan);
    for (int l = 0; l < 4; ++l) {
      int64_t start = call + 10 + 210 * l;
      std::string layer = "l" + std::to_string(l);
      uint32_t op = t.slices.Add(start, 100, 0, s("MatMul"), SliceKind::kOp);
      t.args.Add(op, key, s(layer + "/MatMul:MatMul"), 0);
      if (l < 3) {
        uint32_t send = t.slices.Add(start + 100, 10, 0, s("_Send"), SliceKind::kOp);
        t.args.Add(send, key, s(layer + "/MatMul/_" + std::to_string(2 * l) + ":_Send"), 0);
      }
    }
  }
  t.Finalize();
  return t;
}

TEST(Placement, DevicesCrossingsAndReplayAsMeasured) {
  model::Trace t = AlternatingTrace();
  std::vector<analysis::PlacementResult> rs = analysis::Placement(t);
  ASSERT_EQ(rs.size(), 1u);
  const auto& r = rs[0];
  EXPECT_EQ(r.function, "tf.function f");
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].name, "CPU:0");
  EXPECT_EQ(r.devices[1].name, "CPU:1");
  EXPECT_DOUBLE_EQ(r.devices[0].op_ns, 220);  // l0, l2 and their Sends, per call
  EXPECT_DOUBLE_EQ(r.devices[1].op_ns, 210);
  EXPECT_EQ(r.cross_tensors, 3u);
  EXPECT_EQ(r.calls_measured, 2u);
  EXPECT_DOUBLE_EQ(r.call_ns, 1000);
  ASSERT_EQ(r.edges.size(), 3u);
  for (const auto& e : r.edges) {
    EXPECT_DOUBLE_EQ(e.sends, 1);
    EXPECT_DOUBLE_EQ(e.send_ns, 10);
    EXPECT_DOUBLE_EQ(e.wait_ns, 100);
    EXPECT_EQ(e.bytes, 4096);
  }
  EXPECT_EQ(r.edges[0].from.substr(0, 2), "l0");  // ties keep graph order
  EXPECT_EQ(r.edges[0].to, "l1/MatMul");
  EXPECT_EQ(r.edges[0].src_device, "CPU:0");
  EXPECT_EQ(r.edges[0].dst_device, "CPU:1");
  EXPECT_DOUBLE_EQ(r.cross_ns, 330);
  EXPECT_DOUBLE_EQ(r.path_ns, 740);  // the measured schedule, replayed
  ASSERT_FALSE(r.critical_path.empty());
}

TEST(Placement, ProposalIsTheFastestReplayedPlan) {
  model::Trace t = AlternatingTrace();
  const auto r = analysis::Placement(t).at(0);
  // Candidates: contiguous with the same share per device (l0 l1 on CPU:0, l2
  // l3 on CPU:1: one crossing, replayed 10+100+100+110+100+100 = 520), or
  // every layer on CPU:0 (no crossing: 410) or on CPU:1 (no crossing; l0 moves
  // too). The shortest replay wins: everything on CPU:0.
  ASSERT_EQ(r.moves.size(), 2u);
  EXPECT_EQ(r.moves[0].layer, "l1");
  EXPECT_EQ(r.moves[0].from_device, "CPU:1");
  EXPECT_EQ(r.moves[0].to_device, "CPU:0");
  EXPECT_EQ(r.moves[1].layer, "l3");
  EXPECT_EQ(r.moves[1].to_device, "CPU:0");
  EXPECT_EQ(r.cross_tensors_after, 0u);
  EXPECT_DOUBLE_EQ(r.path_after_ns, 410);
}

TEST(Placement, DiagnosisNamesTheMovesWithTheReplayedGain) {
  model::Trace t = AlternatingTrace();
  std::vector<analysis::Finding> fs = analysis::Diagnose(t);
  const analysis::Finding* f = nullptr;
  for (const auto& x : fs)
    if (x.category == "placement") f = &x;
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->involved, (std::vector<std::string>{"l1: CPU:1 -> CPU:0", "l3: CPU:1 -> CPU:0"}));
  // 740 -> 410 ns of each call; no steps: the trace (two calls) is the window.
  EXPECT_GT(f->estimated_gain_pct, 5);
  bool replayed = false;
  for (const auto& [k, v] : f->metrics) replayed |= k == "replayed_call_after_ns" && v == 410;
  EXPECT_TRUE(replayed);
  EXPECT_NE(f->suggestion.find("l1, l3 to CPU:0"), std::string::npos) << f->suggestion;
}

TEST(Placement, NoPlacedGraphNoResult) {
  model::Trace t;
  t.processes.push_back({});
  t.Finalize();
  EXPECT_TRUE(analysis::Placement(t).empty());
}

}  // namespace
}  // namespace strata

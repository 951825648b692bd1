// Unit tests of the framework level's parts that need no framework: the cost
// model, the op-name cache, the payload parsers, the control block, the schema.
#include <sys/mman.h>

#include <cstdio>
#include <filesystem>

#include <memory>
#include <string>
#include <vector>

#include "base/files.h"
#include "opcost/cost_model.h"
#include "collectors/torch/name_cache.h"
#include "format/control.h"
#include "format/schema.h"
#include "format/tsdl.h"
#include "importers/strata/torch_payloads.h"
#include "tests/testing.h"

namespace strata {
namespace {

using opcost::ArgDesc;
using opcost::ArgKind;
using opcost::EstimateCost;
using opcost::OpCost;

ArgDesc Tensor(std::vector<int64_t> dims, int elem = 4) {
  ArgDesc a;
  a.kind = ArgKind::kTensor;
  a.ndim = static_cast<uint8_t>(dims.size());
  a.elem_size = static_cast<uint8_t>(elem);
  int64_t n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    a.dims[i] = dims[i];
    n *= dims[i];
  }
  a.bytes = n * elem;
  return a;
}

ArgDesc Ints(std::vector<int64_t> v) {
  ArgDesc a;
  a.kind = ArgKind::kIntList;
  a.ndim = static_cast<uint8_t>(v.size());
  for (size_t i = 0; i < v.size(); ++i) a.dims[i] = v[i];
  return a;
}

ArgDesc Int(int64_t v) {
  ArgDesc a;
  a.kind = ArgKind::kInt;
  a.value = v;
  return a;
}

ArgDesc None() { return ArgDesc{}; }

TEST(CostModel, MatrixMultiplies) {
  std::vector<ArgDesc> mm = {Tensor({32, 64}), Tensor({64, 16})};
  OpCost c = EstimateCost("aten::mm", mm);
  EXPECT_EQ(c.flops, 2 * 32 * 64 * 16);
  EXPECT_EQ(c.bytes, (32 * 64 + 64 * 16 + 32 * 16) * 4);

  std::vector<ArgDesc> addmm = {Tensor({16}), Tensor({32, 64}), Tensor({64, 16}), Int(1), Int(1)};
  c = EstimateCost("aten::addmm", addmm);
  EXPECT_EQ(c.flops, 2 * 32 * 64 * 16 + 2 * 32 * 16);
  EXPECT_EQ(c.bytes, (16 + 32 * 64 + 64 * 16 + 32 * 16) * 4);

  std::vector<ArgDesc> bmm = {Tensor({8, 4, 5}), Tensor({8, 5, 6})};
  EXPECT_EQ(EstimateCost("aten::bmm", bmm).flops, 2 * 8 * 4 * 5 * 6);

  // linear over a [B, T, K] input: rows = B*T.
  std::vector<ArgDesc> linear = {Tensor({4, 10, 64}), Tensor({32, 64}), Tensor({32})};
  c = EstimateCost("aten::linear", linear);
  EXPECT_EQ(c.flops, 2 * 40 * 64 * 32 + 40 * 32);
  EXPECT_EQ(c.bytes, (4 * 10 * 64 + 32 * 64 + 32 + 40 * 32) * 4);

  // matmul broadcasting a batch against a matrix.
  std::vector<ArgDesc> matmul = {Tensor({3, 7, 5}), Tensor({5, 2})};
  EXPECT_EQ(EstimateCost("aten::matmul", matmul).flops, 2 * 3 * 7 * 5 * 2);
  // Shapes that do not fit give no estimate.
  std::vector<ArgDesc> bad = {Tensor({32, 64}), Tensor({32, 64, 2})};
  EXPECT_EQ(EstimateCost("aten::mm", bad).flops, -1);
}

TEST(CostModel, Convolutions) {
  // conv2d(input [8,3,32,32], weight [16,3,3,3], bias, stride 1, padding 1, dilation 1, groups 1)
  std::vector<ArgDesc> conv = {Tensor({8, 3, 32, 32}), Tensor({16, 3, 3, 3}), Tensor({16}), Ints({1, 1}), Ints({1, 1}),
                               Ints({1, 1}), Int(1)};
  OpCost c = EstimateCost("aten::conv2d", conv);
  int64_t out = 8 * 16 * 32 * 32;
  EXPECT_EQ(c.flops, 2 * out * 3 * 3 * 3 + out);
  EXPECT_EQ(c.bytes, (8 * 3 * 32 * 32 + 16 * 27 + 16 + out) * 4);

  // Stride 2, no padding: 15x15 outputs; groups 3 with 6 output channels.
  std::vector<ArgDesc> strided = {Tensor({1, 3, 32, 32}), Tensor({6, 1, 3, 3}), None(), Ints({2}), Ints({0}),
                                  Ints({1}), Int(3)};
  EXPECT_EQ(EstimateCost("aten::conv2d", strided).flops, 2 * (6 * 15 * 15) * 1 * 9);

  // aten::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
  std::vector<ArgDesc> generic = {Tensor({8, 3, 32, 32}), Tensor({16, 3, 3, 3}), Tensor({16}), Ints({1, 1}),
                                  Ints({1, 1}), Ints({1, 1}), Int(0), Ints({0, 0}), Int(1)};
  EXPECT_EQ(EstimateCost("aten::convolution", generic).flops, c.flops);
  // mkldnn_convolution keeps padding before stride.
  std::vector<ArgDesc> mkldnn = {Tensor({8, 3, 32, 32}), Tensor({16, 3, 3, 3}), Tensor({16}), Ints({1, 1}), Ints({1, 1}),
                                 Ints({1, 1}), Int(1)};
  EXPECT_EQ(EstimateCost("aten::mkldnn_convolution", mkldnn).flops, c.flops);

  // Backward computes both gradients: twice the forward multiply-adds.
  std::vector<ArgDesc> bwd = {Tensor({8, 16, 32, 32}), Tensor({8, 3, 32, 32}), Tensor({16, 3, 3, 3}), Ints({16}),
                              Ints({1, 1}), Ints({1, 1}), Ints({1, 1}), Int(0), Ints({0, 0}), Int(1), Ints({1, 1, 1})};
  EXPECT_EQ(EstimateCost("aten::convolution_backward", bwd).flops, 2 * 2 * out * 27);
  bwd[10] = Ints({0, 1, 1});  // grad_input not wanted
  EXPECT_EQ(EstimateCost("aten::convolution_backward", bwd).flops, 2 * out * 27);

  // conv_transpose2d(input [1,4,5,5], weight [4,2,3,3], stride 2): 11x11 output of 2 channels.
  std::vector<ArgDesc> tr = {Tensor({1, 4, 5, 5}), Tensor({4, 2, 3, 3}), None(), Ints({2, 2}), Ints({0, 0}),
                             Ints({0, 0}), Int(1), Ints({1, 1})};
  OpCost t = EstimateCost("aten::conv_transpose2d", tr);
  EXPECT_EQ(t.flops, 2 * 1 * 4 * 25 * 2 * 9);
  EXPECT_EQ(t.bytes, (100 + 72 + 2 * 11 * 11) * 4);
}

TEST(CostModel, ElementwiseViewsAndUnknown) {
  std::vector<ArgDesc> add = {Tensor({64, 64}), Tensor({64}), Int(1)};
  OpCost c = EstimateCost("aten::add", add);
  EXPECT_EQ(c.flops, 64 * 64);
  EXPECT_EQ(c.bytes, (64 * 64 + 64 + 64 * 64) * 4);
  std::vector<ArgDesc> inplace = {Tensor({64}), Tensor({64, 64})};
  EXPECT_EQ(EstimateCost("aten::mul_", inplace).flops, 64);  // writes its first input
  std::vector<ArgDesc> tanh = {Tensor({10, 10}, 8)};
  EXPECT_EQ(EstimateCost("aten::tanh", tanh).bytes, 2 * 100 * 8);
  std::vector<ArgDesc> view = {Tensor({10, 10}), Ints({100})};
  EXPECT_EQ(EstimateCost("aten::view", view).flops, 0);
  EXPECT_EQ(EstimateCost("aten::view", view).bytes, 0);
  EXPECT_EQ(EstimateCost("aten::some_custom_op", view).flops, -1);
  EXPECT_EQ(EstimateCost("aten::some_custom_op", view).bytes, -1);
  // A name that merely ends in "__" is not an in-place variant of anything.
  EXPECT_EQ(EstimateCost("aten::__and__", add).flops, -1);
}

uint32_t g_interned = 0;
uint32_t FakeIntern(std::string_view) { return ++g_interned; }

TEST(NameCache, VerifiesTextAtReusedAddresses) {
  g_interned = 0;
  collectors::torch::NameCache cache(&FakeIntern);
  // Names are std::string buffers, as PyTorch hands them out (>= 16 bytes).
  static const std::string kStable = "aten::mm";
  const collectors::torch::NameEntry* a = cache.Lookup(kStable.c_str());
  EXPECT_EQ(cache.Lookup(kStable.c_str()), a);
  EXPECT_EQ(g_interned, 1u);
  // Two names at the same address (a reused stack buffer): never confused.
  char buf[64] = "MulBackward0";
  uint32_t mul = cache.Lookup(buf)->id;
  std::snprintf(buf, sizeof buf, "TanhBackward0");
  uint32_t tanh = cache.Lookup(buf)->id;
  EXPECT_NE(mul, tanh);
  std::snprintf(buf, sizeof buf, "MulBackward0");
  EXPECT_EQ(cache.Lookup(buf)->id, mul);
  // A prefix of a cached name at the same address is a different name.
  std::snprintf(buf, sizeof buf, "MulBackward");
  EXPECT_NE(cache.Lookup(buf)->id, mul);
  EXPECT_EQ(g_interned, 4u);
  // Longer than 16 bytes: the tail is compared too.
  std::snprintf(buf, sizeof buf, "autograd::engine::evaluate_function: A");
  uint32_t long_a = cache.Lookup(buf)->id;
  std::snprintf(buf, sizeof buf, "autograd::engine::evaluate_function: B");
  EXPECT_NE(cache.Lookup(buf)->id, long_a);
  std::snprintf(buf, sizeof buf, "autograd::engine::evaluate_function: A");
  EXPECT_EQ(cache.Lookup(buf)->id, long_a);
  EXPECT_EQ(cache.LookupId(buf), long_a);
}

// The op path's LookupId verifies hits from the slot's copy of the text (up to
// 31 bytes) and from the entry beyond: names that differ only past byte 16,
// past byte 32, or in length, at one reused address, are never confused.
TEST(NameCache, LookupIdTellsApartNamesDifferingAnywhere) {
  g_interned = 0;
  collectors::torch::NameCache cache(&FakeIntern);
  char buf[96];
  std::vector<std::string> names = {
      "aten::empty_strided",                                  // 19: in the slot
      "aten::empty_strides",                                  // differs at byte 18
      "aten::empty_strided_",                                 // one longer
      "aten::empty",                                          // a prefix, < 16
      "autograd::engine::evaluate_function: MulBackward0",    // 49: past the slot's copy
      "autograd::engine::evaluate_function: DivBackward0",    // differs at byte 37
      "autograd::engine::evaluate_function: MulBackward0x",   // differs past byte 32
      "autograd::engine::evaluate_function: MulBackward1",    // differs at the last byte
  };
  std::vector<uint32_t> ids;
  for (const std::string& n : names) {
    std::snprintf(buf, sizeof buf, "%s", n.c_str());
    ids.push_back(cache.LookupId(buf));
  }
  EXPECT_EQ(g_interned, names.size());
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < names.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s", names[i].c_str());
      EXPECT_EQ(cache.LookupId(buf), ids[i]) << names[i];
      EXPECT_EQ(cache.LookupId(buf), ids[i]) << names[i] << " (address hit)";
      EXPECT_EQ(cache.Lookup(buf)->id, ids[i]) << names[i];
      EXPECT_EQ(cache.LookupIdByText(buf), ids[i]) << names[i] << " (by text)";
    }
  EXPECT_EQ(g_interned, names.size());
  std::snprintf(buf, sizeof buf, "autograd::engine::evaluate_function: TanhBackward0");
  uint32_t fresh = cache.LookupIdByText(buf);
  EXPECT_EQ(g_interned, names.size() + 1);
  EXPECT_EQ(cache.LookupId(buf), fresh);
}

// Every length around the 8-, 16- and 32-byte boundaries of the verification:
// a name and its one-longer extension at one address are different names.
TEST(NameCache, EveryLengthIsVerifiedExactly) {
  g_interned = 0;
  collectors::torch::NameCache cache(&FakeIntern);
  char buf[96];
  std::vector<uint32_t> ids;
  for (int n = 1; n <= 50; ++n) {
    std::snprintf(buf, sizeof buf, "%s", std::string(static_cast<size_t>(n), 'a').c_str());
    ids.push_back(cache.LookupId(buf));
  }
  EXPECT_EQ(g_interned, 50u);
  for (int n = 50; n >= 1; --n) {
    std::memset(buf, 'b', sizeof buf);  // bytes after the NUL are not the name's
    std::snprintf(buf, sizeof buf, "%s", std::string(static_cast<size_t>(n), 'a').c_str());
    EXPECT_EQ(cache.LookupId(buf), ids[static_cast<size_t>(n - 1)]) << n;
    EXPECT_EQ(cache.LookupId(buf), ids[static_cast<size_t>(n - 1)]) << n << " (address hit)";
  }
  EXPECT_EQ(g_interned, 50u);
}

// Autograd's engine builds "autograd::engine::evaluate_function: ..." per call,
// at a new address each time: after 64 misses such a name stops taking address
// slots over and is found by content; ids stay exact for it, for a stable name
// looked up in between, and for another name later written at one of its
// addresses.
TEST(NameCache, PerCallNamesAtChangingAddresses) {
  g_interned = 0;
  collectors::torch::NameCache cache(&FakeIntern);
  static const std::string kStable = "aten::mul";
  uint32_t stable = cache.LookupId(kStable.c_str());
  std::vector<std::unique_ptr<char[]>> bufs;
  uint32_t per_call = 0;
  for (int i = 0; i < 300; ++i) {
    bufs.push_back(std::make_unique<char[]>(64));  // kept alive: every address is new
    std::snprintf(bufs.back().get(), 64, "autograd::engine::evaluate_function: MulBackward0");
    uint32_t id = cache.LookupId(bufs.back().get());
    if (i == 0) per_call = id;
    ASSERT_EQ(id, per_call) << i;
    ASSERT_EQ(cache.LookupId(kStable.c_str()), stable) << i;
  }
  EXPECT_EQ(g_interned, 2u);
  for (size_t i : {size_t{10}, size_t{200}}) {  // a slot it took, and one it did not
    EXPECT_EQ(cache.LookupId(bufs[i].get()), per_call);
    std::snprintf(bufs[i].get(), 64, "autograd::engine::evaluate_function: MulBackward1");
    EXPECT_NE(cache.LookupId(bufs[i].get()), per_call) << i;
  }
  EXPECT_EQ(g_interned, 3u);
}

TEST(NameCache, StepFlags) {
  auto e = collectors::torch::MakeNameEntry("ProfilerStep#17", 1);
  EXPECT_TRUE(e.flags & collectors::torch::kNameProfilerStep);
  EXPECT_EQ(e.step, 17u);
  EXPECT_FALSE(collectors::torch::MakeNameEntry("ProfilerStep#x", 1).flags & collectors::torch::kNameProfilerStep);
  EXPECT_TRUE(collectors::torch::MakeNameEntry("Optimizer.step#Adam.step", 1).flags &
              collectors::torch::kNameOptimizerStep);
  EXPECT_TRUE(collectors::torch::MakeNameEntry("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1).flags &
              collectors::torch::kNameDataLoader);
}

TEST(TorchPayloads, TensorIds) {
  std::vector<uint64_t> ids;
  EXPECT_EQ(importers::strata_ctf::ParseTensorIds("7f3a2c0012a0 1  ffffffffffffffff", &ids), 0u);
  EXPECT_EQ(ids, (std::vector<uint64_t>{0x7f3a2c0012a0ull, 1, UINT64_MAX}));
  ids.clear();
  EXPECT_EQ(importers::strata_ctf::ParseTensorIds("zz 12 1ffffffffffffffff0 -3", &ids), 3u);
  EXPECT_EQ(ids, std::vector<uint64_t>{0x12});
}

TEST(TorchPayloads, Graphs) {
  auto g = importers::strata_ctf::ParseGraph("aten::linear\naten::relu\naten::linear", "0>1 1>2 2>7 x>1 1>");
  EXPECT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.edges, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 1}, {1, 2}}));
  EXPECT_EQ(g.bad_edges, 3u);
  EXPECT_TRUE(importers::strata_ctf::ParseGraph("", "").nodes.empty());
}

TEST(ControlBlock, RoundTripsAndRejectsOthers) {
  std::string dir = testing::TempDir("control-block");
  std::filesystem::create_directories(dir);
  format::ControlBlock cb;
  format::InitControlBlock(&cb);
  cb.ops_mode.store(static_cast<uint32_t>(format::OpsMode::kSampled));
  cb.detail_first_step.store(10);
  cb.detail_last_step.store(20);
  ASSERT_TRUE(format::WriteControlFile(dir + "/control", cb).ok());
  auto m = format::MapControlFile(dir + "/control");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->ops_mode.load(), static_cast<uint32_t>(format::OpsMode::kSampled));
  EXPECT_EQ((*m)->detail_first_step.load(), 10);
  EXPECT_EQ((*m)->memory.load(), 1u);
  // A second mapping sees a change made through the first (MAP_SHARED).
  auto m2 = format::MapControlFile(dir + "/control");
  ASSERT_TRUE(m2.ok());
  (*m)->ops_mode.store(0);
  EXPECT_EQ((*m2)->ops_mode.load(), 0u);

  ASSERT_TRUE(WriteFileAtomic(dir + "/short", "STCB").ok());
  EXPECT_FALSE(format::MapControlFile(dir + "/short").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/other", std::string(sizeof(format::ControlBlock), 'x')).ok());
  auto o = format::MapControlFile(dir + "/other");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("not a version"), std::string::npos);
  EXPECT_FALSE(format::MapControlFile(dir + "/missing").ok());
}

TEST(ControlBlock, OpsModes) {
  format::OpsMode m;
  EXPECT_TRUE(format::ParseOpsMode("sampled", &m));
  EXPECT_EQ(m, format::OpsMode::kSampled);
  EXPECT_FALSE(format::ParseOpsMode("some", &m));
  EXPECT_STREQ(format::OpsModeName(format::OpsMode::kOff), "off");
}

// The framework events are in the metadata with the ids and header kinds the
// schema promises: hot ones compact, detail ones extended.
TEST(TorchSchema, EventsInMetadata) {
  format::TraceIdentity id;
  id.uuid = format::NewRandomUuid();
  auto md = format::ParseMetadata(format::GenerateMetadata(id));
  ASSERT_TRUE(md.ok()) << md.status().message();
  const auto& events = md->streams[format::kThreadStream].events;
  auto find = [&](std::string_view name) -> int {
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].name == name) return static_cast<int>(i);
    return -1;
  };
  for (const char* hot : {"op_begin", "op_begin_seq", "op_end", "bwd_begin", "scope_begin", "scope_end", "module_begin",
                          "module_end", "mem_alloc", "mem_free"}) {
    int i = find(hot);
    ASSERT_GE(i, 0) << hot;
    EXPECT_GE(i, 12) << hot;
    EXPECT_LE(i, static_cast<int>(format::kCompactMaxId)) << hot;
  }
  for (const char* detail : {"torch_thread", "op_detail", "op_outputs", "ops_tier", "step_batch", "graph",
                             "auto_step_begin", "auto_step_end"}) {
    int i = find(detail);
    ASSERT_GE(i, 64) << detail;
    EXPECT_LE(i, 95) << detail;
  }
}

}  // namespace
}  // namespace strata

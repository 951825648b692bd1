// NCCL through its profiler-plugin interface (collectors/nccl): the names,
// sizes and sequence numbers the plugin gives NCCL's tasks, and a recording of
// programs/nccl_plugin_driver, which plays NCCL 2.28 in front of
// libstrata_nccl.so through both ncclProfiler_v5 and ncclProfiler_v4.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "collectors/nccl/nccl_names.h"
#include "testing.h"

namespace strata {
namespace {

namespace n = collectors::nccl;

std::string Name(const char* func) {
  char out[64];
  n::RowName(func, out, sizeof out);
  return out;
}

TEST(NcclNames, FuncsInTorchSpelling) {
  EXPECT_EQ(Name("AllReduce"), "nccl:all_reduce");
  EXPECT_EQ(Name("AllGather"), "nccl:all_gather");
  EXPECT_EQ(Name("ReduceScatter"), "nccl:reduce_scatter");
  EXPECT_EQ(Name("Broadcast"), "nccl:broadcast");
  EXPECT_EQ(Name("Reduce"), "nccl:reduce");
  EXPECT_EQ(Name("AlltoAll"), "nccl:all_to_all");
  EXPECT_EQ(Name("Send"), "nccl:send");
  EXPECT_EQ(Name("Recv"), "nccl:recv");
  EXPECT_EQ(Name("SendRecv"), "nccl:send_recv");
  EXPECT_EQ(Name(nullptr), "nccl:unknown");
  EXPECT_EQ(Name(""), "nccl:unknown");
  char small[8];
  n::RowName("AllReduce", small, sizeof small);
  EXPECT_STREQ(small, "nccl:al");  // truncated, terminated
}

TEST(NcclNames, BytesFromTheDatatypeName) {
  EXPECT_EQ(n::Bytes(size_t{1} << 20, "ncclFloat32"), uint64_t{4} << 20);
  EXPECT_EQ(n::Bytes(10, "ncclBfloat16"), 20u);
  EXPECT_EQ(n::Bytes(10, "ncclFloat16"), 20u);
  EXPECT_EQ(n::Bytes(10, "ncclInt8"), 10u);
  EXPECT_EQ(n::Bytes(10, "ncclFloat8e4m3"), 10u);
  EXPECT_EQ(n::Bytes(10, "ncclUint64"), 80u);
  EXPECT_EQ(n::Bytes(10, "ncclFloat64"), 80u);
  EXPECT_EQ(n::Bytes(10, "Unknown"), 0u);  // NCCL 2.28's name for ncclUint8
  EXPECT_EQ(n::Bytes(10, nullptr), 0u);
  EXPECT_EQ(n::Bytes(SIZE_MAX, "ncclFloat64"), UINT64_MAX);
}

TEST(NcclNames, SequenceNumbersUniquePerCommunicatorAndFunc) {
  uint32_t a = n::CommTag(0x5a5a5a5a12345678ull), b = n::CommTag(0x4b4b4b4b87654321ull);
  EXPECT_NE(a, b);
  EXPECT_NE(n::CommTag(0), 0u);
  uint32_t ar = n::SeqKind("nccl:all_reduce"), ag = n::SeqKind("nccl:all_gather");
  EXPECT_NE(ar, 0u);
  EXPECT_NE(ar, ag);
  EXPECT_EQ(n::SeqKind("nccl:other"), 0u);
  // All-reduce #0 and all-gather #0 of one communicator, and all-reduce #0 of
  // another: three numbers; NCCL's seqNumber in the low 32 bits.
  std::set<uint64_t> seqs = {n::RowSeq(a, ar, 0), n::RowSeq(a, ag, 0), n::RowSeq(b, ar, 0)};
  EXPECT_EQ(seqs.size(), 3u);
  EXPECT_EQ(n::RowSeq(a, ar, 7) & 0xffffffffu, 7u);
  EXPECT_LT(n::RowSeq(a, ar, 6), n::RowSeq(a, ar, 7));
  EXPECT_GE(n::RowSeq(1, 0, 0), uint64_t{1} << 40);  // above torch's and MPI's counts
}

// The driver, recorded: every task a row with its name, number, bytes and a
// duration at least the driver's sleeps; the sends and receives spans with
// their peers; the process rank 2 (from the communicator: no RANK variable).
TEST(NcclPlugin, RecordsTheDriversTasksThroughV5AndV4) {
  std::string prog = testing::TestProgram("nccl_plugin_driver");
  std::string lib = testing::LibDir() + "/libstrata_nccl.so";
  if (::access(prog.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << prog;
  if (::access(lib.c_str(), R_OK) != 0) GTEST_SKIP() << "no " << lib;
  std::string dir = testing::TempDir("nccl-plugin");
  // strata record sets NCCL_PROFILER_PLUGIN itself (where it is unset or
  // empty); the driver reads it. No rank variable: the rank is NCCL's.
  auto r = testing::Record(dir, {prog}, {},
                           {{"NCCL_PROFILER_PLUGIN", ""}, {"RANK", ""}, {"OMPI_COMM_WORLD_RANK", ""}, {"PMI_RANK", ""},
                            {"PMIX_RANK", ""}, {"SLURM_PROCID", ""}, {"TF_CONFIG", ""}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("activation mask 0x46"), std::string::npos) << r.out;  // Coll | P2p | KernelCh
  model::Trace t = testing::Load(dir);

  std::vector<int64_t> ranks;
  for (const auto& p : t.processes)
    if (p.rank >= 0) ranks.push_back(p.rank);
  EXPECT_EQ(ranks, std::vector<int64_t>{2});

  const uint32_t v5_tag = n::CommTag(0x5a5a5a5a12345678ull), v4_tag = n::CommTag(0x4b4b4b4b87654321ull);
  struct Row {
    uint64_t seq;
    int64_t ts, dur, bytes;
    uint32_t track, end_track;
  };
  std::map<std::string, std::map<uint32_t, std::vector<Row>>> rows;  // name -> comm tag -> rows
  const model::CollectiveTable& c = t.collectives;
  for (size_t i = 0; i < c.size(); ++i)
    rows[std::string(t.strings.Get(c.name[i]))][static_cast<uint32_t>(c.seq[i] >> 40)].push_back(
        {c.seq[i], c.ts[i], c.dur[i], c.bytes[i], c.track[i], c.end_track[i]});
  for (auto& [name, by_comm] : rows)
    for (auto& [tag, v] : by_comm)
      std::sort(v.begin(), v.end(), [](const Row& a, const Row& b) { return a.seq < b.seq; });

  constexpr int64_t kMs = 1000000;
  // All-reduces: 5 through v5, 2 through v4, numbered by NCCL's seqNumber;
  // each lasted its 2 ms of enqueue, and (once the communicator's kernels
  // have reported) its kernel's 5 ms, ending on the proxy thread.
  ASSERT_EQ(rows["nccl:all_reduce"][v5_tag].size(), 5u);
  ASSERT_EQ(rows["nccl:all_reduce"][v4_tag].size(), 2u);
  for (uint32_t tag : {v5_tag, v4_tag}) {
    const auto& v = rows["nccl:all_reduce"][tag];
    for (size_t k = 0; k < v.size(); ++k) {
      EXPECT_EQ(v[k].seq & 0xffffffffu, k);
      EXPECT_EQ(v[k].bytes, int64_t{4} << 20);
      EXPECT_GE(v[k].dur, 2 * kMs) << "all_reduce " << k;
      if (k > 0) {
        EXPECT_GE(v[k].dur, 7 * kMs) << "all_reduce " << k << ": ended before its kernel";
        EXPECT_NE(v[k].end_track, v[k].track) << "all_reduce " << k << ": not ended by the proxy thread";
      }
    }
  }
  ASSERT_EQ(rows["nccl:all_gather"][v5_tag].size(), 1u);
  EXPECT_EQ(rows["nccl:all_gather"][v5_tag][0].seq & 0xffffffffu, 0u);
  EXPECT_EQ(rows["nccl:all_gather"][v5_tag][0].bytes, 8000);
  EXPECT_GE(rows["nccl:all_gather"][v5_tag][0].dur, 7 * kMs);
  // Sends and receives: 3 rounds through v5, one send through v4.
  ASSERT_EQ(rows["nccl:send"][v5_tag].size(), 3u);
  ASSERT_EQ(rows["nccl:recv"][v5_tag].size(), 3u);
  ASSERT_EQ(rows["nccl:send"][v4_tag].size(), 1u);
  for (const char* name : {"nccl:send", "nccl:recv"})
    for (const auto& [tag, v] : rows[name])
      for (size_t k = 0; k < v.size(); ++k) {
        EXPECT_EQ(v[k].seq & 0xffffffffu, k) << name;
        EXPECT_EQ(v[k].bytes, 8192) << name;
        EXPECT_GE(v[k].dur, 6 * kMs) << name << " " << k;  // 1 ms enqueued, 5 ms of kernel
      }
  // Nothing else, every row ended.
  size_t all = 0;
  for (auto& [name, by_comm] : rows)
    for (auto& [tag, v] : by_comm) all += v.size();
  EXPECT_EQ(all, 5u + 2 + 1 + 3 + 3 + 1);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_GE(c.dur[i], 0);

  // The spans, with the peer's rank (3 for sends, 1 for receives), each at
  // least the millisecond its task was enqueued.
  std::map<std::string, std::vector<uint64_t>> peers;
  for (size_t i = 0; i < t.slices.size(); ++i) {
    std::string name(t.strings.Get(t.slices.name[i]));
    if (name != "nccl.send" && name != "nccl.recv") continue;
    EXPECT_EQ(t.slices.kind[i], model::SliceKind::kSpan);
    EXPECT_GE(t.slices.dur[i], 1 * kMs) << name;
    peers[name].push_back(t.slices.arg[i]);
  }
  EXPECT_EQ(peers["nccl.send"], std::vector<uint64_t>(4, 3));
  EXPECT_EQ(peers["nccl.recv"], std::vector<uint64_t>(3, 1));

  // Said in the trace: what it recorded, nothing dropped.
  bool reported = false;
  for (const auto& s : t.collectors)
    if (s.collector == "nccl") {
      reported = true;
      EXPECT_EQ(s.state, "ok") << s.detail;
    }
  EXPECT_TRUE(reported);
}

}  // namespace
}  // namespace strata

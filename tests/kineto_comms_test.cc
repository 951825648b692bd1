// The Kineto importer's NCCL collectives (importers/kineto/comms.h) and ranks:
// the real multi-rank traces in shared/data/external (HTA's sampled ranks 0
// and 1 of a 128-rank job, and rank 0 of a 2-rank DDP job), and small
// hand-written traces for what those do not have (record_param_comms' "Seq",
// a kernel without its launch).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/comms.h"
#include "importers/kineto/kineto.h"
#include "importers/load.h"
#include "tests/testing.h"

namespace strata {
namespace {

using model::SliceKind;

// A shared trace's path, or "" (the test skips) when it is not there.
std::string SharedTrace(const std::string& rel) {
  std::string data = testing::ExternalDataDir();
  if (data.empty() || !std::filesystem::exists(data + "/" + rel)) return "";
  return data + "/" + rel;
}

struct Coll {
  std::string name;
  uint64_t seq;
  int64_t ts, dur, bytes;
  uint32_t tensors;
  int64_t end() const { return ts + dur; }
};

// The rows of a one-rank trace, checked for what every row must be: in the
// one host process that holds the rank's steps, on the stream of the NCCL
// kernel it is (time and duration the kernel's), sorted by seq.
std::vector<Coll> Rows(const model::Trace& t, int64_t rank) {
  const model::CollectiveTable& c = t.collectives;
  std::vector<Coll> out;
  std::set<uint32_t> processes;
  for (size_t i = 0; i < c.size(); ++i) {
    processes.insert(c.process[i]);
    EXPECT_LT(c.process[i], t.processes.size());
    if (c.process[i] >= t.processes.size()) return {};
    const model::Process& p = t.processes[c.process[i]];
    EXPECT_FALSE(p.is_device) << i;
    EXPECT_EQ(p.rank, rank) << i;
    EXPECT_EQ(c.track[i], c.end_track[i]) << i;
    const model::Track& trk = t.tracks[c.track[i]];
    EXPECT_EQ(trk.kind, model::TrackKind::kDeviceQueue) << i;
    int32_t k = t.SliceAt(c.track[i], c.ts[i]);
    EXPECT_NE(k, model::kNone) << i;
    if (k != model::kNone) {
      EXPECT_EQ(t.slices.kind[static_cast<size_t>(k)], SliceKind::kKernel) << i;
      EXPECT_EQ(t.slices.ts[static_cast<size_t>(k)], c.ts[i]) << i;
      EXPECT_EQ(t.slices.dur[static_cast<size_t>(k)], c.dur[i]) << i;
      EXPECT_TRUE(t.strings.Get(t.slices.name[static_cast<size_t>(k)]).starts_with("nccl")) << i;
    }
    if (i > 0 && c.process[i] == c.process[i - 1]) {
      EXPECT_LT(c.seq[i - 1], c.seq[i]) << i;
    }
    out.push_back({std::string(t.strings.Get(c.name[i])), c.seq[i], c.ts[i], c.dur[i], c.bytes[i], c.tensors[i]});
  }
  EXPECT_EQ(processes.size(), 1u);
  // That process holds the steps (what the analysis breaks down per rank).
  if (processes.size() == 1) {
    size_t steps = 0;
    for (size_t i = 0; i < t.slices.size(); ++i)
      steps += t.slices.kind[i] == SliceKind::kStep && t.tracks[t.slices.track[i]].process == *processes.begin();
    EXPECT_GT(steps, 0u);
  }
  return out;
}

size_t NcclKernels(const model::Trace& t) {
  size_t n = 0;
  for (size_t i = 0; i < t.slices.size(); ++i)
    n += t.slices.kind[i] == SliceKind::kKernel && t.strings.Get(t.slices.name[i]).starts_with("nccl");
  return n;
}

std::map<std::string, size_t> CountByName(const std::vector<Coll>& rows) {
  std::map<std::string, size_t> n;
  for (const Coll& r : rows) ++n[r.name];
  return n;
}

// (name, occurrence) -> row, the key the analysis matches ranks by.
std::map<std::pair<std::string, size_t>, Coll> ByOccurrence(const std::vector<Coll>& rows) {
  std::map<std::pair<std::string, size_t>, Coll> out;
  std::map<std::string, size_t> seen;
  for (const Coll& r : rows) out[{r.name, seen[r.name]++}] = r;
  return out;
}

// HTA's trace_filter ranks: the same two ProfilerSteps of ranks 0 and 1 of a
// 128-rank job, every collective run by a SendRecv kernel and named by c10d's
// title above its launch; the events are sampled, so each rank kept a different
// subset of the job's collectives.
TEST(KinetoComms, SampledRanks) {
  std::string path[2] = {SharedTrace("hta/trace_filter/sampled_rank-0.json.gz"),
                         SharedTrace("hta/trace_filter/sampled_rank-1.json.gz")};
  if (path[0].empty() || path[1].empty()) GTEST_SKIP() << "hta/trace_filter is not in shared/data/external";
  std::vector<Coll> rows[2];
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(path[r]);
    model::Trace t = testing::Load(path[r]);
    for (const model::Process& p : t.processes) EXPECT_EQ(p.rank, r);
    rows[r] = Rows(t, r);
    EXPECT_EQ(rows[r].size(), NcclKernels(t));
    EXPECT_EQ(rows[r].size(), 10u);
    // No "Seq" in these records: the issue order, 0, 1, ...
    for (size_t i = 0; i < rows[r].size(); ++i) EXPECT_EQ(rows[r][i].seq, i);
    std::map<std::string, size_t> want = {{"nccl:_all_gather_base", 2}, {"nccl:all_reduce", 4}, {"nccl:all_to_all", 4}};
    EXPECT_EQ(CountByName(rows[r]), want);
    for (const Coll& c : rows[r]) {
      EXPECT_EQ(c.tensors, 1u);
      // Input bytes from the title's record_shapes: 16M int8 gathered, float all-reduces.
      if (c.name == "nccl:_all_gather_base") {
        EXPECT_EQ(c.bytes, 16777216);
      }
      if (c.name == "nccl:all_reduce") {
        EXPECT_EQ(c.bytes % 4, 0);
      }
      EXPECT_GT(c.bytes, 0);
    }
  }
  // The same first all-reduce on both ranks: 19618307 floats.
  EXPECT_EQ((ByOccurrence(rows[0])[{"nccl:all_reduce", 0}].bytes), int64_t{19618307} * 4);
  EXPECT_EQ((ByOccurrence(rows[1])[{"nccl:all_reduce", 0}].bytes), int64_t{19618307} * 4);

  // A collective completes on every rank at about the same time: rows of the
  // two ranks that complete within 1 ms of each other are one collective, and
  // carry one name. (The all-gathers' ends are 0.2-0.3 ms apart, the others'
  // 0-55 us; rows that are not one collective end 13 ms apart or more.)
  constexpr int64_t kSameEnd = 1'000'000;
  size_t same_end = 0;
  for (const Coll& a : rows[0])
    for (const Coll& b : rows[1])
      if (std::abs(a.end() - b.end()) <= kSameEnd) {
        ++same_end;
        EXPECT_EQ(a.name, b.name) << a.end();
      }
  EXPECT_EQ(same_end, 5u);
  // Matched by (name, occurrence), as the analysis does, the pairs that are
  // one collective are those both ranks kept all of the earlier ones of: both
  // all-gathers (of the two optimizer steps), the first and last all-reduce.
  // Sampling left rank 0 without the first all-to-all rank 1 has, and the
  // ranks with different middle all-reduces.
  auto occ0 = ByOccurrence(rows[0]), occ1 = ByOccurrence(rows[1]);
  std::set<std::pair<std::string, size_t>> same, want_same = {
      {"nccl:_all_gather_base", 0}, {"nccl:_all_gather_base", 1}, {"nccl:all_reduce", 0}, {"nccl:all_reduce", 3}};
  for (auto& [key, a] : occ0) {
    auto it = occ1.find(key);
    ASSERT_NE(it, occ1.end()) << key.first << " " << key.second;
    if (std::abs(a.end() - it->second.end()) <= kSameEnd) same.insert(key);
  }
  EXPECT_EQ(same, want_same);
}

// The ranks' rows in one trace (as `strata merge` makes it): the analysis
// finds two ranks, and which of their collectives were one.
TEST(KinetoComms, SampledRanksAnalyzed) {
  std::string path[2] = {SharedTrace("hta/trace_filter/sampled_rank-0.json.gz"),
                         SharedTrace("hta/trace_filter/sampled_rank-1.json.gz")};
  if (path[0].empty() || path[1].empty()) GTEST_SKIP() << "hta/trace_filter is not in shared/data/external";
  model::Trace both;
  for (int r = 0; r < 2; ++r) {
    model::Trace t = testing::Load(path[r]);
    const model::CollectiveTable& c = t.collectives;
    ASSERT_GT(c.size(), 0u);
    both.processes.push_back(t.processes[c.process[0]]);
    for (size_t i = 0; i < c.size(); ++i) {
      both.collectives.process.push_back(static_cast<uint32_t>(r));
      both.collectives.name.push_back(both.strings.Intern(t.strings.Get(c.name[i])));
      both.collectives.seq.push_back(c.seq[i]);
      both.collectives.ts.push_back(c.ts[i]);
      both.collectives.dur.push_back(c.dur[i]);
      both.collectives.track.push_back(0);
      both.collectives.end_track.push_back(0);
      both.collectives.bytes.push_back(c.bytes[i]);
      both.collectives.tensors.push_back(c.tensors[i]);
    }
  }
  analysis::CommsSummary s = analysis::AnalyzeComms(both);
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].rank, 0);
  EXPECT_EQ(s.ranks[1].rank, 1);
  EXPECT_EQ(s.ranks[0].label, "rank 0 (pid 4037)");
  EXPECT_EQ(s.ranks[1].label, "rank 1 (pid 4045)");
  EXPECT_EQ(s.ranks[0].collectives, 10u);
  // Sampled traces hold different subsets of the job's collectives: paired by
  // occurrence, most of the ten pairs were never in flight on both ranks at
  // once (the ranks' Kineto times are both wall-clock microseconds), so they are
  // matched by time: five collectives that both ranks were in together, and
  // the ten each rank's sample alone holds.
  EXPECT_EQ(s.matched_by, "time");
  EXPECT_EQ(s.checked, 10u);
  EXPECT_GT(s.apart * 5, s.checked);
  EXPECT_EQ(s.instances, 15u);
  EXPECT_EQ(s.matched, 5u);
  EXPECT_EQ(s.kinds.size(), 3u);
}

// HTA's nccl_parser_config: rank 0 of 2, DDP's all-reduces and broadcasts,
// each with record_param_comms' "Collective name", "In msg nelems" and "dtype".
TEST(KinetoComms, NcclData) {
  std::string path = SharedTrace("hta/nccl_parser_config/nccl_data.json.gz");
  if (path.empty()) GTEST_SKIP() << "hta/nccl_parser_config is not in shared/data/external";
  model::Trace t = testing::Load(path);
  for (const model::Process& p : t.processes) EXPECT_EQ(p.rank, 0);
  std::vector<Coll> rows = Rows(t, 0);
  EXPECT_EQ(t.processes[t.collectives.process[0]].pid, 2910249);
  EXPECT_EQ(rows.size(), NcclKernels(t));
  std::map<std::string, size_t> want = {{"nccl:all_reduce", 15}, {"nccl:broadcast", 6}};
  EXPECT_EQ(CountByName(rows), want);
  std::multiset<int64_t> broadcast_bytes;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].seq, i);
    EXPECT_GT(rows[i].bytes, 0) << i;
    EXPECT_EQ(rows[i].tensors, 1u);
    if (rows[i].name == "nccl:broadcast") broadcast_bytes.insert(rows[i].bytes);
  }
  // DDP's start-up broadcasts, three times: 53120 floats of parameters and 53 longs of buffers.
  EXPECT_EQ(broadcast_bytes, (std::multiset<int64_t>{424, 424, 424, 212480, 212480, 212480}));
  // The first all-reduce the GPU ran: 2049000 floats.
  auto occ = ByOccurrence(rows);
  EXPECT_EQ((occ[{"nccl:all_reduce", 0}].bytes), 2049000 * 4);
}

// What the shared traces do not have: a record's "Seq", a collective named
// only by record_param_comms, one by its kernel alone (no launch in the trace).
std::string SmallTrace(bool unlaunched) {
  std::string s = R"json({"distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 4}, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 50, "dur": 900},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 10, "tid": 10, "ts": 100, "dur": 50,
     "args": {"Collective name": "_allgather_base", "In msg nelems": 1024, "dtype": "BFloat16", "Seq": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 110, "dur": 10,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "pid": 0, "tid": 7, "ts": 200, "dur": 30, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 10, "tid": 10, "ts": 300, "dur": 50,
     "args": {"Collective name": "allreduce", "In msg nelems": 10, "dtype": "Float", "Seq": 8}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 10, "tid": 10, "ts": 305, "dur": 40,
     "args": {"Input Dims": [[2, 5]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 310, "dur": 10,
     "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel",
     "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "pid": 0, "tid": 7, "ts": 400, "dur": 30, "args": {"device": 0, "stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 500, "dur": 10,
     "args": {"correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 520, "dur": 30,
     "args": {"device": 0, "stream": 7, "correlation": 3}})json";
  if (unlaunched)
    s += R"json(,
    {"ph": "X", "cat": "kernel",
     "name": "ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16(ncclDevComm*, unsigned long, ncclWork*)",
     "pid": 0, "tid": 8, "ts": 600, "dur": 30, "args": {"device": 0, "stream": 8, "correlation": 99}})json";
  return s + "]}";
}

TEST(KinetoComms, RecordSeqAndNames) {
  auto t = importers::ParseKinetoTrace(SmallTrace(false));
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::vector<Coll> rows = Rows(*t, 3);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "nccl:_all_gather_base");  // record_param_comms' name, c10d's spelling
  EXPECT_EQ(rows[0].seq, 7u);
  EXPECT_EQ(rows[0].bytes, 2048);
  EXPECT_EQ(rows[0].ts, 200'000);
  EXPECT_EQ(rows[0].dur, 30'000);
  EXPECT_EQ(rows[1].name, "nccl:all_reduce");  // the title
  EXPECT_EQ(rows[1].seq, 8u);
  EXPECT_EQ(rows[1].bytes, 40);  // the record's (10 floats), the title's shapes agreeing
}

TEST(KinetoComms, KernelWithoutLaunch) {
  auto t = importers::ParseKinetoTrace(SmallTrace(true));
  ASSERT_TRUE(t.ok()) << t.status().message();
  // Rows(): all three in the host process (pid 10), though the third has no launch.
  std::vector<Coll> rows = Rows(*t, 3);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(t->processes[t->collectives.process[0]].pid, 10);
  EXPECT_EQ(rows[2].name, "nccl:reduce_scatter");  // from the kernel's name
  EXPECT_EQ(rows[2].bytes, 0);
  EXPECT_EQ(rows[2].tensors, 1u);
  // One row without a "Seq": the process's rows are numbered in issue order.
  EXPECT_EQ(rows[0].seq, 0u);
  EXPECT_EQ(rows[1].seq, 1u);
  EXPECT_EQ(rows[2].seq, 2u);
  EXPECT_EQ(rows[0].name, "nccl:_all_gather_base");
}

}  // namespace
}  // namespace strata

// strata export: the Perfetto protobuf output read back with the schema (our
// generated subset here, and Perfetto's full schema through its Python
// package when installed), Chrome JSON and SQLite, on a shared real trace, the
// small hand-written one and a recorded C program (OS level only). Every event
// of the model must come out. tests/matrix checks every output on every kind
// of trace; these tests pin the details.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "exporters/export.h"
#include "exporters/perfetto_trace.pb.h"
#include "tests/testing.h"

namespace strata {
namespace {

std::string ReadAll(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Arrows between two slices, each pair once: launches, forward -> backward, the source's flows.
uint64_t Flows(const model::Trace& t) {
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (size_t r = 0; r < t.device.size(); ++r)
    if (t.device.launch[r] >= 0) pairs.insert({t.device.launch[r], static_cast<int32_t>(t.device.slice[r])});
  for (size_t r = 0; r < t.ops.size(); ++r)
    if (t.ops.forward[r] >= 0) pairs.insert({t.ops.forward[r], static_cast<int32_t>(t.ops.slice[r])});
  for (size_t f = 0; f < t.flows.size(); ++f)
    if (t.flows.from[f] >= 0 && t.flows.to[f] >= 0) pairs.insert({t.flows.from[f], t.flows.to[f]});
  return pairs.size();
}

uint64_t Running(const model::Trace& t) {
  uint64_t n = 0;
  for (auto s : t.thread_states.state) n += s == model::ThreadState::kRunning;
  return n;
}

// Checks the Perfetto file against the model: one BEGIN and one END per slice
// and system call, ENDs closing the innermost open slice of their track,
// timestamps in order, one flow per pair of linked slices, every track
// described; one sched_switch putting a thread on a CPU per running interval;
// one perf sample per CPU sample, its callstack interned.
void CheckPerfetto(const model::Trace& t, const std::string& path) {
  strata::perfetto::Trace tr;
  ASSERT_TRUE(tr.ParseFromString(ReadAll(path))) << "not a Perfetto trace";
  std::map<uint64_t, std::vector<uint64_t>> open;  // track -> begin timestamps
  std::set<uint64_t> described;
  uint64_t begins = 0, ends = 0, instants = 0, counters = 0, flows_out = 0, flows_in = 0, last_ts = 0;
  uint64_t switched_in = 0, samples = 0, unresolved = 0;
  std::map<uint64_t, std::string> names;
  std::set<uint64_t> callstacks;
  uint64_t named_begins = 0;
  for (const auto& p : tr.packet()) {
    for (const auto& c : p.interned_data().callstacks()) callstacks.insert(c.iid());
    if (p.has_track_descriptor()) {
      described.insert(p.track_descriptor().uuid());
      continue;
    }
    if (p.has_ftrace_events()) {
      for (const auto& ev : p.ftrace_events().event())
        if (ev.has_sched_switch()) switched_in += ev.sched_switch().next_pid() != 0;
      continue;
    }
    if (p.has_perf_sample()) {
      ++samples;
      if (p.perf_sample().has_callstack_iid()) unresolved += !callstacks.count(p.perf_sample().callstack_iid());
      continue;
    }
    if (p.has_system_info() || p.has_trace_attributes()) continue;
    ASSERT_TRUE(p.has_track_event());
    const auto& e = p.track_event();
    ASSERT_TRUE(described.count(e.track_uuid())) << "event on an undescribed track";
    EXPECT_GE(p.timestamp(), last_ts) << "packets in time order";
    last_ts = p.timestamp();
    for (const auto& n : p.interned_data().event_names()) names[n.iid()] = n.name();
    switch (e.type()) {
      case strata::perfetto::TrackEvent::TYPE_SLICE_BEGIN:
        ++begins;
        named_begins += names.count(e.name_iid());
        open[e.track_uuid()].push_back(p.timestamp());
        break;
      case strata::perfetto::TrackEvent::TYPE_SLICE_END:
        ++ends;
        ASSERT_FALSE(open[e.track_uuid()].empty()) << "END without BEGIN";
        EXPECT_LE(open[e.track_uuid()].back(), p.timestamp());
        open[e.track_uuid()].pop_back();
        break;
      case strata::perfetto::TrackEvent::TYPE_INSTANT: ++instants; break;
      case strata::perfetto::TrackEvent::TYPE_COUNTER: ++counters; break;
      default: ADD_FAILURE() << "unexpected event type";
    }
    flows_out += static_cast<uint64_t>(e.flow_ids_size());
    flows_in += static_cast<uint64_t>(e.terminating_flow_ids_size());
  }
  EXPECT_EQ(begins, t.slices.size() + t.syscalls.size());
  EXPECT_EQ(ends, begins);
  EXPECT_EQ(named_begins, begins) << "every slice name interned";
  for (auto& [trk, stack] : open) EXPECT_TRUE(stack.empty()) << "track " << trk << " left open";
  EXPECT_EQ(instants, t.instants.size());
  EXPECT_EQ(counters, t.counters.size() + t.memory.size());
  EXPECT_EQ(flows_out, Flows(t));
  EXPECT_EQ(flows_in, flows_out);
  EXPECT_EQ(switched_in, Running(t));
  EXPECT_EQ(samples, t.cpu_samples.size());
  EXPECT_EQ(unresolved, 0u);
}

TEST(Export, PerfettoKeepsEveryEventOfASharedTrace) {
  std::string data = testing::ExternalDataDir();
  if (data.empty()) GTEST_SKIP() << "shared/data/external is not next to the checkout";
  std::string in = data + "/hta/nccl_parser_config/nccl_data.json.gz";
  std::string out = testing::TempDir("export-nccl") + ".perfetto-trace";
  auto r = testing::RunCommand({testing::StrataBin(), "export", in, "--format", "perfetto", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  model::Trace t = testing::Load(in);
  CheckPerfetto(t, out);

  // With Perfetto's own (full) schema, when its Python package is there.
  auto py = testing::RunCommand({"python3", testing::SourceDir() + "/tests/perfetto_check.py", out});
  if (py.exit_code == 3) GTEST_SKIP() << "Perfetto's Python package is not installed: " << py.err;
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto j = nlohmann::json::parse(py.out);
  EXPECT_EQ(j["counts"]["TYPE_SLICE_BEGIN"].get<uint64_t>(), t.slices.size());
  EXPECT_EQ(j["counts"]["TYPE_SLICE_END"].get<uint64_t>(), t.slices.size());
  EXPECT_EQ(j["flows_out"].get<uint64_t>(), Flows(t));
  EXPECT_EQ(j["bad_nesting"].get<int>(), 0);
  EXPECT_EQ(j["unclosed"].get<int>(), 0);
  EXPECT_EQ(j["out_of_order"].get<int>(), 0);
}

TEST(Export, PerfettoOverlappingSlicesGetLanes) {
  auto t = testing::Load(testing::SourceDir() + "/tests/data/kineto/small_trace.json");
  // Two slices that overlap without nesting on one thread.
  std::string out = testing::TempDir("export-small") + ".perfetto-trace";
  auto st = exporters::ExportPerfetto(t, out);
  ASSERT_TRUE(st.ok()) << st.status().message();
  CheckPerfetto(t, out);
  model::Trace o;
  o.processes.push_back({});
  o.tracks.push_back({});
  auto n = o.strings.Intern("x");
  o.slices.Add(0, 100, 0, n, model::SliceKind::kSpan);
  o.slices.Add(50, 100, 0, n, model::SliceKind::kSpan);
  o.slices.Add(60, 10, 0, n, model::SliceKind::kSpan);
  o.Finalize();
  auto st2 = exporters::ExportPerfetto(o, out);
  ASSERT_TRUE(st2.ok());
  EXPECT_EQ(st2->extra_lanes, 1u);
  CheckPerfetto(o, out);
}

// CUDA queues are tracks whose id is context << 32 | stream (as the CUPTI
// importer makes them). Chrome JSON readers keep tids in 32 bits (Perfetto reads
// a larger one as 0): found on an H100 trace, where every CUDA stream and its
// synchronization lane came out as tid 2^33 + n.
TEST(Export, ChromeJsonDeviceQueuesGetThirtyTwoBitTids) {
  model::Trace t;
  t.processes.push_back({});
  t.tracks.push_back({model::TrackKind::kThread, 0, 4242});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, (int64_t{2} << 32) | 7, 0, 0});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, (int64_t{2} << 32) | 8, 0, 0});
  auto k = t.strings.Intern("kernel");
  t.slices.Add(0, 100, 0, t.strings.Intern("cudaLaunchKernel"), model::SliceKind::kRuntime);
  t.slices.Add(150, 100, 1, k, model::SliceKind::kKernel);
  t.slices.Add(160, 100, 2, k, model::SliceKind::kKernel);
  t.slices.Add(250, 50, 2, k, model::SliceKind::kKernel);  // overlaps without nesting: a second lane
  t.Finalize();
  std::string out = testing::TempDir("export-cuda-queues") + ".json";
  ASSERT_TRUE(exporters::ExportChromeJson(t, out).ok());
  auto j = nlohmann::json::parse(ReadAll(out));
  std::set<int64_t> kernel_tids;
  for (const auto& e : j["traceEvents"]) {
    if (!e.contains("tid")) continue;
    int64_t tid = e["tid"].get<int64_t>();
    EXPECT_GE(tid, 0);
    EXPECT_LT(tid, int64_t{1} << 32) << e.dump();
    if (e.value("ph", "") == "X" && e.value("name", "") == "kernel") kernel_tids.insert(tid);
  }
  EXPECT_EQ(kernel_tids.size(), 3u);  // two queues, one of them with an overlapping lane
}

TEST(Export, ChromeJsonAndSqlite) {
  std::string in = testing::SourceDir() + "/tests/data/kineto/small_trace.json";
  model::Trace t = testing::Load(in);
  std::string dir = testing::TempDir("export-formats");
  std::string json_out = dir + ".json", db = dir + ".sqlite";
  auto r = testing::RunCommand({testing::StrataBin(), "export", in, "-f", "chrome-json", "-o", json_out, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(ReadAll(json_out));
  std::map<std::string, size_t> ph;
  for (const auto& e : j["traceEvents"]) ph[e["ph"].get<std::string>()]++;
  EXPECT_EQ(ph["X"], t.slices.size());
  EXPECT_EQ(ph["i"], t.instants.size());
  EXPECT_EQ(ph["C"], t.counters.size() + t.memory.size());
  EXPECT_EQ(ph["s"], Flows(t));
  EXPECT_EQ(ph["f"], ph["s"]);
  // The export reads back as the same trace.
  model::Trace back = testing::Load(json_out);
  EXPECT_EQ(back.slices.size(), t.slices.size());
  EXPECT_EQ(back.slices.ts, t.slices.ts);

  r = testing::RunCommand({testing::StrataBin(), "export", in, "-f", "sqlite", "-o", db, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  auto scalar = [h](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(h, sql, -1, &s, nullptr), SQLITE_OK) << sql;
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(scalar("SELECT count(*) FROM slices"), static_cast<int64_t>(t.slices.size()));
  EXPECT_EQ(scalar("SELECT count(*) FROM device_activity"), static_cast<int64_t>(t.device.size()));
  EXPECT_EQ(scalar("SELECT count(*) FROM kernels"), 4);
  EXPECT_EQ(scalar("SELECT sum(dur) FROM kernels WHERE name = 'gemm_kernel'"), 100000);
  EXPECT_EQ(scalar("SELECT count(*) FROM launches WHERE api = 'cudaLaunchKernel'"), 4);
  EXPECT_EQ(scalar("SELECT bytes FROM transfers WHERE copy_kind = 'HtoD'"), 500000);
  EXPECT_EQ(scalar("SELECT count(*) FROM memory"), 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM args WHERE key = 'External id'"), 9);
  sqlite3_close(h);
}

// A strata recording of a plain C program has no slice at all: its levels are
// the OS's. Chrome JSON crashed on it (a CPU track belongs to no process) and
// left NAME.chrome.json.tmp; Perfetto and SQLite held none of its samples or
// context switches.
TEST(Export, PlainProgramKeepsItsOsLevelInEveryFormat) {
  std::string dir = testing::TempDir("export-plain");
  ASSERT_EQ(testing::Record(dir, {testing::TestProgram("plain_c"), "8", "2"}).exit_code, 0);
  model::Trace t = testing::Load(dir);
  ASSERT_GT(t.cpu_samples.size(), 0u) << "no CPU samples recorded";
  ASSERT_GT(Running(t), 0u) << "no context switches recorded";
  std::string out = dir + "/out";
  std::filesystem::create_directories(out);

  auto r = testing::RunCommand({testing::StrataBin(), "export", dir, "-f", "chrome-json", "-o", out + "/t.json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& e : std::filesystem::directory_iterator(out))
    EXPECT_NE(e.path().extension(), ".tmp") << "left behind: " << e.path();
  auto j = nlohmann::json::parse(ReadAll(out + "/t.json"));
  EXPECT_EQ(j["samples"].size(), t.cpu_samples.size());
  size_t running = 0, states = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "thread_state") {
      ++states;
      running += e["name"] == "running";
    }
  EXPECT_EQ(states, t.thread_states.size());
  EXPECT_EQ(running, Running(t));
  for (const auto& s : j["samples"])
    if (s.contains("sf")) {
      EXPECT_TRUE(j["stackFrames"].contains(s["sf"].get<std::string>()));
    }

  r = testing::RunCommand({testing::StrataBin(), "export", dir, "-f", "perfetto", "-o", out + "/t.pftrace", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CheckPerfetto(t, out + "/t.pftrace");

  r = testing::RunCommand({testing::StrataBin(), "export", dir, "-f", "sqlite", "-o", out + "/t.sqlite", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(std::string(out + "/t.sqlite").c_str(), &h), SQLITE_OK);
  auto scalar = [h](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(h, sql, -1, &s, nullptr), SQLITE_OK) << sql;
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(scalar("SELECT count(*) FROM cpu_samples"), static_cast<int64_t>(t.cpu_samples.size()));
  EXPECT_EQ(scalar("SELECT count(*) FROM context_switches"), static_cast<int64_t>(Running(t)));
  EXPECT_EQ(scalar("SELECT count(*) FROM thread_states"), static_cast<int64_t>(t.thread_states.size()));
  // The innermost frame of each sample: worker, or hash_buffer where it is not inlined (-O0).
  EXPECT_GT(scalar("SELECT count(*) FROM sample_frames WHERE module = 'plain_c' AND function IN ('worker', 'hash_buffer')"), 0)
      << "the program's own functions";
  EXPECT_GT(scalar("SELECT count(*) FROM not_recorded"), 0);
  sqlite3_close(h);
}

// A failed export leaves nothing: not the output, not its .tmp.
TEST(Export, FailureLeavesNoTemporaryFile) {
  std::string in = testing::SourceDir() + "/tests/data/kineto/small_trace.json";
  std::string dir = testing::TempDir("export-fail");
  std::filesystem::create_directories(dir + "/out.json");  // the output path is a directory: rename fails
  for (const char* f : {"chrome-json", "perfetto", "sqlite"}) {
    auto r = testing::RunCommand({testing::StrataBin(), "export", in, "-f", f, "-o", dir + "/out.json", "-q"});
    EXPECT_NE(r.exit_code, 0) << f;
    EXPECT_FALSE(std::filesystem::exists(dir + "/out.json.tmp")) << f;
  }
}

TEST(Export, BadArgumentsAreOneLineErrors) {
  std::string in = testing::SourceDir() + "/tests/data/kineto/small_trace.json";
  auto r = testing::RunCommand({testing::StrataBin(), "export", in, "-f", "pdf", "-o", "/tmp/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown export format"), std::string::npos) << r.err;
  r = testing::RunCommand({testing::StrataBin(), "export", in, "-o", "/nonexistent-dir/x.pftrace"});
  EXPECT_EQ(r.exit_code, 4);  // the output cannot be written
  EXPECT_NE(r.err.find("strata: "), std::string::npos);
}

}  // namespace
}  // namespace strata

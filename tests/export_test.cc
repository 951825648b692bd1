// strata export: the Perfetto protobuf output read back with the schema (our
// generated subset here, and Perfetto's full schema through its Python
// package when installed), Chrome JSON and SQLite, on a shared real trace and
// the small hand-written one. Every event of the model must come out.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
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

uint64_t LaunchLinks(const model::Trace& t) {
  uint64_t n = 0;
  for (int32_t l : t.device.launch) n += l >= 0;
  return n;
}

// Checks the Perfetto file against the model: one BEGIN and one END per slice,
// ENDs closing the innermost open slice of their track, timestamps in order,
// one flow per launch link and per model flow, every track described.
void CheckPerfetto(const model::Trace& t, const std::string& path) {
  strata::perfetto::Trace tr;
  ASSERT_TRUE(tr.ParseFromString(ReadAll(path))) << "not a Perfetto trace";
  std::map<uint64_t, std::vector<uint64_t>> open;  // track -> begin timestamps
  std::set<uint64_t> described;
  uint64_t begins = 0, ends = 0, instants = 0, counters = 0, flows_out = 0, flows_in = 0, last_ts = 0;
  std::map<uint64_t, std::string> names;
  uint64_t named_begins = 0;
  for (const auto& p : tr.packet()) {
    if (p.has_track_descriptor()) {
      described.insert(p.track_descriptor().uuid());
      continue;
    }
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
  EXPECT_EQ(begins, t.slices.size());
  EXPECT_EQ(ends, t.slices.size());
  EXPECT_EQ(named_begins, begins) << "every slice name interned";
  for (auto& [trk, stack] : open) EXPECT_TRUE(stack.empty()) << "track " << trk << " left open";
  EXPECT_EQ(instants, t.instants.size());
  EXPECT_EQ(counters, t.counters.size() + t.memory.size());
  EXPECT_EQ(flows_out, LaunchLinks(t) + t.flows.size());
  EXPECT_EQ(flows_in, flows_out);
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
  EXPECT_EQ(j["flows_out"].get<uint64_t>(), LaunchLinks(t) + t.flows.size());
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
  EXPECT_EQ(ph["s"], LaunchLinks(t) + t.flows.size());
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

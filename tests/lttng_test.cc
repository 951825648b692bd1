// The LTTng importer (importers/lttng): the shared LTTng traces load with
// babeltrace2's own event counts, their losses are said, and traces written
// here with known answers give the thread states, system calls, interrupts
// and user-space slices they should, in the report too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "analysis/os.h"
#include "base/files.h"
#include "importers/load.h"
#include "importers/lttng/lttng.h"
#include "report/report.h"
#include "tests/lttng_synth.h"
#include "tests/testing.h"

namespace strata {
namespace {

namespace synth = testing::lttng_synth;

#define REQUIRE_LTTNG()                                                                   \
  do {                                                                                    \
    if (!importers::LttngImportAvailable()) GTEST_SKIP() << "built without libbabeltrace2"; \
  } while (0)

std::string SharedTrace(const std::string& rel) {
  std::string ext = testing::ExternalDataDir();
  std::string d = ext.empty() ? "" : ext + "/babeltrace/" + rel;
  return !d.empty() && IsDirectory(d) ? d : "";
}

bool HaveBabeltraceCli() { return std::system("command -v babeltrace2 >/dev/null 2>&1") == 0; }

// Output lines of `babeltrace2 DIR` (one per event), and the events its
// "Tracer discarded N events" warnings (stderr) add up to.
struct BtCount {
  uint64_t lines = 0, discarded = 0;
};
BtCount Babeltrace(const std::string& dir) {
  BtCount c;
  std::string cmd = "babeltrace2 '" + dir + "' 2>&1 >/dev/null | grep -o 'Tracer discarded [0-9]*' | awk '{s+=$3} END {print s+0}'";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    unsigned long long n = 0;
    if (std::fscanf(p, "%llu", &n) == 1) c.discarded = n;
    ::pclose(p);
  }
  cmd = "babeltrace2 '" + dir + "' 2>/dev/null | wc -l";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    unsigned long long n = 0;
    if (std::fscanf(p, "%llu", &n) == 1) c.lines = n;
    ::pclose(p);
  }
  return c;
}

// Rows of the thread-state table are sorted by (track, ts), never overlap on a
// track, and lie within the trace; on-CPU time of a thread is at most the wall time.
void ExpectSaneOs(const model::Trace& t) {
  const auto& st = t.thread_states;
  int64_t wall = t.end_ns() - t.start_ns();
  std::map<uint32_t, int64_t> on_cpu;
  for (size_t i = 0; i < st.size(); ++i) {
    ASSERT_GT(st.dur[i], 0) << i;
    EXPECT_GE(st.ts[i], t.start_ns()) << i;
    EXPECT_LE(st.ts[i] + st.dur[i], t.end_ns()) << i;
    if (i > 0 && st.track[i] == st.track[i - 1]) {
      EXPECT_GE(st.ts[i], st.ts[i - 1] + st.dur[i - 1]) << i;
    }
    if (i > 0) {
      EXPECT_LE(st.track[i - 1], st.track[i]);
    }
    if (st.state[i] == model::ThreadState::kRunning) on_cpu[st.track[i]] += st.dur[i];
  }
  for (auto& [trk, ns] : on_cpu) {
    EXPECT_LE(ns, wall) << t.strings.Get(t.tracks[trk].name);
  }
}

// ---- the shared traces ----

struct Shared {
  const char* rel;
  uint64_t events;  // babeltrace2's count (checked against the CLI when installed)
};

TEST(LttngShared, EventCountsEqualBabeltrace2) {
  REQUIRE_LTTNG();
  const Shared kTraces[] = {{"multi-domains", 4272},
                            {"multi-domains/kernel", 272},
                            {"multi-domains/ust", 4000},
                            {"lttng-tracefile-rotation/kernel", 12305}};
  size_t found = 0;
  for (const Shared& s : kTraces) {
    std::string dir = SharedTrace(s.rel);
    if (dir.empty()) continue;
    ++found;
    SCOPED_TRACE(s.rel);
    EXPECT_EQ(importers::DetectFormat(dir), importers::TraceFormat::kLttng);
    auto t = importers::LoadTrace(dir);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->source, "lttng");
    EXPECT_EQ(t->events_read, s.events);
    if (HaveBabeltraceCli()) {
      EXPECT_EQ(t->events_read, Babeltrace(dir).lines);
    }
    uint64_t on_tracks = 0;
    for (const auto& trk : t->tracks) on_tracks += trk.events;
    EXPECT_EQ(on_tracks, t->events_read) << "every event is counted on the track it landed on";
  }
  if (!found) GTEST_SKIP() << "the shared LTTng traces are absent (../shared/data/external/babeltrace)";
}

TEST(LttngShared, KernelSchedTraceHasThreadStates) {
  REQUIRE_LTTNG();
  std::string dir = SharedTrace("lttng-tracefile-rotation/kernel");
  if (dir.empty()) GTEST_SKIP() << "shared trace absent";
  auto t = importers::LoadTrace(dir);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_GT(t->thread_states.size(), 1000u);
  ExpectSaneOs(*t);
  std::set<model::ThreadState> states(t->thread_states.state.begin(), t->thread_states.state.end());
  EXPECT_TRUE(states.count(model::ThreadState::kRunning));
  EXPECT_TRUE(states.count(model::ThreadState::kRunnable));
  EXPECT_TRUE(states.count(model::ThreadState::kSleeping));
  // Threads are named by their comm; lttng-consumerd wakes up all along.
  bool consumerd = false;
  for (const auto& trk : t->tracks) consumerd |= t->strings.Get(trk.name) == "lttng-consumerd";
  EXPECT_TRUE(consumerd);
  // Wakers come from sched_waking/sched_wakeup.
  size_t woken = 0;
  for (int32_t w : t->thread_states.waker) woken += w >= 0;
  EXPECT_GT(woken, 100u);
  report::ReportOptions opt;
  std::string text = report::Report(*t, opt).Text();
  EXPECT_NE(text.find("OS: threads"), std::string::npos) << text;
  EXPECT_NE(text.find("lttng-consumerd"), std::string::npos);
}

TEST(LttngShared, DiscardedEventsAreCountedWithTheirPlace) {
  REQUIRE_LTTNG();
  std::string dir = SharedTrace("multi-domains");
  if (dir.empty()) GTEST_SKIP() << "shared trace absent";
  auto t = importers::LoadTrace(dir);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->events_lost, 728u);
  if (HaveBabeltraceCli()) {
    EXPECT_EQ(t->events_lost, Babeltrace(dir).discarded);
  }
  // Where: the stream, its CPU and the time range, in a warning; the CPU's track counts them.
  bool said = false;
  for (const auto& w : t->warnings)
    said |= w.find("discarded 728 events") != std::string::npos && w.find("kernel_channel_0") != std::string::npos &&
            w.find("CPU 0") != std::string::npos && w.find(" between ") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(t->warnings);
  uint64_t lost_on_cpu0 = 0;
  for (const auto& trk : t->tracks)
    if (trk.kind == model::TrackKind::kCpu && trk.tid == 0) lost_on_cpu0 += trk.lost;
  EXPECT_EQ(lost_on_cpu0, 728u);
  // Kernel and user-space traces of the session in one model, in time order.
  EXPECT_EQ(testing::CountSlices(*t, "sample_component:message"), 4000u);
  EXPECT_EQ(t->instants.size() >= 272u, true);
}

// ---- traces with known answers ----

class LttngSynth : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!importers::LttngImportAvailable()) GTEST_SKIP() << "built without libbabeltrace2";
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ + "/kernel");
    std::filesystem::create_directories(dir_ + "/ust/uid/1000/64-bit");
    synth::WriteTrace(dir_ + "/kernel", synth::KernelTrace());
    synth::WriteTrace(dir_ + "/ust/uid/1000/64-bit", synth::UserTrace());
  }
  static int64_t At(int64_t ns) { return synth::kOriginS * 1000000000 + ns; }
  static int32_t TrackOf(const model::Trace& t, int64_t tid) {
    for (uint32_t i = 0; i < t.tracks.size(); ++i)
      if (t.tracks[i].kind == model::TrackKind::kThread && t.tracks[i].tid == tid) return static_cast<int32_t>(i);
    return -1;
  }
  std::string dir_;
};

TEST_F(LttngSynth, KernelThreadStatesAndSyscalls) {
  auto r = importers::LoadTrace(dir_ + "/kernel");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const model::Trace& t = *r;
  EXPECT_EQ(t.events_read, 18u);
  if (HaveBabeltraceCli()) {
    EXPECT_EQ(t.events_read, Babeltrace(dir_ + "/kernel").lines);
  }
  ExpectSaneOs(t);
  int32_t app = TrackOf(t, 100), worker = TrackOf(t, 101), child = TrackOf(t, 102);
  ASSERT_GE(app, 0);
  ASSERT_GE(worker, 0);
  ASSERT_GE(child, 0);
  EXPECT_EQ(t.strings.Get(t.tracks[static_cast<size_t>(app)].name), "app");
  // 102 is a thread of process 100 (sched_process_fork).
  EXPECT_EQ(t.tracks[static_cast<size_t>(child)].process, t.tracks[static_cast<size_t>(app)].process);
  EXPECT_EQ(t.processes[t.tracks[static_cast<size_t>(app)].process].pid, 100);

  std::map<std::pair<int32_t, model::ThreadState>, int64_t> time;
  const auto& st = t.thread_states;
  int32_t read_row_off_cpu = -1;
  int32_t waker = -1;
  for (size_t i = 0; i < st.size(); ++i) {
    time[{static_cast<int32_t>(st.track[i]), st.state[i]}] += st.dur[i];
    if (static_cast<int32_t>(st.track[i]) == app && st.state[i] == model::ThreadState::kSleeping) {
      EXPECT_EQ(st.ts[i], At(7000));
      EXPECT_EQ(st.dur[i], 3000);
      read_row_off_cpu = st.syscall[i];
      waker = st.waker[i];
    }
  }
  EXPECT_EQ((time[{app, model::ThreadState::kRunning}]), 8000);  // 1000-7000, 10000-12000
  EXPECT_EQ((time[{worker, model::ThreadState::kRunning}]), 3000);
  EXPECT_EQ((time[{child, model::ThreadState::kRunning}]), 6500);  // 20000-21000 lies across the loss: unknown
  EXPECT_EQ((time[{child, model::ThreadState::kRunnable}]), 1500);  // forked at 1500, on CPU at 3000
  EXPECT_GT((time[{child, model::ThreadState::kUnknown}]), 0);
  EXPECT_EQ(waker, worker);

  // System calls: every exit matched, with durations and return values.
  const auto& sc = t.syscalls;
  ASSERT_EQ(sc.size(), 3u);
  std::map<std::string, std::vector<size_t>> by_name;
  for (size_t i = 0; i < sc.size(); ++i) {
    by_name[std::string(t.strings.Get(sc.name[i]))].push_back(i);
    EXPECT_EQ(sc.returned[i], 1) << i;
  }
  ASSERT_EQ(by_name["read"].size(), 2u);
  size_t r0 = by_name["read"][0], r1 = by_name["read"][1];
  EXPECT_EQ(sc.dur[r0], 3000);
  EXPECT_EQ(sc.ret[r0], 42);
  EXPECT_EQ(sc.dur[r1], 5000);
  EXPECT_EQ(sc.ret[r1], 7);
  EXPECT_EQ(read_row_off_cpu, static_cast<int32_t>(r1)) << "app slept inside its second read";
  ASSERT_EQ(by_name["close"].size(), 1u);
  EXPECT_EQ(sc.dur[by_name["close"][0]], 500);
  EXPECT_EQ(sc.track[by_name["close"][0]], static_cast<uint32_t>(child));
  for (const auto& w : t.warnings) {
    EXPECT_EQ(w.find("without their entry"), std::string::npos) << w;
  }

  // The interrupt is a slice on CPU 0's track.
  ASSERT_EQ(testing::CountSlices(t, "irq:eth0"), 1u);
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.strings.Get(t.slices.name[i]) == "irq:eth0") {
      const model::Track& trk = t.tracks[t.slices.track[i]];
      EXPECT_EQ(trk.kind, model::TrackKind::kCpu);
      EXPECT_EQ(trk.tid, 0);
      EXPECT_EQ(t.slices.ts[i], At(8000));
      EXPECT_EQ(t.slices.dur[i], 500);
    }

  // The 3 discarded events: counted, placed on CPU 1.
  EXPECT_EQ(t.events_lost, 3u);
  if (HaveBabeltraceCli()) {
    EXPECT_EQ(Babeltrace(dir_ + "/kernel").discarded, 3u);
  }
  bool said = false;
  for (const auto& w : t.warnings) said |= w.find("discarded 3 events in stream chan_1") != std::string::npos &&
                                           w.find("(CPU 1)") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(t.warnings);

  // The report: the OS threads and system-call sections, and the loss.
  report::ReportOptions opt;
  std::string text = report::Report(t, opt).Text();
  EXPECT_NE(text.find("OS: threads"), std::string::npos) << text;
  EXPECT_NE(text.find("app"), std::string::npos);
  EXPECT_NE(text.find("read"), std::string::npos);
  EXPECT_NE(text.find("dropped 3 records"), std::string::npos) << text;
  analysis::OsSummary os = analysis::AnalyzeOs(t);
  ASSERT_FALSE(os.syscalls.empty());
  EXPECT_EQ(os.syscalls[0].name, "read");
  EXPECT_EQ(os.syscalls[0].count, 2u);
  EXPECT_EQ(os.syscalls[0].total_ns, 8000);
}

TEST_F(LttngSynth, UserSpaceSlicesInstantsAndArgs) {
  auto r = importers::LoadTrace(dir_ + "/ust");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const model::Trace& t = *r;
  EXPECT_EQ(t.events_read, 11u);
  if (HaveBabeltraceCli()) {
    EXPECT_EQ(t.events_read, Babeltrace(dir_ + "/ust").lines);
  }
  int32_t main = TrackOf(t, 200), other = TrackOf(t, 201);
  ASSERT_GE(main, 0);
  ASSERT_GE(other, 0);
  EXPECT_EQ(t.processes[t.tracks[static_cast<size_t>(other)].process].pid, 200);
  auto slice = [&](const std::string& name) -> int32_t {
    for (size_t i = 0; i < t.slices.size(); ++i)
      if (t.strings.Get(t.slices.name[i]) == name) return static_cast<int32_t>(i);
    return -1;
  };
  int32_t outer = slice("myapp+0x1000"), req = slice("myapp:request"), inner = slice("myapp+0x2000");
  int32_t anon = slice("0x7fff0000"), tick = slice("myapp:tick");
  ASSERT_GE(outer, 0);
  ASSERT_GE(req, 0);
  ASSERT_GE(inner, 0);
  ASSERT_GE(anon, 0);
  ASSERT_GE(tick, 0);
  EXPECT_EQ(t.slices.dur[static_cast<size_t>(outer)], 7000);
  EXPECT_EQ(t.slices.depth[static_cast<size_t>(outer)], 0);
  EXPECT_EQ(t.slices.dur[static_cast<size_t>(req)], 4000);
  EXPECT_EQ(t.slices.parent[static_cast<size_t>(req)], outer);
  EXPECT_EQ(t.slices.parent[static_cast<size_t>(inner)], req);
  EXPECT_EQ(t.slices.dur[static_cast<size_t>(anon)], 1000);
  EXPECT_EQ(t.slices.track[static_cast<size_t>(anon)], static_cast<uint32_t>(other));
  EXPECT_EQ(t.slices.dur[static_cast<size_t>(tick)], 0);
  // Payload fields as args.
  auto arg = [&](int32_t s, const char* key) { return t.FindArg(static_cast<uint32_t>(s), t.strings.Find(key)); };
  int32_t id = arg(req, "id"), path = arg(req, "path"), n = arg(tick, "n");
  ASSERT_GE(id, 0);
  ASSERT_GE(path, 0);
  ASSERT_GE(n, 0);
  EXPECT_EQ(t.args.num[static_cast<size_t>(id)], 7.0);
  EXPECT_EQ(t.strings.Get(t.args.str[static_cast<size_t>(path)]), "/index");
  EXPECT_EQ(t.args.num[static_cast<size_t>(n)], 3.0);
  // tracef: an instant named by its message, on the thread.
  ASSERT_EQ(t.instants.size(), 1u);
  EXPECT_EQ(t.strings.Get(t.instants.name[0]), "hello 1");
  EXPECT_EQ(t.instants.ts[0], At(104000));
  EXPECT_EQ(t.instants.track[0], static_cast<uint32_t>(main));
}

TEST_F(LttngSynth, SessionDirectoryLoadsAsOneTrace) {
  EXPECT_EQ(importers::DetectFormat(dir_), importers::TraceFormat::kLttng);
  auto t = importers::LoadTrace(dir_);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->events_read, 29u);
  if (HaveBabeltraceCli()) {
    EXPECT_EQ(t->events_read, Babeltrace(dir_).lines);
  }
  EXPECT_EQ(importers::FindCtfTraceDirs(dir_).size(), 2u);
  EXPECT_GT(t->syscalls.size(), 0u);
  EXPECT_GE(testing::CountSlices(*t, "myapp:request"), 1u);
  // The CLI's report over the session.
  testing::RunResult r = testing::RunCommand({testing::StrataBin(), "report", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("OS: threads"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OS: system calls"), std::string::npos) << r.out;
}

TEST(LttngDetect, OnlyLttngTracesRouteHere) {
  std::string d = testing::TempDir("lttng_detect");
  std::filesystem::create_directories(d + "/ctf");
  // strata's own layout: ctf/metadata, tracer "strata".
  synth::WriteFile(d + "/ctf/metadata", "/* CTF 1.8 */\nenv { domain = \"strata\"; tracer_name = \"strata\"; };\n");
  EXPECT_EQ(importers::DetectFormat(d), importers::TraceFormat::kStrata);
  std::string other = testing::TempDir("lttng_detect_other");
  std::filesystem::create_directories(other);
  synth::WriteFile(other + "/metadata", "/* CTF 1.8 */\nenv { tracer_name = \"barectf\"; };\n");
  EXPECT_FALSE(importers::IsLttngTraceDir(other));
  EXPECT_EQ(importers::DetectFormat(other), importers::TraceFormat::kUnknown);
}

TEST(LttngDetect, DamagedTraceIsAnErrorNotACrash) {
  REQUIRE_LTTNG();
  std::string d = testing::TempDir("lttng_damaged");
  std::filesystem::create_directories(d);
  auto files = synth::KernelTrace();
  synth::WriteFile(d + "/metadata", files["metadata"].substr(0, files["metadata"].size() / 2));
  synth::WriteFile(d + "/chan_0", files["chan_0"]);
  auto t = importers::LoadTrace(d);
  EXPECT_FALSE(t.ok());
}

// The synthetic user-space trace with metadata whose events take no bits (no
// header, no context, one event class of no fields: what a fuzzer made of a
// real trace), written to a fresh directory `name`; `tracer_major` is the
// LTTng-UST major version the trace says. Returns the directory ("" if the
// metadata did not have the lines cut).
std::string NoSizeEvents(const char* name, int tracer_major) {
  std::string d = testing::TempDir(name);
  std::filesystem::create_directories(d);
  auto files = synth::UserTrace();
  std::string m = files["metadata"];
  const std::pair<std::string_view, std::string> edits[] = {
      {"  event.header := struct { uint32_t id; clk64_t timestamp; };\n", ""},
      {"  event.context := struct { int32_t _vpid; int32_t _vtid; };\n", ""},
      {"tracer_major = 2;", "tracer_major = " + std::to_string(tracer_major) + ";"}};
  for (const auto& [cut, put] : edits) {
    size_t at = m.find(cut);
    if (at == std::string::npos) return "";
    m.replace(at, cut.size(), put);
  }
  m = m.substr(0, m.find("event {")) + "event { name = \"myapp:tick\"; id = 0; stream_id = 0; fields := struct { }; };\n";
  synth::WriteFile(d + "/metadata", m);
  synth::WriteFile(d + "/chan_0", files["chan_0"]);
  return d;
}

// Events of no size have babeltrace2 decode the same empty event forever; the
// read stops at the first million at one time with an error saying so (it ran
// until memory ran out).
TEST(LttngDetect, EventsOfNoSizeEndTheReadNotTheMemory) {
  REQUIRE_LTTNG();
  std::string d = NoSizeEvents("lttng_no_size", 2);
  ASSERT_FALSE(d.empty());
  auto t = importers::LoadTrace(d);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("events at one time"), std::string::npos) << t.status().message();
}

// The same in a trace that says LTTng-UST 0.x: babeltrace2 decodes the last
// packet's events while it opens the trace (a fix-up for that tracer's
// timestamps) and loops there, before any message reaches strata. The child
// reading it is stopped at its time limit (10 s for a trace this small) with
// an error, not waited for without end.
TEST(LttngDetect, ABabeltraceThatLoopsIsStoppedAtItsTimeLimit) {
  REQUIRE_LTTNG();
  std::string d = NoSizeEvents("lttng_loops", 0);
  ASSERT_FALSE(d.empty());
  auto t = importers::LoadTrace(d);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("did not finish reading the trace in 10 s"), std::string::npos)
      << t.status().message();
}

// Writes the fuzz target's seeds (metadata, a NUL, one stream file) when asked:
//   STRATA_WRITE_LTTNG_SEEDS=fuzz/corpus/lttng ./lttng_test --gtest_filter=LttngSeeds.*
TEST(LttngSeeds, Write) {
  const char* out = std::getenv("STRATA_WRITE_LTTNG_SEEDS");
  if (!out) GTEST_SKIP() << "STRATA_WRITE_LTTNG_SEEDS not set";
  auto k = synth::KernelTrace();
  auto u = synth::UserTrace();
  synth::WriteFile(std::string(out) + "/kernel_cpu0", k["metadata"] + std::string(1, '\0') + k["chan_0"]);
  synth::WriteFile(std::string(out) + "/kernel_cpu1", k["metadata"] + std::string(1, '\0') + k["chan_1"]);
  synth::WriteFile(std::string(out) + "/ust", u["metadata"] + std::string(1, '\0') + u["chan_0"]);
}

}  // namespace
}  // namespace strata

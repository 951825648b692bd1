// `strata record` and `strata report` as a user runs them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>

#include "format/control.h"
#include "format/tsdl.h"

#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

using testing::RunCommand;
using testing::StrataBin;
using testing::TempDir;
using testing::TestProgram;

TEST(Cli, NoArgumentsAndHelpPrintUsage) {
  auto r = RunCommand({StrataBin()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("record"), std::string::npos);
  EXPECT_NE(r.out.find("report"), std::string::npos);
  auto h = RunCommand({StrataBin(), "--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("Usage"), std::string::npos);
  auto rh = RunCommand({StrataBin(), "record", "--help"});
  EXPECT_EQ(rh.exit_code, 0);
  EXPECT_NE(rh.out.find("--output"), std::string::npos);
}

TEST(Cli, UnknownOptionsExit2WithAMessage) {
  auto r = RunCommand({StrataBin(), "record", "--no-such-option", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-option"), std::string::npos) << r.err;
  auto s = RunCommand({StrataBin(), "frobnicate"});
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_FALSE(s.err.empty());
  auto n = RunCommand({StrataBin(), "record"});
  EXPECT_EQ(n.exit_code, 2);
  EXPECT_NE(n.err.find("no command"), std::string::npos) << n.err;
}

TEST(Cli, MissingCommandExits127) {
  std::string dir = TempDir("missing_cmd");
  auto r = RunCommand({StrataBin(), "record", "-q", "-o", dir, "--", "/no/such/program-xyz"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("cannot run"), std::string::npos) << r.err;
}

TEST(Cli, UnwritableDirectoryFailsBeforeTheCommandStarts) {
  std::string marker = TempDir("unwritable_marker");
  std::string cmd = "touch " + marker;
  // /proc is never writable, even for root.
  auto r = RunCommand({StrataBin(), "record", "-q", "-o", "/proc/strata-cannot-write", "--", "sh", "-c", cmd});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(r.err.empty());
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran although the trace directory was unwritable";
}

TEST(Cli, ExitStatusIsTheCommands) {
  std::string dir = TempDir("exit_status");
  auto r = RunCommand({StrataBin(), "record", "-q", "-o", dir, "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  auto m = ReadFile(dir + "/strata.json");
  ASSERT_TRUE(m.ok());
  auto j = nlohmann::json::parse(*m);
  EXPECT_EQ(j["exit_status"], 3);
  std::string dir2 = TempDir("exit_signal");
  auto k = RunCommand({StrataBin(), "record", "-q", "-o", dir2, "--", "sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(k.exit_code, 128 + 15);
}

TEST(Cli, ForwardsSigtermToTheCommand) {
  std::string dir = TempDir("forward");
  // strata runs `sleep 30`; a shell sends SIGTERM to strata after 300 ms.
  std::string script = StrataBin() + " record -q -o " + dir + " -- sleep 30 & p=$!; sleep 0.3; kill -TERM $p; wait $p";
  auto r = RunCommand({"sh", "-c", script}, {}, 20);
  EXPECT_EQ(r.exit_code, 128 + 15) << r.err;
}

TEST(Cli, ExistingTraceNeedsForce) {
  std::string dir = TempDir("force");
  ASSERT_EQ(RunCommand({StrataBin(), "record", "-q", "-o", dir, "--", "/bin/true"}).exit_code, 0);
  auto again = RunCommand({StrataBin(), "record", "-q", "-o", dir, "--", "/bin/true"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("--force"), std::string::npos);
  EXPECT_EQ(RunCommand({StrataBin(), "record", "-q", "-f", "-o", dir, "--", "/bin/true"}).exit_code, 0);
}

TEST(Cli, ManifestDescribesTheRun) {
  std::string dir = TempDir("manifest");
  ASSERT_EQ(RunCommand({StrataBin(), "record", "-q", "-o", dir, "--", TestProgram("emitter"), "1", "10"}).exit_code, 0);
  auto m = ReadFile(dir + "/strata.json");
  ASSERT_TRUE(m.ok());
  auto j = nlohmann::json::parse(*m);
  EXPECT_EQ(j["command"][0], TestProgram("emitter"));
  for (const char* k : {"strata_version", "host", "clock", "collectors", "processes", "streams", "lost_events", "end"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_FALSE(j["host"]["hostname"].get<std::string>().empty());
  EXPECT_GT(j["host"]["cpu_count"].get<int>(), 0);
  EXPECT_GT(j["clock"]["start"]["monotonic_ns"].get<int64_t>(), 0);
  EXPECT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["lost_events"], 0);
}

TEST(Cli, StaticallyLinkedProgramIsReportedAsNotRecorded) {
  // A program that clears LD_PRELOAD before exec loads no recorder: the
  // manifest and report must say so rather than show an empty trace silently.
  std::string dir = TempDir("no_recorder");
  auto r = RunCommand({StrataBin(), "record", "-q", "-o", dir, "--", "env", "-u", "LD_PRELOAD", "/bin/true"});
  // `env` itself is dynamically linked and loads the recorder before exec'ing;
  // /bin/true then runs without it.
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto rep = RunCommand({StrataBin(), "report", dir});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
}

TEST(Cli, ReportOnBadInputIsAOneLineError) {
  auto r = RunCommand({StrataBin(), "report", "/no/such/trace"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no such"), std::string::npos) << r.err;
  std::string dir = TempDir("bad_metadata");
  std::filesystem::create_directories(dir + "/ctf");
  ASSERT_TRUE(WriteFileAtomic(dir + "/ctf/metadata", "/* CTF 1.8 */\ntrace { major = 1; @ }").ok());
  auto b = RunCommand({StrataBin(), "report", dir});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.err.find("metadata"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("byte"), std::string::npos) << b.err;
  EXPECT_EQ(std::count(b.err.begin(), b.err.end(), '\n'), 1) << b.err;
}

TEST(Cli, ReportTruncatedStreamStillReads) {
  std::string dir = TempDir("truncated_stream");
  ASSERT_EQ(RunCommand({StrataBin(), "record", "-q", "-o", dir, "--", TestProgram("emitter"), "1", "200000"}).exit_code, 0);
  std::string victim;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/ctf"))
    if (e.path().filename().string().rfind("thread-", 0) == 0 && e.file_size() > 1000) victim = e.path();
  ASSERT_FALSE(victim.empty());
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) - 7);
  auto r = RunCommand({StrataBin(), "report", "--json", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  bool warned = false;
  for (const auto& w : j["warnings"]) warned |= w.get<std::string>().find("after the last complete packet") != std::string::npos;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(Cli, ControlSwitchesTiersOfARunningProgram) {
  std::string dir = testing::TempDir("control");
  // Record in the background; once the program is up, switch shapes on for steps 3-5.
  std::string script = testing::StrataBin() + " record -q -o " + dir + " -- " + testing::TestProgram("control_watch") +
                       " > " + dir + ".out & p=$!; for i in $(seq 100); do grep -q ready " + dir +
                       ".out 2>/dev/null && break; sleep 0.05; done; " + testing::StrataBin() + " control " + dir +
                       " --tiers ops,shapes --steps 3-5; wait $p";
  auto r = testing::RunCommand({"sh", "-c", script}, {}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("tiers ops,shapes"), std::string::npos) << r.out;
  model::Trace t = testing::Load(dir);
  model::StringId saw = t.strings.Find("saw_shapes");
  ASSERT_NE(saw, model::StringPool::kNotFound);
  std::map<std::string, double> counters;
  for (size_t i = 0; i < t.counters.size(); ++i)
    counters[std::string(t.strings.Get(t.counter_series[t.counters.series[i]].name))] = t.counters.value[i];
  EXPECT_EQ(counters["initial_tiers"], format::kTierOps | format::kTierMemory);
  EXPECT_EQ(counters["window_first"], 3);
  EXPECT_EQ(counters["window_last"], 5);
  auto bad = testing::RunCommand({testing::StrataBin(), "control", dir, "--tiers", "bogus"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown tier"), std::string::npos);
}

// A PyTorch-profiler file whose every event is malformed: a one-line error and
// a non-zero exit, not a report of 0 streams.
TEST(Cli, ReportOnKinetoFileOfMalformedEventsFails) {
  std::string path = TempDir("kineto_all_malformed") + ".json";
  ASSERT_TRUE(WriteFileAtomic(path, R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "x", "dur": 1},
    {"ph": "X", "name": 7, "pid": 1, "tid": 1, "ts": 2, "dur": 1}]})").ok());
  auto r = RunCommand({StrataBin(), "report", path});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no event could be imported: all 2 events"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Members of the wrong type in a trace's strata.json or a sweep's sweep.json
// (found by fuzz_manifest / fuzz_sweep_json): the report is shown, it does not
// die of an uncaught json::type_error (it used to abort, exit 134).
TEST(Cli, ReportSurvivesManifestAndSweepMembersOfWrongTypes) {
  std::string dir = TempDir("manifest_types");
  std::filesystem::create_directories(dir + "/ctf");
  format::TraceIdentity id;
  ASSERT_TRUE(WriteFileAtomic(dir + "/ctf/metadata", format::GenerateMetadata(id)).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/strata.json", R"({"command": ["x"], "exit_status": [],
    "collectors": [{"name": 5, "state": [], "detail": {}, "source": 1}, 7],
    "options": {"batch_size": "x", "skip_steps": 1e300}, "host": {"peak_flops_f32": "x", "memory_bandwidth": null}})").ok());
  for (bool json : {false, true}) {
    auto r = json ? RunCommand({StrataBin(), "report", dir, "--json"}) : RunCommand({StrataBin(), "report", dir});
    EXPECT_EQ(r.exit_code, 0) << json << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  }
  auto text = RunCommand({StrataBin(), "report", dir});
  EXPECT_NE(text.out.find("supervisor"), std::string::npos) << "the collector is listed, with '?' for what is not text";

  std::string sweep = TempDir("sweep_types");
  std::filesystem::create_directories(sweep);
  ASSERT_TRUE(WriteFileAtomic(sweep + "/sweep.json", R"({"param": 5, "throughput_unit": [], "points": [
    {"value": 1, "steps": "x", "exit_status": 1e300, "step_p50_ns": -1, "throughput": "fast", "error": 3},
    {"value": "8", "steps": 18446744073709551615, "exit_status": -9223372036854775808, "throughput": 2.5}]})").ok());
  for (bool json : {false, true}) {
    auto r = json ? RunCommand({StrataBin(), "report", sweep, "--json"}) : RunCommand({StrataBin(), "report", sweep});
    EXPECT_EQ(r.exit_code, 0) << json << r.err;
    EXPECT_NE(r.out.find("8"), std::string::npos) << r.out;
  }
}

// A command line that is not UTF-8 (a Latin-1 file name) is recorded, its
// bytes written to strata.json as U+FFFD: json's dump used to throw, and
// record aborted (exit 134) after the program had run. Found through
// fuzz_diff (the same dump in strata diff --json).
TEST(Cli, RecordOfANonUtf8CommandLine) {
  std::string dir = TempDir("non_utf8");
  auto r = RunCommand({StrataBin(), "record", "-q", "-o", dir, "--", "/bin/echo", "caf\xe9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = ReadFile(dir + "/strata.json");
  ASSERT_TRUE(m.ok());
  auto j = nlohmann::json::parse(*m);
  EXPECT_EQ(j["command"][1], "caf\xef\xbf\xbd");
  EXPECT_EQ(RunCommand({StrataBin(), "report", dir}).exit_code, 0);
}

}  // namespace
}  // namespace strata

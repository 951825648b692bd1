// `strata record` and `strata report` as a user runs them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "format/control.h"
#include "format/tsdl.h"

#include "base/files.h"
#include "base/units.h"
#include "cli/exit_codes.h"
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
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no such"), std::string::npos) << r.err;
  std::string dir = TempDir("bad_metadata");
  std::filesystem::create_directories(dir + "/ctf");
  ASSERT_TRUE(WriteFileAtomic(dir + "/ctf/metadata", "/* CTF 1.8 */\ntrace { major = 1; @ }").ok());
  auto b = RunCommand({StrataBin(), "report", dir});
  EXPECT_EQ(b.exit_code, 3);
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

// ---- CLI habits: help, suggestions, --force, exit codes, units, report size ----

namespace strata {
namespace {

using testing::RunCommand;
using testing::StrataBin;
using testing::TempDir;
using testing::TestProgram;
constexpr auto npos = std::string::npos;

std::string Slurp(const std::string& path) {
  auto s = ReadFile(path);
  return s.ok() ? *s : std::string("<unreadable>");
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

// A small trace of the dataflow example: steps, spans, /proc counters.
const std::string& DataflowTrace() {
  static std::string dir = [] {
    std::string d = TempDir("cli_dataflow");
    auto r = testing::Record(d, {DATAFLOW_BIN, "--steps", "200", "--threads", "2", "--size", "48"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return d;
  }();
  return dir;
}

TEST(Cli, EachCommandHasItsOwnUsageLineAndExamples) {
  const std::map<std::string, std::string> usage = {
      {"record", "Usage: strata record [OPTIONS] -- COMMAND [ARGS...]\n"},
      {"report", "Usage: strata report [OPTIONS] TRACE\n"},
      {"export", "Usage: strata export [OPTIONS] TRACE\n"},
      {"diff", "Usage: strata diff [OPTIONS] BEFORE AFTER\n"},
      {"flamegraph", "Usage: strata flamegraph [OPTIONS] TRACE\n"},
      {"control", "Usage: strata control [OPTIONS] TRACE\n"},
      {"sweep", "Usage: strata sweep --param NAME=V1,V2,... [OPTIONS] -- COMMAND [ARGS...]\n"}};
  std::set<std::string> seen;
  for (const auto& [cmd, line] : usage) {
    auto h = RunCommand({StrataBin(), cmd, "--help"});
    EXPECT_EQ(h.exit_code, 0) << cmd;
    EXPECT_NE(h.out.find(line), npos) << h.out;
    size_t ex = h.out.find("Examples:\n");
    ASSERT_NE(ex, npos) << h.out;
    std::string examples = h.out.substr(ex);
    // The first example is of this command, and no two commands end the same way.
    EXPECT_EQ(examples.find("\n  strata " + cmd + " "), examples.find('\n')) << examples;
    EXPECT_TRUE(seen.insert(examples).second) << cmd << " ends with another command's examples:\n" << examples;
  }
  // The top level lists the commands and points to each one's help.
  auto top = RunCommand({StrataBin(), "--help"});
  EXPECT_NE(top.out.find("Usage: strata COMMAND"), npos) << top.out;
  EXPECT_NE(top.out.find("strata COMMAND --help"), npos) << top.out;
}

TEST(Cli, MistypedCommandsAndOptionsGetASuggestion) {
  auto c = RunCommand({StrataBin(), "reprot", "mytrace"});
  EXPECT_EQ(c.exit_code, cli::kExitUsage);
  EXPECT_NE(c.err.find("'reprot' is not a strata command. Did you mean 'report'?"), npos) << c.err;
  auto e = RunCommand({StrataBin(), "exprot"});
  EXPECT_NE(e.err.find("Did you mean 'export'?"), npos) << e.err;
  auto far = RunCommand({StrataBin(), "frobnicate"});
  EXPECT_EQ(far.exit_code, cli::kExitUsage);
  EXPECT_EQ(far.err.find("Did you mean"), npos) << far.err;
  EXPECT_NE(far.err.find("strata --help"), npos) << far.err;

  auto o = RunCommand({StrataBin(), "report", "--jsn", "mytrace"});
  EXPECT_EQ(o.exit_code, cli::kExitUsage);
  EXPECT_NE(o.err.find("strata report: unknown option '--jsn'; did you mean '--json'?"), npos) << o.err;
  EXPECT_NE(o.err.find("Usage: strata report [OPTIONS] TRACE"), npos) << o.err;
  auto f = RunCommand({StrataBin(), "export", "mytrace", "--froce"});
  EXPECT_NE(f.err.find("did you mean '--force'?"), npos) << f.err;
  auto fg = RunCommand({StrataBin(), "flamegraph", "--off-cup", "mytrace"});
  EXPECT_NE(fg.err.find("did you mean '--off-cpu'?"), npos) << fg.err;

  // record: the program must not start when an option is mistyped.
  std::string dir = TempDir("typo_record");
  std::string marker = dir + "-ran";
  auto r = RunCommand({StrataBin(), "record", "--ouptut", dir + "/t", "--", "sh", "-c", "touch " + marker});
  EXPECT_EQ(r.exit_code, cli::kExitUsage);
  EXPECT_NE(r.err.find("did you mean '--output'?"), npos) << r.err;
  EXPECT_NE(r.err.find("Usage: strata record [OPTIONS] -- COMMAND [ARGS...]"), npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the program ran despite the mistyped option";
}

TEST(Cli, AMissingArgumentPrintsTheCommandsOwnUsage) {
  auto r = RunCommand({StrataBin(), "report"});
  EXPECT_EQ(r.exit_code, cli::kExitUsage);
  EXPECT_NE(r.err.find("strata report: missing TRACE"), npos) << r.err;
  EXPECT_NE(r.err.find("Usage: strata report [OPTIONS] TRACE"), npos) << r.err;
  EXPECT_NE(r.err.find("strata report --help"), npos) << r.err;
  EXPECT_EQ(r.err.find("strata --help"), npos) << "points to the top-level help:\n" << r.err;
  auto d = RunCommand({StrataBin(), "diff", "before-trace"});
  EXPECT_EQ(d.exit_code, cli::kExitUsage);
  EXPECT_NE(d.err.find("missing AFTER"), npos) << d.err;
  auto s = RunCommand({StrataBin(), "sweep", "--", "true"});
  EXPECT_NE(s.err.find("missing option --param"), npos) << s.err;
}

TEST(Cli, EveryWritingCommandRefusesToReplaceAFileWithoutForce) {
  const std::string& trace = DataflowTrace();
  std::string dir = TempDir("force_everywhere");
  std::filesystem::create_directories(dir);
  std::string out = dir + "/out";
  const std::vector<std::vector<std::string>> writers = {
      {"export", trace, "-o", out},
      {"export", trace, "-f", "sqlite", "-o", out},
      {"report", trace, "-o", out},
      {"report", trace, "--json", "-o", out},
      {"report", trace, "--html", out},
      {"report", trace, "--flamegraph", out},
      {"flamegraph", trace, "-o", out},
      {"diff", trace, trace, "-o", out},
  };
  for (const auto& args : writers) {
    std::vector<std::string> argv = {StrataBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    ASSERT_TRUE(WriteFileAtomic(out, "keep").ok());
    auto r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, cli::kExitOutput) << Joined(args) << "\n" << r.err;
    EXPECT_NE(r.err.find("already exists (use --force"), npos) << Joined(args) << "\n" << r.err;
    EXPECT_EQ(Slurp(out), "keep") << Joined(args) << " replaced the file without --force";
    argv.push_back("--force");
    auto f = RunCommand(argv);
    EXPECT_EQ(f.exit_code, 0) << Joined(argv) << "\n" << f.err;
    EXPECT_NE(Slurp(out), "keep") << Joined(argv) << " did not write the file";
  }
  // export's default output, named after the trace in the current directory.
  std::string cwd = TempDir("force_default_name");
  std::filesystem::create_directories(cwd);
  std::string name = cwd + "/cli_dataflow.perfetto-trace";
  ASSERT_TRUE(WriteFileAtomic(name, "keep").ok());
  auto d = RunCommand({"sh", "-c", "cd " + cwd + " && " + StrataBin() + " export -q " + trace});
  EXPECT_EQ(d.exit_code, cli::kExitOutput) << d.err;
  EXPECT_EQ(Slurp(name), "keep");
  // sweep: a directory that already holds a sweep; nothing is run.
  std::string sweep = TempDir("force_sweep");
  std::filesystem::create_directories(sweep);
  ASSERT_TRUE(WriteFileAtomic(sweep + "/sweep.json", "keep").ok());
  std::string marker = sweep + "-ran";
  auto s = RunCommand({StrataBin(), "sweep", "--param", "n=1", "-o", sweep, "--", "sh", "-c", "touch " + marker, "{n}"});
  EXPECT_EQ(s.exit_code, cli::kExitOutput) << s.err;
  EXPECT_EQ(Slurp(sweep + "/sweep.json"), "keep");
  EXPECT_FALSE(std::filesystem::exists(marker));
  // A device is written into, never replaced.
  EXPECT_EQ(RunCommand({StrataBin(), "report", trace, "-o", "/dev/null"}).exit_code, 0);
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
}

TEST(Cli, ExitCodesSayWhatKindOfFailure) {
  const std::string& trace = DataflowTrace();
  std::string dir = TempDir("exit_codes");
  std::filesystem::create_directories(dir);
  std::string garbage = dir + "/garbage.json";
  ASSERT_TRUE(WriteFileAtomic(garbage, "this is not a trace\n").ok());
  // 2: the command line is wrong.
  EXPECT_EQ(RunCommand({StrataBin(), "report", "--top", "many", trace}).exit_code, cli::kExitUsage);
  EXPECT_EQ(RunCommand({StrataBin(), "export", trace, "-f", "pdf", "-o", dir + "/x"}).exit_code, cli::kExitUsage);
  EXPECT_EQ(RunCommand({StrataBin(), "control", dir, "--steps", "9-3"}).exit_code, cli::kExitBadInput)
      << "no recording there: the input is checked first";
  // 3: the input is not a readable trace.
  for (const std::string& bad : {std::string("/no/such/trace"), garbage}) {
    const std::vector<std::vector<std::string>> readers = {{"report", bad},
                                                           {"report", "--json", bad},
                                                           {"export", bad, "-o", dir + "/e"},
                                                           {"flamegraph", bad},
                                                           {"diff", trace, bad},
                                                           {"diff", bad, trace}};
    for (const auto& args : readers) {
      std::vector<std::string> argv = {StrataBin()};
      argv.insert(argv.end(), args.begin(), args.end());
      auto r = RunCommand(argv);
      EXPECT_EQ(r.exit_code, cli::kExitBadInput) << Joined(args) << "\n" << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
  EXPECT_EQ(RunCommand({StrataBin(), "control", dir}).exit_code, cli::kExitBadInput);
  // 4: the output cannot be written.
  EXPECT_EQ(RunCommand({StrataBin(), "report", trace, "-o", "/no/such/dir/r.txt"}).exit_code, cli::kExitOutput);
  EXPECT_EQ(RunCommand({StrataBin(), "report", trace, "--html", "/no/such/dir/r.html"}).exit_code, cli::kExitOutput);
  EXPECT_EQ(RunCommand({StrataBin(), "export", trace, "-o", "/no/such/dir/t.pftrace"}).exit_code, cli::kExitOutput);
  EXPECT_EQ(RunCommand({StrataBin(), "flamegraph", trace, "-o", "/no/such/dir/f"}).exit_code, cli::kExitOutput);
  EXPECT_EQ(RunCommand({StrataBin(), "report", trace, "-o", dir}).exit_code, cli::kExitOutput) << "a directory";
  if (std::filesystem::exists("/dev/full")) {
    auto full = RunCommand({"sh", "-c", StrataBin() + " report --json " + trace + " > /dev/full"});
    EXPECT_EQ(full.exit_code, cli::kExitOutput) << full.err;
    EXPECT_NE(full.err.find("standard output"), npos) << full.err;
  }
  // 1: the command ran and failed: no run of the sweep produced steps.
  auto s = RunCommand({StrataBin(), "sweep", "--param", "n=1", "-o", dir + "/sweep", "--", "/bin/true", "{n}"});
  EXPECT_EQ(s.exit_code, cli::kExitFailure) << s.err;
  EXPECT_NE(s.err.find("no run produced steps"), npos) << s.err;
}

TEST(Units, NumbersForPeople) {
  EXPECT_EQ(HumanDuration(int64_t{850}), "850 ns");
  EXPECT_EQ(HumanDuration(int64_t{12345}), "12.35 µs");
  EXPECT_EQ(HumanDuration(int64_t{4560000}), "4.56 ms");
  EXPECT_EQ(HumanDuration(int64_t{1234000000}), "1.234 s");
  EXPECT_EQ(HumanDuration(int64_t{123400000000}), "2 min 03.4 s");
  EXPECT_EQ(HumanDuration(int64_t{3720000000000}), "1 h 02 min");
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(429733000), "409.83 MiB");
  EXPECT_EQ(HumanBytes(5.0 * (1 << 30)), "5.00 GiB");
  EXPECT_EQ(HumanCount(3.0), "3");
  EXPECT_EQ(HumanCount(2.5), "2.5");
  EXPECT_EQ(HumanCount(1234567.0), "1234567");
  EXPECT_EQ(HumanNumber(429733000), "429733000");
  EXPECT_EQ(HumanNumber(2.5), "2.5");
  EXPECT_EQ(HumanNumber(0.25), "0.25");
  EXPECT_EQ(HumanNumber(12345.6), "12346");
  EXPECT_EQ(HumanRate(1234.4, "samples"), "1234 samples/s");
  EXPECT_EQ(HumanRate(12.34, "steps"), "12.3 steps/s");
  EXPECT_EQ(HumanRate(1.5 * (1 << 30), "bytes"), "1.50 GiB/s");
}

TEST(Cli, TextReportWritesNumbersForPeople) {
  auto r = RunCommand({StrataBin(), "report", DataflowTrace()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The report's own figures: the "Not recorded" section quotes the collectors'
  // notes as recorded in the trace.
  const std::string t = r.out.substr(0, r.out.find("\nNot recorded\n"));
  EXPECT_FALSE(std::regex_search(t, std::regex("[0-9]e[+-][0-9]"))) << "a number with an exponent:\n" << t;
  std::smatch m;
  EXPECT_FALSE(std::regex_search(t, m, std::regex("[0-9]\\.0 (scopes|allocations|frees|ops|copies|blocks|calls|steps)")))
      << "a count with a decimal point: " << m.str(0);
  EXPECT_EQ(t.find(" us "), npos) << "microseconds are written µs";
  // /proc's resident set size, a byte count, in binary units.
  // (A 70 ms run on a loaded machine can end before /proc's first round.)
  size_t rss = t.find("os.rss_bytes");
  if (rss != npos) {
    std::string line = t.substr(rss, t.find('\n', rss) - rss);
    EXPECT_TRUE(std::regex_search(line, std::regex("[0-9.]+ (KiB|MiB|GiB)"))) << line;
  }
  // The step line has units on every figure.
  size_t steps = t.find("Steps: 200");
  ASSERT_NE(steps, npos) << t;
  std::string sl = t.substr(steps, t.find('\n', steps) - steps);
  EXPECT_TRUE(std::regex_search(sl, std::regex("mean [0-9.]+ (ns|µs|ms|s)"))) << sl;
  // A thread count is an integer: samples, min, max and last (its mean need not be).
  size_t threads = t.find("os.threads");
  if (threads != npos) {
    std::string tl = t.substr(threads, t.find('\n', threads) - threads);
    std::istringstream cols(tl.substr(tl.find(')') + 1));
    std::vector<std::string> v{std::istream_iterator<std::string>(cols), std::istream_iterator<std::string>()};
    ASSERT_EQ(v.size(), 5u) << tl;
    for (size_t k : {0, 1, 3, 4}) EXPECT_EQ(v[k].find('.'), npos) << tl;
  }
}

TEST(Cli, CriticalPathSaysWhichStepsItAnalysedAndWhy) {
  auto r = RunCommand({StrataBin(), "report", DataflowTrace()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Critical path (64 of 200 steps analysed, one in 3.1 from step"), npos) << r.out;
  EXPECT_NE(r.out.find("bounded to 64 steps, evenly spread"), npos) << r.out;
}

TEST(Cli, JsonReportIsASummaryAndFullHasTheDetail) {
  auto s = RunCommand({StrataBin(), "report", "--json", DataflowTrace()});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto f = RunCommand({StrataBin(), "report", "--json", "--full", DataflowTrace()});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  auto js = nlohmann::json::parse(s.out);
  auto jf = nlohmann::json::parse(f.out);
  EXPECT_EQ(js["detail"]["level"], "summary");
  EXPECT_EQ(jf["detail"]["level"], "full");
  // Per step: statistics and the slowest steps, not every step's path.
  const auto& cp = js["critical_path"];
  EXPECT_EQ(cp["steps_total"], 200);
  EXPECT_EQ(cp["steps_analysed"], 64);
  EXPECT_EQ(cp["analysed_steps"].size(), 64u);
  EXPECT_EQ(cp["steps"].size(), 20u);
  for (const auto& st : cp["steps"]) {
    EXPECT_FALSE(st.contains("segments"));
    EXPECT_GT(st["segment_count"].get<int64_t>(), 0);
    EXPECT_LE(st["duration_ns"].get<int64_t>(), cp["steps"][0]["duration_ns"].get<int64_t>()) << "slowest first";
  }
  EXPECT_EQ(cp["steps"][0]["duration_ns"], cp["step_duration_ns"]["max"]);
  EXPECT_EQ(js["detail"]["omitted_rows"]["critical_path.steps"], 44);
  EXPECT_EQ(js["steps"]["slowest"].size(), 20u);
  EXPECT_EQ(js["steps"]["slowest"][0]["duration_ns"], js["steps"]["max_ns"]);
  EXPECT_EQ(js["steps"]["durations_ns"].size(), 200u) << "the step-time series stays whole";
  // --full: every analysed step with every segment.
  ASSERT_EQ(jf["critical_path"]["steps"].size(), 64u);
  size_t segments = 0;
  for (const auto& st : jf["critical_path"]["steps"]) {
    ASSERT_TRUE(st.contains("segments"));
    EXPECT_EQ(st["segments"].size(), st["segment_count"].get<size_t>());
    segments += st["segments"].size();
  }
  EXPECT_GT(segments, 64u * 9);
  EXPECT_FALSE(jf["detail"].contains("omitted_rows")) << jf["detail"].dump();
  EXPECT_EQ(jf["steps"]["numbers"].size(), 200u);
  // The summary is a small fraction of the detail and stays small.
  EXPECT_LT(s.out.size(), 256u * 1024) << "default JSON of 200 small steps";
  EXPECT_GT(f.out.size(), 4 * s.out.size());
  // --top sets the rows of every table.
  auto t5 = RunCommand({StrataBin(), "report", "--json", "--top", "5", DataflowTrace()});
  auto j5 = nlohmann::json::parse(t5.out);
  EXPECT_EQ(j5["critical_path"]["steps"].size(), 5u);
  EXPECT_LE(j5["spans"].size(), 5u);
  EXPECT_EQ(j5["steps"]["slowest"].size(), 5u);
}

}  // namespace
}  // namespace strata

// Fault and safety tests of `strata record` and of reading traces (issue #16,
// "no holes"), each with the reproduction that showed the defect:
//   - a setuid-root program linked with libstrata, run as `nobody` with
//     STRATA_TRACE_DIR / STRATA_TORCH_LIB set, loads nothing and writes nothing;
//   - symbolic links planted in or at the trace directory are never written through;
//   - 20 concurrent `record -o SAME`: exactly one runs, the others fail at once (125);
//   - a FIFO, a device or a symbolic link loop as a trace: an error within a second;
//   - the supervisor SIGKILLed: the trace says so;
//   - signals sent to the supervisor reach the program, and the recording completes;
//   - a program that dies of a signal: strata dies of the same signal, no core of its own;
//   - a command that cannot run: 127 / 126 and no trace.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/files.h"
#include "format/ctf_writer.h"
#include "format/schema.h"
#include "format/tsdl.h"
#include "tests/testing.h"

extern char** environ;

namespace strata {
namespace {

using testing::RunCommand;
using testing::StrataBin;
using testing::TempDir;
using testing::TestProgram;
using Clock = std::chrono::steady_clock;

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void Spit(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

nlohmann::json Manifest(const std::string& dir) {
  auto j = nlohmann::json::parse(Slurp(dir + "/strata.json"), nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// A process started in the background, its stdout and stderr in files: the
// tests need its pid (to signal it) and its raw wait status (WIFSIGNALED).
struct Background {
  pid_t pid = -1;
  std::string out, err;  // file paths
  Clock::time_point started;
};

// Signals are set to their defaults in the child (a test run in the background
// of a shell has SIGINT and SIGQUIT ignored). `cwd`: where it runs, if not here.
Background Start(const std::vector<std::string>& argv, const std::string& log_base, const std::string& cwd = "") {
  Background b;
  b.out = log_base + ".out";
  b.err = log_base + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, b.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, b.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& s : copy) args.push_back(s.data());
  args.push_back(nullptr);
  b.started = Clock::now();
  if (posix_spawnp(&b.pid, args[0], &fa, &attr, args.data(), environ) != 0) b.pid = -1;
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  return b;
}

// The raw wait status, or -1 after `timeout_s` (the process is then killed).
int Wait(pid_t pid, int timeout_s = 120) {
  auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Gone, or a zombie nobody reaps (an orphan here may be reparented to a PID 1
// that does not wait for it).
bool ProcessGone(pid_t pid) {
  std::string stat = Slurp("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && (stat[paren + 2] == 'Z' || stat[paren + 2] == 'X');
}

// Polls until `pred` holds or `timeout_s` passes.
template <typename Pred>
bool WaitFor(Pred pred, double timeout_s = 30) {
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

// The program of a recording has started (the supervisor wrote its pid).
pid_t ProgramPid(const std::string& dir) {
  auto m = Manifest(dir);
  if (m.is_object() && m.contains("recording") && m["recording"].contains("program_pid"))
    return m["recording"]["program_pid"].get<pid_t>();
  return 0;
}

// Removes a path when the test ends, however it ends.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Core dumps of programs that die here would litter the build tree.
void NoCoreDumps() {
  struct rlimit no_core = {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
}

// --- privileges ----------------------------------------------------------------

// Reproduction: as `nobody`, a setuid-root program linked with -lstrata dlopened
// STRATA_TORCH_LIB and called it with euid 0, and wrote root-owned files where
// STRATA_TRACE_DIR said (a root-only directory).
TEST(FaultSafety, SetuidProgramTakesNothingFromTheEnvironment) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to make a setuid-root program and run it as nobody)";
  if (RunCommand({"sh", "-c", "command -v setpriv"}).exit_code != 0) GTEST_SKIP() << "setpriv is not installed";
  std::string dir = TempDir("setuid");
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  ::chmod(fs::path(dir).parent_path().c_str(), 0755);
  struct statvfs vfs;
  ASSERT_EQ(::statvfs(dir.c_str(), &vfs), 0);
  if (vfs.f_flag & ST_NOSUID) GTEST_SKIP() << dir << " is on a nosuid filesystem";
  std::string prog = dir + "/emitter-setuid";
  RemoveOnExit remove{dir};  // no setuid-root program outlives the test
  fs::copy_file(TestProgram("emitter"), prog);
  ASSERT_EQ(::chown(prog.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(prog.c_str(), 04755), 0);
  std::string root_only = dir + "/root-only";
  fs::create_directories(root_only);
  ASSERT_EQ(::chmod(root_only.c_str(), 0700), 0);
  std::string markers = dir + "/markers";
  fs::create_directories(markers);
  ASSERT_EQ(::chmod(markers.c_str(), 0777), 0);
  std::map<std::string, std::string> env = {
      {"STRATA_TRACE_DIR", root_only + "/trace"},
      {"STRATA_TORCH_PROBE", "libc.so.6"},  // always loaded: the probe matches
      {"STRATA_TORCH_LIB", STRATA_TEST_FAULT_MARKER_LIB},
      {"STRATA_TEST_MARKER", markers + "/setuid"},
  };

  // The control: run by root itself (no privilege gained at exec), the same
  // program does load the library and record, so the test can see a hole.
  std::map<std::string, std::string> control_env = env;
  control_env["STRATA_TRACE_DIR"] = dir + "/control-trace";
  control_env["STRATA_TEST_MARKER"] = markers + "/control";
  auto c = RunCommand({prog, "1", "10"}, control_env);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_TRUE(fs::exists(markers + "/control")) << "the control run did not load STRATA_TORCH_LIB: the test proves nothing";
  EXPECT_TRUE(fs::exists(dir + "/control-trace/ctf/metadata"));

  auto r = RunCommand({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", prog, "1", "10"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(markers + "/setuid")) << "a setuid program loaded a library named by the environment: "
                                                << Slurp(markers + "/setuid");
  EXPECT_TRUE(fs::is_empty(root_only)) << "a setuid program wrote where STRATA_TRACE_DIR said";
  EXPECT_NE(r.err.find("not recording this process"), std::string::npos) << r.err;
}

// --- the trace directory -------------------------------------------------------

// Reproduction: `.strata-write-test` and `strata.json.tmp` were opened with
// O_CREAT|O_TRUNC and no O_NOFOLLOW: as root, links planted there truncated and
// overwrote their targets.
TEST(FaultSafety, LinksPlantedInTheTraceDirectoryAreNeverWrittenThrough) {
  std::string dir = TempDir("planted");
  std::string victims = dir + "-victims";
  fs::create_directories(dir);
  fs::create_directories(victims);
  const std::string kPrecious = "precious contents\n";
  std::vector<std::string> names = {".strata-write-test", "strata.json.tmp", "control.tmp", "control"};
  for (const auto& n : names) {
    Spit(victims + "/" + n, kPrecious);
    fs::create_symlink(victims + "/" + n, dir + "/" + n);
  }
  auto r = testing::Record(dir, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& n : names) EXPECT_EQ(Slurp(victims + "/" + n), kPrecious) << n << " was written through";
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir + "/control"))) << "control is still the planted link";

  // In ctf/ of an existing trace, overwritten with --force.
  for (const std::string n : {"metadata.tmp", "os-proc", "cpu-0", "metadata"}) {
    Spit(victims + "/ctf-" + n, kPrecious);
    fs::remove(dir + "/ctf/" + n);
    fs::create_symlink(victims + "/ctf-" + n, dir + "/ctf/" + n);
  }
  r = testing::Record(dir, {"/bin/true"}, {"--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const std::string n : {"metadata.tmp", "os-proc", "cpu-0", "metadata"})
    EXPECT_EQ(Slurp(victims + "/ctf-" + n), kPrecious) << "ctf/" << n << " was written through";
  testing::Load(dir);
}

// With --force, the old code listed ctf/ through a link and deleted the files of
// the directory it pointed to.
TEST(FaultSafety, LinkedTraceDirectoryOrCtfIsRefused) {
  std::string base = TempDir("linked");
  std::string victim = base + "/victim";
  fs::create_directories(victim);
  Spit(victim + "/keep", "keep\n");
  fs::create_symlink(victim, base + "/out");
  auto r = testing::Record(base + "/out", {"/bin/true"}, {"--force"});
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.err), 1u) << r.err;
  EXPECT_FALSE(fs::exists(victim + "/ctf")) << "recorded through the link";

  std::string dir = base + "/trace";
  fs::create_directories(dir);
  Spit(dir + "/strata.json", "{}\n");
  fs::create_symlink(victim, dir + "/ctf");
  r = testing::Record(dir, {"/bin/true"}, {"--force"});
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(Slurp(victim + "/keep"), "keep\n") << "--force emptied the directory ctf/ pointed to";
}

TEST(FaultSafety, FilesAreCreatedNewNeverThroughALink) {
  std::string dir = TempDir("create_new");
  fs::create_directories(dir);
  Spit(dir + "/victim", "victim\n");
  fs::create_symlink(dir + "/victim", dir + "/link");
  fs::create_symlink(dir + "/nowhere", dir + "/dangling");
  for (const std::string n : {"link", "dangling"}) {
    auto fd = CreateNewFile(dir + "/" + n);
    ASSERT_FALSE(fd.ok());
    EXPECT_NE(fd.status().message().find("symbolic link"), std::string::npos) << fd.status().message();
  }
  EXPECT_FALSE(fs::exists(dir + "/nowhere")) << "created the target of a dangling link";
  // A stream file (the recorder's and the OS collector's) likewise.
  const format::StreamSpec* spec = format::FindStream(format::kProcessStream);
  ASSERT_NE(spec, nullptr);
  format::StreamWriter w(format::NewRandomUuid(), *spec, 1, {1, 1});
  EXPECT_FALSE(w.Open(dir + "/link").ok());
  // WriteFileAtomic: a link at .tmp is refused, a stale regular .tmp replaced.
  fs::create_symlink(dir + "/victim", dir + "/out.tmp");
  EXPECT_FALSE(WriteFileAtomic(dir + "/out", "new\n").ok());
  EXPECT_EQ(Slurp(dir + "/victim"), "victim\n");
  fs::remove(dir + "/out.tmp");
  Spit(dir + "/out.tmp", "stale");
  EXPECT_TRUE(WriteFileAtomic(dir + "/out", "new\n").ok());
  EXPECT_EQ(Slurp(dir + "/out"), "new\n");
}

// Reproduction: two `record -o SAME` at once both ran (check, then create): 2 of
// 10 tries under load ended in an unreadable trace or a failed rename.
TEST(FaultSafety, ConcurrentRecordsIntoOneDirectoryRunExactlyOnce) {
  constexpr int kRecorders = 20;
  std::string dir = TempDir("concurrent");
  std::string logs = TempDir("concurrent_logs");
  fs::create_directories(logs);
  std::vector<Background> procs;
  for (int i = 0; i < kRecorders; ++i)
    procs.push_back(Start({StrataBin(), "record", "-q", "-o", dir, "--", "sleep", "2"}, logs + "/" + std::to_string(i)));
  // Reaped as they end, so each one's time is its own.
  std::vector<int> status(procs.size(), -1);
  std::vector<double> secs(procs.size(), 0);
  size_t left = procs.size();
  auto deadline = Clock::now() + std::chrono::seconds(120);
  while (left > 0 && Clock::now() < deadline) {
    for (size_t i = 0; i < procs.size(); ++i) {
      if (status[i] != -1 || procs[i].pid <= 0) continue;
      int st = 0;
      if (::waitpid(procs[i].pid, &st, WNOHANG) == procs[i].pid) {
        status[i] = st;
        secs[i] = std::chrono::duration<double>(Clock::now() - procs[i].started).count();
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  int ran = 0;
  double winner_s = 0;
  std::vector<double> refused_s;
  for (size_t i = 0; i < procs.size(); ++i) {
    ASSERT_GT(procs[i].pid, 0);
    if (status[i] == -1) ::kill(procs[i].pid, SIGKILL);
    ASSERT_TRUE(status[i] != -1 && WIFEXITED(status[i])) << "recorder " << i << ": status " << status[i];
    std::string err = Slurp(procs[i].err);
    if (WEXITSTATUS(status[i]) == 0) {
      ++ran;
      winner_s = secs[i];
      continue;
    }
    EXPECT_EQ(WEXITSTATUS(status[i]), 125) << err;
    EXPECT_EQ(Lines(err), 1u) << err;
    EXPECT_TRUE(err.find("in use") != std::string::npos || err.find("already holds a trace") != std::string::npos)
        << err;
    if (err.find("in use") != std::string::npos) refused_s.push_back(secs[i]);
  }
  EXPECT_EQ(ran, 1);
  // "At once": a refused recorder does not wait for the one that runs.
  for (double s : refused_s) EXPECT_LT(s, winner_s) << "a refused recorder waited for the lock";
  auto t = testing::Load(dir);
  EXPECT_EQ(Manifest(dir)["recording"]["state"], "finished");
  testing::ExpectBabeltraceAgrees(dir);
}

// --- reading -----------------------------------------------------------------

// Reproduction: a FIFO as the trace path hung `report`, `export` and `diff`
// forever; a symbolic link loop was "no such file or directory".
TEST(FaultSafety, FifosDevicesAndLinkLoopsAreRefusedWithinASecond) {
  std::string dir = TempDir("fifo");
  fs::create_directories(dir);
  std::string fifo = dir + "/trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_symlink(dir + "/loop-b", dir + "/loop-a");
  fs::create_symlink(dir + "/loop-a", dir + "/loop-b");
  // A trace directory whose metadata is a FIFO.
  std::string fifo_trace = dir + "/fifo-trace";
  fs::create_directories(fifo_trace + "/ctf");
  ASSERT_EQ(::mkfifo((fifo_trace + "/ctf/metadata").c_str(), 0644), 0);
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  std::string out = dir + "/out";
  std::vector<Case> cases;
  for (const std::string& input : {fifo, std::string("/dev/zero")}) {
    std::string kind = input == fifo ? "FIFO" : "character device";
    cases.push_back({{"report", input}, kind});
    cases.push_back({{"report", "--json", input}, kind});
    cases.push_back({{"export", input, "-f", "perfetto", "-o", out + ".pftrace"}, kind});
    cases.push_back({{"export", input, "-f", "sqlite", "-o", out + ".sqlite"}, kind});
    cases.push_back({{"diff", input, input}, kind});
    cases.push_back({{"flamegraph", input, "-o", out + ".folded"}, kind});
  }
  cases.push_back({{"report", dir + "/loop-a"}, "symbolic link loop"});
  cases.push_back({{"diff", dir + "/loop-a", dir + "/loop-b"}, "symbolic link loop"});
  cases.push_back({{"report", fifo_trace}, "FIFO"});
  for (const auto& c : cases) {
    std::vector<std::string> argv = {StrataBin()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto t0 = Clock::now();
    auto r = RunCommand(argv, {}, 20);
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::string shown = c.args[0] + " " + c.args[1];
    EXPECT_NE(r.exit_code, 0) << shown;
    EXPECT_LT(secs, 1.0) << shown << " took " << secs << " s";
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << shown << ": " << r.err;
    EXPECT_EQ(r.err.find("no such file"), std::string::npos) << shown << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << shown << ": " << r.err;
  }
}

// --- the supervisor ----------------------------------------------------------

// Reproduction: when the supervisor was SIGKILLed the program went on, and the
// trace did not say so; the report had no exit status.
TEST(FaultSafety, KilledSupervisorIsStatedInTheTrace) {
  std::string dir = TempDir("supervisor_killed");
  std::string logs = TempDir("supervisor_killed_logs");
  fs::create_directories(logs);
  Background s = Start({StrataBin(), "record", "-q", "-o", dir, "--", "sleep", "1.5"}, logs + "/s");
  ASSERT_GT(s.pid, 0);
  ASSERT_TRUE(WaitFor([&] { return ProgramPid(dir) > 0; })) << Slurp(s.err);
  pid_t program = ProgramPid(dir);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(::kill(s.pid, SIGKILL), 0);
  int status = Wait(s.pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  // The program goes on (it must never be held back by strata) and ends.
  EXPECT_FALSE(ProcessGone(program)) << "the program died with its supervisor";
  ASSERT_TRUE(WaitFor([&] { return ProcessGone(program); }, 30));

  auto r = RunCommand({StrataBin(), "report", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the recording supervisor died"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit status is unknown"), std::string::npos) << r.out;
  auto j = RunCommand({StrataBin(), "report", "--json", dir});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto rep = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(rep.is_discarded());
  EXPECT_NE(rep["trace"].value("program_end", "").find("supervisor died"), std::string::npos) << rep["trace"];
  EXPECT_EQ(rep["manifest"]["recording"]["state"], "running");
}

// A recording in progress is not mistaken for a dead supervisor.
TEST(FaultSafety, LiveRecordingIsNotReportedAsDead) {
  std::string dir = TempDir("live");
  std::string logs = TempDir("live_logs");
  fs::create_directories(logs);
  Background s = Start({StrataBin(), "record", "-q", "-o", dir, "--", "sleep", "3"}, logs + "/s");
  ASSERT_TRUE(WaitFor([&] { return ProgramPid(dir) > 0; })) << Slurp(s.err);
  auto r = RunCommand({StrataBin(), "report", dir});
  EXPECT_EQ(r.out.find("supervisor died"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("still being recorded"), std::string::npos) << r.out;
  int status = Wait(s.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Reproduction: SIGUSR1 to the supervisor killed it; the program went on and
// the trace lost its end.
TEST(FaultSafety, SignalsSentToTheSupervisorReachTheProgram) {
  NoCoreDumps();
  std::string logs = TempDir("signals_logs");
  fs::create_directories(logs);
  // A program that handles SIGUSR1: strata forwards it and exits with the
  // program's status; the recording completes.
  {
    std::string dir = TempDir("signal_handled");
    std::string ready = logs + "/ready";
    std::string script = "trap 'exit 7' USR1; touch " + ready + "; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done";
    Background s = Start({StrataBin(), "record", "-q", "-o", dir, "--", "sh", "-c", script}, logs + "/usr1");
    ASSERT_TRUE(WaitFor([&] { return fs::exists(ready); })) << Slurp(s.err);
    ASSERT_EQ(::kill(s.pid, SIGUSR1), 0);
    int status = Wait(s.pid, 60);
    ASSERT_TRUE(WIFEXITED(status)) << "strata died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 7) << Slurp(s.err);
    auto m = Manifest(dir);
    EXPECT_EQ(m["recording"]["state"], "finished");
    EXPECT_EQ(m["exit_status"], 7);
  }
  // A program that does not handle them dies of each, and strata with it, after
  // completing the trace.
  for (int sig : {SIGUSR1, SIGUSR2, SIGHUP, SIGALRM, SIGTERM, SIGQUIT, SIGINT}) {
    std::string name = sigabbrev_np(sig);
    std::string dir = TempDir("signal_" + name);
    Background s = Start({StrataBin(), "record", "-q", "-o", dir, "--", "sleep", "30"}, logs + "/" + name);
    ASSERT_TRUE(WaitFor([&] { return ProgramPid(dir) > 0; })) << Slurp(s.err);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past exec
    ASSERT_EQ(::kill(s.pid, sig), 0);
    int status = Wait(s.pid, 60);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "SIG" << name << ": status " << status;
    auto m = Manifest(dir);
    EXPECT_EQ(m["recording"]["state"], "finished") << name;
    EXPECT_EQ(m["signal"], sig) << name;
  }
  // SIGPIPE is about strata's own writes: ignored, the program runs on.
  {
    std::string dir = TempDir("signal_pipe");
    Background s = Start({StrataBin(), "record", "-q", "-o", dir, "--", "sleep", "1"}, logs + "/pipe");
    ASSERT_TRUE(WaitFor([&] { return ProgramPid(dir) > 0; })) << Slurp(s.err);
    ASSERT_EQ(::kill(s.pid, SIGPIPE), 0);
    int status = Wait(s.pid, 60);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    EXPECT_EQ(Manifest(dir)["recording"]["state"], "finished");
  }
}

// Reproduction: a segfaulting program's status came back as exit code 139.
TEST(FaultSafety, ProgramDeathBySignalIsReproduced) {
  std::string dir = TempDir("segv");
  std::string logs = TempDir("segv_logs");
  fs::create_directories(logs);
  RemoveOnExit remove{logs};  // the program's core
  // Core dumps allowed (into the log directory), so that a core of strata's own
  // would show in its wait status.
  struct rlimit before;
  ::getrlimit(RLIMIT_CORE, &before);
  struct rlimit allow = {before.rlim_max, before.rlim_max};
  ::setrlimit(RLIMIT_CORE, &allow);
  Background s = Start({StrataBin(), "record", "-q", "-o", dir, "--", TestProgram("emitter"), "1", "1000", "--crash"},
                       logs + "/segv", logs);
  ::setrlimit(RLIMIT_CORE, &before);
  int status = Wait(s.pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "strata exited " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_FALSE(WCOREDUMP(status)) << "strata dumped its own core";
  auto m = Manifest(dir);
  EXPECT_EQ(m["signal"], SIGSEGV);
  EXPECT_EQ(m["signal_name"], "SIGSEGV");
  auto r = RunCommand({StrataBin(), "report", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("killed by signal 11 (SIGSEGV)"), std::string::npos) << r.out;
}

// --- strata's own failures ---------------------------------------------------

// Reproduction: `record` of a command that does not exist wrote a trace whose
// report blamed "a statically linked program, a setuid binary...".
TEST(FaultSafety, CommandThatCannotRunFailsClearlyAndLeavesNoTrace) {
  std::string base = TempDir("cannot_run");
  fs::create_directories(base);
  Spit(base + "/not-executable", "#!/bin/sh\nexit 0\n");
  ::chmod((base + "/not-executable").c_str(), 0644);
  struct Case {
    std::string cmd;
    int code;
  };
  for (const Case& c : {Case{"no-such-command-strata-xyz", 127}, Case{base + "/no/such/program", 127},
                        Case{base + "/not-executable", 126}, Case{base, 126}}) {
    std::string dir = base + "/trace-" + std::to_string(c.code) + "-" + std::to_string(c.cmd.size());
    auto r = RunCommand({StrataBin(), "record", "-o", dir, "--", c.cmd});
    EXPECT_EQ(r.exit_code, c.code) << c.cmd << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("cannot run '" + c.cmd + "'"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir)) << c.cmd << ": a trace was left behind";
  }
}

TEST(FaultSafety, SetupFailuresExit125) {
  std::string dir = TempDir("setup125");
  ASSERT_EQ(testing::Record(dir, {"/bin/true"}).exit_code, 0);
  auto again = testing::Record(dir, {"/bin/true"});
  EXPECT_EQ(again.exit_code, 125) << again.err;
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  auto proc = RunCommand({StrataBin(), "record", "-q", "-o", "/proc/strata-cannot-write", "--", "/bin/true"});
  EXPECT_EQ(proc.exit_code, 125) << proc.err;
  std::string file = TempDir("setup125_file");
  Spit(file, "x");
  auto not_dir = RunCommand({StrataBin(), "record", "-q", "-o", file, "--", "/bin/true"});
  EXPECT_EQ(not_dir.exit_code, 125) << not_dir.err;
  EXPECT_NE(not_dir.err.find("not a directory"), std::string::npos) << not_dir.err;
}

}  // namespace
}  // namespace strata

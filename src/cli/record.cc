// `strata record [options] -- CMD ARGS...`: the supervisor.
//
// It prepares the trace directory (CTF metadata + manifest), starts CMD with
// libstrata preloaded (children inherit it through the environment, so fork
// and exec are followed), forwards termination signals, waits, completes the
// manifest (exit status, per-stream losses) and exits with CMD's status.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/error.h"
#include "base/files.h"
#include "cli/commands.h"
#include "cli/manifest.h"
#include "format/control.h"
#include "format/tsdl.h"

extern char** environ;

namespace strata::cli {
namespace {

struct RecordOptions {
  std::string output;
  bool force = false;
  uint64_t buffer_mb = 64;
  uint64_t chunk_kb = 256;
  std::string policy = "drop";
  uint32_t flush_ms = 100;
  std::string clock = "auto";
  bool quiet = false;
  // Framework level (PyTorch): what the observer records; lands in <dir>/control.
  std::string ops = "all";
  bool shapes = false;
  std::string ops_steps;       // "A-B": the detail tier for steps A..B
  int64_t batch_size = 0;
  int64_t skip_steps = 0;
  uint32_t sample_window_ms = 10;
  uint32_t sample_period_ms = 200;
  bool no_memory = false;
  std::vector<std::string> command;
};

// "10-20" or "15" -> [first, last]
bool ParseStepRange(const std::string& s, int64_t* first, int64_t* last) {
  if (s.empty()) return false;
  auto dash = s.find('-');
  auto num = [](const std::string& t, int64_t* out) {
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 15) return false;
    *out = std::stoll(t);
    return true;
  };
  if (dash == std::string::npos) return num(s, first) && num(s, last);
  return num(s.substr(0, dash), first) && num(s.substr(dash + 1), last) && *first <= *last;
}

// The observer library and the libtorch it was built against (written next to
// it by the build): the soname libstrata checks for at main() in C++ programs.
std::string TorchProbe(const std::string& lib_dir) {
  auto text = ReadFile(lib_dir + "/libstrata_torch.json");
  if (!text.ok()) return "";
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("libtorch_cpu") || !j["libtorch_cpu"].is_string()) return "";
  return j["libtorch_cpu"].get<std::string>();
}

volatile sig_atomic_t g_child = 0;

void ForwardSignal(int sig, siginfo_t* info, void*) {
  // A terminal's Ctrl-C reaches the whole foreground group (CMD included) from the
  // kernel; forward only what a process sent to us, so CMD gets each signal once.
  if (info && info->si_code == SI_KERNEL) return;
  if (g_child > 0) ::kill(g_child, sig);
}

std::string DefaultOutput() {
  time_t now = ::time(nullptr);
  struct tm tm;
  ::localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "strata-%Y%m%d-%H%M%S", &tm);
  std::string base = buf;
  std::string out = base;
  for (int i = 1; PathExists(out); ++i) out = base + "-" + std::to_string(i);
  return out;
}

Status PrepareDirectory(const RecordOptions& o) {
  if (IsDirectory(o.output)) {
    auto entries = ListFiles(o.output);
    bool has_trace = PathExists(JoinPath(o.output, "ctf")) || PathExists(JoinPath(o.output, "strata.json"));
    if (has_trace && !o.force)
      return Err(StatusCode::kInvalidArgument, "{} already holds a trace (use --force to overwrite)", o.output);
    if (has_trace) {
      std::string ctf = JoinPath(o.output, "ctf");
      if (auto files = ListFiles(ctf); files.ok())
        for (const auto& f : *files) ::unlink(JoinPath(ctf, f).c_str());
      ::unlink(JoinPath(o.output, "strata.json").c_str());
    }
  } else if (PathExists(o.output)) {
    return Err(StatusCode::kInvalidArgument, "{} exists and is not a directory", o.output);
  }
  STRATA_RETURN_IF_ERROR(MakeDirs(JoinPath(o.output, "ctf")));
  // Prove the directory is writable now, before CMD runs.
  std::string probe = JoinPath(o.output, ".strata-write-test");
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoErr(errno, "cannot write to {}", o.output);
  ::close(fd);
  ::unlink(probe.c_str());
  return OkStatus();
}

std::string AbsolutePath(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[4096];
  if (!::getcwd(cwd, sizeof cwd)) return p;
  return JoinPath(cwd, p);
}

// Builds CMD's environment: ours plus the recorder's configuration.
std::vector<std::string> ChildEnvironment(const RecordOptions& o, const InstallPaths& paths, const std::string& dir) {
  std::vector<std::string> env;
  std::string preload = paths.lib_dir + "/libstrata.so";
  // The import hook (sitecustomize) first, then the `strata` package itself, so
  // that `import strata` works in the program without installing anything.
  std::string pythonpath = paths.python_dir + "/strata_hook:" + paths.python_dir;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("LD_PRELOAD=", 0) == 0) {
      preload += ":" + kv.substr(11);
      continue;
    }
    if (kv.rfind("PYTHONPATH=", 0) == 0) {
      if (kv.size() > 11) pythonpath += ":" + kv.substr(11);
      continue;
    }
    if (kv.rfind("STRATA_", 0) == 0 && kv.rfind("STRATA_LIB_DIR=", 0) != 0) continue;
    env.push_back(std::move(kv));
  }
  env.push_back("LD_PRELOAD=" + preload);
  env.push_back("STRATA_TRACE_DIR=" + dir);
  env.push_back("STRATA_BUFFER_BYTES=" + std::to_string(o.buffer_mb << 20));
  env.push_back("STRATA_CHUNK_BYTES=" + std::to_string(o.chunk_kb << 10));
  env.push_back("STRATA_BUFFER_POLICY=" + o.policy);
  env.push_back("STRATA_FLUSH_MS=" + std::to_string(o.flush_ms));
  if (o.clock != "auto") env.push_back("STRATA_CLOCK=" + o.clock);
  env.push_back("PYTHONPATH=" + pythonpath);
  std::string torch_lib = paths.lib_dir + "/libstrata_torch.so";
  if (PathExists(torch_lib)) {
    env.push_back("STRATA_TORCH_LIB=" + torch_lib);
    std::string probe = TorchProbe(paths.lib_dir);
    if (!probe.empty()) env.push_back("STRATA_TORCH_PROBE=" + probe);
  }
  return env;
}

int RunRecord(RecordOptions o, const std::vector<std::string>& remaining) {
  // CMD follows "--", or is the first argument that is not an option of ours.
  std::vector<std::string> cmd = remaining;
  if (!cmd.empty() && cmd[0].size() > 1 && cmd[0][0] == '-') {
    PrintError("record: unknown option " + cmd[0]);
    std::fprintf(stderr, "Run 'strata record --help' for usage.\n");
    return 2;
  }
  if (TrailingCommandGiven()) {
    if (!cmd.empty()) {
      PrintError("record: unexpected argument '" + cmd[0] + "' before '--'");
      return 2;
    }
    cmd = TrailingCommand();
  }
  if (cmd.empty()) {
    PrintError("record: no command given (usage: strata record [options] -- CMD [ARGS...])");
    return 2;
  }
  if (o.policy != "drop" && o.policy != "block") {
    PrintError("record: --buffer-policy must be 'drop' or 'block'");
    return 2;
  }
  format::ControlBlock control;
  format::InitControlBlock(&control);
  format::OpsMode mode;
  if (!format::ParseOpsMode(o.ops, &mode)) {
    PrintError("record: --ops must be 'all', 'sampled' or 'off'");
    return 2;
  }
  control.ops_mode.store(static_cast<uint32_t>(mode));
  control.detail.store(o.shapes ? 1 : 0);
  if (!o.ops_steps.empty()) {
    int64_t first = 0, last = 0;
    if (!ParseStepRange(o.ops_steps, &first, &last)) {
      PrintError("record: --ops-steps must be a step number or a range A-B (e.g. 10-20)");
      return 2;
    }
    control.detail_first_step.store(first);
    control.detail_last_step.store(last);
  }
  if (o.sample_window_ms > o.sample_period_ms) {
    PrintError("record: --sample-window must not exceed --sample-period");
    return 2;
  }
  control.sample_window_ms.store(o.sample_window_ms);
  control.sample_period_ms.store(o.sample_period_ms);
  control.batch_size.store(o.batch_size);
  control.memory.store(o.no_memory ? 0 : 1);
  if (o.output.empty()) o.output = DefaultOutput();
  o.output = AbsolutePath(o.output);
  o.command = cmd;

  InstallPaths paths = FindInstallPaths();
  if (!PathExists(paths.lib_dir + "/libstrata.so")) {
    PrintError("cannot find libstrata.so in " + paths.lib_dir + " (set STRATA_LIB_DIR)");
    return 1;
  }
  Status st = PrepareDirectory(o);
  if (!st.ok()) {
    PrintError(st.message());
    return 1;
  }

  Manifest manifest = NewManifest(cmd);
  format::TraceIdentity id;
  id.uuid = format::NewRandomUuid();
  id.clock_offset_ns = manifest.start_realtime_ns - manifest.start_monotonic_ns;
  id.hostname = manifest.hostname;
  st = WriteFileAtomic(JoinPath(JoinPath(o.output, "ctf"), "metadata"), format::GenerateMetadata(id));
  if (st.ok()) {
    manifest.options = {{"buffer_bytes", o.buffer_mb << 20}, {"chunk_bytes", o.chunk_kb << 10},
                        {"buffer_policy", o.policy},        {"flush_ms", o.flush_ms},
                        {"clock", o.clock},                  {"ops", o.ops},
                        {"shapes", o.shapes},                {"ops_steps", o.ops_steps},
                        {"batch_size", o.batch_size},        {"skip_steps", o.skip_steps},
                        {"sample_window_ms", o.sample_window_ms}, {"sample_period_ms", o.sample_period_ms},
                        {"memory", !o.no_memory}};
    st = format::WriteControlFile(JoinPath(o.output, format::kControlFileName), control);
  }
  if (st.ok()) {
    manifest.trace_uuid = format::UuidToString(id.uuid);
    st = WriteManifest(o.output, manifest);
  }
  if (!st.ok()) {
    PrintError(st.message());
    return 1;
  }

  std::vector<std::string> env_strings = ChildEnvironment(o, paths, o.output);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& s : cmd) argv.push_back(s.data());
  argv.push_back(nullptr);

  // A close-on-exec pipe tells us whether exec succeeded.
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    PrintError(std::string("pipe: ") + std::strerror(errno));
    return 1;
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = ForwardSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);

  if (!o.quiet) std::fprintf(stderr, "strata: recording to %s\n", o.output.c_str());
  pid_t pid = ::fork();
  if (pid < 0) {
    PrintError(std::string("fork: ") + std::strerror(errno));
    return 1;
  }
  if (pid == 0) {
    ::close(pipefd[0]);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_DFL);
    ::execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    ssize_t w = ::write(pipefd[1], &err, sizeof err);
    (void)w;
    ::_exit(err == ENOENT ? 127 : 126);
  }
  g_child = pid;
  ::close(pipefd[1]);
  int exec_errno = 0;
  ssize_t n;
  do n = ::read(pipefd[0], &exec_errno, sizeof exec_errno);
  while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    PrintError("cannot run '" + cmd[0] + "': " + std::strerror(exec_errno));
    (void)FinishManifest(o.output, &manifest, exec_errno == ENOENT ? 127 : 126, 0, "exec failed");
    return exec_errno == ENOENT ? 127 : 126;
  }
  int rc = 0, sig = 0;
  if (WIFEXITED(status)) rc = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) {
    sig = WTERMSIG(status);
    rc = 128 + sig;
  }
  st = FinishManifest(o.output, &manifest, rc, sig, "");
  if (!st.ok()) PrintError(st.message());
  if (!o.quiet) {
    std::fprintf(stderr, "strata: trace written to %s (%llu events, %llu lost)\n", o.output.c_str(),
                 static_cast<unsigned long long>(manifest.events), static_cast<unsigned long long>(manifest.lost));
  }
  return rc;
}

}  // namespace

void AddRecordCommand(CLI::App& app) {
  auto opts = std::make_shared<RecordOptions>();
  CLI::App* cmd = app.add_subcommand("record", "Run CMD unmodified and record a trace of it");
  cmd->prefix_command();
  cmd->allow_extras();
  cmd->add_option("-o,--output", opts->output, "Trace directory (default: ./strata-DATE-TIME)");
  cmd->add_flag("-f,--force", opts->force, "Overwrite a trace already in the output directory");
  cmd->add_option("--buffer-size", opts->buffer_mb, "Buffer memory per process, MiB")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--chunk-size", opts->chunk_kb, "Buffer chunk size, KiB")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--buffer-policy", opts->policy, "When buffers are full: drop (and count) or block")->capture_default_str();
  cmd->add_option("--flush-interval", opts->flush_ms, "Flush period, ms (bounds the loss if CMD is killed)")->check(CLI::Range(1, 60000))->capture_default_str();
  cmd->add_option("--clock", opts->clock, "Hot-path clock: auto, tsc or monotonic")->check(CLI::IsMember({"auto", "tsc", "monotonic"}))->capture_default_str();
  cmd->add_flag("-q,--quiet", opts->quiet, "Print nothing but errors");
  cmd->add_option("--ops", opts->ops,
                  "Framework ops (PyTorch): all (every op), sampled (every op in short windows: a statistical "
                  "profile at low cost), off (steps, scopes and memory only)")
      ->check(CLI::IsMember({"all", "sampled", "off"}))
      ->capture_default_str();
  cmd->add_flag("--shapes", opts->shapes,
                "Record input shapes, dtypes, FLOP/byte estimates and tensor ids (dataflow edges) of every op");
  cmd->add_option("--ops-steps", opts->ops_steps, "Record the --shapes detail for these steps only (e.g. 10-20)");
  cmd->add_option("--batch-size", opts->batch_size, "Samples per step, for throughput (default: the first input's leading dimension)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--skip-steps", opts->skip_steps, "Leave the first N steps (warm-up) out of step statistics")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--sample-window", opts->sample_window_ms, "--ops sampled: length of a window of recorded ops, ms")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  cmd->add_option("--sample-period", opts->sample_period_ms, "--ops sampled: mean time between windows, ms")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  cmd->add_flag("--no-memory", opts->no_memory, "Do not record framework allocator events");
  cmd->callback([opts, cmd]() {
    int rc = RunRecord(*opts, cmd->remaining());
    throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata::cli

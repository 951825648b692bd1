// `strata record [options] -- CMD ARGS...`: the supervisor.
//
// It prepares the trace directory (CTF metadata + manifest), forks CMD's
// process and parks it on a pipe while the OS collector opens its kernel
// events on it (they arm at exec), then lets it exec CMD with libstrata
// preloaded (children inherit it through the environment, so fork and exec are
// followed). It forwards the signals sent to it, waits, stops the OS collector,
// completes the manifest (exit status, per-stream losses, what each collector
// could not do) and exits with CMD's status, or dies of CMD's signal.
//
// The trace directory is held with an exclusive lock while recording, and every
// file in it is created new (never through a link planted there). Until the
// manifest is complete it says "recording": a trace whose supervisor was killed
// says so. strata's own failures exit 125 (setup), 126 (CMD cannot be executed)
// or 127 (CMD not found), as env(1) and timeout(1) do.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/error.h"
#include "base/files.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/live_serve.h"
#include "cli/manifest.h"
#include "cli/supervisor.h"
#include "cli/torch_observer.h"
#include "collectors/os/os_collector.h"
#include "format/control.h"
#include "format/tsdl.h"
#include "recorder/supervision.h"

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
  std::string accel = "auto";
  std::string gpu_metrics;
  std::string cuda_api = "callbacks";
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
  // OS level (collectors/os).
  bool os = true;
  bool sched_detail = false;
  bool syscalls = false;
  uint32_t sample_hz = 99;
  std::string unwind = "fp";
  uint32_t stack_bytes = 8192;
  bool page_faults = false;
  bool block_io = false;
  bool python_stacks = true;
  uint32_t proc_hz = 10;
  uint32_t os_buffer_kb = 0;
  // Live (strata record --serve).
  bool serve = false;
  LiveServeOptions live;
  std::string cuda_activity;  // all, sampled, window, off (default: all; sampled with --serve)
  uint32_t cuda_sample_every = 50;
};

// The accelerator collectors `strata record` can inject, each through its
// vendor's own loading mechanism.
struct AccelCollector {
  const char* name;     // --accel and manifest name
  const char* library;  // next to libstrata.so
  const char* env;      // the variable the vendor runtime reads
  const char* sep;      // how that variable joins several libraries
};
constexpr AccelCollector kAccelCollectors[] = {
    {"cuda", "libstrata_cupti.so", "CUDA_INJECTION64_PATH", nullptr},
    {"opencl", "libstrata_opencl.so", "OPENCL_LAYERS", ":"},
    {"hsa", "libstrata_hsa.so", "HSA_TOOLS_LIB", " "},
};

bool AccelWanted(const RecordOptions& o, const std::string& name) {
  if (o.accel == "auto" || o.accel == "all") return true;
  if (o.accel == "none") return false;
  size_t pos = 0;
  while (pos <= o.accel.size()) {
    size_t comma = o.accel.find(',', pos);
    if (comma == std::string::npos) comma = o.accel.size();
    if (o.accel.compare(pos, comma - pos, name) == 0) return true;
    pos = comma + 1;
  }
  return false;
}

// What the manifest says when no process of CMD reports on a collector: the
// most likely reason there is no data, checked on this host where possible.
std::string SilentReason(const std::string& name) {
  if (name == "cuda") {
    if (!PathExists("/proc/driver/nvidia/version"))
      return "no NVIDIA driver on this host (/proc/driver/nvidia/version absent): CUDA cannot initialize, so the "
             "CUDA driver never loaded libstrata_cupti.so; no CUDA activity was recorded";
    return "no process of CMD initialized CUDA (made no CUDA call), so the CUDA driver never loaded "
           "libstrata_cupti.so; no CUDA activity was recorded";
  }
  if (name == "opencl")
    return "no process of CMD made an OpenCL call through an ICD loader with layer support (OPENCL_LAYERS); no "
           "OpenCL activity was recorded";
  if (!PathExists("/dev/kfd"))
    return "no AMD GPU driver on this host (/dev/kfd absent): the HSA runtime cannot initialize, so it never loaded "
           "libstrata_hsa.so; no HSA activity was recorded";
  return "no process of CMD initialized the HSA runtime (hsa_init), so it never loaded libstrata_hsa.so; no HSA "
         "activity was recorded";
}

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

std::string AbsolutePath(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[4096];
  if (!::getcwd(cwd, sizeof cwd)) return p;
  return JoinPath(cwd, p);
}

// strata's variables in the caller's environment are dropped (a recording run
// from inside another must not write into the outer one's trace, or take its
// observer), except the documented knobs of the program's collectors, which
// `strata record` never sets itself: turning the PyTorch module scopes, call
// sites or loop-head tracing off, CUPTI's buffers, HSA's API detail.
bool PassedToProgram(const std::string& kv) {
  static const char* const kKnobs[] = {
      "STRATA_LIB_DIR=",        "STRATA_TORCH_LOOP_HEAD=",    "STRATA_TORCH_MODULES=",
      "STRATA_TORCH_MODULES_VIA=", "STRATA_TORCH_SITES=",     "STRATA_CUPTI_BUFFERS=",
      "STRATA_CUPTI_BUFFER_BYTES=", "STRATA_CUPTI_FLUSH_MS=", "STRATA_HSA_API=",
  };
  for (const char* k : kKnobs)
    if (kv.rfind(k, 0) == 0) return true;
  return false;
}

// Builds CMD's environment: ours plus the recorder's configuration.
std::vector<std::string> ChildEnvironment(const RecordOptions& o, const InstallPaths& paths, const std::string& dir,
                                          const TorchObserver& torch, Manifest* manifest) {
  std::vector<std::string> env;
  std::string preload = paths.lib_dir + "/libstrata.so";
  // MPI's calls (collectors/mpi): defines MPI_* over PMPI_*, inert in a
  // process that does not use MPI.
  // (Said in the manifest by the processes that call MPI; nothing otherwise.)
  if (PathExists(paths.lib_dir + "/libstrata_mpi.so")) preload += ":" + paths.lib_dir + "/libstrata_mpi.so";
  // The import hook (sitecustomize) first, then the `strata` package itself, so
  // that `import strata` works in the program without installing anything.
  std::string pythonpath = paths.python_dir + "/strata_hook:" + paths.python_dir;
  // Accelerator collectors: ours first in each vendor variable, the user's kept.
  std::vector<std::pair<std::string, std::string>> accel_env;
  for (const AccelCollector& c : kAccelCollectors) {
    std::string lib = paths.lib_dir + "/" + c.library;
    if (!AccelWanted(o, c.name)) {
      AddCollector(manifest, c.name, "off", "not requested (--accel " + o.accel + ")");
      continue;
    }
    if (!PathExists(lib)) {
      AddCollector(manifest, c.name, "unavailable",
                   std::string("this strata was built without ") + c.library + " (its SDK was absent at build time)");
      continue;
    }
    std::string value = lib;
    if (const char* cur = ::secure_getenv(c.env); cur && *cur) {
      if (!c.sep) {
        // One injection library only: the user's own wins, and we say so.
        AddCollector(manifest, c.name, "unavailable",
                     std::string(c.env) + " is already set to " + cur + "; strata's CUDA collector was not injected");
        continue;
      }
      value += std::string(c.sep) + cur;
    }
    accel_env.emplace_back(c.env, value);
    AddCollector(manifest, c.name, "enabled", std::string(c.env) + "=" + lib);
    manifest->silent_collectors[c.name] = SilentReason(c.name);
    if (std::string(c.name) == "cuda") {
      // NVTX (frameworks' annotations) reaches CUPTI only when CUPTI is the NVTX
      // injection; libstrata_cupti forwards it to the CUPTI it links.
      if (!::secure_getenv("NVTX_INJECTION64_PATH")) accel_env.emplace_back("NVTX_INJECTION64_PATH", lib);
      if (!o.gpu_metrics.empty()) accel_env.emplace_back("STRATA_GPU_METRICS", o.gpu_metrics);
      if (o.cuda_api != "callbacks") accel_env.emplace_back("STRATA_CUDA_API", o.cuda_api);
    }
  }
  // NCCL's tasks (collectors/nccl): NCCL loads its profiler plugin from
  // NCCL_PROFILER_PLUGIN; the user's own plugin wins.
  const char* user_nccl_plugin = ::secure_getenv("NCCL_PROFILER_PLUGIN");
  if ((!user_nccl_plugin || !*user_nccl_plugin) && PathExists(paths.lib_dir + "/libstrata_nccl.so"))
    accel_env.emplace_back("NCCL_PROFILER_PLUGIN", paths.lib_dir + "/libstrata_nccl.so");
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
    bool replaced = false;
    for (const auto& [k, v] : accel_env) replaced = replaced || kv.rfind(k + "=", 0) == 0;
    if (replaced) continue;
    if (kv.rfind("STRATA_", 0) == 0 && !PassedToProgram(kv)) continue;
    env.push_back(std::move(kv));
  }
  env.push_back("LD_PRELOAD=" + preload);
  env.push_back("STRATA_TRACE_DIR=" + dir);
  env.push_back("STRATA_BUFFER_BYTES=" + std::to_string(o.buffer_mb << 20));
  env.push_back("STRATA_CHUNK_BYTES=" + std::to_string(o.chunk_kb << 10));
  env.push_back("STRATA_BUFFER_POLICY=" + o.policy);
  env.push_back("STRATA_FLUSH_MS=" + std::to_string(o.flush_ms));
  if (o.clock != "auto") env.push_back("STRATA_CLOCK=" + o.clock);
  for (const auto& [k, v] : accel_env) env.push_back(k + "=" + v);
  env.push_back("PYTHONPATH=" + pythonpath);
  std::string torch_lib = torch.library.empty() ? paths.lib_dir + "/libstrata_torch.so" : torch.library;
  if (PathExists(torch_lib)) {
    env.push_back("STRATA_TORCH_LIB=" + torch_lib);
    std::string probe = ObserverLibtorch(torch_lib);
    if (!probe.empty()) env.push_back("STRATA_TORCH_PROBE=" + probe);
  }
  if (!torch.note.empty()) manifest->options["torch_observer"] = torch.note;
  return env;
}

collectors::os::OsOptions OsOptionsFrom(const RecordOptions& o) {
  collectors::os::OsOptions x;
  x.sched_detail = o.sched_detail;
  x.syscalls = o.syscalls;
  x.sample_hz = o.sample_hz;
  x.unwind = o.unwind == "dwarf" ? collectors::os::Unwind::kDwarf : collectors::os::Unwind::kFramePointer;
  x.dwarf_stack_bytes = o.stack_bytes;
  x.page_faults = o.page_faults;
  x.block_io = o.block_io;
  x.python = o.python_stacks;
  x.proc_hz = o.proc_hz;
  x.ring_kb = o.os_buffer_kb;
  x.flush_ms = o.flush_ms;
  return x;
}

// The OS collector's notes go to the manifest; what is missing is also said on stderr.
void AddOsNotes(Manifest* m, const collectors::os::OsCollector& os, bool quiet) {
  for (const auto& n : os.notes()) {
    AddCollector(m, n.name, n.state, n.detail);
    if (!quiet && (n.state == "partial" || n.state == "unavailable"))
      std::fprintf(stderr, "strata: %s %s: %s\n", n.name.c_str(), n.state.c_str(), n.detail.c_str());
  }
}

int RunRecord(RecordOptions o, const std::vector<std::string>& remaining) {
  // CMD follows "--", or is the first argument that is not an option of ours.
  std::vector<std::string> cmd = remaining;
  if (!cmd.empty() && cmd[0].size() > 1 && cmd[0][0] == '-') {
    PrintError("record: unknown option " + cmd[0]);
    std::fprintf(stderr, "Run 'strata record --help' for usage.\n");
    return kExitUsage;
  }
  if (TrailingCommandGiven()) {
    if (!cmd.empty()) {
      PrintError("record: unexpected argument '" + cmd[0] + "' before '--'");
      return kExitUsage;
    }
    cmd = TrailingCommand();
  }
  if (cmd.empty()) {
    PrintError("record: no command given (usage: strata record [options] -- CMD [ARGS...])");
    return kExitUsage;
  }
  for (size_t pos = 0; o.accel != "auto" && o.accel != "all" && o.accel != "none" && pos <= o.accel.size();) {
    size_t comma = o.accel.find(',', pos);
    if (comma == std::string::npos) comma = o.accel.size();
    std::string item = o.accel.substr(pos, comma - pos);
    if (item != "cuda" && item != "opencl" && item != "hsa") {
      PrintError("record: --accel: unknown collector '" + item + "' (auto, none, or a list of cuda,opencl,hsa)");
      return kExitUsage;
    }
    pos = comma + 1;
  }
  if (!o.gpu_metrics.empty() && o.gpu_metrics.rfind("kernels=", 0) != 0 && o.gpu_metrics.rfind("steps=", 0) != 0) {
    PrintError("record: --gpu-metrics must be kernels=N[,skip=M] or steps=A-B");
    return kExitUsage;
  }
  if (o.policy != "drop" && o.policy != "block") {
    PrintError("record: --buffer-policy must be 'drop' or 'block'");
    return kExitUsage;
  }
  if (o.unwind != "fp" && o.unwind != "dwarf") {
    PrintError("record: --unwind must be 'fp' or 'dwarf'");
    return kExitUsage;
  }
  format::ControlBlock control;
  format::InitControlBlock(&control);
  format::OpsMode mode;
  if (!format::ParseOpsMode(o.ops, &mode)) {
    PrintError("record: --ops must be 'all', 'sampled' or 'off'");
    return kExitUsage;
  }
  control.ops_mode.store(static_cast<uint32_t>(mode));
  control.detail.store(o.shapes ? 1 : 0);
  if (!o.ops_steps.empty()) {
    int64_t first = 0, last = 0;
    if (!ParseStepRange(o.ops_steps, &first, &last)) {
      PrintError("record: --ops-steps must be a step number or a range A-B (e.g. 10-20)");
      return kExitUsage;
    }
    control.detail_first_step.store(first);
    control.detail_last_step.store(last);
  }
  if (o.sample_window_ms > o.sample_period_ms) {
    PrintError("record: --sample-window must not exceed --sample-period");
    return kExitUsage;
  }
  control.sample_window_ms.store(o.sample_window_ms);
  control.sample_period_ms.store(o.sample_period_ms);
  control.batch_size.store(o.batch_size);
  control.memory.store(o.no_memory ? 0 : 1);
  format::CudaActivity cuda_activity = o.serve ? format::CudaActivity::kSampled : format::CudaActivity::kAll;
  if (!o.cuda_activity.empty() && !format::ParseCudaActivity(o.cuda_activity, &cuda_activity)) {
    PrintError("record: --cuda-activity must be all, sampled, window or off");
    return kExitUsage;
  }
  control.cuda_activity.store(static_cast<uint32_t>(cuda_activity));
  control.cuda_sample_every.store(o.cuda_sample_every);
  o.command = cmd;

  InstallPaths paths = FindInstallPaths();
  if (!PathExists(paths.lib_dir + "/libstrata.so")) {
    PrintError("cannot find libstrata.so in " + paths.lib_dir + " (set STRATA_LIB_DIR)");
    return kExitRecordSetup;
  }
  // A command that cannot run is said now, and leaves no trace behind.
  std::string why;
  if (int rc = ResolveCommand(cmd[0], &why); rc != 0) {
    PrintError("cannot run '" + cmd[0] + "': " + why);
    return rc;
  }
  InstallSignalHandlers();
  if (o.output.empty()) o.output = NewDefaultOutput();
  o.output = AbsolutePath(o.output);
  auto dir_fd = TakeTraceDirectory(o.output, o.force);
  if (!dir_fd.ok()) {
    PrintError(dir_fd.status().message());
    return kExitRecordSetup;
  }
  // *dir_fd stays open (close-on-exec): it holds the directory's lock until strata exits.

  Manifest manifest = NewManifest(cmd);
  // Until FinishManifest replaces it, the manifest says the recording is under
  // way: a reader that finds it so while no process holds the directory's lock
  // knows the supervisor died.
  manifest.extra["recording"] = {{"state", "running"}, {"supervisor_pid", ::getpid()}};
  format::TraceIdentity id;
  id.uuid = format::NewRandomUuid();
  id.clock_offset_ns = manifest.start_realtime_ns - manifest.start_monotonic_ns;
  id.hostname = manifest.hostname;
  Status st = WriteFileAtomic(JoinPath(JoinPath(o.output, "ctf"), "metadata"), format::GenerateMetadata(id));
  if (st.ok()) {
    manifest.options = {{"buffer_bytes", o.buffer_mb << 20}, {"chunk_bytes", o.chunk_kb << 10},
                        {"buffer_policy", o.policy},        {"flush_ms", o.flush_ms},
                        {"clock", o.clock},                 {"os", o.os},
                        {"sched", o.sched_detail},          {"syscalls", o.syscalls},
                        {"sample_hz", o.sample_hz},
                        {"unwind", o.unwind},               {"page_faults", o.page_faults},
                        {"block_io", o.block_io},           {"proc_hz", o.proc_hz},
                        {"ops", o.ops},
                        {"shapes", o.shapes},                {"ops_steps", o.ops_steps},
                        {"batch_size", o.batch_size},        {"skip_steps", o.skip_steps},
                        {"sample_window_ms", o.sample_window_ms}, {"sample_period_ms", o.sample_period_ms},
                        {"memory", !o.no_memory},
                        {"cuda_activity", format::CudaActivityName(cuda_activity)},
                        {"cuda_sample_every", o.cuda_sample_every}};
    // The switches start from the options; `strata control` changes them while CMD runs.
    st = format::WriteControlFile(JoinPath(o.output, format::kControlFileName), control);
  }
  if (st.ok()) {
    manifest.trace_uuid = format::UuidToString(id.uuid);
    st = WriteManifest(o.output, manifest);
  }
  if (!st.ok()) {
    PrintError(st.message());
    return kExitRecordSetup;
  }

  LiveServe live;
  if (o.serve) {
    if (Status ls = live.Start(o.output, cmd, o.live, o.quiet); !ls.ok()) {
      PrintError("record: --serve: " + ls.message());
      return kExitRecordSetup;
    }
  }

  TorchObserver torch = ObserverFor(cmd, paths, o.quiet);
  std::vector<std::string> env_strings = ChildEnvironment(o, paths, o.output, torch, &manifest);
  manifest.options["accel"] = o.accel;
  if (!o.gpu_metrics.empty()) manifest.options["gpu_metrics"] = o.gpu_metrics;
  if (o.cuda_api != "callbacks") manifest.options["cuda_api"] = o.cuda_api;
  st = WriteManifest(o.output, manifest);
  if (!st.ok()) {
    PrintError(st.message());
    return kExitRecordSetup;
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& s : cmd) argv.push_back(s.data());
  argv.push_back(nullptr);

  // A close-on-exec pipe tells us whether exec succeeded; a second one holds the
  // child before exec until the OS collector's events are open on it.
  int pipefd[2], gofd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0 || ::pipe2(gofd, O_CLOEXEC) != 0) {
    PrintError(std::string("pipe: ") + std::strerror(errno));
    return kExitRecordSetup;
  }

  std::unique_ptr<collectors::os::OsCollector> os;
  if (o.os) os = std::make_unique<collectors::os::OsCollector>(OsOptionsFrom(o), JoinPath(o.output, "ctf"), id.uuid);

  // Takes the traced processes' buffers, so that what a killed one had buffered is still written and counted.
  recorder::Supervision supervision;
  Status sv = supervision.Start(o.output, id.uuid);
  if (!sv.ok()) PrintError(sv.message() + " (what a killed process had buffered will be lost, uncounted)");
  if (!o.quiet) std::fprintf(stderr, "strata: recording to %s\n", o.output.c_str());
  // Signals wait across fork: the child must not run our handlers, and the
  // parent forwards only once it knows the child's pid.
  sigset_t all, before;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &before);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    sigprocmask(SIG_SETMASK, &before, nullptr);
    PrintError(std::string("fork: ") + std::strerror(e));
    return kExitRecordSetup;
  }
  if (pid == 0) {
    RestoreSignalsForChild();
    sigprocmask(SIG_SETMASK, &before, nullptr);
    ::close(pipefd[0]);
    ::close(gofd[1]);
    // Wait for the go byte. EOF (the supervisor died) also lets CMD run: the
    // program must never be held back by strata.
    char go;
    while (::read(gofd[0], &go, 1) < 0 && errno == EINTR) {
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    ssize_t w = ::write(pipefd[1], &err, sizeof err);
    (void)w;
    ::_exit(err == ENOENT ? kExitNotFound : kExitCannotRun);
  }
  ProgramStarted(pid);
  sigprocmask(SIG_SETMASK, &before, nullptr);
  ::close(pipefd[1]);
  ::close(gofd[0]);
  manifest.extra["recording"]["program_pid"] = pid;
  if (os) {
    os->Open(pid);
    AddOsNotes(&manifest, *os, o.quiet);
    os->Start();
  }
  st = WriteManifest(o.output, manifest);
  if (!st.ok()) PrintError(st.message());
  ssize_t gw;
  do gw = ::write(gofd[1], "g", 1);
  while (gw < 0 && errno == EINTR);
  ::close(gofd[1]);
  int exec_errno = 0;
  ssize_t n;
  do n = ::read(pipefd[0], &exec_errno, sizeof exec_errno);
  while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);

  // Wait for CMD's end without reaping it: until it is reaped its pid cannot be
  // reused, so a signal forwarded meanwhile cannot reach another process.
  siginfo_t exited;
  std::memset(&exited, 0, sizeof exited);
  while (::waitid(P_PID, static_cast<id_t>(pid), &exited, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  ProgramEnded();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (os) {
    st = os->Stop();
    if (!st.ok()) PrintError("OS collector: " + st.message());
    AddOsNotes(&manifest, *os, /*quiet=*/true);
    for (const auto& note : os->notes())
      if (!o.quiet && note.name == "os.lost") std::fprintf(stderr, "strata: %s\n", note.detail.c_str());
    collectors::os::OsStats os_stats = os->stats();
    manifest.extra["os"] = {{"cpus", os_stats.cpus},           {"ring_kb", os_stats.ring_kb},
                            {"records", os_stats.records},     {"events", os_stats.events},
                            {"lost_records", os_stats.lost},   {"throttled", os_stats.throttled},
                            {"malformed", os_stats.malformed}, {"reordered", os_stats.reordered},
                            {"bytes_read", os_stats.bytes_read},
                            {"cpu_samples", os_stats.samples}, {"python_samples", os_stats.python_samples},
                            {"proc_samples", os_stats.proc_samples}};
  }
  manifest.supervised = supervision.started();
  manifest.accounts = supervision.Finish();
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    // CMD was checked before; it vanished or changed since. The trace says
    // plainly that nothing ran (not that the recorder failed to load).
    int rc = exec_errno == ENOENT ? kExitNotFound : kExitCannotRun;
    std::string reason = "the command could not be run: " + cmd[0] + ": " + std::strerror(exec_errno);
    PrintError("cannot run '" + cmd[0] + "': " + std::strerror(exec_errno));
    manifest.extra["recording"]["state"] = "not_run";
    manifest.extra["exit_status"] = rc;
    manifest.extra["note"] = reason;
    AddCollector(&manifest, "recorder", "unavailable", reason + "; nothing was recorded");
    (void)WriteManifest(o.output, manifest);
    return rc;
  }
  int rc = 0, sig = 0;
  if (WIFEXITED(status)) {
    rc = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    sig = WTERMSIG(status);
    rc = 128 + sig;
    manifest.extra["signal_name"] = SignalName(sig);
    if (WCOREDUMP(status)) manifest.extra["core_dumped"] = true;
  }
  manifest.extra["recording"]["state"] = "finished";
  st = FinishManifest(o.output, &manifest, rc, sig, "");
  if (!st.ok()) PrintError(st.message());
  // Losses are said even with --quiet: they change what the trace can tell.
  if (!o.quiet || manifest.lost > 0) {
    std::fprintf(stderr, "strata: trace written to %s (%.1f MiB, %s)\n", o.output.c_str(),
                 static_cast<double>(manifest.bytes) / (1024.0 * 1024.0), LossSummary(manifest).c_str());
    if (sig) std::fprintf(stderr, "strata: the program was killed by %s\n", SignalName(sig).c_str());
  }
  if (o.serve) {
    live.Finished(rc);
    live.ServeUntilStopped(o.quiet);
  }
  if (sig) DieLikeTheProgram(sig);
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
  cmd->add_option("--accel", opts->accel,
                  "Accelerator collectors to inject: auto (every one built), none, or a list of cuda,opencl,hsa")
      ->capture_default_str();
  cmd->add_option("--gpu-metrics", opts->gpu_metrics,
                  "CUDA: per-kernel hardware metrics (FLOPs, DRAM bytes, occupancy) through CUPTI's range profiler, "
                  "for a window: kernels=N[,skip=M] or steps=A-B. Kernels are replayed, so timings in the window "
                  "are not representative");
  cmd->add_option("--cuda-api", opts->cuda_api,
                  "CUDA API calls: callbacks (CUPTI callbacks, with the arguments that matter), all (callbacks on "
                  "every runtime and driver function), activity (CUPTI activity records: no arguments), none (device "
                  "activity only: no API calls, so launches are not linked to their kernels, and no NVTX ranges)")
      ->check(CLI::IsMember({"callbacks", "all", "activity", "none"}))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", opts->quiet, "Print nothing but errors");
  cmd->add_flag("--os,!--no-os", opts->os,
                "OS level: context switches, CPU samples, /proc counters (on by default: nearly free)");
  cmd->add_flag("--sched", opts->sched_detail,
                "Also the sleep state (S/D) and user stack of every wait, and wakeups (needs root or CAP_PERFMON; "
                "about 1-3 us per context switch)");
  cmd->add_flag("--syscalls", opts->syscalls,
                "Trace every system call of CMD (needs root or CAP_PERFMON; about 1-2 us per call)");
  cmd->add_option("--sample-hz", opts->sample_hz, "CPU sampling frequency per thread, Hz (0: off)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--unwind", opts->unwind, "Stack unwinding for CPU samples: fp (frame pointers) or dwarf (libdw)")
      ->check(CLI::IsMember({"fp", "dwarf"}))
      ->capture_default_str();
  cmd->add_option("--stack-size", opts->stack_bytes, "User stack bytes copied per sample with --unwind dwarf")
      ->check(CLI::Range(512, 65528))
      ->capture_default_str();
  cmd->add_flag("--page-faults", opts->page_faults, "Record every page fault (address and faulting code)");
  cmd->add_flag("--block-io", opts->block_io, "Record block I/O requests issued by CMD (needs root or CAP_PERFMON)");
  cmd->add_flag("--python-stacks,!--no-python-stacks", opts->python_stacks,
                "Read CPython 3.11 stacks for samples of Python threads")
      ->capture_default_str();
  cmd->add_option("--proc-hz", opts->proc_hz, "/proc counter sampling frequency, Hz (0: off)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--os-buffer", opts->os_buffer_kb, "Kernel ring size per CPU, KiB (0: automatic)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--ops", opts->ops,
                  "Framework ops (PyTorch): all (every op), sampled (every op in short windows: a statistical "
                  "profile at low cost), off (steps, scopes and memory only)")
      ->check(CLI::IsMember({"all", "sampled", "off"}))
      ->capture_default_str();
  cmd->add_flag("--shapes", opts->shapes,
                "Record input shapes, dtypes, FLOP/byte estimates and tensor ids (dataflow edges) of every op");
  cmd->add_option("--ops-steps", opts->ops_steps, "Record the detail tier for these steps only (e.g. 10-20): PyTorch, the --shapes detail; TensorFlow, its own profiler's ops, TraceMe events and allocations");
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
  cmd->add_option("--cuda-activity,--device-activity", opts->cuda_activity,
                  "Device activity (CUDA's CUPTI records, OpenCL's command events: kernels, copies): all (every "
                  "step), sampled (one step in --cuda-sample-every, and windows asked for), window (only windows "
                  "asked for: strata ctl --detail cuda, or the web UI), off (API calls only). Default: all; sampled "
                  "with --serve")
      ->check(CLI::IsMember({"all", "sampled", "window", "off"}));
  cmd->add_option("--cuda-sample-every", opts->cuda_sample_every, "--cuda-activity sampled: one step in this many")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_flag("--serve", opts->serve,
                "Serve the web UI while CMD runs: steps as they finish, detail on demand for the next N steps "
                "(POST /api/v1/record); after CMD ends, its trace, until Ctrl-C");
  cmd->add_option("--port", opts->live.port, "--serve: port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--bind", opts->live.bind, "--serve: address; any but loopback requires the printed token")
      ->capture_default_str();
  cmd->callback([opts, cmd]() {
    int rc = RunRecord(*opts, cmd->remaining());
    throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata::cli

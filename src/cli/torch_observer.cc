#include "cli/torch_observer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include <nlohmann/json.hpp>

#include "base/files.h"

extern char** environ;

namespace strata::cli {
namespace {

// Observer builds are kept per torch and per strata build: every new strata or
// observer source makes another (a few MB each). Past the newest 8 by last use,
// the others are removed when a new one is built.
constexpr size_t kKeptObservers = 8;

// Runs argv (PATH searched), its stdout and stderr into *out; kills it after
// timeout_s. Returns its exit status (124 on timeout, 127 when it cannot run).
int RunCapture(const std::vector<std::string>& argv, int timeout_s, std::string* out) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return 127;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> av = argv;
  std::vector<char*> a;
  for (auto& s : av) a.push_back(s.data());
  a.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  if (rc != 0) {
    ::close(p[0]);
    return 127;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd pf{p[0], POLLIN, 0};
    int n = ::poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t r = ::read(p[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (out->size() < (1u << 20)) out->append(buf, static_cast<size_t>(r));
  }
  ::close(p[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return 124;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string LastLine(const std::string& s) {
  std::string t = Trim(s);
  auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

bool IsPython(const std::string& argv0) {
  std::string base = argv0.substr(argv0.rfind('/') + 1);
  if (base.rfind("python", 0) != 0) return false;
  return base.find_first_not_of("0123456789.", 6) == std::string::npos;
}

// argv0 as execvp finds it: itself when it names a path, else the first
// executable of that name on PATH ("" when none).
std::string OnPath(const std::string& argv0) {
  if (argv0.find('/') != std::string::npos) return argv0;
  const char* path = ::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t at = 0;
  while (at <= dirs.size()) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(at, end - at);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + argv0;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return "";
}

}  // namespace

std::string PythonOf(const std::vector<std::string>& cmd) {
  if (cmd.empty()) return "";
  if (IsPython(cmd[0])) return cmd[0];
  // A launcher script (torchrun, accelerate, deepspeed, an executable
  // train.py): the interpreter its #! line names, directly or through env.
  std::string script = OnPath(cmd[0]);
  if (script.empty()) return "";
  std::string line;
  if (FILE* f = std::fopen(script.c_str(), "rb")) {
    char head[256];
    size_t n = std::fread(head, 1, sizeof head, f);
    std::fclose(f);
    line.assign(head, n);
  }
  if (line.rfind("#!", 0) != 0) return "";
  line = line.substr(2, line.find('\n') == std::string::npos ? std::string::npos : line.find('\n') - 2);
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  if (words.empty()) return "";
  if (IsPython(words[0])) return words[0];
  if (words[0].substr(words[0].rfind('/') + 1) != "env") return "";
  for (size_t w = 1; w < words.size(); ++w) {
    if (words[w][0] == '-') continue;  // env -S, -i
    return IsPython(words[w]) ? OnPath(words[w]) : "";
  }
  return "";
}

namespace {


// The checkout holding scripts/build-torch-observer and the observer's sources:
// $STRATA_SOURCE_DIR, the one strata was built from, or the folder above a
// build (or bundle) tree inside a checkout.
std::string SourceDir(const InstallPaths& paths) {
  std::vector<std::string> candidates;
  if (const char* d = ::secure_getenv("STRATA_SOURCE_DIR"); d && *d) candidates.push_back(d);
#ifdef STRATA_SOURCE_DIR
  candidates.push_back(STRATA_SOURCE_DIR);
#endif
  std::string prefix = paths.bin_dir.substr(0, paths.bin_dir.rfind('/'));
  candidates.push_back(prefix.substr(0, prefix.rfind('/')));
  for (const auto& c : candidates)
    if (PathExists(c + "/scripts/build-torch-observer") && PathExists(c + "/src/collectors/torch/observer.cc")) return c;
  return "";
}

}  // namespace

std::string ObserverLibtorch(const std::string& observer_library) {
  std::string json = observer_library.substr(0, observer_library.rfind('.')) + ".json";
  auto text = ReadFile(json);
  if (!text.ok()) return "";
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("libtorch_cpu") || !j["libtorch_cpu"].is_string()) return "";
  return j["libtorch_cpu"].get<std::string>();
}

TorchObserver ObserverFor(const std::vector<std::string>& cmd, const InstallPaths& paths, bool quiet) {
  TorchObserver r;
  std::string python = PythonOf(cmd);
  if (python.empty()) return r;
  // Where the program's torch is, without importing it (tens of milliseconds).
  std::string out;
  int rc = RunCapture({python, "-c",
                       "import importlib.util as u, os\n"
                       "s = u.find_spec('torch')\n"
                       "print(os.path.realpath(os.path.join(os.path.dirname(s.origin), 'lib', 'libtorch_cpu.so')) "
                       "if s and s.origin else '')"},
                      30, &out);
  std::string libtorch = rc == 0 ? Trim(out) : "";
  if (libtorch.empty() || !PathExists(libtorch)) return r;  // no torch: nothing to observe
  std::string own = paths.lib_dir + "/libstrata_torch.so";
  std::string own_for = ObserverLibtorch(own);
  char real[4096];
  if (!own_for.empty() && ::realpath(own_for.c_str(), real) && libtorch == real) return r;  // strata's own fits

  // A build for this torch and this strata, cached by both libraries' path,
  // size and time (the observer links strata's static libraries and calls its
  // libstrata.so: another build of strata gets its own).
  auto identity = [](const std::string& path) {
    struct stat st{};
    ::stat(path.c_str(), &st);
    return path + "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  };
  std::string key = identity(libtorch) + "|" + identity(paths.lib_dir + "/libstrata.so") + "|" + STRATA_VERSION;
  // ...and by the observer's sources, which change without libstrata.so (a
  // rebuild of the observer alone must not reuse the build of the old one).
  if (std::string src = SourceDir(paths); !src.empty())
    for (const char* f : {"observer.cc", "observer.h", "memory.cc", "detail.cc", "comms.cc", "module_hooks.cc"})
      key += "|" + identity(src + "/src/collectors/torch/" + f);
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(key));
  std::string dir = CacheDir() + "/torch-observer/" + hex;
  std::string lib = dir + "/libstrata_torch.so";
  if (PathExists(lib) && ObserverLibtorch(lib) == libtorch) {
    ::utimensat(AT_FDCWD, dir.c_str(), nullptr, 0);  // used: kept by RemoveOldestDirectories
    r.library = lib;
    r.note = "observer built for " + libtorch + " (cached in " + dir + ")";
    return r;
  }
  const char* autobuild = ::secure_getenv("STRATA_TORCH_AUTOBUILD");
  if (autobuild && std::string(autobuild) == "0") {
    r.note = "the program's torch (" + libtorch + ") is not the one strata's observer was built for, and "
             "STRATA_TORCH_AUTOBUILD=0: no op-level trace";
    return r;
  }
  std::string src = SourceDir(paths);
  if (src.empty()) {
    r.note = "the program's torch (" + libtorch + ") needs its own observer, and the strata checkout with "
             "scripts/build-torch-observer was not found (set STRATA_SOURCE_DIR)";
    return r;
  }
  std::string prefix = paths.bin_dir.substr(0, paths.bin_dir.rfind('/'));
  if (!quiet)
    std::fprintf(stderr, "strata: building the PyTorch observer for %s (once per torch build, a minute or two; "
                         "cached in %s)\n", libtorch.c_str(), dir.c_str());
  (void)MakeDirs(dir);
  std::string log;
  rc = RunCapture({"bash", src + "/scripts/build-torch-observer", python, prefix, dir}, 900, &log);
  (void)WriteFileAtomic(dir + "/build.log", log);
  if (rc != 0 || !PathExists(lib)) {
    r.note = "could not build the PyTorch observer for " + libtorch + ": " +
             (rc == 124 ? std::string("the build took over 15 minutes") : LastLine(log)) + " (log: " + dir +
             "/build.log); no op-level trace";
    if (!quiet) std::fprintf(stderr, "strata: %s\n", r.note.c_str());
    return r;
  }
  r.library = lib;
  r.note = "observer built for " + libtorch + " (in " + dir + ")";
  RemoveOldestDirectories(CacheDir() + "/torch-observer", kKeptObservers, dir);
  return r;
}

}  // namespace strata::cli

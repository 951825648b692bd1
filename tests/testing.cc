#include "tests/testing.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/files.h"
#include "importers/load.h"

extern char** environ;

namespace strata::testing {

std::string StrataBin() { return STRATA_TEST_STRATA_BIN; }
std::string TestProgram(const std::string& name) { return std::string(STRATA_TEST_PROGRAM_DIR) + "/" + name; }
std::string SourceDir() { return STRATA_TEST_SOURCE_DIR; }

std::string ExternalDataDir() {
  if (const char* e = std::getenv("STRATA_EXTERNAL_DATA")) return e;
  std::string d = SourceDir() + "/../shared/data/external";
  return IsDirectory(d) ? d : "";
}

std::vector<std::string> SharedTraces() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::string root = ExternalDataDir();
  if (root.empty()) return out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    std::string p = it->path().string();
    if (it->is_directory() && (fs::exists(it->path() / "metadata"))) {
      out.push_back(p);  // an LTTng CTF trace
      it.disable_recursion_pending();
    } else if (it->is_regular_file() && (p.ends_with(".json") || p.ends_with(".json.gz") || p.ends_with(".pb"))) {
      out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

std::string TempRoot() {
  const char* base = std::getenv("TMPDIR");
  return std::string(base ? base : "/tmp") + "/strata-tests-" + std::to_string(::getpid());
}

// Removes this process's test directories once every test has run (traces of a
// few hundred MB per test binary would otherwise pile up in /tmp run after run),
// but keeps them when a test failed, for the post-mortem, or when asked to.
class TempRootCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::string root = TempRoot();
    if (!std::filesystem::exists(root)) return;
    const char* keep = std::getenv("STRATA_KEEP_TEST_DIRS");
    if ((keep && *keep && std::string(keep) != "0") || ::testing::UnitTest::GetInstance()->Failed()) {
      std::fprintf(stderr, "test directories kept in %s\n", root.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
};

// Registered when the test binary loads (gtest owns and deletes it).
[[maybe_unused]] ::testing::Environment* const kTempRootCleanup =
    ::testing::AddGlobalTestEnvironment(new TempRootCleanup);

}  // namespace

std::string TempDir(const std::string& name) {
  std::string root = TempRoot();
  std::string d = root + "/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(root);
  return d;
}

RunResult RunCommand(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, int timeout_s) {
  RunResult r;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && env.count(kv.substr(0, eq))) continue;
    env_s.push_back(kv);
  }
  for (auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    r.err = std::string("spawn failed: ") + std::strerror(rc);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (ms <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    int n = ::poll(fds, 2, ms);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      ssize_t k = ::read(fds[i].fd, buf, sizeof buf);
      if (k <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(k));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  if (killed) r.err += "\n[test harness: killed after timeout]";
  return r;
}

RunResult Record(const std::string& dir, const std::vector<std::string>& cmd, const std::vector<std::string>& opts,
                 const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {StrataBin(), "record", "-q", "-o", dir};
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return RunCommand(argv, env);
}

model::Trace Load(const std::string& path) {
  auto t = importers::LoadTrace(path);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return model::Trace();
  return std::move(t).value();
}

std::optional<uint64_t> Babeltrace2Events(const std::string& dir) {
  if (RunCommand({"sh", "-c", "command -v babeltrace2"}).exit_code != 0) {
    std::fprintf(stderr, "[ skipped  ] babeltrace2 is not installed; cross-check skipped\n");
    return std::nullopt;
  }
  // sink.utils.counter prints "<N> Event messages" among other counts.
  RunResult r = RunCommand({"babeltrace2", dir + "/ctf", "--component=sink.utils.counter"}, {}, 600);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("ERROR"), std::string::npos) << r.err;
  // The counter prints running totals every 10000 messages; the last block is final.
  auto pos = r.out.rfind(" Event messages");
  if (pos == std::string::npos) {
    ADD_FAILURE() << "unexpected babeltrace2 output: " << r.out;
    return 0;
  }
  size_t start = r.out.rfind('\n', pos);
  start = start == std::string::npos ? 0 : start + 1;
  return std::stoull(r.out.substr(start, pos - start));
}

void ExpectBabeltraceAgrees(const std::string& dir) {
  auto bt = Babeltrace2Events(dir);
  if (!bt) return;
  model::Trace t = Load(dir);
  EXPECT_EQ(*bt, t.events_read) << "babeltrace2 and strata disagree on the number of events in " << dir;
}

void ExpectBabeltraceCountsLost(const std::string& dir, uint64_t lost) {
  if (RunCommand({"sh", "-c", "command -v babeltrace2"}).exit_code != 0) {
    std::fprintf(stderr, "[ skipped  ] babeltrace2 is not installed; cross-check skipped\n");
    return;
  }
  // The text sink reports discarded-events messages on stderr, one line each.
  RunResult r = RunCommand({"sh", "-c", "babeltrace2 \"$0\" >/dev/null", dir + "/ctf"}, {}, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t counted = 0;
  size_t pos = 0;
  const std::string kCounted = "WARNING: Tracer discarded ", kUnknown = "Tracer may have discarded";
  while ((pos = r.err.find(kCounted, pos)) != std::string::npos) {
    pos += kCounted.size();
    counted += std::stoull(r.err.substr(pos, r.err.find(' ', pos) - pos));
  }
  EXPECT_EQ(r.err.find(kUnknown), std::string::npos) << "babeltrace2 cannot count some losses:\n" << r.err;
  EXPECT_EQ(counted, lost) << "babeltrace2 and strata disagree on the events lost in " << dir;
}

size_t CountSlices(const model::Trace& t, const std::string& name) {
  model::StringId id = t.strings.Find(name);
  if (id == model::StringPool::kNotFound) return 0;
  size_t n = 0;
  for (size_t i = 0; i < t.slices.size(); ++i) n += t.slices.name[i] == id;
  return n;
}

std::string LibDir() {
  std::string bin = StrataBin();
  return bin.substr(0, bin.rfind("/bin/")) + "/lib";
}

nlohmann::json ManifestCollector(const std::string& dir, const std::string& name) {
  auto text = ReadFile(dir + "/strata.json");
  EXPECT_TRUE(text.ok()) << dir;
  if (!text.ok()) return nullptr;
  auto m = nlohmann::json::parse(*text);
  for (const auto& c : m["collectors"])
    if (c["name"] == name) return c;
  return nullptr;
}

bool TorchUsable(std::string* why) {
  if (!PathExists(LibDir() + "/libstrata_torch.so")) {
    *why = "strata was built without libtorch (no libstrata_torch.so)";
    return false;
  }
  static int ok = -1;
  if (ok < 0) ok = RunCommand({kPython, "-c", "import torch"}).exit_code == 0;
  if (!ok) *why = std::string(kPython) + " cannot import torch";
  return ok == 1;
}

}  // namespace strata::testing

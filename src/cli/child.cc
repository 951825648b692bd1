#include "cli/child.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/files.h"

extern char** environ;

namespace strata::cli {

std::string SelfExe() {
  std::string exe = SelfExePath();
  return exe.empty() ? "strata" : exe;
}

pid_t StartChild(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                 const std::string& log) {
  if (argv.empty()) return -1;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const auto& kv : extra_env) {
    std::string key = kv.substr(0, kv.find('='));
    std::erase_if(env, [&](const std::string& e) { return e.rfind(key + "=", 0) == 0; });
    env.push_back(kv);
  }
  std::vector<std::string> av = argv;
  std::vector<char*> a, e;
  for (auto& s : av) a.push_back(s.data());
  a.push_back(nullptr);
  for (auto& s : env) e.push_back(s.data());
  e.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), e.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

int WaitChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  return ExitCode(status);
}

}  // namespace strata::cli

// Child processes of a command (`strata sweep`'s recordings, a job report's
// summaries and its Dask client): started with extra environment and their
// output in a log, waited for, their exit code as the shell gives it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace strata::cli {

// The running strata binary's path ("strata" when /proc says none).
std::string SelfExe();
// Starts argv (argv[0] looked up on PATH when it has no slash) with the
// environment plus `extra_env` ("KEY=VALUE", replacing KEY), its stdout and
// stderr to `log`. -1 when it could not be started.
pid_t StartChild(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                 const std::string& log);
// A wait status as an exit code: its status, or 128 + the signal.
int ExitCode(int wait_status);
// Waits for `pid`; its exit code (1 when it cannot be waited for).
int WaitChild(pid_t pid);

}  // namespace strata::cli

// The exit codes of the `strata` command, documented in README.md ("Exit codes").
//
// `strata record` exits with the recorded program's own status (and dies by the
// same signal when the program did), so its own failures use the codes that
// env(1), timeout(1) and chroot(1) reserve for the wrapper: 125, 126, 127.
// The other commands use small distinct codes, so a script can tell a mistyped
// option from an unreadable trace from an output that could not be written.
#pragma once

namespace strata::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,      // an analysis or command failed for a reason not below
  kExitUsage = 2,        // the command line is wrong (unknown option, bad value)
  kExitBadInput = 3,     // the input is not a trace strata reads, or is unreadable / corrupt
  kExitOutput = 4,       // the output cannot be written (exists without --force, no space, permission)
  kExitRecordSetup = 125,  // `record`: strata could not set up the recording; the program did not run
  kExitCannotRun = 126,    // `record`: the program was found but cannot be executed
  kExitNotFound = 127,     // `record`: the program was not found
};

}  // namespace strata::cli

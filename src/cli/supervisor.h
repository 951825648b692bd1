// What `strata record`'s supervisor does around CMD, apart from recording (see
// supervisor.cc for the signal policy).
#pragma once

#include <sys/types.h>

#include <string>

#include "base/status.h"

namespace strata::cli {

// Signals: from here on, those sent to strata are forwarded to CMD once it runs
// (before, a terminating one ends strata; after CMD ended, they are ignored).
void InstallSignalHandlers();
void ProgramStarted(pid_t pid);  // forward to pid from now on
void ProgramEnded();             // CMD has ended (not yet reaped): stop forwarding
// In CMD's process between fork and exec: the dispositions strata started with.
void RestoreSignalsForChild();
// Dies of `sig` as CMD did, without a core dump of strata's own.
[[noreturn]] void DieLikeTheProgram(int sig);
std::string SignalName(int sig);  // "SIGSEGV"

// 0 when execvp would run `name`; else kExitNotFound or kExitCannotRun, with why.
int ResolveCommand(const std::string& name, std::string* why);

// A fresh ./strata-DATE-TIME[-N], claimed with mkdir.
std::string NewDefaultOutput();
// Creates `dir` (and its parents) or takes an existing one, refusing a symbolic
// link in its place or at ctf/, and locks it; an existing trace needs `force`
// (its files are removed). Returns the directory's descriptor, which holds the
// lock until strata exits: a second `record` into it fails here, at once.
StatusOr<int> TakeTraceDirectory(const std::string& dir, bool force);

}  // namespace strata::cli

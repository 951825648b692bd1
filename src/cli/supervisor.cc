// What `strata record`'s supervisor does around CMD, apart from recording:
// its signals (forwarded to CMD, or ignored; CMD's death by a signal reproduced),
// finding CMD before anything is made, and taking the trace directory (created
// or reused without following links, and locked).
#include "cli/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/error.h"
#include "base/files.h"
#include "cli/exit_codes.h"
#include "format/control.h"

namespace strata::cli {

// --- signals ----------------------------------------------------------------
// The supervisor stands between the user and CMD: a signal sent to it is meant
// for the program, and no signal may kill it while CMD runs (the trace would
// lose its end: exit status, losses, the OS level).
//   forwarded   every signal someone sends with kill(2) whose default action
//               ends, stops or continues a process, or that a program may handle
//               (USR1/2, ALRM, WINCH, real-time signals...). What the terminal
//               sends (Ctrl-C, Ctrl-\, Ctrl-Z, a resize) already reached CMD's
//               process group, CMD included, so it is not sent twice.
//   job control TSTP/TTIN/TTOU stop CMD (if sent to us) and then the supervisor;
//               CONT resumes CMD.
//   ignored     PIPE, XFSZ, XCPU: they are about strata's own writes and time.
//   faults      SEGV, BUS, ILL, FPE, TRAP, SYS from a fault in strata itself
//               kill it as they would have; sent with kill(2), they are forwarded.
// Signals strata was started with ignored (nohup) stay ignored, in CMD too.
// Before CMD starts, a terminating signal ends strata (nothing ran yet); once CMD
// has ended, signals are ignored: strata only completes the manifest, then exits
// with CMD's status or dies of CMD's signal.
namespace {

enum Phase : int { kSetup = 0, kRunning = 1, kFinishing = 2 };
volatile sig_atomic_t g_phase = kSetup;
volatile sig_atomic_t g_child = 0;
struct sigaction g_original[NSIG];
bool g_handled[NSIG];

bool IsFaultSignal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
}
bool IsJobStop(int sig) { return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU; }
bool DefaultIgnores(int sig) { return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH; }

void DieOf(int sig) {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);
}

void OnSignal(int sig, siginfo_t* info, void*) {
  int saved_errno = errno;
  int code = info ? info->si_code : SI_USER;
  if (IsFaultSignal(sig) && code > 0) {
    // A real fault in strata: the default action, on the faulting instruction again.
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    return;
  }
  if (info && code <= 0 && info->si_pid == ::getpid()) {
    DieOf(sig);  // strata's own raise (abort()): not CMD's business
    errno = saved_errno;
    return;
  }
  bool to_group = code == SI_KERNEL;  // from the terminal: CMD has it already
  pid_t child = g_child;
  if (g_phase == kRunning && child > 0 && !to_group) ::kill(child, sig);
  if (IsJobStop(sig)) ::kill(::getpid(), SIGSTOP);
  else if (g_phase == kSetup && !DefaultIgnores(sig)) DieOf(sig);
  errno = saved_errno;
}

}  // namespace

void InstallSignalHandlers() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD) continue;
    // glibc's internal signals (32, 33) are refused here.
    if (sigaction(sig, nullptr, &g_original[sig]) != 0) continue;
    if (!(g_original[sig].sa_flags & SA_SIGINFO) && g_original[sig].sa_handler == SIG_IGN) continue;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    if (sig == SIGPIPE || sig == SIGXFSZ || sig == SIGXCPU) {
      sa.sa_handler = SIG_IGN;
    } else {
      sa.sa_sigaction = OnSignal;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
    }
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, nullptr) == 0) g_handled[sig] = true;
  }
}

void ProgramStarted(pid_t pid) {
  g_child = pid;
  g_phase = kRunning;
}

void ProgramEnded() { g_phase = kFinishing; }

void RestoreSignalsForChild() {
  for (int sig = 1; sig < NSIG; ++sig)
    if (g_handled[sig]) sigaction(sig, &g_original[sig], nullptr);
}

// CMD's core, if any, is CMD's: strata's own would only hide it.
void DieLikeTheProgram(int sig) {
  std::fflush(nullptr);
  struct rlimit no_core = {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  DieOf(sig);
  ::_exit(128 + sig);  // a signal whose default action is not to end the process
}

std::string SignalName(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

// --- the command and the trace directory --------------------------------------

// Searches PATH as execvp does (secure_getenv: strata may be run with privileges).
int ResolveCommand(const std::string& name, std::string* why) {
  auto check = [](const std::string& path, std::string* reason) -> int {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      int e = errno;
      *reason = e == ELOOP ? "symbolic link loop" : std::strerror(e);
      return e == ENOENT || e == ENOTDIR ? kExitNotFound : kExitCannotRun;
    }
    if (S_ISDIR(st.st_mode)) {
      *reason = "is a directory";
      return kExitCannotRun;
    }
    if (::faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) != 0) {
      *reason = std::strerror(errno);
      return kExitCannotRun;
    }
    return 0;
  };
  if (name.empty()) {
    *why = "empty command name";
    return kExitNotFound;
  }
  if (name.find('/') != std::string::npos) return check(name, why);
  const char* env_path = ::secure_getenv("PATH");
  std::string path = env_path ? env_path : "/bin:/usr/bin";
  int best = kExitNotFound;
  std::string best_why = "command not found";
  for (size_t pos = 0; pos <= path.size();) {
    size_t colon = path.find(':', pos);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(pos, colon - pos);
    pos = colon + 1;
    std::string why_here;
    int rc = check(JoinPath(dir.empty() ? "." : dir, name), &why_here);
    if (rc == 0) return 0;
    if (rc == kExitCannotRun && best == kExitNotFound) {
      best = rc;  // execvp reports EACCES when a match was found but none runs
      best_why = why_here;
    }
  }
  *why = best_why;
  return best;
}
// mkdir claims the name, so two recordings started in the same second get
// different directories.
std::string NewDefaultOutput() {
  time_t now = ::time(nullptr);
  struct tm tm;
  ::localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "strata-%Y%m%d-%H%M%S", &tm);
  std::string base = buf;
  for (int i = 0;; ++i) {
    std::string out = i == 0 ? base : base + "-" + std::to_string(i);
    if (::mkdir(out.c_str(), 0755) == 0 || errno != EEXIST) return out;  // a failure shows in PrepareDirectory
  }
}

namespace {

// Empties the subdirectory `name` of dir_fd (its files; not what it may hold in
// directories), without following links: unlinkat removes a link, not its target.
Status ClearSubdirectory(int dir_fd, const std::string& name, const std::string& shown) {
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoErr(errno, "cannot open {}", shown);
  DIR* d = ::fdopendir(fd);
  if (!d) {
    int e = errno;
    ::close(fd);
    return ErrnoErr(e, "cannot read {}", shown);
  }
  Status st = OkStatus();
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (::unlinkat(fd, n.c_str(), 0) != 0 && errno != ENOENT && errno != EISDIR && st.ok())
      st = ErrnoErr(errno, "cannot remove {}", JoinPath(shown, n));
  }
  ::closedir(d);
  return st;
}

}  // namespace

// Nothing is changed in the directory before the lock is held.
StatusOr<int> TakeTraceDirectory(const std::string& dir, bool force) {
  int rc = ::mkdir(dir.c_str(), 0755);
  if (rc != 0 && errno == ENOENT) {
    size_t slash = dir.rfind('/');
    if (slash != std::string::npos && slash > 0) STRATA_RETURN_IF_ERROR(MakeDirs(dir.substr(0, slash)));
    rc = ::mkdir(dir.c_str(), 0755);
  }
  if (rc != 0 && errno != EEXIST) return ErrnoErr(errno, "cannot create directory {}", dir);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    struct stat lst;
    if (::lstat(dir.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
      return Err(StatusCode::kPermission,
                 "{} is a symbolic link: refusing to record through it (give the directory it points to)", dir);
    if (e == ENOTDIR) return Err(StatusCode::kInvalidArgument, "{} exists and is not a directory", dir);
    return ErrnoErr(e, "cannot open directory {}", dir);
  }
  auto fail = [fd](Status s) -> StatusOr<int> {
    ::close(fd);
    return s;
  };
  int lock = TryLockDirectory(fd);
  if (lock == EWOULDBLOCK)
    return fail(Err(StatusCode::kUnavailable, "{} is in use: another strata record is recording into it", dir));
  if (lock != 0) return fail(ErrnoErr(lock, "cannot lock {}", dir));
  struct stat st;
  bool has_ctf = ::fstatat(fd, "ctf", &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (has_ctf && !S_ISDIR(st.st_mode))
    return fail(Err(StatusCode::kPermission, "{} is {}, not a directory: refusing to use it", JoinPath(dir, "ctf"),
                    FileKindName(st.st_mode)));
  bool has_manifest = ::fstatat(fd, "strata.json", &st, AT_SYMLINK_NOFOLLOW) == 0;
  if ((has_ctf || has_manifest) && !force)
    return fail(Err(StatusCode::kInvalidArgument, "{} already holds a trace (use --force to overwrite)", dir));
  if (has_ctf) {
    Status cleared = ClearSubdirectory(fd, "ctf", JoinPath(dir, "ctf"));
    if (!cleared.ok()) return fail(cleared);
  }
  for (std::string name : {std::string("strata.json"), std::string(format::kControlFileName)})
    for (const std::string& n : {name, name + ".tmp"})
      if (::unlinkat(fd, n.c_str(), 0) != 0 && errno != ENOENT)
        return fail(ErrnoErr(errno, "cannot remove {}", JoinPath(dir, n)));
  // Creating ctf/ (or, with --force, the metadata in it next) proves the
  // directory writable before CMD runs.
  if (!has_ctf && ::mkdirat(fd, "ctf", 0755) != 0)
    return fail(ErrnoErr(errno, "cannot create directory {}", JoinPath(dir, "ctf")));
  return fd;
}

}  // namespace strata::cli

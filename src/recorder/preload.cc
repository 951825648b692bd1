// Process entry and exit hooks of libstrata: start recording when the library
// loads into a process with STRATA_TRACE_DIR set (LD_PRELOAD by `strata record`,
// or linked), attach framework observers when main() starts, and make sure the
// trace is complete however the process ends:
//   exit()/return from main  -> atexit handler
//   _exit()/os._exit()       -> interposed _exit/_Exit
//   exec*()                  -> interposed exec family flushes first
//   fatal signal             -> handler flushes, then re-raises with the old action
//   SIGKILL                  -> the periodic flush (100 ms) bounds the loss
//
// In a process that runs with privileges it did not get from its caller (a
// setuid or setgid program, file capabilities: the kernel's AT_SECURE), the
// environment belongs to a less privileged user, so libstrata takes nothing from
// it: every variable is read with secure_getenv, and the recorder does not start
// at all there (it would write where the environment says and dlopen what it
// names, with the program's privileges). It says so on stderr.
#include <dlfcn.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "recorder/runtime.h"
#include "recorder/runtime_internal.h"

namespace strata::recorder {
namespace {

// Not SIGINT: Python (and others) install their handler only if SIGINT is still
// SIG_DFL at startup, so taking it would change the program's Ctrl-C behaviour.
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction g_old_actions[65];
bool g_started = false;

void OnFatalSignal(int sig, siginfo_t* info, void* ctx) {
  if (InOwnProcess()) EmergencyFlush();
  // Restore what was there before us and deliver the signal again, so the
  // process dies (or handles it) exactly as it would have without strata.
  sigaction(sig, &g_old_actions[sig], nullptr);
  if (g_old_actions[sig].sa_flags & SA_SIGINFO) {
    if (g_old_actions[sig].sa_sigaction) g_old_actions[sig].sa_sigaction(sig, info, ctx);
    return;
  }
  if (g_old_actions[sig].sa_handler != SIG_DFL && g_old_actions[sig].sa_handler != SIG_IGN) {
    g_old_actions[sig].sa_handler(sig);
    return;
  }
  if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
    // Returning re-executes the faulting instruction, now with the default action.
    if (info && info->si_code > 0) return;
  }
  ::raise(sig);
}

void InstallSignalHandlers() {
  for (int sig : kFatalSignals) {
    struct sigaction cur;
    if (sigaction(sig, nullptr, &cur) != 0) continue;
    // Never take over a signal the program (or its runtime) already handles.
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler != SIG_DFL) continue;
    if (cur.sa_flags & SA_SIGINFO) continue;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = OnFatalSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &g_old_actions[sig]) != 0) continue;
  }
}

void AtExit() {
  if (InOwnProcess()) Finalize();
}

// AT_SECURE covers setuid, setgid and file capabilities; differing ids also
// cover a process that changed them itself before libstrata was loaded.
bool Privileged() {
  return ::getauxval(AT_SECURE) != 0 || ::geteuid() != ::getuid() || ::getegid() != ::getgid();
}

__attribute__((constructor)) void StrataInit() {
  if (Privileged()) {
    // getenv only to tell the user why nothing is recorded; its value is not used.
    if (std::getenv("STRATA_TRACE_DIR"))
      std::fprintf(stderr,
                   "strata: not recording this process: it runs with privileges its caller does not have (setuid, "
                   "setgid or file capabilities), and strata takes no settings from the environment there\n");
    return;
  }
  const char* dir = ::secure_getenv("STRATA_TRACE_DIR");
  if (!dir || !*dir) return;
  Status st = Start(ConfigFromEnv());
  if (!st.ok()) {
    // The program must run unchanged even when tracing cannot start.
    std::fprintf(stderr, "strata: not recording this process: %s\n", st.message().c_str());
    return;
  }
  g_started = true;
  std::atexit(AtExit);
  InstallSignalHandlers();
}

__attribute__((destructor)) void StrataFini() {
  if (g_started && InOwnProcess()) Finalize();
}

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// Framework observers are separate libraries (they link the framework). A
// program linked with the framework (a C++ libtorch program) has it loaded
// when main() starts: the observer attaches then, before the program's first
// op. Python programs load frameworks later; there the import hook that
// `strata record` puts on PYTHONPATH attaches the observer instead.
//   STRATA_TORCH_PROBE  soname whose presence means "libtorch is here"
//   STRATA_TORCH_LIB    the observer library (libstrata_torch.so)
void AttachFrameworkObservers() {
  if (Privileged()) return;  // never dlopen a path from the environment with privileges
  const char* probe = ::secure_getenv("STRATA_TORCH_PROBE");
  const char* lib = ::secure_getenv("STRATA_TORCH_LIB");
  if (!probe || !*probe || !lib || !*lib) return;
  void* fw = dlopen(probe, RTLD_NOW | RTLD_NOLOAD);
  if (!fw) return;
  dlclose(fw);
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    ReportCollectorStatus("pytorch", "unavailable", std::string("cannot load the observer: ") + dlerror());
    return;
  }
  using StartFn = int (*)(const char*);
  auto start = reinterpret_cast<StartFn>(dlsym(h, "strata_torch_start"));
  if (!start) {
    ReportCollectorStatus("pytorch", "error", std::string(lib) + " has no strata_torch_start");
    return;
  }
  start("native");
}

using MainFn = int (*)(int, char**, char**);
MainFn g_program_main = nullptr;

int MainWithObservers(int argc, char** argv, char** envp) {
  if (g_started && InOwnProcess()) AttachFrameworkObservers();
  return g_program_main(argc, argv, envp);
}

// A vfork() child (Python's subprocess uses vfork) shares our memory and must
// not touch the recorder: it is recognised by its pid.
//
// Under `strata record` the supervisor holds the buffers' memory: after SIGKILL,
// a crash the handler could not flush, or a successful exec, it writes what
// they still held (recorder/supervision.h), so those ends lose nothing that
// reached a buffer.
void FlushBeforeExec() {
  if (g_started && InOwnProcess()) PrepareExec();
}

void AfterFailedExec() {
  if (g_started && InOwnProcess()) ExecFailed();
}

}  // namespace
}  // namespace strata::recorder

using strata::recorder::AfterFailedExec;
using strata::recorder::FlushBeforeExec;
using strata::recorder::Next;

extern "C" {

// Wraps main() so that framework observers attach after every constructor ran
// (the framework's own static registrations included) and before main's code.
__attribute__((visibility("default"))) int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                                             void (*init)(), void (*fini)(), void (*rtld_fini)(),
                                                             void* stack_end) {
  using Real = int (*)(int (*)(int, char**, char**), int, char**, void (*)(), void (*)(), void (*)(), void*);
  static auto real = Next<Real>("__libc_start_main");
  if (!real) return 127;
  strata::recorder::g_program_main = main;
  return real(strata::recorder::MainWithObservers, argc, argv, init, fini, rtld_fini, stack_end);
}

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  if (strata::recorder::g_started && strata::recorder::InOwnProcess()) strata::recorder::Finalize();
  ::syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) { _exit(status); }

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  FlushBeforeExec();
  static auto real = Next<int (*)(const char*, char* const[], char* const[])>("execve");
  int rc = real ? real(path, argv, envp) : -1;
  AfterFailedExec();
  return rc;
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  FlushBeforeExec();
  static auto real = Next<int (*)(const char*, char* const[])>("execv");
  int rc = real ? real(path, argv) : -1;
  AfterFailedExec();
  return rc;
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  FlushBeforeExec();
  static auto real = Next<int (*)(const char*, char* const[])>("execvp");
  int rc = real ? real(file, argv) : -1;
  AfterFailedExec();
  return rc;
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  FlushBeforeExec();
  static auto real = Next<int (*)(const char*, char* const[], char* const[])>("execvpe");
  int rc = real ? real(file, argv, envp) : -1;
  AfterFailedExec();
  return rc;
}

// The variadic exec family: collect the arguments, then take the vector path.
static std::vector<char*> CollectArgs(const char* arg0, va_list ap, char*** envp_out) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(arg0));
  while (char* a = va_arg(ap, char*)) argv.push_back(a);
  argv.push_back(nullptr);
  if (envp_out) *envp_out = va_arg(ap, char**);
  return argv;
}

__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = CollectArgs(arg, ap, nullptr);
  va_end(ap);
  return execv(path, argv.data());
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = CollectArgs(arg, ap, nullptr);
  va_end(ap);
  return execvp(file, argv.data());
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char** envp = nullptr;
  std::vector<char*> argv = CollectArgs(arg, ap, &envp);
  va_end(ap);
  return execve(path, argv.data(), envp);
}

}  // extern "C"

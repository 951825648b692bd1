// Process entry and exit hooks of libstrata: start recording when the library
// loads into a process with STRATA_TRACE_DIR set (LD_PRELOAD by `strata record`,
// or linked), and make sure the trace is complete however the process ends:
//   exit()/return from main  -> atexit handler
//   _exit()/os._exit()       -> interposed _exit/_Exit
//   exec*()                  -> interposed exec family flushes first
//   fatal signal             -> handler flushes, then re-raises with the old action
//   SIGKILL                  -> the periodic flush (100 ms) bounds the loss
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

__attribute__((constructor)) void StrataInit() {
  const char* dir = std::getenv("STRATA_TRACE_DIR");
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

// A vfork() child (Python's subprocess uses vfork) shares our memory and must
// not touch the recorder: it is recognised by its pid.
void FlushBeforeExec() {
  if (g_started && InOwnProcess()) FlushNow();
}

}  // namespace
}  // namespace strata::recorder

using strata::recorder::FlushBeforeExec;
using strata::recorder::Next;

extern "C" {

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  if (strata::recorder::g_started && strata::recorder::InOwnProcess()) strata::recorder::Finalize();
  ::syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) { _exit(status); }

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  FlushBeforeExec();
  static auto real = Next<int (*)(const char*, char* const[], char* const[])>("execve");
  return real ? real(path, argv, envp) : -1;
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  FlushBeforeExec();
  static auto real = Next<int (*)(const char*, char* const[])>("execv");
  return real ? real(path, argv) : -1;
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  FlushBeforeExec();
  static auto real = Next<int (*)(const char*, char* const[])>("execvp");
  return real ? real(file, argv) : -1;
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  FlushBeforeExec();
  static auto real = Next<int (*)(const char*, char* const[], char* const[])>("execvpe");
  return real ? real(file, argv, envp) : -1;
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

// A test program for the recorder: each thread emits a numbered sequence of
// events so that tests can check order, completeness and loss counts exactly.
//
//   emitter THREADS EVENTS_PER_THREAD [--spans] [--sleep-ms N] [--kill-self-after-ms N]
//           [--fork] [--exec PATH] [--crash] [--exit-code N] [--underscore-exit] [--sequential]
//           [--progress FILE]
//
// Each thread records counter("seq", i) for i in [0, EVENTS); with --spans it
// wraps every 1000 events in a span "batch" and names its thread "emitter-K".
// --progress FILE: each thread keeps {tid, events emitted so far} in FILE
// (shared memory: what a killed emitter had emitted survives it), so that a
// test can tell exactly how many events the recording must account for.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "strata/strata.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: emitter THREADS EVENTS [options]\n");
    return 2;
  }
  int threads = std::atoi(argv[1]);
  long events = std::atol(argv[2]);
  bool spans = false, do_fork = false, crash = false, underscore_exit = false, sequential = false;
  int sleep_ms = 0, kill_after_ms = -1, exit_code = 0;
  const char* exec_path = nullptr;
  const char* progress_path = nullptr;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--spans") spans = true;
    else if (a == "--sleep-ms") sleep_ms = std::atoi(argv[++i]);
    else if (a == "--kill-self-after-ms") kill_after_ms = std::atoi(argv[++i]);
    else if (a == "--fork") do_fork = true;
    else if (a == "--exec") exec_path = argv[++i];
    else if (a == "--crash") crash = true;
    else if (a == "--exit-code") exit_code = std::atoi(argv[++i]);
    else if (a == "--underscore-exit") underscore_exit = true;
    else if (a == "--sequential") sequential = true;
    else if (a == "--progress") progress_path = argv[++i];
    else {
      std::fprintf(stderr, "emitter: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  // Per thread: {tid, events emitted}, 16 bytes apart.
  volatile uint64_t* progress = nullptr;
  if (progress_path) {
    int fd = ::open(progress_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    size_t bytes = static_cast<size_t>(threads) * 16;
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      std::perror("emitter: --progress");
      return 2;
    }
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      std::perror("emitter: --progress");
      return 2;
    }
    progress = static_cast<volatile uint64_t*>(m);
  }
  uint32_t seq = strata_intern("seq");
  uint32_t batch = strata_intern("batch");
  uint32_t main_span = strata_intern("main");
  strata_span_begin(main_span);
  if (kill_after_ms >= 0) {
    std::thread([kill_after_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
      ::kill(::getpid(), SIGKILL);
    }).detach();
  }
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([=] {
      std::string name = "emitter-" + std::to_string(t);
      strata_thread_name(name.c_str());
      volatile uint64_t* mine = progress ? progress + 2 * t : nullptr;
      if (mine) mine[0] = static_cast<uint64_t>(::syscall(SYS_gettid));
      for (long i = 0; i < events; ++i) {
        if (spans && i % 1000 == 0) strata_span_begin(batch);
        strata_counter(seq, static_cast<double>(i));
        if (mine) mine[1] = static_cast<uint64_t>(i) + 1;
        if (spans && (i % 1000 == 999 || i == events - 1)) strata_span_end();
        if (sleep_ms && i % 1000 == 999) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      }
    });
    // --sequential: each thread exits before the next starts (short-lived
    // threads; the kernel may hand out their ids again).
    if (sequential) {
      ts.back().join();
      ts.pop_back();
    }
  }
  for (auto& t : ts) t.join();
  if (do_fork) {
    pid_t pid = ::fork();
    if (pid == 0) {
      // The child records its own events, into its own streams.
      uint32_t child = strata_intern("child_work");
      strata_span_begin(child);
      for (int i = 0; i < 100; ++i) strata_counter(seq, i);
      strata_span_end();
      if (exec_path) {
        ::execl(exec_path, exec_path, static_cast<char*>(nullptr));
        std::perror("exec");
        ::_exit(127);
      }
      ::_exit(0);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
  }
  strata_span_end();
  if (crash) {
    volatile int* p = nullptr;
    *p = 1;  // SIGSEGV: the recorder's fatal-signal handler flushes first
  }
  if (kill_after_ms >= 0) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (underscore_exit) ::_exit(exit_code);
  return exit_code;
}

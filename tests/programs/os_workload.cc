// Workloads with a known OS-level behaviour, for the OS collector's tests.
//
//   os_workload sleep COUNT MS      a thread "sleeper" calls nanosleep(MS) COUNT times
//   os_workload pipe MS             a thread "reader" blocks in read() on a pipe; main writes after MS
//   os_workload spin2 MS            threads "spinA" and "spinB", both pinned to CPU 0, each burns MS of CPU
//   os_workload syscalls N          N getppid() and N/10 write() to /dev/null, then prints the counts
//   os_workload hot MS              burns MS of CPU, ~90% in strata_test_hot_function, ~10% in a cold one
//   os_workload forkexec N          forks; the child execs "os_workload syscalls N"; the parent waits
//   os_workload steps N MS          N steps, each: span "compute" (busy MS) then span "wait" (sleep MS)
//   os_workload orphan MS           forks a grandchild that sleeps MS (and prints its pid); exits at once itself
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "strata/strata.hpp"

namespace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void Name(const char* n) { pthread_setname_np(pthread_self(), n); }

void PinToCpu0() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof set, &set);
}

volatile double g_sink;

}  // namespace

extern "C" __attribute__((noinline)) double strata_test_hot_function(long n) {
  double x = 1.0;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

extern "C" __attribute__((noinline)) double strata_test_cold_function(long n) {
  double x = 2.0;
  for (long i = 0; i < n; ++i) x = x * 0.9999999 + 1e-9;
  return x;
}

namespace {

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

// Burns `ms` of this thread's CPU time (not wall time: the test machine may be
// busy, and what the tests count is CPU time).
void BusyMs(long ms) {
  int64_t end = ThreadCpuNs() + ms * 1000000ll;
  while (ThreadCpuNs() < end) g_sink = strata_test_hot_function(20000);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: os_workload MODE ARGS...\n");
    return 2;
  }
  std::string mode = argv[1];
  auto arg = [&](int i, long def) { return argc > i ? std::atol(argv[i]) : def; };

  if (mode == "sleep") {
    long count = arg(2, 10), ms = arg(3, 10);
    std::thread t([&] {
      Name("sleeper");
      for (long i = 0; i < count; ++i) SleepMs(ms);
    });
    t.join();
  } else if (mode == "pipe") {
    long ms = arg(2, 100);
    int p[2];
    if (pipe(p) != 0) return 1;
    std::thread t([&] {
      Name("reader");
      char c;
      ssize_t n = read(p[0], &c, 1);
      (void)n;
    });
    SleepMs(ms);
    ssize_t w = write(p[1], "x", 1);
    (void)w;
    t.join();
  } else if (mode == "spin2") {
    long ms = arg(2, 200);
    std::atomic<int> ready{0};
    auto spin = [&](const char* name) {
      Name(name);
      PinToCpu0();
      ready++;
      while (ready.load() < 2) {
      }
      BusyMs(ms);
    };
    std::thread a(spin, "spinA"), b(spin, "spinB");
    a.join();
    b.join();
  } else if (mode == "syscalls") {
    long n = arg(2, 10000);
    int fd = open("/dev/null", O_WRONLY);
    // The longest call as the program sees it: no call strata pairs may last longer.
    int64_t longest = 0;
    for (long i = 0; i < n; ++i) {
      int64_t t0 = MonotonicNs();
      syscall(SYS_getppid);
      longest = std::max(longest, MonotonicNs() - t0);
    }
    for (long i = 0; i < n / 10; ++i) {
      ssize_t w = write(fd, "x", 1);
      (void)w;
    }
    close(fd);
    std::printf("getppid %ld write %ld longest_getppid_ns %lld\n", n, n / 10, static_cast<long long>(longest));
  } else if (mode == "hot") {
    long ms = arg(2, 300);
    int64_t end = ThreadCpuNs() + ms * 1000000ll;
    while (ThreadCpuNs() < end) {
      g_sink = strata_test_hot_function(900000);
      g_sink = strata_test_cold_function(100000);
    }
  } else if (mode == "forkexec") {
    long n = arg(2, 1000);
    pid_t pid = fork();
    if (pid == 0) {
      std::string count = std::to_string(n);
      execl("/proc/self/exe", argv[0], "syscalls", count.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  } else if (mode == "steps") {
    long n = arg(2, 5), ms = arg(3, 20);
    for (long i = 0; i < n; ++i) {
      strata::Step step(static_cast<uint64_t>(i));
      {
        STRATA_SPAN("compute");
        BusyMs(ms);
      }
      {
        STRATA_SPAN("wait");
        SleepMs(ms);
      }
    }
  } else if (mode == "orphan") {
    long ms = arg(2, 1000);
    if (fork() == 0) {
      pid_t g = fork();
      if (g == 0) {
        // Like a daemon: let go of the caller's stdio, which waits for EOF.
        int null = open("/dev/null", O_RDWR);
        for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
        SleepMs(ms);
        _exit(0);
      }
      std::printf("grandchild %d\n", static_cast<int>(g));
      std::fflush(stdout);
      _exit(0);
    }
    wait(nullptr);
  } else {
    std::fprintf(stderr, "os_workload: unknown mode %s\n", mode.c_str());
    return 2;
  }
  return 0;
}

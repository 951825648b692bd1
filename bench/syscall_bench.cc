// A system-call-heavy microbenchmark for the OS collector's cost (bench/os_overhead.sh):
// N getppid() calls, timed inside the program so that start-up and tracer
// set-up are not counted. Prints "ns_per_call <x>".
//
//   syscall_bench N [THREADS]
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

static long long Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  long long t0 = Now();
  std::vector<std::thread> ts;
  for (int k = 0; k < threads; ++k)
    ts.emplace_back([n] {
      for (long i = 0; i < n; ++i) syscall(SYS_getppid);
    });
  for (auto& t : ts) t.join();
  long long t1 = Now();
  std::printf("ns_per_call %.1f calls %ld elapsed_ms %.1f\n", static_cast<double>(t1 - t0) / static_cast<double>(n),
              n * threads, static_cast<double>(t1 - t0) / 1e6);
  return 0;
}

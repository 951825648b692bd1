// Microbenchmarks for the OS collector's cost (bench/os_overhead.sh), timed
// inside the program so that start-up and tracer set-up are not counted.
//
//   syscall_bench N [THREADS]    N getppid() calls per thread      -> "ns_per_call X"
//   syscall_bench pingpong N     N round trips between two threads
//                                through pipes (4 context switches
//                                and 4 syscalls each)               -> "ns_per_call X" (per round trip)
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

static long long Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int PingPong(long n) {
  int a[2], b[2];
  if (pipe(a) != 0 || pipe(b) != 0) return 1;
  long long t0 = Now();
  std::thread echo([&] {
    char c;
    for (long i = 0; i < n; ++i)
      if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1) return;
  });
  char c = 'x';
  for (long i = 0; i < n; ++i)
    if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1) return 1;
  echo.join();
  long long t1 = Now();
  std::printf("ns_per_call %.1f round_trips %ld elapsed_ms %.1f\n", static_cast<double>(t1 - t0) / static_cast<double>(n), n,
              static_cast<double>(t1 - t0) / 1e6);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "pingpong") == 0) return PingPong(argc > 2 ? std::atol(argv[2]) : 100000);
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

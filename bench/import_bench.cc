// Import throughput and peak memory of one trace file, for bench/bench_kineto.sh:
//   strata_import_bench FILE [--repeat N]
// Prints one JSON line: bytes (uncompressed), seconds (best of N), MB/s, peak RSS.
#include <sys/resource.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "importers/kineto/byte_source.h"
#include "importers/load.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [--repeat N]\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  int repeat = 1;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::atoi(argv[i + 1]);
  // Uncompressed size: what the throughput is measured against.
  uint64_t bytes = 0;
  {
    auto src = strata::importers::kineto::OpenByteSource(path);
    if (!src.ok()) {
      std::fprintf(stderr, "%s\n", src.status().message().c_str());
      return 1;
    }
    static char buf[1 << 20];
    for (;;) {
      auto n = (*src)->Read(buf, sizeof buf);
      if (!n.ok() || *n == 0) break;
      bytes += *n;
    }
  }
  auto cpu_now = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  };
  double best = 1e30, best_cpu = 1e30;
  long first_rss_kb = 0;
  size_t slices = 0;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpu_now();
    auto t = strata::importers::LoadTrace(path);
    double c1 = cpu_now();
    auto t1 = std::chrono::steady_clock::now();
    best_cpu = std::min(best_cpu, c1 - c0);
    if (r == 0) {
      rusage ru0;
      getrusage(RUSAGE_SELF, &ru0);
      first_rss_kb = ru0.ru_maxrss;  // peak of one import, model included
    }
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.status().message().c_str());
      return 1;
    }
    slices = t->slices.size();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  std::printf(
      "{\"file\": \"%s\", \"bytes\": %llu, \"slices\": %zu, \"wall_s\": %.4f, \"cpu_s\": %.4f, \"mb_per_s_wall\": %.1f, "
      "\"mb_per_s_cpu\": %.1f, \"peak_rss_bytes\": %lld}\n",
      path.c_str(), static_cast<unsigned long long>(bytes), slices, best, best_cpu, bytes / best / 1e6, bytes / best_cpu / 1e6,
      static_cast<long long>(first_rss_kb) * 1024);
  return 0;
}

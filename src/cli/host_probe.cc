#include "cli/host_probe.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/json_get.h"
#include "cli/commands.h"

namespace strata::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The CPU time of the calling thread, in seconds. The probes divide by it, not by
// wall time: on a loaded machine (a build, ctest -j) a probe thread that waits for
// a core would otherwise count the wait as slowness, and strata would record a
// roof below what the program's own ops then reach.
double ThreadSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// FMA throughput with 8 independent accumulator vectors (enough to cover the
// FMA latency), in the widest vector ISA this CPU has. Returns FLOP/s of one core.
typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V4 __attribute__((vector_size(16)));

#define STRATA_FMA_LOOP(V, LANES)                                             \
  V acc[8];                                                                  \
  V a, b;                                                                    \
  for (int l = 0; l < LANES; ++l) {                                          \
    a[l] = 0.999999f;                                                        \
    b[l] = 1e-7f;                                                            \
  }                                                                          \
  for (int k = 0; k < 8; ++k) acc[k] = b;                                    \
  double t0 = ThreadSeconds();                                               \
  for (long i = 0; i < iters; ++i)                                           \
    for (int k = 0; k < 8; ++k) acc[k] = acc[k] * a + b;                     \
  double s = std::max(ThreadSeconds() - t0, 1e-9);                           \
  volatile float sink = 0;                                                   \
  for (int k = 0; k < 8; ++k) sink = sink + acc[k][0];                       \
  return 2.0 * LANES * 8 * static_cast<double>(iters) / s;

__attribute__((target("avx512f,fma"))) double Fma512(long iters) { STRATA_FMA_LOOP(V16, 16) }
__attribute__((target("avx2,fma"))) double Fma256(long iters) { STRATA_FMA_LOOP(V8, 8) }
double Fma128(long iters) { STRATA_FMA_LOOP(V4, 4) }

double PeakFlopsPerCore(std::string* isa) {
  std::function<double(long)> f = Fma128;
  *isa = "sse";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
    f = Fma512;
    *isa = "avx512";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    f = Fma256;
    *isa = "avx2";
  }
  f(200000);  // warm up (frequency ramp, page-in)
  double best = 0;
  for (int r = 0; r < 3; ++r) best = std::max(best, f(2000000));
  return best;
}

// STREAM triad a = b + s*c over arrays far larger than the caches, all cores.
double MemoryBandwidth(unsigned threads) {
  // A few threads saturate a socket's memory; more would only cost memory here.
  threads = std::min(threads, 8u);
  const size_t n = 4u << 20;  // 4 M floats = 16 MiB per array, per thread
  std::vector<std::vector<float>> a(threads), b(threads), c(threads);
  for (unsigned t = 0; t < threads; ++t) {
    a[t].assign(n, 0.0f);
    b[t].assign(n, 1.0f);
    c[t].assign(n, 2.0f);
  }
  // The best round in which every thread had its core throughout (thread CPU
  // time close to wall time): on a loaded machine (a build, ctest -j) a thread
  // waiting for a core would count the wait as slowness, and strata would record
  // a roof below what the program's own ops then reach. Whatever the load, the
  // machine moves at least what one thread moved per second of its CPU time.
  double best = 0, one_thread = 0;
  for (int r = 0; r < 24; ++r) {
    std::vector<double> cpu(threads, 0.0);
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        float* x = a[t].data();
        const float* y = b[t].data();
        const float* z = c[t].data();
        double c0 = ThreadSeconds();
        for (size_t i = 0; i < n; ++i) x[i] = y[i] + 3.0f * z[i];
        cpu[t] = std::max(ThreadSeconds() - c0, 1e-9);
      });
    for (auto& th : pool) th.join();
    double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    double bytes = 3.0 * 4.0 * static_cast<double>(n);
    double min_cpu = *std::min_element(cpu.begin(), cpu.end());
    one_thread = std::max(one_thread, bytes / min_cpu);
    if (min_cpu >= 0.9 * wall) best = std::max(best, bytes * threads / wall);
    if (r >= 2 && best > 0) break;  // three rounds, as before, when the machine is quiet
  }
  best = std::max(best, one_thread);
  return best;
}

std::string CacheFile(const std::string& key) {
  std::string dir = CacheDir();
  size_t h = std::hash<std::string>{}(key);
  return dir + "/host-" + std::to_string(h) + ".json";
}

}  // namespace

HostPeaks ProbeHost(const std::string& cpu_model, unsigned cpus) {
  HostPeaks p;
  std::string key = cpu_model + "|" + std::to_string(cpus) + "|cpu-time";
  std::string cache = CacheFile(key);
  if (auto text = ReadFile(cache); text.ok()) {
    auto j = nlohmann::json::parse(*text, nullptr, false);
    // (A cache file of other types than strata writes is ignored, not thrown on.)
    if (json_get::Str(j, "key") == key) {
      p.flops_f32 = json_get::Num(j, "peak_flops_f32");
      p.memory_bandwidth = json_get::Num(j, "memory_bandwidth");
      p.isa = json_get::Str(j, "isa");
      p.cached = true;
      if (p.flops_f32 > 0 && p.memory_bandwidth > 0) return p;
    }
  }
  p.cached = false;
  p.flops_f32 = PeakFlopsPerCore(&p.isa) * std::max(1u, cpus);
  p.memory_bandwidth = MemoryBandwidth(std::max(1u, cpus));
  std::string dir = cache.substr(0, cache.rfind('/'));
  if (MakeDirs(dir).ok()) {
    nlohmann::json j = {{"key", key}, {"peak_flops_f32", p.flops_f32}, {"memory_bandwidth", p.memory_bandwidth},
                        {"isa", p.isa}};
    (void)WriteFileAtomic(cache, j.dump(2) + "\n");
  }
  return p;
}

}  // namespace strata::cli

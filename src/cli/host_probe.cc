#include "cli/host_probe.h"

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

namespace strata::cli {
namespace {

using Clock = std::chrono::steady_clock;

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
  auto t0 = Clock::now();                                                    \
  for (long i = 0; i < iters; ++i)                                           \
    for (int k = 0; k < 8; ++k) acc[k] = acc[k] * a + b;                     \
  double s = std::chrono::duration<double>(Clock::now() - t0).count();       \
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
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        float* x = a[t].data();
        const float* y = b[t].data();
        const float* z = c[t].data();
        for (size_t i = 0; i < n; ++i) x[i] = y[i] + 3.0f * z[i];
      });
    for (auto& th : pool) th.join();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 3.0 * 4.0 * static_cast<double>(n) * threads / s);
  }
  return best;
}

std::string CacheFile(const std::string& key) {
  const char* xdg = ::secure_getenv("XDG_CACHE_HOME");
  const char* home = ::secure_getenv("HOME");
  std::string dir = xdg && *xdg ? std::string(xdg) + "/strata" : std::string(home ? home : "/tmp") + "/.cache/strata";
  size_t h = std::hash<std::string>{}(key);
  return dir + "/host-" + std::to_string(h) + ".json";
}

}  // namespace

HostPeaks ProbeHost(const std::string& cpu_model, unsigned cpus) {
  HostPeaks p;
  std::string key = cpu_model + "|" + std::to_string(cpus);
  std::string cache = CacheFile(key);
  if (auto text = ReadFile(cache); text.ok()) {
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_object() && j.value("key", "") == key) {
      p.flops_f32 = j.value("peak_flops_f32", 0.0);
      p.memory_bandwidth = j.value("memory_bandwidth", 0.0);
      p.isa = j.value("isa", "");
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

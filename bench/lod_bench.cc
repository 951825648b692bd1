// Level-of-detail queries on a trace's index, as a timeline view makes them:
// random ranges (1 us to the whole trace) of random tracks at 1,000 to 4,000
// pixels; prints the time to open the index's levels of detail and the
// queries' latency percentiles as JSON.
//
//   strata_lod_bench TRACE [--queries N]    (TRACE opened through its index, built if absent)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "index/content_key.h"
#include "index/index_file.h"
#include "index/lod.h"
#include "index/open_trace.h"

int main(int argc, char** argv) {
  using namespace strata;
  using Clock = std::chrono::steady_clock;
  if (argc < 2) {
    std::fprintf(stderr, "usage: strata_lod_bench TRACE [--queries N]\n");
    return 2;
  }
  std::string path = argv[1];
  int queries = 10000;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--queries") == 0) queries = std::atoi(argv[i + 1]);
  index::IndexOptions io;
  io.beside = false;
  io.cache_dir = "/tmp/strata-lod-bench-cache";
  index::IndexUse use;
  auto t = index::OpenTrace(path, {}, io, &use);
  if (!t.ok() || use.path.empty()) {
    std::fprintf(stderr, "strata_lod_bench: %s\n", t.ok() ? "no index written" : t.status().message().c_str());
    return 1;
  }
  auto h = index::ReadIndexHeader(use.path);
  if (!h.ok()) return 1;
  auto c0 = Clock::now();
  auto lod = index::ReadIndexLod(use.path, h->key);
  double open_ms = std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
  if (!lod.ok()) {
    std::fprintf(stderr, "strata_lod_bench: %s\n", lod.status().message().c_str());
    return 1;
  }
  int64_t t0 = t->start_ns(), t1 = t->end_ns();
  std::mt19937_64 rng(42);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(queries));
  size_t tiles = 0;
  for (int q = 0; q < queries; ++q) {
    auto track = static_cast<uint32_t>(rng() % t->tracks.size());
    // A span from 1 us to the whole trace, log-uniform, anywhere in it.
    double span_log = std::uniform_real_distribution<double>(3, std::log10(std::max<double>(1e3, static_cast<double>(t1 - t0))))(rng);
    auto span = static_cast<int64_t>(std::pow(10.0, span_log));
    int64_t a = t0 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, t1 - t0 - span + 1)));
    int pixels = 1000 + static_cast<int>(rng() % 3001);
    auto c = Clock::now();
    auto r = index::QueryLod(*lod, track, a, a + span, pixels);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - c).count());
    tiles += r.size();
  }
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) { return us[std::min(us.size() - 1, static_cast<size_t>(p * static_cast<double>(us.size())))]; };
  std::printf("{\"trace\": \"%s\", \"tracks\": %zu, \"slices\": %zu, \"lod_tiles\": %zu, \"lod_open_ms\": %.2f, "
              "\"queries\": %d, \"mean_tiles\": %.1f, \"p50_us\": %.2f, \"p95_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f}\n",
              path.c_str(), t->tracks.size(), t->slices.size(), lod->size(), open_ms, queries,
              static_cast<double>(tiles) / queries, pct(0.50), pct(0.95), pct(0.99), us.back());
  return 0;
}

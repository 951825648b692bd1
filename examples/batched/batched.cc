// A batched model loop for `strata sweep`: each step runs a fixed per-batch
// stage (a dense layer over the batch's shared state, whose cost does not grow
// with the batch) and then one small network per sample, split across worker
// threads. Throughput (samples/s) grows with the batch size until the
// per-sample work saturates the cores, which is what a sweep should find.
//
//   batched [--batch-size B] [--steps N] [--threads T]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "strata/strata.hpp"

namespace {

void MatMul(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c, int n) {
  c.assign(static_cast<size_t>(n) * n, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      float x = a[static_cast<size_t>(i) * n + k];
      for (int j = 0; j < n; ++j) c[static_cast<size_t>(i) * n + j] += x * b[static_cast<size_t>(k) * n + j];
    }
}

}  // namespace

int main(int argc, char** argv) {
  int batch = 8, steps = 12, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (a == "--batch-size") batch = v;
    else if (a == "--steps") steps = v;
    else if (a == "--threads") threads = v;
    else {
      std::fprintf(stderr, "usage: batched [--batch-size B] [--steps N] [--threads T]\n");
      return 2;
    }
  }
  if (batch < 1 || steps < 1 || threads < 1) return 2;
  const int kShared = 64, kSample = 64;
  std::vector<float> w(kShared * kShared, 0.01f), ws(kSample * kSample, 0.02f), out;
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    strata::Step step(static_cast<uint64_t>(s));
    {
      STRATA_SPAN("per_batch_stage");
      MatMul(w, w, out, kShared);
    }
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::vector<float> x(kSample * kSample, 0.5f), y;
        for (int i = t; i < batch; i += threads) {
          STRATA_SPAN("per_sample");
          MatMul(x, ws, y, kSample);
        }
      });
    for (auto& th : pool) th.join();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("batched: batch %d, %d steps, %.1f samples/s\n", batch, steps, batch * steps / secs);
  return 0;
}

// strata's trace reader on one core: raw decoding (every event of every stream,
// what `babeltrace2 --output-format=dummy` does) and the full model build.
//   reader_bench TRACE_DIR [REPEATS]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "importers/strata_trace.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: reader_bench TRACE_DIR [REPEATS]\n");
    return 2;
  }
  int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  double best_raw = 1e30, best_model = 1e30;
  uint64_t events = 0, bytes = 0;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto raw = strata::importers::ReadStrataTraceRaw(argv[1]);
    auto t1 = std::chrono::steady_clock::now();
    if (!raw.ok()) {
      std::fprintf(stderr, "reader_bench: %s\n", raw.status().message().c_str());
      return 1;
    }
    events = raw->events;
    bytes = raw->bytes;
    best_raw = std::min(best_raw, std::chrono::duration<double>(t1 - t0).count());
    auto t2 = std::chrono::steady_clock::now();
    auto trace = strata::importers::LoadStrataTrace(argv[1]);
    auto t3 = std::chrono::steady_clock::now();
    if (!trace.ok()) {
      std::fprintf(stderr, "reader_bench: %s\n", trace.status().message().c_str());
      return 1;
    }
    best_model = std::min(best_model, std::chrono::duration<double>(t3 - t2).count());
  }
  std::printf("events %llu  bytes %llu  (%.2f bytes/event)\n", static_cast<unsigned long long>(events),
              static_cast<unsigned long long>(bytes), static_cast<double>(bytes) / static_cast<double>(events));
  std::printf("raw decode:  %.3f s  %.1f M events/s\n", best_raw, static_cast<double>(events) / best_raw / 1e6);
  std::printf("model build: %.3f s  %.1f M events/s\n", best_model, static_cast<double>(events) / best_model / 1e6);
  return 0;
}

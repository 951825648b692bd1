#include "base/clock.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata {
namespace {

bool FileContainsWord(const char* path, const char* word) {
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char line[4096];
  bool found = false;
  size_t wl = std::strlen(word);
  while (!found && std::fgets(line, sizeof line, f)) {
    for (const char* p = std::strstr(line, word); p; p = std::strstr(p + 1, word)) {
      bool left = p == line || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':';
      char r = p[wl];
      if (left && (r == ' ' || r == '\n' || r == '\0')) {
        found = true;
        break;
      }
    }
  }
  std::fclose(f);
  return found;
}

}  // namespace

int64_t WallClockNs() {
  static const int64_t error = [] {
    const char* e = std::getenv("STRATA_TEST_WALL_CLOCK_ERROR_NS");
    return e ? std::strtoll(e, nullptr, 10) : 0;
  }();
  return static_cast<int64_t>(RealtimeNs()) + error;
}

int64_t TimeNamespaceOffsetNs() {
  static const int64_t offset = [] {
    FILE* f = std::fopen("/proc/self/timens_offsets", "re");
    if (!f) return int64_t{0};
    char name[32];
    long long sec = 0, nsec = 0;
    int64_t r = 0;
    while (std::fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3)
      if (std::strcmp(name, "monotonic") == 0) r = static_cast<int64_t>(sec) * 1000000000 + nsec;
    std::fclose(f);
    return r;
  }();
  return offset;
}

bool TscIsReliable() {
#if STRATA_HAVE_TSC
  const char* forced = ::secure_getenv("STRATA_CLOCK");
  if (forced && std::strcmp(forced, "monotonic") == 0) return false;
  if (forced && std::strcmp(forced, "tsc") == 0) return true;
  if (!FileContainsWord("/proc/cpuinfo", "constant_tsc")) return false;
  if (!FileContainsWord("/proc/cpuinfo", "nonstop_tsc")) return false;
  return FileContainsWord("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc");
#else
  return false;
#endif
}

ClockAnchor TakeClockAnchor() {
  // The pair is only as good as the window between the two TSC reads around
  // clock_gettime; keep the narrowest of a few tries.
  ClockAnchor best{};
  uint64_t best_window = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t t0 = ReadTsc();
    uint64_t ns = MonotonicNs();
    uint64_t t1 = ReadTsc();
    if (t1 - t0 < best_window) {
      best_window = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

void TscCalibration::Start(ClockAnchor first) {
  prev_ = last_ = first;
  ns_per_tick_ = 0;
  rate_q52_ = int64_t{1} << 52;
}

void TscCalibration::AddAnchor(ClockAnchor a) {
  // Ignore anchors too close to the last one: the rate would be noise.
  if (a.tsc <= last_.tsc + 100000) return;
  prev_ = last_;
  last_ = a;
  ns_per_tick_ = static_cast<double>(last_.ns - prev_.ns) / static_cast<double>(last_.tsc - prev_.tsc);
  // A TSC slower than 0.5 MHz is not a TSC; the clamp keeps the fixed point in range.
  rate_q52_ = static_cast<int64_t>(std::llround(std::ldexp(std::min(ns_per_tick_, 2047.0), 52)));
}


}  // namespace strata

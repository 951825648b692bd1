#include "base/progress.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>

namespace strata {
namespace {
int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
}  // namespace

ProgressBar::ProgressBar(std::string label, bool wanted, bool bytes) : label_(std::move(label)), bytes_(bytes) {
  active_ = wanted && ::isatty(2) == 1;
  start_ns_ = MonoNs();
}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(uint64_t done, uint64_t total) {
  if (!active_) return;
  int64_t now = MonoNs();
  if (now - last_draw_ns_ < 100000000) return;
  last_draw_ns_ = now;
  double secs = static_cast<double>(now - start_ns_) / 1e9;
  double mib = static_cast<double>(done) / (1 << 20);
  char line[160];
  if (total > 0) {
    double f = static_cast<double>(done) / static_cast<double>(total);
    if (f > 1) f = 1;
    constexpr int kWidth = 30;
    char bar[kWidth + 1];
    int filled = static_cast<int>(f * kWidth);
    for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '-';
    bar[kWidth] = 0;
    if (bytes_)
      std::snprintf(line, sizeof line, "\r%s [%s] %5.1f%%  %.0f MiB  %.1f s", label_.c_str(), bar, f * 100, mib, secs);
    else
      std::snprintf(line, sizeof line, "\r%s [%s] %llu/%llu  %.1f s", label_.c_str(), bar,
                    static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), secs);
  } else {
    std::snprintf(line, sizeof line, "\r%s  %.0f MiB  %.1f s", label_.c_str(), mib, secs);
  }
  std::fputs(line, stderr);
  std::fflush(stderr);
}

void ProgressBar::Finish() {
  if (!active_ || last_draw_ns_ == 0) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  last_draw_ns_ = 0;
}

}  // namespace strata

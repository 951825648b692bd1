// A one-line progress bar on stderr for long imports and analyses. It draws
// only when asked to and stderr is a terminal, so pipes, CI logs and tests stay quiet.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

class ProgressBar {
 public:
  // `bytes`: the amounts are bytes (shown in MiB), else counts (shown as done/total).
  ProgressBar(std::string label, bool wanted, bool bytes = true);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  bool active() const { return active_; }
  // `total` 0 means unknown: the bar shows the amount done only. Redraws at most ~10 times a second.
  void Update(uint64_t done, uint64_t total);
  // Clears the line.
  void Finish();

 private:
  std::string label_;
  bool active_ = false;
  bool bytes_ = true;
  int64_t last_draw_ns_ = 0;
  int64_t start_ns_ = 0;
};

}  // namespace strata

// Where a tracer lost records: each loss as a window of time (from the last
// record a stream kept to its first after the gap), merged overall and per
// CPU. An OS replay (strata's perf rings, LTTng's kernel streams) asks it
// whether an interval it pairs (a system call's entry and exit, a thread's
// switch out and back in) crosses a gap, and then does not trust the pairing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <unordered_map>

#include "base/intervals.h"

namespace strata::importers {

class LossWindows {
 public:
  // A window on CPU `cpu` (-1: no CPU known; it still counts for "any CPU").
  void Add(int16_t cpu, int64_t from, int64_t to) {
    all_.emplace_back(from, to);
    if (cpu >= 0) by_cpu_[cpu].emplace_back(from, to);
  }
  // Merges the windows; call once, after the last Add and before Crosses.
  void Seal() {
    SortAndMerge(all_);
    for (auto& [cpu, w] : by_cpu_) SortAndMerge(w);
  }
  // Whether records of the interval (a, b) may be missing: a window of CPU
  // `cpu` overlaps it; with cpu -1, a window of any CPU (the thread may have
  // run on any of them).
  bool Crosses(int64_t a, int64_t b, int16_t cpu = -1) const {
    const Intervals* w = &all_;
    if (cpu >= 0) {
      auto it = by_cpu_.find(cpu);
      if (it == by_cpu_.end()) return false;
      w = &it->second;
    }
    if (w->empty()) return false;
    auto it = std::lower_bound(w->begin(), w->end(), b,
                               [](const std::pair<int64_t, int64_t>& x, int64_t v) { return x.first < v; });
    return it != w->begin() && std::prev(it)->second > a;
  }

 private:
  Intervals all_;
  std::unordered_map<int16_t, Intervals> by_cpu_;
};

}  // namespace strata::importers

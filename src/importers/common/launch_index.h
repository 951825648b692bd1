#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/column.h"

namespace strata::importers {

// API calls by correlation id, to link device activities (and runtime
// allocations, a kernel's hardware metrics) to the call that launched them:
// one implementation for every importer (the Kineto, XSpace and strata
// importers each had their own map). Calls are appended as they are read and
// indexed once at the end; a later call with an id wins over an earlier one. Kineto's
// correlation ids are dense, so the index is an array over [min, max]; ids
// in a few dense runs far apart (several traces, ids offset per copy or per
// rank) get one array per run, found by a binary search over the runs; ids
// with no such structure get a flat hash table. (A node-based hash map here
// was a tenth of the import time; a binary search over all ids 3%; a hash
// table over runs of ids 2%, its probes missing the cache where the runs'
// arrays are read in order.)
class LaunchIndex {
 public:
  void Reserve(size_t n) { calls_.reserve(n); }
  // (always_inline: once per API call; g++ stopped inlining it into
  // Builder::AddSlice when the importer became several files.)
  [[gnu::always_inline]] void Add(uint64_t corr, uint32_t slice) {
    calls_.push_back({corr, slice, false});
    min_ = std::min(min_, corr);
    max_ = std::max(max_, corr);
  }

  // Indexes the calls; returns how many share their id with a later call
  // (the later one is the one linked).
  uint64_t Build();

  // The call with this correlation id (after Build), or -1.
  int64_t Find(uint64_t corr) const {
    if (corr < min_ || corr > max_) return -1;
    if (!runs_.empty()) {
      int64_t at = RunSlot(corr);
      return at < 0 ? -1 : static_cast<int64_t>(dense_[static_cast<size_t>(at)]) - 1;
    }
    for (size_t h = Home(corr);; h = (h + 1) & (table_.size() - 1)) {
      const HashSlot& s = table_[h];
      if (s.index == 0) return -1;
      if (s.corr == corr) return static_cast<int64_t>(s.index) - 1;
    }
  }
  // The launching slice of this id (after Build), or -1.
  int64_t FindSlice(uint64_t corr) const {
    int64_t i = Find(corr);
    return i < 0 ? -1 : static_cast<int64_t>(calls_[static_cast<size_t>(i)].slice);
  }
  bool empty() const { return calls_.empty(); }
  uint32_t slice(int64_t i) const { return calls_[static_cast<size_t>(i)].slice; }
  bool linked(int64_t i) const { return calls_[static_cast<size_t>(i)].linked; }
  void MarkLinked(int64_t i) { calls_[static_cast<size_t>(i)].linked = true; }

 private:
  struct Call {
    uint64_t corr;
    uint32_t slice;
    bool linked;  // some device activity names this call's id
  };
  struct Run {
    uint64_t first, last;  // ids in [first, last], none more than kGap apart
    size_t offset;         // of `first` in dense_
  };
  static constexpr uint64_t kGap = 64;

  // dense_ index of an id, -1 outside the runs (never for a call's own id).
  int64_t RunSlot(uint64_t corr) const {
    const Run* r = &runs_[0];
    if (runs_.size() > 1) {
      auto it = std::upper_bound(runs_.begin(), runs_.end(), corr, [](uint64_t c, const Run& x) { return c < x.first; });
      if (it == runs_.begin()) return -1;
      r = &*(it - 1);
    }
    if (corr < r->first || corr > r->last) return -1;
    return static_cast<int64_t>(r->offset + (corr - r->first));
  }

  uint64_t BuildHash();
  struct HashSlot {
    uint64_t corr;
    uint32_t index;  // call index + 1, 0 for an empty slot
  };
  size_t Home(uint64_t corr) const { return static_cast<size_t>((corr * 0x9E3779B97F4A7C15ull) >> shift_); }

  // Columns, not vectors: they grow with the trace, and spill to files past
  // the memory budget while an index is built (model/column.h).
  model::Column<Call> calls_;
  uint64_t min_ = UINT64_MAX, max_ = 0;
  std::vector<Run> runs_;
  model::Column<uint32_t> dense_;  // per run, id - first -> call index + 1, 0 for none
  model::Column<HashSlot> table_;  // ids without runs
  unsigned shift_ = 60;
};

// Correlation ids numbered per scope (CUPTI numbers per process): one index
// per scope (a process's index in the model).
class ScopedLaunchIndex {
 public:
  void Add(uint32_t scope, uint64_t corr, uint32_t slice) {
    if (scope >= scopes_.size()) scopes_.resize(scope + 1);
    scopes_[scope].Add(corr, slice);
  }
  // Indexes every scope's calls; returns how many share their id with a later call.
  uint64_t Build() {
    uint64_t dups = 0;
    for (LaunchIndex& s : scopes_) dups += s.Build();
    return dups;
  }
  // The launching slice (after Build), or -1.
  int64_t FindSlice(uint32_t scope, uint64_t corr) const {
    return scope < scopes_.size() ? scopes_[scope].FindSlice(corr) : -1;
  }

 private:
  std::vector<LaunchIndex> scopes_;
};

}  // namespace strata::importers

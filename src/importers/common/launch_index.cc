// Indexing the API calls once they are all read (launch_index.h).
#include "importers/common/launch_index.h"

namespace strata::importers {

uint64_t LaunchIndex::Build() {
  if (calls_.empty()) return 0;
  // Array slots: at most 8 per call (32 bytes, what the hash table takes per
  // call). Kineto numbers every activity and API call it sees, so the
  // runtime calls' ids step by 1-5 (5 in the shared V100 trace).
  const size_t budget = 8 * calls_.size() + 4096;
  if (max_ - min_ < budget) {
    runs_.push_back({min_, max_, 0});
  } else {
    model::Column<uint64_t> ids(calls_.size(), 0);
    for (size_t i = 0; i < calls_.size(); ++i) ids[i] = calls_[i].corr;
    if (!std::is_sorted(ids.begin(), ids.end())) std::sort(ids.begin(), ids.end());
    size_t slots = 0;
    for (uint64_t id : ids) {
      if (runs_.empty() || id - runs_.back().last > kGap) {
        if (!runs_.empty()) slots += runs_.back().last - runs_.back().first + 1;
        runs_.push_back({id, id, slots});
      }
      runs_.back().last = id;
    }
    slots += runs_.back().last - runs_.back().first + 1;
    if (slots > budget || runs_.size() > calls_.size() / 8 + 16) {
      runs_.clear();
      return BuildHash();
    }
  }
  const Run& last = runs_.back();
  dense_.assign(last.offset + (last.last - last.first) + 1, 0);
  uint64_t dups = 0;
  for (size_t i = 0; i < calls_.size(); ++i) {
    uint32_t& slot = dense_[static_cast<size_t>(RunSlot(calls_[i].corr))];
    if (slot != 0) ++dups;
    slot = static_cast<uint32_t>(i + 1);
  }
  return dups;
}

// Ids with no dense runs: an open-addressing table, at most half full, probed linearly.
uint64_t LaunchIndex::BuildHash() {
  uint64_t dups = 0;
  size_t slots = 16;
  while (slots < 2 * calls_.size()) slots *= 2;
  shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(slots));
  table_.assign(slots, HashSlot{0, 0});
  for (size_t i = 0; i < calls_.size(); ++i) {
    uint64_t corr = calls_[i].corr;
    for (size_t h = Home(corr);; h = (h + 1) & (slots - 1)) {
      HashSlot& s = table_[h];
      if (s.index == 0 || s.corr == corr) {
        if (s.index != 0) ++dups;  // the later call wins
        s = {corr, static_cast<uint32_t>(i + 1)};
        break;
      }
    }
  }
  return dups;
}

}  // namespace strata::importers

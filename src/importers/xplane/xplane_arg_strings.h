// The XSpace importer's cache in front of the string pool for string args.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "importers/kineto/caches.h"
#include "model/trace.h"

namespace strata::importers::xplane {

// String args interned through a cache in front of the pool: a profile
// repeats its ops' strings (tf_op, kernel_name, annotation...) every step, and
// the pool's map costs several cache misses a lookup. 16 Ki sets of 4 strings
// (a cache line each): tens of thousands of distinct strings fit, which the
// Kineto importer's 4 Ki-slot cache (one name a slot) does not hold. A miss
// only costs the pool lookup: the cache never changes which id a string gets.
class ArgStrings {
 public:
  explicit ArgStrings(model::StringPool& pool) : pool_(pool) { SizeFor(0); }

  // Sized for a space of `bytes`: up to 16 Ki sets (1 MiB), fewer for a small
  // space (a profile merged into a trace, a fuzz input) that would not use them.
  void SizeFor(size_t bytes) {
    size_t sets = 64;
    while (sets < kMaxSets && sets * 256 < bytes) sets *= 2;
    sets_.assign(sets, Set{});
    mask_ = sets - 1;
  }

  // The cache is larger than the CPU's and its strings are spread over the
  // pool, so a lookup is two memory loads: prefetched, the set when the stat
  // is read (Prefetch), the candidate's text before the event's args are
  // added (PrefetchText), so that Intern finds both in the CPU's cache.
  static uint64_t Hash(std::string_view s) {
    size_t n = s.size();
    uint64_t h = n * 0x9E3779B97F4A7C15ull;
    size_t i = 0;
    // (Each product folded: a multiply carries a byte's bits only upwards, so
    // the set bits would not see the high bytes of the words otherwise.)
    for (; i + 8 <= n; i += 8) {
      h = (h ^ kineto::Load8(s.data() + i)) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 32;
    }
    h = (h ^ kineto::LoadUpTo8(s.data() + i, n - i)) * 0x94D049BB133111EBull;
    return h ^ (h >> 32);
  }
  void Prefetch(uint64_t hash) const { __builtin_prefetch(&sets_[hash & mask_]); }
  void PrefetchText(std::string_view s, uint64_t hash) const {
    for (const Slot& e : sets_[hash & mask_].ways)
      if (e.data && e.len == s.size()) __builtin_prefetch(e.data);
  }

  model::StringId Intern(std::string_view s, uint64_t hash) {
    Set& set = sets_[hash & mask_];
    for (const Slot& e : set.ways)
      if (e.data && e.len == s.size() && kineto::SameBytes(e.data, s.data(), s.size())) return e.id;
    model::StringId id = pool_.Intern(s);
    std::string_view v = pool_.Get(id);  // stable storage
    if (v.size() < UINT32_MAX) {
      std::copy_backward(set.ways, set.ways + 3, set.ways + 4);  // the oldest leaves
      set.ways[0] = {v.data(), static_cast<uint32_t>(v.size()), id};
    }
    return id;
  }

 private:
  static constexpr size_t kMaxSets = size_t{1} << 14;
  struct Slot {
    const char* data = nullptr;
    uint32_t len = 0;
    model::StringId id = 0;
  };
  struct alignas(64) Set {
    Slot ways[4];
  };
  model::StringPool& pool_;
  std::vector<Set> sets_;
  size_t mask_ = 0;
};

}  // namespace strata::importers::xplane

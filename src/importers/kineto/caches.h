// The Kineto importer's caches in front of the string pool (names, arg
// keys) and its column reservation: what keeps appending a row cheap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/huge_pages.h"
#include "importers/kineto/events.h"
#include "importers/kineto/scalars.h"
#include "model/trace.h"

namespace strata::importers::kineto {

// Up to 8 bytes of [p, p + n) as an integer (for hashing short keys safely).
inline uint64_t LoadUpTo8(const char* p, size_t n) {
  uint64_t v = 0;
  if (n == 0) return v;  // p may be null for an empty view (memcpy from null is UB even for 0 bytes)
  std::memcpy(&v, p, std::min<size_t>(n, 8));
  return v;
}

// a[0, n) == b[0, n) for the short strings of the caches below, inline: a
// call to memcmp per name and arg key was 3% of an import.
inline bool SameBytes(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8)
      if (Load8(a + i) != Load8(b + i)) return false;
    return Load8(a + n - 8) == Load8(b + n - 8);  // the tail, overlapping
  }
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// Interning with a direct-mapped cache in front of the pool: a repeated name
// (most names repeat thousands of times) is found by a cheap hash of its
// length and a few of its bytes and confirmed by one memcmp, instead of
// hashing every byte into the pool's map. A miss or a collision only costs
// the pool lookup, so the cache never changes which id a string gets.
class InternCache {
 public:
  explicit InternCache(model::StringPool& pool) : pool_(pool), slots_(kSlots) {}

  StringId Intern(std::string_view s) {
    Slot& e = slots_[Hash(s) & (kSlots - 1)];
    if (e.data != nullptr && e.len == s.size() && SameBytes(e.data, s.data(), s.size())) return e.id;
    StringId id = pool_.Intern(s);
    std::string_view v = pool_.Get(id);  // stable storage
    e = {v.data(), v.size(), id};
    return id;
  }

 private:
  static constexpr size_t kSlots = 4096;
  struct Slot {
    const char* data = nullptr;
    size_t len = 0;
    StringId id = 0;
  };
  static uint64_t Hash(std::string_view s) {
    size_t n = s.size();
    uint64_t h = n * 0x9E3779B97F4A7C15ull;
    if (n >= 8) {
      h = (h ^ Load8(s.data())) * 0xBF58476D1CE4E5B9ull;
      h = (h ^ Load8(s.data() + n - 8)) * 0x94D049BB133111EBull;
      h = (h ^ Load8(s.data() + n / 2 - 4)) * 0x9E3779B97F4A7C15ull;
    } else {
      h = (h ^ LoadUpTo8(s.data(), n)) * 0xBF58476D1CE4E5B9ull;
    }
    return h ^ (h >> 31);
  }
  model::StringPool& pool_;
  std::vector<Slot> slots_;
};

// Arg keys are recognized once per distinct key, not once per arg: a small
// direct-mapped table from the raw key text to its role and (once an arg with
// that key is kept) its interned id. `gen` tells an Arg whether its slot still
// holds its key after a collision replaced it.
class KeyCache {
 public:
  struct Entry {
    std::string text;  // the raw (escaped) key
    Role role = Role::kKeep;
    uint32_t gen = 0;
    StringId id = model::StringPool::kNotFound;
  };
  KeyCache() : slots_(kSlots) {}

  // (always_inline: once per arg, and g++ stopped inlining it into FastArgs
  // when the importer became several files.)
  [[gnu::always_inline]] int16_t Find(std::string_view k) {
    auto slot = static_cast<int16_t>(Hash(k) & (kSlots - 1));
    Entry& e = slots_[static_cast<size_t>(slot)];
    if (e.gen == 0 || e.text.size() != k.size() || !SameBytes(e.text.data(), k.data(), k.size())) {
      e.text.assign(k);
      e.role = RoleOf(k);
      e.gen = ++gen_;
      e.id = model::StringPool::kNotFound;
    }
    return slot;
  }
  Entry& operator[](int16_t slot) { return slots_[static_cast<size_t>(slot)]; }

 private:
  static constexpr size_t kSlots = 256;
  static uint64_t Hash(std::string_view k) {
    size_t n = k.size();
    uint64_t h = (n * 0x9E3779B97F4A7C15ull) ^ LoadUpTo8(k.data(), n);
    h *= 0xBF58476D1CE4E5B9ull;
    if (n > 8) h = (h ^ LoadUpTo8(k.data() + n - 8, 8)) * 0x94D049BB133111EBull;
    return h >> 40;
  }
  std::vector<Entry> slots_;
  uint32_t gen_ = 0;
};

// Reserves a model column (or a builder's table) for `n` rows. A large one is
// also marked for transparent huge pages where the kernel has them free
// (base/huge_pages.h): the import writes each column once, front to back, and
// faulting it in 2 MiB at a time instead of 4 KiB saved 8% of the CPU time of
// a 218 MB import. Pages stay untouched (uncommitted) until rows reach them,
// so over-reserving costs address space, not memory (at most 2 MiB per
// column).
template <typename C>
void ReserveColumn(C& v, size_t n) {
  v.reserve(n);
  if (v.empty()) base::AdviseHugePagesIfFree(v.data(), v.capacity() * sizeof(v[0]));
}

}  // namespace strata::importers::kineto

// Per-thread name -> interned id cache of the op hot path.
//
// The recorder's Intern() takes a lock and hashes the text: far too slow per op.
// Op names mostly come from operator schemas whose strings live as long as the
// process, so the fast path keys on the name's *address*; but names of autograd
// nodes and record_function scopes are std::strings that may live on the stack
// and be reused for another name at the same address. So every hit is verified
// against the cached text, and a miss falls back to a lookup by content, then
// to Intern().
//
// The check compares the first 16 bytes as two masked 64-bit words, then the
// rest (names longer than 15) with strncmp, against the copy of the text kept
// in the slot's own cache line (the op path touches one line per lookup: with
// the framework's working set between two ops, a second line is a second miss). Reading 16 bytes from a name is in
// bounds because every name PyTorch hands out is a std::string's c_str(), whose
// buffer is at least 16 bytes (the small-string buffer, or a heap buffer for
// longer strings).
//
// Names built per call (autograd nodes' "MulBackward0", the engine's
// "autograd::engine::evaluate_function: MulBackward0": a quarter of the events
// of a training step) come at addresses reused for other names, so the address
// slot misses on them every time. They are found by content in a second
// direct-mapped table (a multiplicative hash of the bytes: a few ns for such a
// name, against ~40 for the unordered_map's hash, modulo and node walk).
//
//   slots_[hash(addr) % 1024] ---> Entry {id, flags, step, text} <-- by_text_[text]
//   {addr, id, text[0..40)}  -------^   ^------- by_hash_[hash(text) % 1024]
//
// Entries are never freed (names are few: hundreds per program).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata::collectors::torch {

// What a name means to step detection, decided once per name.
enum NameFlags : uint32_t {
  kNameOptimizerStep = 1u << 0,  // "Optimizer.step#SGD.step": a training step ends with it
  kNameProfilerStep = 1u << 1,   // "ProfilerStep#N": the program's own step marks
  kNameDataLoader = 1u << 2,     // "enumerate(DataLoader)#...__next__": waiting for a batch
};

// Whether the first 16 bytes at `name` are those of a name of length `len`
// whose first 16 bytes (NUL-padded) are `head16`: only the bytes that belong
// to it, its NUL included, are compared; the masks are computed, not loaded
// (a table would be one more cold cache line per op).
inline bool HeadMatches(const char* name, const void* head16, uint32_t len) {
  uint64_t w[2], h[2];
  std::memcpy(w, name, 16);
  std::memcpy(h, head16, 16);
  // Branch-free: n0, n1 bytes of each word belong to the name (128-bit shifts
  // make 64 a valid shift).
  __extension__ using U128 = unsigned __int128;
  uint32_t n0 = std::min<uint32_t>(len + 1, 8), n1 = std::min<uint32_t>(std::max<uint32_t>(len + 1, 8), 16) - 8;
  auto m0 = static_cast<uint64_t>((U128{1} << (8 * n0)) - 1);
  auto m1 = static_cast<uint64_t>((U128{1} << (8 * n1)) - 1);
  return (((w[0] & m0) ^ h[0]) | ((w[1] & m1) ^ h[1])) == 0;
}

struct NameEntry {
  uint32_t id = 0;
  uint32_t flags = 0;
  uint64_t step = 0;   // the N of ProfilerStep#N
  uint32_t len = 0;
  uint64_t head[2] = {0, 0};  // the first 16 bytes of text, NUL-padded
  std::string text;

  bool Matches(const char* name) const {
    return HeadMatches(name, head, len) && (len < 16 || std::strncmp(text.c_str() + 16, name + 16, len - 15) == 0);
  }
};

NameEntry MakeNameEntry(std::string_view text, uint32_t id);

class NameCache {
 public:
  using InternFn = uint32_t (*)(std::string_view);
  explicit NameCache(InternFn intern) : intern_(intern) {}

  // The op hot path: the interned id, verified from the slot's own cache line
  // for names shorter than 40 bytes (every aten op name), so that a hit touches
  // one line. 0 when the recorder is not recording.
  uint32_t LookupId(const char* name) {
    Slot& s = SlotOf(name);
    if (s.ptr == name && name && s.Matches(name)) return s.id;
    return LookupSlow(name, s)->id;
  }

  // For names built per call (autograd nodes' names): by content only. Their
  // address is a temporary's, so the address slot would only miss, and
  // overwriting it would evict a stable name's entry.
  uint32_t LookupIdByText(const char* name) {
    std::string_view text(name ? name : "");
    const NameEntry* h = by_hash_[TextHash(text) & (kSlots - 1)];
    if (h && h->len == text.size() && h->Matches(name)) return h->id;
    Slot scratch;
    return LookupSlow(name, scratch)->id;
  }

  // Never null; id 0 when the recorder is not recording.
  const NameEntry* Lookup(const char* name) {
    Slot& s = SlotOf(name);
    if (s.ptr == name && name && s.Matches(name)) return s.entry;
    return LookupSlow(name, s);
  }

  size_t size() const { return entries_.size(); }

 private:
  static constexpr size_t kSlots = 1024;
  static constexpr uint32_t kInline = 40;

  // One cache line: the address it was last seen at, the id, and the first
  // kInline bytes of the text (NUL-padded) to verify a hit with.
  struct alignas(64) Slot {
    const char* ptr = nullptr;
    const NameEntry* entry = nullptr;
    uint32_t id = 0;
    uint32_t len = 0;
    char text[kInline] = {};

    bool Matches(const char* name) const {
      if (!HeadMatches(name, text, len)) return false;
      if (len < 16) return true;
      if (len < kInline) return std::strncmp(text + 16, name + 16, len - 15) == 0;
      return entry->Matches(name);
    }
    void Set(const char* name, const NameEntry* e) {
      ptr = name;
      entry = e;
      id = e->id;
      len = e->len;
      std::memset(text, 0, kInline);
      std::memcpy(text, e->text.data(), e->len < kInline ? e->len : kInline);
    }
  };
  static_assert(sizeof(Slot) == 64);

  Slot& SlotOf(const char* name) { return slots_[(reinterpret_cast<uintptr_t>(name) >> 3) & (kSlots - 1)]; }

  // Not inlined: keeps the hit path small.
  __attribute__((noinline)) const NameEntry* LookupSlow(const char* name, Slot& s) {
    std::string_view text(name ? name : "");
    const NameEntry*& h = by_hash_[TextHash(text) & (kSlots - 1)];
    if (h && h->len == text.size() && h->Matches(name)) {
      s.Set(name, h);
      return h;
    }
    const NameEntry* e;
    auto it = by_text_.find(text);
    if (it != by_text_.end()) {
      e = it->second;
    } else {
      uint32_t id = intern_(text);
      if (id == 0) return &none_;  // not recording: nothing worth caching
      entries_.push_back(std::make_unique<NameEntry>(MakeNameEntry(text, id)));
      e = entries_.back().get();
      by_text_.emplace(e->text, e);
    }
    s.Set(name, e);
    h = e;
    return e;
  }

  // Names up to 24 bytes: all of them, 8 at a time; longer ones: the length,
  // the first 8 and the last 16 bytes (per-call names share long prefixes,
  // "autograd::engine::evaluate_function: ", and differ at the end). A
  // collision costs a miss, never a wrong name: hits are verified.
  static uint64_t TextHash(std::string_view t) {
    auto word = [&t](size_t at) {
      uint64_t w;
      std::memcpy(&w, t.data() + at, 8);
      return w;
    };
    auto mix = [](uint64_t x, uint64_t w) {
      x = (x ^ w) * 0xff51afd7ed558ccdull;
      return x ^ (x >> 32);
    };
    uint64_t x = t.size() * 0x9E3779B97F4A7C15ull;
    if (t.size() > 24) {
      x = mix(mix(mix(x, word(0)), word(t.size() - 16)), word(t.size() - 8));
    } else {
      size_t i = 0;
      for (; i + 8 <= t.size(); i += 8) x = mix(x, word(i));
      uint64_t w = 0;
      std::memcpy(&w, t.data() + i, t.size() - i);
      x = mix(x, w);
    }
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 29);
  }

  InternFn intern_;
  Slot slots_[kSlots];
  const NameEntry* by_hash_[kSlots] = {};
  std::unordered_map<std::string_view, const NameEntry*> by_text_;
  std::vector<std::unique_ptr<NameEntry>> entries_;
  NameEntry none_;
};

inline NameEntry MakeNameEntry(std::string_view text, uint32_t id) {
  NameEntry e;
  e.id = id;
  e.text = std::string(text);
  e.len = static_cast<uint32_t>(text.size());
  if (!text.empty()) std::memcpy(e.head, text.data(), std::min<size_t>(text.size(), 16));
  if (text.starts_with("Optimizer.step#")) e.flags |= kNameOptimizerStep;
  if (text.starts_with("enumerate(DataLoader)#")) e.flags |= kNameDataLoader;
  if (text.starts_with("ProfilerStep#")) {
    std::string_view n = text.substr(13);
    uint64_t v = 0;
    bool digits = !n.empty();
    for (char c : n) {
      if (c < '0' || c > '9') {
        digits = false;
        break;
      }
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (digits) {
      e.flags |= kNameProfilerStep;
      e.step = v;
    }
  }
  return e;
}

}  // namespace strata::collectors::torch

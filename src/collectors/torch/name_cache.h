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
// The check compares the first 16 bytes as two masked 64-bit words (masks kept
// in the slot), then the rest (names longer than 15) with strcmp, against the
// copy of the text kept in the slot's own cache line up to 31 bytes (the op
// path touches one line per lookup: with the framework's working set between
// two ops, a second line is a second miss). Reading 16 bytes from a name is in
// bounds because every name PyTorch hands out is a std::string's c_str(), whose
// buffer is at least 16 bytes (the small-string buffer, or a heap buffer for
// longer strings).
//
// Names built per call (autograd nodes' "MulBackward0", the engine's
// "autograd::engine::evaluate_function: MulBackward0": a quarter of the events
// of a training step) come at addresses reused for other names, so the address
// slot misses on them every time. They are found by content in a second
// direct-mapped table (a multiplicative hash of the bytes: a few ns for such a
// name, against ~40 for the unordered_map's hash, modulo and node walk). Such a
// name stops taking address slots over once it has missed there 64 times.
//
//   slots_[hash(addr) % 1024] ---> entries_[i] {id, flags, step, text} <-- by_text_[text]
//   {addr, id, i, text[0..32)} ------^   ^------- by_hash_[hash(text) % 1024]
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
  kNameCollective = 1u << 3,     // "gloo:all_reduce", "nccl:send 0->1": a c10d backend's work (comms.cc)
};

struct NameEntry {
  uint32_t id = 0;
  uint32_t flags = 0;
  uint64_t step = 0;   // the N of ProfilerStep#N
  uint32_t len = 0;
  uint32_t slot_misses = 0;   // address-slot misses that found it by content
  std::string text;
};

NameEntry MakeNameEntry(std::string_view text, uint32_t id);

class NameCache {
 public:
  using InternFn = uint32_t (*)(std::string_view);
  explicit NameCache(InternFn intern) : intern_(intern) {}

  // The op hot path: the interned id, verified from the slot's own cache line
  // for names up to 31 bytes (nearly every aten op name), so that a hit touches
  // one line. 0 when the recorder is not recording.
  uint32_t LookupId(const char* name) {
    Slot& s = SlotOf(name);
    if (s.ptr == name && name && Matches(s, name)) return s.id;
    return LookupSlow(name, &s)->id;
  }

  // For names built per call (autograd nodes' names): by content only. Their
  // address is a temporary's, so the address slot would only miss, and
  // overwriting it would evict a stable name's entry.
  uint32_t LookupIdByText(const char* name) {
    std::string_view text(name ? name : "");
    if (uint32_t h = Holding(by_hash_[TextHash(text) & (kSlots - 1)], text)) return entries_[h - 1]->id;
    return LookupSlow(name, nullptr)->id;
  }

  // Never null; id 0 when the recorder is not recording.
  const NameEntry* Lookup(const char* name) {
    Slot& s = SlotOf(name);
    if (s.ptr == name && name && Matches(s, name)) return entries_[s.index].get();
    return LookupSlow(name, &s);
  }

  size_t size() const { return entries_.size(); }

 private:
  static constexpr size_t kSlots = 1024;
  // A name whose address slot missed this many times (it is built per call, at
  // addresses reused for other names) no longer takes a slot over: it is found
  // by content, and stable names keep their slots.
  static constexpr uint32_t kUnstableMisses = 64;

  // One cache line: the address the name was last seen at, its id, and its
  // text to verify a hit with: the first 16 bytes as two words with the masks
  // of the bytes that belong to it (its NUL included: a prefix is another
  // name), then bytes 16..31, NUL-padded.
  struct alignas(64) Slot {
    const char* ptr = nullptr;
    uint64_t head[2] = {0, 0};
    uint64_t mask[2] = {0, 0};
    uint32_t id = 0;
    uint32_t index = 0;  // entries_[index]
    char tail[16] = {};  // tail[15] != 0: longer than 31 bytes, compared against the entry
  };
  static_assert(sizeof(Slot) == 64);

  // Reading 16 bytes at `name` is in bounds (see the top of this file).
  bool Matches(const Slot& s, const char* name) const {
    uint64_t w[2];
    std::memcpy(w, name, 16);
    if ((((w[0] & s.mask[0]) ^ s.head[0]) | ((w[1] & s.mask[1]) ^ s.head[1])) != 0) return false;
    if (__builtin_expect((s.head[1] >> 56) == 0, 1)) return true;  // its NUL is within the 16 bytes
    return MatchesTail(s, name);
  }

  // Past byte 16: from the slot up to 31 bytes, from the entry beyond.
  __attribute__((noinline)) bool MatchesTail(const Slot& s, const char* name) const {
    if (s.tail[15] == 0) return std::strcmp(s.tail, name + 16) == 0;
    const NameEntry& e = *entries_[s.index];
    return std::strncmp(e.text.c_str() + 16, name + 16, e.len - 15) == 0;
  }

  static void Set(Slot& s, const char* name, const NameEntry& e, uint32_t index) {
    s.ptr = name;
    s.id = e.id;
    s.index = index;
    std::memset(s.head, 0, sizeof s.head);
    std::memcpy(s.head, e.text.data(), std::min<size_t>(e.len, sizeof s.head));
    uint32_t n = std::min<uint32_t>(e.len + 1, 16);  // bytes of the first 16 that are the name's
    s.mask[0] = n >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * n)) - 1;
    s.mask[1] = n <= 8 ? 0 : n == 16 ? ~uint64_t{0} : (uint64_t{1} << (8 * (n - 8))) - 1;
    std::memset(s.tail, 0, sizeof s.tail);
    if (e.len > 16) std::memcpy(s.tail, e.text.data() + 16, std::min<size_t>(e.len - 16, sizeof s.tail));
  }

  // `h` (a by_hash_ bucket: an entries_ index + 1, or 0) if its entry's text is `text`, else 0.
  uint32_t Holding(uint32_t h, std::string_view text) const {
    if (h == 0) return 0;
    const NameEntry& e = *entries_[h - 1];
    return e.len == text.size() && std::memcmp(e.text.data(), text.data(), text.size()) == 0 ? h : 0;
  }

  Slot& SlotOf(const char* name) { return slots_[(reinterpret_cast<uintptr_t>(name) >> 3) & (kSlots - 1)]; }

  // Not inlined: keeps the hit path small. `s` is the address slot that missed
  // (null for a lookup by content).
  __attribute__((noinline)) const NameEntry* LookupSlow(const char* name, Slot* s) {
    std::string_view text(name ? name : "");
    uint32_t& h = by_hash_[TextHash(text) & (kSlots - 1)];
    uint32_t index;
    if (Holding(h, text)) {
      index = h - 1;
    } else {
      auto it = by_text_.find(text);
      if (it != by_text_.end()) {
        index = it->second;
      } else {
        uint32_t id = intern_(text);
        if (id == 0) return &none_;  // not recording: nothing worth caching
        index = static_cast<uint32_t>(entries_.size());
        entries_.push_back(std::make_unique<NameEntry>(MakeNameEntry(text, id)));
        by_text_.emplace(entries_.back()->text, index);
      }
      h = index + 1;
    }
    NameEntry& e = *entries_[index];
    if (s && e.slot_misses < kUnstableMisses) {
      ++e.slot_misses;
      Set(*s, name, e, index);
    }
    return &e;
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
  uint32_t by_hash_[kSlots] = {};  // entries_ index + 1; 0: empty
  std::unordered_map<std::string_view, uint32_t> by_text_;
  std::vector<std::unique_ptr<NameEntry>> entries_;
  NameEntry none_;
};

inline NameEntry MakeNameEntry(std::string_view text, uint32_t id) {
  NameEntry e;
  e.id = id;
  e.text = std::string(text);
  e.len = static_cast<uint32_t>(text.size());
  if (text.starts_with("Optimizer.step#")) e.flags |= kNameOptimizerStep;
  if (text.starts_with("enumerate(DataLoader)#")) e.flags |= kNameDataLoader;
  for (std::string_view backend : {"gloo:", "nccl:", "mpi:", "ucc:", "xccl:"})
    if (text.starts_with(backend)) e.flags |= kNameCollective;
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

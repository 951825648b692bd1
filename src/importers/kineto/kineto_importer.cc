// Kineto / Chrome trace JSON -> model. json_stream.cc finds the events;
// this file decodes each one with simdjson On-Demand and fills the tables.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "base/error.h"
#include "base/progress.h"
#include "importers/kineto/byte_source.h"
#include "importers/kineto/json_stream.h"
#include "importers/kineto/optimizer_steps.h"
#include "importers/kineto/kineto.h"

namespace strata::importers {
namespace kineto {
namespace {

namespace od = simdjson::ondemand;
using model::SliceKind;
using model::StringId;

// ---------------------------------------------------------------------------
// Scalars from raw JSON tokens. simdjson hands us the token text; numbers are
// converted here so that microsecond timestamps become exact nanoseconds.

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Times beyond +-2^61 ns (73 years; epoch microseconds reach it in 2043) are
// malformed: starts, ends and their differences must not overflow int64 downstream.
constexpr uint64_t kMaxMicros = (uint64_t{1} << 61) / 1000;

inline uint64_t Load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// How many of the 8 bytes of w (little-endian: w's low byte first) are ASCII
// digits before the first one that is not.
inline int LeadingDigits(uint64_t w) {
  // Per byte: 0x33 iff a digit (high nibble 3, and still 3 after adding 6).
  // A carry out of a byte >= 0xFA can only disturb bytes after that non-digit.
  uint64_t x = ((w & 0xF0F0F0F0F0F0F0F0ull) | (((w + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ^
               0x3333333333333333ull;
  uint64_t nonzero = (((x & 0x7F7F7F7F7F7F7F7Full) + 0x7F7F7F7F7F7F7F7Full) | x) & 0x8080808080808080ull;
  return nonzero == 0 ? 8 : __builtin_ctzll(nonzero) / 8;
}

// The value of 8 ASCII digits (the SWAR arithmetic simdjson's number parser uses).
inline uint64_t EightDigitsValue(uint64_t v) {
  v = (v & 0x0F0F0F0F0F0F0F0Full) * 2561 >> 8;
  v = (v & 0x00FF00FF00FF00FFull) * 6553601 >> 16;
  return (v & 0x0000FFFF0000FFFFull) * 42949672960001ull >> 32;
}

inline bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// Digits at [p, e) -> value (wrapping past 19 digits; callers bound the count).
// Eight bytes at a time: Kineto timestamps have 16 integer digits, ids 1-8.
inline const char* Digits(const char* p, const char* e, uint64_t* v) {
  static constexpr uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
  uint64_t x = 0;
  while (e - p >= 8) {
    uint64_t w = Load8(p);
    int n = LeadingDigits(w);
    if (n == 0) break;
    if (n < 8) {
      // The n digits moved to the top bytes, '0's below them: the same value.
      int shift = 8 * (8 - n);
      w = (w << shift) | (0x3030303030303030ull >> (64 - shift));
    }
    x = x * kPow10[n] + EightDigitsValue(w);
    p += n;
    if (n < 8) {
      *v = x;
      return p;
    }
  }
  while (p < e && IsDigit(*p)) x = x * 10 + static_cast<uint64_t>(*p++ - '0');
  *v = x;
  return p;
}

// A plain decimal integer token ("123", "-5": at most 18 digits, nothing but
// whitespace after) -> value. The common case of every integer field.
inline bool FastInt(std::string_view s, int64_t* v) {
  const char* p = s.data();
  const char* e = p + s.size();
  bool neg = p < e && *p == '-';
  p += neg;
  const char* d = p;
  uint64_t x;
  p = Digits(p, e, &x);
  if (p == d || p - d > 18) return false;
  for (; p < e; ++p)
    if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') return false;
  *v = neg ? -static_cast<int64_t>(x) : static_cast<int64_t>(x);
  return true;
}

// "123", "-5", "1712195495505543.2", "1.5e3" (microseconds) -> nanoseconds.
// Up to three fraction digits are exact; further ones round half up.
bool ParseMicros(std::string_view s, int64_t* ns, bool* fractional) {
  s = Trim(s);
  if (s.empty()) return false;
  const char* p = s.data();
  const char* e = p + s.size();
  bool neg = false;
  if (*p == '-') {
    neg = true;
    ++p;
  }
  if (p == e || !IsDigit(*p)) return false;
  uint64_t ip = 0;
  const char* digits_start = p;
  p = Digits(p, e, &ip);
  if (p - digits_start > 16 || ip > kMaxMicros) return false;
  {
    int64_t frac = 0;
    *fractional = false;
    if (p < e && *p == '.') {
      *fractional = true;
      ++p;
      int n = 0;
      while (p < e && IsDigit(*p)) {
        if (n < 3) frac = frac * 10 + (*p - '0');
        else if (n == 3 && *p >= '5') frac += 1;  // round half up at the 4th digit
        ++n;
        ++p;
      }
      if (n == 0) return false;
      for (; n < 3; ++n) frac *= 10;
    }
    if (p != e) goto slow;  // an exponent
    int64_t v = static_cast<int64_t>(ip) * 1000 + frac;
    *ns = neg ? -v : v;
    return true;
  }
slow: {
  double d;
  auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(d) || std::fabs(d) > static_cast<double>(kMaxMicros))
    return false;
  *fractional = d != std::floor(d) || s.find_first_of(".eE") != std::string_view::npos;
  *ns = static_cast<int64_t>(std::llround(d * 1000.0));
  return true;
}
}

bool ParseInt(std::string_view s, int64_t* v) {
  if (FastInt(s, v)) return true;
  s = Trim(s);
  if (!s.empty() && s.front() == '"') {  // numbers written as strings ("25738", "0x7f")
    if (s.size() < 2 || s.back() != '"') return false;
    s = s.substr(1, s.size() - 2);
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      uint64_t u;
      auto r = std::from_chars(s.data() + 2, s.data() + s.size(), u, 16);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
      *v = static_cast<int64_t>(u);
      return true;
    }
  }
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return true;
  // 68.0 and the like
  double d;
  auto rd = std::from_chars(s.data(), s.data() + s.size(), d);
  if (rd.ec != std::errc() || rd.ptr != s.data() + s.size() || !std::isfinite(d) || d != std::floor(d) ||
      std::fabs(d) > 9.2e18)
    return false;
  *v = static_cast<int64_t>(d);
  return true;
}

bool ParseDouble(std::string_view s, double* v) {
  int64_t i;
  // Integers convert exactly as from_chars would round them (18 digits fit
  // int64); "-0" keeps its sign on the slow path.
  if (FastInt(s, &i) && !(i == 0 && s[0] == '-')) {
    *v = static_cast<double>(i);
    return true;
  }
  s = Trim(s);
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// The content of a string token without its quotes, when it has no escapes.
inline bool PlainString(std::string_view tok, std::string_view* out) {
  tok = Trim(tok);
  if (tok.size() < 2 || tok.front() != '"' || tok.back() != '"') return false;
  std::string_view in = tok.substr(1, tok.size() - 2);
  if (in.find('\\') != std::string_view::npos) return false;
  *out = in;
  return true;
}

// Does the key whose first 8 raw bytes are `w` equal `k`? (k plus the closing quote, little-endian.)
template <size_t N>
inline bool KeyIs(uint64_t w, const char (&k)[N]) {
  static_assert(N <= 8, "short keys only");
  uint64_t want = 0;
  for (size_t i = 0; i + 1 < N; ++i) want |= uint64_t{static_cast<uint8_t>(k[i])} << (8 * i);
  want |= uint64_t{'"'} << (8 * (N - 1));
  uint64_t mask = N == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * N)) - 1;
  return (w & mask) == want;
}

// A key's raw text (keys with escapes are compared in their escaped form,
// which no key this importer looks for has).
inline std::string_view KeyOf(const char* p, const char* limit) {
  const char* q = p;
  while (q < limit && !(*q == '"' && (q == p || q[-1] != '\\'))) ++q;
  return std::string_view(p, static_cast<size_t>(q - p));
}

// ---------------------------------------------------------------------------

enum class Cat : uint8_t {
  kUnknown,
  kCpuOp,
  kUserAnnotation,
  kPython,
  kRuntime,
  kDriver,
  kKernel,
  kMemcpy,
  kMemset,
  kSync,
  kGpuAnnotation,
  kTrace,
  kFlowLaunch,  // ac2g, legacy "async" launch flows
  kOther,
};

Cat Classify(std::string_view c) {
  if (c.empty()) return Cat::kUnknown;
  switch (c[0]) {
    case 'c':
      if (c == "cpu_op") return Cat::kCpuOp;
      if (c == "cuda_runtime") return Cat::kRuntime;
      if (c == "cuda_driver") return Cat::kDriver;
      if (c == "cuda_sync") return Cat::kSync;
      break;
    case 'k':
      if (c == "kernel") return Cat::kKernel;
      break;
    case 'g':
      if (c == "gpu_memcpy") return Cat::kMemcpy;
      if (c == "gpu_memset") return Cat::kMemset;
      if (c == "gpu_user_annotation") return Cat::kGpuAnnotation;
      break;
    case 'u':
      if (c == "user_annotation") return Cat::kUserAnnotation;
      break;
    case 'p':
      if (c == "python_function") return Cat::kPython;
      break;
    case 'a':
      if (c == "ac2g" || c == "async") return Cat::kFlowLaunch;
      break;
    case 'm':
      if (c == "mtia_ccp_events") return Cat::kKernel;
      break;
    // The 2021 schema.
    case 'O':
      if (c == "Operator") return Cat::kCpuOp;
      break;
    case 'R':
      if (c == "Runtime") return Cat::kRuntime;
      break;
    case 'K':
      if (c == "Kernel") return Cat::kKernel;
      break;
    case 'M':
      if (c == "Memcpy") return Cat::kMemcpy;
      if (c == "Memset") return Cat::kMemset;
      break;
    case 'T':
      if (c == "Trace") return Cat::kTrace;
      break;
  }
  return Cat::kOther;
}

bool IsDeviceCat(Cat c) {
  return c == Cat::kKernel || c == Cat::kMemcpy || c == Cat::kMemset || c == Cat::kSync || c == Cat::kGpuAnnotation;
}

SliceKind KindOf(Cat c) {
  switch (c) {
    case Cat::kCpuOp: return SliceKind::kOp;
    case Cat::kUserAnnotation: return SliceKind::kSpan;
    case Cat::kPython: return SliceKind::kPython;
    case Cat::kRuntime: return SliceKind::kRuntime;
    case Cat::kDriver: return SliceKind::kDriver;
    case Cat::kKernel: return SliceKind::kKernel;
    case Cat::kMemcpy: return SliceKind::kMemcpy;
    case Cat::kMemset: return SliceKind::kMemset;
    case Cat::kSync: return SliceKind::kDeviceSync;
    case Cat::kGpuAnnotation: return SliceKind::kAnnotation;
    default: return SliceKind::kOther;
  }
}

// "ProfilerStep#12" -> 12
bool StepNumber(std::string_view name, uint64_t* n) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) return false;
  auto r = std::from_chars(name.data() + kPrefix.size(), name.data() + name.size(), *n);
  return r.ec == std::errc() && r.ptr == name.data() + name.size();
}

// "Memcpy HtoD (Pageable -> Device)" -> kHtoD, pageable.
void CopyKindFromName(std::string_view name, model::CopyKind* kind, int8_t* pinned) {
  using model::CopyKind;
  struct K {
    std::string_view s;
    CopyKind k;
  };
  static constexpr K kKinds[] = {{"HtoD", CopyKind::kHtoD}, {"DtoH", CopyKind::kDtoH}, {"DtoD", CopyKind::kDtoD},
                                 {"HtoH", CopyKind::kHtoH}, {"PtoP", CopyKind::kPtoP}, {"Peer", CopyKind::kPtoP}};
  for (const K& k : kKinds)
    if (name.find(k.s) != std::string_view::npos) {
      *kind = k.k;
      break;
    }
  if (name.find("Pageable") != std::string_view::npos) *pinned = 0;
  else if (name.find("Pinned") != std::string_view::npos) *pinned = 1;
}

struct Id {  // a pid or tid: a number, or a string some traces use
  bool present = false;
  bool is_str = false;
  int64_t num = 0;
  std::string_view str;
};

// Args the importer reads or drops, recognized once per arg.
enum class Role : uint8_t {
  kDevice, kStream, kCorrelation, kBytes, kSharedMem, kRegisters, kOccupancy, kGrid, kBlock, kKind,
  kExternalId, kSequence, kName, kMemBytes, kAddr, kDeviceType, kDeviceId, kTotalAllocated, kTotalReserved,
  kCount,            // (number of roles that are looked up)
  kDrop,             // derived or profiler-internal: not kept
  kLegacyDevice,     // "Device" (2021 schema): the pid again on host events, kept on device ones
  kKeep,             // kept in ArgTable as is
};
constexpr size_t kRoles = static_cast<size_t>(Role::kCount);

Role RoleOf(std::string_view k) {
  switch (k.size()) {
    case 4:
      if (k == "grid") return Role::kGrid;
      if (k == "kind") return Role::kKind;
      if (k == "name") return Role::kName;
      if (k == "cbid" || k == "Addr") return k == "Addr" ? Role::kAddr : Role::kDrop;
      break;
    case 5:
      if (k == "bytes") return Role::kBytes;
      if (k == "block") return Role::kBlock;
      if (k == "Bytes") return Role::kMemBytes;
      break;
    case 6:
      if (k == "Device") return Role::kLegacyDevice;
      if (k == "device") return Role::kDevice;
      if (k == "stream") return Role::kStream;
      if (k == "Ev Idx" || k == "queued") return Role::kDrop;
      break;
    case 7:
      if (k == "context") return Role::kDrop;
      break;
    case 9:
      if (k == "Device Id") return Role::kDeviceId;
      if (k == "occupancy") return Role::kDrop;
      break;
    case 10:
      if (k == "Trace name") return Role::kDrop;
      break;
    case 11:
      if (k == "correlation") return Role::kCorrelation;
      if (k == "External id" || k == "external id") return Role::kExternalId;
      if (k == "Device Type") return Role::kDeviceType;
      break;
    case 12:
      if (k == "warps per SM") return Role::kDrop;
      break;
    case 13:
      if (k == "shared memory") return Role::kSharedMem;
      if (k == "blocks per SM") return Role::kDrop;
      break;
    case 14:
      if (k == "Total Reserved") return Role::kTotalReserved;
      break;
    case 15:
      if (k == "Sequence number") return Role::kSequence;
      if (k == "Total Allocated") return Role::kTotalAllocated;
      if (k == "Trace iteration") return Role::kDrop;
      break;
    case 18:
      if (k == "Record function id") return Role::kDrop;
      break;
    case 20:
      if (k == "registers per thread") return Role::kRegisters;
      break;
    case 25:
      if (k == "est. achieved occupancy %") return Role::kOccupancy;
      break;
  }
  return Role::kKeep;
}

struct Arg {
  std::string_view key;
  std::string_view raw;  // scalar token, or the JSON text of an array/object
  bool container = false;
  Role role = Role::kKeep;
  int16_t slot = -1;     // the key's entry in Builder's key cache, -1 none
  bool has_int = false;  // raw is a plain integer (FastInt, not "-0"), already converted:
  int64_t int_value = 0;
  uint32_t gen = 0;      // that entry's generation when the arg was read
};

struct Event {
  char ph = 0;
  std::string_view name, cat, bp, scope, id;
  bool name_escaped = false;
  Id pid, tid;
  int64_t ts = 0, dur = 0;
  bool has_ts = false, has_dur = false, ts_fractional = false;
  bool bad_number = false;
  std::vector<Arg> args;
  std::array<int8_t, kRoles> known;  // index in args of each looked-up role, -1 absent
};

inline bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

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

  int16_t Find(std::string_view k) {
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
// also marked for transparent huge pages: the import writes each column once,
// front to back, and faulting it in 2 MiB at a time instead of 4 KiB saved 8%
// of the CPU time of a 218 MB import. Pages stay untouched (uncommitted) until
// rows reach them, so over-reserving costs address space, not memory (at most
// 2 MiB per column).
template <typename T>
void ReserveColumn(std::vector<T>& v, size_t n) {
  v.reserve(n);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  auto begin = reinterpret_cast<uintptr_t>(v.data());
  uintptr_t end = begin + v.capacity() * sizeof(T);
  begin = (begin + kHuge - 1) & ~(kHuge - 1);
  end &= ~(kHuge - 1);
  if (v.empty() && end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

// API calls by correlation id, to link device activities to their launch.
// Calls are appended as they are read and indexed once at the end. Kineto's
// correlation ids are dense, so the index is an array over [min, max]; ids
// in a few dense runs far apart (several traces, ids offset per copy or per
// rank) get one array per run, found by a binary search over the runs; ids
// with no such structure get a flat hash table. (A node-based hash map here
// was a tenth of the import time; a binary search over all ids 3%; a hash
// table over runs of ids 2%, its probes missing the cache where the runs'
// arrays are read in order.)
class LaunchIndex {
 public:
  void Reserve(size_t n) { ReserveColumn(calls_, n); }
  void Add(uint64_t corr, uint32_t slice) {
    calls_.push_back({corr, slice, false});
    min_ = std::min(min_, corr);
    max_ = std::max(max_, corr);
  }

  // Indexes the calls; returns how many share their id with a later call
  // (the later one is the one linked).
  uint64_t Build() {
    if (calls_.empty()) return 0;
    // Array slots: at most 8 per call (32 bytes, what the hash table takes per
    // call). Kineto numbers every activity and API call it sees, so the
    // runtime calls' ids step by 1-5 (5 in the shared V100 trace).
    const size_t budget = 8 * calls_.size() + 4096;
    if (max_ - min_ < budget) {
      runs_.push_back({min_, max_, 0});
    } else {
      std::vector<uint64_t> ids(calls_.size());
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

  // Ids with no dense runs: an open-addressing table, at most half full, probed linearly.
  uint64_t BuildHash() {
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
  struct HashSlot {
    uint64_t corr;
    uint32_t index;  // call index + 1, 0 for an empty slot
  };
  size_t Home(uint64_t corr) const { return static_cast<size_t>((corr * 0x9E3779B97F4A7C15ull) >> shift_); }

  std::vector<Call> calls_;
  uint64_t min_ = UINT64_MAX, max_ = 0;
  std::vector<Run> runs_;
  std::vector<uint32_t> dense_;  // per run, id - first -> call index + 1, 0 for none
  std::vector<HashSlot> table_;  // ids without runs
  unsigned shift_ = 60;
};

struct PendingFlow {
  uint64_t key;  // hash of (cat, id)
  char ph;
  bool bind_enclosing;
  bool launch;
  bool numeric_pid;
  int64_t pid, tid;  // resolved to a track once every slice is in
  int64_t ts;
  uint64_t corr;  // a launch flow's id, which Kineto sets to the correlation id
};

class Builder : public JsonEventSink {
 public:
  Builder(model::Trace& t, bool fast_path) : t_(t), fast_path_(fast_path) {
    t_.source = "kineto";
    k_external_id_ = t_.strings.Intern("External id");
  }

  void Warn(const std::string& what) override { t_.warnings.push_back(what); }

  // Sizes the tables for a file of `bytes` (compressed size for gzip: about a
  // tenth of the JSON), so they do not grow by copying. Reserved pages that
  // stay unused are never touched, so over-estimating costs no memory.
  void Reserve(uint64_t bytes) {
    uint64_t events = bytes / 220;  // Kineto events are 200-300 bytes of JSON
    if (bytes < 2 || events >= (1u << 31)) return;
    // Per event in Kineto traces: 0.66 slices, 0.09 device activities, 0.34
    // flow events, 0.22 API calls, 1-2.5 args (some of them dropped).
    auto n = static_cast<size_t>(events);
    auto all = [](size_t count, auto&... cols) { (ReserveColumn(cols, count), ...); };
    const size_t slices = n * 3 / 4;
    auto& s = t_.slices;
    all(slices, s.ts, s.dur, s.track, s.name, s.kind, s.depth, s.parent, s.arg);
    auto& d = t_.device;
    all(n / 8, d.slice, d.device, d.stream, d.correlation, d.launch, d.bytes, d.copy_kind, d.pinned, d.grid, d.block,
        d.shared_mem, d.registers, d.occupancy);
    auto& a = t_.args;
    all(n * 2, a.slice, a.key, a.str, a.num);
    ReserveColumn(flows_, n * 2 / 5);
    launches_.Reserve(n / 4);
  }

  Status Meta(std::string_view key, std::string_view raw) override {
    if (key != "deviceProperties" && key != "distributedInfo" && key != "baseTimeNanoseconds" && key != "host_name" &&
        key != "traceName")
      return OkStatus();
    simdjson::padded_string doc(raw);
    simdjson::dom::element e;
    if (dom_.parse(doc).get(e)) {
      Count("top-level members with invalid JSON ignored");
      return OkStatus();
    }
    if (key == "deviceProperties" && e.is_array()) {
      for (simdjson::dom::element d : e.get_array()) {
        if (!d.is_object()) continue;
        model::Device dev;
        int64_t i;
        if (!d["id"].get_int64().get(i)) dev.id = static_cast<int32_t>(i);
        std::string_view s;
        if (!d["name"].get_string().get(s)) dev.name = std::string(s);
        if (!d["totalGlobalMem"].get_int64().get(i)) dev.memory_bytes = static_cast<uint64_t>(i);
        if (!d["numSms"].get_int64().get(i)) dev.compute_units = static_cast<uint32_t>(i);
        if (!d["computeMajor"].get_int64().get(i)) dev.compute_major = static_cast<uint32_t>(i);
        if (!d["computeMinor"].get_int64().get(i)) dev.compute_minor = static_cast<uint32_t>(i);
        std::string_view nm = dev.name;
        dev.api = "cuda";
        dev.vendor = nm.find("NVIDIA") != std::string_view::npos || nm.find("Tesla") != std::string_view::npos ? "nvidia"
                     : nm.find("AMD") != std::string_view::npos || nm.find("Instinct") != std::string_view::npos ? "amd"
                                                                                                                   : "";
        if (dev.vendor == "amd") dev.api = "hip";
        t_.devices.push_back(dev);
      }
    } else if (key == "distributedInfo" && e.is_object()) {
      int64_t r;
      if (!e["rank"].get_int64().get(r)) rank_ = r;
    } else if (key == "baseTimeNanoseconds") {
      int64_t b;
      if (!e.get_int64().get(b)) t_.clock_offset_ns = b;
    } else if (key == "host_name") {
      std::string_view s;
      if (!e.get_string().get(s)) t_.hostname = std::string(s);
    }
    return OkStatus();
  }

  Status Batch(char* doc, size_t len, size_t capacity, uint64_t offset) override {
    limit_ = doc + len;
    // Events as Kineto writes them take the fast path; from the first one it
    // does not accept, the rest of the batch goes through simdjson.
    const char* end = doc + len - 1;  // the batch's closing ']'
    bool at_event;
    const char* r = FastEvents(SkipWs(doc + 1), end, &at_event);
    if (!at_event) {
      if (r == end) return OkStatus();
      // (The stream only splits batches at commas; within one, simdjson would reject these too.)
      if (*r != ',')
        return Err(StatusCode::kCorrupt, "invalid JSON in traceEvents near byte {}: expected ',' or ']' after an event",
                   offset + static_cast<uint64_t>(r - doc) - 1);
      const char* n = SkipWs(r + 1);
      if (n == end)
        return Err(StatusCode::kCorrupt, "invalid JSON in traceEvents near byte {}: ',' before the closing ']'",
                   offset + static_cast<uint64_t>(r - doc) - 1);
      r = n;
    }
    // The byte before r is a separator (or the batch's own '['): it frames the rest as an array.
    auto skip = static_cast<size_t>(r - 1 - doc);
    return SlowBatch(doc + skip, len - skip, capacity - skip, offset + skip);
  }

  const char* FastEvents(const char* p, const char* end, bool* at_event) override {
    *at_event = true;
    while (fast_path_ && *p == '{') {
      ResetEvent();
      const char* q = FastEvent(p, end);
      if (q == nullptr) return p;
      ++t_.events_read;
      AddEvent();
      q = SkipWs(q);
      const char* n = *q == ',' ? SkipWs(q + 1) : q;
      if (*q != ',' || *n != '{') {
        *at_event = false;
        return q;
      }
      p = n;
    }
    return p;
  }

  Status SlowBatch(char* doc, size_t len, size_t capacity, uint64_t offset) {
    doc[0] = '[';
    od::document d;
    auto err = parser_.iterate(doc, len, capacity).get(d);
    if (err) return Err(StatusCode::kCorrupt, "invalid JSON in the events from byte {}: {}", offset, simdjson::error_message(err));
    od::array arr;
    if ((err = d.get_array().get(arr)))
      return Err(StatusCode::kCorrupt, "invalid JSON in the events from byte {}: {}", offset, simdjson::error_message(err));
    for (auto el : arr) {
      od::object obj;
      if ((err = el.get_object().get(obj))) {
        if (err == simdjson::INCORRECT_TYPE)
          return Err(StatusCode::kCorrupt, "invalid trace: an element of \"traceEvents\" near byte {} is not an object",
                     Where(doc, d, offset));
        return JsonError(doc, d, offset, err);
      }
      ResetEvent();
      if ((err = ReadEvent(obj))) return JsonError(doc, d, offset, err);
      ++t_.events_read;
      AddEvent();
    }
    return OkStatus();
  }

  Status Finish() {
    // Names from metadata events.
    for (auto& [pid, name] : process_names_) {
      auto it = host_procs_.find(pid);
      if (it != host_procs_.end()) t_.processes[it->second].name = name;
    }
    for (auto& p : pending_thread_names_) {
      auto hp = host_procs_.find(p.pid);
      if (hp == host_procs_.end()) continue;
      auto it = tracks_.find({hp->second, p.tid});
      if (it != tracks_.end()) t_.tracks[it->second].name = p.name;
    }
    for (auto& p : t_.processes) p.rank = rank_;
    // Launch links by correlation id.
    if (uint64_t dups = launches_.Build())
      Count("API calls that share a correlation id with an earlier one (the last one is linked)", dups);
    size_t unlinked = 0;
    for (size_t r = 0; r < t_.device.size(); ++r) {
      uint64_t c = t_.device.correlation[r];
      if (c == 0) continue;
      int64_t call = launches_.Find(c);
      if (call >= 0) {
        t_.device.launch[r] = static_cast<int32_t>(launches_.slice(call));
        launches_.MarkLinked(call);
      }
      else if (t_.slices.kind[t_.device.slice[r]] != SliceKind::kAnnotation) ++unlinked;
    }
    if (unlinked) t_.warnings.push_back(fmt::format("{} device activities have no launching API call in the trace", unlinked));
    // Slices left open by B without E.
    for (auto& [trk, stack] : open_) {
      if (!stack.empty()) Skip("B events without a matching E (dropped)", stack.size());
    }
    // A file whose every event was skipped holds no trace: saying "0 streams"
    // and exiting 0 would pass a broken or foreign file off as an empty run.
    if (t_.events_read > 0 && skipped_ >= t_.events_read) {
      std::string why;
      size_t shown = 0;
      for (auto& [what, n] : skipped_reasons_)
        if (shown++ < 3) why += fmt::format("{}{} {}", why.empty() ? "" : ", ", n, what);
      if (shown > 3) why += fmt::format(" and {} more kinds", shown - 3);
      return Err(StatusCode::kCorrupt, "no event could be imported: all {} events in \"traceEvents\" were skipped ({})",
                 t_.events_read, why);
    }
    for (auto& [what, n] : counts_) t_.warnings.push_back(fmt::format("{} {}", n, what));
    DropLinkedLaunchFlows();
    if (size_t n = AddOptimizerSteps(t_))
      t_.warnings.push_back(fmt::format("no ProfilerStep ranges: {} steps found from the optimizer steps", n));
    t_.Finalize();
    ResolveFlows();
    return OkStatus();
  }

 private:
  static uint64_t Where(const char* doc, od::document& d, uint64_t offset) {
    const char* at = nullptr;
    if (!d.current_location().get(at) && at >= doc) return offset + static_cast<uint64_t>(at - doc) - 1;
    return offset;
  }
  Status JsonError(const char* doc, od::document& d, uint64_t offset, simdjson::error_code err) {
    return Err(StatusCode::kCorrupt, "invalid JSON in traceEvents near byte {}: {}", Where(doc, d, offset),
               simdjson::error_message(err));
  }

  void Count(const std::string& what, uint64_t n = 1) { counts_[what] += n; }
  // An event left out of the model: counted as a warning, and against the file.
  void Skip(const std::string& what, uint64_t n = 1) {
    Count(what, n);
    // The reason without its "(skipped)": the error that lists them says so once.
    size_t paren = what.ends_with(')') ? what.rfind(" (") : std::string::npos;
    skipped_reasons_[what.substr(0, paren)] += n;
    skipped_ += n;
  }

  // A pid or tid written as a string: "25738" is a number, anything else a name.
  static void IdFromString(std::string_view s, Id* id) {
    int64_t n;
    auto r = std::from_chars(s.data(), s.data() + s.size(), n);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) {
      id->num = n;
    } else {
      id->is_str = true;
      id->str = s;
    }
  }

  static simdjson::error_code ReadId(od::value& v, Id* id) {
    std::string_view tok = v.raw_json_token();
    simdjson::error_code err = simdjson::SUCCESS;
    id->present = true;
    tok = Trim(tok);
    if (!tok.empty() && tok.front() == '"') {
      std::string_view s;
      if (!PlainString(tok, &s)) {
        if ((err = v.get_string().get(s))) return err;
      }
      IdFromString(s, id);
      return simdjson::SUCCESS;
    }
    if (!ParseInt(tok, &id->num)) id->present = false;
    return simdjson::SUCCESS;
  }

  // A string field's value; escaped strings are unescaped by simdjson.
  simdjson::error_code ReadString(od::value& v, std::string_view* out, bool* escaped = nullptr) {
    std::string_view tok = v.raw_json_token();
    if (PlainString(tok, out)) return simdjson::SUCCESS;
    tok = Trim(tok);
    if (tok.empty() || tok.front() != '"') {
      ev_.bad_number = true;  // not a string
      *out = {};
      return simdjson::SUCCESS;
    }
    if (escaped) *escaped = true;
    return v.get_string().get(*out);
  }

  [[gnu::always_inline]] void ResetEvent() {
    static constexpr std::array<int8_t, kRoles> kAbsent = [] {
      std::array<int8_t, kRoles> a{};
      a.fill(-1);
      return a;
    }();
    // One store of constants per field: chained assignments (a = b = {})
    // compiled to stores read back as one wider load, a failed
    // store-to-load forwarding stall each, three per event.
    ev_.ph = 0;
    ev_.name = {};
    ev_.cat = {};
    ev_.bp = {};
    ev_.scope = {};
    ev_.id = {};
    ev_.name_escaped = false;
    ev_.pid = Id{};
    ev_.tid = Id{};
    ev_.has_ts = ev_.has_dur = ev_.ts_fractional = ev_.bad_number = false;
    ev_.args.clear();
    ev_.known = kAbsent;  // (fill() was a call to memset per event)
    if (!escaped_args_.empty()) escaped_args_.clear();  // (clear() on an empty deque still walks its nodes)
  }

  // ---------------------------------------------------------------------------
  // The fast path. Nearly every event in a real trace is plain ASCII JSON with
  // no escapes; for those, walking the bytes once here is about twice as fast
  // as simdjson's On-Demand iteration (stage 1 over the batch, then a token
  // walk per field). It accepts a strict subset of JSON and fills ev_ exactly
  // as ReadEvent does from the same tokens; on anything else (an escape, a
  // control or non-ASCII byte, a misplaced token, a value of an unexpected
  // type) it returns null having touched nothing but ev_, and the batch goes
  // on through simdjson from that event, which validates or rejects it.
  // Reads past `end` stay inside the batch's padding: every scan stops at
  // the batch's closing ']' at `end`.

  template <typename C>
  static C* SkipWs(C* p) {
    while (IsWs(*p)) ++p;
    return p;
  }

  // p at an opening quote -> one past the closing one; null at an escape, a
  // control character or a byte >= 0x80 (UTF-8 is validated by simdjson).
  static const char* FastString(const char* p, const char* end) {
    ++p;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (p < end) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      // Signed compare: bytes >= 0x80 are negative, so "< 0x20" also finds them.
      __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                  _mm_cmplt_epi8(v, space));
      auto mask = static_cast<unsigned>(_mm_movemask_epi8(stop));
      if (mask != 0) {
        p += __builtin_ctz(mask);
        return p < end && *p == '"' ? p + 1 : nullptr;
      }
      p += 16;
    }
    return nullptr;
#else
    for (; p < end; ++p) {
      auto c = static_cast<unsigned char>(*p);
      if (c == '"') return p + 1;
      if (c == '\\' || c < 0x20 || c >= 0x80) return nullptr;
    }
    return nullptr;
#endif
  }

  static bool IsNumberChar(char c) {
    return IsDigit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
  }

  // A number (its characters; the parsers judge it) or true/false/null -> one past it.
  static const char* FastScalar(const char* p) {
    if (IsDigit(*p) || *p == '-') {
      while (IsNumberChar(*p)) ++p;
      return p;
    }
    size_t n = *p == 'f' ? 5 : 4;
    if (std::memcmp(p, "true", 4) != 0 && std::memcmp(p, "null", 4) != 0 && std::memcmp(p, "false", 5) != 0)
      return nullptr;
    return IsNumberChar(p[n]) || (p[n] >= 'a' && p[n] <= 'z') ? nullptr : p + n;
  }

  // p at '[' or '{' -> one past the matching closer; brackets must pair up.
  // (Commas and colons inside are not checked: simdjson does not check them
  // in a value it skips or returns as raw JSON either.)
  static const char* FastContainer(const char* p, const char* end) {
    char want[32];
    size_t depth = 0;
    while (p < end) {
      char c = *p;
      if (c == '[' || c == '{') {
        if (depth == sizeof want) return nullptr;
        want[depth++] = static_cast<char>(c + 2);  // '[' + 2 == ']', '{' + 2 == '}'
        ++p;
      } else if (c == ']' || c == '}') {
        if (want[--depth] != c) return nullptr;
        ++p;
        if (depth == 0) return p;
      } else if (c == '"') {
        if (!(p = FastString(p, end))) return nullptr;
      } else if (IsWs(c) || c == ',' || c == ':') {
        ++p;
      } else if (!(p = FastScalar(p))) {
        return nullptr;
      }
    }
    return nullptr;
  }

  // A plain integer at p (what FastInt accepts: at most 18 digits, not "-0")
  // -> one past it, or null when the number is anything else.
  static const char* IntAt(const char* p, int64_t* v) {
    bool neg = *p == '-';
    const char* d = p + neg;
    uint64_t x;
    const char* e = Digits(d, d + 19, &x);
    if (e == d || e - d > 18 || IsNumberChar(*e) || (neg && x == 0)) return nullptr;
    *v = neg ? -static_cast<int64_t>(x) : static_cast<int64_t>(x);
    return e;
  }

  // ParseMicros's common case read in place: [-]digits[.digits] -> one past
  // it; null for anything else (ParseMicros then judges the token).
  static const char* MicrosAt(const char* p, int64_t* ns, bool* fractional) {
    bool neg = *p == '-';
    const char* q = p + neg;
    if (!IsDigit(*q)) return nullptr;
    const char* d = q;
    uint64_t ip;
    q = Digits(q, q + 17, &ip);
    if (q - d > 16 || ip > kMaxMicros) return nullptr;
    int64_t frac = 0;
    *fractional = false;
    if (*q == '.') {
      *fractional = true;
      ++q;
      int n = 0;
      for (; IsDigit(*q); ++n, ++q) {
        if (n < 3) frac = frac * 10 + (*q - '0');
        else if (n == 3 && *q >= '5') frac += 1;  // round half up at the 4th digit
      }
      if (n == 0) return nullptr;
      for (; n < 3; ++n) frac *= 10;
    }
    if (IsNumberChar(*q)) return nullptr;
    int64_t v = static_cast<int64_t>(ip) * 1000 + frac;
    *ns = neg ? -v : v;
    return q;
  }

  // One value: [begin, end) is its text, `next` the first byte after it that
  // is not whitespace (simdjson's raw_json_token() and raw_json() reach there).
  struct FastVal {
    const char* begin;
    const char* end;
    const char* next;
    std::string_view Token() const { return {begin, static_cast<size_t>(end - begin)}; }
    // A string's content without its quotes.
    std::string_view Content() const { return {begin + 1, static_cast<size_t>(end - begin - 2)}; }
    bool IsString() const { return *begin == '"'; }
    bool IsContainer() const { return *begin == '{' || *begin == '['; }
  };

  static bool FastValue(const char* p, const char* end, FastVal* v) {
    const char* e;
    if (*p == '"') e = FastString(p, end);
    else if (*p == '{' || *p == '[') e = FastContainer(p, end);
    else e = FastScalar(p);
    if (e == nullptr) return false;
    *v = {p, e, SkipWs(e)};
    return true;
  }

  // A string field's value at p (a container is not one: nullptr, simdjson's)
  // -> the byte after it and its whitespace; `out` its content, or empty and
  // bad_number when the value is a scalar that is not a string.
  const char* FastStringField(const char* p, const char* end, bool container, std::string_view* out) {
    if (*p == '"') {  // the common case, without FastValue's dispatch
      const char* e = FastString(p, end);
      if (e == nullptr) return nullptr;
      *out = std::string_view(p + 1, static_cast<size_t>(e - p - 2));
      return SkipWs(e);
    }
    FastVal v;
    if (container || !FastValue(p, end, &v)) return nullptr;
    if (v.IsString()) {
      *out = v.Content();
    } else {
      ev_.bad_number = true;
      *out = {};
    }
    return v.next;
  }

  // A pid or tid at p -> the byte after it and its whitespace. They are short
  // integers: a digit loop inline, the rest out of line (the 8-digit SWAR
  // parser's constants and registers cost more than such a number).
  [[gnu::always_inline]] static const char* FastId(const char* p, const char* end, Id* id) {
    const char* q = p + (*p == '-');
    const char* d = q;
    uint64_t x = 0;
    while (IsDigit(*q) && q - d < 18) x = x * 10 + static_cast<uint64_t>(*q++ - '0');
    // What IntAt accepts: 1-18 digits, not followed by a number character, not "-0".
    if (q != d && !IsNumberChar(*q) && !(*p == '-' && x == 0)) {
      id->present = true;
      id->num = *p == '-' ? -static_cast<int64_t>(x) : static_cast<int64_t>(x);
      return SkipWs(q);
    }
    return FastIdSlow(p, end, id);
  }
  [[gnu::noinline]] static const char* FastIdSlow(const char* p, const char* end, Id* id) {
    id->present = true;
    const char* e = IntAt(p, &id->num);
    if (e != nullptr) return SkipWs(e);
    FastVal v;
    if (!FastValue(p, end, &v)) return nullptr;
    if (v.IsString()) IdFromString(v.Content(), id);
    else if (!ParseInt(v.Token(), &id->num)) id->present = false;
    return v.next;
  }

  // A "ts" or "dur" at p -> the byte after it and its whitespace.
  const char* FastMicros(const char* p, const char* end, int64_t* ns, bool* has, bool* fractional) {
    const char* e = MicrosAt(p, ns, fractional);
    if (e != nullptr) {
      *has = true;
      return SkipWs(e);
    }
    FastVal v;
    if (!FastValue(p, end, &v)) return nullptr;
    if (ParseMicros(v.Token(), ns, fractional)) *has = true;
    else ev_.bad_number = true;
    return v.next;
  }

  // After a member name's closing quote -> its value (past the ':' and the
  // whitespace around it), or null. Kineto writes `"key": value`.
  static const char* ValueAfterKey(const char* ke) {
    if (ke[0] == ':' && ke[1] == ' ' && !IsWs(ke[2])) return ke + 2;
    ke = SkipWs(ke);
    if (*ke != ':') return nullptr;
    return SkipWs(ke + 1);
  }

  // p at '{' of an event -> one past its '}', ev_ filled as ReadEvent fills it.
  // A key this importer reads is recognised by one 8-byte compare of its
  // text and closing quote (no scan for the quote); any other key is scanned.
  const char* FastEvent(const char* p, const char* end) {
    p = SkipWs(p + 1);
    if (*p != '"') return nullptr;  // "{}" too: rare, simdjson's
    for (;;) {
      const char* kp = p + 1;
      uint64_t w = Load8(kp);
      const char* key_start = p;
      FastVal v;
      // Each known key: `p` moves to its value; `container` says whether the
      // value is an object or array. (Known keys take strings and scalars
      // only: ReadEvent would read a container's first byte as the token, so
      // containers go to simdjson.)
#define STRATA_KEY_VALUE(len)                          \
  if (!(p = ValueAfterKey(kp + (len) + 1))) return nullptr; \
  const bool container = *p == '{' || *p == '['
      switch (kp[0]) {
        case 'p':
          if (KeyIs(w, "ph")) {
            STRATA_KEY_VALUE(2);
            if (!container && p[0] == '"' && p[2] == '"' && PlainChar(p[1])) {
              ev_.ph = p[1];  // "X": the common case, without a string scan
              p = SkipWs(p + 3);
              goto next;
            }
            std::string_view ph;
            if (!(p = FastStringField(p, end, container, &ph))) return nullptr;
            ev_.ph = ph.size() == 1 ? ph[0] : '?';
            goto next;
          }
          if (KeyIs(w, "pid")) {
            STRATA_KEY_VALUE(3);
            if (container || !(p = FastId(p, end, &ev_.pid))) return nullptr;
            goto next;
          }
          break;
        case 't':
          if (KeyIs(w, "ts")) {
            STRATA_KEY_VALUE(2);
            if (container || !(p = FastMicros(p, end, &ev_.ts, &ev_.has_ts, &ev_.ts_fractional))) return nullptr;
            goto next;
          }
          if (KeyIs(w, "tid")) {
            STRATA_KEY_VALUE(3);
            if (container || !(p = FastId(p, end, &ev_.tid))) return nullptr;
            goto next;
          }
          break;
        case 'd':
          if (KeyIs(w, "dur")) {
            STRATA_KEY_VALUE(3);
            bool frac;
            if (container || !(p = FastMicros(p, end, &ev_.dur, &ev_.has_dur, &frac))) return nullptr;
            goto next;
          }
          break;
        case 'c':
          if (KeyIs(w, "cat")) {
            STRATA_KEY_VALUE(3);
            if (!(p = FastStringField(p, end, container, &ev_.cat))) return nullptr;
            goto next;
          }
          break;
        case 'n':
          if (KeyIs(w, "name")) {
            STRATA_KEY_VALUE(4);
            if (!(p = FastStringField(p, end, container, &ev_.name))) return nullptr;
            goto next;
          }
          break;
        case 'a':
          if (KeyIs(w, "args")) {
            STRATA_KEY_VALUE(4);
            (void)container;
            if (*p != '{' || !(p = FastArgs(p, end))) return nullptr;
            goto next;
          }
          break;
        case 'i':
          if (KeyIs(w, "id")) {
            STRATA_KEY_VALUE(2);
            if (container || !FastValue(p, end, &v)) return nullptr;
            ev_.id = v.Token();
            p = v.next;
            goto next;
          }
          break;
        case 'b':
          if (KeyIs(w, "bp")) {
            STRATA_KEY_VALUE(2);
            if (!(p = FastStringField(p, end, container, &ev_.bp))) return nullptr;
            goto next;
          }
          break;
        case 's':
          if (KeyIs(w, "s")) {
            STRATA_KEY_VALUE(1);
            if (!(p = FastStringField(p, end, container, &ev_.scope))) return nullptr;
            goto next;
          }
          break;
        default:
          break;
      }
#undef STRATA_KEY_VALUE
      {
        // A key the importer does not read: its value is skipped.
        const char* ke = FastString(key_start, end);
        if (ke == nullptr || !(p = ValueAfterKey(ke))) return nullptr;
        if (!FastValue(p, end, &v)) return nullptr;
        p = v.next;
      }
    next:
      if (AtKinetoSeparator(p)) {
        p += 2;
        continue;
      }
      if (*p == '}') return p + 1;
      if (*p != ',') return nullptr;
      p = SkipWs(p + 1);
      if (*p != '"') return nullptr;
    }
  }

  // At Kineto's separator between members, `, "`: the caller steps to the quote.
  static bool AtKinetoSeparator(const char* p) { return p[0] == ',' && p[1] == ' ' && p[2] == '"'; }

  // A byte that stands for itself inside a JSON string: no quote, backslash,
  // control character or non-ASCII byte (FastString's rule).
  static bool PlainChar(char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  }

  // p at the '{' of "args" -> the first byte after its '}' that is not
  // whitespace; ev_.args filled as ReadArgs fills it.
  const char* FastArgs(const char* p, const char* end) {
    p = SkipWs(p + 1);
    if (*p == '}') return SkipWs(p + 1);
    for (;;) {
      if (*p != '"') return nullptr;
      const char* kp = p + 1;
      const char* ke = FastString(p, end);
      if (ke == nullptr || !(p = ValueAfterKey(ke))) return nullptr;
      // Built in place (a copy of the 56-byte Arg per argument showed in profiles).
      size_t index = ev_.args.size();
      Arg& arg = ev_.args.emplace_back();
      arg.key = std::string_view(kp, static_cast<size_t>(ke - 1 - kp));
      if (const char* e = IntAt(p, &arg.int_value)) {
        arg.has_int = true;
        arg.raw = std::string_view(p, static_cast<size_t>(e - p));
        p = SkipWs(e);
      } else {
        FastVal v;
        if (!FastValue(p, end, &v)) return nullptr;
        arg.container = v.IsContainer();
        // raw_json() of a container reaches the next token, so keeps the whitespace before it.
        arg.raw = arg.container ? std::string_view(v.begin, static_cast<size_t>(v.next - v.begin)) : v.Token();
        p = v.next;
      }
      arg.slot = keys_.Find(arg.key);
      const KeyCache::Entry& entry = keys_[arg.slot];
      arg.role = entry.role;
      arg.gen = entry.gen;
      if (arg.role < Role::kCount && index < 127) ev_.known[static_cast<size_t>(arg.role)] = static_cast<int8_t>(index);
      if (AtKinetoSeparator(p)) {
        p += 2;
        continue;
      }
      if (*p == '}') return SkipWs(p + 1);
      if (*p != ',') return nullptr;
      p = SkipWs(p + 1);
    }
  }

  simdjson::error_code ReadEvent(od::object& obj) {
    for (auto f : obj) {
      od::field field;
      auto err = std::move(f).get(field);
      if (err) return err;
      // Keys are matched as one 8-byte load against the name plus its closing
      // quote; the batch is padded, so the load never leaves the buffer.
      const char* kp = reinterpret_cast<const char*>(field.key().raw());
      uint64_t w = Load8(kp);
      od::value v = field.value();
      std::string_view tok;
      switch (kp[0]) {
        case 'p':
          if (KeyIs(w, "ph")) {
            std::string_view ph;
            if ((err = ReadString(v, &ph))) return err;
            ev_.ph = ph.size() == 1 ? ph[0] : '?';
          } else if (KeyIs(w, "pid")) {
            if ((err = ReadId(v, &ev_.pid))) return err;
          }
          break;
        case 't':
          if (KeyIs(w, "ts")) {
            tok = v.raw_json_token();
            if (ParseMicros(tok, &ev_.ts, &ev_.ts_fractional)) ev_.has_ts = true;
            else ev_.bad_number = true;
          } else if (KeyIs(w, "tid")) {
            if ((err = ReadId(v, &ev_.tid))) return err;
          }
          break;
        case 'd':
          if (KeyIs(w, "dur")) {
            tok = v.raw_json_token();
            bool frac;
            if (ParseMicros(tok, &ev_.dur, &frac)) ev_.has_dur = true;
            else ev_.bad_number = true;
          }
          break;
        case 'c':
          if (KeyIs(w, "cat") && (err = ReadString(v, &ev_.cat))) return err;
          break;
        case 'n':
          if (KeyIs(w, "name")) {
            if ((err = ReadString(v, &ev_.name, &ev_.name_escaped))) return err;
            if (ev_.name_escaped) {
              // The unescaped text lives in the parser's string buffer until the next batch.
              name_copy_.assign(ev_.name);
              ev_.name = name_copy_;
            }
          }
          break;
        case 'a':
          if (KeyIs(w, "args") && (err = ReadArgs(v))) return err;
          break;
        case 'i':
          if (KeyIs(w, "id")) ev_.id = Trim(v.raw_json_token());
          break;
        case 'b':
          if (KeyIs(w, "bp") && (err = ReadString(v, &ev_.bp))) return err;
          break;
        case 's':
          if (KeyIs(w, "s") && (err = ReadString(v, &ev_.scope))) return err;
          break;
        default:
          break;
      }
    }
    return simdjson::SUCCESS;
  }

  // The raw text of the key whose first byte is `kp`, given where its value
  // starts: the key's closing quote is the last one before the ':'.
  std::string_view KeyBefore(const char* kp, const char* value) const {
    const char* q = value;
    while (q > kp && IsWs(q[-1])) --q;
    if (q > kp && q[-1] == ':') {
      --q;
      while (q > kp && IsWs(q[-1])) --q;
      if (q > kp && q[-1] == '"') return std::string_view(kp, static_cast<size_t>(q - 1 - kp));
    }
    return KeyOf(kp, limit_);
  }

  simdjson::error_code ReadArgs(od::value& v) {
    od::object a;
    auto err = v.get_object().get(a);
    if (err == simdjson::INCORRECT_TYPE) {
      Count("events with a non-object \"args\" (args ignored)");
      return simdjson::SUCCESS;
    }
    if (err) return err;
    for (auto f : a) {
      od::field field;
      if ((err = std::move(f).get(field))) return err;
      const char* kp = reinterpret_cast<const char*>(field.key().raw());
      od::value val = field.value();
      std::string_view tok = val.raw_json_token();  // starts at the value
      Arg arg;
      arg.key = KeyBefore(kp, tok.data());
      arg.slot = keys_.Find(arg.key);
      const KeyCache::Entry& ke = keys_[arg.slot];
      arg.role = ke.role;
      arg.gen = ke.gen;
      char c = tok.empty() ? '\0' : tok.front();
      if (c == '[') {
        od::array arr;
        if ((err = val.get_array().get(arr))) return err;
        if ((err = arr.raw_json().get(arg.raw))) return err;
        arg.container = true;
      } else if (c == '{') {
        od::object o;
        if ((err = val.get_object().get(o))) return err;
        if ((err = o.raw_json().get(arg.raw))) return err;
        arg.container = true;
      } else {
        arg.raw = Trim(tok);
        if (c == '"' && std::memchr(arg.raw.data(), '\\', arg.raw.size()) != nullptr) {
          // Keep an unescaped copy; the view into the parser's buffer would not outlive the batch anyway.
          std::string_view s;
          if ((err = val.get_string().get(s))) return err;
          escaped_args_.emplace_back("\"");
          escaped_args_.back().append(s).append("\"");
          arg.raw = escaped_args_.back();
        }
      }
      if (arg.role < Role::kCount && ev_.args.size() < 127) ev_.known[static_cast<size_t>(arg.role)] = static_cast<int8_t>(ev_.args.size());
      ev_.args.push_back(arg);
    }
    return simdjson::SUCCESS;
  }

  const Arg* FindArg(Role r) const {
    int8_t i = ev_.known[static_cast<size_t>(r)];
    return i < 0 ? nullptr : &ev_.args[static_cast<size_t>(i)];
  }
  bool ArgInt(Role r, int64_t* v) const {
    const Arg* a = FindArg(r);
    if (a && a->has_int) {
      *v = a->int_value;
      return true;
    }
    return a && !a->container && ParseInt(a->raw, v);
  }

  uint32_t HostProcess(const Id& pid) {
    int64_t key = pid.num;
    if (pid.is_str) {
      StringId s = t_.strings.Intern(pid.str);
      key = INT64_MIN + s;  // string pids ("Spans") live apart from numbers
    }
    auto [it, inserted] = host_procs_.try_emplace(key, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(t_.processes.size());
      model::Process p;
      p.pid = pid.is_str ? 0 : pid.num;
      if (pid.is_str) p.name = t_.strings.Intern(pid.str);
      t_.processes.push_back(p);
    }
    return it->second;
  }

  uint32_t DeviceProcess(int64_t device) {
    auto [it, inserted] = dev_procs_.try_emplace(device, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(t_.processes.size());
      model::Process p;
      p.pid = device;
      p.is_device = true;
      p.device = static_cast<int32_t>(device);
      p.name = t_.strings.Intern(fmt::format("GPU {}", device));
      t_.processes.push_back(p);
    }
    return it->second;
  }

  static int64_t TidKey(const Id& tid, model::StringPool& strings) {
    if (!tid.present) return 0;
    if (!tid.is_str) return tid.num;
    // "stream 7" (legacy device tids) -> 7; other strings get a key of their own.
    std::string_view s = tid.str;
    if (s.substr(0, 7) == "stream ") {
      int64_t n;
      auto r = std::from_chars(s.data() + 7, s.data() + s.size(), n);
      if (r.ec == std::errc()) return n;
    }
    return INT64_MIN + strings.Intern(s);
  }

  uint32_t Track(uint32_t process, int64_t tid, model::TrackKind kind, int32_t device) {
    std::pair<uint32_t, int64_t> key{process, tid};
    if (key == last_track_key_) return last_track_;
    auto [it, inserted] = tracks_.try_emplace(key, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(t_.tracks.size());
      model::Track trk;
      trk.kind = kind;
      trk.process = process;
      trk.tid = tid;
      trk.device = device;
      if (kind == model::TrackKind::kDeviceQueue) trk.name = t_.strings.Intern(fmt::format("stream {}", tid));
      else if (tid < INT64_MIN / 2) {
        trk.name = static_cast<StringId>(tid - INT64_MIN);
        trk.tid = 0;
      }
      t_.tracks.push_back(trk);
    }
    last_track_key_ = key;
    last_track_ = it->second;
    return it->second;
  }

  StringId Name() {
    if (ev_.name.empty()) return 0;
    return intern_.Intern(ev_.name);
  }

  void AddArgs(uint32_t slice, bool device_row) {
    for (const Arg& a : ev_.args) {
      // Columns, derived values and profiler internals are not repeated here.
      switch (a.role) {
        case Role::kDrop:
        case Role::kCorrelation:
          continue;
        case Role::kDevice:
        case Role::kStream:
        case Role::kBytes:
        case Role::kGrid:
        case Role::kBlock:
        case Role::kSharedMem:
        case Role::kRegisters:
        case Role::kOccupancy:
        case Role::kKind:
          if (device_row) continue;
          break;
        case Role::kLegacyDevice:
          if (!device_row) continue;  // legacy: the pid again
          break;
        default:
          break;
      }
      StringId key = a.role == Role::kExternalId ? k_external_id_ : KeyId(a);
      double num = std::numeric_limits<double>::quiet_NaN();
      StringId str = 0;
      if (a.container) {
        str = intern_.Intern(a.raw);
      } else if (!a.raw.empty() && a.raw.front() == '"') {
        std::string_view inner = a.raw.substr(1, a.raw.size() >= 2 ? a.raw.size() - 2 : 0);
        int64_t iv;
        // Numbers written as strings ("stream": "7") are numbers, as HTA reads them.
        if (!inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
            ParseInt(inner, &iv))
          num = static_cast<double>(iv);
        str = intern_.Intern(inner);
      } else if (a.has_int) {
        num = static_cast<double>(a.int_value);  // what ParseDouble makes of it
      } else if (a.raw == "null") {
        continue;
      } else if (a.raw == "true" || a.raw == "false") {
        num = a.raw == "true" ? 1 : 0;
      } else if (!ParseDouble(a.raw, &num)) {
        // simdjson does not validate tokens it is not asked to convert.
        Count("args with an invalid JSON value (kept as text)");
        str = intern_.Intern(a.raw);
      }
      t_.args.Add(slice, key, str, num);
    }
  }

  StringId KeyId(const Arg& a) {
    if (a.slot >= 0) {
      KeyCache::Entry& e = keys_[a.slot];
      if (e.gen == a.gen) {
        if (e.id == model::StringPool::kNotFound) e.id = intern_.Intern(e.text);
        return e.id;
      }
    }
    return intern_.Intern(a.key);
  }

  void AddEvent() {
    if (ev_.bad_number) {
      Skip("events with a malformed number or string field (skipped)");
      return;
    }
    if (!ev_.has_ts) t_.source_fractional_us = true;  // as HTA's loader sees it: a float column
    else if (ev_.ts_fractional) t_.source_fractional_us = true;
    switch (ev_.ph) {
      case 'X': return AddComplete();
      case 'B':
      case 'E': return AddBeginEnd();
      case 'i':
      case 'I':
      case 'n': return AddInstant();
      case 'C': return AddCounter();
      case 's':
      case 't':
      case 'f': return AddFlow();
      case 'M': return AddMetadata();
      case 0: Skip("events without \"ph\" (skipped)"); return;
      default: {
        // (A phase is any one character, a control character included: the message stays one line.)
        auto c = static_cast<unsigned char>(ev_.ph);
        Skip(c >= 0x20 && c < 0x7f ? fmt::format("events of phase '{}' (not imported)", ev_.ph)
                                   : fmt::format("events of phase 0x{:02x} (not imported)", c));
        return;
      }
    }
  }

  // The track an event goes to: a device stream for device categories, else the thread.
  uint32_t TrackFor(Cat cat, int64_t* device_out, int64_t* stream_out) {
    if (IsDeviceCat(cat)) {
      int64_t device = ev_.pid.is_str ? 0 : ev_.pid.num;
      ArgInt(Role::kDevice, &device);
      int64_t stream = 0;
      bool has_stream = ArgInt(Role::kStream, &stream);
      if (!has_stream) stream = TidKey(ev_.tid, t_.strings);
      *device_out = device;
      *stream_out = stream;
      return Track(DeviceProcess(device), stream, model::TrackKind::kDeviceQueue, static_cast<int32_t>(device));
    }
    return Track(HostProcess(ev_.pid), TidKey(ev_.tid, t_.strings), model::TrackKind::kThread, model::kNone);
  }

  uint32_t AddSlice(Cat cat, int64_t ts, int64_t dur) {
    int64_t device = 0, stream = 0;
    uint32_t trk = TrackFor(cat, &device, &stream);
    ++t_.tracks[trk].events;
    SliceKind kind = KindOf(cat);
    uint64_t arg = 0;
    uint64_t step;
    if (!IsDeviceCat(cat) && StepNumber(ev_.name, &step)) {
      kind = SliceKind::kStep;
      arg = step;
    }
    if (cat == Cat::kTrace) kind = SliceKind::kOther;
    uint32_t s = t_.slices.Add(ts, dur, trk, Name(), kind, arg);
    int64_t corr = 0;
    if (IsDeviceCat(cat) && cat != Cat::kGpuAnnotation) {
      ArgInt(Role::kCorrelation, &corr);
      uint32_t r = t_.device.Add(s, static_cast<int32_t>(device), stream, static_cast<uint64_t>(std::max<int64_t>(corr, 0)));
      int64_t v;
      if (ArgInt(Role::kBytes, &v)) t_.device.bytes[r] = static_cast<uint64_t>(std::max<int64_t>(v, 0));
      if (cat == Cat::kMemcpy) CopyKindFromName(ev_.name, &t_.device.copy_kind[r], &t_.device.pinned[r]);
      if (cat == Cat::kKernel) {
        if (ArgInt(Role::kSharedMem, &v)) t_.device.shared_mem[r] = static_cast<uint32_t>(v);
        if (ArgInt(Role::kRegisters, &v)) t_.device.registers[r] = static_cast<uint32_t>(v);
        const Arg* occ = FindArg(Role::kOccupancy);
        double d;
        if (occ && ParseDouble(occ->raw, &d)) t_.device.occupancy[r] = static_cast<float>(d / 100.0);
        ReadDim3(Role::kGrid, &t_.device.grid[r]);
        ReadDim3(Role::kBlock, &t_.device.block[r]);
      }
      AddArgs(s, true);
    } else if (IsDeviceCat(cat)) {
      AddArgs(s, true);
    } else {
      if ((cat == Cat::kRuntime || cat == Cat::kDriver) && ArgInt(Role::kCorrelation, &corr) && corr > 0) {
        t_.slices.arg[s] = static_cast<uint64_t>(corr);
        launches_.Add(static_cast<uint64_t>(corr), s);
      } else if (cat == Cat::kCpuOp) {
        int64_t seq;
        if (ArgInt(Role::kSequence, &seq) && seq >= 0) t_.slices.arg[s] = static_cast<uint64_t>(seq);
      }
      AddArgs(s, false);
    }
    return s;
  }

  void ReadDim3(Role k, std::array<uint32_t, 3>* out) {
    const Arg* a = FindArg(k);
    if (!a || !a->container) return;
    std::string_view s = a->raw;
    int i = 0;
    const char* p = s.data();
    const char* e = p + s.size();
    while (p < e && i < 3) {
      while (p < e && (*p < '0' || *p > '9')) ++p;
      uint32_t v = 0;
      auto r = std::from_chars(p, e, v);
      if (r.ec != std::errc()) break;
      (*out)[static_cast<size_t>(i++)] = v;
      p = r.ptr;
    }
  }

  void AddComplete() {
    if (!ev_.has_ts) {
      Skip("complete events without \"ts\" (skipped)");
      return;
    }
    if (!ev_.has_dur) {
      Count("complete events without \"dur\" (imported with duration 0)");
      ev_.dur = 0;
    }
    if (ev_.dur < 0) {
      Count("complete events with a negative duration (imported with duration 0)");
      ev_.dur = 0;
    }
    Cat cat = Classify(ev_.cat);
    if (cat == Cat::kFlowLaunch) cat = Cat::kOther;
    // torch's legacy autograd profiler (PyTorch built without Kineto, such as
    // Debian's 1.13) writes no categories, every event under the process
    // "CPU functions": its ops, and record_function ranges named "Name#...".
    if (cat == Cat::kUnknown && ev_.pid.is_str && ev_.pid.str == "CPU functions")
      cat = ev_.name.find('#') != std::string_view::npos ? Cat::kUserAnnotation : Cat::kCpuOp;
    AddSlice(cat, ev_.ts, ev_.dur);
  }

  void AddBeginEnd() {
    if (!ev_.has_ts) {
      Skip("B/E events without \"ts\" (skipped)");
      return;
    }
    Cat cat = Classify(ev_.cat);
    int64_t device = 0, stream = 0;
    uint32_t trk = TrackFor(cat, &device, &stream);
    auto& stack = open_[trk];
    if (ev_.ph == 'B') {
      stack.push_back({ev_.ts, std::string(ev_.name), std::string(ev_.cat), ev_.args.size()});
      // Args of B events are kept with the slice when it closes.
      auto& saved = open_args_[trk];
      for (const Arg& a : ev_.args) saved.push_back({std::string(a.key), std::string(a.raw), a.container});
      return;
    }
    if (stack.empty()) {
      Skip("E events without a matching B (skipped)");
      return;
    }
    OpenBE o = std::move(stack.back());
    stack.pop_back();
    auto& saved = open_args_[trk];
    std::vector<SavedArg> args(saved.end() - static_cast<long>(o.nargs), saved.end());
    saved.resize(saved.size() - o.nargs);
    int64_t dur = ev_.ts - o.ts;
    if (dur < 0) {
      Count("E events before their B (imported with duration 0)");
      dur = 0;
    }
    // Re-enter AddSlice with the B event's identity.
    std::string name = std::move(o.name), catname = std::move(o.cat);
    ev_.name = name;
    ev_.cat = catname;
    ev_.args.clear();
    for (const SavedArg& a : args) {
      Arg arg{a.key, a.raw, a.container};
      if (arg.key == "Device") arg.role = Role::kLegacyDevice;
      ev_.args.push_back(arg);
    }
    AddSlice(Classify(catname), o.ts, dur);
  }

  void AddInstant() {
    if (!ev_.has_ts) {
      Skip("instant events without \"ts\" (skipped)");
      return;
    }
    uint32_t trk = Track(HostProcess(ev_.pid), TidKey(ev_.tid, t_.strings), model::TrackKind::kThread, model::kNone);
    ++t_.tracks[trk].events;
    if (ev_.name == "[memory]") {
      int64_t bytes = 0, addr = 0, dtype = 0, did = -1, alloc = -1, reserved = -1;
      ArgInt(Role::kMemBytes, &bytes);
      ArgInt(Role::kAddr, &addr);
      ArgInt(Role::kDeviceType, &dtype);
      ArgInt(Role::kDeviceId, &did);
      ArgInt(Role::kTotalAllocated, &alloc);
      ArgInt(Role::kTotalReserved, &reserved);
      t_.memory.Add(ev_.ts, trk, dtype != 0 && did >= 0 ? static_cast<int32_t>(did) : model::kNone,
                    static_cast<uint64_t>(addr), bytes, alloc, reserved);
      return;
    }
    t_.instants.Add(ev_.ts, trk, Name());
  }

  void AddCounter() {
    if (!ev_.has_ts) {
      Skip("counter events without \"ts\" (skipped)");
      return;
    }
    uint32_t proc = HostProcess(ev_.pid);
    for (const Arg& a : ev_.args) {
      double v;
      if (a.container || !ParseDouble(a.raw, &v)) continue;
      std::string series_name = ev_.args.size() == 1 ? std::string(ev_.name) : fmt::format("{}.{}", ev_.name, a.key);
      StringId n = t_.strings.Intern(series_name);
      uint64_t key = (uint64_t{proc} << 32) | n;
      auto [it, inserted] = series_.try_emplace(key, 0);
      if (inserted) {
        it->second = static_cast<uint32_t>(t_.counter_series.size());
        t_.counter_series.push_back({n, proc, 0});
      }
      t_.counters.Add(it->second, ev_.ts, v);
    }
  }

  void AddFlow() {
    if (!ev_.has_ts || ev_.id.empty()) {
      Skip("flow events without \"ts\" or \"id\" (skipped)");
      return;
    }
    Cat cat = Classify(ev_.cat);
    uint64_t key = std::hash<std::string_view>{}(ev_.cat) * 31 + std::hash<std::string_view>{}(ev_.id);
    int64_t pid = ev_.pid.is_str ? INT64_MIN + t_.strings.Intern(ev_.pid.str) : ev_.pid.num;
    int64_t corr = 0;
    if (cat == Cat::kFlowLaunch) ParseInt(ev_.id, &corr);
    flows_.push_back({key, ev_.ph, ev_.bp == "e", cat == Cat::kFlowLaunch, !ev_.pid.is_str, pid,
                      TidKey(ev_.tid, t_.strings), ev_.ts, static_cast<uint64_t>(std::max<int64_t>(corr, 0))});
  }

  void AddMetadata() {
    const Arg* a = FindArg(Role::kName);
    std::string_view v;
    if (!a || !PlainString(a->raw, &v)) return;
    if (ev_.name == "process_name" && !ev_.pid.is_str) {
      process_names_[ev_.pid.num] = t_.strings.Intern(v);
    } else if (ev_.name == "thread_name" && !ev_.pid.is_str) {
      pending_thread_names_.push_back({ev_.pid.num, TidKey(ev_.tid, t_.strings), t_.strings.Intern(Trim(v))});
    }
  }

  // Launch flows (Kineto writes one per correlation id) that the correlation
  // link already represents need no binding: they go, with the launch index,
  // before Finalize allocates its scratch. (Most flow events are such; on a
  // 1 GB trace they and the index were 100 MB of the peak, and the kernel
  // zeroing fresh pages was 10-40% of the import on this VM.)
  void DropLinkedLaunchFlows() {
    auto kept = std::remove_if(flows_.begin(), flows_.end(), [this](const PendingFlow& f) {
      if (!f.launch || f.corr == 0) return false;
      int64_t call = launches_.Find(f.corr);
      return call >= 0 && launches_.linked(call);
    });
    std::vector<PendingFlow>(flows_.begin(), kept).swap(flows_);
    launches_ = LaunchIndex();
  }

  void ResolveFlows() {
    // Chrome flow semantics: "s" binds to the enclosing slice, "f" to the
    // enclosing slice with bp=e, else to the next slice that starts.
    // Flow steps grouped by key, in time order, a start before other steps at
    // its time, else in file order. Sorted as 24-byte keys rather than the
    // flows themselves (sorting the 48-byte rows was 3% of an import).
    struct Order {
      uint64_t key;
      int64_t ts;
      uint32_t index;  // into flows_
      uint32_t not_start;
      bool operator<(const Order& o) const {
        if (key != o.key) return key < o.key;
        if (ts != o.ts) return ts < o.ts;
        if (not_start != o.not_start) return not_start < o.not_start;
        return index < o.index;
      }
    };
    std::vector<Order> order(flows_.size());
    for (size_t i = 0; i < flows_.size(); ++i)
      order[i] = {flows_[i].key, flows_[i].ts, static_cast<uint32_t>(i), flows_[i].ph == 's' ? 0u : 1u};
    std::sort(order.begin(), order.end());
    uint64_t unresolved = 0;
    uint64_t flow_id = 0;
    for (size_t i = 0; i < order.size();) {
      size_t j = i;
      while (j < order.size() && order[j].key == order[i].key) ++j;
      if (j - i < 2) {  // a lone end (Kineto writes some for calls that launched nothing)
        ++unresolved;
        i = j;
        continue;
      }
      int32_t prev = model::kNone;
      ++flow_id;
      for (size_t k = i; k < j; ++k) {
        const PendingFlow& f = flows_[order[k].index];
        uint32_t track = FlowTrack(f);
        int32_t s = track == UINT32_MAX                      ? model::kNone
                    : f.ph == 'f' && !f.bind_enclosing ? NextSliceAt(track, f.ts)
                                                       : t_.SliceAt(track, f.ts);
        if (s == model::kNone) {
          ++unresolved;
          continue;
        }
        if (f.ph != 's') {
          int32_t row = prev == model::kNone ? model::kNone : t_.device_row_of_slice[static_cast<size_t>(s)];
          if (prev == model::kNone) ++unresolved;
          else if (f.launch && row != model::kNone && t_.device.launch[static_cast<size_t>(row)] == prev) {
            // A launch flow: the correlation link already says it.
          } else t_.flows.Add(flow_id, prev, s);
        }
        prev = s;
      }
      i = j;
    }
    if (unresolved)
      t_.warnings.push_back(fmt::format("{} flow events have no partner or no slice to bind to (not imported)", unresolved));
  }

  // Device-side flow ends sit on (device pid, stream tid); the rest on threads.
  uint32_t FlowTrack(const PendingFlow& f) const {
    if (f.numeric_pid) {
      auto dp = dev_procs_.find(f.pid);
      if (dp != dev_procs_.end()) {
        auto it = tracks_.find({dp->second, f.tid});
        if (it != tracks_.end()) return it->second;
      }
    }
    auto hp = host_procs_.find(f.pid);
    if (hp == host_procs_.end()) return UINT32_MAX;
    auto it = tracks_.find({hp->second, f.tid});
    return it == tracks_.end() ? UINT32_MAX : it->second;
  }

  int32_t NextSliceAt(uint32_t track, int64_t ts) const {
    if (track >= t_.track_slices.size()) return model::kNone;
    auto [first, last] = t_.track_slices[track];
    auto it = std::lower_bound(t_.slices.ts.begin() + first, t_.slices.ts.begin() + last, ts);
    if (it == t_.slices.ts.begin() + last) return model::kNone;
    return static_cast<int32_t>(it - t_.slices.ts.begin());
  }

  struct OpenBE {
    int64_t ts;
    std::string name, cat;
    size_t nargs;
  };
  struct SavedArg {
    std::string key, raw;
    bool container;
  };
  struct PairHash {
    size_t operator()(const std::pair<uint32_t, int64_t>& p) const {
      return std::hash<int64_t>{}(p.second) * 1000003u ^ p.first;
    }
  };
  struct PendingThreadName {
    int64_t pid, tid;
    StringId name;
  };

  model::Trace& t_;
  bool fast_path_;
  od::parser parser_;
  simdjson::dom::parser dom_;
  const char* limit_ = nullptr;
  Event ev_;
  std::string name_copy_;
  std::deque<std::string> escaped_args_;
  StringId k_external_id_;
  int64_t rank_ = -1;
  std::unordered_map<int64_t, uint32_t> host_procs_, dev_procs_;
  std::unordered_map<std::pair<uint32_t, int64_t>, uint32_t, PairHash> tracks_;
  std::pair<uint32_t, int64_t> last_track_key_{UINT32_MAX, 0};
  uint32_t last_track_ = 0;
  LaunchIndex launches_;
  std::unordered_map<uint64_t, uint32_t> series_;
  InternCache intern_{t_.strings};
  KeyCache keys_;
  std::map<int64_t, StringId> process_names_;
  std::vector<PendingThreadName> pending_thread_names_;
  std::unordered_map<uint32_t, std::vector<OpenBE>> open_;
  std::unordered_map<uint32_t, std::vector<SavedArg>> open_args_;
  std::vector<PendingFlow> flows_;
  std::map<std::string, uint64_t> counts_;
  std::map<std::string, uint64_t> skipped_reasons_;
  uint64_t skipped_ = 0;
};

StatusOr<model::Trace> Load(ByteSource& src, const std::string& path, const LoadOptions& opt) {
  model::Trace t;
  t.path = path;
  ProgressBar bar("importing " + path, opt.progress);
  JsonStreamOptions so;
  if (opt.json_window) so.window = opt.json_window;
  if (bar.active()) so.progress = [&bar](uint64_t done, uint64_t total) { bar.Update(done, total); };
  {
    Builder b(t, opt.json_fast_path);
    b.Reserve(src.total());
    Status st = StreamTraceEvents(src, b, so);
    if (!st.ok()) return st.WithContext(path);
    st = b.Finish();
    if (!st.ok()) return st.WithContext(path);
  }
  bar.Finish();
  return t;
}

}  // namespace
}  // namespace kineto

bool LooksLikeJsonTrace(std::string_view head) {
  size_t i = 0;
  if (head.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
  return i < head.size() && (head[i] == '{' || head[i] == '[');
}

StatusOr<model::Trace> LoadKinetoTrace(const std::string& path, const LoadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<kineto::ByteSource> src, kineto::OpenByteSource(path));
  return kineto::Load(*src, path, opt);
}

StatusOr<model::Trace> ParseKinetoTrace(std::string_view bytes, const LoadOptions& opt) {
  auto src = kineto::MemoryByteSource(bytes);
  return kineto::Load(*src, "<memory>", opt);
}

}  // namespace strata::importers

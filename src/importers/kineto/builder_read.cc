// Reading one event into Builder::ev_: the byte-level fast path for events
// as Kineto writes them, and simdjson On-Demand for everything else (see
// the fast path's comment below). builder.cc turns ev_ into rows.
#include <simdjson.h>

#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/error.h"
#include "importers/kineto/builder.h"
#include "importers/kineto/scalars.h"

namespace strata::importers::kineto {
namespace {

inline uint64_t Where(const char* doc, od::document& d, uint64_t offset) {
  const char* at = nullptr;
  if (!d.current_location().get(at) && at >= doc) return offset + static_cast<uint64_t>(at - doc) - 1;
  return offset;
}

// A pid or tid written as a string: "25738" is a number, anything else a name.
inline void IdFromString(std::string_view s, Id* id) {
  int64_t n;
  auto r = std::from_chars(s.data(), s.data() + s.size(), n);
  if (r.ec == std::errc() && r.ptr == s.data() + s.size()) {
    id->num = n;
  } else {
    id->is_str = true;
    id->str = s;
  }
}

inline simdjson::error_code ReadId(od::value& v, Id* id) {
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
inline C* SkipWs(C* p) {
  while (IsWs(*p)) ++p;
  return p;
}

// p at an opening quote -> one past the closing one; null at an escape, a
// control character or a byte >= 0x80 (UTF-8 is validated by simdjson).
inline const char* FastString(const char* p, const char* end) {
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

// (always_inline: FastEvent and FastArgs are inlined into FastEvents by force
// (builder.h), and in that larger function g++ no longer inlined this by
// itself, as it did when the importer was one file.)
[[gnu::always_inline]] inline bool IsNumberChar(char c) {
  return IsDigit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
}

// A number (its characters; the parsers judge it) or true/false/null -> one past it.
inline const char* FastScalar(const char* p) {
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
inline const char* FastContainer(const char* p, const char* end) {
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
inline const char* IntAt(const char* p, int64_t* v) {
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
inline const char* MicrosAt(const char* p, int64_t* ns, bool* fractional) {
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

inline bool FastValue(const char* p, const char* end, FastVal* v) {
  const char* e;
  if (*p == '"') e = FastString(p, end);
  else if (*p == '{' || *p == '[') e = FastContainer(p, end);
  else e = FastScalar(p);
  if (e == nullptr) return false;
  *v = {p, e, SkipWs(e)};
  return true;
}

[[gnu::noinline]] const char* FastIdSlow(const char* p, const char* end, Id* id);

// A pid or tid at p -> the byte after it and its whitespace. They are short
// integers: a digit loop inline, the rest out of line (the 8-digit SWAR
// parser's constants and registers cost more than such a number).
[[gnu::always_inline]] inline const char* FastId(const char* p, const char* end, Id* id) {
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

[[gnu::noinline]] const char* FastIdSlow(const char* p, const char* end, Id* id) {
  id->present = true;
  const char* e = IntAt(p, &id->num);
  if (e != nullptr) return SkipWs(e);
  FastVal v;
  if (!FastValue(p, end, &v)) return nullptr;
  if (v.IsString()) IdFromString(v.Content(), id);
  else if (!ParseInt(v.Token(), &id->num)) id->present = false;
  return v.next;
}

// After a member name's closing quote -> its value (past the ':' and the
// whitespace around it), or null. Kineto writes `"key": value`.
inline const char* ValueAfterKey(const char* ke) {
  if (ke[0] == ':' && ke[1] == ' ' && !IsWs(ke[2])) return ke + 2;
  ke = SkipWs(ke);
  if (*ke != ':') return nullptr;
  return SkipWs(ke + 1);
}

// At Kineto's separator between members, `, "`: the caller steps to the quote.
inline bool AtKinetoSeparator(const char* p) { return p[0] == ',' && p[1] == ' ' && p[2] == '"'; }

// A byte that stands for itself inside a JSON string: no quote, backslash,
// control character or non-ASCII byte (FastString's rule).
inline bool PlainChar(char c) {
  auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
}

}  // namespace

Status Builder::Batch(char* doc, size_t len, size_t capacity, uint64_t offset) {
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

const char* Builder::FastEvents(const char* p, const char* end, bool* at_event) {
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

Status Builder::SlowBatch(char* doc, size_t len, size_t capacity, uint64_t offset) {
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

Status Builder::JsonError(const char* doc, od::document& d, uint64_t offset, simdjson::error_code err) {
  return Err(StatusCode::kCorrupt, "invalid JSON in traceEvents near byte {}: {}", Where(doc, d, offset),
             simdjson::error_message(err));
}

// A string field's value; escaped strings are unescaped by simdjson.
simdjson::error_code Builder::ReadString(od::value& v, std::string_view* out, bool* escaped) {
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

void Builder::ResetEvent() {
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

// A string field's value at p (a container is not one: nullptr, simdjson's)
// -> the byte after it and its whitespace; `out` its content, or empty and
// bad_number when the value is a scalar that is not a string.
const char* Builder::FastStringField(const char* p, const char* end, bool container, std::string_view* out) {
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

// A "ts" or "dur" at p -> the byte after it and its whitespace.
const char* Builder::FastMicros(const char* p, const char* end, int64_t* ns, bool* has, bool* fractional) {
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

// p at '{' of an event -> one past its '}', ev_ filled as ReadEvent fills it.
// A key this importer reads is recognised by one 8-byte compare of its
// text and closing quote (no scan for the quote); any other key is scanned.
const char* Builder::FastEvent(const char* p, const char* end) {
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

// p at the '{' of "args" -> the first byte after its '}' that is not
// whitespace; ev_.args filled as ReadArgs fills it.
const char* Builder::FastArgs(const char* p, const char* end) {
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

simdjson::error_code Builder::ReadEvent(od::object& obj) {
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
std::string_view Builder::KeyBefore(const char* kp, const char* value) const {
  const char* q = value;
  while (q > kp && IsWs(q[-1])) --q;
  if (q > kp && q[-1] == ':') {
    --q;
    while (q > kp && IsWs(q[-1])) --q;
    if (q > kp && q[-1] == '"') return std::string_view(kp, static_cast<size_t>(q - 1 - kp));
  }
  return KeyOf(kp, limit_);
}

simdjson::error_code Builder::ReadArgs(od::value& v) {
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

}  // namespace strata::importers::kineto

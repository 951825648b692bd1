// Scalars from raw JSON tokens. simdjson hands us the token text; numbers are
// converted here so that microsecond timestamps become exact nanoseconds.
// (For the Kineto importer. The small helpers are inline: they run per field
// of every event. The token parsers' full paths are in scalars.cc.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace strata::importers::kineto {

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Times beyond +-2^61 ns (73 years; epoch microseconds reach it in 2043) are
// malformed: starts, ends and their differences must not overflow int64 downstream.
inline constexpr uint64_t kMaxMicros = (uint64_t{1} << 61) / 1000;

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
bool ParseMicros(std::string_view s, int64_t* ns, bool* fractional);
bool ParseInt(std::string_view s, int64_t* v);
bool ParseDouble(std::string_view s, double* v);

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

inline bool IsWs(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace strata::importers::kineto

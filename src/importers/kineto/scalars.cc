// The token parsers' full paths (exponents, numbers written as strings,
// floats); scalars.h has the fast cases inline.
#include "importers/kineto/scalars.h"

#include <charconv>
#include <cmath>

namespace strata::importers::kineto {

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

}  // namespace strata::importers::kineto

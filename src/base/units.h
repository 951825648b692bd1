// Numbers for people: how the text outputs (report, diff, findings, stderr
// summaries) write durations, sizes, counts and rates. The JSON outputs keep
// raw integers (ns, bytes) for programs; these are only for reading.
//
//   durations  850 ns, 12.34 µs, 4.56 ms, 1.234 s, 2 min 03.4 s, 1 h 02 min
//   sizes      512 B, 1.50 KiB, 409.80 MiB (powers of 1024, as free(1) -h and du -h)
//   counts     3, 2.5, 1234567 (whole numbers as integers, never 3.0 or 1.2e+06)
//   rates      1234 samples/s, 12.3 steps/s, 1.20 GiB/s
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace strata {

inline std::string HumanDuration(double ns) {
  double a = std::fabs(ns);
  if (!std::isfinite(ns)) return "-";
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return fmt::format("{:.2f} µs", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  if (a < 60e9) return fmt::format("{:.3f} s", ns / 1e9);
  const char* sign = ns < 0 ? "-" : "";
  double s = a / 1e9;
  if (s < 3600) {
    double min = std::floor(s / 60);
    return fmt::format("{}{:.0f} min {:04.1f} s", sign, min, s - 60 * min);
  }
  double h = std::floor(s / 3600);
  return fmt::format("{}{:.0f} h {:02.0f} min", sign, h, std::floor((s - 3600 * h) / 60));
}
inline std::string HumanDuration(int64_t ns) { return HumanDuration(static_cast<double>(ns)); }

inline std::string HumanBytes(double bytes) {
  if (!std::isfinite(bytes)) return "-";
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, kUnits[u]);
}

// A count, or a mean count ("per step"): whole numbers without a decimal point,
// others with one decimal; never an exponent.
inline std::string HumanCount(double n) {
  if (!std::isfinite(n)) return "-";
  if (std::fabs(n - std::round(n)) < 0.05 || std::fabs(n) >= 100) return fmt::format("{:.0f}", std::round(n));
  return fmt::format("{:.1f}", n);
}

// A value without a known unit (a user's counter): integers as integers, else
// four significant digits, never an exponent for ordinary magnitudes.
inline std::string HumanNumber(double v) {
  if (!std::isfinite(v)) return "-";
  double a = std::fabs(v);
  if (v == std::round(v) && a < 1e15) return fmt::format("{:.0f}", v);
  if (a >= 1e4) return fmt::format("{:.0f}", v);
  if (a >= 1e-3) {
    int digits = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : 3;
    std::string s = fmt::format("{:.{}f}", v, digits + (a < 1 ? 1 : 0));
    // 2.500 -> 2.5
    if (s.find('.') != std::string::npos) {
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
    }
    return s;
  }
  return fmt::format("{:.3g}", v);
}

// Per second: "1234 samples/s", "12.3 steps/s"; `unit` "bytes" gives "1.20 GiB/s".
inline std::string HumanRate(double per_s, const std::string& unit) {
  if (!std::isfinite(per_s)) return "-";
  if (unit == "bytes" || unit == "B") return HumanBytes(per_s) + "/s";
  std::string n = std::fabs(per_s) >= 100 ? fmt::format("{:.0f}", per_s) : fmt::format("{:.1f}", per_s);
  return n + " " + unit + "/s";
}

}  // namespace strata

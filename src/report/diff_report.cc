#include "report/diff_report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "report/section.h"

namespace strata::report {

using nlohmann::json;

namespace {

json Items(const std::vector<analysis::DiffItem>& v, size_t max_rows) {
  json a = json::array();
  for (size_t i = 0; i < v.size() && i < max_rows; ++i)
    a.push_back({{"name", v[i].name}, {"kind", v[i].kind}, {"a_ns", v[i].a_ns}, {"b_ns", v[i].b_ns},
                 {"delta_ns", v[i].delta_ns}, {"share_of_change", v[i].share_of_change}});
  return a;
}

// A duration computed in double (means, differences) as ns for FormatDuration:
// a double outside int64 (a trace's absurd times) converted to int64 is
// undefined behaviour, so it stops at the limits; NaN is 0.
int64_t Ns(double ns) {
  if (!(ns == ns)) return 0;
  if (ns >= 9.2233720368547748e18) return INT64_MAX;
  if (ns <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(ns);
}

std::string Signed(double ns) { return (ns >= 0 ? "+" : "-") + FormatDuration(Ns(std::round(std::fabs(ns)))); }

}  // namespace

json DiffToJson(const analysis::TraceDiff& d, size_t max_rows) {
  return {{"a", {{"steps", d.a_steps}, {"step_mean_ns", d.a_step_ns}}},
          {"b", {{"steps", d.b_steps}, {"step_mean_ns", d.b_step_ns}}},
          {"step_delta_ns", d.step_delta_ns},
          {"step_delta_pct", d.step_delta_pct},
          {"per", d.used_steps ? "step" : "trace"},
          {"top3_explained", d.top3_explained},
          {"top3_path_explained", d.top3_path_explained},
          {"top3_scopes_explained", d.top3_scopes_explained},
          {"critical_path", Items(d.critical_path, max_rows)},
          {"scopes", Items(d.scopes, max_rows)},
          {"self_time", Items(d.self_time, max_rows)}};
}

std::string DiffToText(const analysis::TraceDiff& d, const std::string& a, const std::string& b, size_t top) {
  std::string unit = d.used_steps ? "step" : "trace";
  std::string out = fmt::format("strata diff\n  A  {}  ({} {}s measured)\n  B  {}  ({} {}s measured)\n", a, d.a_steps, unit,
                                b, d.b_steps, unit);
  out += fmt::format("\nMean {} time: {} -> {}  ({}, {:+.1f}%)\n", unit,
                     FormatDuration(Ns(d.a_step_ns)), FormatDuration(Ns(d.b_step_ns)),
                     Signed(d.step_delta_ns), d.step_delta_pct);
  out += fmt::format("\nWhat changed on the critical path (per {}), ranked\n  {:<40} {:<8} {:>12} {:>12} {:>12} {:>8}\n", unit,
                     "name", "kind", "A", "B", "change", "of total");
  for (size_t i = 0; i < d.critical_path.size() && i < top; ++i) {
    const auto& it = d.critical_path[i];
    out += fmt::format("  {:<40} {:<8} {:>12} {:>12} {:>12} {:>7.1f}%\n", Truncate(it.name, 40), it.kind,
                       FormatDuration(Ns(it.a_ns)), FormatDuration(Ns(it.b_ns)),
                       Signed(it.delta_ns), 100.0 * it.share_of_change);
  }
  out += fmt::format("The top 3 items explain {:.0f}% of the change.\n", 100.0 * d.top3_path_explained);
  out += fmt::format("\nBy scope (path time inside a module or span rolled up into it), ranked\n");
  for (size_t i = 0; i < d.scopes.size() && i < std::min<size_t>(top, 10); ++i) {
    const auto& it = d.scopes[i];
    out += fmt::format("  {:<40} {:<8} {:>12} {:>12} {:>12} {:>7.1f}%\n", Truncate(it.name, 40), it.kind,
                       FormatDuration(Ns(it.a_ns)), FormatDuration(Ns(it.b_ns)),
                       Signed(it.delta_ns), 100.0 * it.share_of_change);
  }
  out += fmt::format("The top 3 scopes explain {:.0f}% of the change.\n", 100.0 * d.top3_scopes_explained);
  out += fmt::format("\nSelf time per {} (all threads and devices), largest changes\n", unit);
  for (size_t i = 0; i < d.self_time.size() && i < std::min<size_t>(top, 10); ++i) {
    const auto& it = d.self_time[i];
    out += fmt::format("  {:<40} {:<8} {:>12} {:>12} {:>12}\n", Truncate(it.name, 40), it.kind,
                       FormatDuration(Ns(it.a_ns)), FormatDuration(Ns(it.b_ns)),
                       Signed(it.delta_ns));
  }
  return out;
}

}  // namespace strata::report

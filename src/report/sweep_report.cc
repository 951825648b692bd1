#include "report/sweep_report.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "base/json_get.h"
#include "report/section.h"

namespace strata::report {

using nlohmann::json;

json SweepToJson(const analysis::SweepSummary& s) {
  json points = json::array();
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    json o = {{"value", p.value},
              {"steps", p.steps},
              {"step_p50_ns", p.step_p50_ns},
              {"step_p90_ns", p.step_p90_ns},
              {"samples_per_step", p.samples_per_step},
              {"throughput", p.throughput},
              {"gain_pct", i < s.gain_pct.size() ? s.gain_pct[i] : 0.0},
              {"exit_status", p.exit_status}};
    o["numeric"] = std::isnan(p.numeric) ? json(nullptr) : json(p.numeric);
    if (!p.error.empty()) o["error"] = p.error;
    points.push_back(o);
  }
  json j = {{"param", s.param}, {"throughput_unit", s.throughput_unit}, {"points", points}};
  j["best"] = s.best >= 0 ? json(s.points[static_cast<size_t>(s.best)].value) : json(nullptr);
  j["saturation"] = s.saturation >= 0 ? json(s.points[static_cast<size_t>(s.saturation)].value) : json(nullptr);
  return j;
}

namespace {

// A member of the type asked for, or nothing: json::value() throws when the file
// holds another type, and a float converted to an integer out of its range is
// undefined behaviour. A sweep.json is a file like any other.
using json_get::Int;
using json_get::Num;
using json_get::Str;

}  // namespace

bool SweepFromJson(const json& j, analysis::SweepSummary* s) {
  if (!j.is_object() || !j.contains("param") || !j.contains("points") || !j["points"].is_array()) return false;
  s->param = Str(j, "param");
  s->throughput_unit = Str(j, "throughput_unit");
  s->points.clear();
  for (const auto& o : j["points"]) {
    if (!o.is_object()) return false;
    analysis::SweepPoint p;
    p.value = Str(o, "value");
    p.numeric = o.contains("numeric") && o["numeric"].is_number() ? o["numeric"].get<double>() : NAN;
    p.steps = Int<uint64_t>(o, "steps");
    p.step_p50_ns = Int<int64_t>(o, "step_p50_ns");
    p.step_p90_ns = Int<int64_t>(o, "step_p90_ns");
    p.samples_per_step = Num(o, "samples_per_step");
    p.throughput = Num(o, "throughput");
    p.exit_status = Int<int>(o, "exit_status");
    p.error = Str(o, "error");
    s->points.push_back(std::move(p));
  }
  analysis::SummarizeSweep(s);
  return true;
}

std::string SweepToText(const analysis::SweepSummary& s) {
  std::string out = fmt::format("Sweep over {}\n  {:>12} {:>7} {:>12} {:>12} {:>14} {:>8}\n", s.param, s.param, "steps",
                                "step p50", "step p90", s.throughput_unit, "gain");
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    if (!p.error.empty()) {
      out += fmt::format("  {:>12} {}\n", p.value, p.error);
      continue;
    }
    std::string mark = static_cast<int>(i) == s.saturation ? "  <- saturates" : static_cast<int>(i) == s.best ? "  <- best" : "";
    out += fmt::format("  {:>12} {:>7} {:>12} {:>12} {:>14.2f} {:>7.1f}%{}\n", p.value, p.steps,
                       FormatDuration(p.step_p50_ns), FormatDuration(p.step_p90_ns), p.throughput,
                       i < s.gain_pct.size() ? s.gain_pct[i] : 0.0, mark);
  }
  if (s.saturation >= 0 && s.best >= 0) {
    const auto& sat = s.points[static_cast<size_t>(s.saturation)];
    const auto& best = s.points[static_cast<size_t>(s.best)];
    out += fmt::format("Throughput saturates at {}={} ({:.2f} {}, {:.0f}% of the best, {}={}); larger values add latency.\n",
                       s.param, sat.value, sat.throughput, s.throughput_unit,
                       best.throughput > 0 ? 100.0 * sat.throughput / best.throughput : 0.0, s.param, best.value);
  }
  return out;
}

}  // namespace strata::report

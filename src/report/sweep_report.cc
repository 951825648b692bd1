#include "report/sweep_report.h"

#include <fmt/format.h>

#include <cmath>

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

bool SweepFromJson(const json& j, analysis::SweepSummary* s) {
  if (!j.is_object() || !j.contains("param") || !j.contains("points") || !j["points"].is_array()) return false;
  s->param = j.value("param", "");
  s->throughput_unit = j.value("throughput_unit", "");
  s->points.clear();
  for (const auto& o : j["points"]) {
    if (!o.is_object()) return false;
    analysis::SweepPoint p;
    p.value = o.value("value", "");
    p.numeric = o.contains("numeric") && o["numeric"].is_number() ? o["numeric"].get<double>() : NAN;
    p.steps = o.value("steps", uint64_t{0});
    p.step_p50_ns = o.value("step_p50_ns", int64_t{0});
    p.step_p90_ns = o.value("step_p90_ns", int64_t{0});
    p.samples_per_step = o.value("samples_per_step", 0.0);
    p.throughput = o.value("throughput", 0.0);
    p.exit_status = o.value("exit_status", 0);
    p.error = o.value("error", "");
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

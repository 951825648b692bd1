// Report section: roofline of kernels, ops and steps (analysis/roofline.h).
#include <fmt/format.h>

#include "analysis/roofline.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

std::string Rate(double v) {
  if (v >= 1e12) return fmt::format("{:.2f} T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  return fmt::format("{:.0f} ", v);
}

class RooflineSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override {
    r_ = analysis::Roofline(t);
    // Framework ops without FLOP/byte estimates: say why there is no roofline.
    bool estimated = false;
    for (size_t i = 0; i < t.ops.size() && !estimated; ++i) estimated = t.ops.flops[i] >= 0 || t.ops.bytes[i] >= 0;
    if (r_.empty() && t.ops.size() > 0 && !estimated)
      skipped_ = "the ops carry no shapes, so no FLOP or byte estimates (record with --shapes, or --ops-steps A-B "
                 "for a few steps)";
  }

  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (r_.empty() && !skipped_.empty()) out += "Roofline: not computed: " + skipped_ + "\n";
    if (r_.empty()) return;
    const analysis::Roof* roof = r_.RoofOf(r_.primary);
    out += "Roofline";
    if (roof)
      out += fmt::format(" on {} ({} roof: {}FLOP/s, {}B/s, ridge {:.1f} FLOP/byte; peaks from {})", r_.device,
                         roof->name, Rate(roof->peak_flops), Rate(roof->bandwidth), roof->ridge(), r_.source);
    else
      out += " (no device peaks known: intensities only)";
    out += "\n";
    if (r_.kernel_time_ns > 0)
      out += fmt::format("  {:.0f}% of kernel time has FLOP/byte figures ({} kernels with hardware counters, the rest "
                         "estimated from their ops' shapes)\n",
                         100.0 * r_.kernel_time_covered, r_.kernels_measured);
    out += fmt::format("  {:<44} {:<6} {:>7} {:>10} {:>10} {:>9} {:>11} {:>6}  {}\n", "name", "level", "count", "time",
                       "FLOP/byte", "FLOP/s", "% of roof", "bound", "roof");
    auto row = [&](const analysis::RooflinePoint& p) {
      const analysis::Roof* pr = r_.RoofOf(p.roof);
      out += fmt::format("  {:<44} {:<6} {:>7} {:>10} {:>10.2f} {:>9} {:>10.1f}% {:>6}  {}\n", Truncate(p.name, 44),
                         analysis::RooflineLevelName(p.level), p.count, FormatDuration(p.time_ns), p.intensity,
                         Rate(p.flops_per_s), p.pct_of_roof, p.bound.empty() ? "-" : p.bound, pr ? pr->name : "-");
    };
    for (const auto& p : r_.steps) row(p);
    for (size_t i = 0; i < r_.ops.size() && i < opt.top / 2; ++i) row(r_.ops[i]);
    for (size_t i = 0; i < r_.kernels.size() && i < opt.top / 2; ++i) row(r_.kernels[i]);
  }

  void RenderJson(json& j, const ReportOptions& opt) const override {
    if (r_.empty() && !skipped_.empty()) j["roofline"] = {{"skipped", skipped_}};
    if (r_.empty()) return;
    const analysis::Roof* roof = r_.RoofOf(r_.primary);
    json points = json::array();
    auto add = [&](const analysis::RooflinePoint& p) {
      const analysis::Roof* pr = r_.RoofOf(p.roof);
      points.push_back({{"name", p.name},
                        {"level", analysis::RooflineLevelName(p.level)},
                        {"count", p.count},
                        {"flops", p.flops},
                        {"bytes", p.bytes},
                        {"time_ns", p.time_ns},
                        {"intensity", p.intensity},
                        {"flops_per_s", p.flops_per_s},
                        {"pct_of_roof", p.pct_of_roof},
                        {"bound", p.bound},
                        {"roof", pr ? pr->name : ""},
                        {"measured", p.measured}});
    };
    for (const auto& p : r_.steps) add(p);
    for (size_t i = 0; i < r_.ops.size() && i < opt.max_rows; ++i) add(r_.ops[i]);
    for (size_t i = 0; i < r_.kernels.size() && i < opt.max_rows; ++i) add(r_.kernels[i]);
    if (r_.ops.size() > opt.max_rows) j["detail"]["omitted_rows"]["roofline.ops"] = r_.ops.size() - opt.max_rows;
    if (r_.kernels.size() > opt.max_rows) j["detail"]["omitted_rows"]["roofline.kernels"] = r_.kernels.size() - opt.max_rows;
    json roofs = json::array();
    for (const auto& x : r_.roofs)
      roofs.push_back({{"name", x.name}, {"peak_flops", x.peak_flops}, {"bandwidth_bytes_per_s", x.bandwidth}});
    j["roofline"] = {{"device", r_.device},
                     {"peak_flops", roof ? roof->peak_flops : 0.0},
                     {"bandwidth_bytes_per_s", roof ? roof->bandwidth : 0.0},
                     {"ridge", roof ? roof->ridge() : 0.0},
                     {"roof", roof ? roof->name : ""},
                     {"source", r_.source},
                     {"kernel_time_covered", r_.kernel_time_covered},
                     {"points", points},
                     {"roofs", roofs}};
  }

 private:
  analysis::RooflineResult r_;
  std::string skipped_;
};

}  // namespace

std::unique_ptr<Section> MakeRooflineSection() { return std::make_unique<RooflineSection>(); }

}  // namespace strata::report

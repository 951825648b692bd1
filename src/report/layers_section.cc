// Report section: per-layer tables (analysis/layers.h): PyTorch modules and
// TensorFlow/Keras name scopes with their time, host vs device time, memory,
// FLOPs, bytes and roofline bound. Columns that would be empty are left out.
#include <fmt/format.h>

#include "analysis/layers.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

constexpr const char* kNoCost =
    "the ops carry no shapes, so no FLOP or byte estimates (record with --shapes, or --ops-steps A-B for a few steps)";

std::string Flops(double v) {
  if (v >= 1e12) return fmt::format("{:.2f} T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.2f} k", v / 1e3);
  return fmt::format("{:.0f} ", v);
}

class LayersSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { s_ = analysis::Layers(t); }

  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (s_.empty()) return;
    bool torch = false, tf = false;
    for (const auto& l : s_.layers) (l.framework == analysis::LayerFramework::kPyTorch ? torch : tf) = true;
    out += "Layers (";
    if (torch) out += "PyTorch modules, inclusive: a module's row holds its submodules; depth 0 is a model";
    if (torch && tf) out += "; ";
    if (tf) out += "TensorFlow name scopes: occurrences are the steps a layer ran in, time the union of its ops";
    out += fmt::format("; % of {} time)\n", s_.step_basis == "steps" ? "step" : "trace");

    out += fmt::format("  {:<44} {:>7} {:>7} {:>10} {:>10} {:>7}", "layer", "depth", "calls", "total", "mean", "% step");
    if (s_.has_ops) out += fmt::format(" {:>10}", "CPU ops");
    if (s_.has_device) out += fmt::format(" {:>10}", "device");
    if (s_.has_backward) out += fmt::format(" {:>10}", "backward");
    if (s_.has_memory) out += fmt::format(" {:>10} {:>10}", "allocated", "peak");
    if (s_.has_cost) out += fmt::format(" {:>9} {:>9} {:>10} {:>7}", "FLOPs", "bytes", "FLOP/byte", "bound");
    out += "\n";
    for (size_t i = 0; i < s_.layers.size() && i < opt.top; ++i) {
      const analysis::LayerStats& l = s_.layers[i];
      std::string depth = fmt::format("{}{}", l.depth, l.leaf && l.framework == analysis::LayerFramework::kPyTorch ? " leaf" : "");
      out += fmt::format("  {:<44} {:>7} {:>7} {:>10} {:>10} {:>6.1f}%", Truncate(l.name, 44), depth, l.occurrences,
                         FormatDuration(l.total_ns), FormatDuration(l.mean_ns), l.step_pct);
      if (s_.has_ops) out += fmt::format(" {:>10}", FormatDuration(l.cpu_ns));
      if (s_.has_device) out += fmt::format(" {:>10}", FormatDuration(l.device_ns));
      if (s_.has_backward) out += fmt::format(" {:>10}", FormatDuration(l.backward_ns));
      if (s_.has_memory) out += fmt::format(" {:>10} {:>10}", FormatBytes(static_cast<double>(l.alloc_bytes)),
                                            FormatBytes(static_cast<double>(l.peak_bytes)));
      if (s_.has_cost) {
        if (l.estimated == 0)
          out += fmt::format(" {:>9} {:>9} {:>10} {:>7}", "-", "-", "-", "-");
        else
          out += fmt::format(" {:>9} {:>9} {:>10.2f} {:>7}", Flops(l.flops), FormatBytes(l.bytes), l.intensity,
                             l.bound.empty() ? "-" : l.bound);
      }
      out += "\n";
    }
    if (s_.layers.size() > opt.top) out += fmt::format("  ... {} more layers\n", s_.layers.size() - opt.top);
    out += fmt::format("  in layers (each slice once): {}", FormatDuration(s_.total_ns));
    if (s_.has_ops) out += fmt::format(", CPU ops {}", FormatDuration(s_.cpu_ns));
    if (s_.has_device) out += fmt::format(", device {}", FormatDuration(s_.device_ns));
    if (s_.has_memory) out += fmt::format(", allocated {}", FormatBytes(static_cast<double>(s_.alloc_bytes)));
    if (s_.has_cost) out += fmt::format(", {}FLOP over {}", Flops(s_.flops), FormatBytes(s_.bytes));
    out += "\n";
    if (s_.ops_without_cost) out += std::string("  FLOPs and bytes: not estimated: ") + kNoCost + "\n";
    if (!s_.has_ops) out += "  CPU time per layer: no framework ops recorded inside the layers (record with --ops)\n";
  }

  void RenderJson(json& j, const ReportOptions& opt) const override {
    if (s_.empty()) return;
    json rows = JsonRows(j, "layers.layers", s_.layers.size(), opt, [&](size_t i) {
      const analysis::LayerStats& l = s_.layers[i];
      const analysis::Roof* roof = s_.RoofOf(l.roof);
      return json{{"name", l.name},
                  {"framework", analysis::LayerFrameworkName(l.framework)},
                  {"depth", l.depth},
                  {"leaf", l.leaf},
                  {"occurrences", l.occurrences},
                  {"total_ns", l.total_ns},
                  {"mean_ns", l.mean_ns},
                  {"max_ns", l.max_ns},
                  {"self_ns", l.self_ns},
                  {"backward_ns", l.backward_ns},
                  {"step_pct", l.step_pct},
                  {"cpu_ns", l.cpu_ns},
                  {"ops", l.ops},
                  {"device_ns", l.device_ns},
                  {"kernels", l.kernels},
                  {"alloc_bytes", l.alloc_bytes},
                  {"allocs", l.allocs},
                  {"peak_bytes", l.peak_bytes},
                  {"flops", l.flops},
                  {"bytes", l.bytes},
                  {"estimated_ops", l.estimated},
                  {"intensity", l.intensity},
                  {"bound", l.bound},
                  {"roof", roof ? roof->name : ""}};
    });
    json o = {{"step_basis", s_.step_basis},
              {"step_ns", s_.step_ns},
              {"device", s_.device},
              {"total_ns", s_.total_ns},
              {"cpu_ns", s_.cpu_ns},
              {"device_ns", s_.device_ns},
              {"alloc_bytes", s_.alloc_bytes},
              {"flops", s_.flops},
              {"bytes", s_.bytes},
              {"has_device", s_.has_device},
              {"has_memory", s_.has_memory},
              {"has_cost", s_.has_cost},
              {"layers", rows}};
    if (s_.ops_without_cost) o["cost_skipped"] = kNoCost;
    j["layers"] = std::move(o);
  }

 private:
  analysis::LayersSummary s_;
};

}  // namespace

std::unique_ptr<Section> MakeLayersSection() { return std::make_unique<LayersSection>(); }

}  // namespace strata::report

// The accelerator section: the devices the collectors described, and each
// device's activity (busy/idle, counts). Kernels, transfers, launches and the
// GPU time breakdown come from the device-activity sections (gpu_sections.cc),
// which serve every source.
#include <fmt/format.h>

#include <map>

#include "analysis/device.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

std::string Bandwidth(double bps) { return bps > 0 ? fmt::format("{:.2f} GB/s", bps / 1e9) : "-"; }

std::string Percent(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

class AcceleratorSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override {
    devices_ = t.devices;
    for (const model::Device& d : devices_) process_of_[&d - devices_.data()] = analysis::ProcessLabel(t, d.process);
    usage_ = analysis::DeviceUsages(t);
  }

  void RenderText(std::string& out, const ReportOptions&) const override {
    if (devices_.empty() && usage_.empty()) return;
    out += "Accelerators\n";
    for (size_t i = 0; i < devices_.size(); ++i) {
      const model::Device& d = devices_[i];
      out += fmt::format("  device {:<4} {:<7} {}  [{}]\n", d.id, d.api, d.name, process_of_.at(i));
      std::string facts;
      auto add = [&facts](const std::string& s) { facts += (facts.empty() ? "" : ", ") + s; };
      if (!d.vendor.empty()) add(d.vendor);
      if (d.compute_units) add(fmt::format("{} compute units", d.compute_units));
      if (d.clock_khz) add(fmt::format("{:.2f} GHz", d.clock_khz / 1e6));
      if (d.memory_bytes) add(FormatBytes(static_cast<double>(d.memory_bytes)));
      if (d.memory_bandwidth > 0) add(Bandwidth(d.memory_bandwidth) + " memory");
      if (d.peak_flops_f32 > 0) add(fmt::format("{:.1f} TFLOP/s fp32", d.peak_flops_f32 / 1e12));
      if (d.peak_flops_f64 > 0) add(fmt::format("{:.1f} TFLOP/s fp64", d.peak_flops_f64 / 1e12));
      if (d.peak_flops_f16 > 0) add(fmt::format("{:.1f} TFLOP/s fp16", d.peak_flops_f16 / 1e12));
      if (!facts.empty()) out += fmt::format("              {}\n", facts);
      if (!d.properties.empty()) out += fmt::format("              {}\n", Truncate(d.properties, 110));
    }
    if (!usage_.empty()) {
      out += "\nDevice activity             active window         busy         idle    busy%   kernels  copies   fills\n";
      for (const auto& u : usage_)
        out += fmt::format("  {:<24} {:>14} {:>12} {:>12} {:>8} {:>9} {:>7} {:>7}\n", fmt::format("device {}", u.device),
                           FormatDuration(u.last_ns - u.first_ns), FormatDuration(u.busy_ns), FormatDuration(u.idle_ns),
                           Percent(u.busy_ns, u.last_ns - u.first_ns), u.kernels, u.copies, u.fills);
    }
  }

  void RenderJson(json& j, const ReportOptions&) const override {
    json devs = json::array();
    for (size_t i = 0; i < devices_.size(); ++i) {
      const model::Device& d = devices_[i];
      devs.push_back({{"id", d.id},
                      {"process", process_of_.at(i)},
                      {"api", d.api},
                      {"name", d.name},
                      {"vendor", d.vendor},
                      {"compute_units", d.compute_units},
                      {"clock_khz", d.clock_khz},
                      {"memory_bytes", d.memory_bytes},
                      {"memory_bandwidth", d.memory_bandwidth},
                      {"peak_flops_f64", d.peak_flops_f64},
                      {"peak_flops_f32", d.peak_flops_f32},
                      {"peak_flops_f16", d.peak_flops_f16},
                      {"properties", d.properties}});
    }
    json usage = json::array();
    for (const auto& u : usage_)
      usage.push_back({{"device", u.device},     {"label", u.label},         {"first_ns", u.first_ns},
                       {"last_ns", u.last_ns},   {"busy_ns", u.busy_ns},     {"idle_ns", u.idle_ns},
                       {"kernels", u.kernels},   {"copies", u.copies},       {"fills", u.fills},
                       {"other", u.other},       {"kernel_ns", u.kernel_ns}, {"copy_ns", u.copy_ns},
                       {"fill_ns", u.fill_ns}});
    j["accelerators"] = {{"devices", devs}, {"device_activity", usage}};
  }

 private:
  std::vector<model::Device> devices_;
  std::map<size_t, std::string> process_of_;
  std::vector<analysis::DeviceUsage> usage_;
};

}  // namespace

std::unique_ptr<Section> MakeAcceleratorSection() { return std::make_unique<AcceleratorSection>(); }

}  // namespace strata::report

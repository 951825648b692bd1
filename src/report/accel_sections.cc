// The accelerator section: devices found, per-device busy/idle time and top
// kernels, transfers with bandwidth, and API-call launch latency.
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
    kernels_ = analysis::KernelsByTime(t);
    transfers_ = analysis::Transfers(t);
    latency_ = analysis::LaunchLatencies(t);
    for (const auto& u : usage_) labels_[u.device] = u.label;
  }

  void RenderText(std::string& out, const ReportOptions& opt) const override {
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
    int32_t dev = INT32_MIN;
    size_t shown = 0;
    for (const auto& k : kernels_) {
      if (k.device != dev) {
        dev = k.device;
        shown = 0;
        out += fmt::format("\nTop kernels on {:<40}  count        total         mean          max\n",
                           Truncate(Label(dev), 40));
      }
      if (shown++ == opt.top) out += "  ...\n";
      if (shown > opt.top) continue;
      out += fmt::format("  {:<54} {:>6} {:>12} {:>12} {:>12}\n", Truncate(k.name, 54), k.count,
                         FormatDuration(k.total_ns), FormatDuration(static_cast<int64_t>(k.mean_ns)),
                         FormatDuration(k.max_ns));
    }
    if (!transfers_.empty()) {
      out += "\nTransfers                              count        bytes         time      bandwidth  pinned pageable\n";
      for (const auto& x : transfers_)
        out += fmt::format("  {:<30} {:<5} {:>6} {:>12} {:>12} {:>14} {:>7} {:>8}\n", fmt::format("device {}", x.device),
                           model::CopyKindName(x.kind), x.count, FormatBytes(static_cast<double>(x.bytes)),
                           FormatDuration(x.total_ns), Bandwidth(x.bandwidth), x.pinned, x.pageable);
    }
    if (!latency_.empty()) {
      out += "\nLaunch latency (device start - API call start)   count         mean          p50          p90          max\n";
      size_t n = 0;
      for (const auto& l : latency_) {
        if (n++ == opt.top) break;
        const auto& d = l.latency;
        out += fmt::format("  {:<44} {:>8} {:>12} {:>12} {:>12} {:>12}\n", Truncate(l.api, 44), d.count,
                           FormatDuration(static_cast<int64_t>(d.mean)), FormatDuration(d.p50), FormatDuration(d.p90),
                           FormatDuration(d.max));
      }
    }
  }

  void RenderJson(json& j, const ReportOptions& opt) const override {
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
    json kernels = json::array();
    for (const auto& k : kernels_) {
      if (kernels.size() >= opt.max_rows) break;
      kernels.push_back({{"device", k.device},     {"name", k.name},       {"count", k.count},
                         {"total_ns", k.total_ns}, {"mean_ns", k.mean_ns}, {"min_ns", k.min_ns},
                         {"max_ns", k.max_ns}});
    }
    json transfers = json::array();
    for (const auto& x : transfers_)
      transfers.push_back({{"device", x.device},       {"kind", model::CopyKindName(x.kind)},
                           {"count", x.count},         {"bytes", x.bytes},
                           {"total_ns", x.total_ns},   {"bandwidth_bytes_per_s", x.bandwidth},
                           {"pinned", x.pinned},       {"pageable", x.pageable}});
    json latency = json::array();
    auto dist = [](const analysis::Distribution& d) {
      return json{{"count", d.count}, {"mean", d.mean}, {"min", d.min}, {"p50", d.p50},
                  {"p90", d.p90},     {"p99", d.p99},   {"max", d.max}};
    };
    for (const auto& l : latency_)
      latency.push_back({{"api", l.api}, {"latency_ns", dist(l.latency)}, {"call_ns", dist(l.call)}});
    j["accelerators"] = {{"devices", devs},
                         {"device_activity", usage},
                         {"kernels", kernels},
                         {"transfers", transfers},
                         {"launch_latency", latency}};
  }

 private:
  std::string Label(int32_t device) const {
    auto it = labels_.find(device);
    return it == labels_.end() ? "device " + std::to_string(device) : it->second;
  }

  std::vector<model::Device> devices_;
  std::map<size_t, std::string> process_of_;
  std::map<int32_t, std::string> labels_;
  std::vector<analysis::DeviceUsage> usage_;
  std::vector<analysis::KernelStats> kernels_;
  std::vector<analysis::TransferStats> transfers_;
  std::vector<analysis::LaunchLatency> latency_;
};

}  // namespace

std::unique_ptr<Section> MakeAcceleratorSection() { return std::make_unique<AcceleratorSection>(); }

}  // namespace strata::report

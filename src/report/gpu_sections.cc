// Device activity sections, for any source that fills the model's device
// tables (PyTorch profiler, strata's CUDA and OpenCL collectors):
//   gpu        per device: busy/idle, compute/communication/memory breakdown,
//              idle split, kernel-type overlap, queue length and bandwidth
//              counters; then the top kernels, their duration histogram and
//              the kernels grouped by the op that launched them
//   launches   per launch API: CPU time of the call and the delay to the device
//   transfers  bytes and bandwidth by direction and host memory kind
//   ops        framework ops with CPU (total, self) and GPU time
#include <fmt/format.h>

#include <algorithm>

#include "analysis/gpu.h"
#include "analysis/kernels.h"
#include "analysis/ops.h"
#include "analysis/transfers.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

json DistJson(const analysis::Distribution& d) {
  return {{"count", d.count}, {"mean_ns", d.mean}, {"min_ns", d.min}, {"p50_ns", d.p50},
          {"p90_ns", d.p90},  {"p99_ns", d.p99},   {"max_ns", d.max}};
}

double Round2(double v) { return std::round(v * 100) / 100; }

class GpuSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions& opt) override {
    hta_ = opt.analysis.hta_compat;
    ws_ = analysis::CollectGpuWork(t, opt.analysis);
    for (const auto& g : ws_.groups) {
      Device d;
      d.group = &g;
      d.time = analysis::TemporalBreakdown(g);
      d.idle = analysis::IdleTimeBreakdown(g, opt.analysis);
      d.types = analysis::KernelTypeTable(g);
      for (const auto& s : analysis::QueueLengthSeries(t, g, opt.analysis)) d.queue.push_back(analysis::Summarize(s, false));
      for (const auto& s : analysis::MemoryBandwidthSeries(t, g, opt.analysis))
        d.bandwidth.push_back(analysis::Summarize(s, true));
      devices_.push_back(std::move(d));
    }
    kernels_ = analysis::Kernels(t, ws_);
    by_op_ = analysis::KernelsByOp(t, ws_);
  }

  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (devices_.empty()) return;
    out += fmt::format("GPU time{}\n", hta_ ? " (HTA-compatible: whole microseconds, last step dropped)" : "");
    out += fmt::format("  {:<16} {:>12} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8}   idle: {:>9} {:>11} {:>7}\n", "device", "span",
                       "busy", "compute", "comm", "memory", "other", "idle", "host wait", "kernel wait", "other");
    for (const auto& d : devices_) {
      const auto& b = d.time;
      out += fmt::format("  {:<16} {:>12} {:>12} {:>7.2f}% {:>7.2f}% {:>7.2f}% {:>7.2f}% {:>7.2f}%         {:>8.2f}% {:>10.2f}% {:>6.2f}%\n",
                         Truncate(d.group->label, 16), FormatDuration(b.span_ns), FormatDuration(b.busy_ns),
                         b.Pct(b.compute_ns), b.Pct(b.communication_ns), b.Pct(b.memory_ns), b.Pct(b.other_ns),
                         b.Pct(b.idle_ns), d.idle.Pct(d.idle.host_wait_ns), d.idle.Pct(d.idle.kernel_wait_ns),
                         d.idle.Pct(d.idle.other_ns));
    }
    if (!kernels_.rows.empty()) {
      out += fmt::format("\nTop kernels by total time ({} kernels, GPU work {})\n  {:<56} {:>8} {:>12} {:>7} {:>11} {:>11}\n",
                         kernels_.kernels, FormatDuration(kernels_.gpu_time_ns), "name", "count", "total", "% GPU",
                         "mean", "max");
      for (size_t i = 0; i < kernels_.rows.size() && i < opt.top; ++i) {
        const auto& k = kernels_.rows[i];
        out += fmt::format("  {:<56} {:>8} {:>12} {:>6.2f}% {:>11} {:>11}\n", Truncate(k.name, 56), k.count,
                           FormatDuration(k.total_ns), k.pct_gpu_time,
                           FormatDuration(static_cast<int64_t>(k.duration.mean)), FormatDuration(k.duration.max));
      }
      out += "  kernel durations:";
      static const char* kLabels[] = {"<1us", "<10us", "<100us", "<1ms", "<10ms", ">=10ms"};
      for (size_t i = 0; i < kernels_.histogram.size(); ++i)
        out += fmt::format(" {} {}", kLabels[i], kernels_.histogram[i].count);
      out += "\n";
    }
    if (!by_op_.empty()) {
      out += fmt::format("\nKernels by launching op\n  {:<36} {:<44} {:>8} {:>12}\n", "op", "kernel", "count", "total");
      for (size_t i = 0; i < by_op_.size() && i < opt.top; ++i) {
        const auto& r = by_op_[i];
        out += fmt::format("  {:<36} {:<44} {:>8} {:>12}\n", Truncate(r.op, 36), Truncate(r.kernel, 44), r.count,
                           FormatDuration(r.total_ns));
      }
    }
  }

  void RenderJson(json& j, const ReportOptions& opt) const override {
    json devs = json::array();
    for (const auto& d : devices_) {
      const auto& b = d.time;
      json streams = json::array();
      for (const auto& s : d.idle.streams)
        streams.push_back({{"stream", s.stream},
                           {"kernels", s.kernels},
                           {"host_wait_ns", s.host_wait_ns},
                           {"kernel_wait_ns", s.kernel_wait_ns},
                           {"other_ns", s.other_ns}});
      json types = json::array();
      for (const auto& st : d.types) types.push_back({{"state", st.label}, {"ns", st.ns}});
      auto summaries = [](const std::vector<analysis::SeriesSummary>& v, const char* key) {
        json a = json::array();
        for (const auto& s : v)
          a.push_back({{key, s.key}, {"count", s.count}, {"mean", s.mean}, {"min", s.min}, {"p50", s.p50}, {"max", s.max}});
        return a;
      };
      devs.push_back({
          {"label", d.group->label},
          {"rank", d.group->rank},
          {"device", d.group->device == model::kNone ? json(nullptr) : json(d.group->device)},
          {"events", d.group->work.size()},
          {"valid", b.valid},
          {"span_ns", b.span_ns},
          {"busy_ns", b.busy_ns},
          {"idle_ns", b.idle_ns},
          {"breakdown_ns",
           {{"compute", b.compute_ns}, {"communication", b.communication_ns}, {"memory", b.memory_ns},
            {"other", b.other_ns}, {"idle", b.idle_ns}}},
          {"breakdown_pct",
           {{"compute", Round2(b.Pct(b.compute_ns))},
            {"communication", Round2(b.Pct(b.communication_ns))},
            {"memory", Round2(b.Pct(b.memory_ns))},
            {"other", Round2(b.Pct(b.other_ns))},
            {"idle", Round2(b.Pct(b.idle_ns))},
            {"non_compute", Round2(b.Pct(b.non_compute_ns()))}}},
          {"idle_breakdown_ns",
           {{"host_wait", d.idle.host_wait_ns}, {"kernel_wait", d.idle.kernel_wait_ns}, {"other", d.idle.other_ns}}},
          {"idle_breakdown_pct",
           {{"host_wait", Round2(d.idle.Pct(d.idle.host_wait_ns))},
            {"kernel_wait", Round2(d.idle.Pct(d.idle.kernel_wait_ns))},
            {"other", Round2(d.idle.Pct(d.idle.other_ns))}}},
          {"streams", streams},
          {"kernel_types", types},
          {"queue_length", summaries(d.queue, "stream")},
          {"memory_bandwidth_gbps", summaries(d.bandwidth, "kind")},
      });
    }
    j["gpu"] = {{"mode", hta_ ? "hta" : "strata"},
                {"devices", devs},
                {"last_step_dropped", ws_.last_step_dropped},
                {"kernel_wait_threshold_ns", opt.analysis.kernel_wait_threshold_ns}};
    json ks = JsonRows(j, "kernels", kernels_.rows.size(), opt, [&](size_t i) {
      const auto& k = kernels_.rows[i];
      return json{{"name", k.name},
                    {"type", analysis::WorkTypeName(k.type)},
                    {"count", k.count},
                    {"total_ns", k.total_ns},
                    {"pct_gpu_time", k.pct_gpu_time},
                    {"mean_ns", k.duration.mean},
                    {"p50_ns", k.duration.p50},
                    {"p90_ns", k.duration.p90},
                    {"min_ns", k.duration.min},
                    {"max_ns", k.duration.max}};
    });
    j["kernels"] = ks;
    json hist = json::array();
    for (const auto& h : kernels_.histogram)
      hist.push_back({{"below_ns", h.upper_ns == INT64_MAX ? json(nullptr) : json(h.upper_ns)},
                      {"count", h.count},
                      {"total_ns", h.total_ns}});
    j["kernel_summary"] = {{"gpu_time_ns", kernels_.gpu_time_ns},
                           {"kernels", kernels_.kernels},
                           {"duration", DistJson(kernels_.duration)},
                           {"histogram", hist}};
    j["kernels_by_op"] = JsonRows(j, "kernels_by_op", by_op_.size(), opt, [&](size_t i) {
      return json{{"op", by_op_[i].op}, {"kernel", by_op_[i].kernel}, {"count", by_op_[i].count},
                  {"total_ns", by_op_[i].total_ns}};
    });
  }

 private:
  struct Device {
    const analysis::GpuGroup* group = nullptr;
    analysis::TimeBreakdown time;
    analysis::IdleBreakdown idle;
    std::vector<analysis::OverlapState> types;
    std::vector<analysis::SeriesSummary> queue, bandwidth;
  };
  bool hta_ = false;
  analysis::GpuWorkSet ws_;
  std::vector<Device> devices_;
  analysis::KernelSummary kernels_;
  std::vector<analysis::OpKernelRow> by_op_;
};

class LaunchesSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions& opt) override { l_ = analysis::Launches(t, opt.analysis); }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (l_.launches == 0) return;
    out += fmt::format(
        "Kernel launches: {}   CPU per call p50 {} p90 {}   launch->start delay p50 {} p90 {}\n"
        "  short kernels (shorter than their launch) {}   slow calls (>{}) {}   late starts (>{}) {}   no launch in trace {}\n",
        l_.launches, FormatDuration(l_.cpu_ns.p50), FormatDuration(l_.cpu_ns.p90), FormatDuration(l_.delay_ns.p50),
        FormatDuration(l_.delay_ns.p90), l_.short_kernels, FormatDuration(opt.analysis.launch_cpu_cutoff_ns),
        l_.slow_launches, FormatDuration(opt.analysis.launch_delay_cutoff_ns), l_.late_starts, l_.unlinked);
    out += fmt::format("  {:<32} {:>9} {:>11} {:>11} {:>11} {:>11}\n", "API", "launches", "CPU p50", "CPU p90", "delay p50",
                       "delay p90");
    for (size_t i = 0; i < l_.by_api.size() && i < opt.top; ++i) {
      const auto& a = l_.by_api[i];
      out += fmt::format("  {:<32} {:>9} {:>11} {:>11} {:>11} {:>11}\n", Truncate(a.name, 32), a.launches,
                         FormatDuration(a.cpu_ns.p50), FormatDuration(a.cpu_ns.p90), FormatDuration(a.delay_ns.p50),
                         FormatDuration(a.delay_ns.p90));
    }
  }
  void RenderJson(json& j, const ReportOptions& opt) const override {
    json apis = json::array();
    for (const auto& a : l_.by_api)
      apis.push_back({{"name", a.name}, {"launches", a.launches}, {"cpu_ns", DistJson(a.cpu_ns)},
                      {"delay_ns", DistJson(a.delay_ns)}, {"start_ns", DistJson(a.start_ns)}});
    j["launches"] = {{"count", l_.launches},
                     {"unlinked", l_.unlinked},
                     {"short_kernels", l_.short_kernels},
                     {"slow_launches", l_.slow_launches},
                     {"late_starts", l_.late_starts},
                     {"cpu_cutoff_ns", opt.analysis.launch_cpu_cutoff_ns},
                     {"delay_cutoff_ns", opt.analysis.launch_delay_cutoff_ns},
                     {"cpu_ns", DistJson(l_.cpu_ns)},
                     {"delay_ns", DistJson(l_.delay_ns)},
                     {"by_api", apis}};
  }

 private:
  analysis::LaunchStats l_;
};

class TransfersSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { x_ = analysis::Transfers(t); }
  void RenderText(std::string& out, const ReportOptions&) const override {
    if (x_.count == 0) return;
    out += fmt::format("Transfers: {}   {}   busy {}\n  {:<7} {:<9} {:<9} {:>8} {:>12} {:>12} {:>10} {:>10}\n", x_.count,
                       FormatBytes(static_cast<double>(x_.bytes)), FormatDuration(x_.busy_ns), "kind", "direction",
                       "host mem", "count", "bytes", "busy", "GB/s", "max GB/s");
    for (const auto& r : x_.rows)
      out += fmt::format("  {:<7} {:<9} {:<9} {:>8} {:>12} {:>12} {:>10.2f} {:>10.2f}\n", r.kind, r.direction, r.host_memory,
                         r.count, FormatBytes(static_cast<double>(r.bytes)), FormatDuration(r.busy_ns), r.gbps, r.max_gbps);
  }
  void RenderJson(json& j, const ReportOptions&) const override {
    json rows = json::array();
    for (const auto& r : x_.rows)
      rows.push_back({{"kind", r.kind}, {"direction", r.direction}, {"host_memory", r.host_memory}, {"count", r.count},
                      {"bytes", r.bytes}, {"busy_ns", r.busy_ns}, {"gbps", r.gbps}, {"max_gbps", r.max_gbps}});
    j["transfers"] = {{"count", x_.count}, {"bytes", x_.bytes}, {"busy_ns", x_.busy_ns}, {"by_kind", rows}};
  }

 private:
  analysis::TransferSummary x_;
};

class OpsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions& opt) override { ops_ = analysis::Ops(t, opt.analysis); }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    // Without device work this would be "Framework ops" again with two columns
    // of zeros: the text leaves it out (the JSON keeps the rows).
    if (ops_.empty() || std::none_of(ops_.begin(), ops_.end(), [](const auto& o) { return o.gpu_ns > 0; })) return;
    out += fmt::format("Ops by total CPU time (GPU: device work launched by the op and the ops it called)\n"
                       "  {:<44} {:>8} {:>12} {:>12} {:>12} {:>12}\n",
                       "name", "count", "CPU total", "CPU self", "GPU", "GPU self");
    for (size_t i = 0; i < ops_.size() && i < opt.top; ++i) {
      const auto& o = ops_[i];
      out += fmt::format("  {:<44} {:>8} {:>12} {:>12} {:>12} {:>12}\n", Truncate(o.name, 44), o.count,
                         FormatDuration(o.total_ns), FormatDuration(o.self_ns), FormatDuration(o.gpu_ns),
                         FormatDuration(o.gpu_self_ns));
    }
  }
  void RenderJson(json& j, const ReportOptions& opt) const override {
    j["ops"] = JsonRows(j, "ops", ops_.size(), opt, [&](size_t i) {
      const auto& o = ops_[i];
      return json{{"name", o.name},     {"count", o.count},   {"total_ns", o.total_ns},       {"self_ns", o.self_ns},
                  {"max_ns", o.max_ns}, {"gpu_ns", o.gpu_ns}, {"gpu_self_ns", o.gpu_self_ns}, {"kernels", o.kernels}};
    });
  }

 private:
  std::vector<analysis::OpStats> ops_;
};

}  // namespace

std::unique_ptr<Section> MakeGpuSection() { return std::make_unique<GpuSection>(); }
std::unique_ptr<Section> MakeLaunchesSection() { return std::make_unique<LaunchesSection>(); }
std::unique_ptr<Section> MakeOpsSection() { return std::make_unique<OpsSection>(); }
std::unique_ptr<Section> MakeTransfersSection() { return std::make_unique<TransfersSection>(); }

}  // namespace strata::report

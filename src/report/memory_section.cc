// The "Memory" section: per (process, device) the allocated level over time,
// the peak and what was live at it, the allocator's reserved bytes and churn per
// step. JSON key "memory" (framework.memory keeps its per-op table).
#include <fmt/format.h>

#include <algorithm>

#include "analysis/memory.h"
#include "base/units.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;


std::string DeviceName(const analysis::DeviceMemory& d) {
  std::string name = d.device == model::kNone ? "host" : fmt::format("gpu{}", d.device);
  if (d.layer == model::MemoryLayer::kRuntime)
    name += d.shadowed ? " runtime allocations (what the framework's allocator reserved, and module statics)"
                       : " runtime allocations";
  return name;
}

json Stat(const analysis::PerStepStat& s) { return {{"mean", s.mean}, {"max", s.max}}; }

class MemorySection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { s_ = analysis::Memory(t); }

  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (s_.devices.empty()) return;
    out += "Memory (allocator events)\n";
    for (const auto& d : s_.devices) {
      out += fmt::format("  {} {}: peak {}", d.process_label, DeviceName(d), FormatBytes(static_cast<double>(d.peak_bytes)));
      if (d.peak_step >= 0) out += fmt::format(" in step {}", d.peak_step);
      if (d.reserved_at_peak > 0)
        out += fmt::format(", reserved {} (fragmentation {:.1f}%)", FormatBytes(static_cast<double>(d.reserved_at_peak)),
                           100 * d.fragmentation);
      out += fmt::format("; {} allocations, {} allocated in all{}\n", d.allocs, FormatBytes(static_cast<double>(d.bytes_allocated)),
                         d.allocator_totals ? "" : " (levels summed from the events: no allocator totals)");
      const auto& c = d.churn;
      if (c.steps > 0) {
        out += fmt::format("    per step ({} steps, mean / max): {} / {} allocations, {} / {} frees, {} / {} allocated, "
                           "{} / {} freed\n",
                           c.steps, HumanCount(c.allocs.mean), c.allocs.max, HumanCount(c.frees.mean), c.frees.max,
                           FormatBytes(c.bytes_allocated.mean),
                           FormatBytes(static_cast<double>(c.bytes_allocated.max)), FormatBytes(c.bytes_freed.mean),
                           FormatBytes(static_cast<double>(c.bytes_freed.max)));
        if (d.addresses)
          out += fmt::format("    temporaries (freed in the step that allocated them): {} per step, {} per step; "
                             "{} ({}) freed inside the op that made them\n",
                             HumanCount(c.temporaries.mean), FormatBytes(c.temporary_bytes.mean), HumanCount(c.op_temporaries.mean),
                             FormatBytes(c.op_temporary_bytes.mean));
      }
      if (!d.addresses) {
        out += "    live at the peak: unknown (the events carry no addresses)\n";
        continue;
      }
      out += fmt::format("    live at the peak{}\n      {:<52} {:>12} {:>8}\n",
                         d.peak_step >= 0 ? fmt::format(" (step {})", d.peak_step) : "", "allocated by", "bytes", "blocks");
      for (size_t i = 0; i < d.live_at_peak.size() && i < std::min<size_t>(opt.top, 10); ++i) {
        const auto& g = d.live_at_peak[i];
        out += fmt::format("      {:<52} {:>12} {:>8}\n", Truncate(g.name, 52), FormatBytes(static_cast<double>(g.bytes)),
                           g.count ? std::to_string(g.count) : "-");
      }
    }
  }

  void RenderJson(json& root, const ReportOptions& opt) const override {
    if (s_.devices.empty()) return;
    json devs = json::array();
    for (const auto& d : s_.devices) {
      json tl = json::array();
      for (const auto& p : analysis::DownsampleTimeline(d.timeline, kSeriesPoints)) tl.push_back({p.ts, p.bytes});
      json live = JsonRows(root, "memory.live_at_peak", d.live_at_peak.size(), opt, [&](size_t i) {
        return json{{"name", d.live_at_peak[i].name}, {"bytes", d.live_at_peak[i].bytes}, {"count", d.live_at_peak[i].count}};
      });
      const auto& c = d.churn;
      json churn = {{"steps", c.steps},
                    {"allocs_per_step", Stat(c.allocs)},
                    {"frees_per_step", Stat(c.frees)},
                    {"bytes_allocated_per_step", Stat(c.bytes_allocated)},
                    {"bytes_freed_per_step", Stat(c.bytes_freed)},
                    {"temporaries_per_step", Stat(c.temporaries)},
                    {"temporary_bytes_per_step", Stat(c.temporary_bytes)},
                    {"op_temporaries_per_step", Stat(c.op_temporaries)},
                    {"op_temporary_bytes_per_step", Stat(c.op_temporary_bytes)}};
      devs.push_back({{"device", d.device == model::kNone ? "host" : std::to_string(d.device)},
                      {"layer", model::MemoryLayerName(d.layer)},
                      {"process", d.process_label},
                      {"peak_bytes", d.peak_bytes},
                      {"peak_ts_ns", d.peak_ts},
                      {"peak_step", d.peak_step >= 0 ? json(d.peak_step) : json(nullptr)},
                      {"reserved_at_peak", d.reserved_at_peak > 0 ? json(d.reserved_at_peak) : json(nullptr)},
                      {"fragmentation", d.fragmentation >= 0 ? json(d.fragmentation) : json(nullptr)},
                      {"allocator_totals", d.allocator_totals},
                      {"addresses", d.addresses},
                      {"allocs", d.allocs},
                      {"frees", d.frees},
                      {"bytes_allocated", d.bytes_allocated},
                      {"bytes_freed", d.bytes_freed},
                      {"timeline", tl},
                      {"live_at_peak", live},
                      {"churn", churn}});
    }
    root["memory"] = {{"devices", devs}};
  }

 private:
  analysis::MemorySummary s_;
};

}  // namespace

std::unique_ptr<Section> MakeMemorySection() { return std::make_unique<MemorySection>(); }

}  // namespace strata::report

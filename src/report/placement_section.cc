// Report section: functions placed on several devices (analysis/placement.h).
#include <fmt/format.h>

#include "analysis/placement.h"
#include "base/units.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

class PlacementSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { r_ = analysis::Placement(t); }

  void RenderText(std::string& out, const ReportOptions& opt) const override {
    for (const auto& r : r_) {
      out += fmt::format("Placement of {} over {} devices\n", r.function, r.devices.size());
      for (const auto& d : r.devices)
        out += fmt::format("  {:<12} {:>6} nodes{}\n", d.name, d.nodes,
                           r.calls_measured > 0 ? fmt::format("   ops {} per call", HumanDuration(d.op_ns)) : "");
      out += fmt::format("  {} tensors cross devices (Send/Recv pairs)", r.cross_tensors);
      if (r.calls_measured == 0) {
        out += "; their time is not measured (record with --ops-steps A-B)\n";
      } else {
        out += fmt::format(": {} per call in Sends and the waits after them ({:.0f}% of a {} call; {} profiled calls)\n",
                           HumanDuration(r.cross_ns), 100 * r.cross_ns / std::max(1.0, r.call_ns),
                           HumanDuration(r.call_ns), r.calls_measured);
        out += fmt::format("    {:<36} {:<7} {:<36} {:<7} {:>9} {:>10} {:>10}\n", "from", "on", "to", "on", "bytes",
                           "send", "wait");
        for (size_t i = 0; i < r.edges.size() && i < opt.top / 2; ++i) {
          const auto& e = r.edges[i];
          out += fmt::format("    {:<36} {:<7} {:<36} {:<7} {:>9} {:>10} {:>10}\n", Truncate(e.from, 36), e.src_device,
                             Truncate(e.to, 36), e.dst_device, e.bytes >= 0 ? HumanBytes(static_cast<double>(e.bytes)) : "-",
                             HumanDuration(e.send_ns), HumanDuration(e.wait_ns));
        }
        std::string path;
        for (size_t i = 0; i < r.critical_path.size() && i < 5; ++i) path += (i ? ", " : "") + r.critical_path[i];
        out += fmt::format("  critical path through the graph: {} replayed per call (measured {}); longest nodes on it: "
                           "{}\n",
                           HumanDuration(r.path_ns), HumanDuration(r.call_ns), path);
      }
      if (!r.moves.empty()) {
        out += fmt::format("  proposed placement: {} layers move, {} crossings instead of {}", r.moves.size(),
                           r.cross_tensors_after, r.cross_tensors);
        if (r.calls_measured > 0) out += fmt::format(", replayed call {}", HumanDuration(r.path_after_ns));
        out += "\n";
        std::string moves;
        for (size_t i = 0; i < r.moves.size() && i < opt.top; ++i)
          moves += fmt::format("{}{} {}->{}", i ? ", " : "", r.moves[i].layer, r.moves[i].from_device, r.moves[i].to_device);
        if (r.moves.size() > opt.top) moves += fmt::format(", ... ({} more)", r.moves.size() - opt.top);
        out += "    " + moves + "\n";
      }
    }
  }

  void RenderJson(json& j, const ReportOptions& opt) const override {
    if (r_.empty()) return;
    json all = json::array();
    for (const auto& r : r_) {
      json devices = json::array(), edges = json::array(), moves = json::array();
      for (const auto& d : r.devices) devices.push_back({{"name", d.name}, {"nodes", d.nodes}, {"op_ns_per_call", d.op_ns}});
      for (size_t i = 0; i < r.edges.size() && i < opt.max_rows; ++i) {
        const auto& e = r.edges[i];
        edges.push_back({{"from", e.from}, {"to", e.to}, {"src_device", e.src_device}, {"dst_device", e.dst_device},
                         {"bytes", e.bytes}, {"sends_per_call", e.sends}, {"send_ns_per_call", e.send_ns},
                         {"wait_ns_per_call", e.wait_ns}});
      }
      for (const auto& m : r.moves)
        moves.push_back({{"layer", m.layer}, {"from", m.from_device}, {"to", m.to_device}, {"nodes", m.nodes}});
      all.push_back({{"function", r.function},
                     {"devices", devices},
                     {"cross_tensors", r.cross_tensors},
                     {"calls_measured", r.calls_measured},
                     {"call_ns", r.call_ns},
                     {"cross_ns_per_call", r.cross_ns},
                     {"local_delay_ns", r.local_delay_ns},
                     {"edges", edges},
                     {"replayed_call_ns", r.path_ns},
                     {"critical_path", r.critical_path},
                     {"moves", moves},
                     {"cross_tensors_after", r.cross_tensors_after},
                     {"replayed_call_after_ns", r.path_after_ns}});
    }
    j["placement"] = all;
  }

 private:
  std::vector<analysis::PlacementResult> r_;
};

}  // namespace

std::unique_ptr<Section> MakePlacementSection() { return std::make_unique<PlacementSection>(); }

}  // namespace strata::report

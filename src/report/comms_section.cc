// Report section: ranks and their communication (analysis/comms.h).
#include <fmt/format.h>

#include "analysis/comms.h"
#include "base/units.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

std::string PerStep(int64_t ns, size_t steps) {
  return steps ? HumanDuration(static_cast<double>(ns) / static_cast<double>(steps)) : "-";
}

std::string Bandwidth(int64_t bytes, int64_t ns) {
  if (ns <= 0) return "-";
  return HumanBytes(static_cast<double>(bytes) * 1e9 / static_cast<double>(ns)) + "/s";
}

}  // namespace

void CommsText(const analysis::CommsSummary& s, const ReportOptions& opt, std::string& out) {
  if (s.empty()) return;
  out += fmt::format("Ranks: {}   collectives {} ({} on every rank, {} on some; {} begun in another order on some "
                     "ranks)\n",
                     s.ranks.size(), s.instances, s.matched, s.partial, s.mismatched);
  if (s.matched_by == "time")
    out += fmt::format("  matched by time: the ranks' n-th collectives of a name were never all inside at once in {} "
                       "of {} cases (traces of different subsets of the job's collectives, as sampled ones are)\n",
                       s.apart, s.checked);
  out += fmt::format("  {:<24} {:>6} {:>10} {:>7} {:>10} {:>11} {:>11} {:>9} {:>11}\n", "rank", "steps", "step p50",
                     "colls", "bytes", "in flight", "waited", "last", "late");
  out += fmt::format("  {:<24} {:>6} {:>10} {:>7} {:>10} {:>11} {:>11} {:>9} {:>11}\n", "", "", "", "", "",
                     "per step", "per step", "arrivals", "per step");
  for (size_t k = 0; k < s.ranks.size(); ++k) {
    const auto& r = s.ranks[k];
    out += fmt::format("  {:<24} {:>6} {:>10} {:>7} {:>10} {:>11} {:>11} {:>9} {:>11}{}\n", Truncate(r.label, 24),
                       r.steps, HumanDuration(static_cast<double>(r.step_p50)), r.collectives,
                       HumanBytes(static_cast<double>(r.bytes)), PerStep(r.in_flight_ns, r.steps),
                       PerStep(r.waited_ns, r.steps), r.last_arrivals, PerStep(r.late_ns, r.steps),
                       static_cast<int>(k) == s.straggler ? "  <- straggler" : "");
  }
  if (s.straggler >= 0) {
    const auto& w = s.ranks[static_cast<size_t>(s.straggler)];
    out += fmt::format("  straggler: {} (last at {:.0f}% of the collectives; the others wait {} per step for it)",
                       w.label, 100 * s.late_share, HumanDuration(static_cast<double>(s.late_per_step_ns)));
    if (!s.phase.empty())
      out += fmt::format("; phase: {} (+{} per step against the other ranks' median)", s.phase,
                         HumanDuration(static_cast<double>(s.phase_excess_ns)));
    out += "\n";
  }
  out += "  where each rank's step goes (per step; 'comm wait': off CPU while a collective of its is in flight):\n";
  std::string head = fmt::format("    {:<22}", "rank");
  for (size_t p = 0; p < analysis::kStepParts; ++p)
    head += fmt::format(" {:>10}", analysis::StepPartName(static_cast<analysis::StepPart>(p)));
  out += head + fmt::format(" {:>10}\n", "comm wait");
  for (const auto& r : s.ranks) {
    if (r.counted_steps == 0) continue;
    std::string line = fmt::format("    {:<22}", Truncate(r.label, 22));
    for (size_t p = 0; p < analysis::kStepParts; ++p)
      line += fmt::format(" {:>10}", HumanDuration(static_cast<double>(r.parts[p])));
    out += line + fmt::format(" {:>10}\n", HumanDuration(static_cast<double>(r.comm_wait)));
  }
  out += fmt::format("  {:<28} {:>7} {:>10} {:>11} {:>11} {:>11} {:>11}\n", "collective", "count", "bytes", "mean",
                     "skew p50", "skew max", "bandwidth");
  for (size_t i = 0; i < s.kinds.size() && i < opt.top; ++i) {
    const auto& k = s.kinds[i];
    double mean = k.count ? static_cast<double>(k.total_ns) / static_cast<double>(k.count) : 0;
    out += fmt::format("  {:<28} {:>7} {:>10} {:>11} {:>11} {:>11} {:>11}\n", Truncate(k.name, 28), k.count,
                       HumanBytes(static_cast<double>(k.bytes)), HumanDuration(mean),
                       HumanDuration(static_cast<double>(k.skew_p50)), HumanDuration(static_cast<double>(k.skew_max)),
                       Bandwidth(k.bytes, k.total_ns));
  }
  out += "  bandwidth by message size:";
  for (const auto& b : s.sizes)
    out += fmt::format("  <{} {} ({})", HumanBytes(static_cast<double>(b.max_bytes)), Bandwidth(b.bytes, b.ns), b.count);
  out += "\n";
}

json CommsJson(const analysis::CommsSummary& s, const ReportOptions& opt) {
  if (s.empty()) return nullptr;
  json ranks = json::array(), kinds = json::array(), sizes = json::array();
  for (const auto& r : s.ranks) {
    json parts = json::object();
    for (size_t p = 0; p < analysis::kStepParts; ++p)
      parts[analysis::StepPartName(static_cast<analysis::StepPart>(p))] = r.parts[p];
    parts["comm_wait"] = r.comm_wait;
    ranks.push_back({{"rank", r.rank},
                     {"label", r.label},
                     {"steps", r.steps},
                     {"step_p50_ns", r.step_p50},
                     {"collectives", r.collectives},
                     {"bytes", r.bytes},
                     {"in_flight_ns", r.in_flight_ns},
                     {"waited_ns", r.waited_ns},
                     {"last_arrivals", r.last_arrivals},
                     {"late_ns", r.late_ns},
                     {"counted_steps", r.counted_steps},
                     {"parts_ns_per_step", parts}});
  }
  for (size_t i = 0; i < s.kinds.size() && i < opt.max_rows; ++i) {
    const auto& k = s.kinds[i];
    kinds.push_back({{"name", k.name}, {"count", k.count}, {"bytes", k.bytes}, {"total_ns", k.total_ns},
                     {"skew_p50_ns", k.skew_p50}, {"skew_max_ns", k.skew_max}});
  }
  for (const auto& b : s.sizes)
    sizes.push_back({{"min_bytes", b.min_bytes}, {"max_bytes", b.max_bytes}, {"count", b.count}, {"bytes", b.bytes},
                     {"ns", b.ns}});
  json straggler = nullptr;
  if (s.straggler >= 0) {
    const auto& w = s.ranks[static_cast<size_t>(s.straggler)];
    straggler = {{"rank", w.rank},
                 {"label", w.label},
                 {"phase", s.phase},
                 {"phase_excess_ns", s.phase_excess_ns},
                 {"late_ns_per_step", s.late_per_step_ns},
                 {"last_arrival_share", s.late_share}};
  }
  return {{"ranks", ranks},
          {"collectives", kinds},
          {"sizes", sizes},
          {"instances", s.instances},
          {"matched", s.matched},
          {"partial", s.partial},
          {"mismatched", s.mismatched},
          {"matched_by", s.matched_by},
          {"straggler", straggler}};
}

namespace {

class CommsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { s_ = analysis::AnalyzeComms(t); }
  void RenderText(std::string& out, const ReportOptions& opt) const override { CommsText(s_, opt, out); }
  void RenderJson(json& j, const ReportOptions& opt) const override {
    if (!s_.empty()) j["ranks"] = CommsJson(s_, opt);
  }

 private:
  analysis::CommsSummary s_;
};

}  // namespace

std::unique_ptr<Section> MakeCommsSection() { return std::make_unique<CommsSection>(); }

}  // namespace strata::report

// Report section: findings (analysis/findings.h), most important first.
#include <fmt/format.h>

#include "analysis/findings.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

}  // namespace

void FindingsText(const std::vector<analysis::Finding>& findings, const ReportOptions& opt, std::string& out) {
  if (findings.empty()) {
    out += "Findings: none (no rule found a cause worth 2% of the step)\n";
    return;
  }
  out += "Findings (most important first)\n";
  for (size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    out += fmt::format("  {}. [{}] {}  (est. gain {:.1f}% of step time)\n", i + 1, f.category, f.title,
                       f.estimated_gain_pct);
    out += "     evidence: " + f.evidence + "\n";
    if (!f.involved.empty()) {
      std::string inv;
      for (size_t k = 0; k < f.involved.size() && k < 6; ++k) inv += (k ? ", " : "") + Truncate(f.involved[k], 48);
      out += "     involved: " + inv + "\n";
    }
    for (size_t k = 0; k < f.where.size() && k < 4; ++k) out += (k ? "            " : "     where: ") + f.where[k] + "\n";
    out += "     suggestion: " + f.suggestion + "\n";
    if (opt.what_if && !f.what_if.empty())
      out += fmt::format("     what-if: {}; step {} -> {}\n", f.what_if, FormatDuration(f.step_ns),
                         FormatDuration(f.step_after_ns));
    else if (opt.what_if)
      out += fmt::format("     what-if: a share of the measured step (no replayed change); step {} -> {}\n",
                         FormatDuration(f.step_ns), FormatDuration(f.step_after_ns));
  }
}

json FindingsJson(const std::vector<analysis::Finding>& findings) {
  json a = json::array();
  for (const auto& f : findings) {
    json metrics = json::object();
    for (const auto& [k, v] : f.metrics) metrics[k] = v;
    json evidence = {{"summary", f.evidence}, {"metrics", metrics}, {"involved", f.involved}};
    if (!f.where.empty()) evidence["where"] = f.where;  // the program's call sites, when recorded
    a.push_back({{"category", f.category},
                 {"title", f.title},
                 {"evidence", evidence},
                 {"estimated_gain_pct", f.estimated_gain_pct},
                 {"what_if", {{"change", f.what_if}, {"step_ns", f.step_ns}, {"step_after_ns", f.step_after_ns}}},
                 {"suggestion", f.suggestion}});
  }
  return a;
}

namespace {

class FindingsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions& opt) override {
    analysis::DiagnosisOptions d;
    d.analysis = opt.analysis;
    findings_ = analysis::Diagnose(t, d);
  }
  void RenderText(std::string& out, const ReportOptions& opt) const override { FindingsText(findings_, opt, out); }
  void RenderJson(json& j, const ReportOptions&) const override { j["findings"] = FindingsJson(findings_); }

 private:
  std::vector<analysis::Finding> findings_;
};

}  // namespace

std::unique_ptr<Section> MakeFindingsSection() { return std::make_unique<FindingsSection>(); }

}  // namespace strata::report

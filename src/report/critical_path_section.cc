// Report section: what set the steps' length (analysis/critical_path.h).
#include <fmt/format.h>

#include "analysis/critical_path.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

class CriticalPathSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override {
    paths_ = analysis::CriticalPaths(t);
    items_ = analysis::AggregatePathItems(paths_);
    for (const auto& p : paths_) {
      for (const auto& s : p.slack) {
        auto it = std::find_if(slack_.begin(), slack_.end(),
                               [&](const analysis::SlackItem& x) { return x.kind == s.kind && x.name == s.name; });
        if (it == slack_.end()) slack_.push_back(s);
        else it->slack_ns = std::min(it->slack_ns, s.slack_ns);
      }
    }
    std::sort(slack_.begin(), slack_.end(), [](const auto& a, const auto& b) { return a.slack_ns < b.slack_ns; });
  }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (paths_.empty()) return;
    out += fmt::format("Critical path ({} step{} analysed): mean time per step on the path\n  {:<40} {:<8} {:>12} {:>7}\n",
                       paths_.size(), paths_.size() == 1 ? "" : "s", "name", "kind", "on path", "share");
    for (size_t i = 0; i < items_.size() && i < opt.top; ++i) {
      const auto& it = items_[i];
      out += fmt::format("  {:<40} {:<8} {:>12} {:>6.1f}%\n", Truncate(it.name, 40), it.kind,
                         FormatDuration(it.on_path_ns), 100.0 * it.share);
    }
    if (!slack_.empty()) {
      out += "  Off the path (slack before it would lengthen the step):\n";
      for (size_t i = 0; i < slack_.size() && i < 5; ++i)
        out += fmt::format("    {:<38} {:<8} slack {}\n", Truncate(slack_[i].name, 38), slack_[i].kind,
                           FormatDuration(slack_[i].slack_ns));
    }
  }
  void RenderJson(json& j, const ReportOptions& opt) const override {
    json items = json::array();
    for (size_t i = 0; i < items_.size() && i < opt.max_rows; ++i)
      items.push_back({{"name", items_[i].name}, {"kind", items_[i].kind}, {"on_path_ns", items_[i].on_path_ns},
                       {"share", items_[i].share}});
    json steps = json::array();
    for (const auto& p : paths_) {
      json segs = json::array();
      for (const auto& s : p.segments)
        segs.push_back({{"start_ns", s.start}, {"end_ns", s.end}, {"track", s.track}, {"slice", s.slice},
                        {"type", analysis::SegmentTypeName(s.type)}});
      steps.push_back({{"step", p.step}, {"start_ns", p.start}, {"end_ns", p.end}, {"segments", segs}});
    }
    json slack = json::array();
    for (const auto& s : slack_)
      slack.push_back({{"name", s.name}, {"kind", s.kind}, {"slack_ns", s.slack_ns}, {"duration_ns", s.duration_ns}});
    j["critical_path"] = {{"items", items}, {"steps", steps}, {"slack", slack}};
  }

 private:
  std::vector<analysis::StepCriticalPath> paths_;
  std::vector<analysis::PathItem> items_;
  std::vector<analysis::SlackItem> slack_;
};

}  // namespace

std::unique_ptr<Section> MakeCriticalPathSection() { return std::make_unique<CriticalPathSection>(); }

}  // namespace strata::report

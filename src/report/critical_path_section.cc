// Report section: what set the steps' length (analysis/critical_path.h).
//
// Each analysed step's path has one segment per piece of work or wait on it:
// thousands per step of a framework program (52 MB of JSON for a 30 s
// Transformer run). The summary gives the items aggregated over the steps, the
// statistics of the analysed steps and, for the slowest of them, their top
// items; --full adds every segment.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/critical_path.h"
#include "analysis/summary.h"
#include "base/units.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

class CriticalPathSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override {
    analysis::CriticalPathOptions cpo;
    max_steps_ = cpo.max_steps;
    for (size_t i = 0; i < t.slices.size(); ++i) steps_total_ += t.slices.kind[i] == model::SliceKind::kStep;
    paths_ = analysis::CriticalPaths(t, cpo);
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

  // Which steps were analysed, and why not all of them.
  std::string Selection() const {
    if (steps_total_ == 0) return "no steps recorded: the whole trace as one window, on the thread with the most slices";
    if (paths_.size() >= steps_total_) return fmt::format("all {} steps", steps_total_);
    double every = static_cast<double>(steps_total_) / static_cast<double>(paths_.size());
    return fmt::format("{} of {} steps analysed, one in {:.1f} from step {} to step {}: the analysis walks each "
                       "step's dependencies, so it is bounded to {} steps, evenly spread",
                       paths_.size(), steps_total_, every, paths_.front().step, paths_.back().step, max_steps_);
  }

  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (paths_.empty()) return;
    if (steps_total_ == 0)
      out += "Critical path (no steps recorded: the whole trace as one window): time on the path\n";
    else if (paths_.size() >= steps_total_)
      out += fmt::format("Critical path ({} step{} analysed): mean time per step on the path\n", paths_.size(),
                         paths_.size() == 1 ? "" : "s");
    else
      out += fmt::format("Critical path ({}): mean time per step on the path\n", Selection());
    out += fmt::format("  {:<40} {:<8} {:>12} {:>7}\n", "name", "kind", "on path", "share");
    for (size_t i = 0; i < items_.size() && i < opt.top; ++i) {
      const auto& it = items_[i];
      out += fmt::format("  {:<40} {:<8} {:>12} {:>6.1f}%\n", Truncate(it.name, 40), it.kind,
                         FormatDuration(it.on_path_ns), 100.0 * it.share);
    }
    if (items_.size() > opt.top) out += fmt::format("  ... {} more\n", items_.size() - opt.top);
    if (!slack_.empty()) {
      out += "  Off the path (slack before it would lengthen the step):\n";
      for (size_t i = 0; i < slack_.size() && i < 5; ++i)
        out += fmt::format("    {:<38} {:<8} slack {}\n", Truncate(slack_[i].name, 38), slack_[i].kind,
                           FormatDuration(slack_[i].slack_ns));
    }
  }

  void RenderJson(json& j, const ReportOptions& opt) const override {
    json items = JsonRows(j, "critical_path.items", items_.size(), opt, [&](size_t i) {
      return json{{"name", items_[i].name}, {"kind", items_[i].kind}, {"on_path_ns", items_[i].on_path_ns},
                  {"share", items_[i].share}};
    });
    json slack = JsonRows(j, "critical_path.slack", slack_.size(), opt, [&](size_t i) {
      const auto& s = slack_[i];
      return json{{"name", s.name}, {"kind", s.kind}, {"slack_ns", s.slack_ns}, {"duration_ns", s.duration_ns}};
    });
    std::vector<int64_t> durations;
    json analysed = json::array();
    for (const auto& p : paths_) {
      durations.push_back(p.end - p.start);
      analysed.push_back(p.step);
    }
    analysis::Distribution d = analysis::Distribute(durations);
    // The slowest analysed steps first in the summary; every step in time order with --full.
    std::vector<size_t> order(paths_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (!opt.full)
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return paths_[a].end - paths_[a].start > paths_[b].end - paths_[b].start;
      });
    json steps = JsonRows(j, "critical_path.steps", order.size(), opt, [&](size_t k) {
      const auto& p = paths_[order[k]];
      json s = {{"step", p.step}, {"start_ns", p.start}, {"end_ns", p.end}, {"duration_ns", p.end - p.start},
                {"segment_count", p.segments.size()}};
      json top = json::array();
      for (size_t i = 0; i < p.items.size() && i < 5; ++i)
        top.push_back({{"name", p.items[i].name}, {"kind", p.items[i].kind}, {"on_path_ns", p.items[i].on_path_ns},
                       {"share", p.items[i].share}});
      s["top_items"] = top;
      if (opt.full) {
        json segs = json::array();
        for (const auto& g : p.segments)
          segs.push_back({{"start_ns", g.start}, {"end_ns", g.end}, {"track", g.track}, {"slice", g.slice},
                          {"type", analysis::SegmentTypeName(g.type)}});
        s["segments"] = segs;
      }
      return s;
    });
    j["critical_path"] = {{"steps_total", steps_total_},
                          {"steps_analysed", paths_.size()},
                          {"max_steps", max_steps_},
                          {"selection", paths_.empty() ? "" : Selection()},
                          {"analysed_steps", analysed},
                          {"step_duration_ns",
                           {{"count", d.count}, {"min", d.min}, {"p50", d.p50}, {"p90", d.p90}, {"max", d.max}}},
                          {"items", items},
                          {"steps", steps},
                          {"slack", slack}};
  }

 private:
  size_t steps_total_ = 0;
  size_t max_steps_ = 0;
  std::vector<analysis::StepCriticalPath> paths_;
  std::vector<analysis::PathItem> items_;
  std::vector<analysis::SlackItem> slack_;
};

}  // namespace

std::unique_ptr<Section> MakeCriticalPathSection() { return std::make_unique<CriticalPathSection>(); }

}  // namespace strata::report

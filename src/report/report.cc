#include "report/report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <mutex>

#include "analysis/memo.h"
#include "base/parallel.h"
#include "base/units.h"

namespace strata::report {

std::vector<std::unique_ptr<Section>> MakeSections() {
  std::vector<std::unique_ptr<Section>> s;
  s.push_back(MakeOverviewSection());
  s.push_back(MakeFindingsSection());
  s.push_back(MakeStepsSection());
  s.push_back(MakeTrainingSection());
  s.push_back(MakeCommsSection());
  s.push_back(MakeFrameworkOpsSection());
  s.push_back(MakeFrameworkMemorySection());
  s.push_back(MakeMemorySection());
  s.push_back(MakeDataflowSection());
  s.push_back(MakePlacementSection());
  s.push_back(MakeGpuSection());
  s.push_back(MakeLaunchesSection());
  s.push_back(MakeTransfersSection());
  s.push_back(MakeOpsSection());
  s.push_back(MakeSpansSection());
  s.push_back(MakeAcceleratorSection());
  s.push_back(MakeCriticalPathSection());
  s.push_back(MakeRooflineSection());
  s.push_back(MakeLayersSection());
  s.push_back(MakeOsSection());
  s.push_back(MakeCountersSection());
  s.push_back(MakeCollectorsSection());
  s.push_back(MakeWarningsSection());
  s.push_back(MakeCountsSection());
  s.push_back(MakeStreamsSection());
  return s;
}

Report::Report(const model::Trace& t, const ReportOptions& opt, const std::function<void(size_t, size_t)>& progress)
    : opt_(opt), sections_(MakeSections()) {
  opt_.max_rows = opt_.full ? SIZE_MAX : std::max<size_t>(1, opt_.top);
  analysis::Memo memo(t);  // (sections and findings share the analyses they both ask for)
  // Sections are independent (each owns its results; what two of them need is
  // computed once, in the Memo): built in parallel, rendered in order.
  std::mutex mu;
  size_t done = 0;
  base::ParallelFor(sections_.size(), [&](size_t i) {
    sections_[i]->Build(t, opt_);
    if (progress) {
      std::lock_guard lock(mu);
      progress(++done, sections_.size());
    }
  });
}

std::string Report::Text() const {
  std::string out;
  for (const auto& s : sections_) {
    std::string part;
    s->RenderText(part, opt_);
    if (part.empty()) continue;
    if (!out.empty()) out += "\n";
    out += part;
  }
  return out;
}

nlohmann::json Report::Json() const {
  nlohmann::json j = nlohmann::json::object();
  j["detail"] = {{"level", opt_.full ? "full" : "summary"},
                 {"rows_per_table", opt_.full ? nlohmann::json(nullptr) : nlohmann::json(opt_.max_rows)}};
  if (!opt_.full)
    j["detail"]["note"] = fmt::format(
        "A summary: each table holds its top {} rows (omitted_rows says what was left out), steps come as statistics "
        "and the slowest steps, time series are thinned. `strata report --json --full` gives every row.",
        opt_.max_rows);
  for (const auto& s : sections_) s->RenderJson(j, opt_);
  return j;
}

std::string FormatDuration(int64_t ns) { return HumanDuration(ns); }

std::string FormatBytes(double b) { return HumanBytes(b); }

std::string Truncate(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n - 3) + "...";
}

}  // namespace strata::report

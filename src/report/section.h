// A report is a list of sections, each owning one topic end to end: it runs its
// analyses on the model, then renders itself as text and as JSON keys. Each
// level adds its sections in its own file and lists them in MakeSections().
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/comms.h"
#include "analysis/findings.h"
#include "analysis/framework.h"
#include "analysis/options.h"
#include "model/trace.h"

namespace strata::report {

// The JSON report is a summary by default, sized for people and for pages that
// embed it: each table keeps its `top` rows (the omitted count is stated under
// "detail"), per-step data comes as statistics plus the slowest steps, and time
// series are thinned. `full` gives every row, every step and every segment of
// every analysed step's critical path (95 MB for a 30 s Transformer run).
struct ReportOptions {
  size_t top = 20;         // rows in each table, text and JSON; the slowest steps listed
  bool full = false;       // JSON: every row, every step, every critical-path segment
  bool what_if = false;    // text: each finding's what-if (the change applied, the step it predicts)
  size_t max_rows = 1000;  // rows in JSON arrays: set by Report from top and full
  analysis::AnalysisOptions analysis;
};

// Points kept in a time series of the JSON (a chart 2000 pixels wide needs no more).
constexpr size_t kSeriesPoints = 2000;
// Per-step series (step durations) are kept whole up to this many steps.
constexpr size_t kStepSeriesPoints = 10000;

class Section {
 public:
  virtual ~Section() = default;
  virtual void Build(const model::Trace& t, const ReportOptions& opt) = 0;
  // Text, ending with a newline; empty when there is nothing to say.
  virtual void RenderText(std::string& out, const ReportOptions& opt) const = 0;
  // Adds this section's keys to the report object.
  virtual void RenderJson(nlohmann::json& root, const ReportOptions& opt) const = 0;
};

// The step options a trace was recorded with (`strata record --skip-steps
// --batch-size`, from its manifest), `ro`'s batch size overriding.
analysis::FrameworkOptions FrameworkOptionsFor(const model::Trace& t, const ReportOptions& ro);

// The sections of `strata report`, in display order.
std::vector<std::unique_ptr<Section>> MakeSections();

// Core sections (core_sections.cc).
std::unique_ptr<Section> MakeOverviewSection();
std::unique_ptr<Section> MakeStreamsSection();  // text: the streams table, last
std::unique_ptr<Section> MakeStepsSection();
std::unique_ptr<Section> MakeSpansSection();
std::unique_ptr<Section> MakeCountersSection();
std::unique_ptr<Section> MakeCollectorsSection();
std::unique_ptr<Section> MakeWarningsSection();
std::unique_ptr<Section> MakeCriticalPathSection();
std::unique_ptr<Section> MakeFindingsSection();
// How many events of each level the trace holds (counts_section.cc).
std::unique_ptr<Section> MakeCountsSection();

// Device activity sections (gpu_sections.cc): GPU time breakdown, kernels,
// launches, ops with their GPU time, transfers.
std::unique_ptr<Section> MakeGpuSection();
std::unique_ptr<Section> MakeLaunchesSection();
std::unique_ptr<Section> MakeOpsSection();
std::unique_ptr<Section> MakeTransfersSection();

// Accelerator section (accel_sections.cc).
std::unique_ptr<Section> MakeAcceleratorSection();
// OS level (os_sections.cc).
std::unique_ptr<Section> MakeOsSection();

// Ranks and their collectives (comms_section.cc).
std::unique_ptr<Section> MakeCommsSection();
// Its text and JSON ("ranks"; null when there are fewer than two ranks), and
// the findings section's (findings_section.cc), for the job report too.
void CommsText(const analysis::CommsSummary& s, const ReportOptions& opt, std::string& out);
nlohmann::json CommsJson(const analysis::CommsSummary& s, const ReportOptions& opt);
void FindingsText(const std::vector<analysis::Finding>& findings, const ReportOptions& opt, std::string& out);
nlohmann::json FindingsJson(const std::vector<analysis::Finding>& findings);

// Framework-level sections (framework_sections.cc).
std::unique_ptr<Section> MakeTrainingSection();
std::unique_ptr<Section> MakeFrameworkOpsSection();
std::unique_ptr<Section> MakeFrameworkMemorySection();
std::unique_ptr<Section> MakeDataflowSection();

// Functions placed on several devices (placement_section.cc).
std::unique_ptr<Section> MakePlacementSection();
// Roofline (roofline_section.cc).
std::unique_ptr<Section> MakeRooflineSection();
// Per-layer tables: modules and TF name scopes (layers_section.cc).
std::unique_ptr<Section> MakeLayersSection();
// Memory: timelines, peak and what was live at it, churn (memory_section.cc).
std::unique_ptr<Section> MakeMemorySection();

// Rows [0, min(n, opt.max_rows)) of a JSON table, made by row(i). When rows are
// left out, says how many under root["detail"]["omitted_rows"][key], so a reader
// of the summary knows what --full would add.
template <typename RowFn>
nlohmann::json JsonRows(nlohmann::json& root, const std::string& key, size_t n, const ReportOptions& opt, RowFn&& row) {
  nlohmann::json a = nlohmann::json::array();
  size_t shown = std::min(n, opt.max_rows);
  for (size_t i = 0; i < shown; ++i) a.push_back(row(i));
  if (shown < n) root["detail"]["omitted_rows"][key] = n - shown;
  return a;
}

// Formatting helpers shared by sections: the units of base/units.h.
std::string FormatDuration(int64_t ns);
std::string FormatBytes(double bytes);
std::string Truncate(const std::string& s, size_t n);

}  // namespace strata::report

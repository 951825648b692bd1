// A report is a list of sections, each owning one topic end to end: it runs its
// analyses on the model, then renders itself as text and as JSON keys. Each
// level adds its sections in its own file and lists them in MakeSections().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/options.h"
#include "model/trace.h"

namespace strata::report {

struct ReportOptions {
  size_t top = 20;         // rows in text tables
  size_t max_rows = 1000;  // rows in JSON arrays
  analysis::AnalysisOptions analysis;
};

class Section {
 public:
  virtual ~Section() = default;
  virtual void Build(const model::Trace& t, const ReportOptions& opt) = 0;
  // Text, ending with a newline; empty when there is nothing to say.
  virtual void RenderText(std::string& out, const ReportOptions& opt) const = 0;
  // Adds this section's keys to the report object.
  virtual void RenderJson(nlohmann::json& root, const ReportOptions& opt) const = 0;
};

// The sections of `strata report`, in display order.
std::vector<std::unique_ptr<Section>> MakeSections();

// Core sections (core_sections.cc).
std::unique_ptr<Section> MakeOverviewSection();
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

// Framework-level sections (framework_sections.cc).
std::unique_ptr<Section> MakeTrainingSection();
std::unique_ptr<Section> MakeFrameworkOpsSection();
std::unique_ptr<Section> MakeFrameworkMemorySection();
std::unique_ptr<Section> MakeDataflowSection();

// Roofline (roofline_section.cc).
std::unique_ptr<Section> MakeRooflineSection();
// Memory: timelines, peak and what was live at it, churn (memory_section.cc).
std::unique_ptr<Section> MakeMemorySection();

// Formatting helpers shared by sections.
std::string FormatDuration(int64_t ns);
std::string FormatBytes(double bytes);
std::string Truncate(const std::string& s, size_t n);

}  // namespace strata::report

// A report's answers kept beside the trace's index (index/results_file.h):
// `strata report` asked again with the same options, or after `strata index`
// stored the default ones, prints the stored answer instead of running the
// analyses. The question names the trace as given (the report prints it),
// every report and analysis option, and the format.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "index/open_trace.h"
#include "report/report.h"

namespace strata::report {

// The formats a report is rendered in.
enum class ReportFormat { kText, kJson, kHtml };

// The options of `strata report TRACE` with no flag (what `strata index` stores).
ReportOptions DefaultReportOptions();

std::string ReportQuestion(const std::string& trace, const ReportOptions& opt, ReportFormat f);

// Renders `r` in format `f` (the HTML titled with the trace's name).
std::string RenderReport(const Report& r, const std::string& trace, ReportFormat f);

// The stored answer beside the index `use` names (one just read or written,
// or one index::FindCurrentIndex found current), when it holds one.
std::optional<std::string> StoredReport(const index::IndexUse& use, const std::string& trace,
                                        const ReportOptions& opt, ReportFormat f);

// Keeps `answer` beside the index `use` names (nothing when the trace was not
// read or written through an index). A failure to keep it costs the next
// report its analyses, nothing else.
void StoreReport(const index::IndexUse& use, const std::string& trace, const ReportOptions& opt,
                 ReportFormat f, const std::string& answer);

}  // namespace strata::report

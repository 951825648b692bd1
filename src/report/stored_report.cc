#include "report/stored_report.h"

#include <fmt/format.h>

#include "index/results_file.h"
#include "report/html_report.h"

namespace strata::report {

ReportOptions DefaultReportOptions() { return ReportOptions{}; }

std::string ReportQuestion(const std::string& trace, const ReportOptions& opt, ReportFormat f) {
  // Every member by name: an option added to either structure does not
  // compile here until it is part of the question, so a stored answer can
  // never be taken for one asked with another value of it.
  const auto& [top, full, what_if, max_rows, analysis] = opt;
  const auto& [hta_compat, kernel_wait_ns, batch_size, launch_cpu_cutoff_ns, launch_delay_cutoff_ns] = analysis;
  (void)max_rows;  // set by Report from top and full
  const char* format = f == ReportFormat::kText ? "text" : f == ReportFormat::kJson ? "json" : "html";
  return fmt::format(
      "strata report/1\nformat={}\ntrace={}\ntop={}\nfull={}\nwhat_if={}\nhta_compat={}\nkernel_wait_ns={}\n"
      "batch_size={:.17g}\nlaunch_cpu_cutoff_ns={}\nlaunch_delay_cutoff_ns={}\n",
      format, trace, top, full, what_if, hta_compat, kernel_wait_ns, batch_size, launch_cpu_cutoff_ns,
      launch_delay_cutoff_ns);
}

std::string RenderReport(const Report& r, const std::string& trace, ReportFormat f) {
  switch (f) {
    case ReportFormat::kText:
      return r.Text();
    case ReportFormat::kJson:
      // Names come from traced programs (thread names, Python frames) and may be
      // any bytes: invalid UTF-8 is replaced rather than aborting the report.
      return r.Json().dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace) + "\n";
    case ReportFormat::kHtml:
      return RenderHtml(r.Json(), "strata report: " + trace);
  }
  return {};
}

std::optional<std::string> StoredReport(const index::IndexUse& use, const std::string& trace,
                                        const ReportOptions& opt, ReportFormat f) {
  if (use.path.empty()) return std::nullopt;
  auto answer = index::ReadResult(use.path, use.key, ReportQuestion(trace, opt, f));
  if (!answer.ok()) return std::nullopt;
  return std::move(answer).value();
}

void StoreReport(const index::IndexUse& use, const std::string& trace, const ReportOptions& opt,
                 ReportFormat f, const std::string& answer) {
  if (use.path.empty()) return;
  (void)index::WriteResult(use.path, use.key, ReportQuestion(trace, opt, f), answer);
  index::KeepCacheBounded(use);
}

}  // namespace strata::report

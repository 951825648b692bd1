// `strata report TRACE [--json]`
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "base/progress.h"
#include "cli/commands.h"
#include "importers/load.h"
#include "base/files.h"
#include "report/report.h"
#include "report/html_report.h"
#include "report/sweep_report.h"

namespace strata::cli {
namespace {

struct ReportArgs {
  std::string trace;
  bool json = false;
  std::string html;
  size_t top = 20;
  bool hta = false;
  double batch_size = 0;
  double kernel_wait_us = 30;
  std::string flamegraph;
};

int WriteHtml(const std::string& path, const std::string& html) {
  Status st = WriteFileAtomic(path, html);
  if (!st.ok()) {
    PrintError(st.message());
    return 1;
  }
  std::fprintf(stderr, "strata: wrote %s\n", path.c_str());
  return 0;
}

int RunReport(const ReportArgs& a) {
  // A sweep directory (strata sweep) reports its summary.
  std::string sweep_json = JoinPath(a.trace, "sweep.json");
  if (IsDirectory(a.trace) && PathExists(sweep_json)) {
    auto text = ReadFile(sweep_json);
    analysis::SweepSummary s;
    nlohmann::json j = text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
    if (!report::SweepFromJson(j, &s)) {
      PrintError(sweep_json + ": not a strata sweep summary");
      return 1;
    }
    if (!a.html.empty()) {
      nlohmann::json r = {{"trace", {{"path", a.trace}, {"source", "sweep"}}}, {"sweep", report::SweepToJson(s)}};
      return WriteHtml(a.html, report::RenderHtml(r, "strata sweep: " + a.trace));
    }
    std::string out = a.json ? report::SweepToJson(s).dump(2) + "\n" : report::SweepToText(s);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  importers::LoadOptions lo;
  lo.progress = true;  // drawn only on a terminal
  auto trace = importers::LoadTrace(a.trace, lo);
  if (!trace.ok()) {
    PrintError(trace.status().message());
    return 1;
  }
  if (!a.flamegraph.empty()) {
    int rc = WriteFlamegraph(*trace, a.flamegraph, /*spans=*/false, /*threads=*/true);
    if (rc != 0) return rc;
    if (a.flamegraph == "-") return 0;
  }
  report::ReportOptions opt;
  opt.top = a.top;
  opt.analysis.hta_compat = a.hta;
  opt.analysis.batch_size = a.batch_size;
  opt.analysis.kernel_wait_threshold_ns = static_cast<int64_t>(a.kernel_wait_us * 1000);
  // The model and the report are left for the OS to reclaim at exit: freeing
  // millions of rows one by one would only delay the exit.
  auto* t = new model::Trace(std::move(trace).value());
  ProgressBar bar("analysing", true, /*bytes=*/false);  // drawn only on a terminal
  auto* rep = new report::Report(*t, opt, [&bar](size_t done, size_t total) { bar.Update(done, total); });
  report::Report& r = *rep;
  bar.Finish();
  if (!a.html.empty()) {
    int rc = WriteHtml(a.html, report::RenderHtml(r.Json(), "strata report: " + a.trace));
    if (rc != 0 || !a.json) return rc;
  }
  if (a.json) {
    // Names come from traced programs (thread names, Python frames) and may be
    // any bytes: invalid UTF-8 is replaced rather than aborting the report.
    std::string s = r.Json().dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fputc('\n', stdout);
  } else {
    std::string s = r.Text();
    std::fwrite(s.data(), 1, s.size(), stdout);
  }
  return 0;
}

}  // namespace

void AddReportCommand(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Summarize a trace: steps, GPU time breakdown, kernels, launches, transfers, ops, spans, counters");
  cmd->add_option("trace", args->trace, "A strata trace directory, or a PyTorch-profiler trace (.json, .json.gz)")
      ->required();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->add_option("--html", args->html, "Write a self-contained HTML report with charts to this file");
  cmd->add_option("--top", args->top, "Rows in each table")->capture_default_str();
  cmd->add_flag("--hta-compat", args->hta,
                "Compute the GPU figures as HTA (HolisticTraceAnalysis) does: whole microseconds, last step dropped, "
                "every event with a stream number counted as GPU work, devices of a rank pooled");
  cmd->add_option("--batch-size", args->batch_size, "Samples per step, for the throughput");
  cmd->add_option("--kernel-wait-us", args->kernel_wait_us,
                  "Idle gaps between kernels shorter than this are 'kernel wait'")
      ->capture_default_str();
  cmd->add_option("--flamegraph", args->flamegraph, "Also write the CPU samples as folded stacks to FILE (- for stdout only)");
  cmd->callback([args]() { throw CLI::RuntimeError(RunReport(*args)); });
}

}  // namespace strata::cli

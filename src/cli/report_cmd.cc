// `strata report TRACE [--json]`
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "base/progress.h"
#include "cli/commands.h"
#include "importers/load.h"
#include "report/report.h"

namespace strata::cli {
namespace {

struct ReportArgs {
  std::string trace;
  bool json = false;
  size_t top = 20;
  bool hta = false;
  double batch_size = 0;
  double kernel_wait_us = 30;
};

int RunReport(const ReportArgs& a) {
  importers::LoadOptions lo;
  lo.progress = true;  // drawn only on a terminal
  auto trace = importers::LoadTrace(a.trace, lo);
  if (!trace.ok()) {
    PrintError(trace.status().message());
    return 1;
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
  if (a.json) {
    std::string s = r.Json().dump(2);
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
  cmd->add_option("--top", args->top, "Rows in each table")->capture_default_str();
  cmd->add_flag("--hta-compat", args->hta,
                "Compute the GPU figures as HTA (HolisticTraceAnalysis) does: whole microseconds, last step dropped, "
                "every event with a stream number counted as GPU work, devices of a rank pooled");
  cmd->add_option("--batch-size", args->batch_size, "Samples per step, for the throughput");
  cmd->add_option("--kernel-wait-us", args->kernel_wait_us,
                  "Idle gaps between kernels shorter than this are 'kernel wait'")
      ->capture_default_str();
  cmd->callback([args]() { throw CLI::RuntimeError(RunReport(*args)); });
}

}  // namespace strata::cli

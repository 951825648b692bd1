// `strata report TRACE [--json]`
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "importers/load.h"
#include "report/report.h"

namespace strata::cli {
namespace {

struct ReportArgs {
  std::string trace;
  bool json = false;
  size_t top = 20;
  std::string flamegraph;
};

int RunReport(const ReportArgs& a) {
  auto trace = importers::LoadTrace(a.trace);
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
  report::Report r(*trace, opt);
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
  CLI::App* cmd = app.add_subcommand("report", "Summarize a trace: streams, steps, spans, counters");
  cmd->add_option("trace", args->trace, "A strata trace directory")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->add_option("--top", args->top, "Rows in each table")->capture_default_str();
  cmd->add_option("--flamegraph", args->flamegraph, "Also write the CPU samples as folded stacks to FILE (- for stdout only)");
  cmd->callback([args]() { throw CLI::RuntimeError(RunReport(*args)); });
}

}  // namespace strata::cli

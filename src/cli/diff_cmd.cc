// `strata diff A B [--json]`: before/after comparison of two traces.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "analysis/diff.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "importers/load.h"
#include "report/diff_report.h"

namespace strata::cli {
namespace {

struct DiffArgs {
  std::string a, b;
  bool json = false;
  size_t top = 15;
  size_t skip_steps = 1;
  std::string output;
  bool force = false;
  bool full = false;
};

int RunDiff(const DiffArgs& args) {
  if (int rc = CheckOutputPath(args.output, args.force); rc != kExitOk) return rc;
  auto a = OpenTraceForCommand(args.a);
  if (!a.ok()) return BadInput(a.status().message());
  auto b = OpenTraceForCommand(args.b);
  if (!b.ok()) return BadInput(b.status().message());
  analysis::DiffOptions opt;
  opt.skip_steps = args.skip_steps;
  analysis::TraceDiff d = analysis::Diff(*a, *b, opt);
  std::string out = args.json ? report::DiffToJson(d, args.full ? SIZE_MAX : args.top).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" : report::DiffToText(d, args.a, args.b, args.top);
  return WriteOutput(args.output, out, args.force);
}

}  // namespace

void AddDiffCommand(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd = app.add_subcommand("diff", "Compare two traces: step time change and what explains it");
  cmd->add_option("before", args->a, "trace A, before the change")->required();
  cmd->add_option("after", args->b, "trace B, after the change")->required();
  cmd->add_flag("--json", args->json, "Print JSON");
  cmd->add_option("--top", args->top, "Rows in each table (text and JSON)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--skip-steps", args->skip_steps, "Warm-up steps to leave out")->capture_default_str();
  cmd->add_flag("--full", args->full, "JSON: every row of each table (default: the --top rows)");
  cmd->add_option("-o,--output", args->output, "Write the comparison to this file instead of standard output");
  cmd->add_flag("--force", args->force, "Replace the -o file if it exists");
  SetCommandHelp(cmd, "strata diff [OPTIONS] BEFORE AFTER",
                 "  strata diff base-run fixed-run               step-time change and the ops/kernels that explain it\n"
                 "  strata diff a.pt.trace.json b.pt.trace.json --skip-steps 3 --json");
  cmd->callback([args]() { throw CLI::RuntimeError(RunDiff(*args)); });
}

}  // namespace strata::cli

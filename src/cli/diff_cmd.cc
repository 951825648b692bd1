// `strata diff A B [--json]`: before/after comparison of two traces.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "analysis/diff.h"
#include "cli/commands.h"
#include "importers/load.h"
#include "report/diff_report.h"

namespace strata::cli {
namespace {

struct DiffArgs {
  std::string a, b;
  bool json = false;
  size_t top = 15;
  size_t skip_steps = 1;
};

int RunDiff(const DiffArgs& args) {
  auto a = importers::LoadTrace(args.a);
  if (!a.ok()) {
    PrintError(a.status().message());
    return 1;
  }
  auto b = importers::LoadTrace(args.b);
  if (!b.ok()) {
    PrintError(b.status().message());
    return 1;
  }
  analysis::DiffOptions opt;
  opt.skip_steps = args.skip_steps;
  analysis::TraceDiff d = analysis::Diff(*a, *b, opt);
  // (Names from a strata trace need not be UTF-8: such bytes are written as U+FFFD.)
  std::string out = args.json ? report::DiffToJson(d, 1000).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                              : report::DiffToText(d, args.a, args.b, args.top);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void AddDiffCommand(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd = app.add_subcommand("diff", "Compare two traces: step time change and what explains it");
  cmd->add_option("before", args->a, "Trace A (before)")->required();
  cmd->add_option("after", args->b, "Trace B (after)")->required();
  cmd->add_flag("--json", args->json, "Print JSON");
  cmd->add_option("--top", args->top, "Rows to show")->capture_default_str();
  cmd->add_option("--skip-steps", args->skip_steps, "Warm-up steps to leave out")->capture_default_str();
  cmd->callback([args]() { throw CLI::RuntimeError(RunDiff(*args)); });
}

}  // namespace strata::cli

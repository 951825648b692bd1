// `strata control TRACE [--tiers LIST] [--steps A-B] [--pause|--resume]`: changes
// what a running recording collects, through its control block.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/control_file.h"
#include "cli/exit_codes.h"

namespace strata::cli {
namespace {

struct ControlArgs {
  std::string trace;
  std::string tiers;
  std::string steps;
  bool pause = false, resume = false;
};

int RunControl(const ControlArgs& a) {
  auto cf = ControlFile::Open(a.trace);
  if (!cf.ok())
    return BadInput(a.trace + " is not a recording strata can control (" + cf.status().message() +
                    "); give the directory of a running `strata record -o DIR`");
  uint32_t tiers = cf->tiers();
  int64_t first = cf->first_step(), last = cf->last_step();
  if (!a.tiers.empty()) {
    auto t = ParseTiers(a.tiers);
    if (!t.ok()) {
      PrintError(t.status().message());
      return kExitUsage;
    }
    tiers = *t | (tiers & format::kTierPaused);
  }
  if (!a.steps.empty()) {
    auto dash = a.steps.find('-');
    try {
      first = std::stoll(a.steps.substr(0, dash));
      last = dash == std::string::npos ? first : std::stoll(a.steps.substr(dash + 1));
    } catch (...) {
      PrintError("--steps takes A-B (step numbers), e.g. 10-20");
      return kExitUsage;
    }
    if (first < 0 || last < first) {
      PrintError("--steps: the window ends before it starts");
      return kExitUsage;
    }
  }
  if (a.pause) tiers |= format::kTierPaused;
  if (a.resume) tiers &= ~format::kTierPaused;
  cf->Set(tiers, first, last);
  std::string window = first < 0 ? std::string("all") : std::to_string(first) + "-" + std::to_string(last);
  std::printf("tiers %s, detail steps %s, generation %u\n", TierNames(tiers).c_str(), window.c_str(), cf->generation());
  return kExitOk;
}

}  // namespace

void AddControlCommand(CLI::App& app) {
  auto args = std::make_shared<ControlArgs>();
  CLI::App* cmd = app.add_subcommand("control", "Change what a running recording collects (tiers, step window)");
  cmd->add_option("trace", args->trace, "the trace directory of a running `strata record`")->required();
  cmd->add_option("--tiers", args->tiers, "Comma-separated: ops, ops-sampled, shapes, memory, gpu-metrics");
  cmd->add_option("--steps", args->steps, "Detailed tiers only for steps A-B");
  cmd->add_flag("--pause", args->pause, "Stop recording events (until --resume)");
  cmd->add_flag("--resume", args->resume, "Resume recording");
  SetCommandHelp(cmd, "strata control [OPTIONS] TRACE",
                 "  strata control mytrace --tiers ops,shapes --steps 100-110   shapes and FLOPs for steps 100..110\n"
                 "  strata control mytrace --pause                              stop recording events for a while\n"
                 "  strata control mytrace --resume\n"
                 "  strata control mytrace                                      print the current switches");
  cmd->callback([args]() { throw CLI::RuntimeError(RunControl(*args)); });
}

}  // namespace strata::cli

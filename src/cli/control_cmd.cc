// `strata control TRACE` (also `strata ctl`): changes what a running recording
// collects, through its control block (format/control.h):
//   --tiers LIST           what every step records (the baseline)
//   --detail LIST          what a step window turns on (ops, shapes, cuda)
//   --steps N | A-B        the window: the next N steps, or steps A..B
//   --cuda MODE            CUDA device activity: all, sampled, window, off
//   --pause / --resume
// With no option it prints the switches and the step the program is in.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "format/control_file.h"

namespace strata::cli {
namespace {

struct ControlArgs {
  std::string trace;
  std::string tiers;
  std::string detail;
  std::string steps;
  std::string cuda;
  bool pause = false, resume = false;
};

// "20" -> next 20 steps (*next = true); "10-20" -> steps 10..20.
bool ParseSteps(const std::string& s, int64_t* a, int64_t* b, bool* next) {
  auto num = [](const std::string& t, int64_t* out) {
    if (t.empty() || t.size() > 15 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    *out = std::stoll(t);
    return true;
  };
  auto dash = s.find('-');
  *next = dash == std::string::npos;
  if (*next) return num(s, a) && *a > 0;
  return num(s.substr(0, dash), a) && num(s.substr(dash + 1), b);
}

int RunControl(const ControlArgs& a) {
  auto cf = format::ControlFile::Open(a.trace);
  if (!cf.ok())
    return BadInput(a.trace + " is not a recording strata can control (" + cf.status().message() +
                    "); give the directory of a running `strata record -o DIR`");
  uint32_t tiers = cf->tiers();
  uint32_t window_tiers = cf->window_tiers();
  format::CudaActivity cuda = cf->cuda_activity();
  int64_t first = cf->first_step(), last = cf->last_step();
  auto tier_list = [](const std::string& list, uint32_t* out) {
    auto t = format::ParseTiers(list);
    if (!t.ok()) PrintError(t.status().message());
    else *out = *t;
    return t.ok();
  };
  if (!a.tiers.empty()) {
    uint32_t t = 0;
    if (!tier_list(a.tiers, &t)) return kExitUsage;
    tiers = t | (tiers & format::kTierPaused);
  }
  if (!a.detail.empty() && !tier_list(a.detail, &window_tiers)) return kExitUsage;
  if (!a.cuda.empty() && !format::ParseCudaActivity(a.cuda, &cuda)) {
    PrintError("--cuda must be all, sampled, window or off");
    return kExitUsage;
  }
  bool next = false;
  int64_t n = 0;
  if (!a.steps.empty()) {
    if (!ParseSteps(a.steps, &n, &last, &next)) {
      PrintError("--steps takes N (the next N steps) or A-B (steps A to B), e.g. 20 or 100-110");
      return kExitUsage;
    }
    if (!next && last < n) {
      PrintError("--steps: the window ends before it starts");
      return kExitUsage;
    }
    if (!next) first = n;
  } else if (!a.detail.empty()) {
    PrintError("--detail needs --steps (N, or A-B): the window it applies to");
    return kExitUsage;
  }
  if (a.pause) tiers |= format::kTierPaused;
  if (a.resume) tiers &= ~format::kTierPaused;
  bool changed = !a.tiers.empty() || !a.detail.empty() || !a.steps.empty() || !a.cuda.empty() || a.pause || a.resume;
  if (next) {
    cf->Set(tiers, first, last, window_tiers, cuda);  // the baseline first; the window from the step now running
    cf->RequestNextSteps(n, window_tiers, &first, &last);
  } else if (changed) {
    cf->Set(tiers, first, last, window_tiers, cuda);
  }
  std::string window = first < 0 ? std::string("none")
                                 : std::to_string(first) + "-" + std::to_string(last) + " (" +
                                       format::TierNames(window_tiers) + ")";
  int64_t cur = cf->current_step();
  std::printf("tiers %s, window %s, cuda activity %s, step now %s, generation %u\n",
              format::TierNames(tiers).c_str(), window.c_str(), format::CudaActivityName(cuda),
              cur < 0 ? "none yet" : std::to_string(cur).c_str(), cf->generation());
  return kExitOk;
}

}  // namespace

void AddControlCommand(CLI::App& app) {
  auto args = std::make_shared<ControlArgs>();
  CLI::App* cmd = app.add_subcommand("control", "Change what a running recording collects (tiers, step windows)");
  cmd->alias("ctl");
  cmd->add_option("trace", args->trace, "the trace directory of a running `strata record`")->required();
  cmd->add_option("--tiers", args->tiers,
                  "What every step records, comma-separated: ops, ops-sampled, shapes, memory, gpu-metrics");
  cmd->add_option("--detail", args->detail,
                  "What the step window turns on, comma-separated: ops, shapes, cuda (needs --steps)");
  cmd->add_option("--steps", args->steps, "The step window: N (the next N steps) or A-B (steps A to B)");
  cmd->add_option("--cuda", args->cuda,
                  "CUDA device activity: all (every step), sampled (one step in 50, and windows), window (only in "
                  "windows asking for cuda), off");
  cmd->add_flag("--pause", args->pause, "Stop recording events (until --resume)");
  cmd->add_flag("--resume", args->resume, "Resume recording");
  SetCommandHelp(cmd, "strata control [OPTIONS] TRACE",
                 "  strata control mytrace --detail ops,cuda --steps 20  ops and CUDA activity for the next 20 steps\n"
                 "  strata control mytrace --detail shapes --steps 100-110   shapes and FLOPs for steps 100..110\n"
                 "  strata control mytrace --tiers ops,memory            every op of every step from now on\n"
                 "  strata control mytrace --pause                       stop recording events for a while\n"
                 "  strata control mytrace --resume\n"
                 "  strata control mytrace                               print the switches and the step now\n"
                 "  strata ctl mytrace --detail ops --steps 5            the same command, shorter");
  cmd->callback([args]() { throw CLI::RuntimeError(RunControl(*args)); });
}

}  // namespace strata::cli

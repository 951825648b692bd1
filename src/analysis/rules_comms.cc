// Findings from the communication across ranks (analysis/comms.h): the rank
// that makes the others wait at their collectives.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/comms.h"
#include "analysis/findings_context.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

std::string Ms(double ns) { return HumanDuration(ns); }

std::string PhaseAdvice(const std::string& phase) {
  if (phase == "input")
    return "Its input pipeline is slower: check its data shard (file sizes, decoding, a slower disk or network "
           "mount), give its DataLoader more workers or prefetching, and balance samples per rank.";
  if (phase == "compute")
    return "It computes more per step: check that every rank gets the same batch size and sequence lengths (pad or "
           "bucket by length), and that its device or cores are not slower or shared.";
  if (phase == "io")
    return "It reads or writes more: move logging, checkpointing and metrics writes off the step (or to one rank "
           "at the end of an epoch), and check its disk.";
  if (phase == "python")
    return "It runs more of the program's own code per step: extra duties on this rank (logging, evaluation, "
           "metric gathering) should run less often or asynchronously.";
  if (phase == "idle")
    return "Its step's thread is off CPU where the others run: it sleeps, waits on a lock or for a CPU (pin ranks to "
           "their own cores; look for sleeps, locks and oversubscribed hosts).";
  return "Balance the work per step across ranks: data shard, batch size, extra duties on this rank, its host and "
         "device.";
}

}  // namespace

void RankStraggler(FindingsContext& c, std::vector<Finding>* out) {
  const CommsSummary s = AnalyzeComms(c.t);
  if (s.straggler < 0) return;
  const RankComms& w = s.ranks[static_cast<size_t>(s.straggler)];
  double step = static_cast<double>(w.step_p50);
  if (step <= 0) return;
  // A what-if across ranks: the straggler's phase at the other ranks'
  // median, so that it enters each collective earlier by that much (at most
  // with the second-to-last rank): every rank's step shrinks by as much. With
  // no phase standing out, it enters with the second-to-last rank.
  double saved = static_cast<double>(s.late_per_step_ns);
  if (!s.phase.empty()) saved = std::min(saved, static_cast<double>(s.phase_excess_ns));
  double pct = 100.0 * saved / step;
  Finding f;
  f.category = "straggler";
  f.title = fmt::format("{} is the straggler: the other ranks wait {} per step for it at their collectives",
                        w.label, Ms(static_cast<double>(s.late_per_step_ns)));
  std::string phase;
  if (!s.phase.empty())
    phase = fmt::format(" Its steps spend {} more in {} than the other ranks' median ({} against {}).",
                        Ms(static_cast<double>(s.phase_excess_ns)), s.phase,
                        Ms(static_cast<double>(w.parts[static_cast<size_t>(s.phase_part)])),
                        Ms(static_cast<double>(w.parts[static_cast<size_t>(s.phase_part)] - s.phase_excess_ns)));
  std::string others;
  for (const RankComms& r : s.ranks)
    others += fmt::format("{}{} {} ({} waited)", others.empty() ? "" : ", ", r.label, Ms(static_cast<double>(r.step_p50)),
                          Ms(static_cast<double>(r.waited_ns) / static_cast<double>(r.steps ? r.steps : 1)));
  f.evidence = fmt::format(
      "It entered {} of {} collectives last ({:.0f}%), after the second-to-last rank by {} per step in all.{} Median "
      "step and wait per step of each rank: {}.",
      w.last_arrivals, s.matched, 100.0 * s.late_share, Ms(static_cast<double>(s.late_per_step_ns)), phase, others);
  f.metrics = {{"rank", static_cast<double>(w.rank)},
               {"late_ns_per_step", static_cast<double>(s.late_per_step_ns)},
               {"last_arrival_share", s.late_share},
               {"matched_collectives", static_cast<double>(s.matched)},
               {"phase_excess_ns", static_cast<double>(s.phase_excess_ns)},
               {"ranks", static_cast<double>(s.ranks.size())}};
  f.involved.push_back(w.label);
  if (!s.phase.empty()) f.involved.push_back("phase: " + s.phase);
  f.estimated_gain_pct = pct;
  f.what_if = s.phase.empty()
                  ? fmt::format("{} entering each collective with the second-to-last rank: every rank's step shorter by {}",
                                w.label, Ms(saved))
                  : fmt::format("{}'s {} at the other ranks' median: it enters the collectives {} earlier per step, and "
                                "every rank's step is as much shorter",
                                w.label, s.phase, Ms(saved));
  f.suggestion = PhaseAdvice(s.phase);
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

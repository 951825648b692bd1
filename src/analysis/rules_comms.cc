// Findings from the communication across ranks (analysis/comms.h): the rank
// that makes the others wait at their collectives, and, where no rank does,
// collectives that every rank waits for (communication not hidden behind
// compute).
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

void StragglerFinding(const CommsSummary& s, std::vector<Finding>* out) {
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

void ExposedCollectivesFinding(const CommsSummary& s, std::vector<Finding>* out) {
  // The device rule (findings.cc, Communication) has it from the critical
  // path where communication kernels ran; a straggler explains the waits.
  for (const Finding& f : *out)
    if (f.category == "communication" || f.category == "straggler") return;
  if (s.empty() || s.straggler >= 0) return;
  // Per rank: the share of its step its thread waits, off CPU or in a
  // synchronization, while a collective of its is in flight.
  std::vector<double> share;
  double colls = 0, bytes = 0, flight = 0, wait = 0, step = 0;
  size_t n = 0;
  for (const RankComms& r : s.ranks) {
    if (r.counted_steps == 0 || r.steps == 0) continue;
    double st = static_cast<double>(r.comm_wait);
    for (int64_t p : r.parts) st += static_cast<double>(p);
    if (st <= 0) continue;
    share.push_back(static_cast<double>(r.comm_wait) / st);
    colls += static_cast<double>(r.collectives) / static_cast<double>(r.steps);
    bytes += static_cast<double>(r.bytes) / static_cast<double>(r.steps);
    flight += static_cast<double>(r.in_flight_ns) / static_cast<double>(r.steps);
    wait += static_cast<double>(r.comm_wait);
    step += st;
    ++n;
  }
  if (n < 2) return;
  std::sort(share.begin(), share.end());
  const double pct = 100.0 * share[share.size() / 2];
  if (pct < 5) return;
  colls /= static_cast<double>(n);
  bytes /= static_cast<double>(n);
  flight /= static_cast<double>(n);
  wait /= static_cast<double>(n);
  step /= static_cast<double>(n);
  Finding f;
  f.category = "communication";
  f.title = fmt::format("Every rank waits for its collectives: {:.0f}% of the step (median of {} ranks) with nothing "
                        "else to do",
                        pct, n);
  const bool small = colls > 0 && bytes / colls < 64 * 1024;
  f.evidence = fmt::format(
      "Per step each rank runs {:.1f} collectives of {} in all ({} each on average), in flight {} of its {} step; "
      "its thread waits {} of that off CPU or synchronizing. No rank arrives last often enough to be the cause: "
      "the collectives themselves take this long.",
      colls, HumanBytes(bytes), HumanBytes(colls > 0 ? bytes / colls : 0), Ms(flight), Ms(step), Ms(wait));
  f.metrics = {{"comm_wait_ns_per_step", wait},
               {"collectives_per_step", colls},
               {"bytes_per_step", bytes},
               {"in_flight_ns_per_step", flight},
               {"ranks", static_cast<double>(n)}};
  // As the device rule: 60% of the wait hidden behind compute.
  f.estimated_gain_pct = 0.6 * pct;
  f.what_if = "60% of each rank's wait for its collectives hidden behind compute (overlapped with the backward pass, "
              "or the collectives made that much shorter)";
  f.suggestion =
      small ? "Many small collectives are latency-bound: gather scalars (losses, metrics) into one tensor and all-reduce "
              "them once per step or less often, raise DDP's bucket_cap_mb so gradients go in fewer buckets, and "
              "accumulate gradients over micro-batches with no_sync()."
            : "The collectives move many bytes: send fewer (bf16/fp16 gradients, DDP's fp16_compress_hook or PowerSGD "
              "comm hook), all-reduce less often (gradient accumulation with no_sync()), overlap them with the backward "
              "pass (bucket_cap_mb, gradient_as_bucket_view), or use a faster backend and interconnect (NCCL on GPUs).";
  out->push_back(std::move(f));
}

void RankStraggler(FindingsContext& c, std::vector<Finding>* out) { StragglerFinding(AnalyzeComms(c.t), out); }

void ExposedCollectives(FindingsContext& c, std::vector<Finding>* out) {
  for (const Finding& f : *out)
    if (f.category == "communication" || f.category == "straggler") return;
  ExposedCollectivesFinding(AnalyzeComms(c.t), out);
}

}  // namespace strata::analysis

// Diagnosis rules of placement: compute-heavy framework ops left on the host in
// a program with a device (HostPlacement), and a function's graph split over
// devices so that it crosses them at every layer (CrossDevicePlacement).
//
// CrossDevicePlacement: a function's graph crosses devices so often that the
// crossings (a Send on one device, the consumer's wait for the Recv on the
// other) take a large part of each call, and another placement of the same
// layers (contiguous, or on one device) replays faster. The gain is the placement analysis's
// replay of the profiled calls with the moves (analysis/placement.h), per
// call times the calls per step.
#include <fmt/format.h>

#include <map>
#include <memory>
#include <set>
#include <string_view>

#include "analysis/findings_context.h"
#include "analysis/placement.h"
#include "base/units.h"

namespace strata::analysis {

void HostPlacement(FindingsContext& c, std::vector<Finding>* out) {
  // Heavy host compute ops that launched no device work, in a trace with a device.
  if (c.t.device.size() == 0) return;
  const auto& sl = c.t.slices;
  std::vector<uint8_t> flags = HostCallFlags(c.t);
  static const std::set<std::string_view> kCompute = {"aten::mm",     "aten::matmul", "aten::addmm",  "aten::bmm",
                                                      "aten::conv2d", "aten::linear", "aten::conv1d", "aten::conv3d",
                                                      "aten::convolution"};
  double ns = 0;
  std::set<std::string> names;
  auto ops = std::make_shared<std::set<int32_t>>();
  for (size_t i = 0; i < sl.size(); ++i) {
    if (sl.kind[i] != model::SliceKind::kOp || (flags[i] & kLaunches) || !kCompute.count(c.Name(i)) || !c.InSteps(i))
      continue;
    ns += static_cast<double>(sl.dur[i]);
    ops->insert(static_cast<int32_t>(i));
    names.insert(std::string(c.Name(i)));
  }
  double pct = c.Pct(c.PerStep(ns));
  if (pct < 5) return;
  Finding f;
  f.category = "placement";
  f.title = fmt::format("Compute-heavy ops run on the CPU while a device is available: {:.0f}% of the step", pct);
  f.evidence = fmt::format("{} per step in matrix/convolution ops that launched no device work.", HumanDuration(c.PerStep(ns)));
  f.metrics = {{"host_compute_ns_per_step", c.PerStep(ns)}};
  f.involved.assign(names.begin(), names.end());
  // Replayed: the ops' host time a fifth of what it was (their kernels would
  // run on the device; the launches stay).
  ReplayFix fix;
  fix.host = [&c, ops](const ReplayStep&, const ReplayPiece& p) {
    return WithinAny(c.t, p.slice, *ops) ? 0.2 * static_cast<double>(p.own) : static_cast<double>(p.own);
  };
  c.Replayed(&f, fix);
  f.what_if = "the matrix and convolution ops run on the device: their host time a fifth of what it was";
  f.suggestion = "Place these ops and their tensors on the accelerator (model.to(device), create inputs on the device); "
                 "check for tensors created on the CPU by default inside the model.";
  out->push_back(std::move(f));
}


void CrossDevicePlacement(FindingsContext& c, std::vector<Finding>* out) {
  std::vector<PlacementResult> results = Placement(c.t);
  for (const PlacementResult& r : results) {
    if (r.calls_measured == 0 || r.moves.empty() || r.path_after_ns >= r.path_ns) continue;
    // Calls per measured step.
    model::StringId fn = c.t.strings.Find(r.function);
    double calls = 0;
    const auto& s = c.t.slices;
    for (size_t i = 0; i < s.size(); ++i)
      if (s.name[i] == fn && c.t.tracks[s.track[i]].process == r.process && c.WindowOf(s.ts[i]) >= 0) calls += 1;
    double per_step = c.has_steps && c.steps > 0 ? calls / static_cast<double>(c.steps) : 1;
    if (per_step <= 0) continue;
    double saved = (r.path_ns - r.path_after_ns) * per_step;
    Finding f;
    f.category = "placement";
    std::map<std::string, std::vector<std::string>> by_target;
    for (const auto& m : r.moves) by_target[m.to_device].push_back(m.layer);
    std::string moves;
    for (const auto& [dev, layers] : by_target) {
      std::string names;
      for (size_t i = 0; i < layers.size(); ++i) {
        if (i == 6 && layers.size() > 8) {
          names += fmt::format(", ... ({} more)", layers.size() - 6);
          break;
        }
        names += (i ? ", " : "") + layers[i];
      }
      moves += fmt::format("{}{} to {}", moves.empty() ? "" : "; ", names, dev);
    }
    std::string devices;
    for (const auto& d : r.devices) devices += fmt::format("{}{} {}", devices.empty() ? "" : ", ", d.name, HumanDuration(d.op_ns));
    f.title = fmt::format("{} tensors cross devices in each {} call ({:.0f}% of the call in Sends and waits after them): "
                          "move {} layers to cut them to {}",
                          r.cross_tensors, r.function, 100 * r.cross_ns / std::max(1.0, r.call_ns), r.moves.size(),
                          r.cross_tensors_after);
    double bytes = 0;
    for (const auto& e : r.edges) bytes += e.bytes > 0 ? static_cast<double>(e.bytes) * e.sends : 0;
    std::string top;
    for (size_t i = 0; i < r.edges.size() && i < 3; ++i)
      top += fmt::format("{}{} ({}) -> {} ({}): {} + {} wait", i ? "; " : "", r.edges[i].from, r.edges[i].src_device,
                         r.edges[i].to, r.edges[i].dst_device, HumanDuration(r.edges[i].send_ns),
                         HumanDuration(r.edges[i].wait_ns));
    f.evidence = fmt::format(
        "In {} profiled calls of {} ({} per call; op time by device: {}), {} tensors ({}) cross devices through "
        "Send/Recv: {} per call in the Sends and in the consumers' waits after them (after a same-device input a "
        "node waits {}). Slowest: {}. The placement that replays fastest ({}) leaves {} crossings.",
        r.calls_measured, r.function, HumanDuration(r.call_ns), devices, r.cross_tensors,
        bytes > 0 ? HumanBytes(bytes) + " per call" : "sizes unknown", HumanDuration(r.cross_ns),
        HumanDuration(r.local_delay_ns), top, moves, r.cross_tensors_after);
    f.metrics = {{"cross_tensors", static_cast<double>(r.cross_tensors)},
                 {"cross_tensors_after", static_cast<double>(r.cross_tensors_after)},
                 {"cross_ns_per_call", r.cross_ns},
                 {"call_ns", r.call_ns},
                 {"replayed_call_ns", r.path_ns},
                 {"replayed_call_after_ns", r.path_after_ns},
                 {"calls_per_step", per_step}};
    for (const auto& m : r.moves) f.involved.push_back(fmt::format("{}: {} -> {}", m.layer, m.from_device, m.to_device));
    c.Replayed(&f, ReduceParts({{{StepPart::kCompute}, saved, {StepPart::kPython, StepPart::kIdle}}}, c.replay->steps()));
    f.what_if = fmt::format("the profiled calls replayed through their graph with the moved layers: {} -> {} per call "
                            "({} crossings instead of {})",
                            HumanDuration(r.path_ns), HumanDuration(r.path_after_ns), r.cross_tensors_after,
                            r.cross_tensors);
    std::string tf_fix = fmt::format(
        "Move these layers, with the tf.device scopes of their ops and of the variables they create: {}. Each tensor "
        "that crosses devices costs a Send, a rendezvous and the consumer's wait; the gradients follow the default "
        "device, not the layer.",
        moves);
    std::string fix = fmt::format("Move these layers (and their parameters) so that fewer tensors cross devices: {}.", moves);
    f.suggestion = c.Fix(fix.c_str(), tf_fix.c_str());
    out->push_back(std::move(f));
  }
}

}  // namespace strata::analysis

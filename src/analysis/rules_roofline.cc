// Findings from the roofline (analysis/roofline.h): the step's time goes to ops
// that run near the compute roof (compute_bound: lower precision, tensor cores,
// fewer FLOPs) or to ops of low arithmetic intensity well under it
// (memory_bound: fusion, larger batches, better layouts).
//
// Gains are conservative: the time at the gap to the roof (or to the next,
// faster roof), halved because real kernels reach a roof's fraction only
// approximately, and scaled by the share of those ops' time that lay on the
// steps' critical path (a faster kernel that overlapped host work saves nothing).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <map>
#include <set>

#include "analysis/findings_context.h"
#include "analysis/roofline.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

std::string Ms(double ns) { return HumanDuration(ns); }

std::string Flops(double v) {
  if (v >= 1e12) return fmt::format("{:.1f} TFLOP/s", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.1f} GFLOP/s", v / 1e9);
  return fmt::format("{:.1f} MFLOP/s", v / 1e6);
}

struct Selected {
  std::vector<const RooflineItem*> items;
  double time = 0;  // summed over the measured steps
  double gain = 0;  // before the critical-path scaling
};

// Share of the selected items' time that lay on the steps' critical paths: the
// op slices themselves (CPU) or the kernels they launched (GPU).
double PathShare(FindingsContext& c, const Selected& sel) {
  if (sel.time <= 0) return 0;
  const auto& sl = c.t.slices;
  std::vector<bool> target(sl.size(), false);
  std::set<int32_t> ops;
  for (const RooflineItem* it : sel.items) {
    ops.insert(it->slice);
    target[static_cast<size_t>(it->slice)] = true;
  }
  for (size_t r = 0; r < c.t.device.size(); ++r)
    for (int32_t s = c.t.device.launch[r]; s != model::kNone; s = sl.parent[static_cast<size_t>(s)])
      if (ops.count(s)) {
        target[c.t.device.slice[r]] = true;
        break;
      }
  double on_path = static_cast<double>(c.PathTimeInside([&](size_t s) { return target[s]; }));
  return std::clamp(on_path / sel.time, 0.0, 1.0);
}

// The what-if of making the selected items faster by `sel.gain` in all: each
// selected op's own time (CPU) or the kernels it launched (GPU) scaled by the
// same factor, replayed.
ReplayFix ScaleSelected(FindingsContext& c, const Selected& sel, std::shared_ptr<std::set<int32_t>> ops) {
  for (const RooflineItem* it : sel.items) ops->insert(it->slice);
  double keep = sel.time > 0 ? std::clamp(1 - sel.gain / sel.time, 0.0, 1.0) : 1.0;
  const model::Trace& t = c.t;
  auto inside = [&t, ops](int32_t s) { return WithinAny(t, s, *ops); };
  ReplayFix fix;
  fix.host = [inside, keep](const ReplayStep&, const ReplayPiece& p) {
    double own = static_cast<double>(p.own);
    return p.part == StepPart::kCompute && inside(p.slice) ? own * keep : own;
  };
  fix.device = [&t, inside, keep](const ReplayStep&, const ReplayTask& task) {
    double d = static_cast<double>(task.dur);
    return inside(t.device.launch[task.row]) ? d * keep : d;
  };
  return fix;
}

// The top ops by time among `sel`, as evidence text and `involved` names.
std::string TopOps(FindingsContext& c, const RooflineResult& r, const Selected& sel, std::vector<std::string>* involved) {
  struct Agg {
    double time = 0, flops = 0, bytes = 0;
    int roof = -1;
  };
  std::map<std::string, Agg> by;
  for (const RooflineItem* it : sel.items) {
    Agg& a = by[std::string(c.Name(static_cast<size_t>(it->slice)))];
    a.time += static_cast<double>(it->time_ns);
    a.flops += it->flops;
    a.bytes += it->bytes;
    a.roof = it->roof;
  }
  std::vector<std::pair<std::string, Agg>> v(by.begin(), by.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.time > b.second.time; });
  std::string out;
  for (size_t i = 0; i < v.size() && i < 4; ++i) {
    const auto& [name, a] = v[i];
    RooflinePoint p;
    p.flops = a.flops;
    p.bytes = a.bytes;
    p.time_ns = static_cast<int64_t>(a.time);
    ClassifyPoint(p, r.RoofOf(a.roof));
    out += fmt::format("{}{} ({} per step, {:.1f} FLOP/byte, {}, {:.0f}% of its roof)", i ? "; " : "", name,
                       Ms(c.PerStep(a.time)), p.intensity, Flops(p.flops_per_s), p.pct_of_roof);
    involved->push_back(name);
  }
  return out;
}

struct Classified {
  const RooflineItem* item;
  const Roof* roof;
  double intensity, pct;
};

std::vector<Classified> InSteps(FindingsContext& c, const RooflineResult& r) {
  std::vector<Classified> out;
  for (const RooflineItem& it : r.items) {
    const Roof* roof = r.RoofOf(it.roof);
    if (!roof || it.bytes <= 0 || c.WindowOf(it.ts) < 0) continue;
    RooflinePoint p;
    p.flops = it.flops;
    p.bytes = it.bytes;
    p.time_ns = it.time_ns;
    ClassifyPoint(p, roof);
    out.push_back({&it, roof, p.intensity, p.pct_of_roof});
  }
  return out;
}

// The fastest roof of the device above `roof` (tensor cores for fp32 math), or null.
const Roof* FasterRoof(const RooflineResult& r, const Roof* roof) {
  const Roof* best = nullptr;
  for (const Roof& x : r.roofs)
    if (x.peak_flops > roof->peak_flops * 1.5 && x.name != "fp64" && (!best || x.peak_flops < best->peak_flops)) best = &x;
  return best;  // the next step up (tf32 before fp16), the conservative choice
}

}  // namespace

void ComputeBound(FindingsContext& c, std::vector<Finding>* out) {
  RooflineResult r = Roofline(c.t);
  if (r.primary < 0) return;
  Selected sel;
  const Roof* faster_any = nullptr;
  for (const Classified& x : InSteps(c, r)) {
    if (x.intensity < x.roof->ridge() || x.pct < 50) continue;  // near the compute roof only
    double t = static_cast<double>(x.item->time_ns);
    sel.items.push_back(x.item);
    sel.time += t;
    const Roof* faster = FasterRoof(r, x.roof);
    double gain;
    if (faster && x.item->on_gpu) {
      // Same efficiency on the faster roof, never faster than its memory traffic allows.
      double new_t = std::max(t * x.roof->peak_flops / faster->peak_flops, x.item->bytes / faster->bandwidth * 1e9);
      gain = std::max(0.0, t - new_t);
      faster_any = faster;
    } else {
      gain = t * std::max(0.0, 1 - x.pct / 100);
    }
    sel.gain += 0.5 * gain;
  }
  double pct = c.Pct(c.PerStep(sel.time));
  if (pct < 30) return;
  double share = PathShare(c, sel);
  Finding f;
  f.category = "compute_bound";
  f.title = fmt::format("{:.0f}% of the step is ops running near the compute roof ({})", pct, r.RoofOf(r.primary)->name);
  f.evidence = fmt::format("{} per step in compute-bound ops at >= 50% of their roof on {} (peaks: {}); ridge point "
                           "{:.1f} FLOP/byte. Top: ",
                           Ms(c.PerStep(sel.time)), r.device, r.source, r.RoofOf(r.primary)->ridge());
  f.evidence += TopOps(c, r, sel, &f.involved) + ".";
  f.metrics = {{"compute_bound_ns_per_step", c.PerStep(sel.time)}, {"critical_path_share", share}};
  c.Replayed(&f, ScaleSelected(c, sel, std::make_shared<std::set<int32_t>>()));
  if (faster_any)
    f.suggestion = fmt::format("These ops are limited by arithmetic, not memory: run them on the {} roof ({}): enable "
                               "TF32 (torch.backends.cuda.matmul.allow_tf32 = True) or autocast to bf16/fp16 "
                               "(torch.autocast), keep matrix dimensions multiples of 8 so tensor cores are used, or "
                               "reduce the FLOPs (smaller or pruned layers).",
                               faster_any->name, Flops(faster_any->peak_flops));
  else
    f.suggestion = "These ops are limited by arithmetic, not memory: reduce their FLOPs (smaller or factorized layers, "
                   "fewer channels, pruning), use lower precision where the hardware has faster units for it, or use "
                   "more cores/threads (torch.set_num_threads) on the CPU.";
  out->push_back(std::move(f));
}

void MemoryBound(FindingsContext& c, std::vector<Finding>* out) {
  RooflineResult r = Roofline(c.t);
  if (r.primary < 0) return;
  Selected sel;
  for (const Classified& x : InSteps(c, r)) {
    // Well left of the ridge: the op cannot use the compute units whatever its kernel does.
    if (x.intensity >= 0.5 * x.roof->ridge()) continue;
    double t = static_cast<double>(x.item->time_ns);
    sel.items.push_back(x.item);
    sel.time += t;
    sel.gain += 0.5 * t * std::max(0.0, 1 - x.pct / 100);
  }
  double pct = c.Pct(c.PerStep(sel.time));
  if (pct < 30) return;
  double share = PathShare(c, sel);
  const Roof* roof = r.RoofOf(r.primary);
  Finding f;
  f.category = "memory_bound";
  f.title = fmt::format("{:.0f}% of the step is memory-bound ops of low arithmetic intensity", pct);
  f.evidence = fmt::format("{} per step in ops below half the ridge point ({:.1f} FLOP/byte on {}, {} of memory "
                           "bandwidth; peaks: {}). Top: ",
                           Ms(c.PerStep(sel.time)), roof->ridge(), r.device,
                           fmt::format("{:.0f} GB/s", roof->bandwidth / 1e9), r.source);
  f.evidence += TopOps(c, r, sel, &f.involved) + ".";
  f.metrics = {{"memory_bound_ns_per_step", c.PerStep(sel.time)}, {"critical_path_share", share}};
  c.Replayed(&f, ScaleSelected(c, sel, std::make_shared<std::set<int32_t>>()));
  f.suggestion = "These ops move more bytes than they compute on: fuse chains of elementwise/normalization ops "
                 "(torch.compile, fused optimizers such as foreach/fused=True, fused attention), raise the batch size "
                 "so weights are reused, and keep tensors contiguous in the layout the kernels expect "
                 "(channels_last for convolutions) to avoid copies.";
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

#include "analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>

#include "analysis/critical_path.h"
#include "analysis/summary.h"

namespace strata::analysis {
namespace {

using Key = std::pair<std::string, std::string>;  // kind, name

struct Side {
  uint64_t steps = 0;
  double step_ns = 0;
  bool used_steps = true;
  std::map<Key, double> path;  // mean ns per step on the critical path
  std::map<Key, double> scopes;  // the same time, rolled up into innermost module/span scopes
  std::map<Key, double> self;  // mean self ns per step
};

Side Measure(const model::Trace& t, const DiffOptions& opt) {
  Side s;
  CriticalPathOptions cpo;
  cpo.max_steps = 1u << 30;  // subsample after skipping warm-up below
  std::vector<StepCriticalPath> paths = CriticalPaths(t, cpo);
  s.used_steps = !paths.empty() && paths[0].step_slice != model::kNone;
  size_t skip = paths.size() >= 3 ? std::min(opt.skip_steps, paths.size() - 1) : 0;
  paths.erase(paths.begin(), paths.begin() + static_cast<ptrdiff_t>(skip));
  if (paths.size() > opt.max_steps) {
    std::vector<StepCriticalPath> sampled;
    for (size_t k : EvenlySpread(paths.size(), opt.max_steps)) sampled.push_back(std::move(paths[k]));
    paths.swap(sampled);
  }
  s.steps = paths.size();
  if (paths.empty()) return s;
  double n = static_cast<double>(paths.size());
  for (const auto& p : paths) {
    s.step_ns += static_cast<double>(p.end - p.start) / n;
    for (const auto& it : p.items) s.path[{it.kind, it.name}] += static_cast<double>(it.on_path_ns) / n;
  }
  // Scopes: path time inside a module or span (innermost, the slice itself
  // included; backward nodes inside their forward op's scope) goes to that scope; the rest keeps its path item. A change spread
  // over many small ops of one module (a Python loop of tiny ops) is then one
  // item, as a user would name it.
  std::map<Key, double> scoped_items;  // path items' time that went to a scope
  const auto& sl = t.slices;
  for (const auto& p : paths) {
    for (const auto& g : p.segments) {
      if (g.slice == model::kNone) continue;
      // Up to the innermost module or span; a backward node continues from the
      // forward op that created it, so a module's backward counts with it.
      int32_t scope = g.slice;
      while (scope != model::kNone && sl.kind[static_cast<size_t>(scope)] != model::SliceKind::kModule &&
             sl.kind[static_cast<size_t>(scope)] != model::SliceKind::kSpan) {
        int32_t row = t.OpRow(static_cast<uint32_t>(scope));
        int32_t fwd = row == model::kNone ? model::kNone : t.ops.forward[static_cast<size_t>(row)];
        scope = fwd != model::kNone ? fwd : sl.parent[static_cast<size_t>(scope)];
      }
      if (scope == model::kNone) continue;
      double ns = static_cast<double>(g.end - g.start) / n;
      size_t sc = static_cast<size_t>(scope);
      s.scopes[{model::SliceKindName(sl.kind[sc]), std::string(t.strings.Get(sl.name[sc]))}] += ns;
      // The path item this segment was counted in (named as CriticalPaths names it).
      std::string name(t.strings.Get(sl.name[static_cast<size_t>(g.slice)]));
      if (g.type == SegmentType::kWait) scoped_items[{"wait", "in " + name}] += ns;
      else scoped_items[{model::SliceKindName(sl.kind[static_cast<size_t>(g.slice)]), name}] += ns;
    }
  }
  for (const auto& [k, v] : s.path) {
    double rest = v - (scoped_items.count(k) ? scoped_items[k] : 0.0);
    if (rest > 0.5) s.scopes[k] += rest;  // (less than a ns: rounding)
  }
  // Self time of host slices and time of device slices inside the measured steps.
  model::Column<int64_t> self = SelfTimes(t);
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (const auto& p : paths) windows.emplace_back(p.start, p.end);
  std::sort(windows.begin(), windows.end());
  for (size_t i = 0; i < sl.size(); ++i) {
    if (sl.kind[i] == model::SliceKind::kStep || sl.kind[i] == model::SliceKind::kAnnotation) continue;
    // Inside a measured step? (windows are sorted and disjoint for one step thread)
    auto it = std::upper_bound(windows.begin(), windows.end(), std::make_pair(sl.ts[i], INT64_MAX));
    if (it == windows.begin() || sl.ts[i] >= std::prev(it)->second) continue;
    s.self[{model::SliceKindName(sl.kind[i]), std::string(t.strings.Get(sl.name[i]))}] +=
        static_cast<double>(self[i]) / n;
  }
  return s;
}

std::vector<DiffItem> Compare(const std::map<Key, double>& a, const std::map<Key, double>& b, double step_delta) {
  std::map<Key, std::pair<double, double>> both;
  for (auto& [k, v] : a) both[k].first = v;
  for (auto& [k, v] : b) both[k].second = v;
  std::vector<DiffItem> out;
  for (auto& [k, v] : both) {
    DiffItem d;
    d.kind = k.first;
    d.name = k.second;
    d.a_ns = v.first;
    d.b_ns = v.second;
    d.delta_ns = v.second - v.first;
    d.share_of_change = step_delta != 0 ? d.delta_ns / step_delta : 0;
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const DiffItem& x, const DiffItem& y) {
    return std::fabs(x.delta_ns) > std::fabs(y.delta_ns);
  });
  return out;
}

}  // namespace

TraceDiff Diff(const model::Trace& a, const model::Trace& b, const DiffOptions& opt) {
  TraceDiff d;
  Side sa = Measure(a, opt), sb = Measure(b, opt);
  d.a_steps = sa.steps;
  d.b_steps = sb.steps;
  d.used_steps = sa.used_steps && sb.used_steps;
  d.a_step_ns = sa.step_ns;
  d.b_step_ns = sb.step_ns;
  d.step_delta_ns = sb.step_ns - sa.step_ns;
  d.step_delta_pct = sa.step_ns > 0 ? 100.0 * d.step_delta_ns / sa.step_ns : 0;
  d.critical_path = Compare(sa.path, sb.path, d.step_delta_ns);
  d.self_time = Compare(sa.self, sb.self, d.step_delta_ns);
  d.scopes = Compare(sa.scopes, sb.scopes, d.step_delta_ns);
  // Explained: the top 3 items' changes in the direction of the step's change,
  // in the view (ops and waits, or scopes) that explains more.
  auto top3 = [](const std::vector<DiffItem>& v) {
    double e = 0;
    for (size_t i = 0; i < v.size() && i < 3; ++i) e += v[i].share_of_change;
    return e;
  };
  d.top3_path_explained = top3(d.critical_path);
  d.top3_scopes_explained = top3(d.scopes);
  d.top3_explained = std::max(d.top3_path_explained, d.top3_scopes_explained);
  return d;
}

}  // namespace strata::analysis

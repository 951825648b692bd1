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
    for (size_t k = 0; k < opt.max_steps; ++k) sampled.push_back(std::move(paths[k * paths.size() / opt.max_steps]));
    paths.swap(sampled);
  }
  s.steps = paths.size();
  if (paths.empty()) return s;
  double n = static_cast<double>(paths.size());
  for (const auto& p : paths) {
    s.step_ns += static_cast<double>(p.end - p.start) / n;
    for (const auto& it : p.items) s.path[{it.kind, it.name}] += static_cast<double>(it.on_path_ns) / n;
  }
  // Self time of host slices and time of device slices inside the measured steps.
  std::vector<int64_t> self = SelfTimes(t);
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (const auto& p : paths) windows.emplace_back(p.start, p.end);
  std::sort(windows.begin(), windows.end());
  const auto& sl = t.slices;
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
  // Explained: the top 3 path items' changes in the direction of the step's change.
  double explained = 0;
  for (size_t i = 0; i < d.critical_path.size() && i < 3; ++i) explained += d.critical_path[i].share_of_change;
  d.top3_explained = explained;
  return d;
}

}  // namespace strata::analysis

#include "analysis/ops.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/summary.h"
#include "base/int_math.h"

namespace strata::analysis {

std::vector<OpStats> Ops(const model::Trace& t, const AnalysisOptions&) {
  const auto& s = t.slices;
  auto self_times = SharedSelfTimes(t);
  const model::Column<int64_t>& self = *self_times;
  std::unordered_map<model::StringId, OpStats> by;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.kind[i] != model::SliceKind::kOp) continue;
    OpStats& o = by[s.name[i]];
    ++o.count;
    o.total_ns = SatAdd(o.total_ns, s.dur[i]);
    o.self_ns = SatAdd(o.self_ns, self[i]);
    o.max_ns = std::max(o.max_ns, s.dur[i]);
  }
  std::vector<model::StringId> seen;
  for (size_t r = 0; r < t.device.size(); ++r) {
    uint32_t k = t.device.slice[r];
    model::SliceKind kind = s.kind[k];
    if (kind != model::SliceKind::kKernel && kind != model::SliceKind::kMemcpy && kind != model::SliceKind::kMemset) continue;
    int32_t l = t.device.launch[r];
    if (l == model::kNone) continue;
    seen.clear();
    bool innermost = true;
    for (int32_t p = s.parent[static_cast<size_t>(l)]; p != model::kNone; p = s.parent[static_cast<size_t>(p)]) {
      size_t pi = static_cast<size_t>(p);
      if (s.kind[pi] != model::SliceKind::kOp) continue;
      if (std::find(seen.begin(), seen.end(), s.name[pi]) != seen.end()) continue;
      seen.push_back(s.name[pi]);
      OpStats& o = by[s.name[pi]];
      o.gpu_ns = SatAdd(o.gpu_ns, s.dur[k]);
      ++o.kernels;
      if (innermost) o.gpu_self_ns = SatAdd(o.gpu_self_ns, s.dur[k]);
      innermost = false;
    }
  }
  std::vector<OpStats> out;
  out.reserve(by.size());
  for (auto& [name, o] : by) {
    o.name = std::string(t.strings.Get(name));
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(), [](const OpStats& a, const OpStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

}  // namespace strata::analysis

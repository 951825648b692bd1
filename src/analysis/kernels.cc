#include "analysis/kernels.h"

#include <algorithm>
#include <map>

#include "base/int_math.h"

namespace strata::analysis {

KernelSummary Kernels(const model::Trace& t, const AnalysisOptions& opt) { return Kernels(t, CollectGpuWork(t, opt)); }

KernelSummary Kernels(const model::Trace& t, const GpuWorkSet& ws) {
  KernelSummary out;
  std::vector<const GpuGroup*> groups;
  for (const auto& g : ws.groups) groups.push_back(&g);
  std::vector<int64_t> kernel_durs;
  static constexpr int64_t kEdges[] = {1000, 10000, 100000, 1000000, 10000000, INT64_MAX};
  for (int64_t e : kEdges) out.histogram.push_back({e, 0, 0});
  std::map<std::pair<int, model::StringId>, std::vector<int64_t>> durs;
  for (const GpuGroup* g : groups)
    for (const GpuWork& w : g->work) {
      int64_t d = w.end - w.ts;
      out.gpu_time_ns = SatAdd(out.gpu_time_ns, d);
      if (w.type == WorkType::kOther) continue;
      durs[{static_cast<int>(w.type), t.slices.name[w.slice]}].push_back(d);
      if (w.type == WorkType::kCompute || w.type == WorkType::kCommunication) {
        kernel_durs.push_back(d);
        for (auto& b : out.histogram)
          if (d < b.upper_ns || b.upper_ns == INT64_MAX) {
            ++b.count;
            b.total_ns = SatAdd(b.total_ns, d);
            break;
          }
      }
    }
  out.kernels = kernel_durs.size();
  out.duration = Distribute(std::move(kernel_durs));
  for (auto& [key, v] : durs) {
    KernelRow r;
    r.type = static_cast<WorkType>(key.first);
    r.name = std::string(t.strings.Get(key.second));
    r.count = v.size();
    for (int64_t d : v) r.total_ns = SatAdd(r.total_ns, d);
    r.pct_gpu_time = out.gpu_time_ns > 0 ? 100.0 * static_cast<double>(r.total_ns) / static_cast<double>(out.gpu_time_ns) : 0;
    r.duration = Distribute(std::move(v));
    out.rows.push_back(std::move(r));
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

LaunchStats Launches(const model::Trace& t, const AnalysisOptions& opt) {
  LaunchStats out;
  const auto& s = t.slices;
  const auto& d = t.device;
  struct Acc {
    std::vector<int64_t> cpu, delay, start;
  };
  std::map<model::StringId, Acc> by;
  std::vector<int64_t> cpu_all, delay_all;
  for (size_t r = 0; r < d.size(); ++r) {
    uint32_t i = d.slice[r];
    model::SliceKind k = s.kind[i];
    if (k != model::SliceKind::kKernel && k != model::SliceKind::kMemcpy && k != model::SliceKind::kMemset) continue;
    int32_t l = d.launch[r];
    if (l == model::kNone) {
      ++out.unlinked;
      continue;
    }
    size_t li = static_cast<size_t>(l);
    int64_t cpu = s.dur[li];
    int64_t delay = std::max<int64_t>(0, s.ts[i] - (s.ts[li] + s.dur[li]));
    Acc& a = by[s.name[li]];
    a.cpu.push_back(cpu);
    a.delay.push_back(delay);
    a.start.push_back(s.ts[i] - s.ts[li]);
    cpu_all.push_back(cpu);
    delay_all.push_back(delay);
    ++out.launches;
    if (k == model::SliceKind::kKernel && cpu <= opt.launch_cpu_cutoff_ns && s.dur[i] < cpu) ++out.short_kernels;
    if (cpu > opt.launch_cpu_cutoff_ns) ++out.slow_launches;
    if (delay > opt.launch_delay_cutoff_ns) ++out.late_starts;
  }
  out.cpu_ns = Distribute(std::move(cpu_all));
  out.delay_ns = Distribute(std::move(delay_all));
  for (auto& [name, a] : by) {
    LaunchApiStats st;
    st.name = std::string(t.strings.Get(name));
    st.launches = a.cpu.size();
    st.cpu_ns = Distribute(std::move(a.cpu));
    st.delay_ns = Distribute(std::move(a.delay));
    st.start_ns = Distribute(std::move(a.start));
    out.by_api.push_back(std::move(st));
  }
  std::sort(out.by_api.begin(), out.by_api.end(), [](const LaunchApiStats& a, const LaunchApiStats& b) {
    return a.launches != b.launches ? a.launches > b.launches : a.name < b.name;
  });
  return out;
}

int32_t EnclosingOp(const model::Trace& t, int32_t slice) {
  for (int32_t p = slice; p != model::kNone; p = t.slices.parent[static_cast<size_t>(p)])
    if (t.slices.kind[static_cast<size_t>(p)] == model::SliceKind::kOp) return p;
  return model::kNone;
}

std::vector<OpKernelRow> KernelsByOp(const model::Trace& t, const AnalysisOptions& opt) {
  return KernelsByOp(t, CollectGpuWork(t, opt));
}

std::vector<OpKernelRow> KernelsByOp(const model::Trace& t, const GpuWorkSet& ws) {
  std::map<std::pair<model::StringId, model::StringId>, OpKernelRow> by;
  model::StringId no_op = model::StringPool::kNotFound;
  for (const auto& g : ws.groups)
    for (const GpuWork& w : g.work) {
      if (w.type == WorkType::kOther) continue;
      int32_t op = w.launch_slice == model::kNone ? model::kNone : EnclosingOp(t, w.launch_slice);
      model::StringId opname = op == model::kNone ? no_op : t.slices.name[static_cast<size_t>(op)];
      OpKernelRow& r = by[{opname, t.slices.name[w.slice]}];
      ++r.count;
      r.total_ns = SatAdd(r.total_ns, w.end - w.ts);
    }
  std::vector<OpKernelRow> out;
  for (auto& [key, r] : by) {
    r.op = key.first == no_op ? "(no op)" : std::string(t.strings.Get(key.first));
    r.kernel = std::string(t.strings.Get(key.second));
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const OpKernelRow& a, const OpKernelRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.op < b.op;
  });
  return out;
}

}  // namespace strata::analysis

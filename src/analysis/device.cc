#include "analysis/device.h"

#include <algorithm>
#include <map>
#include <utility>

namespace strata::analysis {

using model::SliceKind;

std::string DeviceLabel(const model::Trace& t, int32_t device) {
  for (const model::Device& d : t.devices)
    if (d.id == device) {
      std::string s = "device " + std::to_string(device) + " (" + d.name;
      if (!d.api.empty()) s += ", " + d.api;
      return s + ")";
    }
  return "device " + std::to_string(device);
}

namespace {

bool IsWork(SliceKind k) {
  return k == SliceKind::kKernel || k == SliceKind::kMemcpy || k == SliceKind::kMemset || k == SliceKind::kOther;
}

}  // namespace

std::vector<DeviceUsage> DeviceUsages(const model::Trace& t) {
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> intervals;
  std::map<int32_t, DeviceUsage> by;
  for (size_t r = 0; r < t.device.size(); ++r) {
    uint32_t s = t.device.slice[r];
    SliceKind k = t.slices.kind[s];
    int32_t dev = t.device.device[r];
    DeviceUsage& u = by[dev];
    int64_t d = t.slices.dur[s];
    switch (k) {
      case SliceKind::kKernel: ++u.kernels, u.kernel_ns += d; break;
      case SliceKind::kMemcpy: ++u.copies, u.copy_ns += d; break;
      case SliceKind::kMemset: ++u.fills, u.fill_ns += d; break;
      case SliceKind::kOther: ++u.other; break;
      default: break;
    }
    if (IsWork(k)) intervals[dev].emplace_back(t.slices.ts[s], t.slices.ts[s] + d);
  }
  std::vector<DeviceUsage> out;
  for (auto& [dev, u] : by) {
    u.device = dev;
    u.label = DeviceLabel(t, dev);
    auto& iv = intervals[dev];
    std::sort(iv.begin(), iv.end());
    int64_t cur_b = 0, cur_e = 0;
    bool open = false;
    for (const auto& [b, e] : iv) {
      if (!open) {
        u.first_ns = b;
        cur_b = b;
        cur_e = e;
        open = true;
      } else if (b > cur_e) {
        u.busy_ns += cur_e - cur_b;
        cur_b = b;
        cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
      u.last_ns = std::max(u.last_ns, e);
    }
    if (open) u.busy_ns += cur_e - cur_b;
    u.idle_ns = std::max<int64_t>(0, (u.last_ns - u.first_ns) - u.busy_ns);
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<KernelStats> KernelsByTime(const model::Trace& t) {
  std::map<std::pair<int32_t, model::StringId>, KernelStats> by;
  for (size_t r = 0; r < t.device.size(); ++r) {
    uint32_t s = t.device.slice[r];
    if (t.slices.kind[s] != SliceKind::kKernel) continue;
    KernelStats& k = by[{t.device.device[r], t.slices.name[s]}];
    int64_t d = t.slices.dur[s];
    k.min_ns = k.count == 0 ? d : std::min(k.min_ns, d);
    k.max_ns = std::max(k.max_ns, d);
    ++k.count;
    k.total_ns += d;
  }
  std::vector<KernelStats> out;
  for (auto& [key, k] : by) {
    k.device = key.first;
    k.name = std::string(t.strings.Get(key.second));
    k.mean_ns = static_cast<double>(k.total_ns) / static_cast<double>(k.count);
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
    if (a.device != b.device) return a.device < b.device;
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.name < b.name;
  });
  return out;
}

std::vector<TransferStats> Transfers(const model::Trace& t) {
  std::map<std::pair<int32_t, model::CopyKind>, TransferStats> by;
  for (size_t r = 0; r < t.device.size(); ++r) {
    uint32_t s = t.device.slice[r];
    if (t.slices.kind[s] != SliceKind::kMemcpy) continue;
    TransferStats& x = by[{t.device.device[r], t.device.copy_kind[r]}];
    ++x.count;
    x.bytes += t.device.bytes[r];
    x.total_ns += t.slices.dur[s];
    if (t.device.pinned[r] == 1) ++x.pinned;
    if (t.device.pinned[r] == 0) ++x.pageable;
  }
  std::vector<TransferStats> out;
  for (auto& [key, x] : by) {
    x.device = key.first;
    x.kind = key.second;
    x.bandwidth = x.total_ns > 0 ? static_cast<double>(x.bytes) * 1e9 / static_cast<double>(x.total_ns) : 0;
    out.push_back(x);
  }
  return out;
}

std::vector<LaunchLatency> LaunchLatencies(const model::Trace& t) {
  std::map<model::StringId, std::pair<std::vector<int64_t>, std::vector<int64_t>>> by;
  for (size_t r = 0; r < t.device.size(); ++r) {
    int32_t l = t.device.launch[r];
    if (l == model::kNone) continue;
    auto api = static_cast<size_t>(l);
    uint32_t s = t.device.slice[r];
    auto& v = by[t.slices.name[api]];
    v.first.push_back(t.slices.ts[s] - t.slices.ts[api]);
    v.second.push_back(t.slices.dur[api]);
  }
  std::vector<LaunchLatency> out;
  for (auto& [name, v] : by)
    out.push_back({std::string(t.strings.Get(name)), Distribute(std::move(v.first)), Distribute(std::move(v.second))});
  std::sort(out.begin(), out.end(), [](const LaunchLatency& a, const LaunchLatency& b) {
    if (a.latency.count != b.latency.count) return a.latency.count > b.latency.count;
    return a.api < b.api;
  });
  return out;
}

}  // namespace strata::analysis

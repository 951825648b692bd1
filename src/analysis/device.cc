#include "analysis/device.h"

#include <algorithm>
#include <map>
#include <utility>

#include "base/int_math.h"

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
  struct Span {
    int64_t first, second;
    bool operator<(const Span& o) const { return first != o.first ? first < o.first : second < o.second; }
  };
  std::map<int32_t, model::Column<Span>> intervals;  // columns: spill past the memory budget
  std::map<int32_t, DeviceUsage> by;
  for (size_t r = 0; r < t.device.size(); ++r) {
    uint32_t s = t.device.slice[r];
    SliceKind k = t.slices.kind[s];
    int32_t dev = t.device.device[r];
    DeviceUsage& u = by[dev];
    int64_t d = t.slices.dur[s];
    switch (k) {
      case SliceKind::kKernel: ++u.kernels, u.kernel_ns = SatAdd(u.kernel_ns, d); break;
      case SliceKind::kMemcpy: ++u.copies, u.copy_ns = SatAdd(u.copy_ns, d); break;
      case SliceKind::kMemset: ++u.fills, u.fill_ns = SatAdd(u.fill_ns, d); break;
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
        u.busy_ns = SatAdd(u.busy_ns, cur_e - cur_b);
        cur_b = b;
        cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
      u.last_ns = std::max(u.last_ns, e);
    }
    if (open) u.busy_ns = SatAdd(u.busy_ns, cur_e - cur_b);
    u.idle_ns = std::max<int64_t>(0, (u.last_ns - u.first_ns) - u.busy_ns);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace strata::analysis

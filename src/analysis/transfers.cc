#include "analysis/transfers.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "base/int_math.h"

namespace strata::analysis {

TransferSummary Transfers(const model::Trace& t) {
  TransferSummary out;
  std::map<std::tuple<int, int, int>, TransferRow> by;
  for (size_t r = 0; r < t.device.size(); ++r) {
    uint32_t i = t.device.slice[r];
    model::SliceKind k = t.slices.kind[i];
    if (k != model::SliceKind::kMemcpy && k != model::SliceKind::kMemset) continue;
    bool copy = k == model::SliceKind::kMemcpy;
    int dir = copy ? static_cast<int>(t.device.copy_kind[r]) : -1;
    int pinned = copy ? t.device.pinned[r] : -1;
    TransferRow& row = by[{copy ? 0 : 1, dir, pinned}];
    int64_t dur = t.slices.dur[i];
    uint64_t bytes = t.device.bytes[r];
    ++row.count;
    row.bytes += bytes;
    row.busy_ns = SatAdd(row.busy_ns, dur);
    if (dur > 0) row.max_gbps = std::max(row.max_gbps, static_cast<double>(bytes) / static_cast<double>(dur));
    ++out.count;
    out.bytes += bytes;
    out.busy_ns = SatAdd(out.busy_ns, dur);
  }
  for (auto& [key, row] : by) {
    auto [kind, dir, pinned] = key;
    row.kind = kind == 0 ? "memcpy" : "memset";
    row.direction = kind == 0 ? model::CopyKindName(static_cast<model::CopyKind>(dir)) : "";
    row.host_memory = pinned == 1 ? "pinned" : pinned == 0 ? "pageable" : "";
    row.gbps = row.busy_ns > 0 ? static_cast<double>(row.bytes) / static_cast<double>(row.busy_ns) : 0;
    out.rows.push_back(row);
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const TransferRow& a, const TransferRow& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.count > b.count;
  });
  return out;
}

}  // namespace strata::analysis

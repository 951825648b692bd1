#include "importers/os_tables_sort.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace strata::importers {
namespace {

template <typename C>
void Permute(C& v, const std::vector<uint32_t>& order) {
  C out;
  out.reserve(v.size());
  for (uint32_t i : order) out.push_back(v[i]);
  v.swap(out);
}

template <typename Table>
std::vector<uint32_t> ByTrackTime(const Table& tb) {
  std::vector<uint32_t> order(tb.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&tb](uint32_t a, uint32_t b) {
    return tb.track[a] != tb.track[b] ? tb.track[a] < tb.track[b] : tb.ts[a] < tb.ts[b];
  });
  return order;
}

// Every column of the table in `order` (model/columns.h lists them).
template <typename Table>
void PermuteRows(Table& tb, const std::vector<uint32_t>& order) {
  tb.ForEachColumn([&order](const char*, auto& column) { Permute(column, order); });
}

}  // namespace

void SortOsTables(model::Trace& t) {
  auto& sc = t.syscalls;
  std::vector<uint32_t> so = ByTrackTime(sc);
  std::vector<int32_t> new_row(so.size());
  for (uint32_t i = 0; i < so.size(); ++i) new_row[so[i]] = static_cast<int32_t>(i);
  PermuteRows(sc, so);
  auto& ts = t.thread_states;
  for (auto& r : ts.syscall)
    if (r >= 0) r = new_row[static_cast<size_t>(r)];
  PermuteRows(ts, ByTrackTime(ts));
  auto& cs = t.cpu_samples;
  PermuteRows(cs, ByTrackTime(cs));
}

}  // namespace strata::importers

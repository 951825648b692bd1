#include "importers/common/op_collectives.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::importers {

std::string_view TfCollectiveKind(std::string_view op) {
  // The op's type: the last path component, without an output index.
  size_t slash = op.rfind('/');
  if (slash != std::string_view::npos) op = op.substr(slash + 1);
  size_t colon = op.find(':');
  if (colon != std::string_view::npos) op = op.substr(0, colon);
  static constexpr std::pair<std::string_view, std::string_view> kKinds[] = {
      {"CollectiveReduce", "all_reduce"},         {"CollectiveReduceV2", "all_reduce"},
      {"CollectiveReduceV3", "all_reduce"},       {"NcclAllReduce", "all_reduce"},
      {"CollectiveGather", "all_gather"},         {"CollectiveGatherV2", "all_gather"},
      {"CollectiveReduceScatterV2", "reduce_scatter"},
      {"CollectiveBcastSend", "broadcast"},       {"CollectiveBcastSendV2", "broadcast"},
      {"CollectiveBcastRecv", "broadcast"},       {"CollectiveBcastRecvV2", "broadcast"},
      {"CollectiveAllToAllV2", "all_to_all"},     {"CollectiveAllToAllV3", "all_to_all"},
  };
  for (const auto& [type, kind] : kKinds)
    if (op == type) return kind;
  return {};
}

size_t AddOpCollectives(model::Trace& t) {
  model::CollectiveTable& c = t.collectives;
  std::vector<bool> has_rows(t.processes.size(), false);
  for (size_t i = 0; i < c.size(); ++i)
    if (c.process[i] < has_rows.size()) has_rows[c.process[i]] = true;
  // Names first: few distinct strings, many slices.
  const size_t names = t.strings.size();  // (the kinds' names are added to the pool below)
  std::vector<model::StringId> kind_of(names, 0);
  bool any = false;
  for (size_t i = 1; i < names; ++i) {
    std::string_view k = TfCollectiveKind(t.strings.Get(static_cast<model::StringId>(i)));
    if (!k.empty()) {
      kind_of[i] = t.strings.Intern("tf:" + std::string(k));
      any = true;
    }
  }
  if (!any) return 0;
  struct Row {
    uint32_t process;
    int64_t ts;
    size_t slice;
  };
  std::vector<Row> rows;
  const model::SliceTable& s = t.slices;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.kind[i] != model::SliceKind::kOp || s.name[i] >= kind_of.size() || kind_of[s.name[i]] == 0) continue;
    if (s.track[i] >= t.tracks.size()) continue;
    uint32_t p = t.tracks[s.track[i]].process;
    if (p >= t.processes.size() || has_rows[p]) continue;
    rows.push_back({p, s.ts[i], i});
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.process != b.process ? a.process < b.process : a.ts < b.ts; });
  uint64_t seq = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    if (k == 0 || rows[k].process != rows[k - 1].process) seq = 0;
    size_t i = rows[k].slice;
    int32_t op = t.OpRow(static_cast<uint32_t>(i));
    c.process.push_back(rows[k].process);
    c.name.push_back(kind_of[s.name[i]]);
    c.seq.push_back(seq++);
    c.ts.push_back(s.ts[i]);
    c.dur.push_back(s.dur[i]);
    c.track.push_back(s.track[i]);
    c.end_track.push_back(s.track[i]);
    c.bytes.push_back(op >= 0 && t.ops.bytes[static_cast<size_t>(op)] > 0 ? t.ops.bytes[static_cast<size_t>(op)] : 0);
    c.tensors.push_back(1);
  }
  // Sorted by (process, seq) with the rows of other sources.
  if (!rows.empty() && rows.size() != c.size()) SortCollectives(c);
  return rows.size();
}

void SortCollectives(model::CollectiveTable& c) {
  std::vector<size_t> order(c.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&c](size_t a, size_t b) {
    return c.process[a] != c.process[b] ? c.process[a] < c.process[b] : c.seq[a] < c.seq[b];
  });
  c.ForEachColumn([&order](const char*, auto& column) {
    std::decay_t<decltype(column)> out;
    out.reserve(column.size());
    for (size_t i : order) out.push_back(column[i]);
    column.swap(out);
  });
}

}  // namespace strata::importers

#include "analysis/collective_match.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

namespace strata::analysis {

CollectiveInstances MatchCollectives(const model::CollectiveTable& c) {
  CollectiveInstances out;
  std::vector<uint32_t> occurrence(c.size());
  {
    std::map<std::pair<uint32_t, model::StringId>, uint32_t> seen;  // few keys: processes x kinds
    std::vector<size_t> by_seq(c.size());
    for (size_t i = 0; i < by_seq.size(); ++i) by_seq[i] = i;
    std::stable_sort(by_seq.begin(), by_seq.end(), [&c](size_t a, size_t b) {
      return c.process[a] != c.process[b] ? c.process[a] < c.process[b] : c.seq[a] < c.seq[b];
    });
    for (size_t i : by_seq) occurrence[i] = seen[{c.process[i], c.name[i]}]++;
  }
  out.rows.resize(c.size());
  for (size_t i = 0; i < out.rows.size(); ++i) out.rows[i] = i;
  std::sort(out.rows.begin(), out.rows.end(), [&](size_t a, size_t b) {
    return std::tie(c.name[a], occurrence[a], c.process[a]) < std::tie(c.name[b], occurrence[b], c.process[b]);
  });
  for (size_t g = 0; g < out.rows.size(); ++g)
    if (g == 0 || c.name[out.rows[g]] != c.name[out.rows[g - 1]] ||
        occurrence[out.rows[g]] != occurrence[out.rows[g - 1]])
      out.starts.push_back(g);
  out.starts.push_back(out.rows.size());
  return out;
}

CollectiveInstances MatchCollectivesByTime(const model::CollectiveTable& c) {
  CollectiveInstances out;
  std::vector<size_t> order(c.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&c](size_t a, size_t b) {
    return c.name[a] != c.name[b] ? c.name[a] < c.name[b] : c.ts[a] < c.ts[b];
  });
  auto end_of = [&c](size_t i) { return c.dur[i] >= 0 ? c.ts[i] + c.dur[i] : INT64_MAX; };
  std::vector<size_t> group;
  int64_t min_end = INT64_MAX;
  auto close = [&] {
    if (group.empty()) return;
    std::sort(group.begin(), group.end(), [&c](size_t a, size_t b) { return c.process[a] < c.process[b]; });
    out.starts.push_back(out.rows.size());
    out.rows.insert(out.rows.end(), group.begin(), group.end());
    group.clear();
    min_end = INT64_MAX;
  };
  for (size_t i : order) {
    bool joins = !group.empty() && c.name[group.front()] == c.name[i] && c.ts[i] <= min_end &&
                 std::none_of(group.begin(), group.end(), [&](size_t g) { return c.process[g] == c.process[i]; });
    if (!joins) close();
    group.push_back(i);
    min_end = std::min(min_end, end_of(i));
  }
  close();
  out.starts.push_back(out.rows.size());
  return out;
}

MatchCheck CheckInstances(const CollectiveInstances& inst, const model::CollectiveTable& c,
                          const model::StringPool& names, size_t processes, int64_t tolerance_ns) {
  MatchCheck m;
  std::map<model::StringId, bool> sync;
  for (size_t g = 0; g < inst.size(); ++g) {
    if (inst.end_of(g) - inst.begin_of(g) != processes) continue;
    const model::StringId name = c.name[inst.rows[inst.begin_of(g)]];
    auto [it, added] = sync.emplace(name, false);
    if (added) it->second = IsSynchronizingCollective(names.Get(name));
    if (!it->second) continue;
    int64_t last_begin = INT64_MIN, first_end = INT64_MAX;
    bool ended = true;
    for (size_t j = inst.begin_of(g); j < inst.end_of(g); ++j) {
      size_t r = inst.rows[j];
      last_begin = std::max(last_begin, c.ts[r]);
      if (c.dur[r] < 0) ended = false;
      else first_end = std::min(first_end, c.ts[r] + c.dur[r]);
    }
    if (!ended) continue;
    ++m.checked;
    if (last_begin > first_end && last_begin - first_end > tolerance_ns) ++m.apart;
  }
  return m;
}

bool IsSynchronizingCollective(std::string_view name) {
  std::string n(name);
  for (char& ch : n) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  for (const char* all : {"all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter", "reducescatter",
                          "all_to_all", "alltoall", "barrier"})
    if (n.find(all) != std::string::npos) return true;
  return false;
}

bool IsPointToPoint(std::string_view name) {
  return name.find("send") != std::string_view::npos || name.find("recv") != std::string_view::npos;
}

}  // namespace strata::analysis

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

// Per-(key, name) accumulators for the tables a report sums over every slice
// (spans by kind and name, framework ops by scope and name): the row is found
// through the name id in one array lookup (a name nearly always comes with
// one key; others go to a map), not by a tree search per slice.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

template <class V>
class NameSlots {
 public:
  struct Row {
    int key;
    model::StringId name;
    V value;
  };

  // `names`: the trace's string count (ids are below it).
  explicit NameSlots(size_t names) : first_(names, -1) {}

  V& operator()(int key, model::StringId name) {
    int32_t& f = first_[name];
    if (f < 0) {
      f = static_cast<int32_t>(rows_.size());
      return rows_.emplace_back(Row{key, name, V{}}).value;
    }
    if (rows_[static_cast<size_t>(f)].key == key) return rows_[static_cast<size_t>(f)].value;
    auto [it, fresh] = more_.try_emplace({key, name}, static_cast<int32_t>(rows_.size()));
    if (fresh) rows_.push_back(Row{key, name, V{}});
    return rows_[static_cast<size_t>(it->second)].value;
  }

  // The rows in (key, name) order: the order a std::map of them iterates in.
  std::vector<Row> Sorted() && {
    std::sort(rows_.begin(), rows_.end(),
              [](const Row& a, const Row& b) { return a.key != b.key ? a.key < b.key : a.name < b.name; });
    return std::move(rows_);
  }

 private:
  std::vector<int32_t> first_;
  std::vector<Row> rows_;
  std::map<std::pair<int, model::StringId>, int32_t> more_;
};

}  // namespace strata::analysis

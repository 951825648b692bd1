// What each name of a trace is, classified once per name instead of once per
// slice: the step breakdown, the critical path, the replay and the findings
// ask whether a slice is data loading, a sync, a copy, ... by its name, over
// every slice of every step; a string search per slice was a tenth of a
// report's time. The classes come from the name predicates of
// step_breakdown.h (and the critical path's wider idea of a wait).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

enum NameClass : uint16_t {
  kNameDataLoading = 1 << 0,  // IsDataLoadingName
  kNameGraphRun = 1 << 1,     // IsGraphRunName
  kNameSync = 1 << 2,         // IsSyncName
  kNameDeviceRead = 1 << 3,   // IsDeviceReadName
  kNameCopy = 1 << 4,         // IsCopyName
  kNameAllocation = 1 << 5,   // IsAllocationName
  kNamePathWait = 1 << 6,     // the critical path's waits: syncs, queue waits, signal waits
  kNameBackwardEngine = 1 << 7,  // autograd's engine running a backward node (autograd::engine::evaluate_function...)
  kNameAllocationOp = 1 << 8,    // IsAllocationOpName (memory.h): aten::empty, zeros, ...
  kNameFileIo = 1 << 9,          // IsFileIoName: torch.save
};

// Per StringId of `t`, its NameClass bits. Computed once per trace while an
// analysis::Memo of it is alive (a report), else on each call.
class NameClasses {
 public:
  explicit NameClasses(const model::Trace& t);
  uint16_t operator[](model::StringId id) const { return id < v_->size() ? (*v_)[id] : 0; }
  bool Is(model::StringId id, NameClass c) const { return ((*this)[id] & c) != 0; }
  // Whether `slice` or a slice enclosing it is of class `c` (kNone: false):
  // inside data loading, inside a sync, ...
  bool Within(const model::Trace& t, int32_t slice, NameClass c) const {
    for (int32_t p = slice; p != model::kNone; p = t.slices.parent[static_cast<size_t>(p)])
      if (Is(t.slices.name[static_cast<size_t>(p)], c)) return true;
    return false;
  }

 private:
  std::shared_ptr<const std::vector<uint16_t>> v_;
};

}  // namespace strata::analysis

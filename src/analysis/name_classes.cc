#include "analysis/name_classes.h"

#include <string_view>

#include "analysis/memo.h"
#include "analysis/memory.h"
#include "analysis/step_breakdown.h"

namespace strata::analysis {
namespace {

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::shared_ptr<const std::vector<uint16_t>> Classify(const model::Trace& t) {
  auto v = std::make_shared<std::vector<uint16_t>>(t.strings.size(), 0);
  for (size_t id = 1; id < t.strings.size(); ++id) {
    std::string_view n = t.strings.Get(static_cast<model::StringId>(id));
    uint16_t c = 0;
    if (IsDataLoadingName(n)) c |= kNameDataLoading;
    if (IsGraphRunName(n)) c |= kNameGraphRun;
    if (IsSyncName(n)) c |= kNameSync;
    if (IsDeviceReadName(n)) c |= kNameDeviceRead;
    if (IsCopyName(n)) c |= kNameCopy;
    if (IsAllocationName(n)) c |= kNameAllocation;
    if (Contains(n, "Synchronize") || Contains(n, "clFinish") || Contains(n, "clWaitForEvents") ||
        Contains(n, "signal_wait") || Contains(n, "cudaStreamWaitEvent"))
      c |= kNamePathWait;
    if (n.starts_with("autograd::engine::evaluate_function")) c |= kNameBackwardEngine;
    if (IsAllocationOpName(n)) c |= kNameAllocationOp;
    if (IsFileIoName(n)) c |= kNameFileIo;
    (*v)[id] = c;
  }
  return v;
}

}  // namespace

NameClasses::NameClasses(const model::Trace& t) {
  using Ptr = std::shared_ptr<const std::vector<uint16_t>>;
  if (Memo* m = Memo::Of(t)) v_ = m->Get<Ptr>("name_classes", [&t] { return Classify(t); });
  else v_ = Classify(t);
}

}  // namespace strata::analysis

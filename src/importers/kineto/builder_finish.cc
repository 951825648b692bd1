// The end of an import (Builder::Finish): process and thread names from
// the metadata events, launch links by correlation id, the checks over the
// whole file, NCCL collectives (comms.h), and flows bound to their slices
// once every slice is in.
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "importers/kineto/builder.h"
#include "importers/kineto/comms.h"
#include "importers/kineto/optimizer_steps.h"

namespace strata::importers::kineto {

Status Builder::Finish() {
  // Names from metadata events.
  for (auto& [pid, name] : process_names_) {
    uint32_t proc = procs_.FindProcess(pid);
    if (proc != ProcessTracker::kNotFound) t_.processes[proc].name = name;
  }
  for (auto& p : pending_thread_names_) {
    uint32_t proc = procs_.FindProcess(p.pid);
    if (proc == ProcessTracker::kNotFound) continue;
    uint32_t track = procs_.FindTrack(proc, model::TrackKind::kThread, p.tid);
    if (track != ProcessTracker::kNotFound) t_.tracks[track].name = p.name;
  }
  for (auto& p : t_.processes) p.rank = rank_;
  // Launch links by correlation id.
  if (uint64_t dups = launches_.Build())
    Count("API calls that share a correlation id with an earlier one (the last one is linked)", dups);
  size_t unlinked = 0;
  for (size_t r = 0; r < t_.device.size(); ++r) {
    uint64_t c = t_.device.correlation[r];
    if (c == 0) continue;
    int64_t call = launches_.Find(c);
    if (call >= 0) {
      t_.device.launch[r] = static_cast<int32_t>(launches_.slice(call));
      launches_.MarkLinked(call);
    }
    else if (t_.slices.kind[t_.device.slice[r]] != SliceKind::kAnnotation) ++unlinked;
  }
  if (unlinked) t_.warnings.push_back(fmt::format("{} device activities have no launching API call in the trace", unlinked));
  // Slices left open by B without E.
  for (auto& [trk, stack] : open_) {
    if (!stack.empty()) Skip("B events without a matching E (dropped)", stack.size());
  }
  // A file whose every event was skipped holds no trace: saying "0 streams"
  // and exiting 0 would pass a broken or foreign file off as an empty run.
  if (t_.events_read > 0 && skipped_ >= t_.events_read) {
    std::string why;
    size_t shown = 0;
    for (auto& [what, n] : skipped_reasons_)
      if (shown++ < 3) why += fmt::format("{}{} {}", why.empty() ? "" : ", ", n, what);
    if (shown > 3) why += fmt::format(" and {} more kinds", shown - 3);
    return Err(StatusCode::kCorrupt, "no event could be imported: all {} events in \"traceEvents\" were skipped ({})",
               t_.events_read, why);
  }
  for (auto& [what, n] : counts_) t_.warnings.push_back(fmt::format("{} {}", n, what));
  DropLinkedLaunchFlows();
  if (size_t n = AddOptimizerSteps(t_))
    t_.warnings.push_back(fmt::format("no ProfilerStep ranges: {} steps found from the optimizer steps", n));
  t_.Finalize();
  // (After Finalize: a collective is named from its launch's ancestors.)
  AddNcclCollectives(t_);
  ResolveFlows();
  return OkStatus();
}

// Launch flows (Kineto writes one per correlation id) that the correlation
// link already represents need no binding: they go, with the launch index,
// before Finalize allocates its scratch. (Most flow events are such; on a
// 1 GB trace they and the index were 100 MB of the peak, and the kernel
// zeroing fresh pages was 10-40% of the import on this VM.)
void Builder::DropLinkedLaunchFlows() {
  auto kept = std::remove_if(flows_.begin(), flows_.end(), [this](const PendingFlow& f) {
    if (!f.launch || f.corr == 0) return false;
    int64_t call = launches_.Find(f.corr);
    return call >= 0 && launches_.linked(call);
  });
  model::Column<PendingFlow>(std::span<const PendingFlow>(flows_.begin(), kept)).swap(flows_);
  launches_ = LaunchIndex();
}

void Builder::ResolveFlows() {
  // Chrome flow semantics: "s" binds to the enclosing slice, "f" to the
  // enclosing slice with bp=e, else to the next slice that starts.
  // Flow steps grouped by key, in time order, a start before other steps at
  // its time, else in file order. Sorted as 24-byte keys rather than the
  // flows themselves (sorting the 48-byte rows was 3% of an import).
  struct Order {
    uint64_t key;
    int64_t ts;
    uint32_t index;  // into flows_
    uint32_t not_start;
    bool operator<(const Order& o) const {
      if (key != o.key) return key < o.key;
      if (ts != o.ts) return ts < o.ts;
      if (not_start != o.not_start) return not_start < o.not_start;
      return index < o.index;
    }
  };
  model::Column<Order> order;
  order.resize(flows_.size());
  for (size_t i = 0; i < flows_.size(); ++i)
    order[i] = {flows_[i].key, flows_[i].ts, static_cast<uint32_t>(i), flows_[i].ph == 's' ? 0u : 1u};
  std::sort(order.begin(), order.end());
  uint64_t unresolved = 0;
  uint64_t flow_id = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && order[j].key == order[i].key) ++j;
    if (j - i < 2) {  // a lone end (Kineto writes some for calls that launched nothing)
      ++unresolved;
      i = j;
      continue;
    }
    int32_t prev = model::kNone;
    ++flow_id;
    for (size_t k = i; k < j; ++k) {
      const PendingFlow& f = flows_[order[k].index];
      uint32_t track = FlowTrack(f);
      int32_t s = track == UINT32_MAX                      ? model::kNone
                  : f.ph == 'f' && !f.bind_enclosing ? NextSliceAt(track, f.ts)
                                                     : t_.SliceAt(track, f.ts);
      if (s == model::kNone) {
        ++unresolved;
        continue;
      }
      if (f.ph != 's') {
        int32_t row = prev == model::kNone ? model::kNone : t_.device_row_of_slice[static_cast<size_t>(s)];
        if (prev == model::kNone) ++unresolved;
        else if (f.launch && row != model::kNone && t_.device.launch[static_cast<size_t>(row)] == prev) {
          // A launch flow: the correlation link already says it.
        } else t_.flows.Add(flow_id, prev, s);
      }
      prev = s;
    }
    i = j;
  }
  if (unresolved)
    t_.warnings.push_back(fmt::format("{} flow events have no partner or no slice to bind to (not imported)", unresolved));
}

// Device-side flow ends sit on (device pid, stream tid); the rest on threads.
uint32_t Builder::FlowTrack(const PendingFlow& f) const {
  if (f.numeric_pid) {
    uint32_t dev = procs_.FindDeviceProcess(f.pid);
    if (dev != ProcessTracker::kNotFound) {
      uint32_t track = procs_.FindTrack(dev, model::TrackKind::kDeviceQueue, f.tid, t_.processes[dev].device);
      if (track != ProcessTracker::kNotFound) return track;
    }
  }
  uint32_t proc = procs_.FindProcess(f.pid);
  if (proc == ProcessTracker::kNotFound) return UINT32_MAX;
  return procs_.FindTrack(proc, model::TrackKind::kThread, f.tid);
}

int32_t Builder::NextSliceAt(uint32_t track, int64_t ts) const {
  if (track >= t_.track_slices.size()) return model::kNone;
  auto [first, last] = t_.track_slices[track];
  auto it = std::lower_bound(t_.slices.ts.begin() + first, t_.slices.ts.begin() + last, ts);
  if (it == t_.slices.ts.begin() + last) return model::kNone;
  return static_cast<int32_t>(it - t_.slices.ts.begin());
}

}  // namespace strata::importers::kineto

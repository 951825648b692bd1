#include "model/trace.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <type_traits>

namespace strata::model {

StringPool::StringPool() {
  storage_.emplace_back();
  views_.push_back(storage_.back());
  ids_.emplace(views_.back(), 0);
}

void StringPool::Adopt(std::vector<std::string_view> views, std::shared_ptr<const void> owner) {
  storage_.clear();
  ids_.clear();
  views_ = std::move(views);
  if (views_.empty()) views_.emplace_back();
  owner_ = std::move(owner);
  ids_once_ = std::make_unique<std::once_flag>();
}

void StringPool::EnsureIds() const {
  if (!ids_once_) return;
  std::call_once(*ids_once_, [this] {
    ids_.reserve(views_.size());
    for (size_t i = 0; i < views_.size(); ++i) ids_.emplace(views_[i], static_cast<StringId>(i));
  });
}

StringId StringPool::Intern(std::string_view s) {
  EnsureIds();
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  storage_.emplace_back(s);
  std::string_view v = storage_.back();
  auto id = static_cast<StringId>(views_.size());
  views_.push_back(v);
  ids_.emplace(v, id);
  return id;
}

StringId StringPool::Find(std::string_view s) const {
  EnsureIds();
  auto it = ids_.find(s);
  return it == ids_.end() ? kNotFound : it->second;
}

const char* SliceKindName(SliceKind k) {
  switch (k) {
    case SliceKind::kSpan: return "span";
    case SliceKind::kStep: return "step";
    case SliceKind::kOp: return "op";
    case SliceKind::kModule: return "module";
    case SliceKind::kPython: return "python";
    case SliceKind::kRuntime: return "runtime";
    case SliceKind::kDriver: return "driver";
    case SliceKind::kKernel: return "kernel";
    case SliceKind::kMemcpy: return "memcpy";
    case SliceKind::kMemset: return "memset";
    case SliceKind::kDeviceSync: return "device_sync";
    case SliceKind::kAnnotation: return "annotation";
    case SliceKind::kOther: return "other";
  }
  return "?";
}

const char* ThreadStateName(ThreadState s) {
  switch (s) {
    case ThreadState::kRunning: return "running";
    case ThreadState::kRunnable: return "runnable";
    case ThreadState::kSleeping: return "sleeping";
    case ThreadState::kDiskSleep: return "disk_sleep";
    case ThreadState::kBlocked: return "blocked";
    case ThreadState::kStopped: return "stopped";
    case ThreadState::kUnknown: return "unknown";
  }
  return "?";
}

const char* FrameKindName(FrameKind k) {
  switch (k) {
    case FrameKind::kNative: return "native";
    case FrameKind::kPython: return "python";
    case FrameKind::kKernel: return "kernel";
    case FrameKind::kUnknown: return "unknown";
  }
  return "?";
}

bool IsDeviceKind(SliceKind k) {
  return k == SliceKind::kKernel || k == SliceKind::kMemcpy || k == SliceKind::kMemset ||
         k == SliceKind::kDeviceSync || k == SliceKind::kAnnotation;
}

const char* OpScopeName(OpScope s) {
  switch (s) {
    case OpScope::kFunction: return "function";
    case OpScope::kBackward: return "backward";
    case OpScope::kUser: return "user";
    case OpScope::kTorchScript: return "torchscript";
  }
  return "?";
}

const char* CopyKindName(CopyKind k) {
  switch (k) {
    case CopyKind::kUnknown: return "unknown";
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
  }
  return "?";
}

std::pair<int64_t, int64_t> Trace::span_ns() const {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  auto points = [&](const Column<int64_t>& ts) {
    for (int64_t v : ts) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  };
  auto intervals = [&](const Column<int64_t>& ts, const Column<int64_t>& dur) {
    for (size_t i = 0; i < ts.size(); ++i) {
      lo = std::min(lo, ts[i]);
      hi = std::max(hi, ts[i] + dur[i]);
    }
  };
  intervals(slices.ts, slices.dur);
  points(instants.ts);
  points(counters.ts);
  intervals(thread_states.ts, thread_states.dur);
  if (lo == INT64_MAX) return {0, 0};
  return {lo, hi};
}

int64_t Trace::start_ns() const { return span_ns().first; }
int64_t Trace::end_ns() const { return span_ns().second; }

namespace {

// Reorders a column by `order` through `scratch`, which every column of a
// table shares: one buffer faulted in once rather than a fresh copy per column.
// The scratch is a column itself, so that it spills to a file with the others
// when a large trace is indexed under a memory budget.
template <typename T>
void PermuteColumn(Column<T>& v, const Column<uint32_t>& order, Column<std::byte>& scratch) {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  if (v.empty()) return;
  if (scratch.size() < v.size() * sizeof(T)) scratch.resize(v.size() * sizeof(T));
  T* out = reinterpret_cast<T*>(scratch.data());  // byte storage, aligned by malloc or mmap
  for (size_t i = 0; i < order.size(); ++i) out[i] = v[order[i]];
  std::memcpy(v.data(), out, v.size() * sizeof(T));
}

// Reorders every column of a table by `order`, through one scratch buffer
// (shared by the tables of one Finalize: a fresh one per table was a second
// round of page faults on a large trace).
template <typename... Columns>
void Permute(const Column<uint32_t>& order, Column<std::byte>& scratch, Columns&... columns) {
  (PermuteColumn(columns, order, scratch), ...);
}

// A slice's sort key within its track: start, longest first, the importer's
// depth hint (a parent and child with equal bounds keep their nesting), then
// the original position, which makes any sort stable.
struct SliceKey {
  int64_t ts;
  int64_t dur;
  uint16_t depth;
  uint32_t index;
  bool operator<(const SliceKey& o) const {
    if (ts != o.ts) return ts < o.ts;
    if (dur != o.dur) return dur > o.dur;
    if (depth != o.depth) return depth < o.depth;
    return index < o.index;
  }
};

// Sorts keys that come in a few ascending runs (a trace's events are written
// almost in time order per thread, with some written late: Kineto's slices of
// a thread form 2 to 13 runs) by merging the runs pairwise, in O(n log runs);
// many short runs are left to std::sort. Keys are distinct (their index), so
// every method gives the same order.
void SortKeys(Column<SliceKey>& k) {
  const size_t n = k.size();
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < n; ++i)
    if (k[i] < k[i - 1]) bounds.push_back(i);
  bounds.push_back(n);
  if (bounds.size() - 1 > n / 16 + 8) {
    std::sort(k.begin(), k.end());
    return;
  }
  Column<SliceKey> tmp;
  tmp.resize(n);
  std::vector<size_t> merged;
  while (bounds.size() > 2) {
    merged.assign(1, 0);
    size_t j = 0;
    for (; j + 2 < bounds.size(); j += 2) {
      std::merge(k.data() + bounds[j], k.data() + bounds[j + 1], k.data() + bounds[j + 1], k.data() + bounds[j + 2],
                 tmp.data() + bounds[j]);
      merged.push_back(bounds[j + 2]);
    }
    if (merged.back() != n) {  // an odd run left over
      std::copy(k.data() + merged.back(), k.data() + n, tmp.data() + merged.back());
      merged.push_back(n);
    }
    k.swap(tmp);
    bounds.swap(merged);
  }
}

}  // namespace

Column<int32_t> Trace::Finalize() {
  const size_t n = slices.size();
  // Order: track, then SliceKey. Tracks by a counting sort, which keeps the
  // file order within each; a track's slices are sorted only when they are
  // not in order already.
  size_t ntracks = tracks.size();
  for (uint32_t trk : slices.track) ntracks = std::max<size_t>(ntracks, size_t{trk} + 1);
  std::vector<uint32_t> first(ntracks + 1, 0);
  for (uint32_t trk : slices.track) ++first[trk + 1];
  for (size_t t = 0; t < ntracks; ++t) first[t + 1] += first[t];
  // (Columns, not vectors: they spill to files with the model's under a
  // memory budget, SetColumnSpill.)
  Column<uint32_t> order;
  order.resize(n);
  {
    std::vector<uint32_t> next(first.begin(), first.end() - 1);
    for (uint32_t i = 0; i < n; ++i) order[next[slices.track[i]]++] = i;
  }
  Column<SliceKey> keys;
  for (size_t t = 0; t < ntracks; ++t) {
    uint32_t a = first[t], b = first[t + 1];
    auto key = [this](uint32_t i) { return SliceKey{slices.ts[i], slices.dur[i], slices.depth[i], i}; };
    bool sorted = true;
    for (uint32_t k = a + 1; k < b && sorted; ++k) sorted = !(key(order[k]) < key(order[k - 1]));
    if (sorted) continue;
    keys.clear();
    for (uint32_t k = a; k < b; ++k) keys.push_back(key(order[k]));
    SortKeys(keys);
    for (uint32_t k = a; k < b; ++k) order[k] = keys[k - a].index;
  }
  Column<SliceKey>().swap(keys);  // (as large as the largest track: not kept through the permutation)
  bool identity = true;
  for (uint32_t i = 0; i < n && identity; ++i) identity = order[i] == i;
  // Old slice index -> new (returned: importers holding slice indices remap them).
  Column<int32_t> new_index;
  new_index.resize(n);
  for (uint32_t i = 0; i < n; ++i) new_index[order[i]] = static_cast<int32_t>(i);
  Column<std::byte> scratch;
  if (!identity) {
    Permute(order, scratch, slices.ts, slices.dur, slices.track, slices.name, slices.kind, slices.depth, slices.arg);
    auto remap = [&](int32_t s) { return s < 0 ? s : new_index[static_cast<size_t>(s)]; };
    for (auto& s : device.slice) s = static_cast<uint32_t>(new_index[s]);
    for (auto& s : device.launch) s = remap(s);
    for (auto& s : flows.from) s = remap(s);
    for (auto& s : flows.to) s = remap(s);
    for (auto& s : args.slice) s = static_cast<uint32_t>(new_index[s]);
    for (auto& s : ops.slice) s = static_cast<uint32_t>(new_index[s]);
    for (auto& s : ops.forward) s = remap(s);
    for (auto& s : edges.from) s = remap(s);
    for (auto& s : edges.to) s = remap(s);
  }

  // Nesting by containment, per track.
  slices.parent.assign(n, kNone);
  track_slices.assign(tracks.size(), {0, 0});
  std::vector<uint32_t> stack;
  size_t overlaps = 0;
  for (size_t i = 0; i < n;) {
    uint32_t trk = slices.track[i];
    size_t j = i;
    stack.clear();
    for (; j < n && slices.track[j] == trk; ++j) {
      int64_t end = slices.ts[j] + slices.dur[j];
      while (!stack.empty()) {
        uint32_t top = stack.back();
        int64_t top_end = slices.ts[top] + slices.dur[top];
        if (slices.ts[j] >= top_end) {
          stack.pop_back();
          continue;
        }
        if (end > top_end) {
          // Starts inside the top but ends after it: not properly nested.
          ++overlaps;
          stack.pop_back();
          continue;
        }
        break;
      }
      slices.parent[j] = stack.empty() ? kNone : static_cast<int32_t>(stack.back());
      slices.depth[j] = static_cast<uint16_t>(std::min<size_t>(stack.size(), 65535));
      stack.push_back(static_cast<uint32_t>(j));
    }
    if (trk < track_slices.size()) track_slices[trk] = {static_cast<uint32_t>(i), static_cast<uint32_t>(j)};
    i = j;
  }
  if (overlaps > 0)
    warnings.push_back(std::to_string(overlaps) + " slices overlap their predecessor on the same track without nesting");

  device_row_of_slice.assign(n, kNone);
  for (size_t r = 0; r < device.size(); ++r) device_row_of_slice[device.slice[r]] = static_cast<int32_t>(r);

  // Args sorted by slice so an analysis can binary-search them: a stable
  // counting sort, skipped when the importer added them in slice order.
  if (!std::is_sorted(args.slice.begin(), args.slice.end())) {
    size_t m = args.size();
    size_t slots = n;
    for (uint32_t s : args.slice) slots = std::max<size_t>(slots, size_t{s} + 1);
    std::vector<uint32_t> at(slots + 1, 0);
    for (uint32_t s : args.slice) ++at[s + 1];
    for (size_t i = 0; i < slots; ++i) at[i + 1] += at[i];
    Column<uint32_t>& aorder = order;  // the slices' order is done with
    aorder.resize(m);
    for (uint32_t r = 0; r < m; ++r) aorder[at[args.slice[r]]++] = r;
    Permute(aorder, scratch, args.slice, args.key, args.str, args.num);
  }

  Column<uint32_t> oorder;
  oorder.resize(ops.size());
  std::iota(oorder.begin(), oorder.end(), 0u);
  std::stable_sort(oorder.begin(), oorder.end(), [this](uint32_t a, uint32_t b) { return ops.slice[a] < ops.slice[b]; });
  Permute(oorder, scratch, ops.slice, ops.scope, ops.seq, ops.forward, ops.shapes, ops.dtypes, ops.flops, ops.bytes,
          ops.site);
  return new_index;
}

int32_t Trace::OpRow(uint32_t slice) const {
  auto it = std::lower_bound(ops.slice.begin(), ops.slice.end(), slice);
  return it != ops.slice.end() && *it == slice ? static_cast<int32_t>(it - ops.slice.begin()) : kNone;
}

int32_t Trace::SliceAt(uint32_t track, int64_t t) const {
  if (track >= track_slices.size()) return kNone;
  auto [first, last] = track_slices[track];
  // Last slice starting at or before t, then walk up to one that still contains t.
  auto it = std::upper_bound(slices.ts.begin() + first, slices.ts.begin() + last, t);
  if (it == slices.ts.begin() + first) return kNone;
  int32_t i = static_cast<int32_t>(it - slices.ts.begin()) - 1;
  while (i != kNone && slices.ts[static_cast<size_t>(i)] + slices.dur[static_cast<size_t>(i)] < t)
    i = slices.parent[static_cast<size_t>(i)];
  return i;
}

int32_t Trace::FindArg(uint32_t slice, StringId key) const {
  auto it = std::lower_bound(args.slice.begin(), args.slice.end(), slice);
  for (size_t i = static_cast<size_t>(it - args.slice.begin()); i < args.size() && args.slice[i] == slice; ++i)
    if (args.key[i] == key) return static_cast<int32_t>(i);
  return kNone;
}

}  // namespace strata::model

#include "analysis/layers.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/summary.h"
#include "base/int_math.h"

namespace strata::analysis {
namespace {

using model::kNone;
using model::SliceKind;

bool IsDeviceWork(SliceKind k) { return k == SliceKind::kKernel || k == SliceKind::kMemcpy || k == SliceKind::kMemset; }

bool IsHostWork(SliceKind k) { return k == SliceKind::kOp || k == SliceKind::kRuntime || k == SliceKind::kDriver; }

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }

// "StatefulPartitionedCall", "PartitionedCall_3": the scopes tf.function wraps a graph's nodes in.
bool IsWrapperScope(std::string_view c) {
  for (std::string_view w : {std::string_view("StatefulPartitionedCall"), std::string_view("PartitionedCall")}) {
    if (c.substr(0, w.size()) != w) continue;
    std::string_view rest = c.substr(w.size());
    if (rest.empty()) return true;
    if (rest[0] != '_' || rest.size() == 1) continue;
    if (std::all_of(rest.begin() + 1, rest.end(), [](char d) { return d >= '0' && d <= '9'; })) return true;
  }
  return false;
}

// Allocator events of each track in time order, to sum what a span allocated.
class TrackMemory {
 public:
  explicit TrackMemory(const model::Trace& t) : m_(t.memory) {
    for (size_t i = 0; i < m_.size(); ++i)
      if (m_.layer[i] == model::MemoryLayer::kAllocator) by_track_[m_.track[i]].push_back(static_cast<uint32_t>(i));
    for (auto& [track, rows] : by_track_)
      std::stable_sort(rows.begin(), rows.end(), [this](uint32_t a, uint32_t b) { return m_.ts[a] < m_.ts[b]; });
  }

  // Adds what `track` allocated in [ts, end) to `l`; returns the bytes allocated.
  int64_t Span(uint32_t track, int64_t ts, int64_t end, LayerStats& l) const {
    auto it = by_track_.find(track);
    if (it == by_track_.end()) return 0;
    const std::vector<uint32_t>& rows = it->second;
    auto row = std::lower_bound(rows.begin(), rows.end(), ts, [this](uint32_t r, int64_t v) { return m_.ts[r] < v; });
    int64_t level = 0, peak = 0, allocated = 0;
    for (; row != rows.end() && m_.ts[*row] < end; ++row) {
      int64_t b = m_.bytes[*row];
      if (b > 0) {
        allocated = SatAdd(allocated, b);
        ++l.allocs;
      }
      level = SatAdd(level, b);
      peak = std::max(peak, level);
    }
    l.alloc_bytes = SatAdd(l.alloc_bytes, allocated);
    l.peak_bytes = std::max(l.peak_bytes, peak);
    return allocated;
  }

 private:
  const model::MemoryTable& m_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> by_track_;
};

// The top-level steps of each process, in time order: a TF layer's occurrences.
class StepIndex {
 public:
  explicit StepIndex(const model::Trace& t) {
    const auto& s = t.slices;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] != SliceKind::kStep) continue;
      bool nested = false;
      for (int32_t p = s.parent[i]; p != kNone && !nested; p = s.parent[static_cast<size_t>(p)])
        nested = s.kind[static_cast<size_t>(p)] == SliceKind::kStep;
      if (nested) continue;
      total_ns = SatAdd(total_ns, s.dur[i]);
      by_process_[t.tracks[s.track[i]].process].push_back({s.ts[i], s.end(i), static_cast<int64_t>(i)});
    }
    for (auto& [p, v] : by_process_) std::sort(v.begin(), v.end());
  }

  // The step of `process` that contains `ts` (its slice), or -1.
  int64_t At(uint32_t process, int64_t ts) const {
    auto it = by_process_.find(process);
    if (it == by_process_.end()) return -1;
    const auto& v = it->second;
    auto up = std::upper_bound(v.begin(), v.end(), ts, [](int64_t x, const Step& st) { return x < st.ts; });
    if (up == v.begin()) return -1;
    --up;
    return ts < up->end ? up->slice : -1;
  }

  int64_t total_ns = 0;

 private:
  struct Step {
    int64_t ts, end, slice;
    bool operator<(const Step& o) const { return ts < o.ts; }
  };
  std::unordered_map<uint32_t, std::vector<Step>> by_process_;
};

// Rows under construction, with per row the item time spent on each roof.
struct Builder {
  const model::Trace& t;
  const RooflineResult& roofline;
  std::shared_ptr<const model::Column<int64_t>> self;  // SharedSelfTimes
  TrackMemory memory;
  LayersSummary out;
  std::vector<std::vector<int64_t>> roof_ns;  // per row, per roof

  Builder(const model::Trace& trace, const RooflineResult& r)
      : t(trace), roofline(r), self(SharedSelfTimes(trace)), memory(trace) {}

  size_t NewRow(std::string name, LayerFramework f) {
    LayerStats l;
    l.name = std::move(name);
    l.framework = f;
    out.layers.push_back(std::move(l));
    roof_ns.emplace_back(roofline.roofs.size(), 0);
    return out.layers.size() - 1;
  }

  void AddItem(size_t row, const RooflineItem& it) {
    LayerStats& l = out.layers[row];
    l.flops += it.flops;
    l.bytes += it.bytes;
    ++l.estimated;
    if (it.roof >= 0 && static_cast<size_t>(it.roof) < roof_ns[row].size())
      roof_ns[row][static_cast<size_t>(it.roof)] = SatAdd(roof_ns[row][static_cast<size_t>(it.roof)], it.time_ns);
  }

  void AddDevice(size_t row, size_t slice) {
    LayerStats& l = out.layers[row];
    l.device_ns = SatAdd(l.device_ns, t.slices.dur[slice]);
    ++l.kernels;
  }
};

// --- PyTorch: module scopes ---------------------------------------------------------

class ModuleLayers {
 public:
  explicit ModuleLayers(Builder& b) : b_(b), s_(b.t.slices), row_(s_.size(), kNone) {}

  void Run() {
    for (size_t i = 0; i < s_.size(); ++i)
      if (s_.kind[i] == SliceKind::kModule) Module(i);
    if (rows_.empty()) return;
    LayersSummary& out = b_.out;
    for (size_t i = 0; i < s_.size(); ++i) {
      if (!IsHostWork(s_.kind[i])) continue;
      bool any = ForEachModule(i, [&](size_t r) {
        LayerStats& l = out.layers[r];
        l.cpu_ns = SatAdd(l.cpu_ns, (*b_.self)[i]);
        l.ops += s_.kind[i] == SliceKind::kOp;
      });
      if (any) {
        out.cpu_ns = SatAdd(out.cpu_ns, (*b_.self)[i]);
        out.has_ops |= s_.kind[i] == SliceKind::kOp;
      }
    }
    const auto& d = b_.t.device;
    for (size_t r = 0; r < d.size(); ++r) {
      size_t k = d.slice[r];
      if (!IsDeviceWork(s_.kind[k]) || d.launch[r] == kNone) continue;
      bool any = ForEachModule(static_cast<size_t>(d.launch[r]), [&](size_t row) { b_.AddDevice(row, k); });
      if (any) out.device_ns = SatAdd(out.device_ns, s_.dur[k]);
    }
    for (const RooflineItem& it : b_.roofline.items) {
      if (it.slice == kNone) continue;
      bool any = ForEachModule(static_cast<size_t>(it.slice), [&](size_t row) { b_.AddItem(row, it); });
      if (any) {
        out.flops += it.flops;
        out.bytes += it.bytes;
      }
    }
  }

 private:
  void Module(size_t i) {
    auto [it, fresh] = rows_.try_emplace(s_.name[i], 0);
    if (fresh) it->second = b_.NewRow(std::string(b_.t.strings.Get(s_.name[i])), LayerFramework::kPyTorch);
    size_t r = it->second;
    row_[i] = static_cast<int32_t>(r);
    uint16_t depth = 0;
    int32_t outer = kNone;  // the innermost module this one runs in
    for (int32_t p = s_.parent[i]; p != kNone; p = s_.parent[static_cast<size_t>(p)]) {
      if (s_.kind[static_cast<size_t>(p)] != SliceKind::kModule) continue;
      if (outer == kNone) outer = p;
      ++depth;
    }
    LayersSummary& out = b_.out;
    LayerStats& l = out.layers[r];
    if (l.occurrences == 0) l.depth = depth;
    ++l.occurrences;
    l.total_ns = SatAdd(l.total_ns, s_.dur[i]);
    l.self_ns = SatAdd(l.self_ns, s_.dur[i]);
    l.max_ns = std::max(l.max_ns, s_.dur[i]);
    int64_t allocated = b_.memory.Span(s_.track[i], s_.ts[i], s_.end(i), l);
    if (outer == kNone) {
      out.total_ns = SatAdd(out.total_ns, s_.dur[i]);
      out.alloc_bytes = SatAdd(out.alloc_bytes, allocated);
    } else {
      // Parents come first in slice order (Finalize sorts each track by start, longest first).
      int32_t pr = row_[static_cast<size_t>(outer)];
      if (pr != kNone && static_cast<size_t>(pr) != r) {
        LayerStats& parent = out.layers[static_cast<size_t>(pr)];
        parent.self_ns = SatSub(parent.self_ns, s_.dur[i]);
        parent.leaf = false;
      }
    }
  }

  // Calls f(row) once for each module row enclosing slice `i` (itself included);
  // returns whether there was one.
  template <typename F>
  bool ForEachModule(size_t i, F&& f) {
    seen_.clear();
    for (int32_t p = static_cast<int32_t>(i); p != kNone; p = s_.parent[static_cast<size_t>(p)]) {
      int32_t r = row_[static_cast<size_t>(p)];
      if (r == kNone || std::find(seen_.begin(), seen_.end(), r) != seen_.end()) continue;
      seen_.push_back(r);
      f(static_cast<size_t>(r));
    }
    return !seen_.empty();
  }

  Builder& b_;
  const model::SliceTable& s_;
  std::vector<int32_t> row_;  // per slice: its module's row, kNone for other slices
  std::unordered_map<model::StringId, size_t> rows_;
  std::vector<int32_t> seen_;
};

// --- TensorFlow: name scopes of the ops' nodes -----------------------------------------

class ScopeLayers {
 public:
  explicit ScopeLayers(Builder& b) : b_(b), s_(b.t.slices) {}

  void Run() {
    const model::Trace& t = b_.t;
    model::StringId key = t.strings.Find("tf_op");
    if (key == model::StringPool::kNotFound) return;
    key_ = key;
    StepIndex steps(t);
    LayersSummary& out = b_.out;
    std::vector<Interval> spans;
    for (size_t i = 0; i < s_.size(); ++i) {
      if (s_.kind[i] != SliceKind::kOp) continue;
      bool backward = false;
      int32_t r = RowOfOp(i, &backward);
      if (r == kNone) continue;
      LayerStats& l = out.layers[static_cast<size_t>(r)];
      l.cpu_ns = SatAdd(l.cpu_ns, (*b_.self)[i]);
      ++l.ops;
      out.cpu_ns = SatAdd(out.cpu_ns, (*b_.self)[i]);
      out.has_ops = true;
      out.alloc_bytes = SatAdd(out.alloc_bytes, b_.memory.Span(s_.track[i], s_.ts[i], s_.end(i), l));
      out.has_backward |= backward;
      spans.push_back({r, steps.At(t.tracks[s_.track[i]].process, s_.ts[i]), s_.ts[i], s_.end(i), backward});
    }
    if (spans.empty()) return;
    Occurrences(spans);
    const auto& d = t.device;
    for (size_t r = 0; r < d.size(); ++r) {
      size_t k = d.slice[r];
      if (!IsDeviceWork(s_.kind[k])) continue;
      int32_t row = RowOfDevice(k, d.launch[r]);
      if (row == kNone) continue;
      b_.AddDevice(static_cast<size_t>(row), k);
      out.device_ns = SatAdd(out.device_ns, s_.dur[k]);
    }
    for (const RooflineItem& it : b_.roofline.items) {
      int32_t row = it.slice == kNone ? kNone : Enclosing(static_cast<size_t>(it.slice));
      if (row == kNone) continue;
      b_.AddItem(static_cast<size_t>(row), it);
      out.flops += it.flops;
      out.bytes += it.bytes;
    }
  }

 private:
  struct Interval {
    int32_t row;
    int64_t occurrence;  // the step's slice, -1 outside steps
    int64_t ts, end;
    bool backward;
  };

  // Per (layer, occurrence): the union of its ops' intervals, and of its backward ops'.
  void Occurrences(std::vector<Interval>& v) {
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
      if (a.row != b.row) return a.row < b.row;
      if (a.occurrence != b.occurrence) return a.occurrence < b.occurrence;
      return a.ts < b.ts;
    });
    LayersSummary& out = b_.out;
    for (size_t g = 0; g < v.size();) {
      size_t e = g;
      while (e < v.size() && v[e].row == v[g].row && v[e].occurrence == v[g].occurrence) ++e;
      int64_t all = Union(v, g, e, false), backward = Union(v, g, e, true);
      LayerStats& l = out.layers[static_cast<size_t>(v[g].row)];
      ++l.occurrences;
      l.total_ns = SatAdd(l.total_ns, all);
      l.self_ns = l.total_ns;
      l.max_ns = std::max(l.max_ns, all);
      l.backward_ns = SatAdd(l.backward_ns, backward);
      out.total_ns = SatAdd(out.total_ns, all);
      g = e;
    }
  }

  // Total length of the union of v[begin, end) (sorted by start); only backward ones if asked.
  static int64_t Union(const std::vector<Interval>& v, size_t begin, size_t end, bool backward_only) {
    int64_t total = 0, cur_ts = 0, cur_end = 0;
    bool open = false;
    for (size_t i = begin; i < end; ++i) {
      if (backward_only && !v[i].backward) continue;
      if (open && v[i].ts <= cur_end) {
        cur_end = std::max(cur_end, v[i].end);
        continue;
      }
      if (open) total = SatAdd(total, SatSub(cur_end, cur_ts));
      cur_ts = v[i].ts;
      cur_end = v[i].end;
      open = true;
    }
    if (open) total = SatAdd(total, SatSub(cur_end, cur_ts));
    return total;
  }

  // The row of an op slice from its "tf_op" arg, kNone when it has none or names no layer.
  int32_t RowOfOp(size_t slice, bool* backward) {
    int32_t a = b_.t.FindArg(static_cast<uint32_t>(slice), key_);
    if (a == kNone) return kNone;
    model::StringId node = b_.t.args.str[static_cast<size_t>(a)];
    if (node == 0) return kNone;
    auto [it, fresh] = by_node_.try_emplace(node, NodeLayer{});
    if (fresh) {
      std::string layer = TfLayerOf(b_.t.strings.Get(node), &it->second.backward);
      if (!layer.empty()) {
        auto [lt, new_layer] = rows_.try_emplace(layer, 0);
        if (new_layer) lt->second = b_.NewRow(layer, LayerFramework::kTensorFlow);
        it->second.row = static_cast<int32_t>(lt->second);
      }
    }
    *backward = it->second.backward;
    op_row_[static_cast<uint32_t>(slice)] = it->second.row;
    return it->second.row;
  }

  // The layer of the op at or above `slice` on its thread.
  int32_t Enclosing(size_t slice) const {
    for (int32_t p = static_cast<int32_t>(slice); p != kNone; p = s_.parent[static_cast<size_t>(p)]) {
      auto it = op_row_.find(static_cast<uint32_t>(p));
      if (it != op_row_.end() && it->second != kNone) return it->second;
    }
    return kNone;
  }

  // A kernel's own "tf_op" (xplane device events carry it), else its launch's op.
  int32_t RowOfDevice(size_t kernel, int32_t launch) {
    bool backward = false;
    int32_t a = b_.t.FindArg(static_cast<uint32_t>(kernel), key_);
    if (a != kNone) {
      model::StringId node = b_.t.args.str[static_cast<size_t>(a)];
      auto it = by_node_.find(node);
      if (it != by_node_.end()) return it->second.row;
      std::string layer = node == 0 ? std::string() : TfLayerOf(b_.t.strings.Get(node), &backward);
      auto lt = rows_.find(layer);
      if (lt != rows_.end()) return static_cast<int32_t>(lt->second);
    }
    return launch == kNone ? kNone : Enclosing(static_cast<size_t>(launch));
  }

  struct NodeLayer {
    int32_t row = kNone;
    bool backward = false;
  };
  Builder& b_;
  const model::SliceTable& s_;
  model::StringId key_ = 0;
  std::unordered_map<model::StringId, NodeLayer> by_node_;
  std::unordered_map<uint32_t, int32_t> op_row_;  // op slice -> row
  std::map<std::string, size_t> rows_;
};

// Intensity and bound of each row, against the roof most of its items' time ran on.
void Classify(Builder& b) {
  for (size_t r = 0; r < b.out.layers.size(); ++r) {
    LayerStats& l = b.out.layers[r];
    if (l.estimated == 0) continue;
    const std::vector<int64_t>& ns = b.roof_ns[r];
    int64_t best = 0;
    for (size_t i = 0; i < ns.size(); ++i)
      if (ns[i] > best) {
        best = ns[i];
        l.roof = static_cast<int>(i);
      }
    RooflinePoint p;
    p.flops = l.flops;
    p.bytes = l.bytes;
    ClassifyPoint(p, b.out.RoofOf(l.roof));
    l.intensity = p.intensity;
    l.bound = p.bound;
  }
}

}  // namespace

const char* LayerFrameworkName(LayerFramework f) { return f == LayerFramework::kTensorFlow ? "tensorflow" : "pytorch"; }

std::string TfLayerOf(std::string_view node, bool* backward) {
  *backward = false;
  if (size_t colon = node.find(':'); colon != std::string_view::npos) node = node.substr(0, colon);
  std::vector<std::string_view> parts;
  while (!node.empty()) {
    size_t slash = node.find('/');
    std::string_view c = node.substr(0, slash);
    node = slash == std::string_view::npos ? std::string_view() : node.substr(slash + 1);
    if (c.empty()) continue;
    if (parts.empty() && IsWrapperScope(c)) continue;
    if (parts.empty() && c == "gradient_tape") {
      *backward = true;
      continue;
    }
    parts.push_back(c);
  }
  if (parts.size() < 2) return {};
  parts.pop_back();  // the op
  std::string layer(parts[0]);
  for (size_t i = 1; i < parts.size() && !IsUpper(parts[i][0]); ++i) {
    layer += '/';
    layer += parts[i];
  }
  return layer;
}

LayersSummary Layers(const model::Trace& t) {
  RooflineResult roofline = Roofline(t);
  Builder b(t, roofline);
  b.out.device = roofline.device;
  b.out.roofs = roofline.roofs;
  ModuleLayers(b).Run();
  ScopeLayers(b).Run();
  LayersSummary& out = b.out;
  if (out.layers.empty()) return std::move(out);
  Classify(b);

  StepIndex steps(t);
  out.step_ns = steps.total_ns;
  out.step_basis = "steps";
  if (out.step_ns <= 0) {
    auto [start, end] = t.span_ns();
    out.step_ns = std::max<int64_t>(0, SatSub(end, start));
    out.step_basis = "trace";
  }
  bool any_ops_estimated = false;
  for (size_t i = 0; i < t.ops.size() && !any_ops_estimated; ++i)
    any_ops_estimated = t.ops.flops[i] >= 0 || t.ops.bytes[i] >= 0;
  for (LayerStats& l : out.layers) {
    l.mean_ns = l.occurrences > 0 ? l.total_ns / static_cast<int64_t>(l.occurrences) : 0;
    if (out.step_ns > 0) l.step_pct = 100.0 * static_cast<double>(l.total_ns) / static_cast<double>(out.step_ns);
    out.has_device |= l.kernels > 0;
    out.has_memory |= l.allocs > 0;
    out.has_cost |= l.estimated > 0;
  }
  out.ops_without_cost = out.has_ops && !out.has_cost && !any_ops_estimated;
  std::sort(out.layers.begin(), out.layers.end(), [](const LayerStats& x, const LayerStats& y) {
    return x.total_ns != y.total_ns ? x.total_ns > y.total_ns : x.name < y.name;
  });
  return std::move(out);
}

}  // namespace strata::analysis

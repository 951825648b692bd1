#include "analysis/memory.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/summary.h"
#include "base/int_math.h"

namespace strata::analysis {
namespace {

using model::kNone;
using model::SliceKind;

struct Built {
  MemoryTimelines tl;
  std::vector<std::vector<uint32_t>> rows;  // per device: its MemoryTable rows in time order
};

Built Build(const model::Trace& t) {
  Built out;
  const model::MemoryTable& m = t.memory;
  std::vector<uint32_t> order(m.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return m.ts[a] < m.ts[b]; });
  std::map<std::tuple<uint32_t, int32_t, model::MemoryLayer>, size_t> index;
  std::vector<int64_t> running, lowest;
  std::vector<std::vector<int64_t>> sums;  // per timeline point: the running sum
  for (uint32_t i : order) {
    uint32_t process = m.track[i] < t.tracks.size() ? t.tracks[m.track[i]].process : 0;
    auto [it, inserted] = index.try_emplace({process, m.device[i], m.layer[i]}, out.tl.devices.size());
    if (inserted) {
      DeviceMemory d;
      d.process = process;
      d.process_label = ProcessLabel(t, process);
      d.device = m.device[i];
      d.layer = m.layer[i];
      d.allocator_totals = true;
      out.tl.devices.push_back(std::move(d));
      out.rows.emplace_back();
      running.push_back(0);
      lowest.push_back(0);
      sums.emplace_back();
    }
    size_t k = it->second;
    DeviceMemory& d = out.tl.devices[k];
    out.rows[k].push_back(i);
    running[k] = SatAdd(running[k], m.bytes[i]);
    lowest[k] = std::min(lowest[k], running[k]);
    // The allocator's own total when every event has one (it also counts what
    // other threads allocated between our events); our running sum otherwise.
    if (m.total_allocated[i] < 0) d.allocator_totals = false;
    d.timeline.push_back({m.ts[i], m.total_allocated[i]});
    sums[k].push_back(running[k]);
    if (m.bytes[i] > 0) {
      ++d.allocs;
      d.bytes_allocated = SatAdd(d.bytes_allocated, m.bytes[i]);
    } else {
      ++d.frees;
      d.bytes_freed = SatSub(d.bytes_freed, m.bytes[i]);
    }
    if (m.addr[i] != 0) d.addresses = true;
  }
  for (DeviceMemory& d : out.tl.devices)
    d.shadowed = d.layer == model::MemoryLayer::kRuntime &&
                 index.count({d.process, d.device, model::MemoryLayer::kAllocator}) > 0;
  for (size_t k = 0; k < out.tl.devices.size(); ++k) {
    DeviceMemory& d = out.tl.devices[k];
    // Without the allocator's totals a dip below zero is memory allocated before
    // the trace began and freed in it: at least that much was live all along.
    // (SatSub: a trace's sizes can sum to INT64_MIN, whose negation overflows.)
    int64_t shift = d.allocator_totals ? 0 : SatSub(0, lowest[k]);
    d.peak_bytes = INT64_MIN;
    for (size_t j = 0; j < d.timeline.size(); ++j) {
      MemoryPoint& p = d.timeline[j];
      if (!d.allocator_totals) p.bytes = SatAdd(sums[k][j], shift);
      if (p.bytes > d.peak_bytes) {
        d.peak_bytes = p.bytes;
        d.peak_ts = p.ts;
      }
    }
  }
  return out;
}

// The step window containing ts, or -1.
int StepOf(const std::vector<MemoryOptions::Window>& w, int64_t ts) {
  auto it = std::upper_bound(w.begin(), w.end(), ts, [](int64_t v, const MemoryOptions::Window& x) { return v < x.start; });
  if (it == w.begin()) return -1;
  --it;
  return ts <= it->end ? static_cast<int>(it - w.begin()) : -1;
}

std::map<uint32_t, std::vector<MemoryOptions::Window>> StepsByProcess(const model::Trace& t) {
  std::map<uint32_t, std::vector<MemoryOptions::Window>> out;
  const auto& s = t.slices;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.kind[i] != SliceKind::kStep) continue;
    uint32_t p = s.track[i] < t.tracks.size() ? t.tracks[s.track[i]].process : 0;
    out[p].push_back({s.ts[i], s.end(i), static_cast<int64_t>(s.arg[i])});
  }
  for (auto& [p, w] : out) {
    std::sort(w.begin(), w.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
    // Nested or overlapping step slices (steps marked on two threads): keep the first.
    std::vector<MemoryOptions::Window> kept;
    for (const auto& x : w)
      if (kept.empty() || x.start >= kept.back().end) kept.push_back(x);  // (steps tile: one starts where the last ended)
    w = std::move(kept);
  }
  return out;
}

PerStepStat Stat(const std::vector<int64_t>& v) {
  PerStepStat s;
  if (v.empty()) return s;
  double sum = 0;
  for (int64_t x : v) {
    sum += static_cast<double>(x);
    s.max = std::max(s.max, x);
  }
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

int32_t InnermostOp(const model::Trace& t, int32_t s) {
  for (; s != kNone; s = t.slices.parent[static_cast<size_t>(s)])
    if (t.slices.kind[static_cast<size_t>(s)] == SliceKind::kOp) return s;
  return kNone;
}

struct Live {
  uint32_t row;
  int32_t op;  // innermost op around the allocation, or kNone
};

void Analyze(const model::Trace& t, const std::vector<MemoryOptions::Window>& steps, const std::vector<uint32_t>& rows,
             DeviceMemory& d) {
  const model::MemoryTable& m = t.memory;
  size_t peak_index = 0;
  for (size_t k = 0; k < d.timeline.size(); ++k)
    if (d.timeline[k].bytes == d.peak_bytes) {
      peak_index = k;
      break;
    }
  uint32_t peak_row = rows[peak_index];
  if (m.total_reserved[peak_row] > 0) {
    d.reserved_at_peak = m.total_reserved[peak_row];
    d.fragmentation = std::clamp(
        1.0 - static_cast<double>(d.peak_bytes) / static_cast<double>(d.reserved_at_peak), 0.0, 1.0);
  }
  int ps = StepOf(steps, d.peak_ts);
  d.peak_step = ps < 0 ? -1 : steps[static_cast<size_t>(ps)].number;

  enum { kAllocs, kFrees, kBytesAllocated, kBytesFreed, kTemps, kTempBytes, kOpTemps, kOpTempBytes, kN };
  std::vector<std::vector<int64_t>> per_step(kN, std::vector<int64_t>(steps.size(), 0));
  std::unordered_map<uint64_t, Live> live;
  for (size_t k = 0; k < rows.size(); ++k) {
    uint32_t r = rows[k];
    int st = StepOf(steps, m.ts[r]);
    auto add = [&](int what, int64_t v) {
      if (st >= 0) {
        int64_t& s = per_step[static_cast<size_t>(what)][static_cast<size_t>(st)];
        s = SatAdd(s, v);
      }
    };
    if (m.bytes[r] > 0) {
      add(kAllocs, 1);
      add(kBytesAllocated, m.bytes[r]);
      if (d.addresses) live[m.addr[r]] = {r, InnermostOp(t, t.SliceAt(m.track[r], m.ts[r]))};
    } else {
      add(kFrees, 1);
      add(kBytesFreed, SatSub(0, m.bytes[r]));
      auto it = d.addresses ? live.find(m.addr[r]) : live.end();
      if (it != live.end()) {
        uint32_t a = it->second.row;
        if (st >= 0 && StepOf(steps, m.ts[a]) == st) {
          add(kTemps, 1);
          add(kTempBytes, m.bytes[a]);
          int32_t op = it->second.op;
          if (op != kNone && m.ts[r] <= t.slices.end(static_cast<size_t>(op))) {
            add(kOpTemps, 1);
            add(kOpTempBytes, m.bytes[a]);
          }
        }
        live.erase(it);
      }
    }
    if (k != peak_index || !d.addresses) continue;
    // The live set at the peak, charged to what allocated each block.
    std::map<std::string, LiveGroup> groups;
    std::unordered_map<int32_t, std::string> name_of_op;
    int64_t accounted = 0;
    for (const auto& [addr, l] : live) {
      std::string name = AllocatingName(t, m.track[l.row], m.ts[l.row]);
      if (name.empty())
        name = m.track[l.row] < t.tracks.size() && t.tracks[m.track[l.row]].kind == model::TrackKind::kDeviceQueue
                   ? "(no API call of the program: module statics)"
                   : "(outside any op)";
      LiveGroup& g = groups[name];
      g.name = name;
      g.bytes = SatAdd(g.bytes, m.bytes[l.row]);
      ++g.count;
      accounted = SatAdd(accounted, m.bytes[l.row]);
    }
    for (auto& [n, g] : groups) d.live_at_peak.push_back(std::move(g));
    if (d.peak_bytes > accounted) d.live_at_peak.push_back({"(allocated before the trace)", d.peak_bytes - accounted, 0});
    std::sort(d.live_at_peak.begin(), d.live_at_peak.end(), [](const LiveGroup& a, const LiveGroup& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
    });
  }
  MemoryChurn& c = d.churn;
  c.steps = steps.size();
  c.allocs = Stat(per_step[kAllocs]);
  c.frees = Stat(per_step[kFrees]);
  c.bytes_allocated = Stat(per_step[kBytesAllocated]);
  c.bytes_freed = Stat(per_step[kBytesFreed]);
  c.temporaries = Stat(per_step[kTemps]);
  c.temporary_bytes = Stat(per_step[kTempBytes]);
  c.op_temporaries = Stat(per_step[kOpTemps]);
  c.op_temporary_bytes = Stat(per_step[kOpTempBytes]);
}

// The op an allocation at (track, ts) is charged to (see AllocatingName), as a slice.
int32_t ChargedOp(const model::Trace& t, uint32_t track, int64_t ts) {
  int32_t op = InnermostOp(t, t.SliceAt(track, ts));
  while (op != kNone && IsAllocationOpName(t.strings.Get(t.slices.name[static_cast<size_t>(op)]))) {
    int32_t up = InnermostOp(t, t.slices.parent[static_cast<size_t>(op)]);
    if (up == kNone) break;
    op = up;
  }
  return op;
}

}  // namespace

bool IsAllocationOpName(std::string_view n) {
  return n == "aten::empty" || n == "aten::zeros" || n == "aten::ones" || n == "aten::empty_like" ||
         n == "aten::zeros_like" || n == "aten::ones_like" || n == "aten::full" || n == "aten::full_like" ||
         n == "aten::empty_strided" || n == "aten::new_empty" || n == "aten::new_empty_strided" ||
         n == "aten::new_zeros" || n == "aten::new_ones" || n == "aten::new_full" || n == "aten::rand" ||
         n == "aten::randn" || n == "aten::resize_";
}

std::string AllocatingName(const model::Trace& t, uint32_t track, int64_t ts) {
  int32_t inner = t.SliceAt(track, ts);
  if (inner == kNone) return "";
  int32_t op = ChargedOp(t, track, ts);
  if (op != kNone) return std::string(t.strings.Get(t.slices.name[static_cast<size_t>(op)]));
  for (int32_t s = inner; s != kNone; s = t.slices.parent[static_cast<size_t>(s)])
    if (t.slices.kind[static_cast<size_t>(s)] == SliceKind::kModule)
      return std::string(t.strings.Get(t.slices.name[static_cast<size_t>(s)]));
  return std::string(t.strings.Get(t.slices.name[static_cast<size_t>(inner)]));
}

const DeviceMemory* MemoryTimelines::Find(uint32_t process, int32_t device) const {
  const DeviceMemory* found = nullptr;
  for (const DeviceMemory& d : devices)
    if (d.process == process && d.device == device && (!found || d.layer == model::MemoryLayer::kAllocator)) found = &d;
  return found;
}

MemoryTimelines BuildMemoryTimelines(const model::Trace& t) { return Build(t).tl; }

TimelineMax::TimelineMax(const std::vector<MemoryPoint>* v) : v_(v) {
  for (size_t b = 0; b * kBlock < v->size(); ++b) {
    int64_t m = INT64_MIN;
    for (size_t i = b * kBlock; i < std::min(v->size(), (b + 1) * kBlock); ++i) m = std::max(m, (*v)[i].bytes);
    blocks_.push_back(m);
  }
}

size_t TimelineMax::Lower(int64_t ts) const {
  return static_cast<size_t>(
      std::lower_bound(v_->begin(), v_->end(), ts, [](const MemoryPoint& p, int64_t x) { return p.ts < x; }) -
      v_->begin());
}

int64_t TimelineMax::MaxIdx(size_t lo, size_t hi) const {
  int64_t m = INT64_MIN;
  while (lo < hi && lo % kBlock) m = std::max(m, (*v_)[lo++].bytes);
  while (lo + kBlock <= hi) {
    m = std::max(m, blocks_[lo / kBlock]);
    lo += kBlock;
  }
  while (lo < hi) m = std::max(m, (*v_)[lo++].bytes);
  return m;
}

int64_t TimelineMax::LevelBefore(int64_t ts) const {
  size_t i = Lower(ts);
  return i == 0 ? 0 : (*v_)[i - 1].bytes;
}

int64_t TimelineMax::Max(int64_t from, int64_t to) const {
  if (v_->empty()) return INT64_MIN;
  return std::max(LevelBefore(from), MaxIdx(Lower(from), Lower(to + 1)));
}

uint64_t TimelineMax::Raises(int64_t from, int64_t to) const {
  uint64_t n = 0;
  for (size_t x = Lower(from), b = Lower(to + 1); x < b; ++x)
    if (x == 0 ? (*v_)[x].bytes > 0 : (*v_)[x].bytes > (*v_)[x - 1].bytes) ++n;
  return n;
}

std::vector<MemoryPoint> DownsampleTimeline(const std::vector<MemoryPoint>& v, size_t max_points) {
  if (v.size() <= max_points || max_points < 2) return v;
  size_t buckets = max_points / 2;
  size_t per = (v.size() + buckets - 1) / buckets;
  std::vector<MemoryPoint> out;
  out.reserve(2 * buckets + 1);
  for (size_t i = 0; i < v.size(); i += per) {
    size_t end = std::min(v.size(), i + per), lo = i, hi = i;
    for (size_t j = i; j < end; ++j) {
      if (v[j].bytes < v[lo].bytes) lo = j;
      if (v[j].bytes > v[hi].bytes) hi = j;
    }
    out.push_back(v[std::min(lo, hi)]);
    if (lo != hi) out.push_back(v[std::max(lo, hi)]);
  }
  // The last level is where the trace leaves memory: keep it.
  if (out.back().ts != v.back().ts || out.back().bytes != v.back().bytes) out.push_back(v.back());
  return out;
}

StepAllocations AllocationsInWindows(const model::Trace& t, const std::vector<MemoryOptions::Window>& windows) {
  StepAllocations out;
  Built b = Build(t);
  const model::MemoryTable& m = t.memory;
  std::map<std::string, LiveGroup> groups;
  std::map<int32_t, bool> slices;  // ordered: deterministic output
  std::map<int32_t, bool> devices;
  auto temporary = [&](uint32_t a, int32_t device) {
    ++out.temporaries;
    out.temporary_bytes = SatAdd(out.temporary_bytes, m.bytes[a]);
    int32_t op = ChargedOp(t, m.track[a], m.ts[a]);
    std::string name = AllocatingName(t, m.track[a], m.ts[a]);
    if (name.empty()) name = "(outside any op)";
    LiveGroup& g = groups[name];
    g.name = name;
    g.bytes = SatAdd(g.bytes, m.bytes[a]);
    ++g.count;
    if (op != kNone && IsAllocationOpName(t.strings.Get(t.slices.name[static_cast<size_t>(op)]))) slices[op] = true;
    devices[device] = true;
  };
  for (size_t k = 0; k < b.tl.devices.size(); ++k) {
    const DeviceMemory& d = b.tl.devices[k];
    if (d.shadowed) continue;  // the allocator's segments, not the program's allocations
    out.addresses = out.addresses || d.addresses;
    std::unordered_map<uint64_t, std::pair<uint32_t, int>> live;  // addr -> (row, window)
    for (uint32_t r : b.rows[k]) {
      int w = StepOf(windows, m.ts[r]);
      if (m.bytes[r] > 0) {
        if (w < 0) continue;
        ++out.allocs;
        out.bytes = SatAdd(out.bytes, m.bytes[r]);
        if (d.addresses) live[m.addr[r]] = {r, w};
        else temporary(r, d.device);
        continue;
      }
      auto it = d.addresses ? live.find(m.addr[r]) : live.end();
      if (it == live.end()) continue;
      // Freed in the step that allocated it, or in the next one (a buffer
      // replaced every step: `acc = torch.zeros(n)` frees the last step's).
      if (w >= 0 && (it->second.second == w || it->second.second + 1 == w)) temporary(it->second.first, d.device);
      live.erase(it);
    }
  }
  for (auto& [n, g] : groups) out.temporaries_by_name.push_back(std::move(g));
  std::sort(out.temporaries_by_name.begin(), out.temporaries_by_name.end(), [](const LiveGroup& x, const LiveGroup& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.name < y.name;
  });
  for (auto& [s, v] : slices) out.allocating_slices.push_back(s);
  for (auto& [dv, v] : devices) out.devices.push_back(dv);
  return out;
}

MemorySummary Memory(const model::Trace& t, const MemoryOptions& opt) {
  MemorySummary out;
  Built b = Build(t);
  std::map<uint32_t, std::vector<MemoryOptions::Window>> steps;
  if (opt.steps.empty()) steps = StepsByProcess(t);
  static const std::vector<MemoryOptions::Window> kNoSteps;
  for (size_t k = 0; k < b.tl.devices.size(); ++k) {
    DeviceMemory& d = b.tl.devices[k];
    const std::vector<MemoryOptions::Window>* w = &opt.steps;
    if (opt.steps.empty()) {
      auto it = steps.find(d.process);
      w = it == steps.end() ? &kNoSteps : &it->second;
    }
    Analyze(t, *w, b.rows[k], d);
  }

  // Allocations made directly inside each op slice.
  const model::MemoryTable& m = t.memory;
  std::unordered_map<int32_t, std::pair<uint64_t, int64_t>> by_slice;  // op slice -> (allocs, bytes)
  std::unordered_map<int32_t, int32_t> device_of_slice;
  std::vector<bool> shadowed_row(m.size(), false);
  for (size_t k = 0; k < b.tl.devices.size(); ++k)
    if (b.tl.devices[k].shadowed)
      for (uint32_t r : b.rows[k]) shadowed_row[r] = true;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.bytes[i] <= 0 || shadowed_row[i]) continue;
    int32_t op = InnermostOp(t, t.SliceAt(m.track[i], m.ts[i]));
    if (op == kNone) continue;
    auto& e = by_slice[op];
    ++e.first;
    e.second = SatAdd(e.second, m.bytes[i]);
    device_of_slice.try_emplace(op, m.device[i]);
  }
  std::vector<TimelineMax> maxes;
  maxes.reserve(b.tl.devices.size());
  for (const DeviceMemory& d : b.tl.devices) maxes.emplace_back(&d.timeline);
  std::map<model::StringId, OpMemory> by_name;
  for (auto& [slice, e] : by_slice) {
    size_t si = static_cast<size_t>(slice);
    OpMemory& o = by_name[t.slices.name[si]];
    o.allocs += e.first;
    o.bytes = SatAdd(o.bytes, e.second);
    uint32_t process = t.tracks[t.slices.track[si]].process;
    const DeviceMemory* d = b.tl.Find(process, device_of_slice[slice]);
    if (!d) continue;
    const TimelineMax& mx = maxes[static_cast<size_t>(d - b.tl.devices.data())];
    int64_t hi = mx.Max(t.slices.ts[si], t.slices.end(si));
    if (hi != INT64_MIN) o.peak_increase = std::max(o.peak_increase, hi - mx.LevelBefore(t.slices.ts[si]));
  }
  for (auto& [name, o] : by_name) {
    o.name = std::string(t.strings.Get(name));
    out.ops.push_back(std::move(o));
  }
  std::sort(out.ops.begin(), out.ops.end(), [](const OpMemory& x, const OpMemory& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.name < y.name;
  });
  out.devices = std::move(b.tl.devices);
  return out;
}

}  // namespace strata::analysis

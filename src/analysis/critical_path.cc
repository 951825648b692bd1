#include "analysis/critical_path.h"

#include <algorithm>
#include <span>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "analysis/memo.h"
#include "analysis/name_classes.h"
#include "base/int_math.h"
#include "base/intervals.h"
#include "base/parallel.h"

namespace strata::analysis {

const char* SegmentTypeName(SegmentType t) {
  switch (t) {
    case SegmentType::kWork: return "work";
    case SegmentType::kDevice: return "device";
    case SegmentType::kLaunch: return "launch";
    case SegmentType::kWait: return "wait";
  }
  return "?";
}

namespace {

using model::kNone;
using model::SliceKind;

// A piece of one track's timeline: the innermost slice covering it, or none.
struct Piece {
  int64_t start, end;
  int32_t slice;
};

// One walk's place on each track (Walker::PieceBefore).
struct Cursor {
  explicit Cursor(size_t tracks) : next(tracks, SIZE_MAX) {}
  std::vector<size_t> next;
};

bool IsContainer(SliceKind k) { return k == SliceKind::kStep || k == SliceKind::kAnnotation; }

// The time ranges a Walker walks (the steps chosen), merged and sorted: what
// it keeps of the trace is what overlaps them, so that its memory follows the
// steps walked, not the trace.
class Ranges {
 public:
  explicit Ranges(std::vector<std::pair<int64_t, int64_t>> r) : r_(std::move(r)) { SortAndMerge(r_); }
  // [start, end] meets a range (an instant at a range's edge does).
  bool Meets(int64_t start, int64_t end) const {
    auto it = std::lower_bound(r_.begin(), r_.end(), start,
                               [](const std::pair<int64_t, int64_t>& x, int64_t v) { return x.second < v; });
    return it != r_.end() && it->first <= end;
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> r_;
};

class Walker {
 public:
  Walker(const model::Trace& t, const CriticalPathOptions& opt, Ranges ranges)
      : t_(t), opt_(opt), nc_(t), ranges_(std::move(ranges)) {
    const auto& s = t_.slices;
    // What each slice in the ranges waited for: flows into it, and the launch
    // of device work. Sorted (to, from) pairs, found by a binary search.
    auto keep = [&](int32_t to) { return ranges_.Meets(s.ts[static_cast<size_t>(to)], SliceEnd(to)); };
    for (size_t i = 0; i < t_.flows.size(); ++i)
      if (t_.flows.from[i] != kNone && t_.flows.to[i] != kNone && keep(t_.flows.to[i]))
        incoming_.push_back({t_.flows.to[i], t_.flows.from[i]});
    for (size_t r = 0; r < t_.device.size(); ++r)
      if (t_.device.launch[r] != kNone && keep(static_cast<int32_t>(t_.device.slice[r])))
        incoming_.push_back({static_cast<int32_t>(t_.device.slice[r]), t_.device.launch[r]});
    std::sort(incoming_.begin(), incoming_.end());
    incoming_.erase(std::unique(incoming_.begin(), incoming_.end()), incoming_.end());
    // Where each slice's edges start, for the range of slices that have any
    // (a walk asks at every step of the path; a binary search over all the
    // edges was a tenth of the walk), unless that range is very large.
    if (!incoming_.empty()) {
      in_first_ = incoming_.front().first;
      size_t range = static_cast<size_t>(incoming_.back().first - in_first_) + 1;
      if (range <= kMaxDenseIncoming) {
        in_start_.assign(range + 1, 0);
        for (const auto& e : incoming_) ++in_start_[static_cast<size_t>(e.first - in_first_) + 1];
        for (size_t k = 1; k <= range; ++k) in_start_[k] += in_start_[k - 1];
      }
    }
    pieces_.resize(t_.tracks.size());
    built_ = std::make_unique<std::once_flag[]>(t_.tracks.size());
    // Runtime calls that block until the device has done their work (an
    // OpenCL read with blocking=CL_TRUE): waits, like an explicit sync.
    model::StringId blocking = t_.strings.Find("blocking");
    if (blocking != model::StringPool::kNotFound)
      for (size_t a = 0; a < t_.args.size(); ++a)
        if (t_.args.key[a] == blocking && t_.args.num[a] != 0 && t_.args.slice[a] < s.size())
          blocking_.push_back(t_.args.slice[a]);
    std::sort(blocking_.begin(), blocking_.end());
  }

  StepCriticalPath Run(int32_t step_slice, int64_t start, int64_t end, uint32_t track) {
    StepCriticalPath out;
    out.step_slice = step_slice;
    out.start = start;
    out.end = end;
    if (step_slice != kNone) out.step = t_.slices.arg[static_cast<size_t>(step_slice)];
    std::vector<PathSegment> segs;
    Cursor cur(t_.tracks.size());
    uint32_t trk = track;
    int64_t at = end;
    bool stalled = false;  // the last move was a jump without time progress
    for (int guard = 0; at > start && guard < 2000000; ++guard) {
      const Piece* p = PieceBefore(trk, at, cur);
      if (!p || p->end <= start) {
        // Nothing recorded on this track before `at` in the window.
        if (!JumpToLastFinisher(trk, start, at, &segs, &trk, &at, stalled, cur)) {
          segs.push_back({start, at, trk, kNone, SegmentType::kWait});
          at = start;
        }
        continue;
      }
      int64_t seg_end = std::min(at, p->end);
      if (seg_end < at) {
        // A gap between the piece and `at`: idle on this track.
        if (!JumpToLastFinisher(trk, std::max(p->end, start), at, &segs, &trk, &at, stalled, cur)) {
          segs.push_back({std::max(p->end, start), at, trk, kNone, SegmentType::kWait});
          at = std::max(p->end, start);
        }
        continue;
      }
      int64_t seg_start = std::max(p->start, start);
      const bool on_device = t_.tracks[trk].kind == model::TrackKind::kDeviceQueue;
      SliceKind kind = p->slice == kNone ? SliceKind::kOther : t_.slices.kind[static_cast<size_t>(p->slice)];
      bool waiting = p->slice == kNone || IsContainer(kind) || kind == SliceKind::kDeviceSync ||
                     (!on_device && (nc_.Is(t_.slices.name[static_cast<size_t>(p->slice)], kNamePathWait) ||
                                     Blocking(p->slice)));
      if (waiting) {
        if (p->slice != kNone && !on_device && kind != SliceKind::kDeviceSync && !IsContainer(kind)) {
          // A synchronization call: the device work it waited for is the path.
          if (JumpToDevice(trk, seg_start, at, p->slice, &segs, &trk, &at, cur)) {
            stalled = false;
            continue;
          }
        }
        if (JumpToLastFinisher(trk, seg_start, at, &segs, &trk, &at, stalled, cur)) continue;
        segs.push_back({seg_start, at, trk, p->slice, SegmentType::kWait});
        at = seg_start;
        stalled = false;
        continue;
      }
      SegmentType type = on_device ? SegmentType::kDevice
                                   : (kind == SliceKind::kRuntime || kind == SliceKind::kDriver) ? SegmentType::kLaunch
                                                                                                  : SegmentType::kWork;
      segs.push_back({seg_start, at, trk, p->slice, type});
      at = seg_start;
      stalled = false;
      if (at <= start) break;
      // At the start of a slice: did it wait for something (flows, launch,
      // queue order) that finished after this track became free?
      FollowDependencies(p, start, &segs, &trk, &at, &stalled, cur);
    }
    std::reverse(segs.begin(), segs.end());
    // Merge neighbours with the same attribution.
    for (const PathSegment& s : segs) {
      if (s.end <= s.start) continue;
      if (!out.segments.empty()) {
        PathSegment& b = out.segments.back();
        if (b.track == s.track && b.slice == s.slice && b.type == s.type && b.end == s.start) {
          b.end = s.end;
          continue;
        }
      }
      out.segments.push_back(s);
    }
    Summarize(&out);
    return out;
  }

 private:
  bool Blocking(int32_t slice) const {
    return !blocking_.empty() && std::binary_search(blocking_.begin(), blocking_.end(), static_cast<uint32_t>(slice));
  }
  // The slices `to` waited for (flows into it, the call that launched it).
  std::span<const std::pair<int32_t, int32_t>> Incoming(int32_t to) const {
    if (!in_start_.empty()) {
      if (to < in_first_ || static_cast<size_t>(to - in_first_) + 1 >= in_start_.size()) return {};
      size_t k = static_cast<size_t>(to - in_first_);
      return {incoming_.data() + in_start_[k], incoming_.data() + in_start_[k + 1]};
    }
    auto lo = std::lower_bound(incoming_.begin(), incoming_.end(), std::make_pair(to, INT32_MIN));
    auto hi = lo;
    while (hi != incoming_.end() && hi->first == to) ++hi;
    return {lo, hi};
  }

  // A track's pieces, built the first time a walk (in any thread) asks.
  const std::vector<Piece>& Pieces(uint32_t trk) {
    std::call_once(built_[trk], [&] { BuildPieces(trk); });
    return pieces_[trk];
  }

  void BuildPieces(uint32_t trk) {
    std::vector<Piece>& out = pieces_[trk];
    if (trk >= t_.track_slices.size()) return;
    auto [first, last] = t_.track_slices[trk];
    const auto& s = t_.slices;
    out.reserve(2 * static_cast<size_t>(last - first));  // a piece before and inside each slice, at most
    std::vector<uint32_t> stack;
    int64_t cur = first < last ? s.ts[first] : 0;
    auto emit = [&](int64_t a, int64_t b, int32_t sl) {
      if (b > a) out.push_back({a, b, sl});
    };
    for (uint32_t i = first; i < last; ++i) {
      // A slice outside the ranges, and so its descendants (inside it in
      // time), is never walked: its time is left to its parent's piece.
      if (!ranges_.Meets(s.ts[i], s.end(i))) continue;
      int64_t st = s.ts[i];
      // Close what is not an ancestor of slice i (Finalize's parent links).
      while (!stack.empty() && static_cast<int32_t>(stack.back()) != s.parent[i]) {
        int64_t e = std::min(s.end(stack.back()), st);
        emit(cur, e, static_cast<int32_t>(stack.back()));
        cur = std::max(cur, e);
        stack.pop_back();
      }
      emit(cur, st, stack.empty() ? kNone : static_cast<int32_t>(stack.back()));
      cur = std::max(cur, st);
      stack.push_back(i);
    }
    while (!stack.empty()) {
      int64_t e = s.end(stack.back());
      emit(cur, e, static_cast<int32_t>(stack.back()));
      cur = std::max(cur, e);
      stack.pop_back();
    }
  }

  // The last piece that starts before `at` on the track. A walk moves back
  // along a track piece by piece, so where it last looked on each track
  // (`cur`, one per walk) is tried first, then its neighbours, before a
  // binary search.
  const Piece* PieceBefore(uint32_t trk, int64_t at, Cursor& cur) {
    const auto& ps = Pieces(trk);
    if (ps.empty()) return nullptr;
    // The answer is index i - 1 where i is the first piece with start >= at.
    auto fits = [&](size_t i) { return (i == 0 || ps[i - 1].start < at) && (i == ps.size() || ps[i].start >= at); };
    size_t& h = cur.next[trk];
    size_t i = h;
    if (i <= ps.size()) {
      for (int k = 0; k < 4 && !fits(i); ++k) {
        if (i > 0 && ps[i - 1].start >= at) --i;
        else if (i < ps.size()) ++i;
      }
    }
    if (i > ps.size() || !fits(i))
      i = static_cast<size_t>(std::lower_bound(ps.begin(), ps.end(), at, [](const Piece& p, int64_t v) { return p.start < v; }) -
                              ps.begin());
    h = i;
    return i == 0 ? nullptr : &ps[i - 1];
  }

  int64_t SliceEnd(int32_t s) const { return t_.slices.end(static_cast<size_t>(s)); }

  // The innermost work piece ending latest in (lo, at] on any other track of
  // the same process or on any device queue: what a waiting thread waited for.
  bool JumpToLastFinisher(uint32_t trk, int64_t lo, int64_t at, std::vector<PathSegment>* segs, uint32_t* out_trk,
                          int64_t* out_at, bool& stalled, Cursor& cur) {
    if (stalled) return false;  // no second jump without progress: prevents cycles
    uint32_t proc = t_.tracks[trk].process;
    int64_t best_end = lo;
    uint32_t best_trk = UINT32_MAX;
    for (uint32_t k = 0; k < t_.tracks.size(); ++k) {
      if (k == trk) continue;
      const model::Track& tk = t_.tracks[k];
      if (tk.kind == model::TrackKind::kCpu) continue;
      if (tk.kind == model::TrackKind::kThread && tk.process != proc) continue;
      const Piece* p = PieceBefore(k, at + 1, cur);
      // Walk back over waiting pieces to the last real work ending by `at`.
      const auto& ps = Pieces(k);
      while (p) {
        bool work = p->slice != kNone && !IsContainer(t_.slices.kind[static_cast<size_t>(p->slice)]);
        if (work && p->end <= at) break;
        if (p == ps.data()) {
          p = nullptr;
          break;
        }
        --p;
        if (p->end <= lo) {
          p = nullptr;
          break;
        }
      }
      if (p && p->end > best_end) {
        best_end = p->end;
        best_trk = k;
      }
    }
    if (best_trk == UINT32_MAX) return false;
    segs->push_back({best_end, at, trk, kNone, SegmentType::kWait});
    stalled = best_end == at;
    *out_trk = best_trk;
    *out_at = best_end;
    return true;
  }

  // Inside a synchronization call: continue at the device activity that ended last in it.
  bool JumpToDevice(uint32_t trk, int64_t lo, int64_t at, int32_t sync_slice, std::vector<PathSegment>* segs,
                    uint32_t* out_trk, int64_t* out_at, Cursor& cur) {
    int64_t best_end = std::max(lo, t_.slices.ts[static_cast<size_t>(sync_slice)]);
    uint32_t best_trk = UINT32_MAX;
    for (uint32_t k = 0; k < t_.tracks.size(); ++k) {
      if (t_.tracks[k].kind != model::TrackKind::kDeviceQueue) continue;
      const Piece* p = PieceBefore(k, at + 1, cur);
      while (p && (p->slice == kNone || p->end > at)) {
        if (p == Pieces(k).data()) {
          p = nullptr;
          break;
        }
        --p;
      }
      if (p && p->end > best_end) {
        best_end = p->end;
        best_trk = k;
      }
    }
    if (best_trk == UINT32_MAX) return false;
    segs->push_back({best_end, at, trk, sync_slice, SegmentType::kWait});
    *out_trk = best_trk;
    *out_at = best_end;
    return true;
  }

  // At the start of piece p's slice (and of ancestors starting with it): the
  // latest-finishing predecessor decides where the path continues.
  void FollowDependencies(const Piece* p, int64_t start, std::vector<PathSegment>* segs, uint32_t* trk, int64_t* at,
                          bool* stalled, Cursor& cur) {
    if (p->slice == kNone) return;
    const auto& s = t_.slices;
    int64_t own_free = INT64_MIN;  // when this track last finished work before `at`
    const auto& ps = Pieces(*trk);
    for (const Piece* prev = PieceBefore(*trk, *at, cur); prev; prev = prev == ps.data() ? nullptr : prev - 1) {
      if (prev->end <= start) break;
      if (prev->slice != kNone && !IsContainer(s.kind[static_cast<size_t>(prev->slice)])) {
        own_free = prev->end;
        break;
      }
    }
    int32_t best = kNone;
    int64_t best_end = own_free;
    for (int32_t sl = p->slice; sl != kNone && s.ts[static_cast<size_t>(sl)] == *at;
         sl = s.parent[static_cast<size_t>(sl)]) {
      for (auto [to, src] : Incoming(sl)) {
        int64_t e = std::min(SliceEnd(src), *at);
        if (e > best_end && e > start) {
          best_end = e;
          best = src;
        }
      }
    }
    const bool on_device = t_.tracks[*trk].kind == model::TrackKind::kDeviceQueue;
    if (on_device && best != kNone && own_free != INT64_MIN && *at - own_free <= opt_.queue_gap_ns) {
      best = kNone;  // queue-bound: the previous kernel on this queue, not the launch
    }
    if (best == kNone) return;
    uint32_t src_trk = s.track[static_cast<size_t>(best)];
    if (best_end < *at) segs->push_back({best_end, *at, *trk, kNone, SegmentType::kWait});
    *trk = src_trk;
    *at = best_end;
    *stalled = false;
  }

  void Summarize(StepCriticalPath* out) {
    const auto& s = t_.slices;
    // Summed by (what, id) first and named after: a pair of strings built and
    // compared per segment was most of a report's critical-path time.
    enum : int { kWaitIn = 0, kIdle = 1, kSlice = 2 };  // kSlice + the slice's kind
    // (A hash of the few keys a path has: not an array over every name per step.)
    std::unordered_map<uint64_t, int64_t> by_id;
    auto at = [&by_id](int what, uint32_t id) -> int64_t& {
      return by_id[static_cast<uint64_t>(what) << 32 | id];  // ids: names, or tracks (kIdle)
    };
    std::vector<int32_t> on_path;  // the slices of the path's segments (sorted below)
    for (const PathSegment& g : out->segments) {
      if (g.type == SegmentType::kWait) {
        if (g.slice != kNone) at(kWaitIn, s.name[static_cast<size_t>(g.slice)]) += g.end - g.start;
        else at(kIdle, g.track) += g.end - g.start;
      } else {
        auto i = static_cast<size_t>(g.slice);
        at(kSlice + static_cast<int>(s.kind[i]), s.name[i]) += g.end - g.start;
        on_path.push_back(g.slice);
      }
    }
    std::map<std::pair<std::string, std::string>, int64_t> by;
    // (Summed into `by` in any order: sums of whole nanoseconds.)
    for (const auto& [key, v] : by_id) {
      const int what = static_cast<int>(key >> 32);
      const auto id = static_cast<uint32_t>(key);
      std::string kind, name;
      if (what == kWaitIn || what == kIdle) {
        kind = "wait";
        if (what == kWaitIn) {
          // Waits are named by what they were in, or by the thread's name (never
          // its id, so that two runs of a program compare).
          name = "in " + std::string(t_.strings.Get(id));
        } else {
          const model::Track& tk = t_.tracks[id];
          std::string thread(t_.strings.Get(tk.name));
          if (thread.empty()) thread = tk.kind == model::TrackKind::kDeviceQueue ? "queue " + std::to_string(tk.tid) : "thread";
          name = "idle " + thread;
        }
      } else {
        kind = model::SliceKindName(static_cast<SliceKind>(what - kSlice));
        name = std::string(t_.strings.Get(id));
      }
      by[{kind, name}] += v;
    }
    int64_t dur = std::max<int64_t>(1, out->end - out->start);
    for (auto& [k, v] : by)
      out->items.push_back({k.second, k.first, v, static_cast<double>(v) / static_cast<double>(dur)});
    std::sort(out->items.begin(), out->items.end(),
              [](const PathItem& a, const PathItem& b) { return a.on_path_ns > b.on_path_ns; });
    // Slack of off-path producers feeding on-path slices (by kind and name id,
    // one to one with the kind and name strings).
    std::sort(on_path.begin(), on_path.end());
    on_path.erase(std::unique(on_path.begin(), on_path.end()), on_path.end());
    std::map<std::pair<int, uint32_t>, SlackItem> slack_by_id;
    for (const PathSegment& g : out->segments) {
      if (g.slice == kNone || g.type == SegmentType::kWait) continue;
      int64_t consumer_start = s.ts[static_cast<size_t>(g.slice)];
      for (auto [to, src] : Incoming(g.slice)) {
        auto j = static_cast<size_t>(src);
        if (SliceEnd(src) > consumer_start || std::binary_search(on_path.begin(), on_path.end(), src)) continue;
        if (s.ts[j] < out->start) continue;
        // The consumer started when its critical input arrived; this input was
        // ready that much earlier.
        int64_t sl = consumer_start - SliceEnd(src);
        auto [it, fresh] = slack_by_id.try_emplace({static_cast<int>(s.kind[j]), s.name[j]}, SlackItem{"", "", sl, s.dur[j]});
        if (!fresh) it->second.slack_ns = std::min(it->second.slack_ns, sl);
      }
    }
    std::map<std::pair<std::string, std::string>, SlackItem> slack;
    for (auto& [key, v] : slack_by_id) {
      std::string kind = model::SliceKindName(static_cast<SliceKind>(key.first));
      std::string name(t_.strings.Get(key.second));
      v.name = name;
      v.kind = kind;
      slack.emplace(std::make_pair(kind, name), v);
    }
    for (auto& [k, v] : slack) out->slack.push_back(v);
    std::sort(out->slack.begin(), out->slack.end(),
              [](const SlackItem& a, const SlackItem& b) { return a.slack_ns < b.slack_ns; });
  }

  // Walks of several steps run at once (Run is const but for the pieces,
  // built once per track under their once_flag).
  const model::Trace& t_;
  CriticalPathOptions opt_;
  NameClasses nc_;
  Ranges ranges_;
  std::vector<uint32_t> blocking_;  // blocking runtime calls, sorted
  std::vector<std::pair<int32_t, int32_t>> incoming_;  // (to, from), sorted
  static constexpr size_t kMaxDenseIncoming = size_t{16} << 20;  // slices (64 MiB of offsets)
  int32_t in_first_ = 0;               // the first slice with an edge
  std::vector<uint32_t> in_start_;     // incoming_ of slice in_first_ + k: [in_start_[k], in_start_[k + 1])
  std::vector<std::vector<Piece>> pieces_;
  std::unique_ptr<std::once_flag[]> built_;
};

}  // namespace

namespace {

std::vector<StepCriticalPath> ComputePaths(const model::Trace& t, const CriticalPathOptions& opt) {
  std::vector<StepCriticalPath> out;
  std::vector<uint32_t> steps = StepSlicesByTime(t);
  if (steps.empty()) {
    // No steps: the whole trace is one window, on the thread with the most slices.
    if (t.tracks.empty() || t.slices.size() == 0) return out;
    uint32_t best = 0;
    size_t best_n = 0;
    for (uint32_t k = 0; k < t.track_slices.size(); ++k) {
      if (t.tracks[k].kind != model::TrackKind::kThread) continue;
      size_t n = t.track_slices[k].second - t.track_slices[k].first;
      if (n > best_n) {
        best_n = n;
        best = k;
      }
    }
    if (best_n == 0) return out;
    auto [start, end] = t.span_ns();
    Walker w(t, opt, Ranges({{start, end}}));
    out.push_back(w.Run(kNone, start, end, best));
    return out;
  }
  std::vector<size_t> chosen = EvenlySpread(steps.size(), std::max<size_t>(1, std::min(opt.max_steps, opt.max_walked)));
  std::vector<std::pair<int64_t, int64_t>> walked;
  for (size_t k : chosen) walked.emplace_back(t.slices.ts[steps[k]], t.slices.end(steps[k]));
  Walker w(t, opt, Ranges(std::move(walked)));
  out.resize(chosen.size());
  base::ParallelFor(chosen.size(), [&](size_t k) {
    uint32_t i = steps[chosen[k]];
    out[k] = w.Run(static_cast<int32_t>(i), t.slices.ts[i], t.slices.end(i), t.slices.track[i]);
  });
  return out;
}

}  // namespace

StepCriticalPath CriticalPathOfStep(const model::Trace& t, uint32_t step_slice, const CriticalPathOptions& opt) {
  int64_t ts = t.slices.ts[step_slice], end = t.slices.end(step_slice);
  Walker w(t, opt, Ranges({{ts, end}}));
  return w.Run(static_cast<int32_t>(step_slice), ts, end, t.slices.track[step_slice]);
}

std::vector<size_t> EvenlySpread(size_t total, size_t n) {
  n = std::min(total, n);
  std::vector<size_t> out(n);
  for (size_t k = 0; k < n; ++k) out[k] = k * total / n;
  return out;
}

std::vector<uint32_t> StepSlicesByTime(const model::Trace& t) {
  std::vector<uint32_t> steps;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == SliceKind::kStep) steps.push_back(static_cast<uint32_t>(i));
  std::sort(steps.begin(), steps.end(), [&t](uint32_t a, uint32_t b) { return t.slices.ts[a] < t.slices.ts[b]; });
  return steps;
}

std::shared_ptr<const std::vector<StepCriticalPath>> WalkedCriticalPaths(const model::Trace& t,
                                                                        const CriticalPathOptions& opt) {
  using Ptr = std::shared_ptr<const std::vector<StepCriticalPath>>;
  CriticalPathOptions all = opt;
  all.max_steps = opt.max_walked;
  auto compute = [&]() -> Ptr { return std::make_shared<const std::vector<StepCriticalPath>>(ComputePaths(t, all)); };
  Memo* memo = Memo::Of(t);
  if (memo == nullptr) return compute();
  return memo->Get<Ptr>("critical_paths/" + std::to_string(opt.queue_gap_ns) + "/" + std::to_string(opt.max_walked),
                        compute);
}

std::vector<StepCriticalPath> CriticalPaths(const model::Trace& t, const CriticalPathOptions& opt) {
  if (Memo::Of(t) == nullptr) return ComputePaths(t, opt);
  // The paths of up to kMaxWalkedSteps steps once (the findings want them all);
  // fewer are an evenly spread choice of them.
  auto shared = WalkedCriticalPaths(t, opt);
  const auto& paths = *shared;
  if (paths.empty() || paths[0].step_slice == kNone) return paths;  // (the whole trace as one window)
  std::vector<size_t> chosen = EvenlySpread(paths.size(), std::max<size_t>(1, opt.max_steps));
  if (chosen.size() == paths.size()) return paths;
  std::vector<StepCriticalPath> out;
  out.reserve(chosen.size());
  for (size_t k : chosen) out.push_back(paths[k]);
  return out;
}

std::vector<PathItem> AggregatePathItems(const std::vector<StepCriticalPath>& paths) {
  std::map<std::pair<std::string, std::string>, int64_t> by;
  int64_t total = 0;
  for (const auto& p : paths) {
    total = SatAdd(total, SatSub(p.end, p.start));
    for (const auto& it : p.items) {
      int64_t& v = by[{it.kind, it.name}];
      v = SatAdd(v, it.on_path_ns);
    }
  }
  std::vector<PathItem> out;
  double n = static_cast<double>(std::max<size_t>(1, paths.size()));
  for (auto& [k, v] : by)
    out.push_back({k.second, k.first, static_cast<int64_t>(static_cast<double>(v) / n),
                   total > 0 ? static_cast<double>(v) / static_cast<double>(total) : 0.0});
  std::sort(out.begin(), out.end(), [](const PathItem& a, const PathItem& b) { return a.on_path_ns > b.on_path_ns; });
  return out;
}

}  // namespace strata::analysis

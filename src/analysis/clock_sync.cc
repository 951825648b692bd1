#include "analysis/clock_sync.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <string_view>
#include <tuple>

#include "analysis/collective_match.h"

namespace strata::analysis {
namespace {

// A bound on the offset at the center: at drift d, offset >= v - d * u (a
// lower bound) or offset <= v - d * u (an upper one); u is the local time
// from the center.
struct Bound {
  double u, v;
};

double Cross(const Bound& o, const Bound& a, const Bound& b) {
  return (a.u - o.u) * (b.v - o.v) - (a.v - o.v) * (b.u - o.u);
}

// Monotone chain: the upper hull of the points (upper = true) or the lower.
// max over points of (v - d u) is reached on the upper hull's vertices, min on
// the lower's.
std::vector<Bound> Hull(std::vector<Bound> p, bool upper) {
  std::sort(p.begin(), p.end(), [](const Bound& a, const Bound& b) { return a.u != b.u ? a.u < b.u : a.v < b.v; });
  std::vector<Bound> h;
  for (const Bound& q : p) {
    while (h.size() >= 2) {
      double c = Cross(h[h.size() - 2], h.back(), q);
      if (upper ? c >= 0 : c <= 0) h.pop_back();
      else break;
    }
    h.push_back(q);
  }
  return h;
}

double Lower(const std::vector<Bound>& hull, double d) {
  double m = -std::numeric_limits<double>::infinity();
  for (const Bound& b : hull) m = std::max(m, b.v - d * b.u);
  return m;
}
double Upper(const std::vector<Bound>& hull, double d) {
  double m = std::numeric_limits<double>::infinity();
  for (const Bound& b : hull) m = std::min(m, b.v - d * b.u);
  return m;
}

constexpr double kMaxDrift = 1e-3;  // 1000 ppm: beyond any crystal's error

// Fits clock `o` against times already on the reference clock.
// lower: (local time, reference time) pairs where the reference event came first;
// upper: where o's event came first.
void Fit(const std::vector<std::pair<int64_t, int64_t>>& ref_first,
         const std::vector<std::pair<int64_t, int64_t>>& local_first, int64_t wall, ClockSync* out) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (auto& [local, ref] : ref_first) lo = std::min(lo, local), hi = std::max(hi, local);
  for (auto& [local, ref] : local_first) lo = std::min(lo, local), hi = std::max(hi, local);
  const int64_t center = lo + (hi - lo) / 2;
  // offset + d * (local - center) >= ref - local, for events of the reference first.
  std::vector<Bound> lows, ups;
  for (auto& [local, ref] : ref_first)
    lows.push_back({static_cast<double>(local - center), static_cast<double>(ref - local)});
  for (auto& [local, ref] : local_first)
    ups.push_back({static_cast<double>(local - center), static_cast<double>(ref - local)});
  out->constraints = lows.size() + ups.size();
  out->map.center_ns = center;
  if (lows.empty() || ups.empty()) {
    // Bounded from one side only: the wall clock, moved into the bound.
    double b = static_cast<double>(wall);
    if (!lows.empty()) b = std::max(b, Lower(Hull(lows, true), 0));
    if (!ups.empty()) b = std::min(b, Upper(Hull(ups, false), 0));
    out->map.offset_ns = std::llround(b);
    out->method = "wall clock, bounded by communication";
    out->uncertainty_ns = -1;
    out->wall_error_ns = wall - out->map.offset_ns;
    return;
  }
  std::vector<Bound> hl = Hull(lows, true), hu = Hull(ups, false);
  auto width = [&](double d) { return Upper(hu, d) - Lower(hl, d); };
  // The width is concave in the drift: ternary search for its top.
  auto widest = [&width]() {
    double a = -kMaxDrift, b = kMaxDrift;
    for (int i = 0; i < 200 && b - a > 1e-12; ++i) {
      double m1 = a + (b - a) / 3, m2 = b - (b - a) / 3;
      if (width(m1) < width(m2)) a = m1;
      else b = m2;
    }
    return (a + b) / 2;
  };
  double d = widest();
  if (width(d) < 0) {
    // Bounds that contradict each other at every drift: how many disagree
    // with the offset most of them agree with (a sweep at no drift).
    std::vector<std::pair<double, int>> ev;  // (value, +1 a lower bound, -1 an upper one)
    for (const Bound& b : lows) ev.push_back({b.v, +1});
    for (const Bound& b : ups) ev.push_back({b.v, -1});
    std::sort(ev.begin(), ev.end(), [](auto& x, auto& y) { return x.first != y.first ? x.first < y.first : x.second > y.second; });
    // Held at beta: lower bounds with v <= beta plus upper ones with v >= beta.
    long held = static_cast<long>(ups.size()), best = -1;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev[i].second > 0) ++held;
      best = std::max(best, held);
      if (ev[i].second < 0) --held;
    }
    out->dropped = lows.size() + ups.size() - static_cast<size_t>(best);
    // Works matched wrongly make any fit a guess (the HTA traces' sampled
    // ranks: the bounds most agree with still put the same collectives
    // milliseconds apart, where their wall clocks had them together): the
    // wall clock is kept, and the contradiction said.
    out->map.offset_ns = wall;
    out->method = "wall clock (communication bounds contradict each other: works matched wrongly)";
    out->violation_ns = std::llround(-width(d));
    out->uncertainty_ns = -1;
    out->wall_error_ns = 0;
    return;
  }
  double w = width(d);
  // No drift unless the data needs one: when offsets without drift satisfy
  // every bound, those are kept (the widest drift of loose bounds is noise,
  // not a measured rate); a drift is fitted only when none would fit.
  if (width(0) >= 0) d = 0, w = width(0);
  const double low = Lower(hl, d), up = Upper(hu, d);
  out->map.drift = d;
  out->map.offset_ns = std::llround((low + up) / 2);
  out->method = "communication";
  if (w < 0) out->violation_ns = std::llround(-w);
  out->uncertainty_ns = std::max<int64_t>(0, std::llround(w / 2));
  out->wall_error_ns = wall - out->map.offset_ns;
}

}  // namespace

std::vector<ClockSync> SynchronizeClocks(size_t clocks, uint32_t reference, const std::vector<int64_t>& wall,
                                         const std::vector<HappenedBefore>& pairs) {
  std::vector<ClockSync> out(clocks);
  if (clocks == 0) return out;
  std::vector<bool> done(clocks, false);
  for (size_t k = 0; k < clocks; ++k) {
    out[k].map.offset_ns = k < wall.size() ? wall[k] : 0;
    out[k].method = "wall clock";
  }
  out[reference] = ClockSync{};
  out[reference].method = "reference";
  out[reference].uncertainty_ns = 0;
  done[reference] = true;
  // Which clocks share pairs.
  std::vector<std::vector<size_t>> by_clock(clocks);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const HappenedBefore& p = pairs[i];
    if (p.a >= clocks || p.b >= clocks || p.a == p.b) continue;
    by_clock[p.a].push_back(i);
    by_clock[p.b].push_back(i);
  }
  // Breadth first from the reference: a clock is fitted against every clock
  // already placed that it shares pairs with, once they are all placed.
  std::deque<uint32_t> queue{reference};
  std::vector<bool> queued(clocks, false);
  queued[reference] = true;
  while (!queue.empty()) {
    uint32_t placed = queue.front();
    queue.pop_front();
    std::vector<uint32_t> next;
    for (size_t i : by_clock[placed]) {
      uint32_t o = pairs[i].a == placed ? pairs[i].b : pairs[i].a;
      if (!queued[o]) {
        queued[o] = true;
        next.push_back(o);
      }
    }
    for (uint32_t o : next) {
      std::vector<std::pair<int64_t, int64_t>> ref_first, local_first;
      for (size_t i : by_clock[o]) {
        const HappenedBefore& p = pairs[i];
        uint32_t other = p.a == o ? p.b : p.a;
        if (!done[other]) continue;
        if (p.a == o) local_first.push_back({p.before, out[other].map.Time(p.after)});
        else ref_first.push_back({p.after, out[other].map.Time(p.before)});
      }
      const int64_t w = o < wall.size() ? wall[o] : 0;
      Fit(ref_first, local_first, w, &out[o]);
      if (placed != reference) out[o].via = placed;
      done[o] = true;
      queue.push_back(o);
    }
  }
  return out;
}

std::vector<HappenedBefore> CollectivePairs(const model::CollectiveTable& c, const model::StringPool& names,
                                            const std::vector<uint32_t>& clock_of_process) {
  std::vector<HappenedBefore> out;
  const CollectiveInstances inst = MatchCollectives(c);
  struct Side {
    uint32_t clock;
    int64_t last_begin, first_end;
  };
  std::vector<Side> sides;
  for (size_t g = 0; g < inst.size(); ++g) {
    size_t first = inst.rows[inst.begin_of(g)];
    if (inst.end_of(g) - inst.begin_of(g) < 2 || !IsSynchronizingCollective(names.Get(c.name[first]))) continue;
    sides.clear();
    bool complete = true;
    for (size_t j = inst.begin_of(g); j < inst.end_of(g); ++j) {
      size_t r = inst.rows[j];
      if (c.dur[r] < 0 || c.process[r] >= clock_of_process.size()) {
        complete = false;  // a work not completed in the trace bounds nothing
        break;
      }
      uint32_t k = clock_of_process[c.process[r]];
      auto it = std::find_if(sides.begin(), sides.end(), [k](const Side& s) { return s.clock == k; });
      if (it == sides.end()) sides.push_back({k, c.ts[r], c.ts[r] + c.dur[r]});
      else it->last_begin = std::max(it->last_begin, c.ts[r]), it->first_end = std::min(it->first_end, c.ts[r] + c.dur[r]);
    }
    if (!complete || sides.size() < 2) continue;
    for (const Side& p : sides)
      for (const Side& q : sides)
        if (p.clock != q.clock) out.push_back({p.clock, q.clock, p.last_begin, q.first_end});
  }
  return out;
}

void CollectMessages(const model::Trace& t, uint32_t clock, std::vector<MessageEnd>* sends,
                     std::vector<MessageEnd>* receives) {
  constexpr uint64_t kAnyPeer = uint64_t{1} << 63;
  // torch.distributed's (python/strata/_torch.py) and MPI's (collectors/mpi) spans.
  const model::StringId send = t.strings.Find("torch.distributed.send"),
                        isend = t.strings.Find("torch.distributed.isend"),
                        recv = t.strings.Find("torch.distributed.recv"),
                        irecv = t.strings.Find("torch.distributed.irecv"), mpi_send = t.strings.Find("mpi.send"),
                        mpi_isend = t.strings.Find("mpi.isend"), mpi_recv = t.strings.Find("mpi.recv"),
                        mpi_irecv = t.strings.Find("mpi.irecv");
  constexpr model::StringId kNo = model::StringPool::kNotFound;
  if (send == kNo && isend == kNo && recv == kNo && irecv == kNo && mpi_send == kNo && mpi_isend == kNo &&
      mpi_recv == kNo && mpi_irecv == kNo)
    return;
  struct Recv {
    int64_t ts, end;
    uint64_t peer;
    bool blocking;
  };
  // Per process: torch's receives, and MPI's nonblocking ones.
  std::vector<std::vector<Recv>> recvs_of(t.processes.size()), mpi_irecvs_of(t.processes.size());
  const model::SliceTable& s = t.slices;
  for (size_t i = 0; i < s.size(); ++i) {
    const model::StringId n = s.name[i];
    if (n == kNo || (n != send && n != isend && n != recv && n != irecv && n != mpi_send && n != mpi_isend &&
                     n != mpi_recv && n != mpi_irecv))
      continue;
    if (s.kind[i] != model::SliceKind::kSpan || s.track[i] >= t.tracks.size()) continue;
    const uint32_t p = t.tracks[s.track[i]].process;
    if (p >= t.processes.size() || t.processes[p].rank < 0) continue;
    if (n == send || n == isend || n == mpi_send || n == mpi_isend) {
      if (s.arg[i] < kAnyPeer) sends->push_back({t.processes[p].rank, static_cast<int64_t>(s.arg[i]), clock, s.ts[i], s.ts[i]});
    } else if (n == mpi_recv) {
      // A blocking MPI_Recv has its data when it returns.
      if (s.arg[i] < kAnyPeer)
        receives->push_back({static_cast<int64_t>(s.arg[i]), t.processes[p].rank, clock, s.ts[i], s.ts[i] + s.dur[i]});
    } else if (n == mpi_irecv) {
      mpi_irecvs_of[p].push_back({s.ts[i], s.ts[i] + s.dur[i], s.arg[i], false});
    } else {
      recvs_of[p].push_back({s.ts[i], s.ts[i] + s.dur[i], s.arg[i], n == recv});
    }
  }
  // Each receive's arrival: its backend work's completion (works are made in
  // call order), where the process has one work per receive call: gloo's
  // recv works for torch's, the mpi:irecv rows (which end when the request
  // completes) for MPI_Irecv's.
  std::vector<std::vector<std::pair<uint64_t, int64_t>>> works_of(t.processes.size()),
      mpi_works_of(t.processes.size());  // (seq, completion)
  const model::CollectiveTable& c = t.collectives;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.process[i] >= works_of.size()) continue;
    const std::string_view name = t.strings.Get(c.name[i]);
    const int64_t done = c.dur[i] >= 0 ? c.ts[i] + c.dur[i] : -1;
    if (!mpi_irecvs_of[c.process[i]].empty() && name == "mpi:irecv")
      mpi_works_of[c.process[i]].push_back({c.seq[i], done});
    else if (!recvs_of[c.process[i]].empty() && name.find("recv") != std::string_view::npos && name.rfind("mpi:", 0) != 0)
      works_of[c.process[i]].push_back({c.seq[i], done});
  }
  auto pair_up = [&](std::vector<std::vector<Recv>>& spans_of, std::vector<std::vector<std::pair<uint64_t, int64_t>>>& rows_of) {
    for (uint32_t p = 0; p < spans_of.size(); ++p) {
      std::vector<Recv>& r = spans_of[p];
      if (r.empty()) continue;
      std::sort(r.begin(), r.end(), [](const Recv& a, const Recv& b) { return a.ts < b.ts; });
      std::vector<std::pair<uint64_t, int64_t>>& w = rows_of[p];
      std::sort(w.begin(), w.end());
      const bool by_work = w.size() == r.size();
      for (size_t k = 0; k < r.size(); ++k) {
        if (r[k].peer >= kAnyPeer) continue;
        int64_t arrived = by_work ? w[k].second : r[k].blocking ? r[k].end : -1;
        if (arrived < 0) continue;
        receives->push_back({static_cast<int64_t>(r[k].peer), t.processes[p].rank, clock, r[k].ts, arrived});
      }
    }
  };
  pair_up(recvs_of, works_of);
  pair_up(mpi_irecvs_of, mpi_works_of);
}

std::vector<HappenedBefore> MessagePairs(std::vector<MessageEnd> sends, std::vector<MessageEnd> receives) {
  auto by_pair = [](const MessageEnd& a, const MessageEnd& b) {
    return std::tie(a.from, a.to, a.order) < std::tie(b.from, b.to, b.order);
  };
  std::sort(sends.begin(), sends.end(), by_pair);
  std::sort(receives.begin(), receives.end(), by_pair);
  std::vector<HappenedBefore> out;
  size_t i = 0, j = 0;
  while (i < sends.size() && j < receives.size()) {
    const MessageEnd &a = sends[i], &b = receives[j];
    if (std::tie(a.from, a.to) < std::tie(b.from, b.to)) { ++i; continue; }
    if (std::tie(b.from, b.to) < std::tie(a.from, a.to)) { ++j; continue; }
    // The same pair: n-th with n-th.
    size_t i2 = i, j2 = j;
    while (i2 < sends.size() && sends[i2].from == a.from && sends[i2].to == a.to) ++i2;
    while (j2 < receives.size() && receives[j2].from == a.from && receives[j2].to == a.to) ++j2;
    for (size_t k = 0; i + k < i2 && j + k < j2; ++k)
      if (sends[i + k].clock != receives[j + k].clock)
        out.push_back({sends[i + k].clock, receives[j + k].clock, sends[i + k].ts, receives[j + k].ts});
    i = i2;
    j = j2;
  }
  return out;
}

OrderCheck CheckOrder(const std::vector<HappenedBefore>& pairs, const std::vector<model::ClockMap>& maps) {
  OrderCheck r;
  for (const HappenedBefore& p : pairs) {
    if (p.a >= maps.size() || p.b >= maps.size()) continue;
    ++r.pairs;
    int64_t gap = maps[p.a].Time(p.before) - maps[p.b].Time(p.after);
    if (gap > 0) {
      ++r.violated;
      r.worst_ns = std::max(r.worst_ns, gap);
    }
  }
  return r;
}

}  // namespace strata::analysis

// The REST API's lanes of time series: counters (per pixel, from block
// summaries where a pixel holds many points), a thread's scheduling states
// and its system calls over a range.
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "server/api_internal.h"

namespace strata::server {

using nlohmann::json;
using namespace api_detail;

ApiResponse Api::Counters(Served& s) {
  const model::Trace& t = *s.trace;
  const GroupedRows& rows = s.CounterRows();
  json out = json::array();
  for (size_t k = 0; k < t.counter_series.size(); ++k) {
    const model::CounterSeries& c = t.counter_series[k];
    size_t points = rows.Count(k);
    if (points == 0) continue;
    out.push_back({{"id", k},
                   {"name", std::string(t.strings.Get(c.name))},
                   {"unit", std::string(t.strings.Get(c.unit))},
                   {"process", c.process < t.processes.size() ? json(c.process) : json(nullptr)},
                   {"track", c.track == model::kNone ? json(nullptr) : json(c.track)},
                   {"points", points}});
  }
  return Ok({{"counters", std::move(out)}});
}

ApiResponse Api::Counter(Served& s, std::string_view id_text, const std::multimap<std::string, std::string>& params) {
  const model::Trace& t = *s.trace;
  size_t k = 0;
  if (!ParseNumber(id_text, &k) || k >= t.counter_series.size()) return Error(404, "no such counter");
  Range r;
  // (the range is half-open: a point at the trace's very end is in its default)
  if (std::string e = ParseRange(params, s.start_ns, s.end_ns + 1, true, &r); !e.empty()) return Error(400, e);
  // (copies, not a structured binding: clang 14 lets no lambda capture one)
  const int64_t start = r.start, end = r.end;
  const int pixels = r.pixels;
  // Per pixel: [its start, the lowest, the highest and the last value in it],
  // after the value in force at `start` (the last point before it).
  auto [first, it, last] = s.CounterRows().Find(k, t.counters.ts, start);
  json before = it == first ? json(nullptr) : json(t.counters.value[*(it - 1)]);
  json buckets = json::array();
  const double per = static_cast<double>(end - start) / pixels;
  int64_t cur = -1;
  double lo = 0, hi = 0, lastv = 0;
  auto flush = [&] {
    if (cur >= 0)
      buckets.push_back({start + static_cast<int64_t>(static_cast<double>(cur) * per), std::isfinite(lo) ? lo : 0,
                         std::isfinite(hi) ? hi : 0, std::isfinite(lastv) ? lastv : 0});
  };
  // Points (or blocks of points) in time order: each lands in the pixel of its first time.
  auto add = [&](int64_t ts, double a, double b, double v) {
    int64_t px = static_cast<int64_t>(static_cast<double>(ts - start) / per);
    if (px != cur) {
      flush();
      cur = px;
      lo = a, hi = b;
    }
    lo = std::min(lo, a);
    hi = std::max(hi, b);
    lastv = v;
  };
  const auto& cs = t.counters;
  const GroupedRows& rows = s.CounterRows();
  auto stop = std::lower_bound(it, last, end, [&cs](uint32_t row, int64_t v) { return cs.ts[row] < v; });
  size_t p = static_cast<size_t>(it - rows.rows.begin()), q = static_cast<size_t>(stop - rows.rows.begin());
  const size_t group = rows.offsets[k];
  if (q - p > 8 * static_cast<size_t>(pixels)) {
    // Many points per pixel: the largest blocks that are aligned, inside the
    // range and no wider than a pixel; single points where none is.
    const CounterLod& lod = s.CounterBlocks();
    while (p < q) {
      bool used = false;
      for (size_t l = lod.levels.size(); l-- > 0 && !used;) {
        const CounterLod::Level& L = lod.levels[l];
        size_t rel = p - group;
        if (rel % L.size != 0 || p + L.size > q) continue;
        size_t b = L.base[k] + rel / L.size;
        if (static_cast<double>(L.t1[b] - L.t0[b]) > per) continue;
        add(L.t0[b], L.lo[b], L.hi[b], L.last[b]);
        p += L.size;
        used = true;
      }
      if (!used) {
        double v = cs.value[rows.rows[p]];
        add(cs.ts[rows.rows[p]], v, v, v);
        ++p;
      }
    }
  } else {
    for (; p < q; ++p) {
      double v = cs.value[rows.rows[p]];
      add(cs.ts[rows.rows[p]], v, v, v);
    }
  }
  flush();
  if (before.is_number() && !std::isfinite(before.get<double>())) before = nullptr;
  return Ok({{"id", k}, {"start", start}, {"end", end}, {"before", std::move(before)}, {"buckets", std::move(buckets)}});
}

ApiResponse Api::Syscalls(Served& s, std::string_view track_text, const std::multimap<std::string, std::string>& params) {
  const model::Trace& t = *s.trace;
  uint32_t track = 0;
  Range r;
  if (auto bad = ThreadLane(s.trace->tracks.size(), s.start_ns, s.end_ns, track_text, params, &track, &r))
    return *bad;
  const int64_t start = r.start, end = r.end;
  const double per = static_cast<double>(end - start) / r.pixels;
  // Calls of a pixel or more as they are; shorter ones pooled per pixel:
  // [start, end, the name that took most of the pixel, how many calls].
  const auto& sc = t.syscalls;
  json out = json::array();
  int64_t count = 0;
  std::map<model::StringId, int64_t> names;
  WalkIntervals(
      s.SyscallRows(), track, sc.ts, sc.dur, start, end, per,
      [&](uint32_t row, int64_t a, int64_t b) { out.push_back({a, b, std::string(t.strings.Get(sc.name[row])), 1}); },
      [&](uint32_t row, int64_t a, int64_t b) {
        ++count;
        names[sc.name[row]] += std::max<int64_t>(1, b - a);
      },
      [&](int64_t pixel) {
        auto top = std::max_element(names.begin(), names.end(), [](auto& x, auto& y) { return x.second < y.second; });
        out.push_back({start + static_cast<int64_t>(static_cast<double>(pixel) * per),
                       start + static_cast<int64_t>(static_cast<double>(pixel + 1) * per),
                       std::string(t.strings.Get(top->first)), count});
        names.clear();
        count = 0;
      });
  return Ok({{"track", track}, {"start", start}, {"end", end}, {"syscalls", std::move(out)}});
}

ApiResponse Api::ThreadStates(Served& s, std::string_view track_text,
                              const std::multimap<std::string, std::string>& params) {
  const model::Trace& t = *s.trace;
  uint32_t track = 0;
  Range r;
  if (auto bad = ThreadLane(s.trace->tracks.size(), s.start_ns, s.end_ns, track_text, params, &track, &r))
    return *bad;
  const int64_t start = r.start, end = r.end;
  // Intervals of a pixel or more as they are (clipped to the range); shorter
  // ones pooled per pixel, which takes the state that held most of its time.
  // Neighbours in the same state are joined.
  const auto& st = t.thread_states;
  constexpr int kStates = static_cast<int>(model::ThreadState::kUnknown) + 1;
  const double per = static_cast<double>(end - start) / r.pixels;
  struct Span {
    int64_t a, b;
    int state;
  };
  std::vector<Span> out;
  auto emit = [&](int64_t a, int64_t b, int state) {
    if (!out.empty()) a = std::max(a, out.back().b);  // (a pooled pixel may reach into the next interval)
    if (b <= a) return;
    if (!out.empty() && out.back().state == state && out.back().b >= a) {
      out.back().b = std::max(out.back().b, b);
      return;
    }
    out.push_back({a, b, state});
  };
  auto state_of = [&st](uint32_t row) {
    int state = static_cast<int>(st.state[row]);
    return state < 0 || state >= kStates ? kStates - 1 : state;
  };
  std::array<int64_t, kStates> in{};
  WalkIntervals(
      s.StateRows(), track, st.ts, st.dur, start, end, per,
      [&](uint32_t row, int64_t a, int64_t b) { emit(a, b, state_of(row)); },
      [&](uint32_t row, int64_t a, int64_t b) { in[static_cast<size_t>(state_of(row))] += b - a; },
      [&](int64_t pixel) {
        int best = static_cast<int>(std::max_element(in.begin(), in.end()) - in.begin());
        emit(start + static_cast<int64_t>(static_cast<double>(pixel) * per),
             start + static_cast<int64_t>(static_cast<double>(pixel + 1) * per), best);
        in.fill(0);
      });
  json states = json::array();
  for (const Span& x : out)
    states.push_back({x.a, x.b, model::ThreadStateName(static_cast<model::ThreadState>(x.state))});
  return Ok({{"track", track}, {"start", start}, {"end", end}, {"states", std::move(states)}});
}

}  // namespace strata::server

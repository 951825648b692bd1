#include "analysis/comms.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "analysis/collective_match.h"
#include "analysis/summary.h"
#include "base/intervals.h"

namespace strata::analysis {
namespace {

// Steps per rank whose breakdown is computed for the phase (evenly spread).
constexpr size_t kMaxPhaseSteps = 64;

std::string RankLabel(const model::Trace& t, uint32_t process) {
  const model::Process& p = t.processes[process];
  if (p.rank >= 0) return "rank " + std::to_string(p.rank) + " (pid " + std::to_string(p.pid) + ")";
  return "pid " + std::to_string(p.pid);
}

int64_t Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Each process's steps (kStep slices of its threads), in time order: one pass.
std::vector<std::vector<size_t>> StepsByProcess(const model::Trace& t) {
  std::vector<std::vector<size_t>> out(t.processes.size());
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == model::SliceKind::kStep) {
      uint32_t p = t.tracks[t.slices.track[i]].process;
      if (p < out.size()) out[p].push_back(i);
    }
  for (auto& v : out)
    std::sort(v.begin(), v.end(), [&t](size_t a, size_t b) { return t.slices.ts[a] < t.slices.ts[b]; });
  return out;
}

// The windows of a rank's counted steps whose parts are measured (at most
// kMaxPhaseSteps, evenly spread; the warm-up step left out).
void PhaseWindows(const model::Trace& t, const std::vector<size_t>& steps, std::vector<StepWindow>* out) {
  size_t skip = steps.size() > 4 ? 1 : 0;
  if (steps.size() <= skip) return;
  size_t n = steps.size() - skip;
  size_t take = std::min(n, kMaxPhaseSteps);
  for (size_t k = 0; k < take; ++k) {
    size_t i = steps[skip + k * n / take];
    out->push_back({t.slices.arg[i], t.slices.ts[i], t.slices.dur[i], t.slices.track[i], true, true});
  }
}

// Per-step parts of a rank's windows, waits inside its collectives set apart.
void RankPhases(const std::vector<std::vector<HostInterval>>& timelines, size_t first, size_t count,
                const Intervals& in_flight, RankComms* r) {
  if (count == 0) return;
  StepParts sum{};
  int64_t wait = 0;
  for (size_t w = first; w < first + count; ++w)
    for (const HostInterval& h : timelines[w]) {
      int64_t d = h.end - h.start;
      if (h.part == StepPart::kIdle || h.part == StepPart::kSync) {
        int64_t o = OverlapWith(in_flight, h.start, h.end);
        wait += o;
        d -= o;
      }
      sum[static_cast<size_t>(h.part)] += d;
    }
  r->counted_steps = count;
  for (size_t p = 0; p < kStepParts; ++p) r->parts[p] = sum[p] / static_cast<int64_t>(count);
  r->comm_wait = wait / static_cast<int64_t>(count);
}

}  // namespace

CommsInput CommsInputOf(const model::Trace& t) {
  CommsInput in;
  const model::CollectiveTable& c = t.collectives;
  for (size_t i = 0; i < c.size(); ++i)
    if (c.process[i] >= t.processes.size()) return in;  // not a model an importer built
  // The processes with collectives are the ranks.
  std::vector<uint32_t> index_of(t.processes.size(), UINT32_MAX);  // process -> its index in ranks
  for (size_t i = 0; i < c.size(); ++i) index_of[c.process[i]] = 0;
  for (uint32_t proc = 0; proc < index_of.size(); ++proc) {
    if (index_of[proc] == UINT32_MAX) continue;
    index_of[proc] = static_cast<uint32_t>(in.ranks.size());
    RankComms r;
    r.process = proc;
    r.rank = t.processes[proc].rank;
    r.pid = t.processes[proc].pid;
    r.label = RankLabel(t, proc);
    in.ranks.push_back(std::move(r));
  }
  // Its rows, their totals and in-flight time.
  std::vector<Intervals> in_flight(in.ranks.size());
  std::vector<model::StringId> name_of(t.strings.size(), UINT32_MAX);
  model::CollectiveTable& out = in.collectives;
  // Times, durations and sizes no real collective has (a damaged trace's) are
  // clamped, so that the sums and differences below stay in range.
  constexpr int64_t kMaxTime = int64_t{1} << 61, kMaxAmount = int64_t{1} << 50;
  for (size_t i = 0; i < c.size(); ++i) {
    const uint32_t k = index_of[c.process[i]];
    RankComms& r = in.ranks[k];
    const int64_t ts = std::clamp(c.ts[i], -kMaxTime, kMaxTime);
    const int64_t dur = c.dur[i] < 0 ? -1 : std::min(c.dur[i], kMaxAmount);
    const int64_t bytes = std::clamp<int64_t>(c.bytes[i], 0, kMaxAmount);
    ++r.collectives;
    r.bytes += bytes;
    if (dur >= 0) in_flight[k].push_back({ts, ts + dur});
    model::StringId& n = name_of[c.name[i]];
    if (n == UINT32_MAX) n = in.names.Intern(t.strings.Get(c.name[i]));
    out.process.push_back(k);
    out.name.push_back(n);
    out.seq.push_back(c.seq[i]);
    out.ts.push_back(ts);
    out.dur.push_back(dur);
    out.track.push_back(0);
    out.end_track.push_back(0);
    out.bytes.push_back(bytes);
    out.tensors.push_back(c.tensors[i]);
  }
  for (size_t k = 0; k < in.ranks.size(); ++k) {
    SortAndMerge(in_flight[k]);
    for (auto& iv : in_flight[k]) in.ranks[k].in_flight_ns += iv.second - iv.first;
  }
  // Steps and phases per rank: every rank's windows broken down in one pass.
  std::vector<std::vector<size_t>> steps_of = StepsByProcess(t);
  std::vector<StepWindow> windows;
  std::vector<size_t> first(in.ranks.size() + 1, 0);
  for (size_t k = 0; k < in.ranks.size(); ++k) {
    RankComms& r = in.ranks[k];
    const std::vector<size_t>& steps = steps_of[r.process];
    r.steps = steps.size();
    std::vector<int64_t> durs;
    for (size_t j = steps.size() > 4 ? 1 : 0; j < steps.size(); ++j) durs.push_back(t.slices.dur[steps[j]]);
    r.step_p50 = Median(durs);
    first[k] = windows.size();
    PhaseWindows(t, steps, &windows);
  }
  first[in.ranks.size()] = windows.size();
  if (!windows.empty()) {
    std::vector<std::vector<HostInterval>> timelines;
    BreakdownWindows(t, windows, &timelines);
    for (size_t k = 0; k < in.ranks.size(); ++k)
      RankPhases(timelines, first[k], first[k + 1] - first[k], in_flight[k], &in.ranks[k]);
  }
  return in;
}

void AppendCommsInput(CommsInput* in, const CommsInput& more, const model::ClockMap& clock) {
  const uint32_t base = static_cast<uint32_t>(in->ranks.size());
  in->ranks.insert(in->ranks.end(), more.ranks.begin(), more.ranks.end());
  std::vector<model::StringId> name_of(more.names.size(), UINT32_MAX);
  const model::CollectiveTable& c = more.collectives;
  model::CollectiveTable& out = in->collectives;
  for (size_t i = 0; i < c.size(); ++i) {
    model::StringId& n = name_of[c.name[i]];
    if (n == UINT32_MAX) n = in->names.Intern(more.names.Get(c.name[i]));
    out.process.push_back(base + c.process[i]);
    out.name.push_back(n);
    out.seq.push_back(c.seq[i]);
    out.ts.push_back(clock.Time(c.ts[i]));
    out.dur.push_back(clock.Duration(c.dur[i]));
    out.track.push_back(0);
    out.end_track.push_back(0);
    out.bytes.push_back(c.bytes[i]);
    out.tensors.push_back(c.tensors[i]);
  }
}

CommsSummary AnalyzeComms(const model::Trace& t) { return CombineComms(CommsInputOf(t)); }

CommsSummary CombineComms(const CommsInput& in) {
  CommsSummary s;
  const model::CollectiveTable& c = in.collectives;
  if (in.ranks.size() < 2 || c.size() == 0) return s;
  // By rank, then pid.
  std::vector<size_t> order(in.ranks.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&in](size_t x, size_t y) {
    const RankComms& a = in.ranks[x];
    const RankComms& b = in.ranks[y];
    if ((a.rank < 0) != (b.rank < 0)) return a.rank >= 0;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.pid < b.pid;
  });
  std::vector<size_t> index_of(in.ranks.size(), 0);  // input index -> its index in s.ranks
  for (size_t k = 0; k < order.size(); ++k) {
    s.ranks.push_back(in.ranks[order[k]]);
    index_of[order[k]] = k;
  }

  // Totals by kind and by size.
  std::map<model::StringId, CollectiveKind> kinds;
  std::map<int, SizeBucket> sizes;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.process[i] >= in.ranks.size()) return {};  // not an input CommsInputOf built
    CollectiveKind& k = kinds[c.name[i]];
    ++k.count;
    k.bytes += c.bytes[i];
    if (c.dur[i] >= 0) {
      k.total_ns += c.dur[i];
      int bucket = 0;
      for (int64_t b = c.bytes[i]; b >= 1024 && bucket < 16; b >>= 2) ++bucket;
      SizeBucket& sb = sizes[bucket];
      sb.min_bytes = bucket == 0 ? 0 : int64_t{1024} << (2 * (bucket - 1));
      sb.max_bytes = int64_t{1024} << (2 * bucket);
      ++sb.count;
      sb.bytes += c.bytes[i];
      sb.ns += c.dur[i];
    }
  }

  // Instances: the same collective on every rank (collective_match.h), by
  // occurrence; by time where occurrences do not correspond.
  CollectiveInstances inst = MatchCollectives(c);
  if (in.clock_tolerance_ns >= 0) {
    const MatchCheck check = CheckInstances(inst, c, in.names, in.ranks.size(), in.clock_tolerance_ns);
    s.checked = check.checked;
    s.apart = check.apart;
    if (check.checked >= 2 && check.apart * 5 > check.checked) {
      inst = MatchCollectivesByTime(c);
      s.matched_by = "time";
    }
  }
  std::map<model::StringId, std::vector<int64_t>> skews;
  std::vector<std::pair<int64_t, size_t>> arrivals;  // (begin, rank index)
  std::vector<Intervals> waits(s.ranks.size()), lates(s.ranks.size());
  for (size_t g = 0; g < inst.size(); ++g) {
    arrivals.clear();
    for (size_t j = inst.begin_of(g); j < inst.end_of(g); ++j) {
      size_t row = inst.rows[j];
      arrivals.push_back({c.ts[row], index_of[c.process[row]]});
    }
    model::StringId name = c.name[inst.rows[inst.begin_of(g)]];
    ++s.instances;
    if (arrivals.size() < s.ranks.size()) {
      ++s.partial;
      continue;
    }
    ++s.matched;
    std::sort(arrivals.begin(), arrivals.end());
    int64_t last = arrivals.back().first;
    skews[name].push_back(last - arrivals.front().first);
    for (auto& [ts, k] : arrivals)
      if (ts < last) waits[k].push_back({ts, last});
    size_t late = arrivals.back().second;
    ++s.ranks[late].last_arrivals;
    if (arrivals[arrivals.size() - 2].first < last) lates[late].push_back({arrivals[arrivals.size() - 2].first, last});
  }
  // Sequence numbers whose works differ across ranks (by name): begun in
  // another order, or other collectives issued.
  {
    uint64_t max_seq = 0;
    for (size_t i = 0; i < c.size(); ++i) max_seq = std::max(max_seq, c.seq[i]);
    if (max_seq < 4 * c.size() + 16) {  // dense, as recorded: 0, 1, ... per process
      std::vector<model::StringId> first(max_seq + 1, UINT32_MAX);
      std::vector<uint8_t> differs(max_seq + 1, 0);
      std::map<model::StringId, bool> p2p;  // a send and its recv share a number
      for (size_t i = 0; i < c.size(); ++i) {
        auto [it, added] = p2p.emplace(c.name[i], false);
        if (added) it->second = IsPointToPoint(in.names.Get(c.name[i]));
        if (it->second) continue;
        model::StringId& f = first[c.seq[i]];
        if (f == UINT32_MAX) f = c.name[i];
        else if (f != c.name[i]) differs[c.seq[i]] = 1;
      }
      for (uint8_t d : differs) s.mismatched += d;
    }
  }
  // As time, not sums: DDP's buckets of one step are entered late together.
  for (size_t k = 0; k < s.ranks.size(); ++k) {
    SortAndMerge(waits[k]);
    SortAndMerge(lates[k]);
    for (auto& iv : waits[k]) s.ranks[k].waited_ns += iv.second - iv.first;
    for (auto& iv : lates[k]) s.ranks[k].late_ns += iv.second - iv.first;
  }
  for (auto& [name, k] : kinds) {
    k.name = std::string(in.names.Get(name));
    auto it = skews.find(name);
    if (it != skews.end()) {
      k.skew_p50 = Median(it->second);
      k.skew_max = *std::max_element(it->second.begin(), it->second.end());
    }
    s.kinds.push_back(k);
  }
  std::sort(s.kinds.begin(), s.kinds.end(), [](const CollectiveKind& a, const CollectiveKind& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  for (auto& [bucket, sb] : sizes) s.sizes.push_back(sb);

  // The straggler: last to arrive at most matched collectives, by a margin
  // that is not noise (a rank that is last by microseconds makes no one wait).
  if (s.matched == 0) return s;
  size_t worst = 0;
  for (size_t k = 1; k < s.ranks.size(); ++k)
    if (s.ranks[k].late_ns > s.ranks[worst].late_ns) worst = k;
  const RankComms& w = s.ranks[worst];
  s.late_share = static_cast<double>(w.last_arrivals) / static_cast<double>(s.matched);
  size_t steps = w.steps > 0 ? w.steps : 1;
  s.late_per_step_ns = w.late_ns / static_cast<int64_t>(steps);
  int64_t all_late = 0;
  for (const RankComms& r : s.ranks) all_late += r.late_ns;
  bool dominant = all_late > 0 && static_cast<double>(w.late_ns) >= 0.5 * static_cast<double>(all_late);
  bool often = s.late_share >= 1.5 / static_cast<double>(s.ranks.size());
  if (!dominant || !often || w.step_p50 <= 0 ||
      static_cast<double>(s.late_per_step_ns) < 0.02 * static_cast<double>(w.step_p50))
    return s;
  s.straggler = static_cast<int>(worst);
  // Its phase: the part of its steps furthest above the others' median.
  if (w.counted_steps > 0) {
    int64_t best = 0;
    for (size_t p = 0; p < kStepParts; ++p) {
      std::vector<int64_t> others;
      for (size_t k = 0; k < s.ranks.size(); ++k)
        if (k != worst && s.ranks[k].counted_steps > 0) others.push_back(s.ranks[k].parts[p]);
      if (others.empty()) continue;
      int64_t excess = w.parts[p] - Median(others);
      if (excess > best) {
        best = excess;
        s.phase = StepPartName(static_cast<StepPart>(p));
        s.phase_part = static_cast<int>(p);
      }
    }
    s.phase_excess_ns = best;
    if (static_cast<double>(best) < 0.3 * static_cast<double>(s.late_per_step_ns)) {
      s.phase.clear();
      s.phase_part = -1;
    }
  }
  return s;
}

}  // namespace strata::analysis

#include "importers/strata/marker_steps.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

namespace strata::importers::strata_ctf {
namespace {

using model::SliceKind;

// What a span is as a step marker: its rank (lower is preferred) or -1.
int MarkerRank(std::string_view name) {
  if (name == "keras.train_step") return 0;
  if (name.substr(0, 12) == "tf.function ") return 1;
  if (name == "tf.Session.run") return 2;
  if (name == "keras.predict_step" || name == "keras.test_step") return 3;
  return -1;
}

}  // namespace

void TileSteps(LoadContext& ctx, model::StringId step_name, uint32_t track, const std::vector<uint32_t>& markers,
               std::vector<std::pair<uint32_t, int64_t>>* partial) {
  model::Trace& t = ctx.trace();
  int64_t prev = INT64_MIN;
  uint64_t n = 0;
  for (uint32_t i : markers) {
    // The first step begins with its marker (1 ns before it, so that the step
    // holds the marker rather than the two nesting either way).
    int64_t begin = prev == INT64_MIN ? t.slices.ts[i] - 1 : prev;
    if (prev == INT64_MIN) partial->emplace_back(track, begin);
    int64_t end = std::max(begin, t.slices.end(i));
    ctx.AddSlice(OpenSlice{begin, step_name, SliceKind::kStep, n++}, end, track, 0);
    prev = end;
  }
}

void AddMarkerSteps(LoadContext& ctx, model::StringId step_name, std::vector<std::pair<uint32_t, int64_t>>* partial) {
  model::Trace& t = ctx.trace();
  std::set<uint32_t> with_steps;
  // Candidates per (process, rank, name, track): time and calls.
  struct Use {
    int64_t time = 0;
    size_t calls = 0;
  };
  // (A marker's argument tells calls of one name apart: a Session.run's fetches.)
  std::map<std::tuple<uint32_t, int, model::StringId, uint64_t, uint32_t>, Use> uses;
  std::map<model::StringId, int> rank_of;
  for (uint32_t i = 0; i < t.slices.size(); ++i) {
    uint32_t trk = t.slices.track[i];
    if (trk >= t.tracks.size()) continue;
    uint32_t p = t.tracks[trk].process;
    if (t.slices.kind[i] == SliceKind::kStep) with_steps.insert(p);
    if (t.slices.kind[i] != SliceKind::kSpan || t.tracks[trk].kind != model::TrackKind::kThread) continue;
    auto [it, fresh] = rank_of.try_emplace(t.slices.name[i], -1);
    if (fresh) it->second = MarkerRank(t.strings.Get(t.slices.name[i]));
    if (it->second < 0) continue;
    Use& u = uses[{p, it->second, t.slices.name[i], t.slices.arg[i], trk}];
    u.time += t.slices.dur[i];
    ++u.calls;
  }
  // Per process: the best rank present; within it the (name, track) with the most time.
  struct Pick {
    int rank = 99;
    int64_t time = -1;
    model::StringId name = 0;
    uint64_t arg = 0;
    uint32_t track = 0;
  };
  std::map<uint32_t, Pick> pick;
  for (const auto& [key, u] : uses) {
    auto [p, rank, name, arg, trk] = key;
    if (with_steps.count(p)) continue;
    // A function called once is the program's setup or its only run, not a loop.
    if (rank != 0 && u.calls < 2) continue;
    Pick& b = pick[p];
    if (rank < b.rank || (rank == b.rank && u.time > b.time)) b = {rank, u.time, name, arg, trk};
  }
  for (const auto& [p, b] : pick) {
    std::vector<uint32_t> markers;
    for (uint32_t i = 0; i < t.slices.size(); ++i)
      if (t.slices.track[i] == b.track && t.slices.name[i] == b.name && t.slices.arg[i] == b.arg &&
          t.slices.kind[i] == SliceKind::kSpan)
        markers.push_back(i);
    std::sort(markers.begin(), markers.end(), [&](uint32_t a, uint32_t c) { return t.slices.ts[a] < t.slices.ts[c]; });
    TileSteps(ctx, step_name, b.track, markers, partial);
  }
}

void AddSampleMarks(const model::Trace& t, std::vector<BatchMark>* marks) {
  model::StringId name = t.strings.Find("strata.samples");
  if (name == model::StringPool::kNotFound) return;
  // Samples fed to a Session.run count when it is the step's run (the fetches
  // a thread runs most often), not an evaluation run beside it.
  model::StringId run = t.strings.Find("tf.Session.run");
  std::map<uint32_t, std::map<uint64_t, size_t>> runs;  // track -> fetches -> calls
  if (run != model::StringPool::kNotFound)
    for (uint32_t i = 0; i < t.slices.size(); ++i)
      if (t.slices.name[i] == run && t.slices.kind[i] == SliceKind::kSpan) ++runs[t.slices.track[i]][t.slices.arg[i]];
  std::map<uint32_t, uint64_t> step_run;
  for (const auto& [trk, by] : runs)
    step_run[trk] = std::max_element(by.begin(), by.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  for (uint32_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices.name[i] != name || t.slices.kind[i] != SliceKind::kSpan || t.slices.arg[i] == 0) continue;
    int32_t p = t.slices.parent[i];
    if (p != model::kNone && t.slices.name[static_cast<size_t>(p)] == run &&
        t.slices.arg[static_cast<size_t>(p)] != step_run[t.slices.track[i]])
      continue;
    marks->push_back({t.slices.track[i], t.slices.ts[i], t.slices.arg[i], 0, true});
  }
}

}  // namespace strata::importers::strata_ctf

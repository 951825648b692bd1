#include "importers/strata/marker_steps.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

namespace strata::importers::strata_ctf {
namespace {

using model::SliceKind;

// strata._jax's span around a gradient taken outside any jitted function.
bool EagerGradient(std::string_view name) {
  return name.substr(0, 9) == "jax.grad " || name.substr(0, 19) == "jax.value_and_grad ";
}

// The call an eager training step makes once: its gradient (JAX) or its
// optimizer's apply_gradients() (TensorFlow, strata._keras).
bool EagerStep(std::string_view name) { return EagerGradient(name) || name == "keras.optimizer.apply"; }

// What a span is as a step marker: its rank (lower is preferred) or -1.
int MarkerRank(std::string_view name) {
  if (name == "keras.train_step") return 0;
  if (name.substr(0, 12) == "tf.function " || name.substr(0, 8) == "jax.jit " || name.substr(0, 9) == "jax.pmap ")
    return 1;
  // TF1's training run; an eager GradientTape loop's optimizer call (strata._tf);
  // an eager JAX loop's gradient (strata._jax: jax.grad or value_and_grad called
  // outside any jitted function).
  if (name == "tf.Session.run" || name == "keras.optimizer.apply" || EagerGradient(name)) return 2;
  if (name == "keras.predict_step" || name == "keras.test_step" || name == "ort.run") return 3;
  return -1;
}

// JAX dispatches asynchronously: its step function returns before the step's
// work is done, and the program waits for it after the call. Its steps are
// bounded by the calls' starts, so that each holds its own wait.
bool AsyncMarker(std::string_view name) { return name.substr(0, 4) == "jax."; }

bool IsWaitName(std::string_view n) { return n == "jax.block_until_ready" || n == "jax.device_read"; }

// Steps of an asynchronous step function: each from its call's start to the
// next call's; the last one to the end of the first wait after its call. Where
// the Python side saw the loop's head after a call (`heads`, sorted (ts,
// seen)), the step ends there instead: the iteration's own work after its
// call and its wait (logging, the next batch's slicing and device_put) is its
// own, and each step is one iteration of the loop.
void TileAtStarts(LoadContext& ctx, model::StringId step_name, uint32_t track, const std::vector<uint32_t>& markers,
                  std::vector<std::pair<uint32_t, int64_t>>* partial, const std::vector<std::pair<int64_t, bool>>& heads) {
  model::Trace& t = ctx.trace();
  if (markers.empty()) return;
  partial->emplace_back(track, t.slices.ts[markers[0]]);
  // The head seen after call k, before call k + 1 begins (INT64_MAX: none).
  // (Not where the Python side stopped looking: the iteration ran on past
  // there, and the next call's start is where the step would end anyway. Seen
  // stopping inside the first iteration's second jitted function, compiling.)
  auto head_after = [&](size_t k) {
    int64_t until = k + 1 < markers.size() ? t.slices.ts[markers[k + 1]] : INT64_MAX;
    for (auto h = std::upper_bound(heads.begin(), heads.end(), std::make_pair(t.slices.end(markers[k]), true));
         h != heads.end() && h->first <= until; ++h)
      if (h->second) return h->first;
    return INT64_MAX;
  };
  int64_t begin = t.slices.ts[markers[0]];
  for (size_t k = 0; k + 1 < markers.size(); ++k) {
    int64_t end = std::min(head_after(k), t.slices.ts[markers[k + 1]]);
    ctx.AddSlice(OpenSlice{begin, step_name, SliceKind::kStep, k}, end, track, 0);
    begin = end;
  }
  uint32_t last = markers.back();
  int64_t end = t.slices.end(last), wait_end = INT64_MAX;
  for (uint32_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.track[i] == track && t.slices.ts[i] >= end && t.slices.end(i) < wait_end &&
        IsWaitName(t.strings.Get(t.slices.name[i])))
      wait_end = t.slices.end(i);
  if (int64_t h = head_after(markers.size() - 1); h != INT64_MAX) wait_end = h;
  ctx.AddSlice(OpenSlice{begin, step_name, SliceKind::kStep, markers.size() - 1},
               wait_end == INT64_MAX ? end : wait_end, track, 0);
}

// The loop heads on `track` for the steps of `markers` (in time order), as
// (ts, seen) sorted. After the last marker, a head seen at another line than
// the loop's usual one (the line most heads were seen at) is not that loop's:
// the program left it (a `break` once its iterations were done) and an outer
// loop took its next turn, after the inner loop's teardown (a tf.data
// iterator's, 32 ms once): the last step ends with its marker instead.
std::vector<std::pair<int64_t, bool>> MarkerHeads(const model::Trace& t, const std::vector<LoopHead>& heads,
                                                  uint32_t track, const std::vector<uint32_t>& markers) {
  std::map<uint32_t, size_t> lines;
  for (const LoopHead& h : heads)
    if (h.track == track && h.seen && h.line != 0) ++lines[h.line];
  uint32_t usual = 0;
  size_t most = 0;
  for (auto [line, n] : lines)
    if (n > most) {
      usual = line;
      most = n;
    }
  int64_t last_end = markers.empty() ? INT64_MAX : t.slices.end(markers.back());
  std::vector<LoopHead> kept;
  for (const LoopHead& h : heads)
    if (h.track == track && !(h.ts > last_end && h.seen && usual != 0 && h.line != 0 && h.line != usual))
      kept.push_back(h);
  return HeadsOn(kept, track);
}

}  // namespace

void TileSteps(LoadContext& ctx, model::StringId step_name, uint32_t track, const std::vector<uint32_t>& markers,
               std::vector<std::pair<uint32_t, int64_t>>* partial, const std::vector<std::pair<int64_t, bool>>& heads,
               const std::vector<int64_t>& batches) {
  model::Trace& t = ctx.trace();
  int64_t prev = INT64_MIN;
  uint64_t n = 0;
  for (size_t k = 0; k < markers.size(); ++k) {
    uint32_t i = markers[k];
    // The first step begins with its marker (1 ns before it, so that the step
    // holds the marker rather than the two nesting either way).
    int64_t begin = prev == INT64_MIN ? t.slices.ts[i] - 1 : prev;
    if (prev == INT64_MIN) partial->emplace_back(track, begin);
    int64_t end = std::max(begin, t.slices.end(i));
    // The loop's head after the marker, before the next one begins: what the
    // iteration did after its marker (writing results, logging) is its own.
    // Where the Python side stopped looking instead (the tail ran past its
    // budget), the iteration was still running there: the step lasts at
    // least that long.
    // It then ends at the next iteration's first sign, its batch (the
    // forward's samples), where one is given before the next marker.
    auto h = std::upper_bound(heads.begin(), heads.end(), std::make_pair(end, true));
    if (h != heads.end() && (k + 1 == markers.size() || h->first <= t.slices.ts[markers[k + 1]]) &&
        (h->second || k + 1 < markers.size())) {
      end = h->first;
      if (!h->second) {
        auto b = std::lower_bound(batches.begin(), batches.end(), end);
        if (b != batches.end() && *b < t.slices.ts[markers[k + 1]]) end = std::max(end, *b - 1);
      }
    }
    ctx.AddSlice(OpenSlice{begin, step_name, SliceKind::kStep, n++}, end, track, 0);
    prev = end;
  }
}

void AddMarkerSteps(LoadContext& ctx, model::StringId step_name, std::vector<std::pair<uint32_t, int64_t>>* partial,
                    const std::vector<LoopHead>& heads) {
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
    size_t calls = 0;
  };
  std::map<uint32_t, Pick> pick, eager;
  for (const auto& [key, u] : uses) {
    auto [p, rank, name, arg, trk] = key;
    if (with_steps.count(p)) continue;
    // A function called once is the program's setup or its only run, not a loop.
    if (rank != 0 && u.calls < 2) continue;
    Pick& b = pick[p];
    if (rank < b.rank || (rank == b.rank && u.time > b.time)) b = {rank, u.time, name, arg, trk, u.calls};
    if (EagerStep(t.strings.Get(name))) {
      Pick& g = eager[p];
      if (u.time > g.time) g = {rank, u.time, name, arg, trk, u.calls};
    }
  }
  // A loop whose training step runs eagerly and that calls a compiled
  // function less often (an evaluation every N iterations) has its steps at
  // the eager step's gradient or optimizer call.
  for (auto& [p, b] : pick)
    if (auto g = eager.find(p); g != eager.end() && b.rank == 1 && g->second.calls > b.calls) b = g->second;
  const model::StringId samples_name = t.strings.Find("strata.samples");
  for (const auto& [p, b] : pick) {
    // The marker's calls on its track, and the batches the framework hooks
    // saw there (strata.samples), each in time order.
    std::vector<uint32_t> markers;
    std::vector<int64_t> batches;
    for (uint32_t i = 0; i < t.slices.size(); ++i) {
      if (t.slices.track[i] != b.track || t.slices.kind[i] != SliceKind::kSpan) continue;
      if (t.slices.name[i] == b.name && t.slices.arg[i] == b.arg) markers.push_back(i);
      else if (t.slices.name[i] == samples_name) batches.push_back(t.slices.ts[i]);
    }
    std::sort(markers.begin(), markers.end(), [&](uint32_t a, uint32_t c) { return t.slices.ts[a] < t.slices.ts[c]; });
    std::sort(batches.begin(), batches.end());
    auto track_heads = MarkerHeads(t, heads, b.track, markers);
    if (AsyncMarker(t.strings.Get(b.name))) TileAtStarts(ctx, step_name, b.track, markers, partial, track_heads);
    else TileSteps(ctx, step_name, b.track, markers, partial, track_heads, batches);
  }
}

void AddProfiledSteps(const model::Trace& t, std::vector<std::pair<uint32_t, int64_t>>* profiled) {
  // Per track: from the first profiler start to the last profiler stop.
  std::map<uint32_t, std::pair<int64_t, int64_t>> windows;
  for (uint32_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices.kind[i] != SliceKind::kSpan) continue;
    std::string_view n = t.strings.Get(t.slices.name[i]);
    if (n.substr(0, 8) != "strata: " || n.find(" profiler st") == std::string_view::npos) continue;
    auto [it, fresh] = windows.try_emplace(t.slices.track[i], t.slices.ts[i], t.slices.end(i));
    if (!fresh) {
      it->second.first = std::min(it->second.first, t.slices.ts[i]);
      it->second.second = std::max(it->second.second, t.slices.end(i));
    }
  }
  if (windows.empty()) return;
  for (uint32_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices.kind[i] != SliceKind::kStep) continue;
    auto it = windows.find(t.slices.track[i]);
    if (it != windows.end() && t.slices.ts[i] < it->second.second && t.slices.end(i) > it->second.first)
      profiled->emplace_back(t.slices.track[i], t.slices.ts[i]);
  }
}

void AddSampleMarks(const model::Trace& t, std::vector<BatchMark>* marks) {
  model::StringId name = t.strings.Find("strata.samples");
  if (name == model::StringPool::kNotFound) return;
  // Samples given inside a step function's call (the batch fed to a
  // Session.run, the batch argument of a jitted step) count when that function
  // is the step's, the one the thread calls most often with those arguments,
  // not an evaluation run beside it.
  auto marker_of = [&](uint32_t i) -> int32_t {
    int32_t p = t.slices.parent[i];
    if (p == model::kNone || t.slices.kind[static_cast<size_t>(p)] != SliceKind::kSpan) return model::kNone;
    return MarkerRank(t.strings.Get(t.slices.name[static_cast<size_t>(p)])) > 0 ? p : model::kNone;
  };
  using Key = std::pair<model::StringId, uint64_t>;
  std::map<uint32_t, std::map<Key, size_t>> calls;  // track -> (marker name, arg) -> samples given in it
  for (uint32_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.name[i] == name && t.slices.kind[i] == SliceKind::kSpan)
      if (int32_t m = marker_of(i); m != model::kNone)
        ++calls[t.slices.track[i]][{t.slices.name[static_cast<size_t>(m)], t.slices.arg[static_cast<size_t>(m)]}];
  std::map<uint32_t, Key> step_marker;
  for (const auto& [trk, by] : calls)
    step_marker[trk] = std::max_element(by.begin(), by.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  for (uint32_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices.name[i] != name || t.slices.kind[i] != SliceKind::kSpan || t.slices.arg[i] == 0) continue;
    if (int32_t m = marker_of(i); m != model::kNone &&
        Key{t.slices.name[static_cast<size_t>(m)], t.slices.arg[static_cast<size_t>(m)]} != step_marker[t.slices.track[i]])
      continue;
    marks->push_back({t.slices.track[i], t.slices.ts[i], t.slices.arg[i], 0, true});
  }
}

}  // namespace strata::importers::strata_ctf

#include "importers/strata/torch_steps.h"

#include "importers/strata/marker_steps.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace strata::importers::strata_ctf {
namespace {

using model::kNone;
using model::SliceKind;

// Root module forwards (module slices inside no other module slice of their
// thread), per track, in time order: slice indices before Finalize.
std::map<uint32_t, std::vector<uint32_t>> RootForwards(const model::Trace& t) {
  std::map<uint32_t, std::vector<uint32_t>> by_track;
  for (uint32_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == SliceKind::kModule) by_track[t.slices.track[i]].push_back(i);
  for (auto& [trk, v] : by_track) {
    std::sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
      if (t.slices.ts[a] != t.slices.ts[b]) return t.slices.ts[a] < t.slices.ts[b];
      return t.slices.dur[a] > t.slices.dur[b];
    });
    std::vector<uint32_t> roots;
    int64_t open_end = INT64_MIN;
    for (uint32_t i : v) {
      if (t.slices.ts[i] < open_end) continue;  // inside the root before it
      roots.push_back(i);
      open_end = t.slices.end(i);
    }
    v = std::move(roots);
  }
  return by_track;
}

void Add(LoadContext& ctx, model::StringId name, int64_t begin, int64_t end, uint32_t track, uint64_t n) {
  OpenSlice o{begin, name, SliceKind::kStep, n};
  ctx.AddSlice(o, std::max(begin, end), track, 0);
}

// Steps of a process that has no optimizer steps: one per forward of its main
// root module (the root module with the most forward time on the thread with
// the most, called at least twice), each ending at the loop's head after that
// forward where the Python side saw it, else where the forward ends.
void InferenceSteps(LoadContext& ctx, const std::set<uint32_t>& skip, model::StringId step_name,
                    const std::vector<LoopHead>& all_heads, std::vector<std::pair<uint32_t, int64_t>>* partial) {
  model::Trace& t = ctx.trace();
  auto roots = RootForwards(t);
  struct Best {
    uint32_t track = 0;
    int64_t time = -1;
  };
  std::map<uint32_t, Best> per_process;
  for (const auto& [trk, v] : roots) {
    if (trk >= t.tracks.size() || t.tracks[trk].kind != model::TrackKind::kThread) continue;
    uint32_t p = t.tracks[trk].process;
    if (skip.count(p)) continue;
    int64_t time = 0;
    for (uint32_t i : v) time += t.slices.dur[i];
    Best& b = per_process[p];
    if (time > b.time) b = {trk, time};
  }
  for (const auto& [p, best] : per_process) {
    const std::vector<uint32_t>& v = roots[best.track];
    std::unordered_map<model::StringId, std::pair<int64_t, size_t>> by_name;  // time, calls
    for (uint32_t i : v) {
      auto& [time, calls] = by_name[t.slices.name[i]];
      time += t.slices.dur[i];
      ++calls;
    }
    model::StringId main = 0;
    std::pair<int64_t, size_t> top{-1, 0};
    for (const auto& [name, tc] : by_name)
      if (tc.second >= 2 && (tc.first > top.first || (tc.first == top.first && name < main))) {
        main = name;
        top = tc;
      }
    if (top.first < 0) continue;
    std::vector<uint32_t> markers;
    for (uint32_t i : v)
      if (t.slices.name[i] == main) markers.push_back(i);
    TileSteps(ctx, step_name, best.track, markers, partial, HeadsOn(all_heads, best.track));
  }
}

// Steps of a process that has no optimizer steps but runs backward passes (a
// loop that updates its parameters by hand): one per backward pass on the
// thread that spends the most time in them (python/strata/_torch.py's
// "torch.autograd.backward" spans, outermost ones, at least two), each ending
// at the loop's head after it where the Python side saw it. Adds the processes
// it gives steps to `with_steps`.
void BackwardSteps(LoadContext& ctx, std::set<uint32_t>* with_steps, model::StringId step_name,
                   const std::vector<LoopHead>& all_heads, std::vector<std::pair<uint32_t, int64_t>>* partial) {
  model::Trace& t = ctx.trace();
  model::StringId name = t.strings.Find("torch.autograd.backward");
  if (name == model::StringPool::kNotFound) return;
  std::map<uint32_t, std::vector<uint32_t>> by_track;
  for (uint32_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.name[i] == name && t.slices.kind[i] == SliceKind::kSpan) by_track[t.slices.track[i]].push_back(i);
  struct Best {
    uint32_t track = 0;
    int64_t time = -1;
  };
  std::map<uint32_t, Best> per_process;
  for (auto& [trk, v] : by_track) {
    if (trk >= t.tracks.size() || t.tracks[trk].kind != model::TrackKind::kThread) continue;
    uint32_t p = t.tracks[trk].process;
    if (with_steps->count(p)) continue;
    std::sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) { return t.slices.ts[a] < t.slices.ts[b]; });
    std::vector<uint32_t> outer;  // (a backward inside another: a double backward's)
    int64_t open_end = INT64_MIN;
    for (uint32_t i : v)
      if (t.slices.ts[i] >= open_end) {
        outer.push_back(i);
        open_end = t.slices.end(i);
      }
    v = std::move(outer);
    if (v.size() < 2) continue;
    int64_t time = 0;
    for (uint32_t i : v) time += t.slices.dur[i];
    Best& b = per_process[p];
    if (time > b.time) b = {trk, time};
  }
  for (const auto& [p, best] : per_process) {
    TileSteps(ctx, step_name, best.track, by_track[best.track], partial, HeadsOn(all_heads, best.track));
    with_steps->insert(p);
  }
}

// What tells one optimizer's step from another's: which optimizer object it was
// (the Python side's optimizer_step mark before the step's end); without marks
// (an older trace), the scope that ended the step (Optimizer.step#Adam.step,
// ProfilerStep#7) and the number of ops it ran.
using Signature = std::pair<model::StringId, size_t>;

std::vector<Signature> Signatures(const model::Trace& t, uint32_t track, const std::vector<uint32_t>& slices,
                                  const std::vector<const FoundStep*>& v, const std::vector<OptimizerMark>& all_marks) {
  std::vector<std::pair<int64_t, uint32_t>> marks;
  for (const OptimizerMark& m : all_marks)
    if (m.track == track) marks.emplace_back(m.ts, m.optimizer);
  std::sort(marks.begin(), marks.end());
  std::vector<int64_t> ops;
  std::vector<std::pair<int64_t, uint32_t>> scopes;  // (end, slice)
  if (marks.empty())
    for (uint32_t i : slices) {
      if (t.slices.kind[i] == SliceKind::kOp) ops.push_back(t.slices.ts[i]);
      else if (t.slices.kind[i] == SliceKind::kSpan) scopes.emplace_back(t.slices.end(i), i);
    }
  std::sort(ops.begin(), ops.end());
  std::sort(scopes.begin(), scopes.end());
  std::vector<Signature> out;
  for (const FoundStep* f : v) {
    if (!marks.empty()) {
      auto m = std::upper_bound(marks.begin(), marks.end(), std::make_pair(f->end, UINT32_MAX));
      out.emplace_back(0, m == marks.begin() ? 0 : size_t{std::prev(m)->second} + 1);
      continue;
    }
    // The last scope to end at or before the step's end: the one whose end ended it.
    auto it = std::upper_bound(scopes.begin(), scopes.end(), std::make_pair(f->end, UINT32_MAX));
    if (it == scopes.begin()) {
      out.emplace_back(0, 0);
      continue;
    }
    uint32_t s = std::prev(it)->second;
    auto lo = std::lower_bound(ops.begin(), ops.end(), t.slices.ts[s]);
    auto hi = std::upper_bound(ops.begin(), ops.end(), t.slices.end(s));
    out.emplace_back(t.slices.name[s], static_cast<size_t>(hi - lo));
  }
  return out;
}

// A torch.profiler ProfilerStep#N scope among `slices` begins at `ts`: its
// steps begin where the program's own marks do (not partial).
bool ProfilerStepAt(const model::Trace& t, const std::vector<uint32_t>& slices, int64_t ts) {
  for (uint32_t i : slices)
    if (t.slices.ts[i] == ts && t.slices.kind[i] == SliceKind::kSpan &&
        t.strings.Get(t.slices.name[i]).starts_with("ProfilerStep#"))
      return true;
  return false;
}

// Several optimizers stepping in each iteration (a GAN's discriminator and
// generator; a WGAN's critic five times per generator step) repeat with a
// period of their steps per iteration: the smallest period P (up to
// `max_period`) with which at least 80% of the signatures after the first two
// periods equal the one P before (the first steps differ: Adam creates its
// state then), else 1, each optimizer step a step (one optimizer; gradient
// accumulation; signatures that vary because ops were sampled).
size_t Period(const std::vector<Signature>& sig, size_t max_period) {
  for (size_t p = 2; p <= max_period; ++p) {
    size_t same = 0, compared = 0;
    for (size_t k = 2 * p; k < sig.size(); ++k) {
      ++compared;
      same += sig[k] == sig[k - p];
    }
    bool differ = false;  // the optimizers within a period are told apart
    for (size_t k = 2 * p; k + 1 < sig.size() && k < 3 * p; ++k) differ |= sig[k] != sig[k + 1];
    if (compared >= 2 && differ && same * 5 >= compared * 4) {
      // ...and not a period of one in disguise.
      size_t one = 0;
      for (size_t k = 2 * p; k < sig.size(); ++k) one += sig[k] == sig[k - 1];
      if (one * 5 < compared * 4) return p;
    }
  }
  return 1;
}

// Optimizers that take turns, one per iteration (an actor's update on even
// iterations, a critic's on odd ones), repeat with a period as several per
// iteration do (a GAN's two updates; a WGAN's critic updates in an inner
// loop), but the loop's head (seen from Python) comes after each of their
// steps at one line, the outer loop's: a GAN's generator update follows its
// discriminator's with no head between, a WGAN's critic steps are followed by
// the inner loop's head, another line than the one after its generator's.
// True when most optimizer steps inside a period are followed, before the
// next one ends, by a head at the line most period ends are followed by.
bool EachOptimizerStepEndsAnIteration(const std::vector<LoopHead>& heads, uint32_t track,
                                      const std::vector<const FoundStep*>& steps, size_t period) {
  std::vector<std::pair<int64_t, uint32_t>> seen;  // (ts, line) of the thread's heads that say their line
  for (const LoopHead& h : heads)
    if (h.track == track && h.seen && h.line != 0) seen.emplace_back(h.ts, h.line);
  std::sort(seen.begin(), seen.end());
  auto line_after = [&](size_t k) -> uint32_t {  // the head's line after step k, before step k+1 ends; 0: none
    auto h = std::upper_bound(seen.begin(), seen.end(), std::make_pair(steps[k]->end, UINT32_MAX));
    return h != seen.end() && h->first < steps[k + 1]->end ? h->second : 0;
  };
  std::map<uint32_t, size_t> at_ends;
  size_t inside = 0;
  std::map<uint32_t, size_t> at_inside;
  for (size_t k = 0; k + 1 < steps.size(); ++k) {
    uint32_t line = line_after(k);
    if ((k + 1) % period == 0) {
      if (line) ++at_ends[line];
    } else {
      ++inside;
      if (line) ++at_inside[line];
    }
  }
  if (inside < 2 || at_ends.empty()) return false;
  uint32_t outer = std::max_element(at_ends.begin(), at_ends.end(), [](const auto& a, const auto& b) {
                     return a.second < b.second;
                   })->first;
  return at_inside[outer] * 5 >= inside * 4;
}

// The observer writes a step's tentative begin right as the previous one ends
// (a first activity moves it later); within this of the end, it was not moved.
constexpr int64_t kTentativeBeginNs = 50'000;

// The end of a thread's last step: the loop's head after its optimizer step
// (where the loop found no next iteration), else the optimizer step's end.
int64_t LastEnd(const std::vector<std::pair<int64_t, bool>>& head_ts, int64_t optimizer_end) {
  auto h = std::upper_bound(head_ts.begin(), head_ts.end(), std::make_pair(optimizer_end, true));
  return h != head_ts.end() && h->second ? h->first : optimizer_end;
}

}  // namespace

// The Python side's loop heads on `track`, as (ts, seen) sorted: seen false
// where it stopped looking with the iteration still running.
//
// The Python side starts looking from the optimizer's post-hook, inside the
// optimizer's step() scope, and may stop looking before that scope has closed
// (its budget spent while the thread was preempted there: seen under load). A
// head inside an optimizer step (after the step's own mark, before its end in
// `steps`, sorted by end) is moved to just after that end, where it belongs.
std::vector<std::pair<int64_t, bool>> HeadsOn(const std::vector<LoopHead>& heads, uint32_t track,
                                              const std::vector<const FoundStep*>& steps,
                                              const std::vector<OptimizerMark>& marks) {
  std::vector<int64_t> began;  // the optimizer steps' marks on this thread
  for (const OptimizerMark& m : marks)
    if (m.track == track) began.push_back(m.ts);
  std::sort(began.begin(), began.end());
  std::vector<std::pair<int64_t, bool>> v;
  for (const LoopHead& h : heads) {
    if (h.track != track) continue;
    int64_t ts = h.ts;
    auto e = std::lower_bound(steps.begin(), steps.end(), ts, [](const FoundStep* f, int64_t t) { return f->end < t; });
    auto m = std::upper_bound(began.begin(), began.end(), ts);
    if (e != steps.end() && m != began.begin()) {
      int64_t prev_end = e == steps.begin() ? INT64_MIN : (*std::prev(e))->end;
      if (*std::prev(m) > prev_end) ts = (*e)->end + 1;
    }
    v.emplace_back(ts, h.seen);
  }
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::pair<uint32_t, int64_t>> AddFoundSteps(LoadContext& ctx, const std::vector<FoundStep>& found,
                                                        const std::vector<OptimizerMark>& marks,
                                                        const std::vector<LoopHead>& heads,
                                                        model::StringId step_name,
                                                        std::map<uint32_t, size_t>* periods) {
  std::vector<std::pair<uint32_t, int64_t>> partial;
  model::Trace& t = ctx.trace();
  // A program that marks its steps says what a step is.
  std::set<uint32_t> marked;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == SliceKind::kStep && t.slices.track[i] < t.tracks.size())
      marked.insert(t.tracks[t.slices.track[i]].process);
  std::map<uint32_t, std::vector<const FoundStep*>> by_track;
  for (const FoundStep& f : found)
    if (!marked.count(f.process)) by_track[f.track].push_back(&f);
  // The slices (steps aside) of the threads that have found steps, in one pass.
  std::map<uint32_t, std::vector<uint32_t>> slices_of;
  for (uint32_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] != SliceKind::kStep && by_track.count(t.slices.track[i])) slices_of[t.slices.track[i]].push_back(i);
  std::set<uint32_t> with_steps = marked;
  for (auto& [trk, v] : by_track) {
    std::sort(v.begin(), v.end(), [](const FoundStep* a, const FoundStep* b) { return a->end < b->end; });
    const std::vector<uint32_t>& slices = slices_of[trk];
    // Which optimizer ended each step is known where the observer marked it:
    // periods up to 16 (a WGAN's n_critic of 5 gives 6). Told apart by the
    // scope and its ops only (an older trace), up to 4.
    const uint32_t track = trk;  // (a structured binding: clang 14 does not capture one)
    const bool named = std::any_of(marks.begin(), marks.end(), [track](const OptimizerMark& m) { return m.track == track; });
    size_t period = Period(Signatures(t, trk, slices, v, marks), named ? 16 : 4);
    // Without a DataLoader, the loop's head itself, seen from Python: the first
    // mark after the step's last optimizer step, if it comes before the next one's.
    const std::vector<std::pair<int64_t, bool>> head_ts = HeadsOn(heads, trk, v, marks);
    if (period > 1 && EachOptimizerStepEndsAnIteration(heads, trk, v, period)) period = 1;
    if (periods && period > 1) (*periods)[trk] = period;
    // The thread's other slices by begin: a step must not cross one (a
    // record_function or strata.scope opened between two iterations and closed
    // after later ones), or nesting breaks; such a step begins where it does.
    std::vector<std::pair<int64_t, int64_t>> others;  // (ts, end)
    for (uint32_t i : slices) others.emplace_back(t.slices.ts[i], t.slices.end(i));
    std::sort(others.begin(), others.end());
    // Where a DataLoader feeds the loop, an iteration begins at its fetch (the
    // loop's head, `for batch in loader`), so what the program does after its
    // optimizer step (logging, a checkpoint, an evaluation over another loader)
    // stays in the step it belongs to. An iteration fetches as many batches as
    // most iterations do between two optimizer steps (gradient accumulation:
    // several): the boundary moves from an optimizer step's end to the first of
    // the last that many fetches before the next one's. The last step ends with
    // its optimizer step (a fetch after it may be another loader's, much later).
    std::vector<int64_t> fetches, ends;
    for (uint32_t i : slices)
      if (t.strings.Get(t.slices.name[i]).starts_with("enumerate(DataLoader)#")) fetches.push_back(t.slices.ts[i]);
    std::sort(fetches.begin(), fetches.end());
    for (size_t k = period - 1; k < v.size(); k += period) ends.push_back(v[k]->end);
    size_t per_iteration = 0;
    if (!fetches.empty() && ends.size() >= 2) {
      std::vector<size_t> counts;
      for (size_t j = 0; j + 1 < ends.size(); ++j)
        counts.push_back(static_cast<size_t>(std::lower_bound(fetches.begin(), fetches.end(), ends[j + 1]) -
                                             std::lower_bound(fetches.begin(), fetches.end(), ends[j])));
      std::nth_element(counts.begin(), counts.begin() + static_cast<ptrdiff_t>(counts.size() / 2), counts.end());
      per_iteration = counts[counts.size() / 2];
    }
    const std::vector<const FoundStep*>& steps = v;  // (clang 14 captures no structured binding)
    auto loop_head = [&](size_t j) {  // the end of the j-th step (not the last)
      // The fetch goes first where there is one: the observer's step windows
      // (--ops-steps, sampled steps) switch there on a thread a DataLoader feeds.
      size_t hi = static_cast<size_t>(std::lower_bound(fetches.begin(), fetches.end(), ends[j + 1]) - fetches.begin());
      if (per_iteration > 0 && hi >= per_iteration && fetches[hi - per_iteration] >= ends[j]) return fetches[hi - per_iteration];
      auto h = std::upper_bound(head_ts.begin(), head_ts.end(), std::make_pair(ends[j], true));
      int64_t activity = steps[(j + 1) * period]->ts;
      bool active = activity - ends[j] > kTentativeBeginNs;
      bool in_step = h != head_ts.end() && h->first < ends[j + 1];
      // A head comes before the next step's first activity where one was seen
      // (a head after it is an inner loop's, a WGAN's critic loop, say, once
      // the outer one was missed); without one, the next step's begin is the
      // one written as this step ended.
      if (in_step && h->second && (!active || h->first <= activity)) return h->first;
      // The Python side stopped looking while the iteration's tail still ran
      // (an evaluation, a checkpoint): it runs on to the next iteration's first
      // activity (a training-mode forward), its head's loading with it.
      if (in_step && !h->second && active && activity > h->first) return activity;
      return ends[j];
    };
    int64_t begin = v[0]->ts;
    if (!ProfilerStepAt(t, slices, begin)) partial.emplace_back(trk, begin);
    uint64_t n = 0;
    for (size_t k = period - 1; k < v.size(); k += period) {
      const FoundStep& first = *v[k + 1 - period];
      int64_t end = n + 1 < ends.size() ? loop_head(n) : LastEnd(head_ts, v[k]->end);
      for (auto it = std::upper_bound(others.begin(), others.end(), std::make_pair(begin, INT64_MAX));
           it != others.end() && it->first < first.ts; ++it)
        if (it->second > end) begin = it->first;
      // (One boundary per step: its own number, ProfilerStep#N's N; several: counted.)
      Add(ctx, step_name, begin, end, trk, period == 1 ? v[k]->step : n);
      ++n;
      begin = end;
    }
    with_steps.insert(v[0]->process);
  }
  BackwardSteps(ctx, &with_steps, step_name, heads, &partial);
  InferenceSteps(ctx, with_steps, step_name, heads, &partial);
  AddMarkerSteps(ctx, step_name, &partial, heads);
  return partial;
}

void AttachStepSamples(model::Trace& t, const std::vector<BatchMark>& marks,
                       const std::vector<std::pair<uint32_t, int64_t>>& partial,
                       const std::vector<std::pair<uint32_t, int64_t>>& profiled,
                       const std::map<uint32_t, size_t>& periods) {
  if (marks.empty() && partial.empty() && profiled.empty()) return;
  struct PerStep {
    uint64_t given = 0;
    bool any_given = false, training = false;
    std::map<std::pair<bool, model::StringId>, uint64_t> by_module;  // (training, root module) -> samples
    std::map<std::pair<bool, model::StringId>, uint64_t> largest;    // ... -> largest single batch
    // ... -> largest batch of the forwards inside an optimizer's step()
    std::map<std::pair<bool, model::StringId>, uint64_t> in_optimizer;
    // ... -> the samples of the module's last run of forwards with no backward
    // pass between them
    std::map<std::pair<bool, model::StringId>, uint64_t> run;
  };
  std::map<int32_t, PerStep> steps;
  // Each thread's steps by begin: a mark's step is found by time (a step need
  // not be an ancestor of the mark's slice where user scopes cross iterations).
  std::map<uint32_t, std::vector<std::pair<int64_t, int32_t>>> step_at;
  for (uint32_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == SliceKind::kStep) step_at[t.slices.track[i]].emplace_back(t.slices.ts[i], static_cast<int32_t>(i));
  for (auto& [trk, v] : step_at) std::sort(v.begin(), v.end());
  // A root forward that raised (flag 4, from the hooks as it ended: a batch
  // the loop skipped) processed no samples: the batch mark its module slice
  // holds goes (where it had one: a forward of no tensor gave none). One
  // whose output has fewer rows than its first input (flag 16: a batch of
  // graphs given as their nodes, of point clouds as their points) counts the
  // output's rows instead of the input's.
  std::vector<const BatchMark*> kept;
  kept.reserve(marks.size());
  for (const BatchMark& b : marks) {
    if ((b.flags & (4 | 16)) == 0) {
      kept.push_back(&b);
      continue;
    }
    int32_t root = kNone;
    for (int32_t s = t.SliceAt(b.track, b.ts); s != kNone; s = t.slices.parent[static_cast<size_t>(s)])
      if (t.slices.kind[static_cast<size_t>(s)] == SliceKind::kModule) root = s;
    if (root == kNone) continue;
    for (size_t k = kept.size(); k-- > 0;)
      if (kept[k]->track == b.track) {
        if (!kept[k]->given && kept[k]->ts >= t.slices.ts[static_cast<size_t>(root)])
          kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(k));
        break;
      }
    if ((b.flags & 16) != 0) kept.push_back(&b);
  }
  for (const BatchMark* mark : kept) {
    const BatchMark& b = *mark;
    int32_t step = kNone, root = kNone;
    auto st = step_at.find(b.track);
    if (st != step_at.end()) {
      auto it = std::upper_bound(st->second.begin(), st->second.end(), std::make_pair(b.ts, INT32_MAX));
      if (it != st->second.begin() && b.ts <= t.slices.end(static_cast<size_t>(std::prev(it)->second)))
        step = std::prev(it)->second;
    }
    if (step == kNone) continue;  // setup or teardown
    bool in_optimizer = false;
    for (int32_t s = t.SliceAt(b.track, b.ts); s != kNone; s = t.slices.parent[static_cast<size_t>(s)]) {
      const auto kind = t.slices.kind[static_cast<size_t>(s)];
      if (kind == SliceKind::kModule) root = s;
      if (kind == SliceKind::kSpan && t.strings.Get(t.slices.name[static_cast<size_t>(s)]).starts_with("Optimizer.step#"))
        in_optimizer = true;
    }
    PerStep& ps = steps[step];
    if (b.given) {
      ps.any_given = true;
      ps.given += b.samples;
    } else if (root != kNone) {
      bool training = (b.flags & 2) != 0;
      ps.training |= training;
      const std::pair<bool, model::StringId> k{training, t.slices.name[static_cast<size_t>(root)]};
      if (in_optimizer) {
        ps.in_optimizer[k] = std::max(ps.in_optimizer[k], b.samples);
        continue;
      }
      // A training forward that ran again with no backward pass since the
      // module's last one (flag 8: two views of the same images, a decoder
      // called per time step) processes those samples again: a run of them
      // counts its largest batch once. Forwards with a backward between
      // them (gradient accumulation's micro-batches) each count.
      auto run = ps.run.find(k);
      if ((b.flags & 8) != 0 && run != ps.run.end()) {
        if (b.samples > run->second) {
          ps.by_module[k] += b.samples - run->second;
          run->second = b.samples;
        }
      } else {
        ps.by_module[k] += b.samples;
        ps.run[k] = b.samples;
      }
      ps.largest[k] = std::max(ps.largest[k], b.samples);
    }
  }
  // Forwards inside an optimizer's step() evaluate the step's batch again
  // (torch.optim.LBFGS's closure, several times per step; a sharpness-aware
  // optimizer's second pass): one batch, counted where no forward outside
  // the step() gave the module's samples already.
  for (auto& [s, ps] : steps)
    for (const auto& [k, v] : ps.in_optimizer)
      if (!ps.by_module.count(k)) {
        ps.by_module[k] = v;
        ps.largest[k] = v;
      }
  model::StringId key = t.strings.Intern("batch_size");
  bool added = false;
  for (const auto& [s, ps] : steps) {
    uint64_t n = 0;
    if (ps.any_given) {
      n = ps.given;
    } else {
      const bool several_optimizers = periods.count(t.slices.track[static_cast<size_t>(s)]) > 0;
      for (const auto& [k, v] : several_optimizers ? ps.largest : ps.by_module)
        if (k.first == ps.training) n = n == 0 ? v : std::min(n, v);
    }
    if (n == 0) continue;
    t.args.slice.push_back(static_cast<uint32_t>(s));
    t.args.key.push_back(key);
    t.args.str.push_back(0);
    t.args.num.push_back(static_cast<double>(n));
    added = true;
  }
  model::StringId partial_key = t.strings.Intern("partial_step");
  model::StringId profiled_key = t.strings.Intern("profiled_step");
  for (const auto& [trk, ts] : profiled) {
    auto st = step_at.find(trk);
    if (st == step_at.end()) continue;
    auto it = std::lower_bound(st->second.begin(), st->second.end(), std::make_pair(ts, INT32_MIN));
    if (it == st->second.end() || it->first != ts) continue;
    t.args.slice.push_back(static_cast<uint32_t>(it->second));
    t.args.key.push_back(profiled_key);
    t.args.str.push_back(0);
    t.args.num.push_back(1);
    added = true;
  }
  for (const auto& [trk, ts] : partial) {
    auto st = step_at.find(trk);
    if (st == step_at.end()) continue;
    auto it = std::lower_bound(st->second.begin(), st->second.end(), std::make_pair(ts, INT32_MIN));
    if (it == st->second.end() || it->first != ts) continue;
    t.args.slice.push_back(static_cast<uint32_t>(it->second));
    t.args.key.push_back(partial_key);
    t.args.str.push_back(0);
    t.args.num.push_back(1);
    added = true;
  }
  if (!added) return;
  // Keep args sorted by slice (Finalize's invariant).
  std::vector<uint32_t> order(t.args.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return t.args.slice[a] < t.args.slice[b]; });
  auto permute = [&](auto& v) {
    auto copy = v;
    for (size_t i = 0; i < order.size(); ++i) v[i] = copy[order[i]];
  };
  permute(t.args.slice);
  permute(t.args.key);
  permute(t.args.str);
  permute(t.args.num);
}

}  // namespace strata::importers::strata_ctf

// Checkpoints written inside the loop as a cause: the step thread's time in
// torch.save (python/strata/_torch.py's "torch.save" spans) within the
// measured steps. Its parts are spread over the breakdown (pickling is Python,
// the writes are I/O, waiting for the disk is idle), so no other rule names
// it; the replay runs each step without it.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/findings_context.h"
#include "analysis/program_frames.h"
#include "analysis/track_rows.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

using Interval = std::pair<int64_t, int64_t>;

// The program's line that called the save, from the CPU samples inside the
// spans: the innermost Python frame outside libraries, most often seen.
std::string CallSite(const FindingsContext& c, uint32_t track, const std::vector<Interval>& spans) {
  const model::Trace& t = c.t;
  const auto& cs = t.cpu_samples;
  auto rows = TrackRows(cs, track);
  std::map<std::string, size_t> count;
  for (const Interval& s : spans) {
    auto [lo, hi] = RowsAt(cs, rows, s.first, s.second);
    for (size_t r = lo; r < hi; ++r)
      for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
        uint32_t f = t.callsites.frame[static_cast<size_t>(k)];
        if (t.frames.kind[f] != model::FrameKind::kPython) continue;
        std::string_view file = t.strings.Get(t.frames.module[f]);
        if (LibraryFile(file) || StrataHookFile(file)) continue;
        auto slash = file.rfind('/');
        ++count[fmt::format("{}:{} ({})", slash == std::string_view::npos ? file : file.substr(slash + 1),
                            t.frames.line[f], t.strings.Get(t.frames.function[f]))];
        break;
      }
  }
  return MostCommon(count);
}

}  // namespace

void Checkpointing(FindingsContext& c, std::vector<Finding>* out) {
  const model::Trace& t = c.t;
  model::StringId save = t.strings.Find("torch.save");
  if (save == model::StringPool::kNotFound || !c.has_steps || c.windows.empty()) return;
  // The saves on each measured step's thread, clipped to the step (outermost only).
  std::vector<std::vector<Interval>> per_window(c.windows.size());
  for (size_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices.name[i] != save || t.slices.kind[i] != model::SliceKind::kSpan) continue;
    int w = c.WindowOf(t.slices.ts[i]);
    if (w < 0 || c.windows[static_cast<size_t>(w)].track != t.slices.track[i]) continue;
    const auto& win = c.windows[static_cast<size_t>(w)];
    int64_t a = t.slices.ts[i], b = std::min(t.slices.end(i), win.end);
    auto& v = per_window[static_cast<size_t>(w)];
    if (!v.empty() && a < v.back().second) continue;  // inside the one before
    v.emplace_back(a, b);
  }
  int64_t total = 0;
  size_t calls = 0, steps_with = 0;
  std::vector<Interval> all;
  for (const auto& v : per_window) {
    steps_with += !v.empty();
    calls += v.size();
    for (const Interval& s : v) {
      total += s.second - s.first;
      all.push_back(s);
    }
  }
  const double per_step = c.PerStep(static_cast<double>(total));
  const double pct = c.Pct(per_step);
  if (calls == 0 || pct < 5) return;
  Finding f;
  f.category = "checkpoint";
  f.title = fmt::format("Writing checkpoints (torch.save) takes {:.0f}% of the step time", pct);
  uint32_t track = c.windows.front().track;
  std::string site = track == UINT32_MAX ? "" : CallSite(c, track, all);
  f.evidence = fmt::format(
      "torch.save runs {} time{} in {} of the {} measured steps, {} per call: {} of the {} mean step{}.", calls,
      calls == 1 ? "" : "s", steps_with, c.steps, HumanDuration(static_cast<double>(total) / static_cast<double>(calls)),
      HumanDuration(per_step), HumanDuration(c.step_ns), site.empty() ? "" : fmt::format(", called at {}", site));
  f.involved.push_back("torch.save");
  if (!site.empty()) f.involved.push_back(site);
  f.metrics = {{"save_ns_per_step", per_step},
               {"saves", static_cast<double>(calls)},
               {"steps_with_saves", static_cast<double>(steps_with)},
               {"save_pct", pct}};
  // Replayed: each step without its saves (the pieces inside them lose that time).
  c.Replayed(&f, RemoveTime(std::move(per_window)));
  f.what_if = fmt::format("the steps without torch.save's {} per step (saving every N steps instead leaves 1/N of it)",
                          HumanDuration(per_step));
  f.suggestion = fmt::format(
      "Checkpoint less often (every N steps or minutes, and at the end) instead of {}; or write it off the step's "
      "path: copy the state_dict to CPU and save it from a background thread or process "
      "(torch.distributed.checkpoint.async_save in torch 2.3+), to a fast local disk.",
      steps_with * 2 >= c.steps ? "in every step" : "this often");
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

// The program's own code as a cause: a step whose thread spends much of its
// time on CPU in the program's Python outside framework ops (a simulated
// environment in numpy, metrics in a Python loop, parsing and serializing
// requests, a tokenizer), which no other rule claims (the breakdown's python
// part: not the code that produces the batch before the forward, which is
// input_pipeline's, nor the gaps between ops, which are dispatch's).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/findings_context.h"
#include "analysis/os.h"
#include "analysis/program_frames.h"
#include "analysis/track_rows.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

std::string Ms(double ns) { return HumanDuration(ns); }

std::string Label(const model::Trace& t, uint32_t frame) {
  std::string m(t.strings.Get(t.frames.module[frame]));
  size_t slash = m.rfind('/');
  return fmt::format("{}:{} ({})", slash == std::string::npos ? m : m.substr(slash + 1), t.frames.line[frame],
                     t.strings.Get(t.frames.function[frame]));
}

// Where the step thread's CPU samples inside the breakdown's python pieces
// were: per line of the program's own code (the innermost frame outside
// libraries), with the innermost library function it was in when it differs.
struct Where {
  double samples = 0;  // in python pieces
  double framework = 0;  // ... of them in the framework's own Python (torch's package), not the program's
  std::vector<std::pair<std::string, double>> lines;  // label, samples; most first
};

Where SampleLines(const FindingsContext& c) {
  const model::Trace& t = c.t;
  const auto& cs = t.cpu_samples;
  Where w;
  if (cs.size() == 0 || !c.replay) return w;
  constexpr model::StringId kNoFunction = model::StringPool::kNotFound;
  std::map<std::pair<int64_t, model::StringId>, double> by;  // ((own frame), innermost library function) -> samples
  std::map<int64_t, std::string> own_label;
  for (const ReplayStep& s : c.replay->steps()) {
    if (s.window >= c.windows.size()) continue;
    uint32_t track = c.windows[s.window].track;
    if (track == UINT32_MAX) continue;
    auto rows = TrackRows(cs, track);
    for (const ReplayPiece& p : s.pieces) {
      if (p.part != StepPart::kPython || p.dur <= 0) continue;
      auto [first, last] = RowsAt(cs, rows, p.start, p.start + p.dur);
      for (size_t r = first; r < last; ++r) {
        w.samples += 1;
        model::StringId lib = kNoFunction;
        int64_t own = -1;
        bool innermost = true;
        for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
          uint32_t fr = t.callsites.frame[static_cast<size_t>(k)];
          if (t.frames.kind[fr] != model::FrameKind::kPython) continue;
          std::string_view file = t.strings.Get(t.frames.module[fr]);
          if (innermost && FrameworkFile(file)) {
            // The framework's Python around its ops (backward()'s and the
            // optimizer's wrappers, module call machinery): its overhead, not
            // the program's code.
            w.framework += 1;
            break;
          }
          innermost = false;
          if (LibraryFile(file)) {
            if (lib == kNoFunction) lib = t.frames.function[fr];
            continue;
          }
          own = (static_cast<int64_t>(t.frames.module[fr]) << 32) | t.frames.line[fr];
          if (!own_label.count(own)) own_label[own] = Label(t, fr);
          break;
        }
        if (own >= 0) by[{own, lib}] += 1;
      }
    }
  }
  // Per own line, its samples, and the library function most of them were in.
  std::map<int64_t, std::pair<double, std::pair<double, model::StringId>>> per_line;
  for (const auto& [key, n] : by) {
    auto& [total, top] = per_line[key.first];
    total += n;
    if (n > top.first) top = {n, key.second};
  }
  for (const auto& [line, v] : per_line) {
    std::string label = own_label[line];
    if (v.second.second != kNoFunction && v.second.first * 2 >= v.first)
      label += fmt::format(", in {}", t.strings.Get(v.second.second));
    w.lines.emplace_back(std::move(label), v.first);
  }
  std::stable_sort(w.lines.begin(), w.lines.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return w;
}

}  // namespace

void PythonCode(FindingsContext& c, std::vector<Finding>* out) {
  const StepBreakdowns& b = c.breakdown;
  // Programs with device work: the host's code while the device idles is the
  // device-idle rule's cause ("runs the program's own code"), with the device
  // in the replay; here, a host-only step.
  if (b.counted == 0 || b.device_busy >= 0 || !c.has_steps) return;
  // Python time is on CPU only where the thread's scheduling was recorded (an
  // imported profile's gaps between ops may be anything).
  if (c.t.thread_states.size() == 0) return;
  const double scale = static_cast<double>(c.steps) / static_cast<double>(b.counted);
  const double part = c.PerStep(static_cast<double>(b.host[static_cast<size_t>(StepPart::kPython)]) * scale);
  if (c.Pct(part) < 15) return;
  // A program whose steps are its own Python (no model in framework ops) is
  // not slowed by it: that code is the work.
  double framework = 0;
  for (StepPart p : {StepPart::kCompute, StepPart::kDispatch, StepPart::kAllocation, StepPart::kCopy, StepPart::kSync})
    framework += static_cast<double>(b.host[static_cast<size_t>(p)]) * scale;
  if (c.Pct(c.PerStep(framework)) < 10) return;
  // Of the part, the program's own code: the samples whose innermost Python
  // frame is not the framework's (its Python around the ops is overhead that
  // the program's fixes do not touch).
  // Named by its CPU samples, or not at all: without them the program's code
  // and the framework's Python around its ops cannot be told apart.
  Where where = SampleLines(c);
  const bool sampled = where.samples >= 10;
  if (!sampled) return;
  const double own_share = 1 - where.framework / where.samples;
  const double per_step = part * own_share;
  const double pct = c.Pct(per_step);
  if (pct < 15) return;
  Finding f;
  f.category = "python_code";
  f.title = fmt::format("The program's own Python code takes {:.0f}% of each step, outside the framework's ops", pct);
  std::string lines;
  size_t named = 0;
  if (sampled)
    for (const auto& [label, n] : where.lines) {
      if (named == 3 || n < 0.05 * (where.samples - where.framework)) break;
      lines += fmt::format("{}{} {:.0f}%", named ? "; " : "", label, 100 * n / (where.samples - where.framework));
      f.involved.push_back(label);
      ++named;
    }
  f.evidence = fmt::format(
      "{} of the {} mean step the step's thread runs the program's own code on CPU, outside any framework op "
      "({} steps measured).",
      Ms(per_step), Ms(c.step_ns), c.steps);
  if (named > 0)
    f.evidence += fmt::format(" Its CPU samples there ({:.0f}) by line of the program: {}.", where.samples - where.framework,
                              lines);
  if (sampled && where.framework > 0)
    f.evidence += fmt::format(" (Another {} per step between the ops is the framework's own Python (or strata's hooks), not counted here.)",
                              Ms(part - per_step));
  f.metrics = {{"python_ns_per_step", per_step}, {"step_ns", c.step_ns}, {"python_pct", pct},
               {"python_samples", where.samples}, {"framework_python_samples", where.framework}};
  // Replayed: that code beside the rest of the step (a worker process
  // doing it, or made cheap enough to hide behind the model's work), the step
  // taking the longer of the two: it saves min(code, rest).
  const double rest = c.step_ns - per_step;
  c.Replayed(&f, ReduceParts({{{StepPart::kPython}, std::min(per_step, std::max(0.0, rest))}}, c.replay->steps()));
  f.what_if = fmt::format("the program's own code outside ops ({} per step) beside the rest of the step, in a worker "
                          "process or made cheap enough to hide behind it: the step takes the longer of the two",
                          Ms(per_step));
  f.suggestion = c.Fix(
      "Take this code off the step's critical path: replace per-element Python loops with whole-array NumPy/torch "
      "operations, compute metrics and logs every N steps (or accumulate tensors and reduce once), and move "
      "independent work (an environment's simulation, parsing, serialization) to worker processes "
      "(multiprocessing, a DataLoader's workers, vectorized environments) that run beside the model; a thread "
      "overlaps only while ops release the GIL.",
      "Take this code off the step's critical path: replace per-element Python loops with whole-array NumPy/TF "
      "operations, compute metrics and logs every N steps, and move independent work (parsing, serialization, an "
      "environment's simulation) into tf.data (map with num_parallel_calls) or worker processes.");
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

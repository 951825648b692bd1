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
#include "analysis/sample_lines.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

std::string Ms(double ns) { return HumanDuration(ns); }

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
  SampleLines where = LinesInPart(c, StepPart::kPython);
  const bool sampled = where.samples >= 10;
  if (!sampled) return;
  const double own_share = 1 - where.framework / where.samples;
  const double per_step = part * own_share;
  const double pct = c.Pct(per_step);
  if (pct < 15) return;
  Finding f;
  f.category = "python_code";
  f.title = fmt::format("The program's own Python code takes {:.0f}% of each step, outside the framework's ops", pct);
  const std::string lines = LineList(where, 3, &f.involved);
  f.evidence = fmt::format(
      "{} of the {} mean step the step's thread runs the program's own code on CPU, outside any framework op "
      "({} steps measured).",
      Ms(per_step), Ms(c.step_ns), c.steps);
  if (!lines.empty())
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

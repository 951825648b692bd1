// TensorFlow run eagerly as a cause: a training loop whose steps are marked by
// a Keras optimizer's apply_gradients() called outside any step function
// (strata._keras's "keras.optimizer.apply" spans) and run no tf.function, Keras
// step function or Session.run. Each op is then dispatched from Python one at
// a time (argument conversion, kernel lookup, a captured Python stack trace per
// op), which for small and medium models costs many times the kernels' work.
// Told from the step thread's CPU samples: those in op kernels (Eigen, oneDNN,
// a BLAS) are the work a compiled step keeps; the rest is the eager overhead
// that tf.function removes.
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "analysis/findings_context.h"
#include "analysis/track_rows.h"
#include "base/intervals.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

// A native function that does an op's arithmetic.
bool KernelFunction(std::string_view f) {
  for (std::string_view k : {"Eigen::", "dnnl", "mkl", "gemm", "GEMM", "xsmm", "oneDNN", "mlas", "Mlas"})
    if (f.find(k) != std::string_view::npos) return true;
  return false;
}

// Code generated at run time (oneDNN's JIT kernels) runs in anonymous memory.
bool JitCode(std::string_view module) { return module == "anon" || module == "[anon]" || module.starts_with("//anon"); }

bool GraphRun(std::string_view n) {
  return n.starts_with("tf.function ") || n.starts_with("keras.train_step") || n.starts_with("keras.test_step") ||
         n.starts_with("keras.predict_step") || n == "tf.Session.run";
}

}  // namespace

void EagerExecution(FindingsContext& c, std::vector<Finding>* out) {
  const model::Trace& t = c.t;
  model::StringId apply = t.strings.Find("keras.optimizer.apply");
  if (apply == model::StringPool::kNotFound || !c.has_steps || c.windows.empty()) return;
  const uint32_t track = c.windows.front().track;
  if (track == UINT32_MAX) return;
  // The steps' spans: eager optimizer calls, and no compiled step.
  int64_t apply_ns = 0;
  size_t applies = 0;
  for (size_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices.kind[i] != model::SliceKind::kSpan || t.slices.track[i] != track || !c.InSteps(i)) continue;
    if (t.slices.name[i] == apply) {
      apply_ns += t.slices.dur[i];
      ++applies;
    } else if (GraphRun(c.Name(i))) {
      return;
    }
  }
  if (applies == 0) return;
  // The step thread's CPU samples in the steps: in op kernels or not.
  const auto& cs = t.cpu_samples;
  auto rows = TrackRows(cs, track);
  double samples = 0, kernel = 0;
  for (const auto& w : c.windows) {
    if (w.track != track) continue;
    auto [lo, hi] = RowsAt(cs, rows, w.start, w.end);
    for (size_t r = lo; r < hi; ++r) {
      samples += 1;
      for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
        uint32_t f = t.callsites.frame[static_cast<size_t>(k)];
        if (t.frames.kind[f] == model::FrameKind::kNative &&
            (KernelFunction(t.strings.Get(t.frames.function[f])) || JitCode(t.strings.Get(t.frames.module[f])))) {
          kernel += 1;
          break;
        }
      }
    }
  }
  if (samples < 20) return;
  // On-CPU time of the step thread in the steps (all of the step without a scheduling record).
  double on_cpu = 0;
  const auto& st = t.thread_states;
  if (st.size() > 0) {
    auto st_rows = TrackRows(st, track);
    for (const auto& w : c.windows)
      if (w.track == track)
        RowsIn(st, st_rows, w.start, w.end, [&](size_t r) {
          if (st.state[r] == model::ThreadState::kRunning)
            on_cpu += static_cast<double>(Overlap(st.ts[r], st.ts[r] + st.dur[r], w.start, w.end));
        });
  }
  const double cpu_per_step = st.size() > 0 ? c.PerStep(on_cpu) : c.step_ns;
  const double overhead = cpu_per_step * (1 - kernel / samples);
  const double pct = c.Pct(overhead);
  if (pct < 10) return;
  Finding f;
  f.category = "eager_execution";
  f.title = fmt::format("TensorFlow runs eagerly: dispatching each op from Python takes {:.0f}% of the step", pct);
  f.evidence = fmt::format(
      "No tf.function, Keras step function or Session.run runs in the {} measured steps; the loop's GradientTape "
      "step calls the optimizer eagerly ({} calls, {} of the {} mean step). Of the step thread's {:.0f} CPU samples in "
      "the steps, {:.0f}% are in op kernels (Eigen, oneDNN, BLAS) and {:.0f}% in TensorFlow's eager dispatch and "
      "Python: about {} per step.",
      c.steps, applies, HumanDuration(c.PerStep(static_cast<double>(apply_ns))), HumanDuration(c.step_ns),
      samples, 100 * kernel / samples, 100 * (1 - kernel / samples), HumanDuration(overhead));
  f.involved.push_back("keras.optimizer.apply");
  f.metrics = {{"eager_overhead_ns_per_step", overhead},
               {"kernel_sample_share", kernel / samples},
               {"samples", samples},
               {"optimizer_ns_per_step", c.PerStep(static_cast<double>(apply_ns))}};
  // Replayed: the step keeps its kernels' work; the dispatch around them goes
  // (a traced graph's own per-op cost is small beside it).
  c.Replayed(&f, ReduceParts({{{StepPart::kPython, StepPart::kDispatch}, overhead}}, c.replay->steps()));
  f.what_if = fmt::format("the step compiled into one graph: the op kernels' work stays, the eager dispatch ({} per "
                          "step) goes (what a graph's optimizations gain on the kernels themselves, fused ops and ops "
                          "run in parallel, is not counted)",
                          HumanDuration(overhead));
  f.suggestion =
      "Compile the training step: put the forward under GradientTape, tape.gradient() and "
      "optimizer.apply_gradients() in one function decorated with @tf.function (jit_compile=True for XLA), called "
      "with tensors of fixed shapes; or use model.compile() and model.fit(), which compile it for you.";
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

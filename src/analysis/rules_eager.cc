// A framework run eagerly as a cause: a training loop that runs no compiled
// step. TensorFlow: steps marked by a Keras optimizer's apply_gradients()
// called outside any step function (strata._keras's "keras.optimizer.apply"
// spans), no tf.function, Keras step function or Session.run. JAX: steps
// marked by a gradient taken outside any jitted function (strata._jax's
// "jax.grad NAME" / "jax.value_and_grad NAME" spans), no jax.jit call. Each op
// is then dispatched from Python one at a time (argument conversion, kernel
// lookup or a cached executable per primitive, a captured Python stack trace
// per op), which for small and medium models costs many times the kernels'
// work. Told from the step thread's CPU samples: those in op kernels (Eigen,
// oneDNN, a BLAS, XLA's generated code) are the work a compiled step keeps;
// the rest is the eager overhead that tf.function or jax.jit removes.
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "analysis/findings_context.h"
#include "analysis/track_rows.h"
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
         n.starts_with("keras.predict_step") || n == "tf.Session.run" || n.starts_with("jax.jit ") ||
         n.starts_with("jax.pmap ");
}

// The span an eager step calls once: TensorFlow's optimizer apply, or JAX's gradient.
bool EagerTf(std::string_view n) { return n == "keras.optimizer.apply"; }
bool EagerJax(std::string_view n) { return n.starts_with("jax.grad ") || n.starts_with("jax.value_and_grad "); }

}  // namespace

void EagerExecution(FindingsContext& c, std::vector<Finding>* out) {
  const model::Trace& t = c.t;
  if (!c.has_steps || c.windows.empty()) return;
  const uint32_t track = c.windows.front().track;
  if (track == UINT32_MAX) return;
  // The steps' spans: eager optimizer or gradient calls, and no compiled step.
  int64_t apply_ns = 0;
  size_t applies = 0, graph_runs = 0;
  bool jax = false;
  std::string marker;
  for (size_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices.kind[i] != model::SliceKind::kSpan || t.slices.track[i] != track || !c.InSteps(i)) continue;
    std::string_view n = c.Name(i);
    if (EagerTf(n) || EagerJax(n)) {
      apply_ns += t.slices.dur[i];
      ++applies;
      jax = EagerJax(n);
      marker = std::string(n);
    } else if (GraphRun(n)) {
      ++graph_runs;
    }
  }
  // A compiled function run in every step is the step's (or most of its)
  // work; one run less often (an evaluation every N steps) is not.
  if (applies == 0 || graph_runs >= applies) return;
  // The step thread's CPU samples in the steps: in op kernels or not.
  const auto& cs = t.cpu_samples;
  auto in_kernel = [&](size_t r) {
    for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
      uint32_t f = t.callsites.frame[static_cast<size_t>(k)];
      if (t.frames.kind[f] == model::FrameKind::kNative &&
          (KernelFunction(t.strings.Get(t.frames.function[f])) || JitCode(t.strings.Get(t.frames.module[f]))))
        return true;
    }
    return false;
  };
  // On the runtime's threads, whose stacks all begin in a thread pool's loop
  // (Eigen::ThreadPool...), a sample is a kernel's by its innermost frame.
  auto innermost_kernel = [&](size_t r) {
    int32_t k = cs.callsite[r];
    if (k < 0) return false;
    uint32_t f = t.callsites.frame[static_cast<size_t>(k)];
    if (t.frames.kind[f] != model::FrameKind::kNative) return false;
    std::string_view fn = t.strings.Get(t.frames.function[f]);
    return JitCode(t.strings.Get(t.frames.module[f])) ||
           (KernelFunction(fn) && fn.find("ThreadPool") == std::string_view::npos);
  };
  auto rows = TrackRows(cs, track);
  double samples = 0, kernel = 0;
  for (const auto& w : c.windows) {
    if (w.track != track) continue;
    auto [lo, hi] = RowsAt(cs, rows, w.start, w.end);
    for (size_t r = lo; r < hi; ++r) {
      samples += 1;
      kernel += in_kernel(r) ? 1 : 0;
    }
  }
  if (samples < 20) return;
  // JAX runs each eagerly dispatched primitive's executable on its runtime's
  // threads while the step's thread waits: the kernels' work is counted on
  // every thread of the process, and what the steps take beyond it (the
  // dispatch, the program's Python, the handovers and waits per primitive)
  // is what one compiled program per step removes.
  double process_kernel = 0;
  if (jax) {
    const uint32_t proc = t.tracks[track].process;
    for (uint32_t tr = 0; tr < t.tracks.size(); ++tr) {
      if (t.tracks[tr].process != proc) continue;
      auto trows = TrackRows(cs, tr);
      if (trows.first == trows.second) continue;
      for (const auto& w : c.windows) {
        if (w.track != track) continue;
        auto [lo, hi] = RowsAt(cs, trows, w.start, w.end);
        for (size_t r = lo; r < hi; ++r) process_kernel += innermost_kernel(r) ? 1 : 0;
      }
    }
  }
  // On-CPU time of the step thread in the steps (all of the step without a scheduling record).
  double on_cpu = 0;
  const auto& st = t.thread_states;
  if (st.size() > 0) {
    auto st_rows = TrackRows(st, track);
    for (const auto& w : c.windows)
      if (w.track == track) on_cpu += static_cast<double>(RunningIn(st, st_rows, w.start, w.end));
  }
  const double cpu_per_step = st.size() > 0 ? c.PerStep(on_cpu) : c.step_ns;
  // (A sample stands for the step thread's on-CPU time over its samples.)
  const double kernel_ns = jax ? c.PerStep(process_kernel * cpu_per_step * static_cast<double>(c.steps) / samples) : 0;
  const double overhead = jax ? std::max(0.0, c.step_ns - kernel_ns) : cpu_per_step * (1 - kernel / samples);
  const double pct = c.Pct(overhead);
  if (pct < 10) return;
  Finding f;
  f.category = "eager_execution";
  f.title = fmt::format("{} runs eagerly: dispatching each op from Python takes {:.0f}% of the step",
                        jax ? "JAX" : "TensorFlow", pct);
  f.evidence = fmt::format(
      "{} in the {} measured steps; the loop's {} eagerly ({} calls, {} of the {} mean step). Of the step "
      "thread's {:.0f} CPU samples in the steps, {:.0f}% are in op kernels ({}) and {:.0f}% in {}'s eager dispatch "
      "and Python: about {} per step.",
      graph_runs > 0 ? fmt::format("A compiled function runs only {} times ({})", graph_runs,
                                   jax ? "a jitted function" : "a tf.function, Keras step function or Session.run")
      : jax          ? std::string("No jax.jit function runs")
                     : std::string("No tf.function, Keras step function or Session.run runs"),
      c.steps,
      jax ? "step takes its gradient (" + marker + ")" : "GradientTape step calls the optimizer", applies,
      HumanDuration(c.PerStep(static_cast<double>(apply_ns))), HumanDuration(c.step_ns), samples,
      100 * kernel / samples, jax ? "XLA's compiled code, Eigen, oneDNN" : "Eigen, oneDNN, BLAS",
      100 * (1 - kernel / samples), jax ? "JAX" : "TensorFlow", HumanDuration(overhead));
  if (jax)
    f.evidence += fmt::format(" The primitives' compiled code, on all of the process's threads (JAX runs each "
                              "eager primitive on its runtime's threads while the step's thread waits), takes about "
                              "{} per step; the rest of the step ({}) is dispatch, Python and the waits between "
                              "primitives.",
                              HumanDuration(kernel_ns), HumanDuration(overhead));
  f.involved.push_back(marker);
  f.metrics = {{"eager_overhead_ns_per_step", overhead},
               {"kernel_sample_share", kernel / samples},
               {"samples", samples},
               {jax ? "gradient_ns_per_step" : "optimizer_ns_per_step", c.PerStep(static_cast<double>(apply_ns))}};
  // Replayed: the step keeps its kernels' work; the dispatch around them goes
  // (a traced graph's own per-op cost is small beside it).
  if (jax) f.metrics.push_back({"kernel_ns_per_step", kernel_ns});
  c.Replayed(&f, ReduceParts({{jax ? std::vector<StepPart>{StepPart::kPython, StepPart::kDispatch, StepPart::kIdle,
                                                           StepPart::kSync}
                                   : std::vector<StepPart>{StepPart::kPython, StepPart::kDispatch},
                               overhead}},
                             c.replay->steps()));
  f.what_if = fmt::format("the step compiled into one graph: the op kernels' work stays, the eager dispatch ({} per "
                          "step) goes (what a graph's optimizations gain on the kernels themselves, fused ops and ops "
                          "run in parallel, is not counted)",
                          HumanDuration(overhead));
  f.suggestion =
      jax ? "Compile the training step: decorate the function that takes the gradient and updates the parameters "
            "with @jax.jit (parameters and optimizer state in, new ones out; donate_argnums for the old buffers), "
            "called with arrays of fixed shapes, so that each step is one compiled XLA program instead of a Python "
            "dispatch per primitive."
          : "Compile the training step: put the forward under GradientTape, tape.gradient() and "
            "optimizer.apply_gradients() in one function decorated with @tf.function (jit_compile=True for XLA), "
            "called with tensors of fixed shapes; or use model.compile() and model.fit(), which compile it for you.";
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

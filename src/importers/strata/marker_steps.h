// Steps from the spans strata's framework hooks write around step functions
// (python/strata/_tf.py, _keras.py): for a TensorFlow or Keras program, what
// optimizer.step() is for a PyTorch one. Boundaries, in order of preference,
// for a process that has no steps yet (its own marks, PyTorch's found steps):
//  - "keras.train_step": each call of a Keras model's train function;
//  - "tf.function NAME", "jax.jit NAME" (python/strata/_jax.py): each call of
//    the compiled function made outside any other that takes the most time on
//    its thread, called at least twice (a custom loop's train_step);
//  - "tf.Session.run" with the same fetches (the span's argument), called at
//    least twice (TF1 graph code: the training run, not the initializer's);
//    "keras.optimizer.apply", a Keras optimizer's apply_gradients() called
//    outside any step function (an eager GradientTape loop); "jax.grad NAME"
//    and "jax.value_and_grad NAME", a gradient taken outside any jitted
//    function (an eager JAX loop); these two eager ones are preferred over a
//    compiled function called fewer times (an evaluation every N iterations);
//  - "keras.predict_step" or "keras.test_step" (an inference program), and
//    ONNX Runtime's "ort.run" (python/strata/_ort.py), called at least twice.
// Steps tile the loop as PyTorch's do (torch_steps.h): each ends where its
// marker ends and begins where the previous one ended; the first begins with
// its marker and is partial. JAX's step function returns before its work is
// done (asynchronous dispatch) and the program waits after it: its steps run
// from one call's start to the next's (the last to the end of the first wait
// after its call), so that each holds its own wait; or, where the Python side
// saw it, to the loop's head after the call.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "importers/strata/decoder.h"
#include "importers/strata/torch_steps.h"

namespace strata::importers::strata_ctf {

// kStep slices over `markers` (slice indices on `track`, in time order): each
// step ends where its marker ends, or at the loop's head after it (`heads`,
// the track's LoopHead (ts, seen) sorted, when one was seen before the next
// marker begins; where the Python side gave up looking instead, at the first
// of `batches` (the track's strata.samples marks, sorted) after that point and
// before the next marker, if any), the first begins 1 ns before its marker.
// Appends (track, first step's begin) to `partial`.
void TileSteps(LoadContext& ctx, model::StringId step_name, uint32_t track, const std::vector<uint32_t>& markers,
               std::vector<std::pair<uint32_t, int64_t>>* partial,
               const std::vector<std::pair<int64_t, bool>>& heads = {}, const std::vector<int64_t>& batches = {});

// Adds steps (before Finalize) to processes without any from the framework
// hooks' spans; each ends at the loop's head after its marker where the Python
// side saw it (`heads`: python/strata/_loop_head.py, armed after each call of
// a step function).
void AddMarkerSteps(LoadContext& ctx, model::StringId step_name, std::vector<std::pair<uint32_t, int64_t>>* partial,
                    const std::vector<LoopHead>& heads = {});

// The steps a framework's own profiler ran in (strata._tf's "strata: ...
// profiler start/stop (--ops-steps)" spans and the steps between them): their
// times are the profiler's as much as the program's, so they are left out of
// the step statistics like a partial first step. Appends (track, step begin)
// to `profiled` (after Finalize; AttachStepSamples marks them).
void AddProfiledSteps(const model::Trace& t, std::vector<std::pair<uint32_t, int64_t>>* profiled);

// The samples the framework hooks saw go into each step's batch size: a
// zero-length span "strata.samples" whose argument is the count (a batch a
// tf.data iterator gave the program, the batches a Keras step function took).
// Appends one given BatchMark per such span (after Finalize).
void AddSampleMarks(const model::Trace& t, std::vector<BatchMark>* marks);

}  // namespace strata::importers::strata_ctf

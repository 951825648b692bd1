// Steps of a PyTorch program, found from what its loop repeats, and the samples
// each step processed (framework level; torch_events.cc collects the marks).
//
// A step is one whole iteration of the program's loop, and consecutive steps
// tile the loop: each runs from the previous step's boundary to its own, so
// every nanosecond between the first step's begin and the last step's end
// belongs to exactly one step (before: setup; after: teardown). Boundaries, in
// order of preference:
//  - the program's own marks (strata.step, torch.profiler's ProfilerStep#):
//    not touched here;
//  - the end of each optimizer.step() (the observer's auto_step_end): one step
//    per optimizer step, so gradient accumulation gives one step per update
//    (several optimizers stepping in turn, a GAN's: one step per round); where
//    a DataLoader feeds the loop, the boundary moves on to the fetch that heads
//    the next iteration, so work after the optimizer step (an evaluation, a
//    checkpoint) stays in its iteration's step;
//  - without any optimizer step, the end of each forward of the program's main
//    root module (inference loops under no_grad).
// The first step begins at its first activity (a DataLoader fetch, a root
// module's forward) or at the first forward.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "importers/strata/decoder.h"

namespace strata::importers::strata_ctf {

struct FoundStep {
  int64_t ts = 0, end = 0;  // ts: the step's first activity (only the first step keeps it)
  uint32_t track = 0, process = 0;
  uint64_t step = 0;
};

// Which optimizer object began a step() on a thread (the Python side's mark).
struct OptimizerMark {
  uint32_t track = 0;
  int64_t ts = 0;
  uint32_t optimizer = 0;
};

// After an optimizer step, the loop that called it took its next iteration (the
// Python side's loop_head).
struct LoopHead {
  uint32_t track = 0;
  int64_t ts = 0;
  bool seen = true;  // false: not the head, but where the Python side stopped looking for it
  uint32_t line = 0;  // the loop's line, where seen (0: not said, an older trace)
};

// The Python side's loop heads on `track`, as (ts, seen) sorted: seen false
// where it stopped looking with the iteration still running. A head inside an
// optimizer step of `steps` (sorted by end; `marks`, their begins) is moved to
// just after that step's end.
std::vector<std::pair<int64_t, bool>> HeadsOn(const std::vector<LoopHead>& heads, uint32_t track,
                                              const std::vector<const FoundStep*>& steps = {},
                                              const std::vector<OptimizerMark>& marks = {});

// Adds kStep slices (before Finalize) for processes that mark no steps of their
// own: `found` (optimizer-step boundaries) tiled per thread, one step per
// iteration of all the optimizers that step in it (`marks`), each ending at the
// loop head after its last optimizer step (`heads`; else the DataLoader fetch
// heading the next iteration; else, where the Python side stopped looking for
// the head, the next iteration's first activity; else the optimizer step's
// end), or, for processes with none, steps from root-module forwards.
// Returns the (track, begin) of each thread's first found step: it begins at its
// first activity, not where the loop's first iteration began (unknown), so it is
// partial and the statistics leave it out (AttachStepSamples marks it).
// `periods`, when given, gets the threads whose iterations take several
// optimizer steps (a GAN's), with how many.
std::vector<std::pair<uint32_t, int64_t>> AddFoundSteps(LoadContext& ctx, const std::vector<FoundStep>& found,
                                                        const std::vector<OptimizerMark>& marks,
                                                        const std::vector<LoopHead>& heads,
                                                        model::StringId step_name,
                                                        std::map<uint32_t, size_t>* periods = nullptr);

struct BatchMark {
  uint32_t track = 0;
  int64_t ts = 0;
  uint64_t samples = 0;
  uint32_t flags = 0;    // module_batch: 2 = training mode, 4 = the root forward before it raised,
                         // 8 = a training forward again with no backward pass since the last, or on the same input
  bool given = false;    // step_batch: the program's own count (strata.step(samples=N)), or an old trace's
};

// Gives each step a "batch_size" argument (after Finalize): the samples the
// program says, else those of the root forwards inside the step (training-mode
// ones if any), summed per root module and the least of those sums taken (every
// micro-batch of gradient accumulation counts; a GAN's discriminator, run on
// real and on generated batches, does not count twice). On threads whose
// iterations take several optimizer steps (`periods`: a GAN's models each
// updated in turn, a WGAN's critic five times per generator update), the
// models run on the iteration's batch again and again: the least of the root
// modules' largest single batches.
// Also gives the partial first steps (AddFoundSteps) a "partial_step" argument of 1.
// Gives the steps in `profiled` (a framework's profiler ran in them,
// marker_steps.h AddProfiledSteps) a "profiled_step" argument of 1.
void AttachStepSamples(model::Trace& t, const std::vector<BatchMark>& marks,
                       const std::vector<std::pair<uint32_t, int64_t>>& partial,
                       const std::vector<std::pair<uint32_t, int64_t>>& profiled = {},
                       const std::map<uint32_t, size_t>& periods = {});

}  // namespace strata::importers::strata_ctf

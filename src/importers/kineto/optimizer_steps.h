// Steps of an imported PyTorch-profiler trace that has no ProfilerStep ranges
// (a program profiled without prof.step(), or torch's legacy autograd profiler,
// which records none): one step per training iteration, as strata finds them
// live, from the "Optimizer.step#<Class>.step" ranges PyTorch records around
// every optimizer step. Consecutive steps tile the loop: each runs from the end
// of the previous iteration's optimizer step to the end of its own; the first
// from the thread's first event (flagged partial: setup shares it).
//
// Several optimizers per iteration (a GAN's two): the iteration ends at the
// optimizer that steps last in it, found as the name of the trace's last
// optimizer step. Two optimizers of the same class are indistinguishable in
// such a trace (strata's own recordings tell them apart by object): each
// iteration then counts as two steps.
#pragma once

#include "model/trace.h"

namespace strata::importers::kineto {

// Adds the steps (kStep slices named "step", numbered from 0) to a trace not
// finalized yet, on each thread with two or more optimizer steps, when the
// trace has no step slices. Returns how many it added.
size_t AddOptimizerSteps(model::Trace& t);

}  // namespace strata::importers::kineto

// Builds the model from an LTTng trace's events (lttng_events.h): processes
// and threads, the OS tables (thread states, system calls), per-CPU interrupt
// slices, user-space slices and instants, and the losses.
#pragma once

#include "importers/lttng/lttng_events.h"
#include "model/trace.h"

namespace strata::importers::lttng {

// Fills `t` (whose string pool interned `in`'s names); the caller finalizes it.
void ReplayLttng(const LttngEvents& in, model::Trace& t);

}  // namespace strata::importers::lttng

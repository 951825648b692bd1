// Framework profiles a traced process wrote into the trace directory, merged
// into the trace as it loads: <trace>/xspace/<pid>/, where strata._tf put
// TensorFlow's profiler output (an XSpace, plugins/profile/<run>/<host>.xplane.pb)
// for the steps of --ops-steps, with strata_clock.json: the process's pid and a
// wall-clock / trace-clock pair read together when the profiler started.
#pragma once

#include <string>

#include "model/trace.h"

namespace strata::importers::strata_ctf {

// Merges every such profile into `t` (before Finalize). Problems are warnings:
// the rest of the trace stands without them.
void MergeFrameworkProfiles(const std::string& trace_dir, model::Trace& t);

}  // namespace strata::importers::strata_ctf

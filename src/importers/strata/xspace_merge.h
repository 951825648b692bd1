// Framework profiles a traced process wrote into the trace directory, merged
// into the trace as it loads: <trace>/xspace/<pid>/, where strata._tf put
// TensorFlow's profiler output (an XSpace, plugins/profile/<run>/<host>.xplane.pb)
// for the steps of --ops-steps, with strata_clock.json: the process's pid and a
// wall-clock / trace-clock pair read together when the profiler started.
#pragma once

#include <cstdint>
#include <string>

#include "model/trace.h"

namespace strata::importers::strata_ctf {

// Merges every such profile into `t` (before Finalize), and TensorFlow's step
// stats (step_stats_merge.h). Problems are warnings: the rest of the trace
// stands without them.
void MergeFrameworkProfiles(const std::string& trace_dir, model::Trace& t);

// A profile directory's strata_clock.json: the process of the trace that
// wrote it and the offset from wall-clock nanoseconds to the trace's clock.
// False, with a warning in `t`, when it is missing, malformed or names no
// process of the trace.
bool ReadProfileClock(const std::string& dir, model::Trace& t, uint32_t* process, int64_t* realtime_to_trace);

}  // namespace strata::importers::strata_ctf

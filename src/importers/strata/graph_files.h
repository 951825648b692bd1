// Dataflow graphs a traced process wrote as files into the trace directory,
// read into Trace::graphs as the trace loads: <trace>/graphs/<pid>/N.json, one
// per graph, where strata._tf wrote each tf.function's graph after its first
// call: {"framework", "name", "nodes": [[name, type, device, [input node
// indexes]], ...]}.
#pragma once

#include <string>

#include "model/trace.h"

namespace strata::importers::strata_ctf {

// Problems are warnings: the rest of the trace stands without them.
void ReadGraphFiles(const std::string& trace_dir, model::Trace& t);

}  // namespace strata::importers::strata_ctf

// Runs babeltrace2 over LTTng trace directories and keeps their messages as
// LttngEvents (lttng_events.h). Builds without libbabeltrace2 return
// kUnavailable.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "importers/lttng/lttng_events.h"
#include "model/trace.h"

namespace strata::importers::lttng {

// Reads every trace in `dirs` (one source.ctf.fs each, muxed into time order)
// into `out`, interning names into `strings`. An error before any event is
// returned; one after (a damaged packet further on) stops the read and is
// left in `*stopped`, the events read until then kept. Runs babeltrace2 in a
// child process (lttng_child.cc): its assertions on malformed traces end the
// child, and come back as a kCorrupt Status.
Status ReadLttng(const std::vector<std::string>& dirs, model::StringPool& strings, LttngEvents& out,
                 std::string* stopped);

// The same in this process (lttng_reader.cc).
Status ReadLttngInProcess(const std::vector<std::string>& dirs, model::StringPool& strings, LttngEvents& out,
                          std::string* stopped);

}  // namespace strata::importers::lttng

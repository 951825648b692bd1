// The OS tables sorted as model/os_tables.h promises: system calls, thread
// states and CPU samples by (track, ts), stably, with the thread states'
// references to system-call rows remapped. Shared by the importers that fill
// them (strata's OS level, LTTng).
#pragma once

#include "model/trace.h"

namespace strata::importers {

void SortOsTables(model::Trace& t);

}  // namespace strata::importers

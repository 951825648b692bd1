// Writes a model::Trace, whatever it was imported from, to formats other
// tools read:
//   perfetto     Perfetto's protobuf trace (ui.perfetto.dev, trace_processor):
//                a track per thread and per device queue, flows from each
//                launch call to its device work, counters, args as debug annotations
//   chrome-json  Chrome trace JSON (chrome://tracing, Perfetto UI, speedscope)
//   sqlite       a SQLite database with documented tables (docs/sqlite-schema.md)
// Every slice, instant, counter sample, memory event and flow of the model is
// written. Slices that overlap without nesting on one track (which a timeline
// cannot stack) go to extra lanes of that track instead of being dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/trace.h"

namespace strata::exporters {

enum class ExportFormat { kPerfetto, kChromeJson, kSqlite };
// "perfetto", "chrome-json", "sqlite"; false if unknown.
bool ParseExportFormat(const std::string& s, ExportFormat* f);

struct ExportStats {
  uint64_t slices = 0, instants = 0, counter_samples = 0, memory_events = 0, flows = 0;
  uint64_t extra_lanes = 0;  // lanes opened for slices that overlap without nesting
};

StatusOr<ExportStats> ExportTrace(const model::Trace& t, ExportFormat f, const std::string& path);
StatusOr<ExportStats> ExportPerfetto(const model::Trace& t, const std::string& path);
StatusOr<ExportStats> ExportChromeJson(const model::Trace& t, const std::string& path);
StatusOr<ExportStats> ExportSqlite(const model::Trace& t, const std::string& path);

// Lane of every slice of one track: 0 for slices that nest, 1.. for slices that
// overlap an earlier one without nesting. `first`/`last` is the track's slice
// range after Finalize. Returns the number of lanes used.
uint32_t AssignLanes(const model::Trace& t, uint32_t first, uint32_t last, std::vector<uint32_t>& lane);

}  // namespace strata::exporters

// Writes a model::Trace, whatever it was imported from, to formats other
// tools read:
//   perfetto     Perfetto's protobuf trace (ui.perfetto.dev, trace_processor):
//                a track per thread and per device queue with its slices and
//                system calls, flows (launch -> device work, forward -> backward),
//                thread states and CPU lanes (ftrace sched_switch/sched_waking),
//                CPU samples with their callstacks (perf_sample), counters,
//                memory, and what was not recorded as trace attributes
//   chrome-json  the Trace Event Format (chrome://tracing, Perfetto UI, speedscope):
//                X slices, s/f flows, C counters, samples + stackFrames, M names
//   sqlite       a SQLite database with documented tables (docs/sqlite-schema.md)
// Every slice, system call, thread state, CPU sample, instant, counter sample,
// memory event and flow of the model is written. Items that overlap without
// nesting on one track (which a timeline cannot stack) go to extra lanes of
// that track instead of being dropped. The output is written to PATH.tmp and
// renamed; on failure nothing is left behind.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "model/trace.h"

namespace strata::exporters {

enum class ExportFormat { kPerfetto, kChromeJson, kSqlite };
// "perfetto", "chrome-json", "sqlite"; false if unknown.
bool ParseExportFormat(const std::string& s, ExportFormat* f);

struct ExportStats {
  uint64_t slices = 0, instants = 0, counter_samples = 0, memory_events = 0, flows = 0;
  uint64_t syscalls = 0, thread_states = 0, context_switches = 0, samples = 0, not_recorded = 0;
  uint64_t extra_lanes = 0;  // lanes opened for items that overlap without nesting
};

StatusOr<ExportStats> ExportTrace(const model::Trace& t, ExportFormat f, const std::string& path);
StatusOr<ExportStats> ExportPerfetto(const model::Trace& t, const std::string& path);
StatusOr<ExportStats> ExportChromeJson(const model::Trace& t, const std::string& path);
StatusOr<ExportStats> ExportSqlite(const model::Trace& t, const std::string& path);

}  // namespace strata::exporters

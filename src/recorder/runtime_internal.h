// Lifecycle of the in-process recorder, used by the preload entry points (preload.cc)
// and by tests that drive the recorder directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "recorder/runtime.h"

namespace strata::recorder {

struct Config {
  std::string dir;                 // trace directory (ctf/ inside it)
  uint64_t chunk_bytes = 256 * 1024;  // per chunk, its 64-byte control block included
  uint64_t max_chunks = 256;       // buffer budget = chunk_bytes * max_chunks
  uint32_t flush_ms = 100;         // periodic flush: bounds the loss on SIGKILL
  bool block = false;              // full buffers: block the writer (bounded) instead of drop-and-count
};

// Reads STRATA_TRACE_DIR, STRATA_BUFFER_BYTES, STRATA_CHUNK_BYTES, STRATA_FLUSH_MS,
// STRATA_BUFFER_POLICY (drop|block), STRATA_CLOCK (tsc|monotonic).
STRATA_RECORDER_API Config ConfigFromEnv();

// Starts recording in this process. Idempotent.
STRATA_RECORDER_API Status Start(const Config& cfg);

// Final flush; recording stops. Safe to call more than once.
STRATA_RECORDER_API void Finalize();
// Best-effort final flush from a fatal-signal handler (bounded wait for locks).
STRATA_RECORDER_API bool EmergencyFlush();
// Around exec*(): flush and tell the supervisor that this image may be replaced
// (it then writes whatever other threads add before the exec); ExecFailed when
// the exec returned.
void PrepareExec();
void ExecFailed();
STRATA_RECORDER_API uint64_t DroppedTotal();
// Called by strata_step_begin/end: the program marks its own steps.
void NoteExplicitStep(uint64_t step, bool begin);
// False in a vfork() child, which shares the parent's memory.
STRATA_RECORDER_API bool InOwnProcess();

// Test seam for the flusher's races: called on the flushing thread (with the
// flush lock held) at the named point of every flush cycle, so that a test can
// make other threads drop events or exit at exactly that moment.
enum class FlushPhase {
  kPacketsWritten,  // every stream's packets (and events_discarded) written; exited streams not yet deleted
};
using FlushPhaseHook = void (*)(FlushPhase);
STRATA_RECORDER_API void SetFlushPhaseHookForTesting(FlushPhaseHook hook);

// The step the program is in (strata_step_begin/end), for CurrentStep().
extern std::atomic<uint64_t> g_current_step;

}  // namespace strata::recorder

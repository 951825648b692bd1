// The in-process recorder (libstrata): its internal API for collectors that run
// inside the traced process (PyTorch observer, CUPTI, OpenCL, HSA).
//
// Collectors write through these functions only; they never touch files.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "format/control.h"
#include "format/schema.h"

// Exported from libstrata.so for collectors built as separate libraries.
#define STRATA_RECORDER_API __attribute__((visibility("default")))

namespace strata::recorder {

// Process-wide recording state; 0 = off. Also exported to the C API as strata_active_.
enum : uint32_t { kOff = 0, kOnTsc = 1, kOnMonotonic = 2 };

// Raw timestamp in the process's recording clock (see Now()).
STRATA_RECORDER_API uint64_t NowRaw();
// Converts "now" to trace-clock ns (CLOCK_MONOTONIC): for collectors that
// receive timestamps from elsewhere and need the current time to compare.
STRATA_RECORDER_API uint64_t NowNs();
STRATA_RECORDER_API bool Active();

// Interns a name for this process; 0 if not recording.
STRATA_RECORDER_API uint32_t Intern(std::string_view name);

// Emits an event of the thread stream on the calling thread, stamped now.
// `payload` is the CTF-encoded field bytes (format/schema.h layout).
STRATA_RECORDER_API void EmitThreadEvent(uint32_t event_id, const void* payload, uint32_t size);

// Process-level facts: go to the process stream.
STRATA_RECORDER_API void SetThreadName(uint32_t tid, std::string_view name);
// A collector says what it recorded or could not: state is "ok", "partial",
// "unavailable" or "error"; detail says why. Also lands in the manifest.
STRATA_RECORDER_API void ReportCollectorStatus(std::string_view collector, std::string_view state, std::string_view detail);

// Streams whose events carry their own trace-clock timestamps (CLOCK_MONOTONIC
// ns) because they happen elsewhere: a device queue, or API calls a vendor
// runtime reports after the fact for some thread.
//
// EmitExternal is lock-free and may be called from any thread (a driver's
// completion callback, CUPTI's buffer thread): the record goes into the calling
// thread's own buffer like any event (same drop-and-count policy), tagged with
// its stream; the flusher moves it to the stream, sorts by timestamp, and writes
// every event older than the stream's reorder window. Events that arrive later
// than the window behind an already written one are clamped to it (counted in
// RecorderStats::clamped). Streams live until the process exits (or forks: a
// child must not use its parent's streams).
class ExternalStream;
// One per device queue (see format/schema_accel.h for the numbering).
STRATA_RECORDER_API ExternalStream* OpenDeviceStream(uint32_t device, uint64_t queue);
// Thread-stream events for thread `tid` of this process, written with explicit
// times (a second stream file for that thread; readers merge them by tid).
STRATA_RECORDER_API ExternalStream* OpenThreadStreamFor(uint32_t tid);
// How long the flusher holds a stream's newest events for late, earlier ones
// (default 200 ms). Raise it for sources that deliver out of order in batches.
STRATA_RECORDER_API void SetReorderWindow(ExternalStream* s, uint64_t window_ns);
STRATA_RECORDER_API void EmitExternal(ExternalStream* s, uint32_t event_id, uint64_t ts_ns, const void* payload, uint32_t size);
// What a record routed to `s` carries (its index << 8; the event id goes in the
// low byte), for collectors that build records in place (recorder/hot.h
// EmitRoutedInPlace); kNoRoute when `s` cannot take events. Fixed for s's life:
// look it up once per stream.
inline constexpr uint32_t kNoRoute = UINT32_MAX;
STRATA_RECORDER_API uint32_t RouteOf(const ExternalStream* s);

// The recording's run-time switches (format/control.h), mapped from the trace
// directory; nullptr when the process was traced without a control file (its
// collectors then take their settings from the environment). Read fields with
// relaxed loads; they may change at any time.
STRATA_RECORDER_API const format::ControlBlock* Control();

// True once the program marked a step itself (strata_step_begin): collectors
// that find steps automatically stand down from then on.
STRATA_RECORDER_API bool ExplicitStepsUsed();

// Called on the marking thread for each strata_step_begin/end, before the event
// is written (e.g. to switch a per-step tier on). One listener per process.
using StepListener = void (*)(uint64_t step, bool begin);
STRATA_RECORDER_API void SetStepListener(StepListener listener);

// Emits an event of the process stream (device descriptions, loss totals);
// written at the next flush, stamped with the flush time.
STRATA_RECORDER_API void EmitProcessEvent(uint32_t event_id, const void* payload, uint32_t size);

// The number of the step the program is in (strata_step_begin .. _end), or
// UINT64_MAX outside steps: collectors with a step window (--gpu-metrics).
STRATA_RECORDER_API uint64_t CurrentStep();

// A step begins or ends in this process: explicit marks (strata_step_begin/end)
// and steps a framework collector found (the PyTorch observer's). Sets
// CurrentStep() and, with a control block, publishes the step for the
// supervisor (its `current_step`, and each finished step in the live-step ring
// that `strata record --serve` shows). A begin of the step already begun moves
// its start (a step placed at its first activity).
STRATA_RECORDER_API void MarkStep(uint64_t step, bool begin);
// A collector says what it records in the current step (format::ControlTier
// bits: kTierOps, kTierShapes, kTierCuda); the live-step ring carries them.
STRATA_RECORDER_API void NoteStepTiers(uint32_t tiers);
// The step under way is ended by optimizer number `optimizer` (0, 1, ... in the
// order they first step): the live view groups several optimizers' steps into
// one training iteration.
STRATA_RECORDER_API void NoteStepOptimizer(uint32_t optimizer);

// Writes the process's rank in a distributed job if its environment names one
// not written before (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, ...): done at
// start; collectors call it again where a program may set the variables
// itself (the PyTorch observer, at its first collective).
STRATA_RECORDER_API void NoteRank();

// Flushes all buffers to disk now (thread-safe; blocks while the flusher runs).
STRATA_RECORDER_API bool FlushNow();

// Counters about the recorder itself, for tests and the manifest.
struct RecorderStats {
  uint64_t events_written = 0;
  uint64_t events_dropped = 0;
  uint64_t streams = 0;
  uint64_t clamped = 0;
};
STRATA_RECORDER_API RecorderStats Stats();

}  // namespace strata::recorder

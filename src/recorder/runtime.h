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

// An out-of-thread stream (a device queue). Events carry their own trace-clock
// timestamps; they are sorted per flush and written in time order.
class ExternalStream;
STRATA_RECORDER_API ExternalStream* OpenDeviceStream(uint32_t device, uint64_t queue);
STRATA_RECORDER_API void EmitExternal(ExternalStream* s, uint32_t event_id, uint64_t ts_ns, const void* payload, uint32_t size);

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

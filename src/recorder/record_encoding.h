// What the recorder and its supervisor both need to turn buffered records into
// CTF: the flusher in the traced process, and the salvage (salvage.cc) that
// writes a dead process's buffers from `strata record`.
#pragma once

#include <cstdint>
#include <string>

#include "format/ctf_writer.h"
#include "format/tsdl.h"
#include "recorder/buffer.h"

namespace strata::recorder {

// Writes one record, substituting the narrow form of the commonest events when
// the values fit (format/schema.h): the hot path stays one fixed layout, and
// the file stays small.
void AppendNarrowed(format::StreamWriter& w, const Record* r, uint64_t ts);

// The abstract unix socket (no file: nothing to clean up, nothing to follow)
// where the `strata record` of the trace with `uuid` takes its processes'
// buffers (supervisor_link.cc, supervision.cc). Starts with the NUL byte.
std::string SupervisorSocketName(const format::Uuid& uuid);

// The first message of a traced process on that socket; the region's memfd
// travels with it (SCM_RIGHTS).
struct Hello {
  uint32_t magic;
  uint32_t version;
  uint32_t pid;
  uint32_t pad;
  uint64_t instance;
  uint64_t region_bytes;
};

// /proc/PID/stat's starttime (clock ticks since boot), 0 if the process is gone
// (or a zombie):
// with the pid, it tells one process from a later one that reuses its pid.
uint64_t ProcessStartTicks(uint32_t pid);

}  // namespace strata::recorder

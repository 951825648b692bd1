// The supervisor's side of the recorder's shared memory (shm_layout.h): what
// each stream of a traced process wrote, dropped, failed to write, and, for a
// process that ended without its final flush, what its buffers still held.
// Linked into `strata record`, not into libstrata.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::recorder {

struct StreamAccount {
  std::string file;    // its file in ctf/ ("" when it never got one)
  std::string kind;    // "process", "thread", "device", "unattributed" (threads beyond the slots)
  uint32_t tid = 0;
  uint64_t events_written = 0, bytes_written = 0;            // by the process
  uint64_t dropped_events = 0, dropped_bytes = 0;            // buffers full (the drop policy)
  uint64_t write_failed_events = 0, write_failed_bytes = 0;  // packets the disk refused
  int write_errno = 0;
  uint64_t unflushed_events = 0, unflushed_bytes = 0;        // lost with the process: not recoverable
  uint64_t salvaged_events = 0, salvaged_bytes = 0;          // written by the supervisor after the process
  uint64_t LostEvents() const { return dropped_events + write_failed_events + unflushed_events; }
};

struct ProcessAccount {
  uint32_t pid = 0;
  uint64_t instance = 0;
  // "exited" (final flush done), "died" (buffers written by the supervisor),
  // "exec" (replaced by exec; the rest written by the supervisor), "running"
  // (still alive when the recording ended: counts so far, buffers not read).
  std::string end;
  std::string note;  // what went wrong reading or writing its buffers, if anything
  std::vector<StreamAccount> streams;
};

// Reads the region (shm_layout.h) of process `pid`, `bytes` long, of the trace
// in `trace_dir`. With `salvage`, the process has ended without its final
// flush: every record past its streams' committed points is written to their
// files (whole packets, the sequence numbers and loss counts continued), and
// what cannot be written or recovered is counted as unflushed.
ProcessAccount AccountForRegion(const uint8_t* base, size_t bytes, const std::string& trace_dir, bool salvage);

}  // namespace strata::recorder

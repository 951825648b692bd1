// The recorder's shared state: what a traced process publishes about its
// buffers, so that the supervisor (`strata record`) can account for every
// event after the process is gone, and write what its buffers still held.
//
// LTTng's promise is the model: its applications write into ring buffers that
// the consumer daemon maps too, so a killed application loses nothing that
// reached its buffers; the consumer drains them. Here one memfd per process
// holds this control block and the record chunks; the process maps it
// MAP_SHARED and hands the descriptor to the supervisor over a unix socket
// (recorder/supervisor_link.cc) when it starts. When the process ends without
// its final flush (SIGKILL, a crash the signal handler could not flush, an
// exec), the supervisor's mapping outlives it and recorder/salvage.cc writes
// every record past the last committed point to the stream files.
//
//   +---------------------------+ 0
//   | ShmHeader                 |  identity, state, clock calibration, sizes
//   +---------------------------+ slots_offset
//   | StreamSlot[max_slots]     |  per stream: drop counters (its thread's own
//   |                           |  cache line), file, commit records
//   +---------------------------+ log_offset
//   | process-event log (ring)  |  names, thread names, statuses not yet written
//   +---------------------------+ chunks_offset (page aligned)
//   | Chunk[max_chunks]         |  buffer.h chunks, chunk_stride bytes apart
//   +---------------------------+
//
// The file is sparse: only touched pages take memory, so a process pays for
// the chunks it uses, as with anonymous memory. A process without a supervisor
// (a test driving the recorder, STRATA_TRACE_DIR set by hand) keeps the same
// layout in anonymous memory.
//
// Commit protocol (what makes the salvage exact): for each packet it writes, the
// flusher first fills the spare CommitRecord with the state the stream will be
// in once the packet is in the file (the chunk position its events end at, the
// file's length, the writer's sequence number...) and publishes it as
// `inflight`; then write(2); then publishes the record as `committed`. A record
// is published by one 8-byte store of its index, after its fields, so a process
// killed at any instruction leaves a committed record that is whole, and at most
// one in flight, which holds only if the file is at least as long as it says.
// Every field is written by one thread of the process and read by the
// supervisor only after the process is gone: relaxed atomics (address-free on
// the 64-bit targets strata runs on) with release ordering on the publishing
// stores keep the compiler from moving the fields past them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::recorder {

inline constexpr uint32_t kShmMagic = 0x53545348;  // "HSTS"
inline constexpr uint32_t kShmVersion = 1;

// ShmHeader::state.
enum : uint32_t {
  kShmRunning = 1,
  kShmFinalized = 2,  // the final flush is done: nothing left in the buffers
  kShmExecing = 3,    // flushed before exec(); if the exec succeeds, this image is gone
};

// StreamSlot::kind.
enum : uint32_t {
  kSlotFree = 0,
  kSlotProcess = 1,       // the process stream (slot 0): its log is the process-event log
  kSlotUnattributed = 2,  // slot 1: drops of threads that have no slot (registration failed, slots exhausted)
  kSlotThread = 3,        // a thread's own events
  kSlotThreadExt = 4,     // external thread stream (OpenThreadStreamFor)
  kSlotDevice = 5,        // external device-queue stream
};
inline constexpr uint32_t kProcessSlot = 0;
inline constexpr uint32_t kUnattributedSlot = 1;
inline constexpr uint32_t kNoSlot = UINT32_MAX;  // Chunk::slot of a free chunk

using U64 = std::atomic<uint64_t>;
static_assert(U64::is_always_lock_free, "shared counters must be address-free atomics");

// The state of one stream's file after a packet, and how far its source is consumed.
struct CommitRecord {
  U64 chunk_seq;  // every record of the stream's chunks before (chunk_seq, pos) is in the file or counted lost
  U64 pos;        // (the process slot: the position in the process-event log)
  U64 file_bytes;  // length of the file's complete packets
  U64 next_seq;    // the next packet's number
  U64 last_ts;     // the last event's time (packets never go back in time)
  U64 discarded;   // the events_discarded the last packet carried
  U64 events_written;
  U64 bytes_written;
  U64 write_failed_events;  // in packets that could not be written (a full disk)
  U64 write_failed_bytes;
  U64 write_errno;          // of the last failure
  U64 pad;
};

struct alignas(64) StreamSlot {
  // Written by the stream's own thread when it drops an event (full buffers),
  // read by the flusher: a cache line of its own, so drops of many threads
  // never contend.
  U64 dropped;
  U64 dropped_bytes;
  uint8_t pad0[48];
  // Identity: set before the slot is published (ShmHeader::used_slots).
  std::atomic<uint32_t> kind;
  uint32_t tid;       // thread streams
  uint32_t device;    // device streams
  uint32_t external;  // external streams: their index (routed records' stream number)
  uint64_t queue;     // device streams
  uint64_t stream_instance_id;
  char base_name[64];  // the stream file's name in ctf/ before any ".N" suffix
  char file_name[64];  // the name it got ("" until opened)
  // Flusher state.
  CommitRecord rec[2];
  std::atomic<uint32_t> committed;  // index into rec of the committed record
  std::atomic<uint32_t> inflight;   // 1 + index of the record in flight, 0 when none
  U64 pending_external;  // external streams: events held back for reordering (lost if the process dies)
  uint8_t pad1[48];
};
static_assert(sizeof(StreamSlot) % 64 == 0);

struct alignas(64) ShmHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t pid;
  uint32_t ppid;
  uint64_t instance;       // the process instance (a fork child is a new one)
  uint64_t start_ticks;    // /proc/self/stat starttime: tells a reused pid from ours
  uint8_t uuid[16];        // the trace's
  std::atomic<uint32_t> state;
  uint32_t tsc;            // 1: records carry TSC ticks (converted with calib), 0: CLOCK_MONOTONIC ns
  // TSC calibration: two anchors (TscCalibration's prev and last), double
  // buffered like commit records.
  struct Calib {
    U64 prev_tsc, prev_ns, last_tsc, last_ns;
  } calib[2];
  std::atomic<uint32_t> calib_index;
  uint32_t pad0;
  // Sizes and offsets of the regions (fixed at start).
  uint64_t total_bytes;
  uint64_t slots_offset;
  uint32_t max_slots;
  std::atomic<uint32_t> used_slots;  // slots [0, used_slots) are initialized
  uint64_t log_offset;
  uint64_t log_capacity;   // bytes (a power of two)
  U64 log_end;             // bytes ever appended (positions are modulo log_capacity)
  U64 log_overflow;        // process events that did not fit the log (held in memory only)
  uint64_t chunks_offset;
  uint64_t chunk_stride;   // bytes from one chunk to the next (its control block included)
  uint64_t max_chunks;
  U64 allocated_chunks;    // chunks [0, allocated_chunks) have been handed out at least once
  // External streams: index -> slot (kNoSlot when it has none).
  static constexpr uint32_t kMaxExternal = 1024;
  std::atomic<uint32_t> external_slot[kMaxExternal];
};

// A process-event log entry: header, then `size` payload bytes, padded to 8.
struct LogEntry {
  uint32_t event_id;
  uint32_t size;
};
constexpr uint64_t LogEntryBytes(uint32_t size) { return sizeof(LogEntry) + ((size + 7u) & ~7u); }

}  // namespace strata::recorder

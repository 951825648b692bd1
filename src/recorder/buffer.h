// Per-thread record buffers: the recorder's hot path.
//
// A thread writes fixed-layout records into its current Chunk with no lock and
// no system call; a background flusher consumes them concurrently and encodes
// them to CTF. Layout of a chunk:
//
//   +--------------------------+ <- Chunk (one cache line of control words)
//   | write_pos | capacity     |    write_pos: owner stores (release), flusher loads (acquire)
//   | sealed | read_pos | next |    read_pos: flusher only; next: under the stream's mutex
//   | slot | seq                |    the stream it belongs to, its place in that stream
//   +--------------------------+
//   | Record | payload... | Record | Record | ...   (8-byte aligned records)
//   +--------------------------+
//
// A Record is 16 bytes: raw timestamp, event id, payload size, and up to 4
// payload bytes inline (span_begin's name id), so the hottest events are one
// 16-byte store. Larger payloads follow the record, padded to 8 bytes.
//
// Memory order: the owner writes a record's bytes, then publishes it with a
// release store of write_pos; the flusher's acquire load of write_pos makes
// those bytes visible. Once the owner moves to another chunk it sets `sealed`
// (release) after its last write_pos store, so a flusher that sees sealed=true
// and read_pos == write_pos knows the chunk is drained for good and recycles it.
//
// Chunks live in memory the supervisor can map (shm_layout.h): `slot` and `seq`
// let it find, after the process is gone, which stream each chunk belonged to
// and in what order, and write what was not yet in the stream files.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::recorder {

struct Record {
  uint64_t ts;         // raw clock: TSC ticks or CLOCK_MONOTONIC ns (process-wide mode)
  uint16_t event_id;   // event class id within the stream class
  uint16_t size;       // payload bytes
  uint32_t inline4;    // the payload itself when size <= 4
};
static_assert(sizeof(Record) == 16, "Record is one 16-byte store on the hot path");

// Bytes a record with `payload` bytes occupies in a chunk.
constexpr uint32_t RecordBytes(uint32_t payload) {
  return payload <= 4 ? 16u : 16u + ((payload + 7u) & ~7u);
}

// An external-stream event (runtime.h EmitExternal) travels through the
// emitting thread's chunk as a record with this id. Its inline word says where it
// goes, (stream index << 8) | event id, and its payload always follows the
// record, whatever its size.
inline constexpr uint16_t kRoutedEvent = 0xffff;
inline constexpr uint32_t kMaxRoutedStreams = 1u << 24;
constexpr uint32_t RoutedBytes(uint32_t payload) { return 16u + ((payload + 7u) & ~7u); }

struct alignas(64) Chunk {
  std::atomic<uint32_t> write_pos{0};
  uint32_t capacity = 0;           // bytes in data[]
  std::atomic<bool> sealed{false};
  uint32_t read_pos = 0;           // flusher only
  Chunk* next = nullptr;           // stream's chunk list; guarded by ThreadStream::mu
  // The stream slot (shm_layout.h) and the chunk's number within that stream,
  // set when a thread takes the chunk; slot is kNoSlot while the chunk is free.
  std::atomic<uint32_t> slot{UINT32_MAX};
  std::atomic<uint64_t> seq{0};
  // The record area follows the control block: a chunk is allocated as
  // sizeof(Chunk) + capacity bytes.
  uint8_t* data() { return reinterpret_cast<uint8_t*>(this + 1); }

  // Before the chunk is given to a stream (its slot is still kNoSlot).
  void Reset() {
    write_pos.store(0, std::memory_order_relaxed);
    sealed.store(false, std::memory_order_relaxed);
    read_pos = 0;
    next = nullptr;
  }
};
static_assert(sizeof(Chunk) == 64, "control words fit one cache line; records start 64-byte aligned");

}  // namespace strata::recorder

// The recorder's hot path, inlined into the C API functions (api.cc), and into
// in-process collectors whose events are per op (the PyTorch observer): for them
// an out-of-line EmitThreadEvent per event would cost more than the event.
// libstrata exports t_chunk and SlowEmit for that; such a collector is loaded
// only into processes where libstrata is (its TLS is in the static TLS block).
//
// Cost when recording: one relaxed load of the state, one TLS load, the clock
// read, a bounds check, one 16-byte record store and one release store of
// write_pos (a plain store on x86). Everything else is in SlowEmit().
#pragma once

#include <cstdint>
#include <cstring>

#include "base/clock.h"
#include "recorder/buffer.h"
#include "recorder/runtime.h"

extern "C" uint32_t strata_active_;

namespace strata::recorder {

// The calling thread's current chunk; nullptr until its first event. Initial-exec
// TLS: one %fs-relative load (libstrata is preloaded or linked, not dlopen'ed late).
extern __thread Chunk* t_chunk __attribute__((tls_model("initial-exec"), visibility("default")));

// Handles everything the hot path does not: first event of a thread, a full
// chunk, the drop/block policy. `ts` was read before the buffer check.
STRATA_RECORDER_API void SlowEmit(uint32_t event_id, const void* payload, uint32_t size, uint64_t ts);

inline uint32_t LoadState() { return __atomic_load_n(&strata_active_, __ATOMIC_RELAXED); }

inline uint64_t ReadClock(uint32_t state) {
  return state == kOnTsc ? ReadTsc() : MonotonicNs();
}

// Writes a record into the calling thread's chunk, `need` bytes in all: the
// header, then whatever `fill(uint8_t* payload)` writes after it (nothing for
// a payload of <= 4 bytes, which travels in `inline4`). False when the thread
// has no chunk yet or it is full: the caller then takes its slow path.
template <typename Fill>
inline bool TryWrite(uint64_t ts, uint16_t event_id, uint16_t size, uint32_t inline4, uint32_t need, Fill&& fill) {
  Chunk* c = t_chunk;
  if (__builtin_expect(c == nullptr, 0)) return false;
  uint32_t pos = c->write_pos.load(std::memory_order_relaxed);
  if (__builtin_expect(pos + need > c->capacity, 0)) return false;
  Record* r = reinterpret_cast<Record*>(c->data() + pos);
  r->ts = ts;
  r->event_id = event_id;
  r->size = size;
  r->inline4 = inline4;
  fill(reinterpret_cast<uint8_t*>(r + 1));
  c->write_pos.store(pos + need, std::memory_order_release);
  return true;
}

inline void NoPayload(uint8_t*) {}

// An event whose payload fits in 4 bytes (span_begin, span_end, instant).
inline void EmitSmall(uint32_t state, uint16_t event_id, uint32_t payload, uint16_t size) {
  uint64_t ts = ReadClock(state);
  if (__builtin_expect(TryWrite(ts, event_id, size, payload, sizeof(Record), NoPayload), 1)) return;
  SlowEmit(event_id, &payload, size, ts);
}

// An event with a payload of any size.
inline void EmitBytes(uint32_t state, uint16_t event_id, const void* payload, uint32_t size) {
  uint64_t ts = ReadClock(state);
  if (size <= 4) {
    uint32_t v = 0;
    std::memcpy(&v, payload, size);
    if (__builtin_expect(TryWrite(ts, event_id, static_cast<uint16_t>(size), v, sizeof(Record), NoPayload), 1)) return;
  } else if (__builtin_expect(size <= 0xffff, 1)) {
    auto copy = [payload, size](uint8_t* p) { std::memcpy(p, payload, size); };
    if (__builtin_expect(TryWrite(ts, event_id, static_cast<uint16_t>(size), 0, RecordBytes(size), copy), 1)) return;
  }
  SlowEmit(event_id, payload, size, ts);
}

// An event with a payload of kSize (> 4) bytes that `fill(uint8_t* payload)`
// writes straight into the chunk: no intermediate copy, no size branches.
template <uint32_t kSize, typename Fill>
inline void EmitFixed(uint32_t state, uint16_t event_id, Fill&& fill) {
  static_assert(kSize > 4 && kSize <= 0xffff);
  uint64_t ts = ReadClock(state);
  if (__builtin_expect(TryWrite(ts, event_id, kSize, 0, RecordBytes(kSize), fill), 1)) return;
  uint8_t payload[kSize];
  fill(payload);
  SlowEmit(event_id, payload, kSize, ts);
}

// EmitExternal for a payload of kSize bytes that `fill(uint8_t* payload)` writes
// straight into the calling thread's chunk: no intermediate copy. `route` is
// RouteOf(stream). False when it cannot (not recording, the thread's first
// event, a full chunk, no route): the caller then goes through EmitExternal,
// which takes the slow path (or drops and counts) as usual.
template <uint32_t kSize, typename Fill>
inline bool EmitRoutedInPlace(uint32_t route, uint8_t event_id, uint64_t ts_ns, Fill&& fill) {
  static_assert(kSize > 4 && kSize <= 0xffff);
  if (route == kNoRoute || LoadState() == kOff) return false;
  // The timestamp is already trace-clock ns: the flusher routes it without conversion.
  return TryWrite(ts_ns, kRoutedEvent, kSize, route | event_id, RoutedBytes(kSize), fill);
}

}  // namespace strata::recorder

// Decodes strata CTF stream files: packets, then events, with every length and
// offset checked.
//
// A damaged packet costs that packet at most, not the stream: NextPacket()
// checks each packet's header (magic, uuid, stream class and instance, sizes,
// a start no earlier than the previous packet's last event) and skips one that
// fails to the next valid packet header: the one its packet_size points at
// when that is a valid header, else the next place where the packet magic and
// the trace's uuid (20 bytes no event of the trace contains) begin a valid
// header. NextEvent() checks every event (its id, its payload within the
// packet's content, a timestamp that never goes back nor past the packet's
// timestamp_end) and, at the first that fails, gives up the rest of the packet
// only: the events before it were whole. What was skipped is counted
// (damaged_packets(), damaged_bytes()) and described with its byte offset
// (damage()). A file cut short by a writer that was killed mid-write ends with
// a partial packet: trailing_bytes(), not damage. One pass over the bytes: no
// event is decoded twice.
//
// The event loop is the reader's hot path (target: > 50 M events/s on one core):
// NextEvent() decodes the 4-byte compact header in the common case, rebuilds
// the 64-bit timestamp, and finds the payload's end from a per-class size table
// (strings are the only variable-size fields).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/tsdl.h"

namespace strata::format {

struct Packet {
  uint32_t stream_id = 0;
  uint64_t stream_instance_id = 0;
  uint64_t ts_begin = 0, ts_end = 0;
  uint64_t seq = 0;
  uint64_t discarded = 0;               // running total, as written
  std::vector<uint64_t> context;        // stream-specific context fields, in metadata order
  size_t offset = 0;                    // of the packet in the file
  size_t content_bytes = 0, packet_bytes = 0;
};

struct EventView {
  uint32_t id;
  uint64_t ts;
  const uint8_t* payload;
  uint32_t size;
};

// A stretch of a stream file that was skipped: a damaged packet, or bytes
// between packets that begin no valid packet.
struct PacketDamage {
  size_t offset = 0;
  size_t bytes = 0;
  std::string what;  // the first check it failed, with the byte offset
};

template <typename T>
inline T ReadLE(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

class StreamFileReader {
 public:
  // `data` must outlive the reader (typically a MappedFile).
  StreamFileReader(const ParsedMetadata& md, const uint8_t* data, size_t size, std::string path);

  // Reads the next valid packet's header and context, skipping (and counting)
  // damaged ones. False at the end of the file.
  bool NextPacket(Packet* out);

  // Within the current packet: false at its end, or at a damaged event (the
  // rest of the packet is then counted as damaged).
  inline bool NextEvent(EventView* ev);

  // The stream class and instance of the file's packets (the majority of its
  // first three valid headers, so that one damaged header cannot relabel the
  // stream). False when the file holds no valid packet header.
  bool Identify(uint32_t* stream_id, uint64_t* stream_instance_id);

  // Damage is counted, not an error: status() stays ok. Kept for callers that check it.
  const Status& status() const { return status_; }
  // Bytes after the last complete packet (a writer killed mid-write); reported, not an error.
  size_t trailing_bytes() const { return trailing_; }
  uint64_t damaged_packets() const { return damaged_packets_; }
  uint64_t damaged_bytes() const { return damaged_bytes_; }
  // The first kMaxDamageNotes skipped stretches, in file order.
  static constexpr size_t kMaxDamageNotes = 16;
  const std::vector<PacketDamage>& damage() const { return damage_; }

 private:
  enum class Check { kOk, kShort, kBad };
  // Parses and checks the header and context of a packet at `off` (not its events).
  Check ParseHeader(size_t off, Packet* out, std::string* why);
  // The offset of the next valid packet header after a damaged packet at
  // `off` (whose header, when it parsed, is `hdr`), or size_ when none.
  size_t Resync(size_t off, const Packet* hdr);
  bool IsValidHeaderAt(size_t off);
  void NoteDamage(size_t off, size_t bytes, std::string what);
  void SetStreamClass(uint32_t sid);
  // A damaged event at `offset`: the rest of the packet is skipped and counted.
  bool Fail(size_t offset, const char* msg);
  bool SlowEvent(EventView* ev, uint32_t id, uint64_t ts, const uint8_t* p);

  const ParsedMetadata& md_;
  const uint8_t* data_;
  size_t size_;
  std::string path_;
  size_t next_packet_ = 0;
  const uint8_t* cur_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint64_t clock_ = 0;
  uint64_t ts_end_ = 0;  // the current packet's timestamp_end
  const ParsedStream* stream_ = nullptr;
  std::vector<int32_t> fixed_sizes_;  // per event id of the current stream class; -1 strings, -2 unknown
  uint32_t fixed_stream_ = UINT32_MAX;
  Status status_;
  size_t trailing_ = 0;
  // The stream's identity, once established (Identify).
  bool identified_ = false;
  bool has_identity_ = false;
  uint32_t sid_ = 0;
  uint64_t instance_ = 0;
  uint64_t last_ts_ = 0;  // the last event time of the previous valid packet
  uint64_t damaged_packets_ = 0, damaged_bytes_ = 0;
  std::vector<PacketDamage> damage_;
};

inline bool StreamFileReader::NextEvent(EventView* ev) {
  const uint8_t* p = cur_;
  if (p >= end_) return false;
  uint32_t id;
  uint64_t ts;
  if (end_ - p >= 4 && (p[0] & 0x1f) != kExtendedId) {
    uint32_t h = ReadLE<uint32_t>(p);
    id = h & 0x1f;
    uint64_t low = h >> 5;
    constexpr uint64_t kMask = (1ull << kCompactTsBits) - 1;
    ts = (clock_ & ~kMask) | low;
    if (low < (clock_ & kMask)) ts += 1ull << kCompactTsBits;  // the 27-bit field wrapped
    p += 4;
  } else {
    if (end_ - p < 13) return Fail(static_cast<size_t>(p - data_), "truncated event header");
    id = ReadLE<uint32_t>(p + 1);
    ts = ReadLE<uint64_t>(p + 5);
    if (ts < clock_) return Fail(static_cast<size_t>(p - data_), "event timestamp goes backwards");
    p += 13;
  }
  if (__builtin_expect(ts > ts_end_, 0))
    return Fail(static_cast<size_t>(cur_ - data_), "event after the packet's timestamp_end");
  clock_ = ts;
  int32_t fs = id < fixed_sizes_.size() ? fixed_sizes_[id] : -2;
  if (fs < 0) return SlowEvent(ev, id, ts, p);
  if (end_ - p < fs) return Fail(static_cast<size_t>(p - data_), "event payload runs past the packet's content");
  ev->id = id;
  ev->ts = ts;
  ev->payload = p;
  ev->size = static_cast<uint32_t>(fs);
  cur_ = p + fs;
  return true;
}

}  // namespace strata::format

// Encodes one CTF stream (a file of packets) in the strata layout.
//
//   packet := header | context | event*
//   header  = magic u32 | uuid u8[16] | stream_id u32 | stream_instance_id u64
//   context = timestamp_begin u64 | timestamp_end u64 | content_size u64 (bits)
//             | packet_size u64 (bits) | packet_seq_num u64 | events_discarded u64
//             | <stream-specific fields, fixed size>
//   event   = compact:  [id:5 | ts_low:27]                      (4 bytes)
//           | extended: [31:5 | pad:3] id u32 | timestamp u64   (13 bytes)
//             followed by the byte-aligned payload.
//
// Packets are written whole with one write(2), so a process killed at any
// moment leaves a file that ends on a packet boundary. The writer never blocks
// on anything but that write.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/schema.h"
#include "format/tsdl.h"

namespace strata::format {

class StreamWriter {
 public:
  // `context_fields` are the stream-specific context values, in schema order,
  // each stored as u64 and narrowed to the field's size on encoding.
  StreamWriter(const Uuid& uuid, const StreamSpec& spec, uint64_t stream_instance_id,
               std::vector<uint64_t> context_fields);
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // Opens (creates, truncates) the stream file. Until then events accumulate in memory.
  Status Open(const std::string& path);
  // Creates `base`, or `base.1`, `base.2`, ... if taken: a thread id reused by
  // the kernel, or a thread that records again after its exit handler, must
  // never overwrite an earlier stream.
  Status OpenUnique(const std::string& base);
  const std::string& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }

  // Appends one event. `ts` is in trace-clock ns; a timestamp older than the
  // previous event's is raised to it (CTF requires monotonic streams) and counted.
  void Append(uint32_t event_id, uint64_t ts, const void* payload, size_t size) {
    if (events_in_packet_ == 0) BeginPacket(ts);
    if (ts < last_ts_) {
      ts = last_ts_;
      ++clamped_;
    }
    uint64_t delta = ts - last_ts_;
    size_t need = 13 + size;
    if (buf_.size() - used_ < need) Grow(need);
    uint8_t* p = buf_.data() + used_;
    if (event_id <= kCompactMaxId && delta < (1ull << kCompactTsBits)) {
      uint32_t h = event_id | static_cast<uint32_t>((ts & ((1ull << kCompactTsBits) - 1)) << 5);
      std::memcpy(p, &h, 4);
      p += 4;
    } else {
      *p++ = static_cast<uint8_t>(kExtendedId);
      std::memcpy(p, &event_id, 4);
      std::memcpy(p + 4, &ts, 8);
      p += 12;
    }
    if (size) std::memcpy(p, payload, size);
    p += size;
    used_ = static_cast<size_t>(p - buf_.data());
    last_ts_ = ts;
    ++events_in_packet_;
    ++events_total_;
  }

  // Cumulative count of events lost before reaching this writer; stored in
  // every packet's events_discarded (CTF semantics: a running total). A stream
  // whose first packet would carry losses is preceded by an empty packet with
  // a count of 0 (readers treat the first packet's value as the baseline).
  void set_discarded(uint64_t total) { discarded_ = total; }

  size_t pending_bytes() const { return used_; }
  uint64_t events_in_packet() const { return events_in_packet_; }

  // Closes the current packet (if it has events, or if `force` and discarded
  // counts changed) and writes it. `end_ts` is the packet's timestamp_end
  // (raised to the last event's time if lower).
  Status Flush(uint64_t end_ts, bool force = false);
  Status Close(uint64_t end_ts);

  uint64_t events_total() const { return events_total_; }
  uint64_t clamped() const { return clamped_; }
  uint64_t packets() const { return seq_; }
  uint64_t last_timestamp() const { return last_ts_; }

 private:
  void BeginPacket(uint64_t ts);
  void Grow(size_t need);
  // Header and context of a packet of `bytes` bytes, numbered seq_.
  void EncodeHeader(uint8_t* p, uint64_t begin_ts, uint64_t end_ts, uint64_t bytes, uint64_t discarded) const;
  // Writes one whole packet and advances seq_ (even on error: the reader then sees the gap).
  Status WritePacket(const uint8_t* data, size_t size);

  Uuid uuid_;
  const StreamSpec& spec_;
  uint64_t stream_instance_id_;
  std::vector<uint64_t> context_;
  int fd_ = -1;
  std::string path_;
  std::vector<uint8_t> buf_;
  size_t used_ = 0;
  size_t header_size_ = 0;
  uint64_t begin_ts_ = 0;
  uint64_t last_ts_ = 0;
  uint64_t events_in_packet_ = 0;
  uint64_t events_total_ = 0;
  uint64_t discarded_ = 0;
  uint64_t discarded_written_ = 0;
  uint64_t seq_ = 0;
  uint64_t clamped_ = 0;
};

}  // namespace strata::format

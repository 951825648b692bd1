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
// Packets are written whole or not at all: each is one write(2), and a write
// that fails part-way (a full disk) is cut off again with ftruncate(2), so the
// file always ends on a packet boundary and stays readable up to its last
// complete packet. A packet that could not be written is lost and counted: its
// events go into every later packet's events_discarded (what CTF readers report
// as discarded events) and into write_failed_*(), which the recorder puts in the
// manifest. A process killed in the middle of a write(2) leaves a partial last
// packet, which readers ignore. The writer never blocks on anything but write.
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
  // Continues a stream file that another writer left (the supervisor writing
  // what a dead process had buffered): packets are appended after the file's
  // last complete packet, numbered from `next_seq`, with timestamps from
  // `last_ts` on and events_discarded counting from `discarded`.
  struct ResumePoint {
    uint64_t next_seq = 0;
    uint64_t last_ts = 0;
    uint64_t discarded = 0;
    uint64_t file_bytes = 0;  // the length of the file's complete packets; anything after is cut off
  };
  Status Resume(const std::string& path, const ResumePoint& at);
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
  // every packet's events_discarded (CTF semantics: a running total), plus the
  // events of packets this writer could not write. A stream whose first packet
  // would carry losses is preceded by an empty packet with a count of 0
  // (readers treat the first packet's value as the baseline).
  void set_discarded(uint64_t total) { discarded_ = total; }

  size_t pending_bytes() const { return used_; }
  uint64_t events_in_packet() const { return events_in_packet_; }

  // Closes the current packet (if it has events, if discarded counts changed,
  // or if `force`) and writes it. An error means the packet is not in the file
  // (and counted in write_failed_*()); the writer goes on with the next one.
  // `end_ts` is ignored: a packet ends at its last event (see Flush).
  Status Flush(uint64_t end_ts, bool force = false);
  Status Close(uint64_t end_ts);

  // Where the stream stands now, and where it will stand once Flush(_, force)
  // has written the current packet (when that write succeeds): what the
  // recorder publishes around each write so that the supervisor can go on
  // after a process killed in between (recorder/shm_layout.h).
  ResumePoint Current() const { return {seq_, last_ts_, discarded_written_, file_bytes_}; }
  ResumePoint AfterFlush(bool force) const;

  // A packet that cannot be written is normally lost and counted. A caller
  // that appends its events again later (the process stream: names must reach
  // the trace) turns that off: the events are then neither counted nor
  // reported as discarded.
  void set_retry_failed(bool retry) { retry_failed_ = retry; }

  uint64_t events_total() const { return events_total_; }      // appended, written or not
  uint64_t events_written() const { return events_written_; }  // in the file
  uint64_t bytes_written() const { return file_bytes_ - resumed_bytes_; }
  uint64_t write_failed_events() const { return failed_events_; }
  uint64_t write_failed_bytes() const { return failed_bytes_; }
  int last_error() const { return last_errno_; }  // errno of the last failed write, 0 if none
  uint64_t clamped() const { return clamped_; }
  uint64_t packets() const { return seq_; }    // the next packet's number
  uint64_t last_timestamp() const { return last_ts_; }
  // The events_discarded the last written packet carried.
  uint64_t discarded_written() const { return discarded_written_; }

 private:
  void BeginPacket(uint64_t ts);
  void Grow(size_t need);
  // Header and context of a packet of `bytes` bytes, numbered seq_.
  void EncodeHeader(uint8_t* p, uint64_t begin_ts, uint64_t end_ts, uint64_t bytes, uint64_t discarded) const;
  // Writes one whole packet and advances seq_, or leaves the file as it was
  // (cut back to its last complete packet) and returns the errno.
  int WritePacket(const uint8_t* data, size_t size);
  uint64_t DiscardedTotal() const { return discarded_ + failed_events_; }

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
  uint64_t events_written_ = 0;
  uint64_t file_bytes_ = 0;     // length of the file's complete packets
  uint64_t resumed_bytes_ = 0;  // of them, what another writer wrote before Resume
  bool tail_dirty_ = false;     // a failed write's part could not be cut off yet
  bool retry_failed_ = false;
  uint64_t failed_events_ = 0;
  uint64_t failed_bytes_ = 0;
  int last_errno_ = 0;
  uint64_t discarded_ = 0;
  uint64_t discarded_written_ = 0;
  uint64_t seq_ = 0;
  uint64_t clamped_ = 0;
};

// Packets that this process's writers could not write, per stream file: the
// supervisor (`strata record`) reads it for the streams it writes itself (the
// OS level) to put their losses in the manifest. Off until enabled (the
// recorder in traced processes keeps its own counts per stream).
struct WriteLoss {
  std::string path;
  uint64_t events = 0;
  uint64_t bytes = 0;
  int error = 0;  // errno of the last failure
};
void EnableWriteLossLedger();
std::vector<WriteLoss> WriteLossLedger();

}  // namespace strata::format

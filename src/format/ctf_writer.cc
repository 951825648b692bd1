#include "format/ctf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"
#include "base/files.h"

namespace strata::format {

StreamWriter::StreamWriter(const Uuid& uuid, const StreamSpec& spec, uint64_t stream_instance_id,
                           std::vector<uint64_t> context_fields)
    : uuid_(uuid), spec_(spec), stream_instance_id_(stream_instance_id), context_(std::move(context_fields)) {
  header_size_ = kPacketHeaderSize + ContextSize(spec_);
  context_.resize(spec_.context.size());
  buf_.resize(64 * 1024);
}

StreamWriter::~StreamWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status StreamWriter::Open(const std::string& path) {
  path_ = path;
  STRATA_ASSIGN_OR_RETURN(fd_, CreateNewFile(path, O_APPEND));  // a new file: never through a planted link
  return OkStatus();
}

Status StreamWriter::OpenUnique(const std::string& base) {
  for (int i = 0; i < 100000; ++i) {
    std::string path = i == 0 ? base : base + "." + std::to_string(i);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0644);
    if (fd >= 0) {
      fd_ = fd;
      path_ = path;
      return OkStatus();
    }
    if (errno != EEXIST) return ErrnoErr(errno, "cannot create stream file {}", path);
  }
  return Err(StatusCode::kIoError, "cannot create a stream file named {}.N", base);
}

void StreamWriter::Grow(size_t need) {
  size_t n = buf_.size() * 2;
  while (n - used_ < need) n *= 2;
  buf_.resize(n);
}

void StreamWriter::BeginPacket(uint64_t ts) {
  if (ts < last_ts_) ts = last_ts_;
  begin_ts_ = ts;
  // The packet's timestamp_begin becomes the reader's clock value, so the first
  // event's compact timestamp is relative to it: same semantics as last_ts_.
  last_ts_ = ts;
  if (buf_.size() < header_size_ + 64) buf_.resize(header_size_ + 64 * 1024);
  used_ = header_size_;  // header and context are filled in at Flush
}

void StreamWriter::EncodeHeader(uint8_t* p, uint64_t begin_ts, uint64_t end_ts, uint64_t bytes,
                                uint64_t discarded) const {
  auto put32 = [&p](uint32_t v) { std::memcpy(p, &v, 4); p += 4; };
  auto put64 = [&p](uint64_t v) { std::memcpy(p, &v, 8); p += 8; };
  put32(kCtfMagic);
  std::memcpy(p, uuid_.data(), 16);
  p += 16;
  put32(spec_.id);
  put64(stream_instance_id_);
  uint64_t bits = bytes * 8;
  put64(begin_ts);
  put64(end_ts);
  put64(bits);  // content_size
  put64(bits);  // packet_size: packets are not padded
  put64(seq_);
  put64(discarded);
  for (size_t i = 0; i < spec_.context.size(); ++i) {
    uint64_t v = context_[i];
    uint32_t n = FieldSize(spec_.context[i].type);
    std::memcpy(p, &v, n);  // little-endian narrowing
    p += n;
  }
}

Status StreamWriter::WritePacket(const uint8_t* data, size_t size) {
  ++seq_;
  if (fd_ < 0) return Err(StatusCode::kInternal, "stream writer flushed before Open");
  int err = WriteAll(fd_, data, size);
  if (err != 0) return ErrnoErr(err, "cannot write stream file {}", path_);
  return OkStatus();
}

Status StreamWriter::Flush(uint64_t end_ts, bool force) {
  bool discarded_changed = discarded_ != discarded_written_;
  // A packet ends at its last event: events that a writer stamped before the
  // flush began but that reach us later belong to the next packet, and packets
  // of a stream must not overlap (babeltrace2's muxer rejects that).
  (void)end_ts;
  if (events_in_packet_ == 0) {
    if (!(force || discarded_changed)) return OkStatus();
    BeginPacket(last_ts_);  // an empty packet that carries the discarded count
  }
  end_ts = last_ts_;
  Status st;
  if (seq_ == 0 && discarded_ > 0) {
    // babeltrace2 takes a stream's first events_discarded as the counter's
    // starting point, not as a count (it reports "may have discarded" events),
    // so a stream that lost events before its first packet starts with an
    // empty packet whose count is 0: the losses are then a difference between
    // two packets, which it counts exactly, as strata's reader does.
    std::vector<uint8_t> lead(header_size_);
    EncodeHeader(lead.data(), begin_ts_, begin_ts_, header_size_, 0);
    st = WritePacket(lead.data(), lead.size());
  }
  EncodeHeader(buf_.data(), begin_ts_, end_ts, used_, discarded_);
  Status ws = WritePacket(buf_.data(), used_);
  if (st.ok()) st = ws;
  discarded_written_ = discarded_;
  events_in_packet_ = 0;
  used_ = 0;
  // The next packet's first event may be long after this one: the compact
  // 27-bit timestamp is relative to the packet's timestamp_begin, which
  // BeginPacket sets to that event's own time, so no extended header is forced.
  return st;
}

Status StreamWriter::Close(uint64_t end_ts) {
  Status st = Flush(end_ts);
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  return st;
}

}  // namespace strata::format

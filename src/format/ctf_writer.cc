#include "format/ctf_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>

#include "base/error.h"
#include "base/files.h"

namespace strata::format {

namespace {

std::atomic<bool> g_ledger_on{false};
std::mutex g_ledger_mu;
std::map<std::string, WriteLoss>* g_ledger = nullptr;  // leaked: read until exit

void NoteLoss(const std::string& path, uint64_t events, uint64_t bytes, int err) {
  if (!g_ledger_on.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lk(g_ledger_mu);
  if (!g_ledger) g_ledger = new std::map<std::string, WriteLoss>();
  WriteLoss& l = (*g_ledger)[path];
  l.path = path;
  l.events += events;
  l.bytes += bytes;
  l.error = err;
}

}  // namespace

void EnableWriteLossLedger() { g_ledger_on.store(true); }

std::vector<WriteLoss> WriteLossLedger() {
  std::lock_guard<std::mutex> lk(g_ledger_mu);
  std::vector<WriteLoss> out;
  if (g_ledger)
    for (const auto& [path, l] : *g_ledger) out.push_back(l);
  return out;
}

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

Status StreamWriter::Resume(const std::string& path, const ResumePoint& at) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | O_NOFOLLOW, 0644);
  if (fd_ < 0) return ErrnoErr(errno, "cannot open stream file {}", path);
  // Whatever follows the last complete packet (a write cut short by the
  // process's death) is cut off, so that the next packet follows a whole one.
  struct stat st;
  if (::fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) > at.file_bytes &&
      ::ftruncate(fd_, static_cast<off_t>(at.file_bytes)) != 0)
    return ErrnoErr(errno, "cannot cut the partial packet off {}", path);
  file_bytes_ = resumed_bytes_ = at.file_bytes;
  seq_ = at.next_seq;
  last_ts_ = at.last_ts;
  discarded_ = discarded_written_ = at.discarded;
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

int StreamWriter::WritePacket(const uint8_t* data, size_t size) {
  if (fd_ < 0) return EBADF;
  // The file must end on a packet boundary before anything is appended.
  if (tail_dirty_) {
    if (::ftruncate(fd_, static_cast<off_t>(file_bytes_)) != 0) return errno;
    tail_dirty_ = false;
  }
  int err = WriteAll(fd_, data, size);
  if (err != 0) {
    // Part of the packet may be in the file: cut it off (this frees space, so
    // it works on a full disk), else retry before the next write.
    if (::ftruncate(fd_, static_cast<off_t>(file_bytes_)) != 0) tail_dirty_ = true;
    return err;
  }
  file_bytes_ += size;
  ++seq_;
  return 0;
}

Status StreamWriter::Flush(uint64_t end_ts, bool force) {
  bool discarded_changed = DiscardedTotal() != discarded_written_;
  // A packet ends at its last event: events that a writer stamped before the
  // flush began but that reach us later belong to the next packet, and packets
  // of a stream must not overlap (babeltrace2's muxer rejects that).
  (void)end_ts;
  if (events_in_packet_ == 0) {
    if (!(force || discarded_changed)) return OkStatus();
    BeginPacket(last_ts_);  // an empty packet that carries the discarded count
  }
  end_ts = last_ts_;
  int err = 0;
  if (seq_ == 0 && DiscardedTotal() > 0) {
    // babeltrace2 takes a stream's first events_discarded as the counter's
    // starting point, not as a count (it reports "may have discarded" events),
    // so a stream that lost events before its first packet starts with an
    // empty packet whose count is 0: the losses are then a difference between
    // two packets, which it counts exactly, as strata's reader does.
    std::vector<uint8_t> lead(header_size_);
    EncodeHeader(lead.data(), begin_ts_, begin_ts_, header_size_, 0);
    err = WritePacket(lead.data(), lead.size());
  }
  if (err == 0) {
    EncodeHeader(buf_.data(), begin_ts_, end_ts, used_, DiscardedTotal());
    err = WritePacket(buf_.data(), used_);
  }
  Status st;
  if (err == 0) {
    discarded_written_ = DiscardedTotal();
    events_written_ += events_in_packet_;
  } else if (retry_failed_) {
    last_errno_ = err;
  } else {
    // The packet is lost; its events are counted in the next one written.
    failed_events_ += events_in_packet_;
    failed_bytes_ += used_;
    last_errno_ = err;
    NoteLoss(path_, events_in_packet_, used_, err);
    st = fd_ < 0 ? Err(StatusCode::kInternal, "stream writer flushed before Open")
                 : ErrnoErr(err, "cannot write stream file {}", path_);
  }
  events_in_packet_ = 0;
  used_ = 0;
  // The next packet's first event may be long after this one: the compact
  // 27-bit timestamp is relative to the packet's timestamp_begin, which
  // BeginPacket sets to that event's own time, so no extended header is forced.
  return st;
}

StreamWriter::ResumePoint StreamWriter::AfterFlush(bool force) const {
  ResumePoint r = Current();
  if (events_in_packet_ == 0 && !force && DiscardedTotal() == discarded_written_) return r;
  bool lead = seq_ == 0 && DiscardedTotal() > 0;
  r.next_seq = seq_ + 1 + (lead ? 1 : 0);
  r.file_bytes = file_bytes_ + (events_in_packet_ ? used_ : header_size_) + (lead ? header_size_ : 0);
  r.discarded = DiscardedTotal();
  return r;
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

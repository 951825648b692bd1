#include "format/ctf_reader.h"

#include "base/error.h"

namespace strata::format {

StreamFileReader::StreamFileReader(const ParsedMetadata& md, const uint8_t* data, size_t size, std::string path)
    : md_(md), data_(data), size_(size), path_(std::move(path)) {}

bool StreamFileReader::Fail(size_t offset, std::string msg) {
  status_ = Err(StatusCode::kCorrupt, "{}: byte {}: {}", path_, offset, msg);
  cur_ = end_ = nullptr;
  next_packet_ = size_;
  return false;
}

bool StreamFileReader::NextPacket(Packet* out) {
  if (!status_.ok()) return false;
  size_t off = next_packet_;
  if (off >= size_) return false;
  size_t avail = size_ - off;
  const uint8_t* p = data_ + off;
  if (avail < kPacketHeaderSize + kCommonContextSize) {
    // A writer killed in the middle of a write(2) of a packet leaves a partial one.
    trailing_ = avail;
    next_packet_ = size_;
    return false;
  }
  uint32_t magic = ReadLE<uint32_t>(p);
  if (magic != kCtfMagic) return Fail(off, fmt::format("bad packet magic 0x{:08x} (expected 0x{:08x})", magic, kCtfMagic));
  if (std::memcmp(p + 4, md_.uuid.data(), 16) != 0) return Fail(off + 4, "packet uuid differs from the metadata's");
  uint32_t sid = ReadLE<uint32_t>(p + 20);
  if (sid >= md_.streams.size() || !md_.streams[sid].declared)
    return Fail(off + 20, fmt::format("unknown stream class id {}", sid));
  const ParsedStream& s = md_.streams[sid];
  out->stream_id = sid;
  out->stream_instance_id = ReadLE<uint64_t>(p + 24);
  const uint8_t* c = p + kPacketHeaderSize;
  out->ts_begin = ReadLE<uint64_t>(c);
  out->ts_end = ReadLE<uint64_t>(c + 8);
  uint64_t content_bits = ReadLE<uint64_t>(c + 16);
  uint64_t packet_bits = ReadLE<uint64_t>(c + 24);
  out->seq = ReadLE<uint64_t>(c + 32);
  out->discarded = ReadLE<uint64_t>(c + 40);
  size_t ctx_size = kCommonContextSize;
  for (const ParsedField& f : s.context) ctx_size += FieldSize(f.type);
  size_t hdr = kPacketHeaderSize + ctx_size;
  if (content_bits % 8 != 0 || packet_bits % 8 != 0 || content_bits > packet_bits)
    return Fail(off + kPacketHeaderSize + 16, fmt::format("bad packet sizes: content {} bits, packet {} bits", content_bits, packet_bits));
  uint64_t content = content_bits / 8, packet = packet_bits / 8;
  if (content < hdr) return Fail(off + kPacketHeaderSize + 16, fmt::format("packet content size {} smaller than its header ({})", content, hdr));
  if (packet > avail) {
    // A truncated last packet: count it as trailing bytes, like a partial header.
    trailing_ = avail;
    next_packet_ = size_;
    return false;
  }
  if (out->ts_end < out->ts_begin) return Fail(off + kPacketHeaderSize, "packet timestamp_end < timestamp_begin");
  out->context.clear();
  const uint8_t* q = p + kPacketHeaderSize + kCommonContextSize;
  for (const ParsedField& f : s.context) {
    uint64_t v = 0;
    std::memcpy(&v, q, FieldSize(f.type));
    out->context.push_back(v);
    q += FieldSize(f.type);
  }
  out->offset = off;
  out->content_bytes = content;
  out->packet_bytes = packet;
  next_packet_ = off + packet;
  cur_ = p + hdr;
  end_ = p + content;
  clock_ = out->ts_begin;
  stream_ = &s;
  if (fixed_stream_ != sid) {
    fixed_sizes_.assign(s.events.size(), -2);
    for (size_t i = 0; i < s.events.size(); ++i)
      if (!s.events[i].name.empty()) fixed_sizes_[i] = s.events[i].fixed_size;
    fixed_stream_ = sid;
  }
  return true;
}

bool StreamFileReader::SlowEvent(EventView* ev, uint32_t id, uint64_t ts, const uint8_t* p) {
  if (id >= stream_->events.size() || stream_->events[id].name.empty())
    return Fail(static_cast<size_t>(p - data_), fmt::format("event id {} is not declared in the metadata", id));
  const ParsedEvent& e = stream_->events[id];
  const uint8_t* q = p;
  for (const ParsedField& f : e.fields) {
    if (f.type == FieldType::kString) {
      const void* nul = std::memchr(q, 0, static_cast<size_t>(end_ - q));
      if (!nul) return Fail(static_cast<size_t>(q - data_), "unterminated string field");
      q = static_cast<const uint8_t*>(nul) + 1;
    } else {
      uint32_t n = FieldSize(f.type);
      if (end_ - q < n) return Fail(static_cast<size_t>(q - data_), "event payload runs past the packet's content");
      q += n;
    }
  }
  ev->id = id;
  ev->ts = ts;
  ev->payload = p;
  ev->size = static_cast<uint32_t>(q - p);
  cur_ = q;
  return true;
}

}  // namespace strata::format

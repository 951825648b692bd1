#include "format/ctf_reader.h"

#include <algorithm>

#include "base/error.h"

namespace strata::format {

namespace {

// Packets begin with the magic and then the trace's uuid: 20 bytes that locate
// the next packet after a damaged one.
constexpr size_t kSignatureBytes = 4 + 16;

}  // namespace

StreamFileReader::StreamFileReader(const ParsedMetadata& md, const uint8_t* data, size_t size, std::string path)
    : md_(md), data_(data), size_(size), path_(std::move(path)) {}

bool StreamFileReader::Fail(size_t offset, const char* msg) {
  // The rest of the packet is lost: what was read of it stands, the reader
  // goes on at the next packet (NextPacket checks that it is one).
  size_t content_end = static_cast<size_t>(end_ - data_);
  NoteDamage(offset, content_end > offset ? content_end - offset : 0, fmt::format("byte {}: {}", offset, msg));
  cur_ = end_;
  return false;
}

void StreamFileReader::NoteDamage(size_t off, size_t bytes, std::string what) {
  ++damaged_packets_;
  damaged_bytes_ += bytes;
  if (damage_.size() < kMaxDamageNotes) damage_.push_back({off, bytes, std::move(what)});
}

void StreamFileReader::SetStreamClass(uint32_t sid) {
  const ParsedStream& s = md_.streams[sid];
  stream_ = &s;
  if (fixed_stream_ != sid) {
    fixed_sizes_.assign(s.events.size(), -2);
    for (size_t i = 0; i < s.events.size(); ++i)
      if (!s.events[i].name.empty()) fixed_sizes_[i] = s.events[i].fixed_size;
    fixed_stream_ = sid;
  }
}

StreamFileReader::Check StreamFileReader::ParseHeader(size_t off, Packet* out, std::string* why) {
  size_t avail = size_ - off;
  const uint8_t* p = data_ + off;
  if (avail < kPacketHeaderSize + kCommonContextSize) return Check::kShort;
  auto bad = [&](size_t at, std::string msg) {
    *why = fmt::format("byte {}: {}", at, msg);
    return Check::kBad;
  };
  uint32_t magic = ReadLE<uint32_t>(p);
  if (magic != kCtfMagic) return bad(off, fmt::format("bad packet magic 0x{:08x} (expected 0x{:08x})", magic, kCtfMagic));
  if (std::memcmp(p + 4, md_.uuid.data(), 16) != 0) return bad(off + 4, "packet uuid differs from the metadata's");
  uint32_t sid = ReadLE<uint32_t>(p + 20);
  if (sid >= md_.streams.size() || !md_.streams[sid].declared)
    return bad(off + 20, fmt::format("unknown stream class id {}", sid));
  uint64_t instance = ReadLE<uint64_t>(p + 24);
  if (has_identity_ && (sid != sid_ || instance != instance_))
    return bad(off + 20, fmt::format("stream class {} instance {:#x} differs from the stream's ({} {:#x})", sid, instance,
                                     sid_, instance_));
  const ParsedStream& s = md_.streams[sid];
  const uint8_t* c = p + kPacketHeaderSize;
  out->stream_id = sid;
  out->stream_instance_id = instance;
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
    return bad(off + kPacketHeaderSize + 16,
               fmt::format("bad packet sizes: content {} bits, packet {} bits", content_bits, packet_bits));
  uint64_t content = content_bits / 8, packet = packet_bits / 8;
  if (content < hdr)
    return bad(off + kPacketHeaderSize + 16, fmt::format("packet content size {} smaller than its header ({})", content, hdr));
  if (out->ts_end < out->ts_begin) return bad(off + kPacketHeaderSize, "packet timestamp_end < timestamp_begin");
  out->offset = off;
  out->content_bytes = content;
  out->packet_bytes = packet;
  if (packet > avail) return Check::kShort;
  out->context.clear();
  const uint8_t* q = p + kPacketHeaderSize + kCommonContextSize;
  for (const ParsedField& f : s.context) {
    uint64_t v = 0;
    std::memcpy(&v, q, FieldSize(f.type));
    out->context.push_back(v);
    q += FieldSize(f.type);
  }
  return Check::kOk;
}

bool StreamFileReader::IsValidHeaderAt(size_t off) {
  if (off >= size_) return false;
  Packet pk;
  std::string why;
  return ParseHeader(off, &pk, &why) == Check::kOk;
}

size_t StreamFileReader::Resync(size_t off, const Packet* hdr) {
  if (hdr && hdr->packet_bytes > 0 && off + hdr->packet_bytes <= size_) {
    size_t next = off + hdr->packet_bytes;
    if (next == size_ || IsValidHeaderAt(next)) return next;
  }
  uint8_t sig[kSignatureBytes];
  uint32_t magic = kCtfMagic;
  std::memcpy(sig, &magic, 4);
  std::memcpy(sig + 4, md_.uuid.data(), 16);
  size_t from = off + 1;
  while (from + kSignatureBytes <= size_) {
    const void* hit = memmem(data_ + from, size_ - from, sig, kSignatureBytes);
    if (!hit) break;
    size_t at = static_cast<size_t>(static_cast<const uint8_t*>(hit) - data_);
    Packet pk;
    std::string why;
    // A header cut short by the end of the file still marks where the damage ends.
    Check c = ParseHeader(at, &pk, &why);
    if (c != Check::kBad) return at;
    from = at + 1;
  }
  return size_;
}

bool StreamFileReader::Identify(uint32_t* stream_id, uint64_t* stream_instance_id) {
  if (!identified_) {
    identified_ = true;
    struct Seen {
      uint32_t sid;
      uint64_t instance;
      int votes;
    };
    std::vector<Seen> seen;
    size_t off = 0;
    int samples = 0;
    while (off < size_ && samples < 3) {
      Packet pk;
      std::string why;
      Check c = ParseHeader(off, &pk, &why);
      if (c == Check::kBad) {
        off = Resync(off, nullptr);
        continue;
      }
      ++samples;
      auto it = std::find_if(seen.begin(), seen.end(),
                             [&](const Seen& s) { return s.sid == pk.stream_id && s.instance == pk.stream_instance_id; });
      if (it == seen.end()) seen.push_back({pk.stream_id, pk.stream_instance_id, 1});
      else ++it->votes;
      if (c == Check::kShort) break;
      off += pk.packet_bytes;
    }
    if (!seen.empty()) {
      // The majority; on a tie, the first seen.
      const Seen* best = &seen[0];
      for (const Seen& s : seen)
        if (s.votes > best->votes) best = &s;
      has_identity_ = true;
      sid_ = best->sid;
      instance_ = best->instance;
    }
  }
  if (!has_identity_) return false;
  if (stream_id) *stream_id = sid_;
  if (stream_instance_id) *stream_instance_id = instance_;
  return true;
}

bool StreamFileReader::NextPacket(Packet* out) {
  Identify(nullptr, nullptr);
  // The previous packet's last event read (or its start, if its events were not read).
  last_ts_ = std::max(last_ts_, clock_);
  cur_ = end_ = nullptr;
  while (next_packet_ < size_) {
    size_t off = next_packet_;
    std::string why;
    Check c = ParseHeader(off, out, &why);
    if (c == Check::kShort) {
      // A partial last packet (a writer killed in the middle of a write), or a
      // packet_size too large to be true: damage if a valid packet follows.
      size_t next = Resync(off, nullptr);
      if (next >= size_) {
        trailing_ = size_ - off;
        next_packet_ = size_;
        return false;
      }
      NoteDamage(off, next - off, fmt::format("byte {}: packet runs past the end of the file", off));
      next_packet_ = next;
      continue;
    }
    if (c == Check::kOk && out->ts_begin < last_ts_) {
      why = fmt::format("byte {}: packet begins at {} ns, before the previous packet's last event ({})",
                        off + kPacketHeaderSize, out->ts_begin, last_ts_);
      c = Check::kBad;
    }
    if (c == Check::kOk) {
      SetStreamClass(out->stream_id);
      size_t ctx_size = kCommonContextSize;
      for (const ParsedField& f : stream_->context) ctx_size += FieldSize(f.type);
      cur_ = data_ + off + kPacketHeaderSize + ctx_size;
      end_ = data_ + off + out->content_bytes;
      clock_ = out->ts_begin;
      ts_end_ = out->ts_end;
      next_packet_ = off + out->packet_bytes;
      return true;
    }
    size_t next = Resync(off, nullptr);
    NoteDamage(off, next - off, std::move(why));
    next_packet_ = next;
  }
  return false;
}

bool StreamFileReader::SlowEvent(EventView* ev, uint32_t id, uint64_t ts, const uint8_t* p) {
  if (id >= stream_->events.size() || stream_->events[id].name.empty())
    return Fail(static_cast<size_t>(p - data_), "event id not declared in the metadata");
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

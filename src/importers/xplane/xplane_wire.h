// XSpace read straight from its protobuf wire bytes (the field numbers of
// xplane.proto), with protobuf-lite's CodedInputStream, instead of being parsed
// into message objects (which took 7x the file's memory and most of an
// import's time): a plane's metadata is decoded whole (every event refers to
// it), its lines' own fields too, and their events one at a time, later, into
// a reused Event. Strings are views into the bytes read.
//
// Accepts and rejects exactly what protobuf's parser does (3.21, lite): fields
// in any order, unknown fields and groups skipped, a repeated scalar field's
// last value, a oneof's last member, a map entry's later duplicate replacing an
// earlier one; truncation, bad varints or tags, unmatched groups, nesting
// beyond 100 levels and invalid UTF-8 in a string field are errors (false).
#pragma once

#include <google/protobuf/io/coded_stream.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::importers::xplane {

// A message's fields in wire order, each read whole: a varint or fixed value,
// or the bytes of a length-delimited one. Groups (no XSpace field is one) are
// skipped. Next() is false at the end, or on malformed bytes (then !ok()).
// (Events and stats, millions of messages of a few fields, are read from a
// cursor on their line's bytes instead, their unusual fields through Slow():
// xplane_wire.cc.)
class Fields {
 public:
  enum Type : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };
  struct Field {
    uint32_t number = 0;
    Type type = kVarint;
    uint64_t value = 0;      // kVarint, kFixed64, kFixed32
    std::string_view bytes;  // kBytes
  };

  // `level`: how deep the message nests (the XSpace 0, its planes 1...).
  Fields(std::string_view bytes, int level)
      : in_(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size())), level_(level) {}

  bool Next(Field* f) {
    // A one-byte tag (fields 1-15) of a varint or length-delimited field
    // inline, all that XSpace's writers use; anything else takes NextSlow().
    if (Left() == 0) return false;
    const uint32_t tag = *Here();
    if (tag >= 0x80 || tag < 8 || ((tag & 7) != kVarint && (tag & 7) != kBytes)) return NextSlow(f);
    Advance(1);
    f->number = tag >> 3;
    if ((tag & 7) == kVarint) {
      f->type = kVarint;
      return Varint(&f->value) || Fail();
    }
    f->type = kBytes;
    return Bytes(&f->bytes) || Fail();
  }
  bool ok() const { return ok_; }
  bool Fail() { return ok_ = false; }

  // --- Primitives (the stream is the message's bytes: no limits pushed) -----
  const uint8_t* Here() {
    const void* p;
    int n;
    in_.GetDirectBufferPointerInline(&p, &n);
    return static_cast<const uint8_t*>(p);
  }
  int Left() {
    const void* p;
    int n;
    in_.GetDirectBufferPointerInline(&p, &n);
    return n;
  }
  void Advance(int n) { in_.Skip(n); }  // n <= Left()
  bool Varint(uint64_t* v) {
    // In the buffer's middle, decoded here; near its end by the stream (which
    // checks what is left).
    const uint8_t* p = Here();
    const int left = Left();
    if (left > 0 && p[0] < 0x80) {
      *v = p[0];
      Advance(1);
      return true;
    }
    if (left < 10) return in_.ReadVarint64(v);
    uint64_t r = 0;
    for (int i = 0; i < 10; ++i) {
      r |= uint64_t{p[i] & 0x7fu} << (7 * i);
      if (p[i] < 0x80) {
        *v = r;
        Advance(i + 1);
        return true;
      }
    }
    return false;  // more than 10 bytes
  }
  bool Fixed64(uint64_t* v) { return in_.ReadLittleEndian64(v); }
  // A length-delimited field's length (at most 5 bytes, below 2 GiB, within
  // what is left), the tag read.
  bool Length(uint32_t* n) {
    const uint8_t* start = Here();
    uint64_t v;
    if (!Varint(&v) || Here() - start > 5 || v >= (uint64_t{1} << 31) || v > static_cast<uint64_t>(Left()))
      return false;
    *n = static_cast<uint32_t>(v);
    return true;
  }
  bool Bytes(std::string_view* b) {
    uint32_t n;
    if (!Length(&n)) return false;
    *b = std::string_view(reinterpret_cast<const char*>(Here()), n);
    Advance(static_cast<int>(n));
    return true;
  }
  // The item at the cursor, however it is encoded, in a message `level` deep:
  // a field (f->number > 0) or a group, skipped (f->number == 0). False when
  // malformed.
  bool Slow(Field* f, int level);

 private:
  bool NextSlow(Field* f);
  int Read(Field* f, int level);

  google::protobuf::io::CodedInputStream in_;
  int level_;
  bool ok_ = true;
};

// A string field's value: protobuf rejects invalid UTF-8 in proto3 strings.
bool ValidUtf8(std::string_view s);

// One XStat: its metadata id and value (the oneof's last member).
struct Stat {
  enum class Kind : uint8_t { kNone, kDouble, kUint64, kInt64, kStr, kBytes, kRef };
  int64_t metadata_id = 0;
  Kind kind = Kind::kNone;
  uint64_t bits = 0;     // the varint (kUint64, kInt64, kRef) or the double's bits
  std::string_view str;  // kStr
  double Double() const;
};
bool ReadStat(std::string_view bytes, int level, Stat* out);

struct EventMetadata {
  std::string_view name;
  std::vector<Stat> stats;  // every event of this metadata has them (before its own)
};

// Metadata id -> slot of a plane's metadata: dense for the small ids profilers
// give (1, 2, 3...), a map beyond. A later duplicate id replaces the earlier.
class IdIndex {
 public:
  void Build(const std::vector<int64_t>& ids);
  int64_t Find(int64_t id) const {  // -1: absent
    if (id >= 0 && id < static_cast<int64_t>(dense_.size())) return static_cast<int64_t>(dense_[static_cast<size_t>(id)]) - 1;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? -1 : it->second;
  }

 private:
  std::vector<uint32_t> dense_;  // slot + 1; 0 absent
  std::unordered_map<int64_t, int64_t> sparse_;
};

// A line's own fields; its events are read by ForEachEvent.
struct Line {
  std::string_view bytes;
  int64_t id = 0;
  std::string_view name, display_name;
  int64_t timestamp_ns = 0;
  uint64_t events = 0;
};
bool ReadLine(std::string_view bytes, Line* out);

// A plane: its name, stats and metadata decoded, its lines' own fields (their
// events are read later, one at a time, by ForEachEvent).
struct Plane {
  int64_t id = 0;
  std::string_view name;
  std::vector<Line> lines;
  uint64_t event_count = 0;  // in all its lines
  std::vector<Stat> stats;
  // Map entries in wire order (a duplicate id replaces the earlier through the index).
  std::vector<int64_t> event_ids, stat_ids;
  std::vector<EventMetadata> events;
  std::vector<std::string_view> stat_names;
  IdIndex event_index, stat_index;

  const EventMetadata* FindEvent(int64_t metadata_id) const {
    int64_t s = event_index.Find(metadata_id);
    return s < 0 ? nullptr : &events[static_cast<size_t>(s)];
  }
  const std::string_view* FindStatName(int64_t metadata_id) const {
    int64_t s = stat_index.Find(metadata_id);
    return s < 0 ? nullptr : &stat_names[static_cast<size_t>(s)];
  }
};
bool ReadPlane(std::string_view bytes, Plane* out);

struct Space {
  std::vector<std::string_view> planes;  // their bytes (ReadPlane)
  std::vector<std::string_view> errors, warnings, hostnames;
};
bool ReadSpace(std::string_view bytes, Space* out);

struct Event {
  int64_t metadata_id = 0;
  bool aggregated = false;  // num_occurrences set (after any offset_ps): no time of its own
  int64_t offset_ps = 0;
  int64_t duration_ps = 0;
  std::span<const Stat> stats() const { return {storage.data(), nstats}; }
  // The stats: the first `nstats` of a table reused from event to event.
  std::vector<Stat> storage;
  size_t nstats = 0;
};
// The next event of the line read by `in` (a line's fields, read by ReadLine
// before): 1 one read into *e, 0 none left, -1 malformed.
int NextEvent(Fields& in, Event* e);

// Calls f(event) for each event of `line` in order; false on a malformed event.
template <typename F>
bool ForEachEvent(const Line& line, Event* scratch, F&& f) {
  Fields in(line.bytes, 2);
  for (;;) {
    int r = NextEvent(in, scratch);
    if (r <= 0) return r == 0;
    f(static_cast<const Event&>(*scratch));
  }
}

}  // namespace strata::importers::xplane

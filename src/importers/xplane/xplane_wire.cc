// The XSpace wire reader (xplane_wire.h). What it accepts follows protobuf
// 3.21's ParseContext, which parsed these files before: tags and lengths of at
// most 5 bytes, lengths below 2 GiB, varints of at most 10, a field number
// never 0, a group ended by the end tag of its own number, 100 levels of
// messages and groups.
#include "importers/xplane/xplane_wire.h"

#include <google/protobuf/stubs/common.h>

#include <algorithm>
#include <cstring>

namespace strata::importers::xplane {
namespace {

constexpr int kMaxLevel = 100;       // protobuf's default recursion limit
constexpr int64_t kDense = 1 << 20;  // ids below index a vector (when not too sparse)

using Field = Fields::Field;

// A packed repeated varint field's bytes: whole varints, nothing after the last.
bool PackedVarints(std::string_view b) {
  size_t i = 0;
  while (i < b.size()) {
    size_t n = 0;
    while (i + n < b.size() && (static_cast<uint8_t>(b[i + n]) & 0x80)) ++n;
    if (i + n == b.size() || n >= 10) return false;
    i += n + 1;
  }
  return true;
}

// Merges an XEventMetadata's bytes into *md (a map value given twice merges).
bool ReadEventMetadata(std::string_view bytes, EventMetadata* md) {
  Fields in(bytes, 3);
  Field f;
  while (in.Next(&f)) {
    if (f.type == Fields::kBytes) {
      switch (f.number) {
        case 2:  // name
          if (!ValidUtf8(f.bytes)) return false;
          md->name = f.bytes;
          break;
        case 4:  // display_name
          if (!ValidUtf8(f.bytes)) return false;
          break;
        case 5:  // stats
          md->stats.emplace_back();
          if (!ReadStat(f.bytes, 4, &md->stats.back())) return false;
          break;
        case 6:  // child_id, packed
          if (!PackedVarints(f.bytes)) return false;
          break;
        default: break;  // 3: metadata (serialized protos), unknown fields
      }
    }
  }
  return in.ok();
}

// Merges an XStatMetadata's bytes: its name.
bool ReadStatMetadata(std::string_view bytes, std::string_view* name) {
  Fields in(bytes, 3);
  Field f;
  while (in.Next(&f)) {
    if (f.type != Fields::kBytes || (f.number != 2 && f.number != 3)) continue;
    if (!ValidUtf8(f.bytes)) return false;  // name, description
    if (f.number == 2) *name = f.bytes;
  }
  return in.ok();
}

// A map<int64, V> entry: key 1, value 2 (both may be absent: 0, an empty
// value; a value given twice merges). `value(bytes)` merges one value.
template <typename F>
bool ReadMapEntry(std::string_view bytes, int64_t* key, F&& value) {
  Fields in(bytes, 2);
  Field f;
  *key = 0;
  while (in.Next(&f)) {
    if (f.number == 1 && f.type == Fields::kVarint) *key = static_cast<int64_t>(f.value);
    else if (f.number == 2 && f.type == Fields::kBytes && !value(f.bytes)) return false;
  }
  return in.ok();
}

}  // namespace

// 1: a field in *f; 2: a group skipped; 0: an end-group tag (its number in
// f->number); -1: malformed.
int Fields::Read(Field* f, int level) {
  const uint8_t* start = Here();
  uint64_t tag64;
  if (!Varint(&tag64) || Here() - start > 5) return -1;
  auto tag = static_cast<uint32_t>(tag64);  // a 5-byte tag's bits beyond 32 are dropped, as protobuf does
  f->number = tag >> 3;
  if (f->number == 0) return -1;
  switch (tag & 7) {
    case kVarint: f->type = kVarint; return Varint(&f->value) ? 1 : -1;
    case kFixed64: f->type = kFixed64; return Fixed64(&f->value) ? 1 : -1;
    case kBytes: f->type = kBytes; return Bytes(&f->bytes) ? 1 : -1;
    case 3: {  // start group
      if (level + 1 > kMaxLevel) return -1;
      uint32_t number = f->number;
      Field inner;
      for (;;) {
        if (Left() == 0) return -1;
        int r = Read(&inner, level + 1);
        if (r < 0) return -1;
        if (r == 0) return inner.number == number ? 2 : -1;
      }
    }
    case 4: return 0;  // end group
    case kFixed32: {
      uint32_t v;
      if (!in_.ReadLittleEndian32(&v)) return -1;
      f->type = kFixed32;
      f->value = v;
      return 1;
    }
    default: return -1;  // wire types 6 and 7
  }
}

bool Fields::Slow(Field* f, int level) {
  int r = Read(f, level);
  if (r == 2) f->number = 0;
  return r > 0 || Fail();  // malformed, or an end-group tag outside a group
}

bool Fields::NextSlow(Field* f) {
  for (;;) {
    if (!Slow(f, level_)) return false;
    if (f->number != 0) return true;
    if (Left() == 0) return false;
  }
}

bool ValidUtf8(std::string_view s) {
  // ASCII (nearly every string) checked here 8 bytes at a time; the rest by protobuf.
  size_t i = 0;
  for (uint64_t w; i + 8 <= s.size(); i += 8) {
    std::memcpy(&w, s.data() + i, 8);
    if (w & 0x8080808080808080ull) break;
  }
  for (; i < s.size(); ++i)
    if (static_cast<uint8_t>(s[i]) & 0x80)
      return google::protobuf::internal::IsStructurallyValidUTF8(s.data(), static_cast<int>(s.size()));
  return true;
}

double Stat::Double() const {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

namespace {

// A stat's field read the general way (Slow): false on invalid UTF-8.
bool StatField(const Field& f, Stat* s) {
  Stat::Kind k = Stat::Kind::kNone;
  switch (f.number) {
    case 1:
      if (f.type == Fields::kVarint) s->metadata_id = static_cast<int64_t>(f.value);
      return true;
    case 2: k = f.type == Fields::kFixed64 ? Stat::Kind::kDouble : k; break;
    case 3: k = f.type == Fields::kVarint ? Stat::Kind::kUint64 : k; break;
    case 4: k = f.type == Fields::kVarint ? Stat::Kind::kInt64 : k; break;
    case 5:
      if (f.type != Fields::kBytes) return true;
      if (!ValidUtf8(f.bytes)) return false;
      s->kind = Stat::Kind::kStr;
      s->str = f.bytes;
      return true;
    case 6: k = f.type == Fields::kBytes ? Stat::Kind::kBytes : k; break;
    case 7: k = f.type == Fields::kVarint ? Stat::Kind::kRef : k; break;
    default: return true;
  }
  if (k != Stat::Kind::kNone) {  // (a known number of another wire type is an unknown field)
    s->kind = k;
    s->bits = f.value;
  }
  return true;
}

// Events and stats (millions of messages of a few fields) are read from a
// cursor over their bytes, without a stream each: their canonical one-byte
// tags inline, anything else (other encodings, unknown fields, groups) through
// Fields::Slow on what is left of the message. Every read stays inside the
// message: a field that would cross its end is malformed, as protobuf's
// parser finds at its limits.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
};

inline bool Varint(Cursor& c, uint64_t* v) {
  if (c.p < c.end && *c.p < 0x80) {
    *v = *c.p++;
    return true;
  }
  uint64_t r = 0;
  for (int i = 0; i < 10 && c.p + i < c.end; ++i) {
    r |= uint64_t{c.p[i] & 0x7fu} << (7 * i);
    if (c.p[i] < 0x80) {
      *v = r;
      c.p += i + 1;
      return true;
    }
  }
  return false;  // truncated, or more than 10 bytes
}

// A length (at most 5 bytes, below 2 GiB) and the bytes it covers.
inline bool Bytes(Cursor& c, std::string_view* b) {
  const uint8_t* start = c.p;
  uint64_t n;
  if (!Varint(c, &n) || c.p - start > 5 || n >= (uint64_t{1} << 31) || n > static_cast<uint64_t>(c.end - c.p)) return false;
  *b = std::string_view(reinterpret_cast<const char*>(c.p), n);
  c.p += n;
  return true;
}

// The item at the cursor read the general way (a field, or a group skipped:
// f->number 0).
bool SlowItem(Cursor& c, int level, Field* f) {
  Fields rest(std::string_view(reinterpret_cast<const char*>(c.p), static_cast<size_t>(c.end - c.p)), level);
  if (!rest.Slow(f, level)) return false;
  c.p = rest.Here();
  return true;
}

bool ReadStatAt(Cursor c, int level, Stat* s) {
  *s = Stat();
  uint64_t v;
  while (c.p < c.end) {
    const uint8_t tag = *c.p;
    switch (tag) {
      case 0x08:  // 1, metadata_id
        ++c.p;
        if (!Varint(c, &v)) return false;
        s->metadata_id = static_cast<int64_t>(v);
        break;
      case 0x11:  // 2, double_value
        ++c.p;
        if (c.end - c.p < 8) return false;
        std::memcpy(&s->bits, c.p, 8);  // little-endian, as protobuf writes it
        c.p += 8;
        s->kind = Stat::Kind::kDouble;
        break;
      case 0x18:  // 3, uint64_value
      case 0x20:  // 4, int64_value
      case 0x38:  // 7, ref_value
        ++c.p;
        if (!Varint(c, &s->bits)) return false;
        s->kind = tag == 0x18 ? Stat::Kind::kUint64 : tag == 0x20 ? Stat::Kind::kInt64 : Stat::Kind::kRef;
        break;
      case 0x2a:  // 5, str_value
        ++c.p;
        if (!Bytes(c, &s->str) || !ValidUtf8(s->str)) return false;
        s->kind = Stat::Kind::kStr;
        break;
      default: {
        Field f;
        if (!SlowItem(c, level, &f) || !StatField(f, s)) return false;
        break;
      }
    }
  }
  return true;
}

// The next of an event's stats (their storage reused from event to event).
Stat* NewStat(Event* e) {
  if (e->nstats == e->storage.size()) e->storage.emplace_back();
  return &e->storage[e->nstats++];
}

// An event's field read the general way.
bool EventField(const Field& f, Event* e) {
  if (f.type == Fields::kVarint) {
    auto v = static_cast<int64_t>(f.value);
    switch (f.number) {
      case 1: e->metadata_id = v; break;
      case 2: e->offset_ps = v, e->aggregated = false; break;
      case 3: e->duration_ps = v; break;
      case 5: e->aggregated = true; break;  // num_occurrences
      default: break;
    }
  } else if (f.number == 4 && f.type == Fields::kBytes) {
    return ReadStat(f.bytes, 4, NewStat(e));
  }
  return true;
}

bool ReadEventAt(Cursor c, Event* e) {
  e->metadata_id = 0;
  e->aggregated = false;
  e->offset_ps = 0;
  e->duration_ps = 0;
  e->nstats = 0;
  uint64_t v;
  std::string_view b;
  while (c.p < c.end) {
    switch (*c.p) {
      case 0x08:  // 1, metadata_id
        ++c.p;
        if (!Varint(c, &v)) return false;
        e->metadata_id = static_cast<int64_t>(v);
        break;
      case 0x10:  // 2, offset_ps
        ++c.p;
        if (!Varint(c, &v)) return false;
        e->offset_ps = static_cast<int64_t>(v);
        e->aggregated = false;
        break;
      case 0x18:  // 3, duration_ps
        ++c.p;
        if (!Varint(c, &v)) return false;
        e->duration_ps = static_cast<int64_t>(v);
        break;
      case 0x22:  // 4, stats
        ++c.p;
        if (!Bytes(c, &b)) return false;
        if (!ReadStatAt(Cursor{reinterpret_cast<const uint8_t*>(b.data()), reinterpret_cast<const uint8_t*>(b.data()) + b.size()}, 4, NewStat(e)))
          return false;
        break;
      default: {
        Field f;
        if (!SlowItem(c, 3, &f) || !EventField(f, e)) return false;
        break;
      }
    }
  }
  return true;
}

Cursor Over(std::string_view b) {
  auto p = reinterpret_cast<const uint8_t*>(b.data());
  return Cursor{p, p + b.size()};
}

}  // namespace

bool ReadStat(std::string_view bytes, int level, Stat* s) { return ReadStatAt(Over(bytes), level, s); }

int NextEvent(Fields& in, Event* e) {
  Field f;
  for (;;) {
    if (in.Left() == 0) return 0;
    if (*in.Here() == 0x22) {  // 4, events
      in.Advance(1);
      std::string_view b;
      if (!in.Bytes(&b)) return -1;
      return ReadEventAt(Over(b), e) ? 1 : -1;
    }
    if (!in.Slow(&f, 2)) return -1;  // (the line's other fields, read by ReadLine before)
    if (f.number == 4 && f.type == Fields::kBytes) return ReadEventAt(Over(f.bytes), e) ? 1 : -1;
  }
}

void IdIndex::Build(const std::vector<int64_t>& ids) {
  // Dense up to a bound proportional to the count, so that a few huge ids
  // cannot make the index huge.
  const int64_t limit = std::min<int64_t>(kDense, 4 * static_cast<int64_t>(ids.size()) + 64);
  int64_t max_id = -1;
  for (int64_t id : ids)
    if (id >= 0 && id < limit) max_id = std::max(max_id, id);
  dense_.assign(static_cast<size_t>(max_id + 1), 0);
  sparse_.clear();
  for (size_t s = 0; s < ids.size(); ++s) {
    int64_t id = ids[s];
    if (id >= 0 && id <= max_id) dense_[static_cast<size_t>(id)] = static_cast<uint32_t>(s + 1);
    else sparse_[id] = static_cast<int64_t>(s);
  }
}

bool ReadPlane(std::string_view bytes, Plane* p) {
  *p = Plane();
  Fields in(bytes, 1);
  Field f;
  while (in.Next(&f)) {
    if (f.number == 1 && f.type == Fields::kVarint) {
      p->id = static_cast<int64_t>(f.value);
      continue;
    }
    if (f.type != Fields::kBytes) continue;
    switch (f.number) {
      case 2:
        if (!ValidUtf8(f.bytes)) return false;
        p->name = f.bytes;
        break;
      case 3:
        p->lines.emplace_back();
        if (!ReadLine(f.bytes, &p->lines.back())) return false;
        p->event_count += p->lines.back().events;
        break;
      case 4: {
        EventMetadata md;
        int64_t key;
        if (!ReadMapEntry(f.bytes, &key, [&md](std::string_view v) { return ReadEventMetadata(v, &md); })) return false;
        p->event_ids.push_back(key);
        p->events.push_back(std::move(md));
        break;
      }
      case 5: {
        std::string_view name;
        int64_t key;
        if (!ReadMapEntry(f.bytes, &key, [&name](std::string_view v) { return ReadStatMetadata(v, &name); })) return false;
        p->stat_ids.push_back(key);
        p->stat_names.push_back(name);
        break;
      }
      case 6:
        p->stats.emplace_back();
        if (!ReadStat(f.bytes, 2, &p->stats.back())) return false;
        break;
      default: break;
    }
  }
  if (!in.ok()) return false;
  p->event_index.Build(p->event_ids);
  p->stat_index.Build(p->stat_ids);
  return true;
}

bool ReadSpace(std::string_view bytes, Space* s) {
  *s = Space();
  Fields in(bytes, 0);
  Field f;
  while (in.Next(&f)) {
    if (f.type != Fields::kBytes || f.number < 1 || f.number > 4) continue;
    if (f.number == 1) {
      s->planes.push_back(f.bytes);
      continue;
    }
    if (!ValidUtf8(f.bytes)) return false;
    (f.number == 2 ? s->errors : f.number == 3 ? s->warnings : s->hostnames).push_back(f.bytes);
  }
  return in.ok();
}

bool ReadLine(std::string_view bytes, Line* l) {
  *l = Line();
  l->bytes = bytes;
  Fields in(bytes, 2);
  Field f;
  for (;;) {
    if (in.Left() > 0 && *in.Here() == 0x22) {  // 4, events: read by NextEvent
      in.Advance(1);
      uint32_t n;
      if (!in.Length(&n)) return false;
      in.Advance(static_cast<int>(n));
      ++l->events;
      continue;
    }
    if (!in.Next(&f)) break;
    if (f.type == Fields::kVarint) {
      if (f.number == 1) l->id = static_cast<int64_t>(f.value);
      else if (f.number == 3) l->timestamp_ns = static_cast<int64_t>(f.value);
      // 9 duration_ps, 10 display_id: not used
    } else if (f.type == Fields::kBytes) {
      if (f.number == 4) {
        ++l->events;
      } else if (f.number == 2 || f.number == 11) {
        if (!ValidUtf8(f.bytes)) return false;
        (f.number == 2 ? l->name : l->display_name) = f.bytes;
      }
    }
  }
  return in.ok();
}

}  // namespace strata::importers::xplane

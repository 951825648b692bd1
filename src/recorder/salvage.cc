#include "recorder/salvage.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "base/clock.h"
#include "base/files.h"
#include "format/ctf_writer.h"
#include "format/schema.h"
#include "format/tsdl.h"
#include "recorder/buffer.h"
#include "recorder/record_encoding.h"
#include "recorder/shm_layout.h"

namespace strata::recorder {

namespace {

// The region, read with every offset and count checked: it belonged to a
// process that may have scribbled on it before it died.
class RegionView {
 public:
  RegionView(const uint8_t* base, size_t bytes) : base_(base), bytes_(bytes) {}

  bool Valid(std::string* why) const {
    if (bytes_ < sizeof(ShmHeader)) return Fail(why, "shorter than its control block");
    const ShmHeader& h = header();
    if (h.magic != kShmMagic || h.version != kShmVersion) return Fail(why, "not a strata buffer region of this version");
    if (h.total_bytes > bytes_) return Fail(why, "larger than its memory");
    if (h.slots_offset < sizeof(ShmHeader) || h.max_slots == 0 ||
        h.slots_offset + uint64_t{h.max_slots} * sizeof(StreamSlot) > h.log_offset ||
        h.log_offset + h.log_capacity > h.chunks_offset || h.log_capacity % 8 != 0 || h.log_capacity == 0 ||
        h.chunk_stride <= sizeof(Chunk) || h.chunk_stride % 64 != 0 || h.chunks_offset > h.total_bytes ||
        h.max_chunks > (h.total_bytes - h.chunks_offset) / h.chunk_stride)
      return Fail(why, "inconsistent layout");
    return true;
  }
  const ShmHeader& header() const { return *reinterpret_cast<const ShmHeader*>(base_); }
  uint32_t used_slots() const { return std::min(header().used_slots.load(), header().max_slots); }
  const StreamSlot& slot(uint32_t i) const {
    return reinterpret_cast<const StreamSlot*>(base_ + header().slots_offset)[i];
  }
  uint64_t chunks() const { return std::min(header().allocated_chunks.load(), header().max_chunks); }
  const Chunk& chunk(uint64_t k) const {
    return *reinterpret_cast<const Chunk*>(base_ + header().chunks_offset + k * header().chunk_stride);
  }
  const uint8_t* chunk_data(uint64_t k) const { return reinterpret_cast<const uint8_t*>(&chunk(k) + 1); }
  uint32_t chunk_capacity() const { return static_cast<uint32_t>(header().chunk_stride - sizeof(Chunk)); }
  const uint8_t* log() const { return base_ + header().log_offset; }

 private:
  static bool Fail(std::string* why, const char* w) {
    *why = w;
    return false;
  }
  const uint8_t* base_;
  size_t bytes_;
};

std::string Field(const char* s, size_t n) { return std::string(s, strnlen(s, n)); }

std::string KindName(uint32_t kind) {
  switch (kind) {
    case kSlotProcess: return "process";
    case kSlotThread:
    case kSlotThreadExt: return "thread";
    case kSlotDevice: return "device";
    default: return "unattributed";
  }
}

uint32_t StreamClassOf(uint32_t kind) {
  switch (kind) {
    case kSlotProcess: return format::kProcessStream;
    case kSlotDevice: return format::kDeviceStream;
    default: return format::kThreadStream;
  }
}

bool EventDeclared(uint32_t stream_class, uint32_t id) {
  const format::StreamSpec* spec = format::FindStream(stream_class);
  if (!spec) return false;
  return std::any_of(spec->events.begin(), spec->events.end(), [&](const format::EventSpec& e) { return e.id == id; });
}

struct CommitView {
  uint64_t chunk_seq, pos;
  format::StreamWriter::ResumePoint at;
  uint64_t write_failed_events;
};

CommitView Read(const CommitRecord& r) {
  return {r.chunk_seq.load(), r.pos.load(),
          {r.next_seq.load(), r.last_ts.load(), r.discarded.load(), r.file_bytes.load()}, r.write_failed_events.load()};
}

// The record a process left for a stream: the committed one, or the one in
// flight if its packet reached the file whole.
CommitView Effective(const StreamSlot& s, const std::string& path) {
  const CommitRecord& c = s.rec[s.committed.load() & 1];
  uint32_t inflight = s.inflight.load();
  CommitView v = Read(c);
  if (inflight == 0 || path.empty()) return v;
  CommitView f = Read(s.rec[(inflight - 1) & 1]);
  struct stat st;
  if (f.at.file_bytes > v.at.file_bytes && ::stat(path.c_str(), &st) == 0 &&
      static_cast<uint64_t>(st.st_size) >= f.at.file_bytes)
    return f;
  return v;
}

struct Routed {
  uint64_t ts;
  uint32_t id;
  std::vector<uint8_t> payload;
};

class Salvager {
 public:
  Salvager(const RegionView& r, std::string trace_dir) : r_(r), ctf_(JoinPath(trace_dir, "ctf")) {
    std::memcpy(uuid_.data(), r.header().uuid, 16);
    const ShmHeader& h = r.header();
    if (h.tsc) {
      const ShmHeader::Calib& c = h.calib[h.calib_index.load() & 1];
      // Rebuilt from the same two anchors, the conversion is the process's own.
      calib_.Start({c.prev_tsc.load(), c.prev_ns.load()});
      calib_.AddAnchor({c.last_tsc.load(), c.last_ns.load()});
      // A process killed before its first flush had one anchor: the rate is
      // measured from it to now (the TSC is the machine's, ours too).
      if (!calib_.has_rate()) calib_.AddAnchor(TakeClockAnchor());
    }
  }

  void Run(ProcessAccount* out) {
    const ShmHeader& h = r_.header();
    uint32_t used = r_.used_slots();
    // Chunks of each stream, in the stream's order.
    std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> chunks;  // slot -> (seq, chunk)
    for (uint64_t k = 0; k < r_.chunks(); ++k) {
      uint32_t slot = r_.chunk(k).slot.load();
      if (slot < used && slot > kUnattributedSlot) chunks[slot].push_back({r_.chunk(k).seq.load(), k});
    }
    for (auto& [slot, list] : chunks) std::sort(list.begin(), list.end());
    accounts_.resize(used);
    for (uint32_t i = 0; i < used; ++i) accounts_[i] = BaseAccount(i);
    // Thread streams first: their routed records belong to external streams.
    for (uint32_t i = 0; i < used; ++i) {
      uint32_t kind = r_.slot(i).kind.load();
      if (kind == kSlotThread) SalvageThread(i, chunks[i]);
    }
    for (uint32_t i = 0; i < used; ++i) {
      uint32_t kind = r_.slot(i).kind.load();
      if (kind == kSlotThreadExt || kind == kSlotDevice) SalvageExternal(i);
    }
    SalvageProcess();
    (void)h;
    for (StreamAccount& a : accounts_)
      if (!a.file.empty() || a.LostEvents() > 0 || a.salvaged_events > 0) out->streams.push_back(std::move(a));
    if (!note_.empty()) out->note = note_;
  }

  StreamAccount BaseAccount(uint32_t i) const {
    const StreamSlot& s = r_.slot(i);
    const CommitRecord& c = s.rec[s.committed.load() & 1];
    StreamAccount a;
    a.file = Field(s.file_name, sizeof s.file_name);
    a.kind = KindName(s.kind.load());
    a.tid = s.tid;
    a.events_written = c.events_written.load();
    a.bytes_written = c.bytes_written.load();
    a.dropped_events = s.dropped.load();
    a.dropped_bytes = s.dropped_bytes.load();
    a.write_failed_events = c.write_failed_events.load();
    a.write_failed_bytes = c.write_failed_bytes.load();
    a.write_errno = static_cast<int>(c.write_errno.load());
    return a;
  }

 private:
  // The stream's file, if it has one: a name in ctf/ that begins with the
  // stream's own name (the memory is the dead process's: a name that leads
  // elsewhere is not followed).
  std::string PathOf(const StreamSlot& s) const {
    std::string f = Field(s.file_name, sizeof s.file_name);
    std::string base = Field(s.base_name, sizeof s.base_name);
    if (f.empty() || !SafeName(base) || !SafeName(f) || f.rfind(base, 0) != 0) return "";
    return JoinPath(ctf_, f);
  }
  static bool SafeName(const std::string& n) { return !n.empty() && n[0] != '.' && n.find('/') == std::string::npos; }

  // A writer that continues the stream's file (or starts it), set up from the
  // record the process left.
  std::unique_ptr<format::StreamWriter> WriterFor(uint32_t i, const CommitView& v, StreamAccount* a) {
    const StreamSlot& s = r_.slot(i);
    const ShmHeader& h = r_.header();
    uint32_t cls = StreamClassOf(s.kind.load());
    std::vector<uint64_t> ctx;
    if (cls == format::kProcessStream) ctx = {h.pid, h.instance};
    else if (cls == format::kDeviceStream) ctx = {h.pid, h.instance, s.device, s.queue};
    else ctx = {h.pid, s.tid, h.instance};
    auto w = std::make_unique<format::StreamWriter>(uuid_, *format::FindStream(cls), s.stream_instance_id, ctx);
    std::string path = PathOf(s);
    Status st;
    if (!path.empty()) {
      st = w->Resume(path, v.at);
    } else {
      std::string base = Field(s.base_name, sizeof s.base_name);
      if (!SafeName(base)) {
        Note("stream slot " + std::to_string(i) + " has no valid file name");
        return nullptr;
      }
      st = w->OpenUnique(JoinPath(ctf_, base));
      if (st.ok()) a->file = w->path().substr(w->path().rfind('/') + 1);
    }
    if (!st.ok()) {
      Note(st.message());
      return nullptr;
    }
    return w;
  }

  void Finish(format::StreamWriter* w, StreamAccount* a, uint64_t appended, uint64_t appended_bytes) {
    if (!w) {
      a->unflushed_events += appended;
      a->unflushed_bytes += appended_bytes;
      return;
    }
    Status st = w->Flush(0);
    if (!st.ok()) Note(st.message());
    a->salvaged_events += w->events_written();
    a->salvaged_bytes += w->bytes_written();
    a->unflushed_events += w->write_failed_events();
    a->unflushed_bytes += w->write_failed_bytes();
  }

  void SalvageThread(uint32_t i, const std::vector<std::pair<uint64_t, uint64_t>>& list) {
    const StreamSlot& s = r_.slot(i);
    StreamAccount* a = &accounts_[i];
    CommitView v = Effective(s, PathOf(s));
    std::unique_ptr<format::StreamWriter> w;
    bool writer_tried = false;
    uint64_t appended = 0, appended_bytes = 0;
    const ShmHeader& h = r_.header();
    uint32_t cap = r_.chunk_capacity();
    for (const auto& [seq, k] : list) {
      if (seq < v.chunk_seq) continue;
      const Chunk& c = r_.chunk(k);
      uint32_t end = std::min(c.write_pos.load(), cap);
      uint64_t pos = seq == v.chunk_seq ? v.pos : 0;
      const uint8_t* data = r_.chunk_data(k);
      while (pos + sizeof(Record) <= end) {
        Record rec;
        std::memcpy(&rec, data + pos, sizeof rec);
        bool routed = rec.event_id == kRoutedEvent;
        uint32_t need = routed ? RoutedBytes(rec.size) : RecordBytes(rec.size);
        if (pos + need > end) break;
        if (routed) {
          uint32_t ext = rec.inline4 >> 8;
          uint32_t slot = ext < ShmHeader::kMaxExternal ? h.external_slot[ext].load() : kNoSlot;
          if (slot < accounts_.size()) {
            const uint8_t* p = data + pos + sizeof(Record);
            routed_[slot].push_back({rec.ts, rec.inline4 & 0xff, std::vector<uint8_t>(p, p + rec.size)});
          } else {
            ++a->unflushed_events;
            a->unflushed_bytes += need;
          }
        } else if (!EventDeclared(format::kThreadStream, rec.event_id)) {
          // Not a record the recorder writes: the memory was overwritten.
          ++a->unflushed_events;
          a->unflushed_bytes += need;
        } else {
          if (!writer_tried) {
            writer_tried = true;
            w = WriterFor(i, v, a);
          }
          uint64_t ts = h.tsc ? calib_.ToNs(rec.ts) : rec.ts;
          // Records are 8-byte aligned in the chunk, their payload after them.
          if (w) AppendNarrowed(*w, reinterpret_cast<const Record*>(data + pos), ts);
          ++appended;
          appended_bytes += need;
        }
        pos += need;
      }
      if (pos < end) {
        // A record runs past what the thread published: not ours to guess.
        a->unflushed_bytes += end - pos;
        Note("stream " + a->file + ": " + std::to_string(end - pos) + " bytes of a chunk could not be decoded");
      }
    }
    // The drops since the last flush reach the trace with the last packet (in a
    // stream of its own for a thread that never got to write one).
    uint64_t dropped = s.dropped.load();
    if (!writer_tried && dropped + v.write_failed_events > v.at.discarded) {
      writer_tried = true;
      w = WriterFor(i, v, a);
    }
    // events_discarded is a running total: the process's drops and the packets it could not write.
    if (w) w->set_discarded(std::max(v.at.discarded, dropped + v.write_failed_events));
    if (writer_tried) Finish(w.get(), a, appended, appended_bytes);
  }

  void SalvageExternal(uint32_t i) {
    const StreamSlot& s = r_.slot(i);
    StreamAccount* a = &accounts_[i];
    // Events the process held back for reordering died with its heap.
    a->unflushed_events += s.pending_external.load();
    auto it = routed_.find(i);
    if (it == routed_.end() || it->second.empty()) return;
    std::vector<Routed>& evs = it->second;
    std::stable_sort(evs.begin(), evs.end(), [](const Routed& x, const Routed& y) { return x.ts < y.ts; });
    uint32_t cls = StreamClassOf(s.kind.load());
    CommitView v = Effective(s, PathOf(s));
    std::unique_ptr<format::StreamWriter> w = WriterFor(i, v, a);
    uint64_t n = 0, bytes = 0;
    for (const Routed& e : evs) {
      if (!EventDeclared(cls, e.id)) {
        ++a->unflushed_events;
        continue;
      }
      if (w) w->Append(e.id, e.ts, e.payload.data(), e.payload.size());
      ++n;
      bytes += e.payload.size();
    }
    Finish(w.get(), a, n, bytes);
  }

  void SalvageProcess() {
    const ShmHeader& h = r_.header();
    const StreamSlot& s = r_.slot(kProcessSlot);
    StreamAccount* a = &accounts_[kProcessSlot];
    // Process events that did not fit the log lived in the process's heap.
    a->unflushed_events += h.log_overflow.load();
    CommitView v = Effective(s, PathOf(s));
    uint64_t end = h.log_end.load();
    uint64_t pos = v.pos;
    uint64_t cap = h.log_capacity;
    if (end <= pos) return;
    if (end - pos > cap) {
      Note("the process-event log is inconsistent");
      return;
    }
    std::unique_ptr<format::StreamWriter> w = WriterFor(kProcessSlot, v, a);
    const uint8_t* log = r_.log();
    uint64_t n = 0, bytes = 0;
    std::vector<uint8_t> payload;
    while (pos < end) {
      LogEntry e;
      std::memcpy(&e, log + pos % cap, sizeof e);
      uint64_t need = LogEntryBytes(e.size);
      if (pos + need > end || e.size > cap || !EventDeclared(format::kProcessStream, e.event_id)) {
        Note("the process-event log holds a damaged entry");
        break;
      }
      uint64_t from = (pos + sizeof e) % cap;
      size_t first = std::min<uint64_t>(e.size, cap - from);
      payload.assign(log + from, log + from + first);
      payload.insert(payload.end(), log, log + (e.size - first));
      if (w) w->Append(e.event_id, v.at.last_ts, payload.data(), payload.size());
      ++n;
      bytes += need;
      pos += need;
    }
    Finish(w.get(), a, n, bytes);
  }

  void Note(const std::string& what) {
    if (note_.empty()) note_ = what;
  }

  const RegionView& r_;
  std::string ctf_;
  format::Uuid uuid_{};
  TscCalibration calib_;
  std::vector<StreamAccount> accounts_;
  std::map<uint32_t, std::vector<Routed>> routed_;  // external slot -> records recovered from thread chunks
  std::string note_;
};

}  // namespace

ProcessAccount AccountForRegion(const uint8_t* base, size_t bytes, const std::string& trace_dir, bool salvage) {
  ProcessAccount out;
  RegionView r(base, bytes);
  std::string why;
  if (!r.Valid(&why)) {
    out.end = "unknown";
    out.note = "its buffer memory is unreadable (" + why + ")";
    return out;
  }
  const ShmHeader& h = r.header();
  out.pid = h.pid;
  out.instance = h.instance;
  Salvager s(r, trace_dir);
  if (!salvage) {
    for (uint32_t i = 0; i < r.used_slots(); ++i) {
      StreamAccount a = s.BaseAccount(i);
      if (!a.file.empty() || a.LostEvents() > 0) out.streams.push_back(std::move(a));
    }
    return out;
  }
  s.Run(&out);
  return out;
}

}  // namespace strata::recorder

// The input of fuzz_decoders: a strata trace as a list of events that are valid
// for the schema, so that every mutation reaches a decoder instead of the CTF
// framing (which fuzz_ctf_stream covers). The target writes them with the real
// StreamWriter into a trace directory and loads it; make_seeds writes them from
// real traces.
//
//   input  := clock_offset_ns i64 | record*
//   record := ctl u8 | event u8 | ts_delta u16 | payload
//     ctl      bits 0-1: stream class (thread, process, device, cpu)
//              bits 2-3: the stream of that class (0..3; see StreamContext)
//              bit 6: one event lost before this one (events_discarded grows)
//              bit 7: close the stream's packet first
//     event    index into the class's event list (modulo its length)
//     ts_delta ns after the previous record; with bit 15 set, (ts_delta & 0x7fff) << 16
//     payload  the event class's fields in order: fixed-size ones little-endian,
//              strings as a u8 length and that many bytes (cut at a NUL)
//   A record cut short by the end of the input has its missing bytes read as 0.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/files.h"
#include "format/ctf_writer.h"
#include "format/schema.h"
#include "format/schema_os.h"
#include "format/tsdl.h"

namespace strata::fuzz {

inline constexpr uint32_t kInstances = 4;

// The stream-specific context of stream `instance` of class `stream_class`: two
// processes (pid 100, 101), so streams can name each other's processes.
inline std::vector<uint64_t> StreamContext(uint32_t stream_class, uint32_t instance) {
  uint64_t pid = 100 + (instance & 1);
  switch (stream_class) {
    case format::kThreadStream: return {pid, 1000 + instance, 1};
    case format::kProcessStream: return {pid, 1 + (instance >> 1)};
    case format::kDeviceStream: return {pid, 1, instance >> 1, instance};
    default: return {instance == kInstances - 1 ? format::kSupervisorCpuId : instance};
  }
}

// Reads the input's bytes in order; 0 past the end.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool done() const { return p_ >= end_; }
  uint8_t U8() { return p_ < end_ ? *p_++ : 0; }
  void Bytes(void* out, size_t n) {
    size_t have = p_ < end_ ? std::min<size_t>(n, static_cast<size_t>(end_ - p_)) : 0;
    std::memcpy(out, p_, have);
    std::memset(static_cast<uint8_t*>(out) + have, 0, n - have);
    p_ += have;
  }
  template <typename T>
  T Get() {
    T v;
    Bytes(&v, sizeof v);
    return v;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// One record's payload, in the CTF layout (strings NUL-terminated), from the
// record layout above.
inline void ReadPayload(ByteReader& in, const format::EventSpec& e, std::string* out) {
  out->clear();
  for (const format::FieldSpec& f : e.fields) {
    if (f.type == format::FieldType::kString) {
      std::string s(in.U8(), '\0');
      in.Bytes(s.data(), s.size());
      *out += s.c_str();
      out->push_back('\0');
    } else {
      size_t n = format::FieldSize(f.type);
      out->resize(out->size() + n);
      in.Bytes(out->data() + out->size() - n, n);
    }
  }
}

// Removes `path` (a scratch directory of the target) when the process exits
// normally, so runs leave nothing behind; after a crash it stays, with the input.
inline void RemoveAtExit(const std::string& path) {
  static std::vector<std::string>* paths = [] {
    auto* v = new std::vector<std::string>();
    std::atexit([] {
      for (const std::string& p : *paths) {
        std::error_code ec;
        std::filesystem::remove_all(p, ec);
      }
    });
    return v;
  }();
  paths->push_back(path);
}

// Writes the trace that `data` describes into `dir` (which must hold a ctf/
// folder; files left there by an earlier call are removed first).
inline void WriteTraceDir(const std::string& dir, const uint8_t* data, size_t size) {
  const std::string ctf = dir + "/ctf";
  if (auto old = ListFiles(ctf); old.ok())
    for (const std::string& f : *old) ::unlink((ctf + "/" + f).c_str());
  ByteReader in(data, size);
  format::TraceIdentity id;
  id.uuid[0] = 1;
  id.clock_offset_ns = in.Get<int64_t>();
  id.hostname = "fuzz";
  if (!WriteFileAtomic(ctf + "/metadata", format::GenerateMetadata(id)).ok()) std::abort();
  std::unique_ptr<format::StreamWriter> w[4][kInstances];
  uint64_t lost[4][kInstances] = {};
  uint64_t ts = 1000;
  std::string payload;
  while (!in.done()) {
    uint8_t ctl = in.U8();
    uint32_t cls = ctl & 3, inst = (ctl >> 2) & 3;
    const format::StreamSpec& spec = *format::FindStream(cls);
    const format::EventSpec& e = spec.events[in.U8() % spec.events.size()];
    auto d = in.Get<uint16_t>();
    ts += d & 0x8000 ? uint64_t{d & 0x7fffu} << 16 : d;
    ReadPayload(in, e, &payload);
    auto& sw = w[cls][inst];
    if (!sw) {
      sw = std::make_unique<format::StreamWriter>(id.uuid, spec, inst, StreamContext(cls, inst));
      if (!sw->Open(ctf + "/" + std::string(spec.name) + "-" + std::to_string(inst)).ok()) std::abort();
    }
    if (ctl & 0x80) (void)sw->Flush(ts);
    if (ctl & 0x40) sw->set_discarded(++lost[cls][inst]);
    sw->Append(e.id, ts, payload.data(), payload.size());
  }
  for (auto& cls : w)
    for (auto& sw : cls)
      if (sw && !sw->Close(ts).ok()) std::abort();
}

// A fresh directory with a ctf/ folder, for WriteTraceDir: in memory (/dev/shm)
// when there is one, as every input rewrites the files.
inline std::string MakeTraceDir(const char* name) {
  std::string tmpl = std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + "/strata-fuzz-" + name + "-XXXXXX";
  char* d = ::mkdtemp(tmpl.data());
  if (!d || !MakeDirs(tmpl + "/ctf").ok()) std::abort();
  RemoveAtExit(tmpl);
  return tmpl;
}

// The other way, for make_seeds: appends one record from a CTF payload.
inline void AppendRecord(std::string* out, uint8_t ctl, uint8_t event_index, uint64_t ts_delta,
                         const format::EventSpec& e, const uint8_t* payload, uint32_t size) {
  out->push_back(static_cast<char>(ctl));
  out->push_back(static_cast<char>(event_index));
  uint16_t d = ts_delta < 0x8000 ? static_cast<uint16_t>(ts_delta)
                                 : static_cast<uint16_t>(0x8000 | std::min<uint64_t>(ts_delta >> 16, 0x7fff));
  out->append(reinterpret_cast<const char*>(&d), 2);
  uint32_t at = 0;
  for (const format::FieldSpec& f : e.fields) {
    if (f.type == format::FieldType::kString) {
      size_t n = at < size ? strnlen(reinterpret_cast<const char*>(payload + at), size - at) : 0;
      size_t keep = std::min<size_t>(n, 255);
      out->push_back(static_cast<char>(keep));
      out->append(reinterpret_cast<const char*>(payload + at), keep);
      at += static_cast<uint32_t>(n + 1);
    } else {
      uint32_t n = format::FieldSize(f.type);
      for (uint32_t i = 0; i < n; ++i) out->push_back(at + i < size ? static_cast<char>(payload[at + i]) : '\0');
      at += n;
    }
  }
}

}  // namespace strata::fuzz

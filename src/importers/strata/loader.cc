// Loads a strata trace directory into the model: metadata, then every stream
// file (process streams first: they define the names other streams use), with
// each event dispatched to its level's decoder.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include <simdjson.h>

#include "base/error.h"
#include "base/files.h"
#include "format/schema.h"
#include "importers/common/op_collectives.h"
#include "importers/strata/decoder.h"
#include "importers/strata/graph_files.h"
#include "importers/strata/ort_merge.h"
#include "importers/strata/xspace_merge.h"
#include "importers/strata_trace.h"

namespace strata::importers {

namespace strata_ctf {

ProcessState& LoadContext::Process(uint32_t pid, uint64_t instance) {
  auto [it, inserted] = procs_.try_emplace({pid, instance});
  if (inserted) {
    it->second.index = static_cast<uint32_t>(trace_.processes.size());
    model::Process p;
    p.pid = pid;
    p.instance = instance;
    trace_.processes.push_back(p);
  }
  return it->second;
}

uint32_t LoadContext::Track(uint32_t process, model::TrackKind kind, int64_t tid, int32_t device) {
  return tracks_.Track(process, kind, tid, device);
}

model::StringId LoadContext::UndefinedName(uint32_t id) {
  CountWarning("events name an undefined string id");
  return trace_.strings.Intern("<name " + std::to_string(id) + ">");
}

uint32_t LoadContext::NewCounterSeries(uint64_t key, uint32_t process, model::StringId name) {
  last_series_key_ = key;
  auto it = series_.find(key);
  if (it != series_.end()) return last_series_ = it->second;
  auto idx = static_cast<uint32_t>(trace_.counter_series.size());
  trace_.counter_series.push_back({name, process, 0});
  series_.emplace(key, idx);
  return last_series_ = idx;
}

uint32_t LoadContext::AddSlice(const OpenSlice& o, int64_t end_ts, uint32_t track, size_t depth) {
  uint32_t i = trace_.slices.Add(o.ts, std::max<int64_t>(0, end_ts - o.ts), track, o.name, o.kind, o.arg);
  trace_.slices.depth.back() = static_cast<uint16_t>(std::min<size_t>(depth, 65535));
  if (slice_hooks_)
    for (const SliceHook& h : *slice_hooks_) h(*this, o, i, end_ts);
  return i;
}

}  // namespace strata_ctf

using strata_ctf::DecoderRegistry;
using strata_ctf::EventHandler;
using strata_ctf::LoadContext;
using strata_ctf::StreamState;

namespace strata_ctf {

class Loader {
 public:
  explicit Loader(std::string dir) : dir_(std::move(dir)) {
    RegisterAllDecoders(reg_);
    ctx_.slice_hooks_ = &reg_.slice_added_;
  }

  StatusOr<model::Trace> Run() {
    std::string ctf = JoinPath(dir_, "ctf");
    std::string md_path = JoinPath(ctf, "metadata");
    if (!PathExists(md_path)) return Err(StatusCode::kNotFound, "{}: not a strata trace (no ctf/metadata)", dir_);
    STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(md_path));
    auto md = format::ParseMetadata(text);
    if (!md.ok()) return md.status().WithContext(md_path);
    ctx_.md_ = std::move(md).value();
    model::Trace& t = ctx_.trace_;
    t.source = "strata";
    t.path = dir_;
    t.clock_offset_ns = ctx_.md_.clock_offset_ns;
    t.hostname = ctx_.md_.hostname;
    ReadManifest();
    BindHandlers();

    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, ListFiles(ctf));
    struct File {
      std::string path;
      MappedFile map;
      uint32_t stream_class;
    };
    std::vector<File> files;
    for (const std::string& n : names) {
      if (n == "metadata" || n[0] == '.' || n.ends_with(".tmp")) continue;
      File f{JoinPath(ctf, n), {}, 0};
      STRATA_ASSIGN_OR_RETURN(f.map, MappedFile::Open(f.path));
      if (f.map.size() < format::kPacketHeaderSize) {
        if (f.map.size() > 0)
          ctx_.Warn(f.path + ": " + std::to_string(f.map.size()) + " bytes, shorter than a packet header (ignored)");
        continue;
      }
      // The stream class from the file's packets (not its first bytes alone:
      // a damaged first packet costs that packet, not the stream).
      format::StreamFileReader probe(ctx_.md_, f.map.data(), f.map.size(), f.path);
      if (!probe.Identify(&f.stream_class, nullptr)) {
        ctx_.Warn(f.path + ": no valid packet in " + std::to_string(f.map.size()) + " bytes (ignored)");
        t.damaged_packets += 1;
        t.damaged_bytes += f.map.size();
        continue;
      }
      files.push_back(std::move(f));
    }
    std::stable_sort(files.begin(), files.end(), [](const File& a, const File& b) {
      return (a.stream_class == format::kProcessStream) && (b.stream_class != format::kProcessStream);
    });
    for (File& f : files) ReadStream(f.path, f.map);

    // Streams that lost events without a file to show for it.
    for (const auto& [file, lost] : manifest_lost_) t.events_lost += lost;
    MergeFrameworkProfiles(dir_, t);
    MergeOrtProfiles(dir_, t);
    ReadGraphFiles(dir_, t);
    for (auto& h : reg_.before_) h(ctx_);
    ctx_.slice_remap_ = t.Finalize();
    for (auto& h : reg_.after_) h(ctx_);
    AddOpCollectives(t);  // TensorFlow's collective ops (its profiler's, merged above)
    ctx_.slice_remap_ = {};
    for (auto& [what, n] : ctx_.counted_warnings_) ctx_.Warn(std::to_string(n) + " " + what);
    return std::move(ctx_.trace_);
  }

 private:
  // Event id -> handler, per stream class, from the metadata's names.
  void BindHandlers() {
    const auto& streams = ctx_.md_.streams;
    bound_.resize(streams.size());
    for (size_t s = 0; s < streams.size(); ++s) {
      bound_[s].assign(streams[s].events.size(), nullptr);
      for (size_t e = 0; e < streams[s].events.size(); ++e) {
        auto it = reg_.handlers_.find({static_cast<uint32_t>(s), streams[s].events[e].name});
        if (it != reg_.handlers_.end()) bound_[s][e] = &it->second;
      }
    }
  }

  static uint64_t ContextField(const format::ParsedStream& s, const format::Packet& pk, std::string_view name) {
    for (size_t i = 0; i < s.context.size(); ++i)
      if (s.context[i].name == name) return pk.context[i];
    return 0;
  }

  // strata.json: kept for the report when it parses; a damaged one is said
  // once on stderr and in the trace's warnings (the report then shows that the
  // recording's details are missing), never silently ignored.
  void ReadManifest() {
    std::string manifest = JoinPath(dir_, "strata.json");
    if (!PathExists(manifest)) return;
    auto m = ReadFile(manifest);
    std::string why;
    if (!m.ok()) {
      why = m.status().message();
    } else {
      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      auto err = parser.parse(*m).get(doc);
      if (err) why = std::string("not valid JSON (") + simdjson::error_message(err) + ")";
      else if (!doc.is_object()) why = "not a JSON object";
      else ReadManifestLosses(doc);
    }
    if (why.empty()) {
      ctx_.trace_.manifest_json = std::move(m).value();
      return;
    }
    std::string w = manifest + ": the manifest could not be read: " + why +
                    "; the recording's command, exit status and losses are unknown";
    std::fprintf(stderr, "strata: warning: %s\n", w.c_str());
    ctx_.Warn(std::move(w));
  }

  // The recording's own count of each stream's losses (strata record): it
  // includes what never reached the file (a full disk, a killed process),
  // which the stream's events_discarded cannot carry.
  void ReadManifestLosses(simdjson::dom::element doc) {
    simdjson::dom::array procs;
    if (!doc["processes"].get_array().get(procs))
      for (simdjson::dom::element e : procs) {
        int64_t pid = 0;
        std::string_view end;
        if (!e["pid"].get_int64().get(pid) && !e["end"].get_string().get(end) && end == "exited")
          ctx_.manifest_exited_pids_.insert(pid);
      }
    simdjson::dom::array streams;
    if (doc["streams"].get_array().get(streams)) return;
    for (simdjson::dom::element e : streams) {
      std::string_view file;
      uint64_t lost = 0;
      if (e["file"].get_string().get(file) || e["lost_events"].get_uint64().get(lost)) continue;
      manifest_lost_[std::string(file)] += lost;
    }
  }

  void ReadStream(const std::string& path, const MappedFile& map) {
    format::StreamFileReader r(ctx_.md_, map.data(), map.size(), path);
    format::Packet pk;
    StreamState ss;
    ss.path = path;
    uint64_t last_discarded = 0, events = 0, expected_seq = 0, unhandled = 0, good_bytes = 0;
    bool discarded_backwards = false;
    while (r.NextPacket(&pk)) {
      const format::ParsedStream& s = ctx_.md_.streams[pk.stream_id];
      if (pk.seq != expected_seq)
        ctx_.Warn(path + ": packets " + std::to_string(expected_seq) + ".." + std::to_string(pk.seq) + " missing");
      expected_seq = pk.seq + 1;
      good_bytes += pk.packet_bytes;
      // A running total: a lower value is a damaged field, not a loss.
      if (pk.discarded < last_discarded) discarded_backwards = true;
      else last_discarded = pk.discarded;
      if (!ss.process) {
        ss.stream_class = pk.stream_id;
        ss.context = pk.context;
        if (pk.stream_id == format::kCpuStream) {
          // OS events name their own process and thread; the CPU track belongs to none.
          ss.process = &ctx_.os_process_;
        } else {
          ss.process = &ctx_.Process(static_cast<uint32_t>(ContextField(s, pk, "pid")), ContextField(s, pk, "process_instance"));
        }
        if (pk.stream_id == format::kThreadStream)
          ss.track = ctx_.Track(ss.process->index, model::TrackKind::kThread,
                                static_cast<int64_t>(ContextField(s, pk, "tid")), model::kNone);
        else if (pk.stream_id == format::kDeviceStream)
          ss.track = ctx_.Track(ss.process->index, model::TrackKind::kDeviceQueue,
                                static_cast<int64_t>(ContextField(s, pk, "queue")),
                                static_cast<int32_t>(ContextField(s, pk, "device")));
        else if (pk.stream_id == format::kCpuStream)
          ss.track = ctx_.Track(ss.process->index, model::TrackKind::kCpu,
                                static_cast<int64_t>(ContextField(s, pk, "cpu_id")), model::kNone);
      }
      const auto& handlers = bound_[pk.stream_id];
      format::EventView ev;
      while (r.NextEvent(&ev)) {
        ++events;
        ss.last_ts = static_cast<int64_t>(ev.ts);
        const EventHandler* h = ev.id < handlers.size() ? handlers[ev.id] : nullptr;
        if (h) (*h)(ctx_, ss, ev);
        else ++unhandled;
      }
    }
    model::Trace& t = ctx_.trace_;
    if (r.damaged_packets() > 0) {
      // The events a damaged stretch held, at the stream's own bytes per event.
      uint64_t est = good_bytes > 0 ? static_cast<uint64_t>(static_cast<double>(r.damaged_bytes()) *
                                                            static_cast<double>(events) / static_cast<double>(good_bytes))
                                    : 0;
      t.damaged_packets += r.damaged_packets();
      t.damaged_bytes += r.damaged_bytes();
      t.damaged_events_estimate += est;
      const format::PacketDamage& d = r.damage().front();
      ctx_.Warn(fmt::format("{}: {} damaged packet{} skipped ({} bytes, about {} events; first at {}: {})", path,
                            r.damaged_packets(), r.damaged_packets() == 1 ? "" : "s", r.damaged_bytes(), est,
                            d.offset, d.what));
    }
    if (discarded_backwards) ctx_.Warn(path + ": events_discarded goes backwards (a damaged field; ignored)");
    if (r.trailing_bytes() > 0)
      ctx_.Warn(path + ": " + std::to_string(r.trailing_bytes()) +
                " bytes after the last complete packet (writer interrupted) ignored");
    if (unhandled > 0) ctx_.CountWarning("events of classes this strata does not decode (skipped)");
    for (auto& h : reg_.stream_end_) h(ctx_, ss);
    uint64_t lost = last_discarded;
    auto m = manifest_lost_.find("ctf/" + path.substr(path.rfind('/') + 1));
    if (m != manifest_lost_.end()) {
      lost = std::max(lost, m->second);
      manifest_lost_.erase(m);
    }
    if (ss.track != UINT32_MAX) {
      t.tracks[ss.track].events += events;
      t.tracks[ss.track].lost += lost;
    }
    t.events_read += events;
    t.events_lost += lost;
  }

  std::string dir_;
  LoadContext ctx_;
  DecoderRegistry reg_;
  std::map<std::string, uint64_t> manifest_lost_;  // "ctf/NAME" -> lost events, from strata.json
  std::vector<std::vector<const EventHandler*>> bound_;
};

}  // namespace strata_ctf

bool IsStrataTraceDir(const std::string& path) { return PathExists(JoinPath(JoinPath(path, "ctf"), "metadata")); }

StatusOr<model::Trace> LoadStrataTrace(const std::string& dir, const LoadOptions& opt) {
  (void)opt;
  return strata_ctf::Loader(dir).Run();
}

StatusOr<RawReadStats> ReadStrataTraceRaw(const std::string& dir) {
  std::string ctf = JoinPath(dir, "ctf");
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(JoinPath(ctf, "metadata")));
  auto md = format::ParseMetadata(text);
  if (!md.ok()) return md.status().WithContext(JoinPath(ctf, "metadata"));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, ListFiles(ctf));
  RawReadStats st;
  for (const std::string& n : names) {
    if (n == "metadata" || n[0] == '.' || n.ends_with(".tmp")) continue;
    std::string path = JoinPath(ctf, n);
    STRATA_ASSIGN_OR_RETURN(MappedFile map, MappedFile::Open(path));
    format::StreamFileReader r(*md, map.data(), map.size(), path);
    format::Packet pk;
    format::EventView ev;
    uint64_t discarded = 0;
    while (r.NextPacket(&pk)) {
      ++st.packets;
      discarded = std::max(discarded, pk.discarded);
      while (r.NextEvent(&ev)) {
        ++st.events;
        st.checksum += ev.ts ^ ev.id;
      }
    }
    st.damaged_packets += r.damaged_packets();
    st.bytes += map.size();
    st.discarded += discarded;
    ++st.streams;
  }
  return st;
}

}  // namespace strata::importers

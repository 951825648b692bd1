// Perfetto protobuf writer. One packet sequence: the first packet clears the
// incremental state, later ones intern event names as they first appear.
// Packets are written in timestamp order so that any reader can stream them.
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "exporters/export.h"
#include "exporters/perfetto_trace.pb.h"

namespace strata::exporters {
namespace {

namespace pb = strata::perfetto;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::FileOutputStream;

constexpr uint32_t kSequence = 1;
constexpr uint64_t kProcessUuidBase = 1ull << 40;
constexpr uint64_t kTrackUuidBase = 2ull << 40;
constexpr uint64_t kCounterUuidBase = 3ull << 40;
constexpr uint64_t kMemoryUuidBase = 4ull << 40;
constexpr uint64_t kLaunchFlowBase = 1ull << 48;
// Device "processes" get pids no host process has.
constexpr int32_t kDevicePidBase = 1 << 30;

enum RecType : uint8_t { kBegin, kEnd, kInstant, kCounter, kMemory };
struct Rec {
  int64_t ts;
  uint32_t idx;    // slice, instant, counter sample or memory row
  uint32_t lane;   // for slices
  RecType type;
};

class Writer {
 public:
  Writer(const model::Trace& t, int fd) : t_(t), fos_(fd), out_(&fos_) {}

  Status Run(ExportStats& st) {
    iid_.assign(t_.strings.size(), 0);
    WriteDescriptors(st);
    std::vector<Rec> recs = Records(st);
    BuildFlows(st);
    for (const Rec& r : recs) WriteRecord(r);
    out_.Trim();
    if (out_.HadError()) return Err(StatusCode::kIoError, "write failed");
    return OkStatus();
  }

 private:
  int32_t Pid(uint32_t process) const {
    const model::Process& p = t_.processes[process];
    return p.is_device ? kDevicePidBase + p.device : static_cast<int32_t>(p.pid);
  }
  uint64_t TrackUuid(uint32_t track, uint32_t lane) const { return kTrackUuidBase + (uint64_t{track} << 8) + lane; }

  void Emit(pb::TracePacket& p) {
    p.set_trusted_packet_sequence_id(kSequence);
    if (first_) {
      p.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      p.set_first_packet_on_sequence(true);
      first_ = false;
    } else if (p.has_track_event()) {
      p.set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    }
    out_.WriteTag((1 << 3) | 2);  // Trace.packet, length-delimited
    out_.WriteVarint32(static_cast<uint32_t>(p.ByteSizeLong()));
    p.SerializeWithCachedSizes(&out_);
  }

  void WriteDescriptors(ExportStats& st) {
    pb::TracePacket p;
    for (uint32_t i = 0; i < t_.processes.size(); ++i) {
      p.Clear();
      const model::Process& pr = t_.processes[i];
      auto* td = p.mutable_track_descriptor();
      td->set_uuid(kProcessUuidBase + i);
      auto* pd = td->mutable_process();
      pd->set_pid(Pid(i));
      std::string name(t_.strings.Get(pr.name));
      if (pr.is_device) {
        for (const model::Device& d : t_.devices)
          if (d.id == pr.device && !d.name.empty()) name += " (" + d.name + ")";
      }
      pd->set_process_name(name);
      if (pr.rank >= 0) pd->add_process_labels("rank " + std::to_string(pr.rank));
      Emit(p);
    }
    lanes_.assign(t_.slices.size(), 0);
    for (uint32_t k = 0; k < t_.tracks.size(); ++k) {
      const model::Track& trk = t_.tracks[k];
      uint32_t nlanes = 1;
      if (k < t_.track_slices.size()) {
        auto [first, last] = t_.track_slices[k];
        nlanes = AssignLanes(t_, first, last, lanes_);
      }
      st.extra_lanes += nlanes - 1;
      for (uint32_t lane = 0; lane < nlanes; ++lane) {
        p.Clear();
        auto* td = p.mutable_track_descriptor();
        td->set_uuid(TrackUuid(k, lane));
        std::string name(t_.strings.Get(trk.name));
        if (name.empty()) name = (trk.kind == model::TrackKind::kDeviceQueue ? "stream " : "thread ") + std::to_string(trk.tid);
        if (lane > 0) name += " (overlapping #" + std::to_string(lane) + ")";
        if (trk.kind == model::TrackKind::kThread && lane == 0) {
          auto* th = td->mutable_thread();
          th->set_pid(Pid(trk.process));
          th->set_tid(static_cast<int32_t>(trk.tid));
          th->set_thread_name(name);
        } else {
          td->set_parent_uuid(kProcessUuidBase + trk.process);
          td->set_name(name);
        }
        Emit(p);
      }
    }
    for (uint32_t c = 0; c < t_.counter_series.size(); ++c) {
      p.Clear();
      auto* td = p.mutable_track_descriptor();
      td->set_uuid(kCounterUuidBase + c);
      td->set_parent_uuid(kProcessUuidBase + t_.counter_series[c].process);
      td->set_name(std::string(t_.strings.Get(t_.counter_series[c].name)));
      td->mutable_counter();
      Emit(p);
    }
    // Allocator events become a counter of allocated bytes per (track, device).
    for (size_t m = 0; m < t_.memory.size(); ++m) {
      uint64_t key = (uint64_t{t_.memory.track[m]} << 20) + static_cast<uint64_t>(t_.memory.device[m] + 1);
      if (std::find(memory_tracks_.begin(), memory_tracks_.end(), key) != memory_tracks_.end()) continue;
      memory_tracks_.push_back(key);
      p.Clear();
      auto* td = p.mutable_track_descriptor();
      td->set_uuid(kMemoryUuidBase + key);
      td->set_parent_uuid(kProcessUuidBase + t_.tracks[t_.memory.track[m]].process);
      td->set_name(model::MemoryCounterName(t_.memory.device[m], t_.memory.layer[m]));
      td->mutable_counter()->set_unit_name("bytes");
      Emit(p);
    }
  }

  std::vector<Rec> Records(ExportStats& st) {
    std::vector<Rec> recs;
    recs.reserve(t_.slices.size() * 2 + t_.instants.size() + t_.counters.size() + t_.memory.size());
    // Per track and lane, begin/end in nesting order (the same stack rule as AssignLanes).
    for (uint32_t k = 0; k < t_.track_slices.size(); ++k) {
      auto [first, last] = t_.track_slices[k];
      std::vector<std::vector<uint32_t>> stacks;
      for (uint32_t i = first; i < last; ++i) {
        uint32_t lane = lanes_[i];
        if (lane >= stacks.size()) stacks.resize(lane + 1);
        auto& s = stacks[lane];
        int64_t ts = t_.slices.ts[i];
        while (!s.empty() && t_.slices.end(s.back()) <= ts) {
          recs.push_back({t_.slices.end(s.back()), s.back(), lane, kEnd});
          s.pop_back();
        }
        recs.push_back({ts, i, lane, kBegin});
        s.push_back(i);
      }
      for (uint32_t lane = 0; lane < stacks.size(); ++lane)
        for (auto it = stacks[lane].rbegin(); it != stacks[lane].rend(); ++it)
          recs.push_back({t_.slices.end(*it), *it, lane, kEnd});
    }
    st.slices = t_.slices.size();
    for (uint32_t i = 0; i < t_.instants.size(); ++i) recs.push_back({t_.instants.ts[i], i, 0, kInstant});
    for (uint32_t i = 0; i < t_.counters.size(); ++i) recs.push_back({t_.counters.ts[i], i, 0, kCounter});
    for (uint32_t i = 0; i < t_.memory.size(); ++i) recs.push_back({t_.memory.ts[i], i, 0, kMemory});
    st.instants = t_.instants.size();
    st.counter_samples = t_.counters.size();
    st.memory_events = t_.memory.size();
    // Each track's records are in order already; a stable sort by time keeps it.
    std::stable_sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) { return a.ts < b.ts; });
    return recs;
  }

  void BuildFlows(ExportStats& st) {
    for (size_t r = 0; r < t_.device.size(); ++r) {
      int32_t l = t_.device.launch[r];
      if (l == model::kNone) continue;
      uint64_t id = kLaunchFlowBase + r;
      out_flows_.push_back({static_cast<uint32_t>(l), id});
      in_flows_.push_back({t_.device.slice[r], id});
    }
    for (size_t f = 0; f < t_.flows.size(); ++f) {
      if (t_.flows.from[f] < 0 || t_.flows.to[f] < 0) continue;
      uint64_t id = f + 1;
      out_flows_.push_back({static_cast<uint32_t>(t_.flows.from[f]), id});
      in_flows_.push_back({static_cast<uint32_t>(t_.flows.to[f]), id});
    }
    st.flows = out_flows_.size();
    std::sort(out_flows_.begin(), out_flows_.end());
    std::sort(in_flows_.begin(), in_flows_.end());
  }

  uint64_t Iid(model::StringId s, pb::TracePacket& p) {
    if (iid_[s] == 0) {
      iid_[s] = ++next_iid_;
      auto* n = p.mutable_interned_data()->add_event_names();
      n->set_iid(iid_[s]);
      n->set_name(std::string(t_.strings.Get(s)));
    }
    return iid_[s];
  }

  static void Flows(const std::vector<std::pair<uint32_t, uint64_t>>& v, uint32_t slice,
                    google::protobuf::RepeatedField<uint64_t>* out) {
    auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(slice, uint64_t{0}));
    for (; it != v.end() && it->first == slice; ++it) out->Add(it->second);
  }

  void Annotate(pb::TrackEvent* e, uint32_t i) {
    auto add_int = [e](const char* k, int64_t v) {
      auto* a = e->add_debug_annotations();
      a->set_name(k);
      a->set_int_value(v);
    };
    auto* kind = e->add_debug_annotations();
    kind->set_name("kind");
    kind->set_string_value(model::SliceKindName(t_.slices.kind[i]));
    int32_t r = t_.device_row_of_slice[i];
    if (r != model::kNone) {
      size_t row = static_cast<size_t>(r);
      add_int("device", t_.device.device[row]);
      add_int("stream", t_.device.stream[row]);
      if (t_.device.correlation[row]) add_int("correlation", static_cast<int64_t>(t_.device.correlation[row]));
      if (t_.device.bytes[row]) add_int("bytes", static_cast<int64_t>(t_.device.bytes[row]));
      if (t_.device.copy_kind[row] != model::CopyKind::kUnknown) {
        auto* a = e->add_debug_annotations();
        a->set_name("copy kind");
        a->set_string_value(model::CopyKindName(t_.device.copy_kind[row]));
      }
      if (t_.device.pinned[row] >= 0) add_int("pinned", t_.device.pinned[row]);
      const auto& g = t_.device.grid[row];
      const auto& b = t_.device.block[row];
      if (g[0]) {
        auto* a = e->add_debug_annotations();
        a->set_name("grid");
        a->set_string_value(fmt::format("[{}, {}, {}]", g[0], g[1], g[2]));
        a = e->add_debug_annotations();
        a->set_name("block");
        a->set_string_value(fmt::format("[{}, {}, {}]", b[0], b[1], b[2]));
      }
    } else if (t_.slices.arg[i] != 0) {
      add_int(t_.slices.kind[i] == model::SliceKind::kStep ? "step" : "arg", static_cast<int64_t>(t_.slices.arg[i]));
    }
    auto it = std::lower_bound(t_.args.slice.begin(), t_.args.slice.end(), i);
    for (size_t a = static_cast<size_t>(it - t_.args.slice.begin()); a < t_.args.size() && t_.args.slice[a] == i; ++a) {
      auto* d = e->add_debug_annotations();
      d->set_name(std::string(t_.strings.Get(t_.args.key[a])));
      if (!std::isnan(t_.args.num[a])) d->set_double_value(t_.args.num[a]);
      else d->set_string_value(std::string(t_.strings.Get(t_.args.str[a])));
    }
  }

  void WriteRecord(const Rec& r) {
    pkt_.Clear();
    pkt_.set_timestamp(static_cast<uint64_t>(r.ts));
    auto* e = pkt_.mutable_track_event();
    switch (r.type) {
      case kBegin: {
        e->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
        e->set_track_uuid(TrackUuid(t_.slices.track[r.idx], r.lane));
        e->set_name_iid(Iid(t_.slices.name[r.idx], pkt_));
        e->add_categories(model::SliceKindName(t_.slices.kind[r.idx]));
        Flows(out_flows_, r.idx, e->mutable_flow_ids());
        Flows(in_flows_, r.idx, e->mutable_terminating_flow_ids());
        Annotate(e, r.idx);
        break;
      }
      case kEnd:
        e->set_type(pb::TrackEvent::TYPE_SLICE_END);
        e->set_track_uuid(TrackUuid(t_.slices.track[r.idx], r.lane));
        break;
      case kInstant:
        e->set_type(pb::TrackEvent::TYPE_INSTANT);
        e->set_track_uuid(TrackUuid(t_.instants.track[r.idx], 0));
        e->set_name_iid(Iid(t_.instants.name[r.idx], pkt_));
        break;
      case kCounter:
        e->set_type(pb::TrackEvent::TYPE_COUNTER);
        e->set_track_uuid(kCounterUuidBase + t_.counters.series[r.idx]);
        e->set_double_counter_value(t_.counters.value[r.idx]);
        break;
      case kMemory: {
        uint64_t key = (uint64_t{t_.memory.track[r.idx]} << 20) + static_cast<uint64_t>(t_.memory.device[r.idx] + 1);
        auto& total = memory_total_[key];
        total += t_.memory.bytes[r.idx];
        int64_t v = t_.memory.total_allocated[r.idx] >= 0 ? t_.memory.total_allocated[r.idx] : total;
        e->set_type(pb::TrackEvent::TYPE_COUNTER);
        e->set_track_uuid(kMemoryUuidBase + key);
        e->set_counter_value(v);
        break;
      }
    }
    Emit(pkt_);
  }

  const model::Trace& t_;
  FileOutputStream fos_;
  CodedOutputStream out_;
  pb::TracePacket pkt_;
  bool first_ = true;
  std::vector<uint64_t> iid_;
  uint64_t next_iid_ = 0;
  std::vector<uint32_t> lanes_;
  std::vector<std::pair<uint32_t, uint64_t>> out_flows_, in_flows_;
  std::vector<uint64_t> memory_tracks_;
  std::unordered_map<uint64_t, int64_t> memory_total_;
};

}  // namespace

StatusOr<ExportStats> ExportPerfetto(const model::Trace& t, const std::string& path) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoErr(errno, "create {}", tmp);
  ExportStats st;
  Status s;
  {
    Writer w(t, fd);
    s = w.Run(st);
  }
  if (::close(fd) != 0 && s.ok()) s = ErrnoErr(errno, "write {}", tmp);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = ErrnoErr(errno, "rename {} to {}", tmp, path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s.WithContext(path);
  }
  return st;
}

}  // namespace strata::exporters

// Perfetto protobuf writer. One packet sequence: the first packet clears the
// incremental state, later ones intern event names, functions, frames,
// mappings and callstacks as they first appear. Packets are written in
// timestamp order so that any reader can stream them; scheduling events go in
// per-CPU ftrace bundles, flushed as they fill.
//
// What trace processor makes of each level:
//   slices, system calls   TrackEvent slices on the thread's (or queue's) track
//   flows                  flow_ids / terminating_flow_ids on the two slices
//   thread states          sched_switch per CPU (the sched table, CPU lanes) and
//                          sched_waking (runnable after a wakeup): thread_state
//   CPU samples            PerfSample with an interned callstack: perf_sample
//   /proc counters, memory counter tracks (per thread when the series is)
//   manifest               TraceAttributes: metadata trace_attribute.*, and the
//                          kernel release in SystemInfo (how prev_state reads)
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "base/error.h"
#include "exporters/export.h"
#include "exporters/perfetto_trace.pb.h"
#include "exporters/view.h"

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
// Device "processes" get pids no host process has.
constexpr int32_t kDevicePidBase = 1 << 30;
constexpr size_t kBundleEvents = 512;
constexpr int32_t kPrio = 120;  // nice 0: the priority strata does not record

// sched_switch prev_state as kernels >= 4.14 report it (TASK_REPORT).
constexpr int64_t kStateRunnable = 0, kStateSleeping = 0x1, kStateDiskSleep = 0x2, kStateStopped = 0x4,
                  kStateDead = 0x10;

enum RecType : uint8_t { kBegin, kEnd, kInstant, kCounter, kMemory, kSample, kSched };
struct Rec {
  int64_t ts;
  uint32_t a;  // track (begin/end), or the row of the instant, counter, memory event, sample, sched event
  uint32_t b;  // item of the track's timeline (begin/end)
  RecType type;
};

// One scheduling event on one CPU. prev/next: tracks, -1 for the idle task (or
// a task strata did not trace).
struct SchedEvent {
  int64_t ts;
  int32_t cpu;
  int32_t prev = -1, next = -1;
  int64_t prev_state = 0;
  bool waking = false;
  int32_t waker = -1;  // waking: the track that woke it
};

class Writer {
 public:
  Writer(const model::Trace& t, const ExportView& v, int fd) : t_(t), v_(v), fos_(fd), out_(&fos_) {}

  Status Run(ExportStats& st) {
    iid_.assign(t_.strings.size(), 0);
    fn_iid_.assign(t_.strings.size(), 0);
    mapping_iid_.assign(t_.strings.size(), 0);
    frame_iid_.assign(t_.frames.size(), 0);
    callstack_iid_.assign(t_.callsites.size(), 0);
    WriteSystemAndAttributes(st);
    WriteDescriptors(st);
    BuildSched(st);
    BuildFlows(st);
    std::vector<Rec> recs = Records(st);
    for (const Rec& r : recs) WriteRecord(r);
    for (auto& [cpu, b] : bundles_) FlushBundle(cpu);
    out_.Trim();
    if (out_.HadError()) return Err(StatusCode::kIoError, "write failed");
    return OkStatus();
  }

 private:
  int32_t Pid(uint32_t process) const {
    if (process >= t_.processes.size()) return 0;
    const model::Process& p = t_.processes[process];
    return p.is_device ? kDevicePidBase + p.device : static_cast<int32_t>(p.pid);
  }
  uint64_t TrackUuid(uint32_t track, uint32_t lane) const {
    return kTrackUuidBase + (uint64_t{track} << 16) + lane;
  }
  std::string TrackName(uint32_t k) const {
    const model::Track& trk = t_.tracks[k];
    std::string name(t_.strings.Get(trk.name));
    if (name.empty()) name = (trk.kind == model::TrackKind::kDeviceQueue ? "stream " : "thread ") + std::to_string(trk.tid);
    return name;
  }
  // The kernel's comm: at most 15 bytes.
  std::string Comm(int32_t track) const {
    if (track < 0) return "swapper";
    return TrackName(static_cast<uint32_t>(track)).substr(0, 15);
  }
  int32_t Tid(int32_t track) const { return track < 0 ? 0 : static_cast<int32_t>(t_.tracks[static_cast<size_t>(track)].tid); }

  void Emit(pb::TracePacket& p) {
    p.set_trusted_packet_sequence_id(kSequence);
    if (first_) {
      p.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      p.set_first_packet_on_sequence(true);
      first_ = false;
    } else if (p.has_track_event() || p.has_perf_sample()) {
      p.set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    }
    out_.WriteTag((1 << 3) | 2);  // Trace.packet, length-delimited
    out_.WriteVarint32(static_cast<uint32_t>(p.ByteSizeLong()));
    p.SerializeWithCachedSizes(&out_);
  }

  void WriteSystemAndAttributes(ExportStats& st) {
    pb::TracePacket p;
    if (!v_.kernel.empty()) {
      auto* u = p.mutable_system_info()->mutable_utsname();
      size_t sp = v_.kernel.find(' ');
      u->set_sysname(sp == std::string::npos ? v_.kernel : v_.kernel.substr(0, sp));
      if (sp != std::string::npos) u->set_release(v_.kernel.substr(sp + 1));
      if (!v_.machine.empty()) u->set_machine(v_.machine);
      Emit(p);
      p.Clear();
    }
    auto* attrs = p.mutable_trace_attributes();
    auto add = [attrs](const std::string& k, const std::string& val) {
      auto* a = attrs->add_attribute();
      a->set_key(k);
      a->set_string_value(val);
    };
    add("strata.source", t_.source);
    if (!v_.command.empty()) add("strata.command", v_.command);
    if (!v_.exit_status.empty()) add("strata.exit_status", v_.exit_status);
    auto* lost = attrs->add_attribute();
    lost->set_key("strata.events_lost");
    lost->set_long_value(static_cast<int64_t>(t_.events_lost));
    // Keys are unique: trace processor keeps the last value of a repeated key.
    std::map<std::string, int> seen;
    for (const NotRecorded& n : v_.not_recorded) {
      std::string key = "strata.not_recorded." + n.collector + " [" + n.process + "]";
      if (int k = ++seen[key]; k > 1) key += " #" + std::to_string(k);
      add(key, n.state + (n.detail.empty() ? "" : ": " + n.detail));
    }
    st.not_recorded = v_.not_recorded.size();
    Emit(p);
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
    for (uint32_t k = 0; k < t_.tracks.size(); ++k) {
      const model::Track& trk = t_.tracks[k];
      bool thread = trk.kind == model::TrackKind::kThread && trk.process < t_.processes.size();
      // CPU tracks hold no events of their own (the OS level is per thread).
      if (!thread && v_.timeline[k].empty()) continue;
      uint32_t nlanes = v_.lanes[k];
      st.extra_lanes += nlanes - 1;
      for (uint32_t lane = 0; lane < nlanes; ++lane) {
        p.Clear();
        auto* td = p.mutable_track_descriptor();
        td->set_uuid(TrackUuid(k, lane));
        std::string name = TrackName(k);
        if (lane > 0) name += " (overlapping #" + std::to_string(lane) + ")";
        if (thread && lane == 0) {
          auto* th = td->mutable_thread();
          th->set_pid(Pid(trk.process));
          th->set_tid(static_cast<int32_t>(trk.tid));
          th->set_thread_name(name);
        } else {
          if (trk.process < t_.processes.size()) td->set_parent_uuid(kProcessUuidBase + trk.process);
          td->set_name(name);
        }
        Emit(p);
      }
    }
    for (uint32_t c = 0; c < t_.counter_series.size(); ++c) {
      const model::CounterSeries& cs = t_.counter_series[c];
      p.Clear();
      auto* td = p.mutable_track_descriptor();
      td->set_uuid(kCounterUuidBase + c);
      // A thread's own series (its CPU use, its switches) sits under the thread.
      if (cs.track >= 0 && static_cast<size_t>(cs.track) < t_.tracks.size())
        td->set_parent_uuid(TrackUuid(static_cast<uint32_t>(cs.track), 0));
      else if (cs.process < t_.processes.size())
        td->set_parent_uuid(kProcessUuidBase + cs.process);
      td->set_name(std::string(t_.strings.Get(cs.name)));
      auto* cd = td->mutable_counter();
      std::string_view unit = t_.strings.Get(cs.unit);
      if (unit == "bytes") cd->set_unit(pb::CounterDescriptor::UNIT_SIZE_BYTES);
      else if (!unit.empty()) cd->set_unit_name(std::string(unit));
      Emit(p);
    }
    // Allocator events become a counter of allocated bytes per (track, device).
    for (size_t m = 0; m < t_.memory.size(); ++m) {
      uint64_t key = MemoryKey(m);
      if (std::find(memory_tracks_.begin(), memory_tracks_.end(), key) != memory_tracks_.end()) continue;
      memory_tracks_.push_back(key);
      p.Clear();
      auto* td = p.mutable_track_descriptor();
      td->set_uuid(kMemoryUuidBase + key);
      uint32_t proc = t_.tracks[t_.memory.track[m]].process;
      if (proc < t_.processes.size()) td->set_parent_uuid(kProcessUuidBase + proc);
      td->set_name(model::MemoryCounterName(t_.memory.device[m], t_.memory.layer[m]));
      td->mutable_counter()->set_unit(pb::CounterDescriptor::UNIT_SIZE_BYTES);
      Emit(p);
    }
  }

  uint64_t MemoryKey(size_t m) const {
    return (uint64_t{t_.memory.track[m]} << 20) + static_cast<uint64_t>(t_.memory.device[m] + 1);
  }

  // Per CPU, the running intervals of traced threads become sched_switch
  // events: one switching each interval in (from the idle task, or from the
  // thread that left the CPU at that instant) and one switching it out to the
  // idle task when nothing follows at once. prev_state is the state the thread
  // went to; a runnable interval after a blocked one begins with sched_waking.
  void BuildSched(ExportStats& st) {
    const auto& s = t_.thread_states;
    struct Edge {
      int64_t ts;
      int32_t cpu;
      bool in;
      uint32_t row;
    };
    std::vector<Edge> edges;
    for (uint32_t r = 0; r < s.size(); ++r) {
      if (s.state[r] == model::ThreadState::kRunning) {
        if (s.cpu[r] < 0) continue;
        edges.push_back({s.ts[r], s.cpu[r], true, r});
        edges.push_back({s.ts[r] + s.dur[r], s.cpu[r], false, r});
      } else if (s.state[r] == model::ThreadState::kRunnable && r > 0 && s.track[r - 1] == s.track[r] &&
                 s.state[r - 1] != model::ThreadState::kRunning && s.state[r - 1] != model::ThreadState::kRunnable &&
                 s.state[r - 1] != model::ThreadState::kUnknown) {
        int32_t cpu = s.cpu[r];
        if (r + 1 < s.size() && s.track[r + 1] == s.track[r] && s.cpu[r + 1] >= 0) cpu = s.cpu[r + 1];
        if (cpu < 0) continue;
        SchedEvent e{s.ts[r], cpu};
        e.next = static_cast<int32_t>(s.track[r]);
        e.waking = true;
        e.waker = s.waker[r - 1];
        sched_.push_back(e);
      }
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
      if (a.cpu != b.cpu) return a.cpu < b.cpu;
      if (a.ts != b.ts) return a.ts < b.ts;
      return a.in < b.in;  // out before in at the same instant
    });
    auto state_after = [&s](uint32_t r) {
      if (r + 1 >= s.size() || s.track[r + 1] != s.track[r]) return kStateDead;
      switch (s.state[r + 1]) {
        case model::ThreadState::kRunnable: return kStateRunnable;
        case model::ThreadState::kDiskSleep: return kStateDiskSleep;
        case model::ThreadState::kStopped: return kStateStopped;
        default: return kStateSleeping;
      }
    };
    int32_t cpu = -1, cur = -1;  // the traced thread on the CPU
    bool out_pending = false;
    SchedEvent pending{};
    auto flush = [&]() {
      if (out_pending) sched_.push_back(pending);
      out_pending = false;
    };
    for (const Edge& e : edges) {
      if (e.cpu != cpu) {
        flush();
        cpu = e.cpu;
        cur = -1;
      }
      int32_t track = static_cast<int32_t>(s.track[e.row]);
      if (!e.in) {
        if (cur != track) continue;  // already replaced by an overlapping interval
        flush();
        pending = SchedEvent{e.ts, cpu};
        pending.prev = track;
        pending.prev_state = state_after(e.row);
        out_pending = true;
        cur = -1;
        continue;
      }
      SchedEvent in{e.ts, cpu};
      in.next = track;
      if (out_pending && pending.ts == e.ts) {
        in.prev = pending.prev;
        in.prev_state = pending.prev_state;
        out_pending = false;
      } else {
        flush();
        // Overlapping intervals on one CPU (lost records): the one running is preempted.
        in.prev = cur;
        in.prev_state = kStateRunnable;
      }
      sched_.push_back(in);
      ++st.context_switches;
      cur = track;
    }
    flush();
    st.thread_states = s.size();
  }

  void BuildFlows(ExportStats& st) {
    for (size_t f = 0; f < v_.flows.size(); ++f) {
      out_flows_.push_back({v_.flows[f].from, f + 1});
      in_flows_.push_back({v_.flows[f].to, f + 1});
    }
    st.flows = v_.flows.size();
    std::sort(out_flows_.begin(), out_flows_.end());
    std::sort(in_flows_.begin(), in_flows_.end());
  }

  std::vector<Rec> Records(ExportStats& st) {
    std::vector<Rec> recs;
    recs.reserve(t_.slices.size() * 2 + t_.syscalls.size() * 2 + t_.instants.size() + t_.counters.size() +
                 t_.memory.size() + t_.cpu_samples.size() + sched_.size());
    // Per track and lane, begin/end in nesting order (the stack rule of AssignLanes).
    for (uint32_t k = 0; k < v_.timeline.size(); ++k) {
      const auto& items = v_.timeline[k];
      std::vector<std::vector<uint32_t>> stacks(v_.lanes[k]);
      for (uint32_t i = 0; i < items.size(); ++i) {
        auto& s = stacks[items[i].lane];
        while (!s.empty() && items[s.back()].end() <= items[i].ts) {
          recs.push_back({items[s.back()].end(), k, s.back(), kEnd});
          s.pop_back();
        }
        recs.push_back({items[i].ts, k, i, kBegin});
        s.push_back(i);
        if (items[i].syscall) ++st.syscalls;
        else ++st.slices;
      }
      for (auto& s : stacks)
        for (auto it = s.rbegin(); it != s.rend(); ++it) recs.push_back({items[*it].end(), k, *it, kEnd});
    }
    for (uint32_t i = 0; i < t_.instants.size(); ++i) recs.push_back({t_.instants.ts[i], i, 0, kInstant});
    for (uint32_t i = 0; i < t_.counters.size(); ++i) recs.push_back({t_.counters.ts[i], i, 0, kCounter});
    for (uint32_t i = 0; i < t_.memory.size(); ++i) recs.push_back({t_.memory.ts[i], i, 0, kMemory});
    for (uint32_t i = 0; i < t_.cpu_samples.size(); ++i) recs.push_back({t_.cpu_samples.ts[i], i, 0, kSample});
    for (uint32_t i = 0; i < sched_.size(); ++i) recs.push_back({sched_[i].ts, i, 0, kSched});
    st.instants = t_.instants.size();
    st.counter_samples = t_.counters.size();
    st.memory_events = t_.memory.size();
    st.samples = t_.cpu_samples.size();
    // Each track's records are in order already; a stable sort by time keeps it.
    std::stable_sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) { return a.ts < b.ts; });
    return recs;
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
    } else if (t_.slices.kind[i] == model::SliceKind::kStep) {
      add_int("step", static_cast<int64_t>(t_.slices.arg[i]));
    } else if (t_.slices.arg[i] != 0) {
      add_int("arg", static_cast<int64_t>(t_.slices.arg[i]));
    }
    auto it = std::lower_bound(t_.args.slice.begin(), t_.args.slice.end(), i);
    for (size_t a = static_cast<size_t>(it - t_.args.slice.begin()); a < t_.args.size() && t_.args.slice[a] == i; ++a) {
      auto* d = e->add_debug_annotations();
      d->set_name(std::string(t_.strings.Get(t_.args.key[a])));
      if (!std::isnan(t_.args.num[a])) d->set_double_value(t_.args.num[a]);
      else d->set_string_value(std::string(t_.strings.Get(t_.args.str[a])));
    }
  }

  void Begin(pb::TrackEvent* e, uint32_t track, const TimelineItem& it) {
    e->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
    e->set_track_uuid(TrackUuid(track, it.lane));
    if (it.syscall) {
      e->set_name_iid(Iid(t_.syscalls.name[it.row], pkt_));
      e->add_categories("syscall");
      if (t_.syscalls.returned[it.row]) {
        auto* a = e->add_debug_annotations();
        a->set_name("ret");
        a->set_int_value(t_.syscalls.ret[it.row]);
      }
      return;
    }
    e->set_name_iid(Iid(t_.slices.name[it.row], pkt_));
    e->add_categories(model::SliceKindName(t_.slices.kind[it.row]));
    Flows(out_flows_, it.row, e->mutable_flow_ids());
    Flows(in_flows_, it.row, e->mutable_terminating_flow_ids());
    Annotate(e, it.row);
  }

  // Interning of stacks: a callstack is the chain of its callsite's frames,
  // outermost first; each frame names its function and its mapping (the
  // library, executable or .py file).
  uint64_t FunctionIid(model::StringId s) {
    if (fn_iid_[s] == 0) {
      fn_iid_[s] = ++next_fn_iid_;
      auto* n = pkt_.mutable_interned_data()->add_function_names();
      n->set_iid(fn_iid_[s]);
      n->set_str(std::string(t_.strings.Get(s)));
    }
    return fn_iid_[s];
  }
  uint64_t MappingIid(model::StringId s) {
    if (mapping_iid_[s] == 0) {
      mapping_iid_[s] = ++next_mapping_iid_;
      auto* path = pkt_.mutable_interned_data()->add_mapping_paths();
      path->set_iid(mapping_iid_[s]);
      std::string_view name = t_.strings.Get(s);
      path->set_str(name.empty() ? std::string("[unknown]") : std::string(name));
      auto* m = pkt_.mutable_interned_data()->add_mappings();
      m->set_iid(mapping_iid_[s]);
      m->add_path_string_ids(mapping_iid_[s]);
    }
    return mapping_iid_[s];
  }
  uint64_t FrameIid(uint32_t f) {
    if (frame_iid_[f] == 0) {
      const auto& fr = t_.frames;
      frame_iid_[f] = f + 1;
      uint64_t fn = FunctionIid(fr.function[f]);
      uint64_t map = MappingIid(fr.module[f]);
      auto* x = pkt_.mutable_interned_data()->add_frames();
      x->set_iid(f + 1);
      x->set_function_name_id(fn);
      x->set_mapping_id(map);
      switch (fr.kind[f]) {
        case model::FrameKind::kPython:
          // Python frames have no address: the line tells them apart.
          x->set_rel_pc(fr.line[f]);
          x->set_kind(pb::Frame::KIND_INTERPRETED);
          if (fr.line[f]) x->set_line_number(fr.line[f]);
          break;
        case model::FrameKind::kKernel:
          x->set_rel_pc(fr.pc[f]);
          x->set_kind(pb::Frame::KIND_KERNEL);
          break;
        default:
          x->set_rel_pc(fr.pc[f]);
          x->set_kind(pb::Frame::KIND_NATIVE);
      }
    }
    return frame_iid_[f];
  }
  uint64_t CallstackIid(uint32_t c) {
    if (callstack_iid_[c] == 0) {
      std::vector<uint64_t> frames;
      for (int32_t k = static_cast<int32_t>(c); k >= 0; k = t_.callsites.parent[static_cast<size_t>(k)])
        frames.push_back(FrameIid(t_.callsites.frame[static_cast<size_t>(k)]));
      callstack_iid_[c] = c + 1;
      auto* cs = pkt_.mutable_interned_data()->add_callstacks();
      cs->set_iid(c + 1);
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) cs->add_frame_ids(*it);
    }
    return callstack_iid_[c];
  }

  void Sample(uint32_t i) {
    const auto& s = t_.cpu_samples;
    const model::Track& trk = t_.tracks[s.track[i]];
    auto* ps = pkt_.mutable_perf_sample();
    if (s.cpu[i] >= 0) ps->set_cpu(static_cast<uint32_t>(s.cpu[i]));
    ps->set_pid(static_cast<uint32_t>(Pid(trk.process)));
    ps->set_tid(static_cast<uint32_t>(trk.tid));
    pb::Profiling::CpuMode mode = pb::Profiling::MODE_USER;
    if (s.callsite[i] >= 0) {
      auto c = static_cast<uint32_t>(s.callsite[i]);
      ps->set_callstack_iid(CallstackIid(c));
      if (t_.frames.kind[t_.callsites.frame[c]] == model::FrameKind::kKernel) mode = pb::Profiling::MODE_KERNEL;
    }
    ps->set_cpu_mode(mode);
  }

  void Sched(const SchedEvent& e) {
    auto& b = bundles_[e.cpu];
    auto* ev = b.add_event();
    ev->set_timestamp(static_cast<uint64_t>(e.ts));
    if (e.waking) {
      ev->set_pid(static_cast<uint32_t>(Tid(e.waker)));
      auto* w = ev->mutable_sched_waking();
      w->set_comm(Comm(e.next));
      w->set_pid(Tid(e.next));
      w->set_prio(kPrio);
      w->set_success(1);
      w->set_target_cpu(e.cpu);
    } else {
      ev->set_pid(static_cast<uint32_t>(Tid(e.prev)));
      auto* sw = ev->mutable_sched_switch();
      sw->set_prev_comm(Comm(e.prev));
      sw->set_prev_pid(Tid(e.prev));
      sw->set_prev_prio(kPrio);
      sw->set_prev_state(e.prev < 0 ? kStateRunnable : e.prev_state);
      sw->set_next_comm(Comm(e.next));
      sw->set_next_pid(Tid(e.next));
      sw->set_next_prio(kPrio);
    }
    if (static_cast<size_t>(b.event_size()) >= kBundleEvents) FlushBundle(e.cpu);
  }

  void FlushBundle(int32_t cpu) {
    auto& b = bundles_[cpu];
    if (b.event_size() == 0) return;
    pb::TracePacket p;
    b.set_cpu(static_cast<uint32_t>(cpu));
    p.mutable_ftrace_events()->Swap(&b);
    Emit(p);
    b.Clear();
  }

  void WriteRecord(const Rec& r) {
    if (r.type == kSched) {
      Sched(sched_[r.a]);
      return;
    }
    pkt_.Clear();
    pkt_.set_timestamp(static_cast<uint64_t>(r.ts));
    if (r.type == kSample) {
      Sample(r.a);
      Emit(pkt_);
      return;
    }
    auto* e = pkt_.mutable_track_event();
    switch (r.type) {
      case kBegin: Begin(e, r.a, v_.timeline[r.a][r.b]); break;
      case kEnd:
        e->set_type(pb::TrackEvent::TYPE_SLICE_END);
        e->set_track_uuid(TrackUuid(r.a, v_.timeline[r.a][r.b].lane));
        break;
      case kInstant:
        e->set_type(pb::TrackEvent::TYPE_INSTANT);
        e->set_track_uuid(TrackUuid(t_.instants.track[r.a], 0));
        e->set_name_iid(Iid(t_.instants.name[r.a], pkt_));
        break;
      case kCounter:
        e->set_type(pb::TrackEvent::TYPE_COUNTER);
        e->set_track_uuid(kCounterUuidBase + t_.counters.series[r.a]);
        e->set_double_counter_value(t_.counters.value[r.a]);
        break;
      case kMemory: {
        uint64_t key = MemoryKey(r.a);
        auto& total = memory_total_[key];
        total += t_.memory.bytes[r.a];
        int64_t v = t_.memory.total_allocated[r.a] >= 0 ? t_.memory.total_allocated[r.a] : total;
        e->set_type(pb::TrackEvent::TYPE_COUNTER);
        e->set_track_uuid(kMemoryUuidBase + key);
        e->set_counter_value(v);
        break;
      }
      default: break;
    }
    Emit(pkt_);
  }

  const model::Trace& t_;
  const ExportView& v_;
  FileOutputStream fos_;
  CodedOutputStream out_;
  pb::TracePacket pkt_;
  bool first_ = true;
  std::vector<uint64_t> iid_, fn_iid_, mapping_iid_, frame_iid_, callstack_iid_;
  uint64_t next_iid_ = 0, next_fn_iid_ = 0, next_mapping_iid_ = 0;
  std::vector<std::pair<uint32_t, uint64_t>> out_flows_, in_flows_;
  std::vector<uint64_t> memory_tracks_;
  std::unordered_map<uint64_t, int64_t> memory_total_;
  std::vector<SchedEvent> sched_;
  std::map<int32_t, pb::FtraceEventBundle> bundles_;
};

}  // namespace

StatusOr<ExportStats> ExportPerfetto(const model::Trace& t, const std::string& path) {
  ExportView view = BuildView(t);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoErr(errno, "create {}", tmp);
  ExportStats st;
  Status s;
  {
    Writer w(t, view, fd);
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

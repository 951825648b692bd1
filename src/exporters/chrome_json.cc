// Chrome trace JSON writer: the Trace Event Format's object form, as PyTorch's
// profiler writes it, so that chrome://tracing, Perfetto's JSON importer,
// speedscope, HTA and strata itself read it.
//   traceEvents  M  process and thread names (every lane of every track)
//                X  slices (categories as Kineto names them; steps carry
//                   args.step, modules args.kind = "module"), system calls
//                   (cat "syscall") on their thread, thread states (cat
//                   "thread_state", named by the state) on a lane of their own
//                i  instants
//                C  counters (cat "counter"; a thread's own series has its tid
//                   as id) and memory levels (cat "memory")
//                s/f flows (cat "launch", "backward" or "flow"), bound to the
//                   enclosing slice at each end
//   stackFrames  every callsite of the CPU samples' stacks (name: function,
//                category: module, parent: the calling frame)
//   samples      the CPU samples (cpu, pid, tid, ts, sf, weight)
//   otherData    source, command, exit status, lost events, not recorded
// Device queues become threads of a "GPU N" process.
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "base/error.h"
#include "exporters/export.h"
#include "exporters/view.h"

namespace strata::exporters {
namespace {

constexpr int64_t kDevicePidBase = 1 << 30;
// A lane of a track is a thread of its own: tid + lane * kLaneTidStride; a
// thread's states go to the "thread" tid + kStateTidBase. Readers keep tids in
// 32 bits (Perfetto's JSON importer reads a larger one as 0) and Linux tids
// stay below 2^22, so lanes are 2^24 apart and the states take the last slot.
constexpr int64_t kLaneTidStride = int64_t{1} << 24;
constexpr int64_t kStateTidBase = int64_t{255} << 24;
// A track whose id is no Linux tid (a device queue: context << 32 | stream) gets
// one above every tid and below the first lane; its real id stays in the args.
constexpr int64_t kMaxLinuxTid = int64_t{1} << 22;

// The categories PyTorch's profiler writes, so that tools that read its
// traces (strata, HTA, TensorBoard) read this file the same way.
const char* KinetoCategory(model::SliceKind k) {
  switch (k) {
    case model::SliceKind::kSpan:
    case model::SliceKind::kStep: return "user_annotation";
    case model::SliceKind::kOp: return "cpu_op";
    case model::SliceKind::kModule:
    case model::SliceKind::kPython: return "python_function";
    case model::SliceKind::kRuntime: return "cuda_runtime";
    case model::SliceKind::kDriver: return "cuda_driver";
    case model::SliceKind::kKernel: return "kernel";
    case model::SliceKind::kMemcpy: return "gpu_memcpy";
    case model::SliceKind::kMemset: return "gpu_memset";
    case model::SliceKind::kDeviceSync: return "cuda_sync";
    case model::SliceKind::kAnnotation: return "gpu_user_annotation";
    case model::SliceKind::kOther: return "other";
  }
  return "other";
}

class JsonOut {
 public:
  explicit JsonOut(FILE* f) : f_(f) { buf_.reserve(1 << 20); }
  ~JsonOut() { Flush(); }
  JsonOut& Raw(std::string_view s) {
    buf_.append(s);
    if (buf_.size() > (1 << 20)) Flush();
    return *this;
  }
  JsonOut& Str(std::string_view s) {
    buf_.push_back('"');
    for (char c : s) {
      switch (c) {
        case '"': buf_ += "\\\""; break;
        case '\\': buf_ += "\\\\"; break;
        case '\n': buf_ += "\\n"; break;
        case '\t': buf_ += "\\t"; break;
        case '\r': buf_ += "\\r"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) buf_ += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
          else buf_.push_back(c);
      }
    }
    buf_.push_back('"');
    return *this;
  }
  // Nanoseconds as microseconds with three decimals, exactly.
  JsonOut& Us(int64_t ns) {
    if (ns < 0) {
      buf_.push_back('-');
      ns = -ns;
    }
    fmt::format_to(std::back_inserter(buf_), "{}.{:03}", ns / 1000, ns % 1000);
    return *this;
  }
  JsonOut& Int(int64_t v) {
    fmt::format_to(std::back_inserter(buf_), "{}", v);
    return *this;
  }
  JsonOut& Num(double v) {
    if (std::isfinite(v)) fmt::format_to(std::back_inserter(buf_), "{}", v);
    else buf_ += "null";
    return *this;
  }
  void Flush() {
    if (!buf_.empty()) {
      if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) error_ = true;
      buf_.clear();
    }
  }
  bool error() const { return error_; }

 private:
  FILE* f_;
  std::string buf_;
  bool error_ = false;
};

class Writer {
 public:
  Writer(const model::Trace& t, const ExportView& v, JsonOut& o) : t_(t), v_(v), o_(o) {}

  void Run(ExportStats& st) {
    o_.Raw("{\"displayTimeUnit\": \"ns\", \"otherData\": ");
    OtherData(st);
    o_.Raw(", \"traceEvents\": [\n");
    Names();
    Timelines(st);
    ThreadStates(st);
    for (uint32_t i = 0; i < t_.instants.size(); ++i) {
      uint32_t k = t_.instants.track[i];
      Sep().Raw("{\"ph\": \"i\", \"s\": \"t\", \"name\": ").Str(t_.strings.Get(t_.instants.name[i]));
      o_.Raw(", \"pid\": ").Int(Pid(t_.tracks[k].process)).Raw(", \"tid\": ").Int(BaseTid(k));
      o_.Raw(", \"ts\": ").Us(t_.instants.ts[i]).Raw("}");
    }
    st.instants = t_.instants.size();
    Counters(st);
    Flows(st);
    o_.Raw("\n]");
    Samples(st);
    o_.Raw("}\n");
  }

 private:
  int64_t Pid(uint32_t process) const {
    if (process >= t_.processes.size()) return 0;
    const model::Process& p = t_.processes[process];
    return p.is_device ? kDevicePidBase + p.device : p.pid;
  }
  int64_t BaseTid(uint32_t track) const {
    int64_t tid = t_.tracks[track].tid;
    return tid >= 0 && tid < kMaxLinuxTid ? tid : kMaxLinuxTid + track;
  }
  int64_t Tid(uint32_t track, uint32_t lane) const { return BaseTid(track) + int64_t{lane} * kLaneTidStride; }
  JsonOut& Sep() {
    o_.Raw(first_ ? "" : ",\n");
    first_ = false;
    return o_;
  }
  bool Exported(uint32_t k) const {
    const model::Track& trk = t_.tracks[k];
    return !v_.timeline[k].empty() || (trk.kind == model::TrackKind::kThread && trk.process < t_.processes.size());
  }

  void OtherData(ExportStats& st) {
    o_.Raw("{\"source\": ").Str(t_.source);
    if (!v_.command.empty()) o_.Raw(", \"command\": ").Str(v_.command);
    if (!v_.exit_status.empty()) o_.Raw(", \"exit_status\": ").Str(v_.exit_status);
    o_.Raw(", \"events_lost\": ").Int(static_cast<int64_t>(t_.events_lost)).Raw(", \"not_recorded\": [");
    for (size_t i = 0; i < v_.not_recorded.size(); ++i) {
      const NotRecorded& n = v_.not_recorded[i];
      o_.Raw(i ? ", " : "").Raw("{\"collector\": ").Str(n.collector).Raw(", \"process\": ").Str(n.process);
      o_.Raw(", \"state\": ").Str(n.state).Raw(", \"detail\": ").Str(n.detail).Raw("}");
    }
    o_.Raw("]}");
    st.not_recorded = v_.not_recorded.size();
  }

  void Names() {
    has_states_.assign(t_.tracks.size(), false);
    for (uint32_t k : t_.thread_states.track) has_states_[k] = true;
    for (uint32_t i = 0; i < t_.processes.size(); ++i) {
      Sep().Raw("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": ").Int(Pid(i)).Raw(", \"tid\": 0, \"args\": {\"name\": ");
      o_.Str(t_.strings.Get(t_.processes[i].name)).Raw("}}");
    }
    for (uint32_t k = 0; k < t_.tracks.size(); ++k) {
      if (!Exported(k)) continue;
      const model::Track& trk = t_.tracks[k];
      std::string name(t_.strings.Get(trk.name));
      if (name.empty()) name = (trk.kind == model::TrackKind::kDeviceQueue ? "stream " : "thread ") + std::to_string(trk.tid);
      for (uint32_t lane = 0; lane < v_.lanes[k]; ++lane) {
        Sep().Raw("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": ").Int(Pid(trk.process)).Raw(", \"tid\": ").Int(Tid(k, lane));
        o_.Raw(", \"args\": {\"name\": ").Str(lane ? name + " (overlapping #" + std::to_string(lane) + ")" : name).Raw("}}");
      }
      if (has_states_[k]) {
        Sep().Raw("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": ").Int(Pid(trk.process)).Raw(", \"tid\": ").Int(BaseTid(k) + kStateTidBase);
        o_.Raw(", \"args\": {\"name\": ").Str(name + " (state)").Raw("}}");
      }
    }
  }

  void Args(uint32_t i) {
    bool afirst = true;
    auto arg = [&](std::string_view key) -> JsonOut& {
      o_.Raw(afirst ? "" : ", ").Str(key).Raw(": ");
      afirst = false;
      return o_;
    };
    int32_t r = t_.device_row_of_slice[i];
    const model::Track& trk = t_.tracks[t_.slices.track[i]];
    if (r == model::kNone && trk.kind == model::TrackKind::kDeviceQueue) {
      arg("device").Int(trk.device);  // device ranges (annotations) stay on their queue
      arg("stream").Int(trk.tid);
    }
    if (r != model::kNone) {
      size_t row = static_cast<size_t>(r);
      arg("device").Int(t_.device.device[row]);
      arg("stream").Int(t_.device.stream[row]);
      if (t_.device.correlation[row]) arg("correlation").Int(static_cast<int64_t>(t_.device.correlation[row]));
      if (t_.device.bytes[row]) arg("bytes").Int(static_cast<int64_t>(t_.device.bytes[row]));
      if (t_.device.copy_kind[row] != model::CopyKind::kUnknown) arg("copy kind").Str(model::CopyKindName(t_.device.copy_kind[row]));
      if (t_.device.pinned[row] >= 0) arg("pinned").Int(t_.device.pinned[row]);
      const auto& g = t_.device.grid[row];
      const auto& b = t_.device.block[row];
      if (g[0]) {
        arg("grid").Raw(fmt::format("[{}, {}, {}]", g[0], g[1], g[2]));
        arg("block").Raw(fmt::format("[{}, {}, {}]", b[0], b[1], b[2]));
      }
    } else if (t_.slices.kind[i] == model::SliceKind::kStep) {
      arg("step").Int(static_cast<int64_t>(t_.slices.arg[i]));
    } else if (t_.slices.arg[i]) {
      arg("arg").Int(static_cast<int64_t>(t_.slices.arg[i]));
    }
    // Kineto names modules and Python functions alike: say which.
    if (t_.slices.kind[i] == model::SliceKind::kModule) arg("kind").Raw("\"module\"");
    auto it = std::lower_bound(t_.args.slice.begin(), t_.args.slice.end(), i);
    for (size_t a = static_cast<size_t>(it - t_.args.slice.begin()); a < t_.args.size() && t_.args.slice[a] == i; ++a) {
      arg(t_.strings.Get(t_.args.key[a]));
      if (!std::isnan(t_.args.num[a])) o_.Num(t_.args.num[a]);
      else o_.Str(t_.strings.Get(t_.args.str[a]));
    }
  }

  void Timelines(ExportStats& st) {
    for (uint32_t k = 0; k < v_.timeline.size(); ++k) {
      int64_t pid = Pid(t_.tracks[k].process);
      for (const TimelineItem& it : v_.timeline[k]) {
        Sep();
        if (it.syscall) {
          o_.Raw("{\"ph\": \"X\", \"cat\": \"syscall\", \"name\": ").Str(t_.strings.Get(t_.syscalls.name[it.row]));
          o_.Raw(", \"pid\": ").Int(pid).Raw(", \"tid\": ").Int(Tid(k, it.lane)).Raw(", \"ts\": ").Us(it.ts);
          o_.Raw(", \"dur\": ").Us(it.dur).Raw(", \"args\": {");
          if (t_.syscalls.returned[it.row]) o_.Raw("\"ret\": ").Int(t_.syscalls.ret[it.row]);
          o_.Raw("}}");
          ++st.syscalls;
          continue;
        }
        o_.Raw("{\"ph\": \"X\", \"cat\": \"").Raw(KinetoCategory(t_.slices.kind[it.row])).Raw("\", \"name\": ");
        o_.Str(t_.strings.Get(t_.slices.name[it.row])).Raw(", \"pid\": ").Int(pid).Raw(", \"tid\": ").Int(Tid(k, it.lane));
        o_.Raw(", \"ts\": ").Us(it.ts).Raw(", \"dur\": ").Us(it.dur).Raw(", \"args\": {");
        Args(it.row);
        o_.Raw("}}");
        ++st.slices;
      }
      st.extra_lanes += v_.lanes[k] - 1;
    }
  }

  void ThreadStates(ExportStats& st) {
    const auto& s = t_.thread_states;
    for (size_t r = 0; r < s.size(); ++r) {
      const model::Track& trk = t_.tracks[s.track[r]];
      int64_t tid = BaseTid(s.track[r]);
      Sep().Raw("{\"ph\": \"X\", \"cat\": \"thread_state\", \"name\": \"").Raw(model::ThreadStateName(s.state[r]));
      o_.Raw("\", \"pid\": ").Int(Pid(trk.process)).Raw(", \"tid\": ").Int(tid + kStateTidBase);
      o_.Raw(", \"ts\": ").Us(s.ts[r]).Raw(", \"dur\": ").Us(s.dur[r]).Raw(", \"args\": {\"cpu\": ").Int(s.cpu[r]);
      if (s.syscall[r] >= 0) o_.Raw(", \"syscall\": ").Str(t_.strings.Get(t_.syscalls.name[static_cast<size_t>(s.syscall[r])]));
      o_.Raw("}}");
      st.context_switches += s.state[r] == model::ThreadState::kRunning;
    }
    st.thread_states = s.size();
  }

  void Counters(ExportStats& st) {
    for (uint32_t i = 0; i < t_.counters.size(); ++i) {
      const model::CounterSeries& cs = t_.counter_series[t_.counters.series[i]];
      Sep().Raw("{\"ph\": \"C\", \"cat\": \"counter\", \"name\": ").Str(t_.strings.Get(cs.name)).Raw(", \"pid\": ").Int(Pid(cs.process));
      if (cs.track >= 0) o_.Raw(", \"id\": ").Int(t_.tracks[static_cast<size_t>(cs.track)].tid);
      o_.Raw(", \"ts\": ").Us(t_.counters.ts[i]).Raw(", \"args\": {\"value\": ").Num(t_.counters.value[i]).Raw("}}");
    }
    st.counter_samples = t_.counters.size();
    std::unordered_map<uint64_t, int64_t> totals;
    for (uint32_t i = 0; i < t_.memory.size(); ++i) {
      uint32_t k = t_.memory.track[i];
      int32_t dev = t_.memory.device[i];
      int64_t& total = totals[(uint64_t{k} << 20) + static_cast<uint64_t>(dev + 1)];
      total += t_.memory.bytes[i];
      int64_t v = t_.memory.total_allocated[i] >= 0 ? t_.memory.total_allocated[i] : total;
      Sep().Raw("{\"ph\": \"C\", \"cat\": \"memory\", \"name\": ").Str(model::MemoryCounterName(dev, t_.memory.layer[i]));
      o_.Raw(", \"pid\": ").Int(Pid(t_.tracks[k].process)).Raw(", \"ts\": ").Us(t_.memory.ts[i]).Raw(", \"args\": {\"bytes\": ").Int(v).Raw("}}");
    }
    st.memory_events = t_.memory.size();
  }

  // Flows: "s" inside the source slice, "f" binding to the enclosing target slice.
  void Flows(ExportStats& st) {
    std::vector<uint32_t> lane(t_.slices.size(), 0);
    for (const auto& items : v_.timeline)
      for (const TimelineItem& it : items)
        if (!it.syscall) lane[it.row] = it.lane;
    for (size_t f = 0; f < v_.flows.size(); ++f) {
      const char* cat = FlowKindName(v_.flows[f].kind);
      for (int end = 0; end < 2; ++end) {
        uint32_t s = end ? v_.flows[f].to : v_.flows[f].from;
        uint32_t k = t_.slices.track[s];
        Sep().Raw(end ? "{\"ph\": \"f\", \"bp\": \"e\"" : "{\"ph\": \"s\"").Raw(", \"cat\": \"").Raw(cat).Raw("\", \"name\": \"").Raw(cat);
        o_.Raw("\", \"id\": ").Int(static_cast<int64_t>(f + 1)).Raw(", \"pid\": ").Int(Pid(t_.tracks[k].process));
        o_.Raw(", \"tid\": ").Int(Tid(k, lane[s])).Raw(", \"ts\": ").Us(t_.slices.ts[s]).Raw("}");
      }
    }
    st.flows = v_.flows.size();
  }

  void Samples(ExportStats& st) {
    const auto& cs = t_.callsites;
    o_.Raw(",\n\"stackFrames\": {");
    for (size_t c = 0; c < cs.size(); ++c) {
      uint32_t f = cs.frame[c];
      std::string name(t_.strings.Get(t_.frames.function[f]));
      if (t_.frames.kind[f] == model::FrameKind::kPython && t_.frames.line[f]) name += ":" + std::to_string(t_.frames.line[f]);
      o_.Raw(c ? ",\n" : "\n").Raw("\"").Int(static_cast<int64_t>(c + 1)).Raw("\": {\"name\": ").Str(name);
      o_.Raw(", \"category\": ").Str(t_.strings.Get(t_.frames.module[f]));
      if (cs.parent[c] >= 0) o_.Raw(", \"parent\": \"").Int(cs.parent[c] + 1).Raw("\"");
      o_.Raw("}");
    }
    o_.Raw("},\n\"samples\": [");
    const auto& s = t_.cpu_samples;
    for (size_t i = 0; i < s.size(); ++i) {
      const model::Track& trk = t_.tracks[s.track[i]];
      o_.Raw(i ? ",\n" : "\n").Raw("{\"cpu\": ").Int(s.cpu[i]).Raw(", \"pid\": ").Int(Pid(trk.process));
      o_.Raw(", \"tid\": ").Int(BaseTid(s.track[i])).Raw(", \"ts\": ").Us(s.ts[i]).Raw(", \"name\": \"cpu-clock\", \"weight\": 1");
      if (s.callsite[i] >= 0) o_.Raw(", \"sf\": \"").Int(s.callsite[i] + 1).Raw("\"");
      o_.Raw("}");
    }
    o_.Raw("]");
    st.samples = s.size();
  }

  const model::Trace& t_;
  const ExportView& v_;
  JsonOut& o_;
  bool first_ = true;
  std::vector<bool> has_states_;
};

}  // namespace

StatusOr<ExportStats> ExportChromeJson(const model::Trace& t, const std::string& path) {
  ExportView view = BuildView(t);
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return ErrnoErr(errno, "create {}", tmp);
  ExportStats st;
  bool write_error = false;
  {
    JsonOut o(f);
    Writer(t, view, o).Run(st);
    o.Flush();
    write_error = o.error();
  }
  if (std::fclose(f) != 0) write_error = true;
  if (write_error) {
    std::remove(tmp.c_str());
    return Err(StatusCode::kIoError, "{}: write failed", path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoErr(errno, "rename {} to {}", tmp, path);
    std::remove(tmp.c_str());
    return s;
  }
  return st;
}

}  // namespace strata::exporters

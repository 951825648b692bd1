// Chrome trace JSON writer (the format PyTorch's profiler writes): X events
// per slice, i instants, C counters, s/f flows from launches to device work,
// M names. Device queues become threads of a "GPU N" process.
#include <cmath>
#include <cstdio>
#include <memory>
#include <unordered_map>

#include "base/error.h"
#include "exporters/export.h"

namespace strata::exporters {
namespace {

constexpr int64_t kDevicePidBase = 1 << 30;

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
constexpr int64_t kLaneTidStride = 1000000000;

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

}  // namespace

StatusOr<ExportStats> ExportChromeJson(const model::Trace& t, const std::string& path) {
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return ErrnoErr(errno, "create {}", tmp);
  ExportStats st;
  bool write_error = false;
  {
    JsonOut o(f);
    auto pid = [&t](uint32_t process) {
      const model::Process& p = t.processes[process];
      return p.is_device ? kDevicePidBase + p.device : p.pid;
    };
    std::vector<uint32_t> lanes(t.slices.size(), 0);
    std::vector<uint32_t> nlanes(t.tracks.size(), 1);
    for (uint32_t k = 0; k < t.track_slices.size(); ++k)
      nlanes[k] = AssignLanes(t, t.track_slices[k].first, t.track_slices[k].second, lanes);
    auto tid = [&t](uint32_t track, uint32_t lane) { return t.tracks[track].tid + int64_t{lane} * kLaneTidStride; };

    o.Raw("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"source\": ").Str(t.source).Raw("}, \"traceEvents\": [\n");
    bool first = true;
    auto sep = [&]() {
      o.Raw(first ? "" : ",\n");
      first = false;
    };
    for (uint32_t i = 0; i < t.processes.size(); ++i) {
      sep();
      o.Raw("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": ").Int(pid(i)).Raw(", \"tid\": 0, \"args\": {\"name\": ");
      o.Str(t.strings.Get(t.processes[i].name)).Raw("}}");
    }
    for (uint32_t k = 0; k < t.tracks.size(); ++k) {
      const model::Track& trk = t.tracks[k];
      for (uint32_t lane = 0; lane < nlanes[k]; ++lane) {
        std::string name(t.strings.Get(trk.name));
        if (name.empty()) name = (trk.kind == model::TrackKind::kDeviceQueue ? "stream " : "thread ") + std::to_string(trk.tid);
        if (lane) name += " (overlapping #" + std::to_string(lane) + ")";
        st.extra_lanes += lane ? 1 : 0;
        sep();
        o.Raw("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": ").Int(pid(trk.process)).Raw(", \"tid\": ").Int(tid(k, lane));
        o.Raw(", \"args\": {\"name\": ").Str(name).Raw("}}");
      }
    }
    for (uint32_t i = 0; i < t.slices.size(); ++i) {
      uint32_t k = t.slices.track[i];
      sep();
      o.Raw("{\"ph\": \"X\", \"cat\": \"").Raw(KinetoCategory(t.slices.kind[i])).Raw("\", \"name\": ");
      o.Str(t.strings.Get(t.slices.name[i])).Raw(", \"pid\": ").Int(pid(t.tracks[k].process)).Raw(", \"tid\": ").Int(tid(k, lanes[i]));
      o.Raw(", \"ts\": ").Us(t.slices.ts[i]).Raw(", \"dur\": ").Us(t.slices.dur[i]).Raw(", \"args\": {");
      bool afirst = true;
      auto arg = [&](std::string_view key) -> JsonOut& {
        o.Raw(afirst ? "" : ", ").Str(key).Raw(": ");
        afirst = false;
        return o;
      };
      int32_t r = t.device_row_of_slice[i];
      const model::Track& trk = t.tracks[k];
      if (r == model::kNone && trk.kind == model::TrackKind::kDeviceQueue) {
        arg("device").Int(trk.device);  // device ranges (annotations) stay on their queue
        arg("stream").Int(trk.tid);
      }
      if (r != model::kNone) {
        size_t row = static_cast<size_t>(r);
        arg("device").Int(t.device.device[row]);
        arg("stream").Int(t.device.stream[row]);
        if (t.device.correlation[row]) arg("correlation").Int(static_cast<int64_t>(t.device.correlation[row]));
        if (t.device.bytes[row]) arg("bytes").Int(static_cast<int64_t>(t.device.bytes[row]));
        if (t.device.copy_kind[row] != model::CopyKind::kUnknown) arg("copy kind").Str(model::CopyKindName(t.device.copy_kind[row]));
        if (t.device.pinned[row] >= 0) arg("pinned").Int(t.device.pinned[row]);
        const auto& g = t.device.grid[row];
        const auto& b = t.device.block[row];
        if (g[0]) {
          arg("grid").Raw(fmt::format("[{}, {}, {}]", g[0], g[1], g[2]));
          arg("block").Raw(fmt::format("[{}, {}, {}]", b[0], b[1], b[2]));
        }
      } else if (t.slices.arg[i]) {
        arg(t.slices.kind[i] == model::SliceKind::kStep ? "step" : "arg").Int(static_cast<int64_t>(t.slices.arg[i]));
      }
      auto it = std::lower_bound(t.args.slice.begin(), t.args.slice.end(), i);
      for (size_t a = static_cast<size_t>(it - t.args.slice.begin()); a < t.args.size() && t.args.slice[a] == i; ++a) {
        arg(t.strings.Get(t.args.key[a]));
        if (!std::isnan(t.args.num[a])) o.Num(t.args.num[a]);
        else o.Str(t.strings.Get(t.args.str[a]));
      }
      o.Raw("}}");
    }
    st.slices = t.slices.size();
    for (uint32_t i = 0; i < t.instants.size(); ++i) {
      uint32_t k = t.instants.track[i];
      sep();
      o.Raw("{\"ph\": \"i\", \"s\": \"t\", \"name\": ").Str(t.strings.Get(t.instants.name[i]));
      o.Raw(", \"pid\": ").Int(pid(t.tracks[k].process)).Raw(", \"tid\": ").Int(t.tracks[k].tid).Raw(", \"ts\": ").Us(t.instants.ts[i]).Raw("}");
    }
    st.instants = t.instants.size();
    for (uint32_t i = 0; i < t.counters.size(); ++i) {
      const model::CounterSeries& cs = t.counter_series[t.counters.series[i]];
      sep();
      o.Raw("{\"ph\": \"C\", \"name\": ").Str(t.strings.Get(cs.name)).Raw(", \"pid\": ").Int(pid(cs.process));
      o.Raw(", \"ts\": ").Us(t.counters.ts[i]).Raw(", \"args\": {\"value\": ").Num(t.counters.value[i]).Raw("}}");
    }
    st.counter_samples = t.counters.size();
    std::unordered_map<uint64_t, int64_t> totals;
    for (uint32_t i = 0; i < t.memory.size(); ++i) {
      uint32_t k = t.memory.track[i];
      int32_t dev = t.memory.device[i];
      int64_t& total = totals[(uint64_t{k} << 20) + static_cast<uint64_t>(dev + 1)];
      total += t.memory.bytes[i];
      int64_t v = t.memory.total_allocated[i] >= 0 ? t.memory.total_allocated[i] : total;
      sep();
      o.Raw("{\"ph\": \"C\", \"name\": ").Str(model::MemoryCounterName(dev, t.memory.layer[i]));
      o.Raw(", \"pid\": ").Int(pid(t.tracks[k].process)).Raw(", \"ts\": ").Us(t.memory.ts[i]).Raw(", \"args\": {\"bytes\": ").Int(v).Raw("}}");
    }
    st.memory_events = t.memory.size();
    // Flows: "s" inside the source slice, "f" binding to the enclosing target slice.
    uint64_t flow_id = 0;
    auto flow = [&](uint32_t from, uint32_t to, const char* cat) {
      ++flow_id;
      for (int end = 0; end < 2; ++end) {
        uint32_t s = end ? to : from;
        uint32_t k = t.slices.track[s];
        sep();
        o.Raw(end ? "{\"ph\": \"f\", \"bp\": \"e\"" : "{\"ph\": \"s\"").Raw(", \"cat\": \"").Raw(cat).Raw("\", \"name\": \"").Raw(cat);
        o.Raw("\", \"id\": ").Int(static_cast<int64_t>(flow_id)).Raw(", \"pid\": ").Int(pid(t.tracks[k].process));
        o.Raw(", \"tid\": ").Int(tid(k, lanes[s])).Raw(", \"ts\": ").Us(t.slices.ts[s]).Raw("}");
      }
    };
    for (size_t r = 0; r < t.device.size(); ++r)
      if (t.device.launch[r] != model::kNone) flow(static_cast<uint32_t>(t.device.launch[r]), t.device.slice[r], "launch");
    for (size_t f2 = 0; f2 < t.flows.size(); ++f2)
      if (t.flows.from[f2] >= 0 && t.flows.to[f2] >= 0)
        flow(static_cast<uint32_t>(t.flows.from[f2]), static_cast<uint32_t>(t.flows.to[f2]), "flow");
    st.flows = flow_id;
    o.Raw("\n]}\n");
    o.Flush();
    write_error = o.error();
  }
  if (std::fclose(f) != 0) write_error = true;
  if (write_error) {
    std::remove(tmp.c_str());
    return Err(StatusCode::kIoError, "{}: write failed", path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoErr(errno, "rename {} to {}", tmp, path);
  return st;
}

}  // namespace strata::exporters

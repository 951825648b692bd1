// XSpace -> model (xplane.h says what goes where). The bytes are read where
// they lie (a mapped file) by xplane_wire.h: each plane's metadata decoded
// first, then its lines' events one at a time straight into the model, so that
// nothing per event is kept but what the model stores.
#include <fmt/format.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <unordered_map>

#include "base/error.h"
#include "importers/common/launch_index.h"
#include "importers/common/process_tracker.h"
#include "importers/kineto/caches.h"
#include "importers/common/op_collectives.h"
#include "importers/xplane/xplane_arg_strings.h"
#include "importers/xplane/xplane_build.h"
#include "importers/xplane/xplane_names.h"
#include "importers/xplane/xplane_wire.h"

namespace strata::importers::xplane {
namespace {

using model::SliceKind;
using model::StringId;
using StatKind = Stat::Kind;

// Times beyond +-2^61 ns (73 years) are malformed: starts, ends and their
// differences must not overflow int64 downstream (the Kineto importer's bound).
constexpr int64_t kMaxNs = int64_t{1} << 61;
constexpr int64_t kMaxPs = std::numeric_limits<int64_t>::max() / 2;

// Stats the importer reads into columns or drops; the others become args.
enum class Role : uint8_t {
  kArg,
  kCorrelation,
  kKernelDetails,
  kMemcpyDetails,
  kGroupId,
  kStepName,
  kAllocatorName,
  kAllocationBytes,
  kBytesAllocated,
  kBytesReserved,
  kAddr,
  kDeviceOrdinal,
  kHloOp,
  kDrop,  // internal bookkeeping (context ids, producer/consumer links)
};

Role RoleOf(std::string_view n) {
  static const std::unordered_map<std::string_view, Role> roles = {
      {"correlation_id", Role::kCorrelation}, {"kernel_details", Role::kKernelDetails},
      {"memcpy_details", Role::kMemcpyDetails}, {"group_id", Role::kGroupId},
      {"step_name", Role::kStepName},         {"allocator_name", Role::kAllocatorName},
      {"allocation_bytes", Role::kAllocationBytes}, {"bytes_allocated", Role::kBytesAllocated},
      {"bytes_reserved", Role::kBytesReserved}, {"addr", Role::kAddr},
      {"device_ordinal", Role::kDeviceOrdinal}, {"hlo_op", Role::kHloOp},
      {"context_id", Role::kDrop},            {"_ct", Role::kDrop},
      {"_c", Role::kDrop},                    {"_pt", Role::kDrop},
      {"_p", Role::kDrop},                    {"_r", Role::kDrop},
  };
  auto it = roles.find(n);
  return it == roles.end() ? Role::kArg : it->second;
}

// One stat's value as the importer uses it.
struct Value {
  bool is_str = false;
  std::string_view str;
  void* ref = nullptr;  // a ref value: the StatInfo of the string (its interned id is cached there)
  StringId sid = 0;     // the string's id when already interned
  uint64_t hash = 0;    // else its ArgStrings hash
  double num = 0;
  int64_t i = 0;  // integer stats exactly (ids, bytes, addresses)
  bool bytes = false;
};

// The stats of one event (its metadata's first, then its own, which win).
struct EventStats {
  uint64_t correlation = 0;
  bool has_kernel_details = false, has_memcpy_details = false;
  std::string_view kernel_details, memcpy_details;
  int64_t group = -1;
  std::string_view step_name;
  std::string_view allocator;
  int64_t allocation_bytes = 0, bytes_allocated = -1, bytes_reserved = -1;
  uint64_t addr = 0;
  int64_t device_ordinal = -1;  // XLA's CPU ops carry the device they run for
  bool hlo_op = false;          // and their instruction (hlo_op) and module (hlo_module, an arg)
  struct ArgRef {
    StringId key;
    Value v;
  };
  // The args: the first `nargs` rows of a table reused from event to event.
  std::vector<ArgRef> arg_rows;
  size_t nargs = 0;
  void AddArg(StringId key, const Value& v) {
    if (nargs == arg_rows.size()) arg_rows.emplace_back();
    arg_rows[nargs++] = {key, v};
  }
  std::span<const ArgRef> args() const { return {arg_rows.data(), nargs}; }
  void Clear() {
    std::vector<ArgRef> keep = std::move(arg_rows);
    *this = EventStats();
    arg_rows = std::move(keep);
  }
};

struct StepEvent {
  int64_t group = -1;
  std::string step_name;
};

class Builder {
 public:
  // merge: add to a trace being loaded (XSpaceMerge) instead of building one.
  Builder(model::Trace& t, const XSpaceMerge* merge) : t_(t), merge_(merge), arg_strings_(t.strings) {
    if (!merge_) t_.source = "xplane";
  }

  // Malformed bytes: what = the file (or "XSpace"), as the caller names it.
  Status Build(std::string_view bytes, const std::string& input) {
    what_ = &input;
    Space space;
    if (!ReadSpace(bytes, &space)) return WireError();
    std::vector<Plane> planes(space.planes.size());
    for (size_t i = 0; i < planes.size(); ++i)
      if (!ReadPlane(space.planes[i], &planes[i])) return WireError();
    // A merge changes the trace as it goes: every event is read once first.
    if (merge_)
      for (const auto& p : planes)
        if (uint64_t n; !Skim(p, &n)) return WireError();
    Reserve(planes, bytes.size());
    arg_strings_.SizeFor(bytes.size());
    if (!merge_ && !space.hostnames.empty()) t_.hostname = space.hostnames[0];
    for (auto e : space.errors) t_.warnings.push_back(fmt::format("profiler error: {}", e));
    for (auto w : space.warnings) t_.warnings.push_back(fmt::format("profiler warning: {}", w));
    // Recent profilers write times relative to the session's start, which the
    // Task Environment plane gives in wall-clock nanoseconds.
    int64_t start = 0;
    for (const auto& p : planes)
      if (p.name == "Task Environment")
        for (const auto& st : p.stats) {
          const std::string_view* n = p.FindStatName(st.metadata_id);
          if (!n || *n != "profile_start_time") continue;
          if (st.kind == StatKind::kUint64 && st.bits < static_cast<uint64_t>(kMaxNs))
            start = static_cast<int64_t>(st.bits);
          else if (st.kind == StatKind::kInt64 && static_cast<int64_t>(st.bits) > 0 && static_cast<int64_t>(st.bits) < kMaxNs)
            start = static_cast<int64_t>(st.bits);
        }
    if (merge_) {
      // Wall-clock times moved onto the trace's clock.
      base_ = start + merge_->realtime_to_trace_ns;
      if (base_ <= -kMaxNs || base_ >= kMaxNs) return Err(StatusCode::kCorrupt, "times out of range");
    } else if (start > 0) {
      t_.clock_offset_ns = start;
    }
    // Vendors first (to name the host's launch calls), host processes before devices.
    for (const auto& p : planes) {
      int32_t dev;
      std::string_view type;
      // (A trace merged into that describes its devices already keeps its own rows.)
      if (ClassifyPlane(p.name, &dev, &type) == PlaneKind::kDevice && !(merge_ && first_device_ > 0))
        ReadDevice(p, dev, type);
    }
    for (const auto& p : planes) {
      int32_t dev;
      std::string_view type;
      PlaneKind k = ClassifyPlane(p.name, &dev, &type);
      bool ok = true;
      if (k == PlaneKind::kHost) {
        ok = HostPlane(p);
      } else if (k == PlaneKind::kDevice) {
        ok = DevicePlane(p, dev);
      } else {
        uint64_t n = 0;
        ok = Skim(p, &n);
        if (!p.lines.empty()) Count(fmt::format("events of plane \"{}\" not imported (not a host or device plane)", p.name), n);
      }
      if (!ok) return WireError();
    }
    if (t_.events_read == 0 && skipped_ == 0 && planes.empty())
      return Err(StatusCode::kCorrupt, "the XSpace holds no planes");
    LinkLaunches();
    if (!merge_) AddSteps();
    for (auto& [what, n] : counts_) t_.warnings.push_back(fmt::format("{}{} {}", merge_ ? "XSpace: " : "", n, what));
    if (!merge_) {
      t_.Finalize();
      AddOpCollectives(t_);  // TensorFlow's collective ops
    }
    return OkStatus();
  }

  // Whether Build's error is about the bytes (it names the input then).
  bool wire_error() const { return wire_error_; }

  // The bytes are a read-only file mapping, which Release() may drop from
  // memory line by line.
  void ReleaseLinesRead() {
#if defined(__linux__)
    page_ = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
#endif
  }

 private:
  Status WireError() {
    wire_error_ = true;
    return Err(StatusCode::kCorrupt, "{}: not a valid XSpace protobuf (truncated or another format)", *what_);
  }

  // Sizes the model's columns for the events to come, so that they do not grow
  // by copying (a fifth of an import's time, with the page faults of the
  // copies). Reserved pages stay untouched until rows reach them, so the
  // generous estimates cost address space, not memory.
  void Reserve(const std::vector<Plane>& planes, size_t bytes) {
    uint64_t slices = 0, device = 0;  // at most one slice per event (a step's for its Steps event)
    for (const auto& p : planes) {
      int32_t dev;
      std::string_view type;
      PlaneKind k = ClassifyPlane(p.name, &dev, &type);
      if (k == PlaneKind::kHost) slices += p.event_count;
      if (k != PlaneKind::kDevice) continue;
      // Device activities: the events of stream lines, or of a plane without
      // them every line's but the steps' (as DevicePlane reads them).
      uint64_t streams = 0, others = 0;
      for (const auto& line : p.lines) {
        int64_t stream;
        if (StreamLine(line.name, &stream)) streams += line.events;
        else if (line.name != "Steps") others += line.events;
        else slices += line.events;
      }
      uint64_t rows = streams > 0 ? streams : others;
      device += rows;
      slices += rows;
    }
    if (slices >= (uint64_t{1} << 31)) return;
    auto all = [](size_t n, auto&... cols) { (kineto::ReserveColumn(cols, cols.size() + n), ...); };
    auto& s = t_.slices;
    all(slices, s.ts, s.dur, s.track, s.name, s.kind, s.depth, s.parent, s.arg);
    auto& d = t_.device;
    all(device, d.slice, d.device, d.stream, d.correlation, d.launch, d.bytes, d.copy_kind, d.pinned, d.grid, d.block,
        d.shared_mem, d.registers, d.occupancy);
    auto& a = t_.args;  // a kept stat takes 16 bytes or more, but metadata stats repeat on every event
    all(bytes / 16, a.slice, a.key, a.str, a.num);
  }

  // Reads every event of a plane that is not imported (so that malformed
  // bytes there are found as a parser would), counting them.
  bool Skim(const Plane& p, uint64_t* events) {
    *events = p.event_count;
    for (const auto& line : p.lines)
      if (!SkimLine(line)) return false;
    return true;
  }
  bool SkimLine(const Line& line) {
    return Events(line, [](const Event&) {});
  }

  // f(event) for each event of a line; false on a malformed one.
  template <typename F>
  bool Events(const Line& line, F&& f) {
    bool ok = ForEachEvent(line, &event_, f);
    Release(line);
    return ok;
  }

  // A line of a mapped file, read: its pages leave the process (they stay in
  // the page cache, and come back from it if touched again), so that the
  // import holds the model and the line at hand rather than the whole file
  // besides the model (the peak was their sum).
  void Release(const Line& line) {
#if defined(__linux__)
    if (page_ == 0) return;
    auto begin = reinterpret_cast<uintptr_t>(line.bytes.data());
    uintptr_t end = begin + line.bytes.size();
    begin = (begin + page_ - 1) & ~(page_ - 1);
    end &= ~(page_ - 1);
    if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
    (void)line;
#endif
  }

  void Count(const std::string& what, uint64_t n = 1) {
    if (n) counts_[what] += n;
  }
  void Skip(const std::string& what, uint64_t n = 1) {
    skipped_ += n;
    Count(what, n);
  }

  // --- Per-plane lookups -------------------------------------------------------

  // What a stat metadata id is: its role and its interned name (0 until needed).
  struct StatInfo {
    bool known = false;
    Role role = Role::kArg;
    StringId name = 0;
    std::string_view text;  // the name (a ref value's string)
  };
  // Per-plane lookups by metadata id: dense tables (profilers number metadata
  // 1, 2, 3...), a map for ids beyond them. Per-event hash lookups and string
  // interning were most of an import before these caches.
  static constexpr int64_t kDense = 1 << 20;
  struct PlaneCtx {
    const Plane* plane = nullptr;
    std::vector<StatInfo> stats;
    std::unordered_map<int64_t, StatInfo> stats_sparse;
    std::vector<StringId> names;  // event metadata id -> interned name (+1; 0: not yet)
    std::unordered_map<int64_t, StringId> names_sparse;
    // Host events by name (event metadata id): what the name says they are.
    struct NameClass {
      bool done = false;
      SliceKind kind = SliceKind::kSpan;  // kPython, kOp (a TF op), kSpan
      StringId name = 0;                  // the slice's name (the op's type, the frame without '$')
      StringId full = 0;                  // a TF op's full name
    };
    std::vector<NameClass> classes;
    std::unordered_map<int64_t, NameClass> classes_sparse;
    StatInfo* Stat(int64_t id) {
      if (id >= 0 && id < static_cast<int64_t>(stats.size())) return stats[static_cast<size_t>(id)].known ? &stats[static_cast<size_t>(id)] : nullptr;
      auto it = stats_sparse.find(id);
      return it == stats_sparse.end() ? nullptr : &it->second;
    }
  };

  void BeginPlane(PlaneCtx& c, const Plane& p) {
    c.plane = &p;
    int64_t max_id = -1;
    for (int64_t id : p.stat_ids)
      if (id < kDense) max_id = std::max(max_id, id);
    c.stats.assign(static_cast<size_t>(max_id + 1), StatInfo{});
    // In wire order: an id given twice is its last entry, as in a protobuf map.
    for (size_t i = 0; i < p.stat_ids.size(); ++i) {
      int64_t id = p.stat_ids[i];
      StatInfo info{true, RoleOf(p.stat_names[i]), 0, p.stat_names[i]};
      if (id >= 0 && id < kDense) c.stats[static_cast<size_t>(id)] = info;
      else c.stats_sparse[id] = info;
    }
  }

  StringId StatNameId(StatInfo& info) {
    if (info.name == 0) info.name = t_.strings.Intern(info.text);
    return info.name;
  }

  // A double stat as an integer: what x86's conversion gives (INT64_MIN when
  // out of range), without the undefined behaviour of a cast.
  static int64_t Truncate(double d) {
    return d >= -9223372036854775808.0 && d < 9223372036854775808.0 ? static_cast<int64_t>(d) : INT64_MIN;
  }

  void ReadStat(PlaneCtx& c, const Stat& st, EventStats& out) {
    StatInfo* info = c.Stat(st.metadata_id);
    if (!info) {
      Count("stats with no stat metadata (ignored)");
      return;
    }
    Value v;
    switch (st.kind) {
      case StatKind::kDouble: v.num = st.Double(), v.i = Truncate(v.num); break;
      case StatKind::kUint64: v.i = static_cast<int64_t>(st.bits), v.num = static_cast<double>(st.bits); break;
      case StatKind::kInt64: v.i = static_cast<int64_t>(st.bits), v.num = static_cast<double>(v.i); break;
      case StatKind::kStr: v.is_str = true, v.str = st.str; break;
      case StatKind::kBytes: v.bytes = true; break;
      case StatKind::kRef: {
        v.is_str = true;
        StatInfo* ref = st.bits < static_cast<uint64_t>(INT64_MAX) ? c.Stat(static_cast<int64_t>(st.bits)) : nullptr;
        if (ref) {
          v.str = ref->text;
          v.ref = ref;
        }
        break;
      }
      case StatKind::kNone: return;
    }
    switch (info->role) {
      case Role::kCorrelation: out.correlation = static_cast<uint64_t>(v.i); return;
      case Role::kKernelDetails: out.has_kernel_details = true, out.kernel_details = v.str; return;
      case Role::kMemcpyDetails: out.has_memcpy_details = true, out.memcpy_details = v.str; return;
      case Role::kGroupId: out.group = v.i; break;  // kept as an arg too
      case Role::kStepName: out.step_name = v.str; break;
      case Role::kAllocatorName: out.allocator = v.str; return;
      case Role::kAllocationBytes: out.allocation_bytes = v.i; return;
      case Role::kBytesAllocated: out.bytes_allocated = v.i; return;
      case Role::kBytesReserved: out.bytes_reserved = v.i; return;
      case Role::kAddr: out.addr = static_cast<uint64_t>(v.i); return;
      case Role::kDeviceOrdinal: out.device_ordinal = v.i; break;  // kept as an arg too
      case Role::kHloOp: out.hlo_op = true; break;                   // kept as an arg too
      case Role::kDrop: return;
      case Role::kArg: break;
    }
    if (v.bytes) return;  // serialized protos (no text to keep)
    if (v.is_str && !v.ref) {
      v.hash = ArgStrings::Hash(v.str);
      arg_strings_.Prefetch(v.hash);
    }
    out.AddArg(StatNameId(*info), v);
  }

  // Reads an event's time and stats; false (counted) when it has no time.
  bool ReadEvent(PlaneCtx& c, const Line& line, const Event& e, const EventMetadata* md, int64_t* ts, int64_t* dur) {
    if (e.aggregated) {
      Skip("aggregated events (a count with no time) not imported");
      return false;
    }
    int64_t base = line.timestamp_ns, off = e.offset_ps, d = e.duration_ps;
    if (base <= -kMaxNs || base >= kMaxNs) {
      Skip("events with a time or duration out of range (dropped)");
      return false;
    }
    base += base_;
    if (base <= -kMaxNs || base >= kMaxNs || off <= -kMaxPs || off >= kMaxPs || d < 0 || d >= kMaxPs) {
      Skip("events with a time or duration out of range (dropped)");
      return false;
    }
    // Floor division of the offset, so a negative offset rounds down like a positive one.
    int64_t off_ns = off >= 0 ? off / 1000 : -((-off + 999) / 1000);
    *ts = base + off_ns;
    *dur = (d + 500) / 1000;
    if (*ts <= -kMaxNs || *ts >= kMaxNs || *dur >= kMaxNs) {
      Skip("events with a time or duration out of range (dropped)");
      return false;
    }
    stats_.Clear();
    if (md)
      for (const auto& st : md->stats) ReadStat(c, st, stats_);
    for (const auto& st : e.stats()) ReadStat(c, st, stats_);
    return true;
  }

  const PlaneCtx::NameClass& ClassOf(PlaneCtx& c, const EventMetadata* md, int64_t id) {
    PlaneCtx::NameClass* k;
    if (id >= 0 && id < kDense) {
      if (c.classes.size() <= static_cast<size_t>(id)) c.classes.resize(static_cast<size_t>(id) + 1);
      k = &c.classes[static_cast<size_t>(id)];
    } else {
      k = &c.classes_sparse[id];
    }
    if (k->done) return *k;
    k->done = true;
    std::string_view name = md ? md->name : std::string_view();
    std::string_view type;
    if (!name.empty() && name[0] == '$') {
      k->kind = SliceKind::kPython;
      k->name = t_.strings.Intern(name.substr(1));
    } else if (TfOpName(name, &type)) {
      k->kind = SliceKind::kOp;
      k->name = t_.strings.Intern(type);
      k->full = t_.strings.Intern(name);
    } else {
      k->name = EventName(c, md, id);
    }
    return *k;
  }

  // An event of a line imported into `track`: counted, its metadata found, its
  // time and stats read (false when it has no time).
  bool TrackEvent(PlaneCtx& c, const Line& line, const Event& e, uint32_t track, const EventMetadata** md,
                  int64_t* ts, int64_t* dur) {
    ++t_.events_read;
    ++t_.tracks[track].events;
    *md = c.plane->FindEvent(e.metadata_id);
    if (!*md) Count("events whose metadata is missing (imported without a name)");
    return ReadEvent(c, line, e, *md, ts, dur);
  }

  StringId EventName(PlaneCtx& c, const EventMetadata* md, int64_t id) {
    if (id >= 0 && id < kDense) {
      if (c.names.size() <= static_cast<size_t>(id)) c.names.resize(static_cast<size_t>(id) + 1, 0);
      StringId& n = c.names[static_cast<size_t>(id)];
      if (n == 0) n = (md ? t_.strings.Intern(md->name) : 0) + 1;
      return n - 1;
    }
    auto [it, inserted] = c.names_sparse.try_emplace(id, 0);
    if (inserted && md) it->second = t_.strings.Intern(md->name);
    return it->second;
  }

  void AddArgs(uint32_t slice) {
    for (const auto& a : stats_.args())
      if (a.v.is_str && !a.v.sid && !a.v.ref) arg_strings_.PrefetchText(a.v.str, a.v.hash);
    for (const auto& a : stats_.args()) {
      if (a.v.is_str) {
        StringId v = a.v.sid ? a.v.sid : a.v.ref ? StatNameId(*static_cast<StatInfo*>(a.v.ref)) : arg_strings_.Intern(a.v.str, a.v.hash);
        t_.args.Add(slice, a.key, v, std::numeric_limits<double>::quiet_NaN());
      } else {
        t_.args.Add(slice, a.key, 0, a.v.num);
      }
    }
  }

  uint32_t NewTrack(uint32_t process, int64_t tid, model::TrackKind kind, int32_t device, std::string_view name) {
    model::Track trk;
    trk.kind = kind;
    trk.process = process;
    trk.tid = tid;
    trk.device = device;
    trk.name = t_.strings.Intern(name);
    t_.tracks.push_back(trk);
    return static_cast<uint32_t>(t_.tracks.size() - 1);
  }

  // --- Devices ------------------------------------------------------------------

  void ReadDevice(const Plane& p, int32_t id, std::string_view type) {
    model::Device d;
    d.id = id;
    std::map<std::string_view, const Stat*> by_name;
    for (const auto& st : p.stats)
      if (const std::string_view* n = p.FindStatName(st.metadata_id)) by_name[*n] = &st;
    auto num = [&](std::string_view k) -> uint64_t {
      auto it = by_name.find(k);
      if (it == by_name.end()) return 0;
      const Stat& s = *it->second;
      auto i = static_cast<int64_t>(s.bits);
      if (s.kind == StatKind::kUint64) return s.bits;
      if (s.kind == StatKind::kInt64) return i > 0 ? static_cast<uint64_t>(i) : 0;
      if (s.kind == StatKind::kDouble) return s.Double() > 0 && s.Double() < 1.8e19 ? static_cast<uint64_t>(s.Double()) : 0;
      return 0;
    };
    auto str = [&](std::string_view k) -> std::string {
      auto it = by_name.find(k);
      return it != by_name.end() && it->second->kind == StatKind::kStr ? std::string(it->second->str) : "";
    };
    d.clock_khz = static_cast<uint32_t>(std::min<uint64_t>(num("clock_rate"), UINT32_MAX));
    d.compute_units = static_cast<uint32_t>(std::min<uint64_t>(num("core_count"), UINT32_MAX));
    d.memory_bytes = num("memory_size");
    d.memory_bandwidth = static_cast<double>(num("memory_bandwidth"));
    d.compute_major = static_cast<uint32_t>(std::min<uint64_t>(num("compute_cap_major"), 1000));
    d.compute_minor = static_cast<uint32_t>(std::min<uint64_t>(num("compute_cap_minor"), 1000));
    std::string vendor = str("device_vendor");
    for (auto& ch : vendor) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (vendor.empty() && type == "GPU" && d.compute_major > 0) vendor = "nvidia";
    d.vendor = vendor;
    d.api = type == "GPU" ? (vendor == "amd" ? "hip" : "cuda") : std::string(type);
    if (vendor == "amd") amd_ = true;
    d.name = str("device_name");
    if (d.name.empty() && d.compute_major > 0)
      d.properties = fmt::format("compute capability {}.{}, {} SMs", d.compute_major, d.compute_minor, d.compute_units);
    t_.devices.push_back(std::move(d));
  }

  uint32_t DeviceProcess(int32_t device) { return procs_.DeviceProcess(device); }

  // --- Host planes --------------------------------------------------------------

  StringId ApiName(bool copy) {
    std::string_view n = copy ? (amd_ ? "hipMemcpyAsync" : "cudaMemcpyAsync") : (amd_ ? "hipLaunchKernel" : "cudaLaunchKernel");
    return t_.strings.Intern(n);
  }

  // False: a malformed line or event.
  bool HostPlane(const Plane& p) {
    PlaneCtx c;
    BeginPlane(c, p);
    uint32_t proc;
    if (merge_) {
      proc = merge_->process;
    } else {
      proc = static_cast<uint32_t>(t_.processes.size());
      model::Process pr;
      pr.name = t_.strings.Intern(t_.hostname.empty() ? std::string(p.name) : t_.hostname);
      t_.processes.push_back(pr);
    }
    for (size_t d = first_device_; d < t_.devices.size(); ++d) t_.devices[d].process = proc;
    const StringId tf_op_key = t_.strings.Intern("tf_op");
    const StringId name_key = t_.strings.Intern("name");
    std::unordered_map<int64_t, uint32_t> tracks;  // line id -> track (lines with one id are one timeline)
    for (const auto& line : p.lines) {
      std::string_view lname = line.display_name.empty() ? line.name : line.display_name;
      auto [ti, fresh] = tracks.try_emplace(line.id, 0);
      if (fresh) ti->second = NewTrack(proc, line.id, model::TrackKind::kThread, model::kNone, lname);
      uint32_t track = ti->second;
      bool ok = Events(line, [&](const Event& e) {
        const EventMetadata* md;
        int64_t ts, dur;
        if (!TrackEvent(c, line, e, track, &md, &ts, &dur)) return;
        std::string_view name = md ? md->name : std::string_view();
        if (dur == 0 && (name == "MemoryAllocation" || name == "MemoryDeallocation")) {
          int64_t bytes = name == "MemoryAllocation" ? stats_.allocation_bytes : -stats_.allocation_bytes;
          t_.memory.Add(ts, track, AllocatorDevice(stats_.allocator), stats_.addr, bytes, stats_.bytes_allocated,
                        stats_.bytes_reserved);
          return;
        }
        if (dur == 0 && stats_.correlation == 0) {
          t_.instants.Add(ts, track, EventName(c, md, e.metadata_id));
          return;
        }
        SliceKind kind = SliceKind::kSpan;
        StringId sname;
        const PlaneCtx::NameClass& nc = ClassOf(c, md, e.metadata_id);
        if (stats_.correlation != 0) {
          kind = SliceKind::kRuntime;
          // TF names a launch after what it launches; API names (hip*, cu*) stay.
          bool api = name.substr(0, 3) == "hip" || name.substr(0, 2) == "cu";
          sname = api ? EventName(c, md, e.metadata_id) : ApiName(stats_.has_memcpy_details || name.substr(0, 6) == "Memcpy");
        } else if (nc.kind != SliceKind::kSpan) {
          kind = nc.kind;
          sname = nc.name;
        } else if (stats_.device_ordinal >= 0 && stats_.hlo_op) {
          // An XLA op (HLO instruction) run by the CPU client. (Its executor's
          // "ThunkExecutor::Execute (wait for completion)" carries the device
          // too, but names no instruction: a span.)
          kind = SliceKind::kOp;
          sname = nc.name;
        } else {
          sname = nc.name;
        }
        uint32_t s = t_.slices.Add(ts, dur, track, sname, kind);
        if (kind == SliceKind::kRuntime) {
          if (stats_.correlation != 0) launches_.Add(stats_.correlation, s);
          if (StringId full = EventName(c, md, e.metadata_id); sname != full) {
            Value v;
            v.is_str = true;
            v.sid = full;
            stats_.AddArg(name_key, v);
          }
        }
        if (kind == SliceKind::kOp && nc.full != 0) t_.args.Add(s, tf_op_key, nc.full, std::numeric_limits<double>::quiet_NaN());
        if (stats_.group >= 0) {
          // The longest host event of a group is the step function's run.
          auto [g, fresh_group] = group_root_.try_emplace(stats_.group, s);
          if (!fresh_group && t_.slices.dur[g->second] < dur) g->second = s;
        }
        AddArgs(s);
      });
      if (!ok) return false;
    }
    return true;
  }

  // --- Device planes ------------------------------------------------------------

  // False: a malformed line or event.
  bool DevicePlane(const Plane& p, int32_t dev) {
    if (merge_ && strata_devices_) {
      // strata's own collector recorded the device (CUPTI takes one subscriber: a
      // profiler beside it records none), so a device plane here repeats it.
      uint64_t n;
      if (!Skim(p, &n)) return false;
      Count("events of the profile's device planes not merged (the trace's own device collector recorded the device)", n);
      return true;
    }
    PlaneCtx c;
    BeginPlane(c, p);
    bool has_streams = false;
    for (const auto& line : p.lines) {
      int64_t s;
      has_streams |= StreamLine(line.name, &s);
    }
    uint32_t proc = model::kNoProcess;
    std::unordered_map<int64_t, uint32_t> tracks;
    for (const auto& line : p.lines) {
      int64_t stream = line.id;
      bool is_stream = StreamLine(line.name, &stream);
      if (line.name == "Steps") {
        if (!ReadSteps(c, line)) return false;
        continue;
      }
      if (!is_stream && has_streams) {
        if (!SkimLine(line)) return false;
        t_.events_read += line.events;
        Count("events of derived device lines (TensorFlow Ops, XLA Ops, name scopes) not imported: the kernels carry "
              "the same ops as args",
              line.events);
        continue;
      }
      if (line.events == 0) continue;
      if (proc == model::kNoProcess) proc = DeviceProcess(dev);
      // A plane without streams (a TPU): "XLA Ops" are its kernels, other lines annotations.
      bool annotations = !is_stream && line.name != "XLA Ops";
      auto [ti, fresh] = tracks.try_emplace(stream, 0);
      if (fresh) ti->second = NewTrack(proc, stream, model::TrackKind::kDeviceQueue, dev, line.name);
      uint32_t track = ti->second;
      bool ok = Events(line, [&](const Event& e) {
        const EventMetadata* md;
        int64_t ts, dur;
        if (!TrackEvent(c, line, e, track, &md, &ts, &dur)) return;
        std::string_view name = md ? md->name : std::string_view();
        if (annotations) {
          AddArgs(t_.slices.Add(ts, dur, track, EventName(c, md, e.metadata_id), SliceKind::kAnnotation));
          return;
        }
        model::CopyKind copy;
        SliceKind kind = DeviceKind(name, stats_.has_memcpy_details, &copy);
        StringId sname = kind == SliceKind::kKernel ? EventName(c, md, e.metadata_id)
                         : kind == SliceKind::kMemset ? t_.strings.Intern("Memset")
                                                      : t_.strings.Intern(fmt::format("Memcpy {}", model::CopyKindName(copy)));
        uint32_t s = t_.slices.Add(ts, dur, track, sname, kind, stats_.correlation);
        uint32_t row = t_.device.Add(s, dev, stream, stats_.correlation);
        if (kind == SliceKind::kMemcpy || kind == SliceKind::kMemset) {
          t_.device.bytes[row] = MemcpyBytes(stats_.memcpy_details);
          t_.device.copy_kind[row] = copy;
        }
        if (stats_.has_kernel_details) {
          KernelDetails k = ParseKernelDetails(stats_.kernel_details);
          t_.device.registers[row] = k.registers;
          t_.device.shared_mem[row] = k.shared_mem;
          t_.device.grid[row] = k.grid;
          t_.device.block[row] = k.block;
          t_.device.occupancy[row] = k.occupancy;
        }
        AddArgs(s);
      });
      if (!ok) return false;
    }
    return true;
  }

  bool ReadSteps(PlaneCtx& c, const Line& line) {
    return Events(line, [&](const Event& e) {
      ++t_.events_read;
      int64_t ts, dur;
      const EventMetadata* md = c.plane->FindEvent(e.metadata_id);
      if (!ReadEvent(c, line, e, md, &ts, &dur)) return;
      if (stats_.group < 0) {
        Skip("steps without a group_id (their host events are unknown; not imported)");
        return;
      }
      StepEvent& s = steps_[stats_.group];
      s.group = stats_.group;
      if (s.step_name.empty()) s.step_name = stats_.step_name.empty() ? (md ? std::string(md->name) : "") : std::string(stats_.step_name);
    });
  }

  // --- After every plane --------------------------------------------------------

  void LinkLaunches() {
    Count("API calls that share a correlation id with an earlier one (the last one is linked)", launches_.Build());
    size_t unlinked = 0;
    for (size_t r = 0; r < t_.device.size(); ++r) {
      uint64_t corr = t_.device.correlation[r];
      if (corr == 0) continue;
      int64_t call = launches_.FindSlice(corr);
      if (call < 0) {
        ++unlinked;
        continue;
      }
      t_.device.launch[r] = static_cast<int32_t>(call);
    }
    if (unlinked) t_.warnings.push_back(fmt::format("{} device activities have no launching API call in the trace", unlinked));
  }

  // Each step of the devices' "Steps" lines becomes a kStep slice over the
  // longest host event of its group (the step function's run), on its thread.
  void AddSteps() {
    size_t missing = 0;
    for (const auto& [group, st] : steps_) {
      auto it = group_root_.find(group);
      if (it == group_root_.end()) {
        ++missing;
        continue;
      }
      uint32_t root = it->second;
      uint64_t number = static_cast<uint64_t>(group);
      uint64_t n;
      auto r = std::from_chars(st.step_name.data(), st.step_name.data() + st.step_name.size(), n);
      if (r.ec == std::errc() && r.ptr == st.step_name.data() + st.step_name.size()) number = n;
      StringId name = t_.strings.Intern(fmt::format("step {}", st.step_name.empty() ? std::to_string(group) : st.step_name));
      t_.slices.Add(t_.slices.ts[root], t_.slices.dur[root], t_.slices.track[root], name, SliceKind::kStep, number);
    }
    if (missing) t_.warnings.push_back(fmt::format("{} steps of the devices' Steps lines have no host event in their group (not imported)", missing));
  }

  model::Trace& t_;
  const XSpaceMerge* merge_;
  int64_t base_ = 0;  // added to every line's timestamp
  size_t first_device_ = t_.devices.size();  // the devices this space adds
  bool strata_devices_ = t_.device.size() > 0;  // merge: the trace has device activity of its own
  const std::string* what_ = nullptr;
  uintptr_t page_ = 0;  // the page size when lines read are released
  bool wire_error_ = false;
  Event event_;  // the event being read (its stats' storage reused)
  EventStats stats_;
  ArgStrings arg_strings_;
  bool amd_ = false;
  uint64_t skipped_ = 0;
  std::map<std::string, uint64_t> counts_;
  ProcessTracker procs_{t_};
  LaunchIndex launches_;  // correlation id -> host launch slice
  std::unordered_map<int64_t, uint32_t> group_root_;  // group id -> longest host slice
  std::map<int64_t, StepEvent> steps_;               // by group id
};

}  // namespace

Status Build(model::Trace& t, std::string_view bytes, const std::string& what, const XSpaceMerge* merge, bool mapped) {
  Builder b(t, merge);
  if (mapped) b.ReleaseLinesRead();
  Status s = b.Build(bytes, what);
  return s.ok() || merge || b.wire_error() ? s : s.WithContext(what);
}

}  // namespace strata::importers::xplane

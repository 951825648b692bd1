// The rows of one event: Builder::AddEvent turns the event that
// builder_read.cc read into ev_ into slices, device activities, args,
// instants, memory records, counters and pending flows, and finds or makes
// its process and track. Also the builder's set-up: its tables' sizes and
// the top-level metadata.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "base/error.h"
#include "importers/kineto/builder.h"
#include "importers/kineto/scalars.h"

namespace strata::importers::kineto {
namespace {

// (always_inline: inlined when the importer was one file; with AddInstant and
// AddFlow inlined into AddEvent by force (builder.h), g++ left these calls out.)
[[gnu::always_inline]] inline int64_t TidKey(const Id& tid, model::StringPool& strings) {
  if (!tid.present) return 0;
  if (!tid.is_str) return tid.num;
  // "stream 7" (legacy device tids) -> 7; other strings get a key of their own.
  std::string_view s = tid.str;
  if (s.substr(0, 7) == "stream ") {
    int64_t n;
    auto r = std::from_chars(s.data() + 7, s.data() + s.size(), n);
    if (r.ec == std::errc()) return n;
  }
  return INT64_MIN + strings.Intern(s);
}

}  // namespace

Builder::Builder(model::Trace& t, bool fast_path) : t_(t), fast_path_(fast_path) {
  t_.source = "kineto";
  k_external_id_ = t_.strings.Intern("External id");
}

// Sizes the tables for a file of `bytes` (compressed size for gzip: about a
// tenth of the JSON), so they do not grow by copying. Reserved pages that
// stay unused are never touched, so over-estimating costs no memory.
void Builder::Reserve(uint64_t bytes) {
  uint64_t events = bytes / 220;  // Kineto events are 200-300 bytes of JSON
  if (bytes < 2 || events >= (1u << 31)) return;
  // Per event in Kineto traces: 0.66 slices, 0.09 device activities, 0.34
  // flow events, 0.22 API calls, 1-2.5 args (some of them dropped).
  auto n = static_cast<size_t>(events);
  auto all = [](size_t count, auto&... cols) { (ReserveColumn(cols, count), ...); };
  const size_t slices = n * 3 / 4;
  auto& s = t_.slices;
  all(slices, s.ts, s.dur, s.track, s.name, s.kind, s.depth, s.parent, s.arg);
  auto& d = t_.device;
  all(n / 8, d.slice, d.device, d.stream, d.correlation, d.launch, d.bytes, d.copy_kind, d.pinned, d.grid, d.block,
      d.shared_mem, d.registers, d.occupancy);
  auto& a = t_.args;
  all(n * 2, a.slice, a.key, a.str, a.num);
  ReserveColumn(flows_, n * 2 / 5);
  launches_.Reserve(n / 4);
}

Status Builder::Meta(std::string_view key, std::string_view raw) {
  if (key != "deviceProperties" && key != "distributedInfo" && key != "baseTimeNanoseconds" && key != "host_name" &&
      key != "traceName")
    return OkStatus();
  simdjson::padded_string doc(raw);
  simdjson::dom::element e;
  if (dom_.parse(doc).get(e)) {
    Count("top-level members with invalid JSON ignored");
    return OkStatus();
  }
  if (key == "deviceProperties" && e.is_array()) {
    for (simdjson::dom::element d : e.get_array()) {
      if (!d.is_object()) continue;
      model::Device dev;
      int64_t i;
      if (!d["id"].get_int64().get(i)) dev.id = static_cast<int32_t>(i);
      std::string_view s;
      if (!d["name"].get_string().get(s)) dev.name = std::string(s);
      if (!d["totalGlobalMem"].get_int64().get(i)) dev.memory_bytes = static_cast<uint64_t>(i);
      if (!d["numSms"].get_int64().get(i)) dev.compute_units = static_cast<uint32_t>(i);
      if (!d["computeMajor"].get_int64().get(i)) dev.compute_major = static_cast<uint32_t>(i);
      if (!d["computeMinor"].get_int64().get(i)) dev.compute_minor = static_cast<uint32_t>(i);
      std::string_view nm = dev.name;
      dev.api = "cuda";
      dev.vendor = nm.find("NVIDIA") != std::string_view::npos || nm.find("Tesla") != std::string_view::npos ? "nvidia"
                   : nm.find("AMD") != std::string_view::npos || nm.find("Instinct") != std::string_view::npos ? "amd"
                                                                                                                 : "";
      if (dev.vendor == "amd") dev.api = "hip";
      t_.devices.push_back(dev);
    }
  } else if (key == "distributedInfo" && e.is_object()) {
    int64_t r;
    if (!e["rank"].get_int64().get(r)) rank_ = r;
  } else if (key == "baseTimeNanoseconds") {
    int64_t b;
    if (!e.get_int64().get(b)) t_.clock_offset_ns = b;
  } else if (key == "host_name") {
    std::string_view s;
    if (!e.get_string().get(s)) t_.hostname = std::string(s);
  }
  return OkStatus();
}

const Arg* Builder::FindArg(Role r) const {
  int8_t i = ev_.known[static_cast<size_t>(r)];
  return i < 0 ? nullptr : &ev_.args[static_cast<size_t>(i)];
}

bool Builder::ArgInt(Role r, int64_t* v) const {
  const Arg* a = FindArg(r);
  if (a && a->has_int) {
    *v = a->int_value;
    return true;
  }
  return a && !a->container && ParseInt(a->raw, v);
}

uint32_t Builder::HostProcess(const Id& pid) {
  int64_t key = pid.num;
  if (pid.is_str) {
    StringId s = t_.strings.Intern(pid.str);
    key = INT64_MIN + s;  // string pids ("Spans") live apart from numbers
  }
  bool fresh = false;
  uint32_t p = procs_.Process(key, 0, &fresh);
  if (fresh && pid.is_str) {
    t_.processes[p].pid = 0;
    t_.processes[p].name = t_.strings.Intern(pid.str);
  }
  return p;
}

uint32_t Builder::DeviceProcess(int64_t device) { return procs_.DeviceProcess(device); }

uint32_t Builder::Track(uint32_t process, int64_t tid, model::TrackKind kind, int32_t device) {
  bool fresh = false;
  uint32_t track = procs_.Track(process, kind, tid, device, &fresh);
  if (fresh) {
    model::Track& trk = t_.tracks[track];
    if (kind == model::TrackKind::kDeviceQueue) trk.name = t_.strings.Intern(fmt::format("stream {}", tid));
    else if (tid < INT64_MIN / 2) {
      trk.name = static_cast<StringId>(tid - INT64_MIN);
      trk.tid = 0;
    }
  }
  return track;
}

StringId Builder::Name() {
  if (ev_.name.empty()) return 0;
  return intern_.Intern(ev_.name);
}

void Builder::AddArgs(uint32_t slice, bool device_row) {
  for (const Arg& a : ev_.args) {
    // Columns, derived values and profiler internals are not repeated here.
    switch (a.role) {
      case Role::kDrop:
      case Role::kCorrelation:
        continue;
      case Role::kDevice:
      case Role::kStream:
      case Role::kBytes:
      case Role::kGrid:
      case Role::kBlock:
      case Role::kSharedMem:
      case Role::kRegisters:
      case Role::kOccupancy:
      case Role::kKind:
        if (device_row) continue;
        break;
      case Role::kLegacyDevice:
        if (!device_row) continue;  // legacy: the pid again
        break;
      default:
        break;
    }
    StringId key = a.role == Role::kExternalId ? k_external_id_ : KeyId(a);
    double num = std::numeric_limits<double>::quiet_NaN();
    StringId str = 0;
    if (a.container) {
      str = intern_.Intern(a.raw);
    } else if (!a.raw.empty() && a.raw.front() == '"') {
      std::string_view inner = a.raw.substr(1, a.raw.size() >= 2 ? a.raw.size() - 2 : 0);
      int64_t iv;
      // Numbers written as strings ("stream": "7") are numbers, as HTA reads them.
      if (!inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          ParseInt(inner, &iv))
        num = static_cast<double>(iv);
      str = intern_.Intern(inner);
    } else if (a.has_int) {
      num = static_cast<double>(a.int_value);  // what ParseDouble makes of it
    } else if (a.raw == "null") {
      continue;
    } else if (a.raw == "true" || a.raw == "false") {
      num = a.raw == "true" ? 1 : 0;
    } else if (!ParseDouble(a.raw, &num)) {
      // simdjson does not validate tokens it is not asked to convert.
      Count("args with an invalid JSON value (kept as text)");
      str = intern_.Intern(a.raw);
    }
    t_.args.Add(slice, key, str, num);
  }
}

StringId Builder::KeyId(const Arg& a) {
  if (a.slot >= 0) {
    KeyCache::Entry& e = keys_[a.slot];
    if (e.gen == a.gen) {
      if (e.id == model::StringPool::kNotFound) e.id = intern_.Intern(e.text);
      return e.id;
    }
  }
  return intern_.Intern(a.key);
}

void Builder::AddEvent() {
  if (ev_.bad_number) {
    Skip("events with a malformed number or string field (skipped)");
    return;
  }
  if (!ev_.has_ts) t_.source_fractional_us = true;  // as HTA's loader sees it: a float column
  else if (ev_.ts_fractional) t_.source_fractional_us = true;
  switch (ev_.ph) {
    case 'X': return AddComplete();
    case 'B':
    case 'E': return AddBeginEnd();
    case 'i':
    case 'I':
    case 'n': return AddInstant();
    case 'C': return AddCounter();
    case 's':
    case 't':
    case 'f': return AddFlow();
    case 'M': return AddMetadata();
    case 0: Skip("events without \"ph\" (skipped)"); return;
    default: {
      // (A phase is any one character, a control character included: the message stays one line.)
      auto c = static_cast<unsigned char>(ev_.ph);
      Skip(c >= 0x20 && c < 0x7f ? fmt::format("events of phase '{}' (not imported)", ev_.ph)
                                 : fmt::format("events of phase 0x{:02x} (not imported)", c));
      return;
    }
  }
}

// The track an event goes to: a device stream for device categories, else the thread.
uint32_t Builder::TrackFor(Cat cat, int64_t* device_out, int64_t* stream_out) {
  if (IsDeviceCat(cat)) {
    int64_t device = ev_.pid.is_str ? 0 : ev_.pid.num;
    ArgInt(Role::kDevice, &device);
    int64_t stream = 0;
    bool has_stream = ArgInt(Role::kStream, &stream);
    if (!has_stream) stream = TidKey(ev_.tid, t_.strings);
    *device_out = device;
    *stream_out = stream;
    return Track(DeviceProcess(device), stream, model::TrackKind::kDeviceQueue, static_cast<int32_t>(device));
  }
  return Track(HostProcess(ev_.pid), TidKey(ev_.tid, t_.strings), model::TrackKind::kThread, model::kNone);
}

uint32_t Builder::AddSlice(Cat cat, int64_t ts, int64_t dur) {
  int64_t device = 0, stream = 0;
  uint32_t trk = TrackFor(cat, &device, &stream);
  ++t_.tracks[trk].events;
  SliceKind kind = KindOf(cat);
  uint64_t arg = 0;
  uint64_t step;
  if (!IsDeviceCat(cat) && StepNumber(ev_.name, &step)) {
    kind = SliceKind::kStep;
    arg = step;
  }
  if (cat == Cat::kTrace) kind = SliceKind::kOther;
  StringId name;
  // torch.profiler(with_modules=True): each module's forward, "nn.Module: Linear_3"
  // (class and instance number), is a module scope, named without the prefix.
  if (cat == Cat::kPython && ev_.name.starts_with("nn.Module: ") && ev_.name.size() > 11) {
    kind = SliceKind::kModule;
    name = intern_.Intern(ev_.name.substr(11));
  } else {
    name = Name();
  }
  uint32_t s = t_.slices.Add(ts, dur, trk, name, kind, arg);
  int64_t corr = 0;
  if (IsDeviceCat(cat) && cat != Cat::kGpuAnnotation) {
    ArgInt(Role::kCorrelation, &corr);
    uint32_t r = t_.device.Add(s, static_cast<int32_t>(device), stream, static_cast<uint64_t>(std::max<int64_t>(corr, 0)));
    int64_t v;
    if (ArgInt(Role::kBytes, &v)) t_.device.bytes[r] = static_cast<uint64_t>(std::max<int64_t>(v, 0));
    if (cat == Cat::kMemcpy) CopyKindFromName(ev_.name, &t_.device.copy_kind[r], &t_.device.pinned[r]);
    if (cat == Cat::kKernel) {
      if (ArgInt(Role::kSharedMem, &v)) t_.device.shared_mem[r] = static_cast<uint32_t>(v);
      if (ArgInt(Role::kRegisters, &v)) t_.device.registers[r] = static_cast<uint32_t>(v);
      const Arg* occ = FindArg(Role::kOccupancy);
      double d;
      if (occ && ParseDouble(occ->raw, &d)) t_.device.occupancy[r] = static_cast<float>(d / 100.0);
      ReadDim3(Role::kGrid, &t_.device.grid[r]);
      ReadDim3(Role::kBlock, &t_.device.block[r]);
    }
    AddArgs(s, true);
  } else if (IsDeviceCat(cat)) {
    AddArgs(s, true);
  } else {
    if ((cat == Cat::kRuntime || cat == Cat::kDriver) && ArgInt(Role::kCorrelation, &corr) && corr > 0) {
      t_.slices.arg[s] = static_cast<uint64_t>(corr);
      launches_.Add(static_cast<uint64_t>(corr), s);
    } else if (cat == Cat::kCpuOp) {
      int64_t seq;
      if (ArgInt(Role::kSequence, &seq) && seq >= 0) t_.slices.arg[s] = static_cast<uint64_t>(seq);
    }
    AddArgs(s, false);
  }
  return s;
}

void Builder::ReadDim3(Role k, std::array<uint32_t, 3>* out) {
  const Arg* a = FindArg(k);
  if (!a || !a->container) return;
  std::string_view s = a->raw;
  int i = 0;
  const char* p = s.data();
  const char* e = p + s.size();
  while (p < e && i < 3) {
    while (p < e && (*p < '0' || *p > '9')) ++p;
    uint32_t v = 0;
    auto r = std::from_chars(p, e, v);
    if (r.ec != std::errc()) break;
    (*out)[static_cast<size_t>(i++)] = v;
    p = r.ptr;
  }
}

void Builder::AddComplete() {
  if (!ev_.has_ts) {
    Skip("complete events without \"ts\" (skipped)");
    return;
  }
  if (!ev_.has_dur) {
    Count("complete events without \"dur\" (imported with duration 0)");
    ev_.dur = 0;
  }
  if (ev_.dur < 0) {
    Count("complete events with a negative duration (imported with duration 0)");
    ev_.dur = 0;
  }
  Cat cat = Classify(ev_.cat);
  if (cat == Cat::kFlowLaunch) cat = Cat::kOther;
  // torch's legacy autograd profiler (PyTorch built without Kineto, such as
  // Debian's 1.13) writes no categories, every event under the process
  // "CPU functions": its ops, and record_function ranges named "Name#...".
  if (cat == Cat::kUnknown && ev_.pid.is_str && ev_.pid.str == "CPU functions")
    cat = ev_.name.find('#') != std::string_view::npos ? Cat::kUserAnnotation : Cat::kCpuOp;
  AddSlice(cat, ev_.ts, ev_.dur);
}

void Builder::AddBeginEnd() {
  if (!ev_.has_ts) {
    Skip("B/E events without \"ts\" (skipped)");
    return;
  }
  Cat cat = Classify(ev_.cat);
  int64_t device = 0, stream = 0;
  uint32_t trk = TrackFor(cat, &device, &stream);
  auto& stack = open_[trk];
  if (ev_.ph == 'B') {
    stack.push_back({ev_.ts, std::string(ev_.name), std::string(ev_.cat), ev_.args.size()});
    // Args of B events are kept with the slice when it closes.
    auto& saved = open_args_[trk];
    for (const Arg& a : ev_.args) saved.push_back({std::string(a.key), std::string(a.raw), a.container});
    return;
  }
  if (stack.empty()) {
    Skip("E events without a matching B (skipped)");
    return;
  }
  OpenBE o = std::move(stack.back());
  stack.pop_back();
  auto& saved = open_args_[trk];
  std::vector<SavedArg> args(saved.end() - static_cast<long>(o.nargs), saved.end());
  saved.resize(saved.size() - o.nargs);
  int64_t dur = ev_.ts - o.ts;
  if (dur < 0) {
    Count("E events before their B (imported with duration 0)");
    dur = 0;
  }
  // Re-enter AddSlice with the B event's identity.
  std::string name = std::move(o.name), catname = std::move(o.cat);
  ev_.name = name;
  ev_.cat = catname;
  ev_.args.clear();
  for (const SavedArg& a : args) {
    Arg arg{a.key, a.raw, a.container};
    if (arg.key == "Device") arg.role = Role::kLegacyDevice;
    ev_.args.push_back(arg);
  }
  AddSlice(Classify(catname), o.ts, dur);
}

void Builder::AddInstant() {
  if (!ev_.has_ts) {
    Skip("instant events without \"ts\" (skipped)");
    return;
  }
  uint32_t trk = Track(HostProcess(ev_.pid), TidKey(ev_.tid, t_.strings), model::TrackKind::kThread, model::kNone);
  ++t_.tracks[trk].events;
  if (ev_.name == "[memory]") {
    int64_t bytes = 0, addr = 0, dtype = 0, did = -1, alloc = -1, reserved = -1;
    ArgInt(Role::kMemBytes, &bytes);
    ArgInt(Role::kAddr, &addr);
    ArgInt(Role::kDeviceType, &dtype);
    ArgInt(Role::kDeviceId, &did);
    ArgInt(Role::kTotalAllocated, &alloc);
    ArgInt(Role::kTotalReserved, &reserved);
    t_.memory.Add(ev_.ts, trk, dtype != 0 && did >= 0 ? static_cast<int32_t>(did) : model::kNone,
                  static_cast<uint64_t>(addr), bytes, alloc, reserved);
    return;
  }
  t_.instants.Add(ev_.ts, trk, Name());
}

void Builder::AddCounter() {
  if (!ev_.has_ts) {
    Skip("counter events without \"ts\" (skipped)");
    return;
  }
  uint32_t proc = HostProcess(ev_.pid);
  for (const Arg& a : ev_.args) {
    double v;
    if (a.container || !ParseDouble(a.raw, &v)) continue;
    std::string series_name = ev_.args.size() == 1 ? std::string(ev_.name) : fmt::format("{}.{}", ev_.name, a.key);
    StringId n = t_.strings.Intern(series_name);
    uint64_t key = (uint64_t{proc} << 32) | n;
    auto [it, inserted] = series_.try_emplace(key, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(t_.counter_series.size());
      t_.counter_series.push_back({n, proc, 0});
    }
    t_.counters.Add(it->second, ev_.ts, v);
  }
}

void Builder::AddFlow() {
  if (!ev_.has_ts || ev_.id.empty()) {
    Skip("flow events without \"ts\" or \"id\" (skipped)");
    return;
  }
  Cat cat = Classify(ev_.cat);
  uint64_t key = std::hash<std::string_view>{}(ev_.cat) * 31 + std::hash<std::string_view>{}(ev_.id);
  int64_t pid = ev_.pid.is_str ? INT64_MIN + t_.strings.Intern(ev_.pid.str) : ev_.pid.num;
  int64_t corr = 0;
  if (cat == Cat::kFlowLaunch) ParseInt(ev_.id, &corr);
  flows_.push_back({key, ev_.ph, ev_.bp == "e", cat == Cat::kFlowLaunch, !ev_.pid.is_str, pid,
                    TidKey(ev_.tid, t_.strings), ev_.ts, static_cast<uint64_t>(std::max<int64_t>(corr, 0))});
}

void Builder::AddMetadata() {
  const Arg* a = FindArg(Role::kName);
  std::string_view v;
  if (!a || !PlainString(a->raw, &v)) return;
  if (ev_.name == "process_name" && !ev_.pid.is_str) {
    process_names_[ev_.pid.num] = t_.strings.Intern(v);
  } else if (ev_.name == "thread_name" && !ev_.pid.is_str) {
    pending_thread_names_.push_back({ev_.pid.num, TidKey(ev_.tid, t_.strings), t_.strings.Intern(Trim(v))});
  }
}

}  // namespace strata::importers::kineto

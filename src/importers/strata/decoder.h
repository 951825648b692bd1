// The strata-trace importer's extension point: decoders per event class.
//
// The loader (loader.cc) walks every stream file and hands each event to the
// handler registered for its (stream class, event name). Each level's decoders
// live in their own file (core_events.cc, and one per collector) and register
// in RegisterAllDecoders(). Handlers bind by *name* (the metadata says which id
// is which), so traces from newer strata versions still load.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "format/ctf_reader.h"
#include "format/tsdl.h"
#include "importers/common/process_tracker.h"
#include "model/trace.h"

namespace strata::importers::strata_ctf {

struct ProcessState {
  uint32_t index = 0;                   // into trace.processes
  std::vector<model::StringId> names;   // process-interned id -> model string
};

// A slice whose end has not been seen yet.
struct OpenSlice {
  int64_t ts;
  model::StringId name;
  model::SliceKind kind;
  uint64_t arg;
  int32_t ext = -1;  // decoder-defined link (e.g. a row in a side table), -1 none
};

// Per stream file.
struct StreamState {
  uint32_t stream_class = 0;
  ProcessState* process = nullptr;
  uint32_t track = UINT32_MAX;
  std::string path;
  int64_t last_ts = 0;
  std::vector<OpenSlice> stack;  // nesting slices of this thread (spans, steps, ops, API calls)
  std::vector<uint64_t> context; // the packet context's stream-specific fields
};

class LoadContext;
using EventHandler = std::function<void(LoadContext&, StreamState&, const format::EventView&)>;
// Called for every slice closed from a stream's stack, whoever closes it (its
// level's end event, a core step_end, the end of the stream): decoders that
// keep side rows for their slices (OpenSlice::ext) complete them here.
using SliceHook = std::function<void(LoadContext&, const OpenSlice&, uint32_t slice, int64_t end_ts)>;
using Hook = std::function<void(LoadContext&)>;
// Called when a stream ends, e.g. to close what is still open.
using StreamEndHook = std::function<void(LoadContext&, StreamState&)>;

class LoadContext {
 public:
  model::Trace& trace() { return trace_; }
  const format::ParsedMetadata& metadata() const { return md_; }

  ProcessState& Process(uint32_t pid, uint64_t instance);
  uint32_t Track(uint32_t process, model::TrackKind kind, int64_t tid, int32_t device);
  // Resolves a process-interned name id (a warning is counted if undefined).
  // Both inline on their common path: they run once per event.
  model::StringId Name(ProcessState& ps, uint32_t id) {
    if (id < ps.names.size() && ps.names[id] != UINT32_MAX) [[likely]]
      return ps.names[id];
    return UndefinedName(id);
  }
  uint32_t CounterSeries(uint32_t process, model::StringId name) {
    auto key = (uint64_t{process} << 32) | name;
    // Counter samples come in long runs of one series: skip the hash lookup.
    if (key == last_series_key_) [[likely]]
      return last_series_;
    return NewCounterSeries(key, process, name);
  }
  // Appends a finished slice; `depth` is the nesting hint for equal bounds.
  // Runs the registry's slice hooks.
  uint32_t AddSlice(const OpenSlice& o, int64_t end_ts, uint32_t track, size_t depth);
  void Warn(std::string w) { trace_.warnings.push_back(std::move(w)); }
  void CountWarning(const std::string& what) { ++counted_warnings_[what]; }

  // Pids strata record's manifest lists as exited: their threads were gone by the
  // end of the recording even where the kernel's exit records were lost.
  const std::set<int64_t>& ManifestExitedPids() const { return manifest_exited_pids_; }

  // Old -> new slice index of Trace::Finalize (valid in AfterFinalize hooks).
  const model::Column<int32_t>& SliceRemap() const { return slice_remap_; }

  // A per-load object of type T, created on first use: decoders keep their
  // cross-stream state here (pending flows, correlation maps, ...).
  template <typename T>
  T& Ext() {
    auto& slot = ext_[std::type_index(typeid(T))];
    if (!slot) slot = std::shared_ptr<void>(new T(), [](void* p) { delete static_cast<T*>(p); });
    return *static_cast<T*>(slot.get());
  }

 private:
  friend class Loader;
  model::Trace trace_;
  format::ParsedMetadata md_;
  std::map<std::pair<uint32_t, uint64_t>, ProcessState> procs_;
  ProcessTracker tracks_{trace_};
  std::unordered_map<uint64_t, uint32_t> series_;
  model::StringId UndefinedName(uint32_t id);
  uint32_t NewCounterSeries(uint64_t key, uint32_t process, model::StringId name);
  uint64_t last_series_key_ = UINT64_MAX;
  uint32_t last_series_ = 0;
  std::map<std::string, uint64_t> counted_warnings_;
  std::set<int64_t> manifest_exited_pids_;
  std::unordered_map<std::type_index, std::shared_ptr<void>> ext_;
  ProcessState os_process_{model::kNoProcess, {}};  // cpu streams: tracks of no process
  const std::vector<SliceHook>* slice_hooks_ = nullptr;
  model::Column<int32_t> slice_remap_;
};

class DecoderRegistry {
 public:
  void On(uint32_t stream_class, std::string event_name, EventHandler h) {
    handlers_[{stream_class, std::move(event_name)}] = std::move(h);
  }
  void OnStreamEnd(StreamEndHook h) { stream_end_.push_back(std::move(h)); }
  void OnSliceAdded(SliceHook h) { slice_added_.push_back(std::move(h)); }
  // Before Trace::Finalize (slices still in import order).
  void BeforeFinalize(Hook h) { before_.push_back(std::move(h)); }
  // After Trace::Finalize (slices sorted and nested; SliceAt works).
  void AfterFinalize(Hook h) { after_.push_back(std::move(h)); }

 private:
  friend class Loader;
  std::map<std::pair<uint32_t, std::string>, EventHandler> handlers_;
  std::vector<StreamEndHook> stream_end_;
  std::vector<SliceHook> slice_added_;
  std::vector<Hook> before_, after_;
};

// One line per level in decoders.cc.
void RegisterCoreDecoders(DecoderRegistry& r);
void RegisterAccelDecoders(DecoderRegistry& r);  // accel_events.cc
void RegisterOsDecoders(DecoderRegistry& r);  // os_events.cc
void RegisterTorchDecoders(DecoderRegistry& r);
void RegisterCommDecoders(DecoderRegistry& r);  // comm_events.cc
void RegisterAllDecoders(DecoderRegistry& r);

// Payload helpers for decoders: fields are byte-aligned little-endian.
class PayloadReader {
 public:
  explicit PayloadReader(const format::EventView& ev) : p_(ev.payload), end_(ev.payload + ev.size) {}
  template <typename T>
  T Get() {
    T v{};
    if (end_ - p_ >= static_cast<ptrdiff_t>(sizeof(T))) std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::string_view Str() {
    if (p_ >= end_) return {};
    const void* nul = std::memchr(p_, 0, static_cast<size_t>(end_ - p_));
    size_t n = nul ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - p_) : static_cast<size_t>(end_ - p_);
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n + (nul ? 1 : 0);
    return s;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace strata::importers::strata_ctf

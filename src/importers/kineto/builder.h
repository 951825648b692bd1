// The Kineto importer's event sink: json_stream.cc hands it the events in
// batches, and it fills the model's tables. Its members are defined by role:
//   builder_read.cc    reading one event into ev_: the byte-level fast path,
//                      and simdjson On-Demand for the rest
//   builder.cc         the event's rows (slices, device activities, args,
//                      instants, counters, pending flows), its process and
//                      track; the tables' sizes and the top-level metadata
//   builder_finish.cc  the end of the import: names, launch links, checks, flows
// Members declared `inline` are called only from the file that defines them,
// so the compiler can inline them into their callers there, as it did when
// the importer was one file: most run once or more per event. Those it then
// inlined as a function's only call (FastEvent, FastArgs, the Add* of each
// phase) are always_inline: g++ no longer does that by itself for a member,
// whose out-of-line copy it counts as possibly shared with other files.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "importers/common/process_tracker.h"
#include "importers/kineto/caches.h"
#include "importers/kineto/events.h"
#include "importers/kineto/json_stream.h"
#include "importers/common/launch_index.h"
#include "model/trace.h"

namespace strata::importers::kineto {

namespace od = simdjson::ondemand;

struct PendingFlow {
  uint64_t key;  // hash of (cat, id)
  char ph;
  bool bind_enclosing;
  bool launch;
  bool numeric_pid;
  int64_t pid, tid;  // resolved to a track once every slice is in
  int64_t ts;
  uint64_t corr;  // a launch flow's id, which Kineto sets to the correlation id
};

class Builder final : public JsonEventSink {
 public:
  Builder(model::Trace& t, bool fast_path);

  void Warn(const std::string& what) override { t_.warnings.push_back(what); }

  void Reserve(uint64_t bytes);
  Status Meta(std::string_view key, std::string_view raw) override;
  Status Batch(char* doc, size_t len, size_t capacity, uint64_t offset) override;
  const char* FastEvents(const char* p, const char* end, bool* at_event) override;
  inline Status SlowBatch(char* doc, size_t len, size_t capacity, uint64_t offset);
  Status Finish();

 private:
  void Count(const std::string& what, uint64_t n = 1) { counts_[what] += n; }
  // An event left out of the model: counted as a warning, and against the file.
  void Skip(const std::string& what, uint64_t n = 1) {
    Count(what, n);
    // The reason without its "(skipped)": the error that lists them says so once.
    size_t paren = what.ends_with(')') ? what.rfind(" (") : std::string::npos;
    skipped_reasons_[what.substr(0, paren)] += n;
    skipped_ += n;
  }

  // builder_read.cc
  inline Status JsonError(const char* doc, od::document& d, uint64_t offset, simdjson::error_code err);
  inline simdjson::error_code ReadString(od::value& v, std::string_view* out, bool* escaped = nullptr);
  [[gnu::always_inline]] inline void ResetEvent();
  inline const char* FastStringField(const char* p, const char* end, bool container, std::string_view* out);
  inline const char* FastMicros(const char* p, const char* end, int64_t* ns, bool* has, bool* fractional);
  [[gnu::always_inline]] inline const char* FastEvent(const char* p, const char* end);
  [[gnu::always_inline]] inline const char* FastArgs(const char* p, const char* end);
  inline simdjson::error_code ReadEvent(od::object& obj);
  inline std::string_view KeyBefore(const char* kp, const char* value) const;
  inline simdjson::error_code ReadArgs(od::value& v);

  // builder.cc
  void AddEvent();  // (called from builder_read.cc)
  inline const Arg* FindArg(Role r) const;
  inline bool ArgInt(Role r, int64_t* v) const;
  inline uint32_t HostProcess(const Id& pid);
  inline uint32_t DeviceProcess(int64_t device);
  inline uint32_t Track(uint32_t process, int64_t tid, model::TrackKind kind, int32_t device);
  inline StringId Name();
  inline void AddArgs(uint32_t slice, bool device_row);
  inline StringId KeyId(const Arg& a);
  inline uint32_t TrackFor(Cat cat, int64_t* device_out, int64_t* stream_out);
  inline uint32_t AddSlice(Cat cat, int64_t ts, int64_t dur);
  inline void ReadDim3(Role k, std::array<uint32_t, 3>* out);
  [[gnu::always_inline]] inline void AddComplete();
  inline void AddBeginEnd();
  [[gnu::always_inline]] inline void AddInstant();
  [[gnu::always_inline]] inline void AddCounter();
  [[gnu::always_inline]] inline void AddFlow();
  [[gnu::always_inline]] inline void AddMetadata();

  // builder_finish.cc
  inline void DropLinkedLaunchFlows();
  inline void ResolveFlows();
  inline uint32_t FlowTrack(const PendingFlow& f) const;
  inline int32_t NextSliceAt(uint32_t track, int64_t ts) const;

  struct OpenBE {
    int64_t ts;
    std::string name, cat;
    size_t nargs;
  };
  struct SavedArg {
    std::string key, raw;
    bool container;
  };
  struct PendingThreadName {
    int64_t pid, tid;
    StringId name;
  };

  model::Trace& t_;
  bool fast_path_;
  od::parser parser_;
  simdjson::dom::parser dom_;
  const char* limit_ = nullptr;
  Event ev_;
  std::string name_copy_;
  std::deque<std::string> escaped_args_;
  StringId k_external_id_;
  int64_t rank_ = -1;
  ProcessTracker procs_{t_};
  LaunchIndex launches_;
  std::unordered_map<uint64_t, uint32_t> series_;
  InternCache intern_{t_.strings};
  KeyCache keys_;
  std::map<int64_t, StringId> process_names_;
  std::vector<PendingThreadName> pending_thread_names_;
  std::unordered_map<uint32_t, std::vector<OpenBE>> open_;
  std::unordered_map<uint32_t, std::vector<SavedArg>> open_args_;
  model::Column<PendingFlow> flows_;  // a column: spills past the budget while an index is built
  std::map<std::string, uint64_t> counts_;
  std::map<std::string, uint64_t> skipped_reasons_;
  uint64_t skipped_ = 0;
};

}  // namespace strata::importers::kineto

// What the REST API's endpoints share (api.cc, api_lanes.cc): parsing the
// path and the query, and a served trace with the lookups built on demand.
// Internal to the server library.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/critical_path.h"
#include "index/index_file.h"
#include "index/open_trace.h"
#include "model/trace.h"
#include "server/api.h"
#include "server/grouped_rows.h"
#include "server/responses.h"

namespace strata::server {
namespace api_detail {


// "/api/v1/traces/0/slices" -> {"api", "v1", "traces", "0", "slices"}
inline std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

// A whole decimal number (optionally negative), nothing else.
template <class T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Query parameter `name` as a number: absent gives `def`; present and not a
// number, or outside [lo, hi], is an error message.
template <class T>
std::string Param(const std::multimap<std::string, std::string>& params, const char* name, T def, T lo, T hi,
                  T* out) {
  auto it = params.find(name);
  if (it == params.end()) {
    *out = def;
    return "";
  }
  if (!ParseNumber(it->second, out)) return std::string("parameter ") + name + " is not a whole number";
  if (*out < lo || *out > hi) return std::string("parameter ") + name + " is out of range";
  return "";
}

inline const char* TrackKindName(model::TrackKind k) {
  switch (k) {
    case model::TrackKind::kThread:
      return "thread";
    case model::TrackKind::kDeviceQueue:
      return "device_queue";
    case model::TrackKind::kCpu:
      return "cpu";
  }
  return "other";
}


// A range asked for: start and end (the trace's by default, or just after a
// start given past the trace's end; the end after the start) and, where the
// answer is per pixel, the width.
struct Range {
  int64_t start = 0, end = 0;
  int pixels = 0;
};
inline std::string ParseRange(const std::multimap<std::string, std::string>& params, int64_t first, int64_t last,
                       bool per_pixel, Range* r) {
  std::string e = Param<int64_t>(params, "start", first, INT64_MIN / 4, INT64_MAX / 4, &r->start);
  if (e.empty()) e = Param<int64_t>(params, "end", std::max(last, r->start + 1), INT64_MIN / 4, INT64_MAX / 4, &r->end);
  if (e.empty() && per_pixel) e = Param<int>(params, "pixels", 1000, 1, kMaxPixels, &r->pixels);
  if (e.empty() && r->end <= r->start) e = "end must be after start";
  return e;
}

// A thread's lane over a range: the track named in the path (one of
// `tracks`) and the range asked for; an error response when either is bad.
inline std::optional<ApiResponse> ThreadLane(size_t tracks, int64_t first, int64_t last, std::string_view track_text,
                                      const std::multimap<std::string, std::string>& params, uint32_t* track,
                                      Range* r) {
  if (!ParseNumber(track_text, track) || *track >= tracks) return Error(404, "no such track");
  if (std::string e = ParseRange(params, first, last, true, r); !e.empty()) return Error(400, e);
  return std::nullopt;
}

}  // namespace api_detail

struct Api::Served {
  std::string path;
  std::once_flag opened;
  Status status = OkStatus();
  std::unique_ptr<model::Trace> trace;
  index::IndexUse use;
  index::LodTable lod;
  int64_t start_ns = 0, end_ns = 0;  // the trace's (a pass over every slice: found once)
  std::mutex analysis_mu;  // one analysis of the trace at a time (they share its Memo)
  std::string summary;     // the report's JSON, once computed or read
  std::string steps;
  // Step slices by start time, and the critical paths of the steps asked
  // about (walked one step at a time, on demand; a few kept).
  std::once_flag steps_once;
  std::vector<uint32_t> step_slices;
  std::map<uint32_t, analysis::StepCriticalPath> paths;
  // Flows by slice, both ways (built on the first slices query that asks):
  // (slice, the other end), sorted.
  std::once_flag flows_once;
  std::vector<std::pair<uint32_t, uint32_t>> flows_out, flows_in;
  // Counter rows by series, then time (built on the first counter query).
  const GroupedRows& CounterRows() {
    return counter_rows.Build(trace->counters.series, trace->counters.ts, trace->counter_series.size());
  }
  // Thread-state rows by track, then time (the OS level's on/off-CPU intervals).
  const GroupedRows& StateRows() {
    return state_rows.Build(trace->thread_states.track, trace->thread_states.ts, trace->tracks.size());
  }
  // Block summaries of every counter series (on the first counter query).
  const CounterLod& CounterBlocks() {
    return counter_lod.Build(CounterRows(), trace->counters.ts, trace->counters.value);
  }
  // System-call rows by track, then time.
  const GroupedRows& SyscallRows() {
    return syscall_rows.Build(trace->syscalls.track, trace->syscalls.ts, trace->tracks.size());
  }

 private:
  GroupedRows counter_rows, state_rows, syscall_rows;
  CounterLod counter_lod;
};

}  // namespace strata::server

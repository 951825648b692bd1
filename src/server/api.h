// The REST API of `strata view` (/api/v1/...), apart from the HTTP transport
// (http_server.h): a request is a method, a path and its query parameters, a
// response a status and a JSON body. docs/api/openapi.yaml describes it.
//
// Only the traces named when the API was made can be read, by their number
// on that list; a trace is opened (through its index, index/open_trace.h) on
// the first request that needs it, and its levels of detail read from the
// index, so a viewport query never touches raw events. Bad input (an unknown
// path, a parameter that is not a number, a range out of bounds) is a 4xx
// with {"error": "..."}, never an exception out of Handle.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "index/lod.h"
#include "index/open_trace.h"
#include "model/trace.h"
#include "server/http_backend.h"

namespace strata::server {

// Bounds on what one request may ask for.
inline constexpr int kMaxPixels = 16384;            // viewport width
inline constexpr size_t kMaxViewportTracks = 4096;  // lanes per viewport query
inline constexpr size_t kMaxSlices = 20000;         // slices per slices query
inline constexpr size_t kMaxSearchText = 256;       // bytes of a name searched for

class LiveRun;

class Api {
 public:
  // `traces`: paths as named on the command line; `io`: how they are opened.
  Api(std::vector<std::string> traces, index::IndexOptions io);
  ~Api();
  // Serves a model already open (tests, the fuzz target) as the next trace.
  void AddOpened(std::string name, model::Trace t);
  // Serves one more trace (a live run's, once written); its number. Safe while
  // requests are served.
  size_t AddTrace(std::string path);
  // A recording under way (`strata record --serve`): GET /api/v1/live and
  // POST /api/v1/record answer from it. Set before serving; not owned.
  void SetLive(LiveRun* live) { live_ = live; }
  // `body`: a POST's body (only POST /api/v1/record takes one).
  ApiResponse Handle(std::string_view method, std::string_view path,
                     const std::multimap<std::string, std::string>& params, std::string_view body = {});

 private:
  struct Served;
  Served* Open(size_t id, ApiResponse* error);
  ApiResponse Traces();
  ApiResponse TraceInfo(Served& s);
  ApiResponse Summary(Served& s);
  ApiResponse Steps(Served& s);
  ApiResponse Viewport(Served& s, const std::multimap<std::string, std::string>& params);
  ApiResponse Slices(Served& s, const std::multimap<std::string, std::string>& params);
  ApiResponse Slice(Served& s, std::string_view id);
  ApiResponse SlicePath(Served& s, std::string_view id);
  ApiResponse Search(Served& s, const std::multimap<std::string, std::string>& params);
  ApiResponse Counters(Served& s);
  ApiResponse ThreadStates(Served& s, std::string_view track, const std::multimap<std::string, std::string>& params);
  ApiResponse Syscalls(Served& s, std::string_view track, const std::multimap<std::string, std::string>& params);
  ApiResponse Counter(Served& s, std::string_view id, const std::multimap<std::string, std::string>& params);
  ApiResponse Diff(const std::multimap<std::string, std::string>& params);

  index::IndexOptions io_;
  std::mutex traces_mu_;  // the list grows while requests are served (AddTrace)
  std::vector<std::unique_ptr<Served>> traces_;
  LiveRun* live_ = nullptr;
  std::mutex diffs_mu_;
  std::map<std::pair<size_t, size_t>, std::string> diffs_;  // (before, after) -> answer
};

}  // namespace strata::server

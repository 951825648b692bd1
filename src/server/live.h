// The live side of the REST API: a recording under way (`strata record
// --serve`). It reads what the traced processes write back into the
// recording's control block (format/control.h) -- the step they are in, and
// each finished step with the tiers it was recorded with -- and turns a
// request for detail (POST /api/v1/record {"steps": N, "detail": [...]}) into a
// step window of the control block, as `strata ctl --detail ... --steps N`
// does. When the program ends, the finished trace is served like any other
// (Api::AddTrace) and the live state says which trace it is.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "format/control.h"
#include "format/control_file.h"

namespace strata::server {

struct ApiResponse;

// At most this many finished steps are kept (the oldest go first).
inline constexpr size_t kMaxLiveSteps = 1'000'000;
// Steps per GET /api/v1/live answer.
inline constexpr size_t kLiveStepsPerAnswer = 5000;
// The longest window a request may ask for.
inline constexpr int64_t kMaxWindowSteps = 100'000;

class LiveRun {
 public:
  // `dir`: the recording's directory (its control file); `command`: what runs.
  static StatusOr<std::unique_ptr<LiveRun>> Open(const std::string& dir, std::string command);
  ~LiveRun();

  // GET /api/v1/live?since=K: the run's state and its finished steps from the K-th on.
  ApiResponse State(uint64_t since);
  // POST /api/v1/record: the body as sent.
  ApiResponse Request(std::string_view body);
  // The program ended with `exit_code`; its trace is served as trace `trace_id`.
  void Finished(int exit_code, size_t trace_id);
  // Reads the live-step ring (a thread does it every 100 ms; tests call it).
  void Poll();

 private:
  LiveRun() = default;
  format::ControlFile control_;
  std::string dir_, command_;
  uint64_t started_ns_ = 0;
  std::mutex mu_;  // steps_, next_, missed_
  struct Step {
    format::LiveStepRecord r;
    uint64_t period_ns;  // from the process's previous step's end (0 for its first)
  };
  std::vector<Step> steps_;
  std::unordered_map<uint32_t, uint64_t> last_end_;  // by pid
  uint64_t dropped_front_ = 0;  // steps let go from the front of steps_ (kMaxLiveSteps)
  uint64_t next_ = 0, missed_ = 0;
  struct Window {
    int64_t first, last;
    uint32_t tiers;
  };
  std::vector<Window> requests_;  // what was asked, for the state
  std::atomic<bool> finished_{false};
  std::atomic<int> exit_code_{0};
  std::atomic<int64_t> trace_id_{-1};
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

}  // namespace strata::server

// The live side of the REST API: a recording under way (`strata record
// --serve`). It reads what the traced processes write back into the
// recording's control block (format/control.h) -- the step they are in, and
// each finished step with the tiers it was recorded with -- and turns a
// request for detail (POST /api/v1/record {"steps": N, "detail": [...]}) into a
// step window of the control block, as `strata ctl --detail ... --steps N`
// does. When the program ends, the finished trace is served like any other
// (Api::AddTrace) and the live state says which trace it is.
//
// Steps are training iterations: a loop with several optimizers (a GAN's
// discriminator and generator) ends one step per optimizer in the traced
// process, and those are grouped here -- an iteration ends before an
// optimizer steps a second time, or, once the loop's period is learned (two
// iterations alike), when it has that many optimizer steps -- so that the
// numbers are the program's iterations, as the trace's analysis finds them
// afterwards. A window asked for in iterations becomes the traced processes'
// steps of those iterations.
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
    format::LiveStepRecord r;  // r.step: the iteration's number
    uint64_t period_ns;        // from the process's previous iteration's end (0 for its first)
    int64_t first_step, last_step;  // the traced process's steps it groups
  };
  // An iteration under way in a process: the optimizer steps it has so far.
  struct Under {
    std::vector<uint32_t> optimizers;
    format::LiveStepRecord first{}, last{};
    uint32_t tiers = 0;
  };
  void Add(const format::LiveStepRecord& r);
  void Close(uint32_t pid, bool predicted);
  std::vector<Step> steps_;
  std::unordered_map<uint32_t, uint64_t> last_end_;   // by pid
  std::unordered_map<uint32_t, Under> open_;          // by pid
  std::unordered_map<uint32_t, int64_t> iteration_;   // by pid: the number of the iteration under way
  std::unordered_map<uint32_t, int64_t> last_closed_; // by pid: the last process step of the last iteration
  uint32_t last_pid_ = 0;                             // the process that ended a step last
  size_t period_ = 0;        // optimizer steps per iteration, once two alike were seen (0: not yet)
  size_t last_group_ = 0;    // the size of the last iteration closed
  uint64_t dropped_front_ = 0;  // steps let go from the front of steps_ (kMaxLiveSteps)
  uint64_t next_ = 0, missed_ = 0;
  struct Window {
    int64_t first, last;  // iterations
    uint32_t tiers;
    int64_t step_first, step_last;  // the traced processes' steps
  };
  std::vector<Window> requests_;  // what was asked, for the state
  std::atomic<bool> finished_{false};
  std::atomic<int> exit_code_{0};
  std::atomic<int64_t> trace_id_{-1};
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

}  // namespace strata::server

// CUDA device activity in windows of steps: CUPTI's activity records (kernels,
// copies, memsets, synchronizations, allocations) are the CUDA collector's
// cost -- on an H100 they made a tiny-op training loop ~40% slower -- so they
// are recorded for the steps the control block asks for (format/control.h
// CudaActivityWanted: every step, one in N, or the step windows a user asks
// for with `strata ctl --detail cuda` or the web UI), while API calls stay on.
//
// At every API call's ENTER the window compares the step the process is in
// (recorder::CurrentStep) with the last one it saw: one relaxed load and a
// compare. When the step changes it asks the control block whether this step
// wants device activity (between two steps, the window stays as it was) and
// switches: on entering, every device kind is
// enabled (cuptiActivityEnable); on leaving, they are disabled and the
// completed buffers flushed (cuptiActivityFlushAll), so that a window's records
// reach the trace while its numbers are fresh. Inside a window each API call's
// correlation id is noted with its step; each device record decoded is
// attributed to the step of its launch (a kernel still running after its
// window closed is attributed all the same). Records CUPTI dropped while a
// window was open, or in its final flush, are counted against it.
//
// The trace shows each window as an instant on the thread that opened or
// closed it ("CUDA activity on", "CUDA activity off"), and the collector's
// status lists the windows.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/control.h"

namespace strata::cupti {

struct CuptiApi;

class ActivityWindow {
 public:
  struct Window {
    int64_t first_step = -1, last_step = -1;  // -1: outside steps (before the first)
    uint64_t api_calls = 0;                   // API calls made while it was open
    uint64_t records = 0;                     // device records attributed to its steps
    uint64_t dropped = 0;                     // records CUPTI dropped while it was open or flushed
    bool closed = false;
    std::map<int64_t, uint64_t> records_by_step;
  };

  // `kinds`: the device-activity kinds switched per window; the first is
  // required (if it cannot be enabled, the window says so in problem()).
  // `control`: the switches (nullptr: every step, as --cuda-activity all).
  ActivityWindow(const CuptiApi* api, std::vector<CUpti_ActivityKind> kinds, const format::ControlBlock* control);

  // Decides for the step the process is in now (at start: before any step).
  void Start();
  // An API call enters, in `step` (-1: outside steps).
  void OnApiEnter(uint32_t correlation, int64_t step) {
    if (step == seen_step_.load(std::memory_order_relaxed)) {
      if (attributing_.load(std::memory_order_relaxed)) NoteCall(correlation, step < 0 ? last_step_.load(std::memory_order_relaxed) : step);
      return;
    }
    StepChanged(correlation, step);
  }
  // A device record (kernel, copy, memset) was decoded.
  void OnRecord(uint32_t correlation);
  // CUPTI reported `n` more dropped records.
  void OnDropped(uint64_t n);
  // At exit: a window still open is closed (without a flush: the session's
  // forced flush follows).
  void Finish();

  bool open() const { return open_.load(std::memory_order_relaxed); }
  std::vector<Window> windows() const;
  uint64_t unattributed() const;
  // What could not be switched (empty when all went well).
  std::string problem() const;
  // "3 windows (steps 25, 75, 125): 1,204 records ..." for the collector status.
  std::string Describe() const;

 private:
  void NoteCall(uint32_t correlation, int64_t step);
  void StepChanged(uint32_t correlation, int64_t step);
  bool Wanted(int64_t step) const;
  void Switch(bool on, int64_t step);  // with switch_mu_ held

  const CuptiApi* api_;
  std::vector<CUpti_ActivityKind> kinds_;
  const format::ControlBlock* control_;
  std::atomic<int64_t> seen_step_{INT64_MIN};
  std::atomic<int64_t> last_step_{-1};  // the last step (>= 0) seen: calls between steps belong to it
  std::atomic<bool> open_{false};
  // Open, and not for the whole run (--cuda-activity all records every step:
  // no call is noted then, so that the default costs one compare per call).
  std::atomic<bool> attributing_{false};
  std::mutex switch_mu_;  // one switch at a time; never held by OnRecord (a flush decodes)
  mutable std::mutex mu_;  // the fields below
  std::unordered_map<uint32_t, int64_t> step_of_;  // correlation -> step, for the open and last window
  std::vector<Window> windows_;
  uint64_t unattributed_ = 0;
  std::string problem_;
};

}  // namespace strata::cupti

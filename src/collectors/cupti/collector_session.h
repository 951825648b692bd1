// One CUDA collection session per process: the CUPTI set-up and tear-down of
// cupti_collector.h, the activity buffers, and the collector status. CUPTI is
// reached through CuptiApi, a table of the calls that differ between a real
// run and a test without a GPU (which fakes refusals and drop counts).
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "collectors/cupti/activity_window.h"
#include "collectors/cupti/cupti_collector.h"
#include "collectors/cupti/range_profiler.h"

namespace strata::cupti {

struct SessionOptions {
  size_t buffer_bytes = 8u << 20;  // per activity buffer (CUPTI recommends 1-10 MB)
  size_t max_buffers = 32;         // in flight at once; beyond, CUPTI drops (and counts) records
  uint32_t flush_ms = 100;         // CUPTI's worker delivers completed buffers this often
  std::string gpu_metrics;         // --gpu-metrics window, or empty
  // How API calls are traced (strata record --cuda-api): CUPTI callbacks on the
  // calls that matter, callbacks on every call, activity records, or not at all.
  enum class Api { kCallbacks, kAllCallbacks, kActivity, kNone };
  Api api = Api::kCallbacks;
  // STRATA_CUPTI_BUFFER_BYTES, STRATA_CUPTI_BUFFERS, STRATA_CUPTI_FLUSH_MS, STRATA_GPU_METRICS,
  // STRATA_CUDA_API (callbacks, all, activity, none).
  static SessionOptions FromEnv();
};

struct CuptiApi {
  CUptiResult (*version)(uint32_t*) = nullptr;
  CUptiResult (*timestamp_callback)(CUpti_TimestampCallbackFunc) = nullptr;
  CUptiResult (*register_buffers)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams*) = nullptr;
  CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) = nullptr;
  CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain) = nullptr;
  CUptiResult (*enable_kind)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable_kind)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*flush_period)(uint32_t) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*dropped)(size_t*) = nullptr;  // records dropped since the last call
  static CuptiApi Real();
};

std::string CuptiError(const char* what, CUptiResult r);

class Session {
 public:
  Session(const SessionOptions& o, const CuptiApi& api);
  // InitializeInjection's work; false (with the reason reported) if CUDA
  // cannot be recorded in this process.
  bool Start();
  // At exit: forced flush, range profiler results, final status.
  void Stop();
  void Disable();

  // The CUPTI callbacks.
  void ProvideBuffer(uint8_t** buffer, size_t* size, size_t* max_records);
  void BufferDone(uint8_t* buffer, size_t valid);
  void OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);

  ActivityDecoder& decoder() { return decoder_; }
  CallbackHandler& callbacks() { return callbacks_; }
  ThreadMap& threads() { return threads_; }
  bool callbacks_on() const { return callbacks_on_; }
  // The device-activity window (nullptr when activity is on for the whole run
  // because API callbacks, which drive it, are off).
  const ActivityWindow* window() const { return window_; }
  uint64_t refused_buffers() const { return refused_buffers_.load(); }

 private:
  static void LaunchHook(uint32_t correlation, void* arg);
  void Note(std::string problem);
  void ReportFinal();

  SessionOptions opt_;
  CuptiApi api_;
  ThreadMap threads_;
  ActivityDecoder decoder_{&threads_};
  CallbackHandler callbacks_{&threads_};
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool callbacks_on_ = false;
  std::atomic<bool> on_{false};
  RangeProfiler* profiler_ = nullptr;
  ActivityWindow* window_ = nullptr;
  static void RecordHook(uint32_t correlation, void* arg);
  std::string fatal_;

  std::mutex buffers_mu_;
  std::vector<uint8_t*> free_buffers_;
  size_t allocated_buffers_ = 0;
  std::atomic<uint64_t> refused_buffers_{0};

  std::mutex notes_mu_;
  std::vector<std::string> notes_;  // what could not be done, for the status
};

// The process's session (created once; InitializeInjection and tests).
Session* StartSession(const SessionOptions& o, const CuptiApi& api);
Session* CurrentSession();

}  // namespace strata::cupti

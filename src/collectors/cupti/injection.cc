// libstrata_cupti.so's entry points (design: cupti_collector.h):
//   InitializeInjection       called by the CUDA driver inside the first cuInit
//                             (CUDA_INJECTION64_PATH): CUPTI calls only, no CUDA.
//   InitializeInjectionNvtx2  called by NVTX at its first use (NVTX_INJECTION64_PATH):
//                             forwarded to the CUPTI this library links, which
//                             then serves NVTX to its callback subscribers.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/cupti/collector_session.h"
#include "recorder/runtime.h"

namespace strata::cupti {
namespace {

Session* g_session = nullptr;

uint64_t CUPTIAPI MonotonicTimestamp() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  g_session->ProvideBuffer(buffer, size, max_records);
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  g_session->BufferDone(buffer, valid);
}

void CUPTIAPI Callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  g_session->OnCallback(domain, cbid, data);
}

void AtExit() { g_session->Stop(); }

void OnForkChild() {
  // CUDA does not work in a forked child; neither does CUPTI. Stay out of its way.
  if (g_session) g_session->Disable();
}

}  // namespace

// --- Session -------------------------------------------------------------------------

std::string CuptiError(const char* what, CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(what) + " failed: " + (s ? s : "CUPTI error") + " (" + std::to_string(static_cast<int>(r)) + ")";
}

Session::Session(const SessionOptions& o, const CuptiApi& api) : opt_(o), api_(api) {}

void Session::ProvideBuffer(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  uint8_t* b = nullptr;
  {
    std::lock_guard<std::mutex> lk(buffers_mu_);
    if (!free_buffers_.empty()) {
      b = free_buffers_.back();
      free_buffers_.pop_back();
    } else if (allocated_buffers_ < opt_.max_buffers) {
      // CUPTI wants 8-byte aligned buffers (ACTIVITY_RECORD_ALIGNMENT).
      b = static_cast<uint8_t*>(std::aligned_alloc(64, opt_.buffer_bytes));
      if (b) ++allocated_buffers_;
    }
  }
  // No buffer: CUPTI drops records and counts them (cuptiActivityGetNumDroppedRecords).
  if (!b) refused_buffers_.fetch_add(1, std::memory_order_relaxed);
  *buffer = b;
  *size = b ? opt_.buffer_bytes : 0;
}

void Session::BufferDone(uint8_t* buffer, size_t valid) {
  if (buffer && valid && on_.load(std::memory_order_acquire)) decoder_.DecodeBuffer(buffer, valid);
  size_t dropped = 0;
  if (api_.dropped && api_.dropped(&dropped) == CUPTI_SUCCESS) {
    decoder_.AddDropped(dropped);
    if (window_) window_->OnDropped(dropped);
  }
  if (!buffer) return;
  std::lock_guard<std::mutex> lk(buffers_mu_);
  free_buffers_.push_back(buffer);
}

void Session::OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (!on_.load(std::memory_order_relaxed) || !data) return;
  if (domain == CUPTI_CB_DOMAIN_STATE && cbid == CUPTI_CBID_STATE_FATAL_ERROR) {
    // CUPTI finalizes itself after a fatal error: nothing more will come.
    fatal_ = "CUPTI reported a fatal error and stopped; recording ended there";
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && profiler_) {
    const auto* rd = static_cast<const CUpti_ResourceData*>(data);
    uint32_t dev = 0;
    if (rd->context && cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS) profiler_->OnContext(rd->context, dev);
  }
  if (window_ && (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API)) {
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (cb->callbackSite == CUPTI_API_ENTER) {
      uint64_t step = recorder::CurrentStep();
      window_->OnApiEnter(cb->correlationId, step == UINT64_MAX ? -1 : static_cast<int64_t>(step));
    }
  }
  callbacks_.OnCallback(domain, cbid, data);
}

void Session::RecordHook(uint32_t correlation, void* arg) {
  static_cast<ActivityWindow*>(arg)->OnRecord(correlation);
}

void Session::LaunchHook(uint32_t correlation, void* arg) {
  auto* s = static_cast<Session*>(arg);
  if (s->profiler_) s->profiler_->OnLaunch(correlation, recorder::CurrentStep());
}

void Session::Note(std::string problem) {
  std::lock_guard<std::mutex> lk(notes_mu_);
  notes_.push_back(std::move(problem));
}

bool Session::Start() {
  uint32_t version = 0;
  if (api_.version && api_.version(&version) == CUPTI_SUCCESS && version / 10000 != CUPTI_API_VERSION / 10000) {
    // Activity records are read with the struct layouts of the CUPTI strata was
    // built against: another major version would be misread.
    recorder::ReportCollectorStatus("cuda", "unavailable",
                                    "CUPTI API version " + std::to_string(version) + " in this process, strata was "
                                    "built against " + std::to_string(CUPTI_API_VERSION) +
                                    " (different major version); CUDA not recorded");
    return false;
  }
  if (version && version != CUPTI_API_VERSION)
    Note("CUPTI " + std::to_string(version) + " at run time, built against " + std::to_string(CUPTI_API_VERSION));

  // Before any kind is enabled: CUPTI's timestamps on strata's clock.
  CUptiResult r = api_.timestamp_callback ? api_.timestamp_callback(MonotonicTimestamp) : CUPTI_ERROR_NOT_SUPPORTED;
  if (r != CUPTI_SUCCESS) {
    decoder_.set_time_offset(accel::MeasureClockOffset(CLOCK_REALTIME));
    Note(CuptiError("cuptiActivityRegisterTimestampCallback", r) +
         "; CUPTI's CLOCK_REALTIME timestamps are mapped to CLOCK_MONOTONIC by an offset measured at start");
  }
  if ((r = api_.register_buffers(BufferRequested, BufferCompleted)) != CUPTI_SUCCESS) {
    recorder::ReportCollectorStatus("cuda", "unavailable", CuptiError("cuptiActivityRegisterCallbacks", r));
    return false;
  }

  // The Callback API: one subscriber per process.
  CUpti_SubscriberParams sp{};
  sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  sp.subscriberName = "strata";
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  sp.oldSubscriberName = other;
  sp.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
  using Api = SessionOptions::Api;
  bool want_callbacks = opt_.api == Api::kCallbacks || opt_.api == Api::kAllCallbacks;
  bool want_api = opt_.api != Api::kNone;
  r = want_callbacks ? api_.subscribe(&subscriber_, Callback, nullptr, &sp) : CUPTI_SUCCESS;
  bool callbacks = want_callbacks && r == CUPTI_SUCCESS;
  if (callbacks) {
    callbacks_.Init(opt_.api == Api::kAllCallbacks);
    callbacks_.set_launch_hook(LaunchHook, this);
    for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid)
      if (callbacks_.WantRuntime(cbid)) api_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
    for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
      if (callbacks_.WantDriver(cbid)) api_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    for (CUpti_CallbackDomain d : {CUPTI_CB_DOMAIN_NVTX, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_STATE})
      if ((r = api_.enable_domain(1, subscriber_, d)) != CUPTI_SUCCESS) Note(CuptiError("cuptiEnableDomain", r));
  } else if (want_callbacks) {
    std::string who = other[0] ? std::string(" (held by ") + other + ")" : "";
    Note(CuptiError("cuptiSubscribe", r) + who +
         "; API calls and NVTX ranges come from activity records instead, without arguments");
  }

  struct Kind {
    CUpti_ActivityKind kind;
    const char* name;
    bool required;
  };
  // Device activity: switched per window of steps (activity_window.h) when
  // the callbacks that drive the window are on; the rest stays on.
  std::vector<Kind> device_kinds = {
      // CONCURRENT_KERNEL, never KERNEL: KERNEL serializes every kernel on the GPU.
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels", true},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy", false},
      {CUPTI_ACTIVITY_KIND_MEMCPY2, "peer-to-peer memcpy", false},
      {CUPTI_ACTIVITY_KIND_MEMSET, "memset", false},
      {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization", false},
      {CUPTI_ACTIVITY_KIND_MEMORY2, "memory allocation", false},
      {CUPTI_ACTIVITY_KIND_OVERHEAD, "overhead", false},
  };
  std::vector<Kind> kinds = {
      {CUPTI_ACTIVITY_KIND_DEVICE, "device descriptions", false},
      {CUPTI_ACTIVITY_KIND_CONTEXT, "contexts", false},
  };
  if (!callbacks && want_api) {
    kinds.push_back({CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API", false});
    kinds.push_back({CUPTI_ACTIVITY_KIND_DRIVER, "driver API", false});
    kinds.push_back({CUPTI_ACTIVITY_KIND_MARKER, "NVTX markers", false});
  }
  // Every kind is enabled once, to learn which CUPTI supports (and to refuse
  // early when kernels cannot be recorded); a window then switches the device
  // kinds that worked.
  std::vector<CUpti_ActivityKind> windowed;
  for (const Kind& k : device_kinds) {
    kinds.insert(kinds.begin() + static_cast<std::ptrdiff_t>(windowed.size()), k);
    windowed.push_back(k.kind);
  }
  for (const Kind& k : kinds) {
    if ((r = api_.enable_kind(k.kind)) == CUPTI_SUCCESS) continue;
    if (auto w = std::find(windowed.begin(), windowed.end(), k.kind); w != windowed.end()) windowed.erase(w);
    if (k.required) {
      recorder::ReportCollectorStatus("cuda", "unavailable",
                                      CuptiError("cuptiActivityEnable(CONCURRENT_KERNEL)", r) + "; CUDA not recorded");
      return false;
    }
    Note(std::string("no ") + k.name + ": " + CuptiError("cuptiActivityEnable", r));
  }
  const format::ControlBlock* control = recorder::Control();
  bool all_steps = control == nullptr ||
                   control->cuda_activity.load(std::memory_order_relaxed) == static_cast<uint32_t>(format::CudaActivity::kAll);
  if (callbacks && api_.disable_kind) {
    // Device kinds off until the window wants them (at once, for --cuda-activity all).
    for (CUpti_ActivityKind k : windowed) (void)api_.disable_kind(k);
    window_ = new ActivityWindow(&api_, windowed, control);
    decoder_.set_record_hook(RecordHook, window_);
    window_->Start();
  } else if (!all_steps) {
    Note("--cuda-activity " + std::string(format::CudaActivityName(static_cast<format::CudaActivity>(
                                  control->cuda_activity.load(std::memory_order_relaxed)))) +
         " needs CUPTI's callbacks (the steps' API calls switch the window): device activity recorded in every step");
  }
  if (api_.flush_period && (r = api_.flush_period(opt_.flush_ms)) != CUPTI_SUCCESS)
    Note(CuptiError("cuptiActivityFlushPeriod", r) + "; buffers are delivered when full and at exit");

  if (!opt_.gpu_metrics.empty()) {
    MetricWindow w;
    std::string error;
    if (!callbacks) Note("--gpu-metrics needs the callback API: not collected");
    else if (!ParseMetricWindow(opt_.gpu_metrics, &w, &error)) Note("--gpu-metrics " + opt_.gpu_metrics + ": " + error);
    else profiler_ = new RangeProfiler(w);
  }
  callbacks_on_ = callbacks;
  on_.store(true, std::memory_order_release);
  recorder::ReportCollectorStatus("cuda", "ok", "CUPTI " + std::to_string(version) + " active");
  return true;
}

void Session::Stop() {
  if (!on_.load(std::memory_order_acquire)) return;
  if (window_) window_->Finish();
  // Everything CUPTI still holds, complete or not; decoded on this thread.
  if (api_.flush_all) {
    CUptiResult r = api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) Note(CuptiError("cuptiActivityFlushAll", r));
  }
  if (profiler_) {
    profiler_->Finish();
    if (!profiler_->problem().empty()) Note("--gpu-metrics: " + profiler_->problem());
  }
  on_.store(false, std::memory_order_release);
  ReportFinal();
}

void Session::ReportFinal() {
  DecoderStats s = decoder_.stats();
  std::string detail = std::to_string(s.kernels) + " kernels, " + std::to_string(s.copies) + " copies, " +
                       std::to_string(s.fills) + " memsets, " + std::to_string(s.syncs) + " synchronizations, " +
                       std::to_string(s.memory) + " allocations/frees";
  if (callbacks_on_) detail += ", " + std::to_string(callbacks_.api_calls()) + " API calls";
  else if (opt_.api == SessionOptions::Api::kNone) detail += ", API calls not recorded (--cuda-api none)";
  else detail += ", " + std::to_string(s.api) + " API calls from activity records";
  detail += " (CUPTI, " + std::to_string(s.buffers) + " buffers)";
  bool partial = false;
  if (window_) {
    const format::ControlBlock* control = recorder::Control();
    auto mode = control ? static_cast<format::CudaActivity>(control->cuda_activity.load(std::memory_order_relaxed))
                        : format::CudaActivity::kAll;
    std::vector<ActivityWindow::Window> ws = window_->windows();
    // One window from the start to the end is --cuda-activity all: nothing to say.
    if (mode != format::CudaActivity::kAll || ws.size() != 1 || ws.front().first_step >= 0)
      detail += "; device activity " + std::string(format::CudaActivityName(mode)) + ": " + window_->Describe();
    if (!window_->problem().empty()) {
      detail += "; " + window_->problem();
      partial = true;
    }
  }
  if (s.dropped) {
    detail += "; " + std::to_string(s.dropped) + " activity records dropped by CUPTI (no buffer space: raise STRATA_CUPTI_BUFFERS)";
    partial = true;
  }
  // CUPTI gives the kernels the range profiler replays no timestamps (seen on an
  // H100 with CUPTI 13.0): those are expected, and the importer places them at
  // their launch with the profiler's duration. Others mean CUPTI ran out of
  // device memory for timestamps.
  uint64_t replayed = profiler_ ? std::min<uint64_t>(s.untimed, profiler_->kernels_profiled()) : 0;
  if (s.untimed > replayed) {
    detail += "; " + std::to_string(s.untimed - replayed) + " kernels without timestamps (CUPTI out of device memory for them)";
    partial = true;
  }
  if (profiler_) {
    detail += "; --gpu-metrics: " + std::to_string(profiler_->kernels_profiled()) +
              " kernels profiled (replayed: their timings in the window are not representative";
    if (replayed) detail += "; " + std::to_string(replayed) + " of them untimed by CUPTI, placed at their launch";
    detail += ")";
  }
  if (!fatal_.empty()) {
    detail += "; " + fatal_;
    partial = true;
  }
  {
    std::lock_guard<std::mutex> lk(notes_mu_);
    for (const std::string& n : notes_) {
      detail += "; " + n;
      partial = true;
    }
  }
  recorder::ReportCollectorStatus("cuda", partial ? "partial" : "ok", detail);
}

void Session::Disable() { on_.store(false, std::memory_order_relaxed); }

SessionOptions SessionOptions::FromEnv() {
  SessionOptions o;
  auto num = [](const char* name, uint64_t def) -> uint64_t {
    const char* v = ::secure_getenv(name);
    if (!v || !*v) return def;
    char* end = nullptr;
    unsigned long long x = std::strtoull(v, &end, 10);
    return end && *end == '\0' && x > 0 ? x : def;
  };
  o.buffer_bytes = num("STRATA_CUPTI_BUFFER_BYTES", 8u << 20) & ~uint64_t{7};
  o.max_buffers = num("STRATA_CUPTI_BUFFERS", 32);
  o.flush_ms = static_cast<uint32_t>(num("STRATA_CUPTI_FLUSH_MS", 100));
  if (const char* m = ::secure_getenv("STRATA_GPU_METRICS")) o.gpu_metrics = m;
  if (const char* a = ::secure_getenv("STRATA_CUDA_API")) {
    std::string_view v = a;
    o.api = v == "all" ? Api::kAllCallbacks : v == "activity" ? Api::kActivity : v == "none" ? Api::kNone : Api::kCallbacks;
  }
  return o;
}

CuptiApi CuptiApi::Real() {
  CuptiApi a;
  a.version = cuptiGetVersion;
  a.timestamp_callback = cuptiActivityRegisterTimestampCallback;
  a.register_buffers = cuptiActivityRegisterCallbacks;
  a.subscribe = cuptiSubscribe_v2;
  a.enable_callback = cuptiEnableCallback;
  a.enable_domain = cuptiEnableDomain;
  a.enable_kind = cuptiActivityEnable;
  a.disable_kind = cuptiActivityDisable;
  a.flush_period = cuptiActivityFlushPeriod;
  a.flush_all = cuptiActivityFlushAll;
  a.dropped = [](size_t* n) { return cuptiActivityGetNumDroppedRecords(nullptr, 0, n); };
  return a;
}

Session* StartSession(const SessionOptions& o, const CuptiApi& api) {
  if (g_session) return g_session;
  g_session = new Session(o, api);
  if (!g_session->Start()) return g_session;
  pthread_atfork(nullptr, nullptr, OnForkChild);
  // Registered after libstrata's own exit handler, so it runs first: the last
  // buffers are decoded before the recorder's final flush.
  std::atexit(AtExit);
  return g_session;
}

Session* CurrentSession() { return g_session; }

}  // namespace strata::cupti

extern "C" {

__attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!strata::recorder::Active()) return;  // loaded outside `strata record`
    strata::cupti::StartSession(strata::cupti::SessionOptions::FromEnv(), strata::cupti::CuptiApi::Real());
  });
  return 1;
}

// NVTX's injection entry: hand NVTX to the CUPTI we link (the one our
// subscriber listens to), found through a symbol only CUPTI exports.
typedef const void* (*NvtxGetExportTable)(uint32_t);
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTable get_export_table) {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) || !info.dli_fname) return 0;
  void* cupti = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!cupti) return 0;
  using Init = int (*)(NvtxGetExportTable);
  auto init = reinterpret_cast<Init>(dlsym(cupti, "InitializeInjectionNvtx2"));
  return init ? init(get_export_table) : 0;
}

}  // extern "C"

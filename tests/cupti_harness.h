// The CUDA collector's test harness without a GPU (cupti_test.cc,
// cupti_window_test.cc): a fake CUPTI control plane (enable, disable, flush,
// drop counts) around the real data plane -- activity records in real CUPTI
// buffers, iterated by libcupti, and callback data with the runtime's own
// parameter structs -- and a scenario run in a child process with an
// in-process recorder, whose trace is loaded back through the importer.
#pragma once

#include <gtest/gtest.h>

#include <cupti.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "base/files.h"
#include "collectors/cupti/collector_session.h"
#include "format/control.h"
#include "recorder/runtime_internal.h"
#include "tests/testing.h"

namespace strata::cupti_harness {

using model::SliceKind;
using testing::Load;
using testing::TempDir;

inline uint64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// --- a fake CUPTI control plane (the data plane is real CUPTI) -------------------

struct Fake {
  static inline std::vector<CUpti_ActivityKind> disabled;
  static inline int flushes = 0;  // cuptiActivityFlushAll calls
  static inline CUptiResult subscribe = CUPTI_SUCCESS;
  static inline CUptiResult timestamps = CUPTI_SUCCESS;
  static inline uint32_t version = CUPTI_API_VERSION;
  static inline size_t dropped_next = 0;
  static inline std::vector<CUpti_ActivityKind> enabled;
};

inline cupti::CuptiApi FakeApi() {
  cupti::CuptiApi a;
  a.version = [](uint32_t* v) {
    *v = Fake::version;
    return CUPTI_SUCCESS;
  };
  a.timestamp_callback = [](CUpti_TimestampCallbackFunc) { return Fake::timestamps; };
  a.register_buffers = [](CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) { return CUPTI_SUCCESS; };
  a.subscribe = [](CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams* p) {
    if (Fake::subscribe == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && p && p->oldSubscriberName)
      std::strcpy(p->oldSubscriberName, "kineto");
    return Fake::subscribe;
  };
  a.enable_callback = [](uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) { return CUPTI_SUCCESS; };
  a.enable_domain = [](uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain) { return CUPTI_SUCCESS; };
  a.enable_kind = [](CUpti_ActivityKind k) {
    Fake::enabled.push_back(k);
    return CUPTI_SUCCESS;
  };
  a.disable_kind = [](CUpti_ActivityKind k) {
    Fake::disabled.push_back(k);
    return CUPTI_SUCCESS;
  };
  a.flush_period = [](uint32_t) { return CUPTI_SUCCESS; };
  a.flush_all = [](uint32_t) {
    ++Fake::flushes;
    return CUPTI_SUCCESS;
  };
  a.dropped = [](size_t* n) {
    *n = Fake::dropped_next;
    Fake::dropped_next = 0;
    return CUPTI_SUCCESS;
  };
  return a;
}

// Runs `scenario` in a child process with a recorder and a CUDA session, then
// loads the trace it wrote. A fork per scenario: the recorder is once per process.
// `control`: a control block for the recording (the switches a supervisor set).
inline model::Trace RunScenario(const std::string& name, const std::function<void(cupti::Session&)>& scenario,
                                std::string* dir_out = nullptr, const format::ControlBlock* control = nullptr) {
  std::string dir = TempDir(name);
  if (dir_out) *dir_out = dir;
  if (control) {
    EXPECT_TRUE(MakeDirs(dir).ok());
    EXPECT_TRUE(format::WriteControlFile(dir + "/" + format::kControlFileName, *control).ok());
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    recorder::Config cfg;
    cfg.dir = dir;
    if (!recorder::Start(cfg).ok()) ::_exit(3);
    cupti::Session* s = cupti::StartSession(cupti::SessionOptions(), FakeApi());
    scenario(*s);
    s->Stop();
    recorder::Finalize();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "scenario process failed: " << status;
  return Load(dir);
}

// Activity records go through a real CUPTI buffer, as the driver delivers them.
class Buffer {
 public:
  explicit Buffer(cupti::Session& s) : s_(s) {
    size_t max = 0;
    s_.ProvideBuffer(&data_, &size_, &max);
  }
  template <typename R>
  Buffer& Add(const R& r) {
    std::memcpy(data_ + used_, &r, sizeof r);
    used_ += (sizeof r + 7) & ~size_t{7};
    return *this;
  }
  void Complete() { s_.BufferDone(data_, used_); }

 private:
  cupti::Session& s_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0, used_ = 0;
};

// One runtime/driver API call through the callback API, ENTER then EXIT.
struct ApiCall {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const void* params;
  const char* symbol = nullptr;
  uint32_t correlation = 0;
  int result = 0;
};

inline void Enter(cupti::Session& s, const ApiCall& c, uint64_t* scratch) {
  CUpti_CallbackData cb{};
  cb.callbackSite = CUPTI_API_ENTER;
  cb.functionName = "api";
  cb.functionParams = c.params;
  cb.symbolName = c.symbol;
  cb.correlationData = scratch;
  cb.correlationId = c.correlation;
  s.OnCallback(c.domain, c.cbid, &cb);
}

inline void Exit(cupti::Session& s, const ApiCall& c, uint64_t* scratch) {
  CUpti_CallbackData cb{};
  cb.callbackSite = CUPTI_API_EXIT;
  cb.functionName = "api";
  cb.functionParams = c.params;
  cb.functionReturnValue = const_cast<int*>(&c.result);
  cb.symbolName = c.symbol;
  cb.correlationData = scratch;
  cb.correlationId = c.correlation;
  s.OnCallback(c.domain, c.cbid, &cb);
}

inline void Call(cupti::Session& s, const ApiCall& c) {
  uint64_t scratch = 0;
  Enter(s, c, &scratch);
  Exit(s, c, &scratch);
}

inline CUpti_ActivityKernel10 Kernel(uint32_t corr, uint64_t start, uint64_t dur, uint32_t stream, const char* name) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = start + dur;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = stream;
  k.gridX = 64, k.gridY = 2, k.gridZ = 1;
  k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  k.staticSharedMemory = 512;
  k.dynamicSharedMemory = 1024;
  k.registersPerThread = 32;
  k.correlationId = corr;
  k.name = name;
  return k;
}

// --- model helpers ---------------------------------------------------------------

inline std::string Name(const model::Trace& t, size_t s) { return std::string(t.strings.Get(t.slices.name[s])); }

inline std::vector<size_t> Slices(const model::Trace& t, SliceKind k) {
  std::vector<size_t> out;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == k) out.push_back(i);
  return out;
}

inline std::string Arg(const model::Trace& t, size_t slice, const std::string& key) {
  model::StringId k = t.strings.Find(key);
  for (size_t i = 0; i < t.args.size(); ++i)
    if (t.args.slice[i] == slice && t.args.key[i] == k)
      return t.args.str[i] ? std::string(t.strings.Get(t.args.str[i])) : std::to_string(static_cast<int64_t>(t.args.num[i]));
  return "";
}

inline const model::CollectorStatus* Collector(const model::Trace& t, const std::string& name) {
  const model::CollectorStatus* last = nullptr;
  for (const auto& c : t.collectors)
    if (c.collector == name) last = &c;
  return last;
}

class Cupti : public ::testing::Test {
 protected:
  void SetUp() override {
    Fake::subscribe = CUPTI_SUCCESS;
    Fake::timestamps = CUPTI_SUCCESS;
    Fake::version = CUPTI_API_VERSION;
    Fake::dropped_next = 0;
    Fake::enabled.clear();
    Fake::disabled.clear();
    Fake::flushes = 0;
  }
};

}  // namespace strata::cupti_harness

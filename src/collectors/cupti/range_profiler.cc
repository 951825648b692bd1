// The range profiler tier (design: range_profiler.h). Follows CUPTI's
// documented call order: initialize, chip name, counter availability, host
// object + metrics -> config image, enable on the context, counter data image,
// set config, then start/stop around the window, decode and evaluate.
#include "collectors/cupti/range_profiler.h"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <cstdlib>
#include <cstring>

#include "collectors/accel/emit.h"

namespace strata::cupti {
namespace {

// FLOPs = add + mul + 2 x fma thread instructions, per precision.
constexpr const char* kMetrics[] = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",  // achieved occupancy, %
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "gpu__time_duration.sum",
};
enum : size_t { kDramRead, kDramWrite, kOccupancy, kDadd, kDmul, kDfma, kFadd, kFmul, kFfma, kHadd, kHmul, kHfma, kTime };

std::string ResultName(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(s ? s : "CUPTI error") + " (" + std::to_string(static_cast<int>(r)) + ")";
}

// Host object + config image for a chip: shared by the offline check and Setup.
CUptiResult BuildConfig(const char* chip, const uint8_t* availability, CUpti_Profiler_Host_Object** host,
                        std::vector<uint8_t>* config, size_t* passes, std::string* failed) {
  CUpti_Profiler_Host_Initialize_Params hi{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hi.pChipName = chip;
  hi.pCounterAvailabilityImage = availability;
  CUptiResult r = cuptiProfilerHostInitialize(&hi);
  if (r != CUPTI_SUCCESS) return *failed = "cuptiProfilerHostInitialize", r;
  *host = hi.pHostObject;
  const auto& m = ProfilerMetrics();
  CUpti_Profiler_Host_ConfigAddMetrics_Params am{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  am.pHostObject = *host;
  am.ppMetricNames = const_cast<const char**>(m.data());
  am.numMetrics = m.size();
  if ((r = cuptiProfilerHostConfigAddMetrics(&am)) != CUPTI_SUCCESS) return *failed = "cuptiProfilerHostConfigAddMetrics", r;
  CUpti_Profiler_Host_GetConfigImageSize_Params cs{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  cs.pHostObject = *host;
  if ((r = cuptiProfilerHostGetConfigImageSize(&cs)) != CUPTI_SUCCESS)
    return *failed = "cuptiProfilerHostGetConfigImageSize", r;
  config->assign(cs.configImageSize, 0);
  CUpti_Profiler_Host_GetConfigImage_Params gc{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  gc.pHostObject = *host;
  gc.configImageSize = config->size();
  gc.pConfigImage = config->data();
  if ((r = cuptiProfilerHostGetConfigImage(&gc)) != CUPTI_SUCCESS) return *failed = "cuptiProfilerHostGetConfigImage", r;
  CUpti_Profiler_Host_GetNumOfPasses_Params np{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  np.configImageSize = config->size();
  np.pConfigImage = config->data();
  if ((r = cuptiProfilerHostGetNumOfPasses(&np)) != CUPTI_SUCCESS) return *failed = "cuptiProfilerHostGetNumOfPasses", r;
  *passes = np.numOfPasses;
  return CUPTI_SUCCESS;
}

void DestroyHost(CUpti_Profiler_Host_Object* host) {
  if (!host) return;
  CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  p.pHostObject = host;
  cuptiProfilerHostDeinitialize(&p);
}

}  // namespace

const std::vector<const char*>& ProfilerMetrics() {
  static const std::vector<const char*> m(std::begin(kMetrics), std::end(kMetrics));
  return m;
}

bool ParseMetricWindow(const std::string& spec, MetricWindow* w, std::string* error) {
  auto number = [](const std::string& s, uint64_t* v) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *v = std::strtoull(s.c_str(), nullptr, 10);
    return true;
  };
  if (spec.rfind("kernels=", 0) == 0) {
    std::string rest = spec.substr(8), n = rest, skip = "0";
    size_t comma = rest.find(',');
    if (comma != std::string::npos) {
      n = rest.substr(0, comma);
      std::string opt = rest.substr(comma + 1);
      if (opt.rfind("skip=", 0) != 0) return *error = "expected skip=M after kernels=N", false;
      skip = opt.substr(5);
    }
    uint64_t count = 0, first = 0;
    if (!number(n, &count) || count == 0 || !number(skip, &first))
      return *error = "kernels=N[,skip=M] needs N > 0 and M >= 0", false;
    *w = {MetricWindow::Kind::kKernels, first, first + count};
    return true;
  }
  if (spec.rfind("steps=", 0) == 0) {
    std::string rest = spec.substr(6);
    size_t dash = rest.find('-');
    uint64_t a = 0, b = 0;
    if (dash == std::string::npos || !number(rest.substr(0, dash), &a) || !number(rest.substr(dash + 1), &b) || b < a)
      return *error = "steps=A-B needs A <= B", false;
    *w = {MetricWindow::Kind::kSteps, a, b};
    return true;
  }
  *error = "expected kernels=N[,skip=M] or steps=A-B";
  return false;
}

HostMetricCheck CheckMetricsOnHost(const char* chip) {
  HostMetricCheck out;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<uint8_t> config;
  std::string failed;
  CUptiResult r = BuildConfig(chip, nullptr, &host, &config, &out.passes, &failed);
  if (r != CUPTI_SUCCESS) out.error = failed + ": " + ResultName(r);
  out.ok = r == CUPTI_SUCCESS;
  DestroyHost(host);
  return out;
}

void RangeProfiler::Fail(const std::string& what, CUptiResult r) {
  problem_ = what + ": " + ResultName(r);
  done_ = true;
}

bool RangeProfiler::Setup(CUcontext ctx, uint32_t device) {
  ctx_ = ctx;
  device_ = device;
  CUpti_Profiler_Initialize_Params ip{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CUptiResult r = cuptiProfilerInitialize(&ip);
  if (r != CUPTI_SUCCESS) return Fail("cuptiProfilerInitialize", r), false;
  CUpti_Device_GetChipName_Params cn{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = device;
  if ((r = cuptiDeviceGetChipName(&cn)) != CUPTI_SUCCESS) return Fail("cuptiDeviceGetChipName", r), false;
  CUpti_Profiler_GetCounterAvailability_Params ca{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  ca.ctx = ctx;
  if ((r = cuptiProfilerGetCounterAvailability(&ca)) != CUPTI_SUCCESS)
    return Fail("cuptiProfilerGetCounterAvailability", r), false;
  availability_.assign(ca.counterAvailabilityImageSize, 0);
  ca.pCounterAvailabilityImage = availability_.data();
  if ((r = cuptiProfilerGetCounterAvailability(&ca)) != CUPTI_SUCCESS)
    return Fail("cuptiProfilerGetCounterAvailability", r), false;
  CUpti_Profiler_Host_Object* host = nullptr;
  size_t passes = 0;
  std::string failed;
  if ((r = BuildConfig(cn.pChipName, availability_.data(), &host, &config_, &passes, &failed)) != CUPTI_SUCCESS)
    return Fail(failed, r), false;
  host_ = host;
  CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  if ((r = cuptiRangeProfilerEnable(&en)) != CUPTI_SUCCESS) return Fail("cuptiRangeProfilerEnable", r), false;
  profiler_ = en.pRangeProfilerObject;
  // One range per kernel; a kernels= window is bounded, a steps= window gets
  // decoded every 1024 kernels.
  max_ranges_ = window_.kind == MetricWindow::Kind::kKernels ? window_.last - window_.first : 1024;
  if (max_ranges_ > 1024) max_ranges_ = 1024;
  const auto& m = ProfilerMetrics();
  CUpti_RangeProfiler_GetCounterDataSize_Params ds{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pRangeProfilerObject = static_cast<CUpti_RangeProfiler_Object*>(profiler_);
  ds.pMetricNames = const_cast<const char**>(m.data());
  ds.numMetrics = m.size();
  ds.maxNumOfRanges = max_ranges_;
  ds.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges_);
  if ((r = cuptiRangeProfilerGetCounterDataSize(&ds)) != CUPTI_SUCCESS)
    return Fail("cuptiRangeProfilerGetCounterDataSize", r), false;
  counter_data_.assign(ds.counterDataSize, 0);
  ready_ = true;
  return true;
}

void RangeProfiler::OnContext(CUcontext ctx, uint32_t device) {
  if (ctx_ || done_) return;  // the first context only
  Setup(ctx, device);
}

bool RangeProfiler::InWindow(uint64_t step) const {
  if (window_.kind == MetricWindow::Kind::kKernels) return launches_ >= window_.first && launches_ < window_.last;
  return step != UINT64_MAX && step >= window_.first && step <= window_.last;
}

void RangeProfiler::Start() {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  ci.pRangeProfilerObject = static_cast<CUpti_RangeProfiler_Object*>(profiler_);
  ci.counterDataSize = counter_data_.size();
  ci.pCounterData = counter_data_.data();
  CUptiResult r = cuptiRangeProfilerCounterDataImageInitialize(&ci);
  if (r != CUPTI_SUCCESS) return Fail("cuptiRangeProfilerCounterDataImageInitialize", r);
  CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  sc.pRangeProfilerObject = static_cast<CUpti_RangeProfiler_Object*>(profiler_);
  sc.configSize = config_.size();
  sc.pConfig = config_.data();
  sc.counterDataImageSize = counter_data_.size();
  sc.pCounterDataImage = counter_data_.data();
  sc.range = CUPTI_AutoRange;
  sc.replayMode = CUPTI_KernelReplay;
  sc.maxRangesPerPass = max_ranges_;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  if ((r = cuptiRangeProfilerSetConfig(&sc)) != CUPTI_SUCCESS) return Fail("cuptiRangeProfilerSetConfig", r);
  CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  st.pRangeProfilerObject = static_cast<CUpti_RangeProfiler_Object*>(profiler_);
  if ((r = cuptiRangeProfilerStart(&st)) != CUPTI_SUCCESS) return Fail("cuptiRangeProfilerStart", r);
  running_ = true;
  correlations_.clear();
}

void RangeProfiler::StopAndEmit() {
  if (!running_) return;
  running_ = false;
  auto* obj = static_cast<CUpti_RangeProfiler_Object*>(profiler_);
  CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  sp.pRangeProfilerObject = obj;
  CUptiResult r = cuptiRangeProfilerStop(&sp);
  if (r != CUPTI_SUCCESS) return Fail("cuptiRangeProfilerStop", r);
  CUpti_RangeProfiler_DecodeData_Params dd{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  dd.pRangeProfilerObject = obj;
  if ((r = cuptiRangeProfilerDecodeData(&dd)) != CUPTI_SUCCESS) return Fail("cuptiRangeProfilerDecodeData", r);
  CUpti_RangeProfiler_GetCounterDataInfo_Params gi{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  gi.pCounterDataImage = counter_data_.data();
  gi.counterDataImageSize = counter_data_.size();
  if ((r = cuptiRangeProfilerGetCounterDataInfo(&gi)) != CUPTI_SUCCESS)
    return Fail("cuptiRangeProfilerGetCounterDataInfo", r);
  const auto& m = ProfilerMetrics();
  std::vector<double> v(m.size());
  for (size_t i = 0; i < gi.numTotalRanges && i < correlations_.size(); ++i) {
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = static_cast<CUpti_Profiler_Host_Object*>(host_);
    ev.pCounterDataImage = counter_data_.data();
    ev.counterDataImageSize = counter_data_.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = const_cast<const char**>(m.data());
    ev.numMetrics = m.size();
    ev.pMetricValues = v.data();
    if (cuptiProfilerHostEvaluateToGpuValues(&ev) != CUPTI_SUCCESS) continue;
    accel::KernelMetrics km;
    km.correlation = correlations_[i];
    km.device = device_;
    km.flops_f64 = v[kDadd] + v[kDmul] + 2 * v[kDfma];
    km.flops_f32 = v[kFadd] + v[kFmul] + 2 * v[kFfma];
    km.flops_f16 = v[kHadd] + v[kHmul] + 2 * v[kHfma];
    km.dram_bytes = v[kDramRead] + v[kDramWrite];
    km.achieved_occupancy = v[kOccupancy] / 100.0;
    for (size_t k = 0; k < m.size(); ++k) km.raw += std::string(m[k]) + "=" + std::to_string(v[k]) + ";";
    accel::EmitKernelMetrics(km);
    ++emitted_;
  }
  if (dd.numOfRangeDropped > 0)
    problem_ = std::to_string(dd.numOfRangeDropped) + " profiled kernels dropped by the range profiler";
}

void RangeProfiler::OnLaunch(uint32_t correlation, uint64_t step) {
  if (!ready_ || done_) return;
  // Runs before the kernel is launched: a range started now includes it, a
  // range stopped now does not.
  if (InWindow(step)) {
    // The counter data image is full: evaluate, then go on in a fresh pass.
    if (running_ && correlations_.size() >= max_ranges_) StopAndEmit();
    if (!running_ && !done_) Start();
    if (running_) correlations_.push_back(correlation);
  } else if (running_) {
    StopAndEmit();
    if (window_.kind == MetricWindow::Kind::kKernels) done_ = true;
  }
  ++launches_;
}

void RangeProfiler::Finish() {
  StopAndEmit();
  if (profiler_) {
    CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = static_cast<CUpti_RangeProfiler_Object*>(profiler_);
    cuptiRangeProfilerDisable(&p);
    profiler_ = nullptr;
  }
  DestroyHost(static_cast<CUpti_Profiler_Host_Object*>(host_));
  host_ = nullptr;
  if (ready_) {
    CUpti_Profiler_DeInitialize_Params d{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    cuptiProfilerDeInitialize(&d);
  }
  ready_ = false;
  done_ = true;
}

}  // namespace strata::cupti

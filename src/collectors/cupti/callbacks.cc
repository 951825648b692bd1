// CUPTI Callback API -> API calls on the calling thread, NVTX ranges and marks
// (design: cupti_collector.h).
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

// Parameter structs of the NVTX calls CUPTI reports (after the NVTX types).
#include <generated_nvtx_meta.h>

#include "collectors/cupti/cupti_collector.h"
#include "format/schema.h"

namespace strata::cupti {
namespace {

using ArgKind = CallbackHandler::ArgKind;

thread_local int t_runtime_depth = 0;  // runtime calls open on this thread
thread_local bool t_thread_known = false;

// Per-thread name caches (callbacks run on every application thread).
NameCache& KernelNames() {
  thread_local std::unique_ptr<NameCache> c(new NameCache(512));
  return *c;
}
NameCache& NvtxNames() {
  thread_local std::unique_ptr<NameCache> c(new NameCache(512));
  return *c;
}

// Noisy runtime calls left out unless `strata record --cuda-api all`: queries that
// frameworks make around every operation, and polling.
constexpr const char* kBlockedRuntime[] = {
    "cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetDeviceCount",
    "cudaDeviceGetAttribute", "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventDestroy", "cudaEventQuery",
    "cudaStreamQuery", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo", "cudaPointerGetAttributes",
    "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaFuncGetAttributes", "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPointByVersion", "cudaThreadExchangeStreamCaptureMode", "cudaGetFuncBySymbol",
    "cudaGetKernel", "cudaGetDeviceProperties", "cudaDeviceGetStreamPriorityRange", "cudaGetDevice"};

// Driver calls worth recording when a program makes them itself (Triton, JAX,
// cuBLASLt launch through the driver); the runtime's own driver calls are
// skipped anyway (they happen inside a runtime call).
constexpr const char* kDriverPrefixes[] = {
    "cuLaunchKernel", "cuLaunchCooperativeKernel", "cuGraphLaunch", "cuMemcpy", "cuMemset", "cuMemAlloc",
    "cuMemFree", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cuStreamWaitEvent",
    "cuModuleLoad", "cuLibraryLoad"};

bool StartsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

ArgKind Classify(const std::string& base, bool runtime, accel::CopyKind* copy) {
  *copy = accel::CopyKind::kUnknown;
  if (runtime) {
    if (base == "cudaLaunchKernel" || base == "__cudaLaunchKernel" || base == "cudaLaunchCooperativeKernel")
      return ArgKind::kLaunchRuntime;
    if (base == "cudaLaunchKernelExC") return ArgKind::kLaunchRuntimeEx;
    if (base == "cudaMemcpy" || base == "cudaMemcpyAsync") return ArgKind::kCopyRuntime;
    if (base == "cudaMemset" || base == "cudaMemsetAsync") return ArgKind::kFillRuntime;
    if (base == "cudaMalloc" || base == "cudaMallocHost" || base == "cudaMallocManaged" || base == "cudaMallocAsync" ||
        base == "cudaHostAlloc")
      return ArgKind::kAllocRuntime;
    return ArgKind::kNone;
  }
  if (base == "cuLaunchKernel" || base == "cuLaunchCooperativeKernel") return ArgKind::kLaunchDriver;
  if (base == "cuLaunchKernelEx") return ArgKind::kLaunchDriverEx;
  if (base == "cuMemAlloc" || base == "cuMemAllocHost" || base == "cuMemAllocManaged" || base == "cuMemAllocAsync")
    return ArgKind::kAllocDriver;
  // {dst, src, ByteCount, ...}: the byte count is the third word of every one of these.
  if (base == "cuMemcpyHtoD" || base == "cuMemcpyHtoDAsync") *copy = accel::CopyKind::kHtoD;
  else if (base == "cuMemcpyDtoH" || base == "cuMemcpyDtoHAsync") *copy = accel::CopyKind::kDtoH;
  else if (base == "cuMemcpyDtoD" || base == "cuMemcpyDtoDAsync") *copy = accel::CopyKind::kDtoD;
  else if (base != "cuMemcpy" && base != "cuMemcpyAsync") return ArgKind::kNone;
  return ArgKind::kCopyDriver;
}

accel::CopyKind RuntimeCopyKind(int kind) {
  switch (kind) {
    case 0: return accel::CopyKind::kHtoH;  // cudaMemcpyHostToHost
    case 1: return accel::CopyKind::kHtoD;
    case 2: return accel::CopyKind::kDtoH;
    case 3: return accel::CopyKind::kDtoD;
    default: return accel::CopyKind::kUnknown;  // cudaMemcpyDefault: inferred from the pointers
  }
}

}  // namespace

CallbackHandler::CallbackHandler(ThreadMap* threads) : threads_(threads) {}

void CallbackHandler::Init(bool all) {
  k_bytes_ = recorder::Intern("bytes");
  k_kind_ = recorder::Intern("copy_kind");
  k_size_ = recorder::Intern("size");
  for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS || !name) continue;
    std::string base = ApiBaseName(name);
    Api& a = runtime_[cbid];
    a.name = recorder::Intern(base);
    a.args = Classify(base, true, &a.copy);
    if (!all)
      for (const char* b : kBlockedRuntime)
        if (base == b) a.args = ArgKind::kBlocked;
  }
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS || !name) continue;
    std::string base = ApiBaseName(name);
    Api& a = driver_[cbid];
    a.name = recorder::Intern(base);
    a.args = Classify(base, false, &a.copy);
    bool wanted = all;
    for (const char* p : kDriverPrefixes) wanted = wanted || StartsWith(base, p);
    if (!wanted) a.args = ArgKind::kBlocked;
  }
}

bool CallbackHandler::WantRuntime(uint32_t cbid) const {
  return cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE && runtime_[cbid].name && runtime_[cbid].args != ArgKind::kBlocked;
}

bool CallbackHandler::WantDriver(uint32_t cbid) const {
  return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE && driver_[cbid].name && driver_[cbid].args != ArgKind::kBlocked;
}

void CallbackHandler::OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (!data) return;
  switch (domain) {
    case CUPTI_CB_DOMAIN_RUNTIME_API:
    case CUPTI_CB_DOMAIN_DRIVER_API: OnApi(domain, cbid, static_cast<const CUpti_CallbackData*>(data)); return;
    case CUPTI_CB_DOMAIN_NVTX: OnNvtx(cbid, static_cast<const CUpti_NvtxData*>(data)); return;
    case CUPTI_CB_DOMAIN_RESOURCE: OnResource(cbid, static_cast<const CUpti_ResourceData*>(data)); return;
    default: return;
  }
}

void CallbackHandler::OnApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (runtime ? cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE : cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) return;
  const Api& api = runtime ? runtime_[cbid] : driver_[cbid];
  if (!t_thread_known) {
    t_thread_known = true;
    threads_->Learn(ThreadMap::CuptiThreadId(), static_cast<uint32_t>(::syscall(SYS_gettid)));
  }
  if (cb->callbackSite == CUPTI_API_ENTER) {
    bool record = api.name && api.args != ArgKind::kBlocked && (runtime || t_runtime_depth == 0);
    if (runtime) ++t_runtime_depth;
    if (cb->correlationData) *cb->correlationData = record ? 1 : 0;  // survives until this call's EXIT
    if (!record) return;
    api_calls_.fetch_add(1, std::memory_order_relaxed);
    accel::ApiBegin(api.name, runtime ? accel::ApiDomain::kRuntime : accel::ApiDomain::kDriver, cb->correlationId);
    Args(api, cb);
    return;
  }
  if (runtime && t_runtime_depth > 0) --t_runtime_depth;
  if (!cb->correlationData || *cb->correlationData == 0) return;
  int32_t result = 0;
  if (cb->functionReturnValue) std::memcpy(&result, cb->functionReturnValue, sizeof result);  // cudaError_t / CUresult
  accel::ApiEnd(result);
}

void CallbackHandler::Args(const Api& api, const CUpti_CallbackData* cb) {
  const void* p = cb->functionParams;
  if (!p) return;
  accel::LaunchArgs l;
  l.correlation = cb->correlationId;
  auto launch = [&](uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz, uint64_t shared) {
    l.kernel = KernelNames().Get(cb->symbolName, true);
    l.grid[0] = gx, l.grid[1] = gy, l.grid[2] = gz;
    l.block[0] = bx, l.block[1] = by, l.block[2] = bz;
    l.shared_mem = static_cast<uint32_t>(shared);
    accel::ApiLaunch(l);
    if (launch_hook_) launch_hook_(cb->correlationId, launch_hook_arg_);
  };
  switch (api.args) {
    case ArgKind::kLaunchRuntime: {
      // __cudaLaunchKernel (CUDA 13's <<<>>>) publishes no params struct; its
      // arguments are cudaLaunchKernel's with a cudaKernel_t for the function.
      const auto* a = static_cast<const cudaLaunchKernel_v7000_params*>(p);
      launch(a->gridDim.x, a->gridDim.y, a->gridDim.z, a->blockDim.x, a->blockDim.y, a->blockDim.z, a->sharedMem);
      return;
    }
    case ArgKind::kLaunchRuntimeEx: {
      const auto* a = static_cast<const cudaLaunchKernelExC_v11060_params*>(p);
      if (!a->config) return;
      const cudaLaunchConfig_t& c = *a->config;
      launch(c.gridDim.x, c.gridDim.y, c.gridDim.z, c.blockDim.x, c.blockDim.y, c.blockDim.z, c.dynamicSmemBytes);
      return;
    }
    case ArgKind::kLaunchDriver: {
      const auto* a = static_cast<const cuLaunchKernel_params*>(p);
      launch(a->gridDimX, a->gridDimY, a->gridDimZ, a->blockDimX, a->blockDimY, a->blockDimZ, a->sharedMemBytes);
      return;
    }
    case ArgKind::kLaunchDriverEx: {
      const auto* a = static_cast<const cuLaunchKernelEx_params*>(p);
      if (!a->config) return;
      const CUlaunchConfig& c = *a->config;
      launch(c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ, c.sharedMemBytes);
      return;
    }
    case ArgKind::kCopyRuntime: {
      const auto* a = static_cast<const cudaMemcpy_v3020_params*>(p);
      accel::ApiArg(k_bytes_, a->count);
      accel::ApiArg(k_kind_, static_cast<uint64_t>(RuntimeCopyKind(a->kind)));
      return;
    }
    case ArgKind::kCopyDriver: {
      const auto* a = static_cast<const cuMemcpyDtoD_v2_params*>(p);
      accel::ApiArg(k_bytes_, a->ByteCount);
      accel::ApiArg(k_kind_, static_cast<uint64_t>(api.copy));
      return;
    }
    case ArgKind::kFillRuntime: {
      const auto* a = static_cast<const cudaMemset_v3020_params*>(p);
      accel::ApiArg(k_bytes_, a->count);
      return;
    }
    case ArgKind::kAllocRuntime: {
      const auto* a = static_cast<const cudaMalloc_v3020_params*>(p);
      accel::ApiArg(k_size_, a->size);
      return;
    }
    case ArgKind::kAllocDriver: {
      const auto* a = static_cast<const cuMemAlloc_v2_params*>(p);
      accel::ApiArg(k_size_, a->bytesize);
      return;
    }
    case ArgKind::kNone:
    case ArgKind::kBlocked: return;
  }
}

namespace {

// The text of an NVTX event's message; `registered` resolves string handles.
template <typename F>
uint32_t MessageId(const nvtxEventAttributes_t* a, NameCache& names, F&& registered) {
  if (!a) return recorder::Intern("");
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return names.Get(a->message.ascii ? a->message.ascii : "", false);
    case NVTX_MESSAGE_TYPE_REGISTERED: return registered(reinterpret_cast<uint64_t>(a->message.registered));
    case NVTX_MESSAGE_TYPE_UNICODE: return recorder::Intern("<unicode NVTX message>");
    default: return recorder::Intern("");
  }
}

}  // namespace

void CallbackHandler::OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* d) {
  const void* p = d->functionParams;
  if (!p) return;
  auto registered = [this](uint64_t handle) {
    std::lock_guard<std::mutex> lk(registered_mu_);
    auto it = registered_strings_.find(handle);
    return it != registered_strings_.end() ? it->second : recorder::Intern("<unregistered NVTX string>");
  };
  auto span_begin = [](uint32_t name) { recorder::EmitThreadEvent(format::kSpanBegin, &name, sizeof name); };
  auto instant = [](uint32_t name) { recorder::EmitThreadEvent(format::kInstant, &name, sizeof name); };
  auto range_id = [d]() {
    nvtxRangeId_t id = 0;
    if (d->functionReturnValue) std::memcpy(&id, d->functionReturnValue, sizeof id);
    return static_cast<uint64_t>(id);
  };
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      span_begin(NvtxNames().Get(static_cast<const nvtxRangePushA_params*>(p)->message, false));
      return;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      span_begin(MessageId(static_cast<const nvtxRangePushEx_params*>(p)->eventAttrib, NvtxNames(), registered));
      return;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      span_begin(MessageId(static_cast<const nvtxDomainRangePushEx_params*>(p)->core.eventAttrib, NvtxNames(), registered));
      return;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      recorder::EmitThreadEvent(format::kSpanEnd, &cbid, 0);  // no payload (the pointer must not be null)
      return;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
      accel::RangeBegin(range_id(), NvtxNames().Get(static_cast<const nvtxRangeStartA_params*>(p)->message, false), 0);
      return;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      accel::RangeBegin(range_id(), MessageId(static_cast<const nvtxRangeStartEx_params*>(p)->eventAttrib, NvtxNames(), registered), 0);
      return;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
      const auto* a = static_cast<const nvtxDomainRangeStartEx_params*>(p);
      uint32_t domain = 0;
      {
        std::lock_guard<std::mutex> lk(registered_mu_);
        auto it = registered_strings_.find(reinterpret_cast<uint64_t>(a->domain) ^ (1ull << 63));
        if (it != registered_strings_.end()) domain = it->second;
      }
      accel::RangeBegin(range_id(), MessageId(a->core.eventAttrib, NvtxNames(), registered), domain);
      return;
    }
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
      accel::RangeEnd(static_cast<const nvtxRangeEnd_params*>(p)->id);
      return;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
      accel::RangeEnd(static_cast<const nvtxDomainRangeEnd_params*>(p)->core.id);
      return;
    case CUPTI_CBID_NVTX_nvtxMarkA:
      instant(NvtxNames().Get(static_cast<const nvtxMarkA_params*>(p)->message, false));
      return;
    case CUPTI_CBID_NVTX_nvtxMarkEx:
      instant(MessageId(static_cast<const nvtxMarkEx_params*>(p)->eventAttrib, NvtxNames(), registered));
      return;
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
      instant(MessageId(static_cast<const nvtxDomainMarkEx_params*>(p)->core.eventAttrib, NvtxNames(), registered));
      return;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
      const auto* a = static_cast<const nvtxDomainRegisterStringA_params*>(p);
      if (!d->functionReturnValue || !a->string) return;
      nvtxStringHandle_t h;
      std::memcpy(&h, d->functionReturnValue, sizeof h);
      uint32_t id = recorder::Intern(a->string);
      std::lock_guard<std::mutex> lk(registered_mu_);
      registered_strings_[reinterpret_cast<uint64_t>(h)] = id;
      return;
    }
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
      // Domain handles share the map, tagged by the top bit.
      const auto* a = static_cast<const nvtxDomainCreateA_params*>(p);
      if (!d->functionReturnValue || !a->name) return;
      nvtxDomainHandle_t h;
      std::memcpy(&h, d->functionReturnValue, sizeof h);
      uint32_t id = recorder::Intern(a->name);
      std::lock_guard<std::mutex> lk(registered_mu_);
      registered_strings_[reinterpret_cast<uint64_t>(h) ^ (1ull << 63)] = id;
      return;
    }
    case CUPTI_CBID_NVTX_nvtxNameOsThreadA: {
      const auto* a = static_cast<const nvtxNameOsThreadA_params*>(p);
      if (a->name) recorder::SetThreadName(a->threadId, a->name);
      return;
    }
    default: return;
  }
}

void CallbackHandler::OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* d) {
  if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED || !d->context) return;
  // A placeholder description until CUPTI's device record arrives with the
  // full one (the reader keeps the last description of a device).
  uint32_t dev = 0;
  if (cuptiGetDeviceId(d->context, &dev) != CUPTI_SUCCESS) return;
  accel::DeviceInfo info;
  info.device = dev;
  info.api = "cuda";
  info.name = "CUDA device " + std::to_string(dev);
  info.vendor = "NVIDIA";
  accel::EmitDeviceInfo(info);
}

}  // namespace strata::cupti

// CUPTI activity records -> strata device events (design: cupti_collector.h).
#include <cxxabi.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "collectors/cupti/cupti_collector.h"
#include "format/schema.h"
#include "format/schema_accel.h"

namespace strata::cupti {

// Queue ids for what is not a CUDA stream (CUDA stream ids are 32-bit).
constexpr uint64_t kAllocationQueue = 1ull << 32;
constexpr uint64_t kContextQueueBase = 2ull << 32;  // + context id: context-wide synchronization

// --- names ---------------------------------------------------------------------------

uint32_t NameCache::Get(const char* name, bool demangle) {
  if (!name) name = "<unnamed>";
  Entry& e = slots_[(reinterpret_cast<uintptr_t>(name) >> 3) & mask_];
  if (e.ptr == name) {
    if (e.verified == generation_ && generation_ != 0) return e.id;
    // Same address and same text (NUL included): no strlen on the hot path.
    if (std::memcmp(e.text.c_str(), name, e.text.size() + 1) == 0) {
      e.verified = generation_;
      return e.id;
    }
  }
  e.ptr = name;
  e.verified = generation_;
  e.text = name;
  std::string shown;
  if (demangle && e.text.rfind("_Z", 0) == 0) {
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && d) shown = d;
    std::free(d);
  }
  e.id = recorder::Intern(shown.empty() ? e.text : shown);
  return e.id;
}

void ThreadMap::Learn(uint32_t cupti_tid, uint32_t tid) {
  std::lock_guard<std::mutex> lk(mu_);
  map_[cupti_tid] = tid;
}

uint32_t ThreadMap::Find(uint32_t cupti_tid) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = map_.find(cupti_tid);
  return it != map_.end() ? it->second : static_cast<uint32_t>(::getpid());
}

uint32_t ThreadMap::CuptiThreadId() {
  // CUPTI reports the low 32 bits of pthread_self() as the thread id.
  pthread_t self = pthread_self();
  uint32_t low;
  std::memcpy(&low, &self, sizeof low);
  return low;
}

// --- kinds ----------------------------------------------------------------------------

accel::CopyKind CopyKindOf(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return accel::CopyKind::kHtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return accel::CopyKind::kDtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return accel::CopyKind::kDtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return accel::CopyKind::kHtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return accel::CopyKind::kPtoP;
    default: return accel::CopyKind::kUnknown;
  }
}

namespace {

accel::MemoryKind MemKind(uint32_t k) {
  return k <= CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC ? static_cast<accel::MemoryKind>(k) : accel::MemoryKind::kUnknown;
}

const char* OverheadName(uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "CUDA overhead: driver JIT compilation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI overhead: activity buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI overhead: instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI overhead: resource creation";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "CUDA overhead: module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "CUDA overhead: lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "CUDA overhead: command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "CUPTI overhead: activity buffer request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "CUPTI overhead: UVM activity initialization";
    default: return "CUPTI overhead";
  }
}

uint32_t Dim(int32_t v) { return v > 0 ? static_cast<uint32_t>(v) : 0; }

// The API name of a callback id: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel",
// "cudaMemcpyAsync_ptsz_v7000" -> "cudaMemcpyAsync".
std::string BaseApiName(const char* name) {
  std::string s = name ? name : "";
  for (;;) {
    size_t u = s.rfind('_');
    if (u == std::string::npos || u == 0) break;
    std::string tail = s.substr(u + 1);
    bool version = tail.size() > 1 && tail[0] == 'v' && tail.find_first_not_of("0123456789", 1) == std::string::npos;
    if (version || tail == "ptsz" || tail == "ptds") s.resize(u);
    else break;
  }
  return s;
}

}  // namespace

std::string ApiBaseName(const char* name) { return BaseApiName(name); }

// --- decoder ---------------------------------------------------------------------------

ActivityDecoder::ActivityDecoder(ThreadMap* threads) : threads_(threads) {}

DecoderStats ActivityDecoder::stats() {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

void ActivityDecoder::AddDropped(uint64_t n) {
  if (n == 0) return;
  uint64_t total;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.dropped += n;
    total = stats_.dropped;
  }
  accel::EmitRecordsLost("CUPTI activity", total);
}

accel::Queue ActivityDecoder::Stream(uint32_t device, uint64_t queue, const char* what) {
  uint64_t key = (uint64_t{device} << 40) ^ queue;
  for (const StreamSlot& s : recent_)
    if (s.key == key) return s.queue;
  auto remember = [this](uint64_t k, accel::Queue q) {
    recent_[next_slot_++ % std::size(recent_)] = {k, q};
    return q;
  };
  auto it = streams_.find(key);
  if (it != streams_.end()) return remember(key, it->second);
  recorder::ExternalStream* s = recorder::OpenDeviceStream(device, queue);
  // Buffers are per thread and complete in any order: hold a second back.
  recorder::SetReorderWindow(s, 1'000'000'000);
  std::string name;
  if (queue == kAllocationQueue) name = "CUDA allocations";
  else if (queue >= kContextQueueBase) name = "CUDA context " + std::to_string(queue - kContextQueueBase) + " synchronization";
  else name = std::string(what) + " " + std::to_string(queue);
  accel::EmitQueueInfo(device, queue, name);
  accel::Queue q(s, recorder::RouteOf(s));
  streams_.emplace(key, q);
  return remember(key, q);
}

recorder::ExternalStream* ActivityDecoder::ThreadStream(uint32_t cupti_tid) {
  uint32_t tid = threads_->Find(cupti_tid);
  auto it = thread_streams_.find(tid);
  if (it != thread_streams_.end()) return it->second;
  recorder::ExternalStream* s = recorder::OpenThreadStreamFor(tid);
  recorder::SetReorderWindow(s, 1'000'000'000);
  thread_streams_.emplace(tid, s);
  return s;
}

uint32_t ActivityDecoder::DeviceOfContext(uint32_t context) {
  auto it = context_device_.find(context);
  return it != context_device_.end() ? it->second : 0;
}

void ActivityDecoder::DecodeBuffer(uint8_t* buffer, size_t valid) {
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.buffers;
  names_.BeginBuffer();
  CUpti_Activity* r = nullptr;
  for (;;) {
    CUptiResult st = cuptiActivityGetNextRecord(buffer, valid, &r);
    if (st != CUPTI_SUCCESS) break;  // MAX_LIMIT_REACHED: the end; INVALID_KIND: an incomplete record
    DecodeLocked(r);
  }
}

void ActivityDecoder::Decode(const CUpti_Activity* r) {
  std::lock_guard<std::mutex> lk(mu_);
  names_.BeginBuffer();
  DecodeLocked(r);
}

template <class MemcpyRecord>
accel::CopyActivity ActivityDecoder::CopyOf(const MemcpyRecord* m) const {
  accel::CopyActivity c;
  c.start = T(m->start);
  c.end = T(m->end);
  c.correlation = m->correlationId;
  c.bytes = m->bytes;
  c.kind = CopyKindOf(m->copyKind);
  c.src_kind = MemKind(m->srcKind);
  c.dst_kind = MemKind(m->dstKind);
  c.flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? format::kCopyAsync : 0;
  return c;
}

// The launch a device record comes from (0 for records of other kinds).
static uint32_t DeviceCorrelation(const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return reinterpret_cast<const CUpti_ActivityKernel10*>(r)->correlationId;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return reinterpret_cast<const CUpti_ActivityMemcpy6*>(r)->correlationId;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(r)->correlationId;
    case CUPTI_ACTIVITY_KIND_MEMSET: return reinterpret_cast<const CUpti_ActivityMemset4*>(r)->correlationId;
    default: return 0;
  }
}

void ActivityDecoder::DecodeLocked(const CUpti_Activity* r) {
  ++stats_.records;
  if (record_hook_)
    if (uint32_t corr = DeviceCorrelation(r)) record_hook_(corr, record_hook_arg_);
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      ++stats_.kernels;
      if (k->start == 0 && k->end == 0) {
        // CUPTI ran out of device memory for timestamps: the kernel ran, untimed.
        ++stats_.untimed;
        return;
      }
      if (!emit_) return;
      if (k->contextId != last_context_) {
        last_context_ = k->contextId;
        context_device_.try_emplace(k->contextId, k->deviceId);
      }
      accel::KernelActivity a;
      a.start = T(k->start);
      a.end = T(k->end);
      a.correlation = k->correlationId;
      a.name = names_.Get(k->name, true);
      a.grid[0] = Dim(k->gridX), a.grid[1] = Dim(k->gridY), a.grid[2] = Dim(k->gridZ);
      a.block[0] = Dim(k->blockX), a.block[1] = Dim(k->blockY), a.block[2] = Dim(k->blockZ);
      a.shared_static = Dim(k->staticSharedMemory);
      a.shared_dynamic = Dim(k->dynamicSharedMemory);
      a.registers = k->registersPerThread;
      a.queued = T(k->queued);  // 0 (CUPTI_TIMESTAMP_UNKNOWN) unless latency timestamps are on
      a.submitted = T(k->submitted);
      accel::EmitKernel(Stream(k->deviceId, k->streamId, "CUDA stream"), a);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      ++stats_.copies;
      if (!emit_) return;
      accel::CopyActivity c = CopyOf(m);
      c.src_device = c.dst_device = m->deviceId;
      accel::EmitCopy(Stream(m->deviceId, m->streamId, "CUDA stream"), c);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(r);
      ++stats_.copies;
      if (!emit_) return;
      accel::CopyActivity c = CopyOf(m);
      c.src_device = m->srcDeviceId;
      c.dst_device = m->dstDeviceId;
      accel::EmitCopy(Stream(m->deviceId, m->streamId, "CUDA stream"), c);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      ++stats_.fills;
      if (!emit_) return;
      accel::EmitFill(Stream(m->deviceId, m->streamId, "CUDA stream").stream, T(m->start), T(m->end), m->correlationId,
                      m->bytes, m->value, MemKind(m->memoryKind));
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(r);
      ++stats_.syncs;
      if (!emit_) return;
      uint32_t dev = DeviceOfContext(s->contextId);
      uint64_t queue = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? kContextQueueBase + s->contextId
                                                                          : uint64_t{s->streamId};
      auto type = s->type >= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE &&
                          s->type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
                      ? static_cast<accel::SyncType>(s->type)
                      : accel::SyncType::kUnknown;
      accel::EmitSync(Stream(dev, queue, "CUDA stream").stream, T(s->start), T(s->end), s->correlationId, type);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(r);
      ++stats_.memory;
      if (!emit_) return;
      accel::MemoryOp op = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                               ? accel::MemoryOp::kFree
                               : accel::MemoryOp::kAllocate;
      accel::EmitMemory(Stream(m->deviceId, kAllocationQueue, "CUDA").stream, T(m->timestamp), m->correlationId, m->address,
                        m->bytes, op, MemKind(m->memoryKind));
      return;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(r);
      ++stats_.overhead;
      if (!emit_) return;
      uint32_t cupti_tid = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0;
      accel::Overhead(ThreadStream(cupti_tid), T(o->start), T(o->end), recorder::Intern(OverheadName(o->overheadKind)));
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      // Only enabled when the callback API is unavailable (another subscriber).
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
      ++stats_.api;
      if (!emit_) return;
      bool runtime = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      const char* name = nullptr;
      cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid, &name);
      accel::ApiCall(ThreadStream(a->threadId), T(a->start), T(a->end),
                     recorder::Intern(name ? BaseApiName(name) : "CUDA API " + std::to_string(a->cbid)),
                     runtime ? accel::ApiDomain::kRuntime : accel::ApiDomain::kDriver, a->correlationId,
                     static_cast<int64_t>(a->returnValue));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      // NVTX from activity records (callback API unavailable): ranges pair by id.
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(r);
      ++stats_.markers;
      if (!emit_) return;
      uint32_t cupti_tid = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
      recorder::ExternalStream* s = ThreadStream(cupti_tid);
      uint64_t id = m->id;
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        uint8_t p[16];
        uint32_t name = recorder::Intern(m->name ? m->name : "");
        uint32_t domain = m->domain && *m->domain ? recorder::Intern(m->domain) : 0;
        std::memcpy(p, &id, 8);
        std::memcpy(p + 8, &name, 4);
        std::memcpy(p + 12, &domain, 4);
        recorder::EmitExternal(s, format::kRangeBegin, T(m->timestamp), p, sizeof p);
      } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        recorder::EmitExternal(s, format::kRangeEnd, T(m->timestamp), &id, sizeof id);
      } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        uint32_t name = recorder::Intern(m->name ? m->name : "");
        recorder::EmitExternal(s, format::kInstant, T(m->timestamp), &name, sizeof name);
      }
      return;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto* c = reinterpret_cast<const CUpti_ActivityContext3*>(r);
      context_device_[c->contextId] = c->deviceId;
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(r);
      ++stats_.devices;
      if (!emit_) return;
      accel::DeviceInfo info;
      info.device = d->id;
      info.api = "cuda";
      info.name = d->name ? d->name : "";
      info.vendor = "NVIDIA";
      info.compute_units = d->numMultiprocessors;
      info.clock_khz = d->coreClockRate;
      info.memory_bytes = d->globalMemorySize;
      info.memory_bandwidth = static_cast<double>(d->globalMemoryBandwidth) * 1000.0;  // KB/s
      PeakFlops(d->computeCapabilityMajor, d->computeCapabilityMinor, d->numMultiprocessors, d->coreClockRate,
                &info.peak_flops_f64, &info.peak_flops_f32, &info.peak_flops_f16);
      info.properties = "compute capability " + std::to_string(d->computeCapabilityMajor) + "." +
                        std::to_string(d->computeCapabilityMinor) + "; " + std::to_string(d->numMultiprocessors) +
                        " SMs; L2 " + std::to_string(d->l2CacheSize) + " B; " +
                        std::to_string(d->maxSharedMemoryPerBlock) + " B shared memory per block; " +
                        std::to_string(d->numMemcpyEngines) + " copy engines; peak FLOP/s are CUDA-core (not tensor-core)";
      accel::EmitDeviceInfo(info);
      return;
    }
    case CUPTI_ACTIVITY_KIND_NAME:
    case CUPTI_ACTIVITY_KIND_MARKER_DATA:
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return;  // enabled for completeness of CUPTI's own bookkeeping; nothing strata shows yet
    default:
      ++stats_.unknown;
      return;
  }
}

// Peak CUDA-core FLOP/s from the compute capability: FP32 and FP64 lanes per
// SM (NVIDIA's CUDA C programming guide, "Arithmetic Instructions" throughput
// table), two FLOPs per fused multiply-add per lane per clock. FP16 counts the
// paired half2 path (2x FP32), not tensor cores.
void PeakFlops(uint32_t major, uint32_t minor, uint32_t sms, uint32_t clock_khz, double* f64, double* f32,
               double* f16) {
  uint32_t fp32 = 0, fp64 = 0;
  uint32_t cc = major * 10 + minor;
  switch (cc) {
    case 60: fp32 = 64, fp64 = 32; break;
    case 61: case 62: fp32 = 128, fp64 = 4; break;
    case 70: case 72: fp32 = 64, fp64 = 32; break;
    case 75: fp32 = 64, fp64 = 2; break;
    case 80: fp32 = 64, fp64 = 32; break;
    case 86: case 87: case 89: fp32 = 128, fp64 = 2; break;
    case 90: fp32 = 128, fp64 = 64; break;
    case 100: case 103: fp32 = 128, fp64 = 64; break;
    case 120: case 121: fp32 = 128, fp64 = 2; break;
    default: break;
  }
  double per_lane = 2.0 * static_cast<double>(sms) * static_cast<double>(clock_khz) * 1e3;
  *f32 = fp32 * per_lane;
  *f64 = fp64 * per_lane;
  *f16 = 2 * fp32 * per_lane;
}

}  // namespace strata::cupti

#include "collectors/accel/emit.h"

#include <cstring>
#include <limits>
#include <new>

#include "format/payloads_accel.h"
#include "format/schema.h"
#include "recorder/hot.h"

namespace strata::accel {
namespace {

// Byte-aligned little-endian fields, as format/schema.h lays them out.
class Payload {
 public:
  template <typename T>
  Payload& Put(T v) {
    if (n_ + sizeof v <= sizeof buf_) std::memcpy(buf_ + n_, &v, sizeof v);
    n_ += sizeof v;
    return *this;
  }
  Payload& Str(std::string_view s) {
    size_t k = std::min(s.size(), sizeof buf_ - 1 > n_ ? sizeof buf_ - 1 - n_ : 0);
    for (size_t i = 0; i < k; ++i) buf_[n_ + i] = s[i] == '\0' ? ' ' : static_cast<uint8_t>(s[i]);
    n_ += k;
    if (n_ < sizeof buf_) buf_[n_++] = 0;
    return *this;
  }
  const uint8_t* data() const { return buf_; }
  uint32_t size() const { return static_cast<uint32_t>(std::min(n_, sizeof buf_)); }

 private:
  uint8_t buf_[1024];
  size_t n_ = 0;
};

template <typename E>
uint8_t U8(E e) {
  return static_cast<uint8_t>(e);
}

}  // namespace

void ApiBegin(uint32_t name, ApiDomain domain, uint64_t correlation) {
  uint8_t p[13];
  std::memcpy(p, &name, 4);
  p[4] = U8(domain);
  std::memcpy(p + 5, &correlation, 8);
  recorder::EmitThreadEvent(format::kApiBegin, p, sizeof p);
}

void ApiEnd(int64_t result) { recorder::EmitThreadEvent(format::kApiEnd, &result, sizeof result); }

void ApiLaunch(const LaunchArgs& a) {
  Payload p;
  p.Put(a.correlation).Put(a.kernel);
  for (uint32_t v : a.grid) p.Put(v);
  for (uint32_t v : a.block) p.Put(v);
  p.Put(a.shared_mem).Put(a.device).Put(a.queue);
  recorder::EmitThreadEvent(format::kApiLaunch, p.data(), p.size());
}

void ApiArg(uint32_t key, uint64_t value) {
  uint8_t p[12];
  std::memcpy(p, &key, 4);
  std::memcpy(p + 4, &value, 8);
  recorder::EmitThreadEvent(format::kApiArg, p, sizeof p);
}

void ApiArgStr(uint32_t key, uint32_t value) {
  uint8_t p[8];
  std::memcpy(p, &key, 4);
  std::memcpy(p + 4, &value, 4);
  recorder::EmitThreadEvent(format::kApiArgStr, p, sizeof p);
}

void RangeBegin(uint64_t id, uint32_t name, uint32_t domain) {
  Payload p;
  p.Put(id).Put(name).Put(domain);
  recorder::EmitThreadEvent(format::kRangeBegin, p.data(), p.size());
}

void RangeEnd(uint64_t id) { recorder::EmitThreadEvent(format::kRangeEnd, &id, sizeof id); }

void ApiCall(ExternalStream* s, uint64_t start, uint64_t end, uint32_t name, ApiDomain domain, uint64_t correlation,
             int64_t result) {
  Payload p;
  p.Put(end).Put(name).Put(U8(domain)).Put(correlation).Put(result);
  recorder::EmitExternal(s, format::kApiCall, start, p.data(), p.size());
}

void Overhead(ExternalStream* s, uint64_t start, uint64_t end, uint32_t name) {
  Payload p;
  p.Put(end).Put(name);
  recorder::EmitExternal(s, format::kOverhead, start, p.data(), p.size());
}

// The device events' payloads are format/payloads_accel.h's structs (the
// schema's fields, byte-packed), written in one go; the two that come by the
// million in their narrow forms whenever the values fit, which is nearly
// always (format/schema_accel.h).
using format::CommandPayload;
using format::Kernel32Payload;
using format::KernelPayload;
using format::Memcpy32Payload;
using format::MemcpyPayload;
using format::MemoryPayload;
using format::MemsetPayload;
using format::SyncPayload;

// Start and end fit the narrow form: both known, in order, less than 2^32 ns apart.
bool Fits32(uint64_t start, uint64_t end, uint64_t correlation) {
  return start != 0 && end >= start && end - start <= UINT32_MAX && correlation <= UINT32_MAX;
}

// The fields a record's wide and narrow forms share (the same names in both
// payloads), narrowed where the narrow form's are: the callers checked they fit.
template <class P>
void FillKernel(P* p, const KernelActivity& k) {
  using Block = decltype(P::block_x);
  p->correlation = static_cast<decltype(P::correlation)>(k.correlation);
  p->name = k.name;
  p->grid_x = k.grid[0], p->grid_y = k.grid[1], p->grid_z = k.grid[2];
  p->block_x = static_cast<Block>(k.block[0]), p->block_y = static_cast<Block>(k.block[1]);
  p->block_z = static_cast<Block>(k.block[2]);
  p->registers = static_cast<decltype(P::registers)>(k.registers);
  p->shared_static = k.shared_static;
  p->shared_dynamic = k.shared_dynamic;
}

template <class P>
void FillCopy(P* p, const CopyActivity& c) {
  using Device = decltype(P::src_device);
  p->correlation = static_cast<decltype(P::correlation)>(c.correlation);
  p->bytes = c.bytes;
  p->copy_kind = U8(c.kind);
  p->src_kind = U8(c.src_kind);
  p->dst_kind = U8(c.dst_kind);
  p->flags = c.flags;
  p->src_device = static_cast<Device>(c.src_device);
  p->dst_device = static_cast<Device>(c.dst_device);
}

void EmitKernel(const Queue& q, const KernelActivity& k) {
  if (Fits32(k.start, k.end, k.correlation) && k.queued == 0 && k.submitted == 0 && k.block[0] <= UINT16_MAX &&
      k.block[1] <= UINT16_MAX && k.block[2] <= UINT16_MAX && k.registers <= UINT16_MAX) {
    auto fill = [&k](uint8_t* at) {
      auto* p = new (at) Kernel32Payload;
      p->duration = static_cast<uint32_t>(k.end - k.start);
      FillKernel(p, k);
    };
    if (recorder::EmitRoutedInPlace<sizeof(Kernel32Payload)>(q.route, format::kDevKernel32, k.start, fill)) return;
    alignas(8) uint8_t p[sizeof(Kernel32Payload)];
    fill(p);
    recorder::EmitExternal(q.stream, format::kDevKernel32, k.start, p, sizeof p);
    return;
  }
  KernelPayload p;
  p.end = k.end;
  FillKernel(&p, k);
  p.queued = k.queued;
  p.submitted = k.submitted;
  recorder::EmitExternal(q.stream, format::kDevKernel, k.start, &p, sizeof p);
}

void EmitCopy(const Queue& q, const CopyActivity& c) {
  if (Fits32(c.start, c.end, c.correlation) && c.src_device <= UINT8_MAX && c.dst_device <= UINT8_MAX) {
    auto fill = [&c](uint8_t* at) {
      auto* p = new (at) Memcpy32Payload;
      p->duration = static_cast<uint32_t>(c.end - c.start);
      FillCopy(p, c);
    };
    if (recorder::EmitRoutedInPlace<sizeof(Memcpy32Payload)>(q.route, format::kDevMemcpy32, c.start, fill)) return;
    alignas(8) uint8_t p[sizeof(Memcpy32Payload)];
    fill(p);
    recorder::EmitExternal(q.stream, format::kDevMemcpy32, c.start, p, sizeof p);
    return;
  }
  MemcpyPayload p;
  p.end = c.end;
  FillCopy(&p, c);
  recorder::EmitExternal(q.stream, format::kDevMemcpy, c.start, &p, sizeof p);
}

void EmitFill(ExternalStream* s, uint64_t start, uint64_t end, uint64_t correlation, uint64_t bytes, uint32_t value,
              MemoryKind kind) {
  MemsetPayload p{end, correlation, bytes, value, U8(kind)};
  recorder::EmitExternal(s, format::kDevMemset, start, &p, sizeof p);
}

void EmitSync(ExternalStream* s, uint64_t start, uint64_t end, uint64_t correlation, SyncType type) {
  SyncPayload p{end, correlation, U8(type)};
  recorder::EmitExternal(s, format::kDevSync, start, &p, sizeof p);
}

void EmitMemory(ExternalStream* s, uint64_t ts, uint64_t correlation, uint64_t address, uint64_t bytes, MemoryOp op,
                MemoryKind kind) {
  MemoryPayload p{correlation, address, bytes, U8(op), U8(kind)};
  recorder::EmitExternal(s, format::kDevMemory, ts, &p, sizeof p);
}

void EmitCommand(ExternalStream* s, uint64_t start, uint64_t end, uint64_t correlation, uint32_t name, uint64_t bytes) {
  CommandPayload p{end, correlation, name, bytes};
  recorder::EmitExternal(s, format::kDevCommand, start, &p, sizeof p);
}

void EmitDeviceInfo(const DeviceInfo& d) {
  Payload p;
  p.Put(d.device).Str(d.api).Str(d.name).Str(d.vendor).Put(d.compute_units).Put(d.clock_khz).Put(d.memory_bytes);
  p.Put(d.memory_bandwidth).Put(d.peak_flops_f64).Put(d.peak_flops_f32).Put(d.peak_flops_f16).Str(d.properties);
  recorder::EmitProcessEvent(format::kDeviceInfo, p.data(), p.size());
}

void EmitQueueInfo(uint32_t device, uint64_t queue, std::string_view name) {
  Payload p;
  p.Put(device).Put(queue).Str(name);
  recorder::EmitProcessEvent(format::kQueueInfo, p.data(), p.size());
}

void EmitRecordsLost(std::string_view source, uint64_t total) {
  Payload p;
  p.Str(source).Put(total);
  recorder::EmitProcessEvent(format::kRecordsLost, p.data(), p.size());
}

void EmitKernelMetrics(const KernelMetrics& m) {
  Payload p;
  p.Put(m.correlation).Put(m.device).Put(m.flops_f64).Put(m.flops_f32).Put(m.flops_f16).Put(m.dram_bytes);
  p.Put(m.achieved_occupancy).Str(m.raw);
  recorder::EmitProcessEvent(format::kKernelMetrics, p.data(), p.size());
}

namespace {

uint64_t ReadNs(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t ReadClockArg(void* arg) { return ReadNs(static_cast<clockid_t>(reinterpret_cast<intptr_t>(arg))); }

}  // namespace

int64_t MeasureClockOffset(uint64_t (*read)(void*), void* arg, double ns_per_tick, int tries) {
  uint64_t best_window = std::numeric_limits<uint64_t>::max();
  int64_t best = 0;
  for (int i = 0; i < tries; ++i) {
    uint64_t a = ReadNs(CLOCK_MONOTONIC);
    uint64_t o = read(arg);
    uint64_t b = ReadNs(CLOCK_MONOTONIC);
    if (b - a < best_window) {
      best_window = b - a;
      auto other_ns = static_cast<int64_t>(static_cast<double>(o) * ns_per_tick);
      best = static_cast<int64_t>(a + (b - a) / 2) - other_ns;
    }
  }
  return best;
}

int64_t MeasureClockOffset(clockid_t other, int tries) {
  return MeasureClockOffset(ReadClockArg, reinterpret_cast<void*>(static_cast<intptr_t>(other)), 1.0, tries);
}

uint64_t ClockMapper::CoarseNow() { return ReadNs(CLOCK_MONOTONIC_COARSE); }

}  // namespace strata::accel

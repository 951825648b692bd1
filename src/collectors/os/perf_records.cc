#include "collectors/os/perf_records.h"

#include "base/clock.h"

namespace strata::collectors::os {
namespace {

// A cursor that refuses to move past the record's end.
class Cursor {
 public:
  Cursor(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool U64(uint64_t* v) {
    if (end_ - p_ < 8) return false;
    std::memcpy(v, p_, 8);
    p_ += 8;
    return true;
  }
  bool U32Pair(uint32_t* a, uint32_t* b) {
    if (end_ - p_ < 8) return false;
    std::memcpy(a, p_, 4);
    std::memcpy(b, p_ + 4, 4);
    p_ += 8;
    return true;
  }
  bool Skip(uint64_t n, const uint8_t** at) {
    if (static_cast<uint64_t>(end_ - p_) < n) return false;
    *at = p_;
    p_ += n;
    return true;
  }
  const uint8_t* pos() const { return p_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

constexpr uint64_t kSupported = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
                                PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;

bool Header(const uint8_t* rec, size_t size) {
  if (size < sizeof(perf_event_header)) return false;
  perf_event_header h;
  std::memcpy(&h, rec, sizeof h);
  return h.size <= size && h.size >= sizeof h;
}

}  // namespace

bool SampleIdentifier(const uint8_t* rec, size_t size, uint64_t* id) {
  if (!Header(rec, size) || size < sizeof(perf_event_header) + 8) return false;
  std::memcpy(id, rec + sizeof(perf_event_header), 8);
  return true;
}

bool ParseSample(const uint8_t* rec, size_t size, uint64_t st, uint64_t regs_mask, SampleRecord* s) {
  if (!Header(rec, size) || (st & ~kSupported)) return false;
  Cursor c(rec + sizeof(perf_event_header), rec + size);
  uint64_t v;
  if (st & PERF_SAMPLE_IDENTIFIER && !c.U64(&s->identifier)) return false;
  if (st & PERF_SAMPLE_IP && !c.U64(&s->ip)) return false;
  if (st & PERF_SAMPLE_TID && !c.U32Pair(&s->pid, &s->tid)) return false;
  if (st & PERF_SAMPLE_TIME && !c.U64(&s->time)) return false;
  if (st & PERF_SAMPLE_TIME) s->time += static_cast<uint64_t>(TimeNamespaceOffsetNs());  // the kernel's clock -> ours
  if (st & PERF_SAMPLE_ADDR && !c.U64(&s->addr)) return false;
  if (st & PERF_SAMPLE_CPU) {
    uint32_t res;
    if (!c.U32Pair(&s->cpu, &res)) return false;
  }
  if (st & PERF_SAMPLE_PERIOD && !c.U64(&s->period)) return false;
  if (st & PERF_SAMPLE_CALLCHAIN) {
    if (!c.U64(&s->chain_len) || s->chain_len > c.left() / 8) return false;
    if (!c.Skip(s->chain_len * 8, &s->chain)) return false;
  }
  if (st & PERF_SAMPLE_RAW) {
    if (c.left() < 4) return false;
    std::memcpy(&s->raw_size, c.pos(), 4);
    const uint8_t* at;
    if (!c.Skip(4, &at) || !c.Skip(s->raw_size, &s->raw)) return false;
    // The u32 size plus the payload are padded to 8 bytes; the padding is inside raw_size.
  }
  if (st & PERF_SAMPLE_REGS_USER) {
    if (!c.U64(&s->regs_abi)) return false;
    if (s->regs_abi != 0) {
      s->num_regs = static_cast<uint32_t>(__builtin_popcountll(regs_mask));
      if (!c.Skip(uint64_t{s->num_regs} * 8, &s->regs)) return false;
    }
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    uint64_t n;
    if (!c.U64(&n)) return false;
    if (n != 0) {
      const uint8_t* data;
      if (!c.Skip(n, &data) || !c.U64(&v)) return false;
      s->stack = data;
      s->stack_size = v <= n ? v : n;
    }
  }
  return true;
}

bool ParseSampleId(const uint8_t* rec, size_t size, SampleId* out) {
  if (!Header(rec, size) || size < sizeof(perf_event_header) + kSampleIdSize) return false;
  const uint8_t* p = rec + size - kSampleIdSize;
  std::memcpy(&out->pid, p, 4);
  std::memcpy(&out->tid, p + 4, 4);
  std::memcpy(&out->time, p + 8, 8);
  out->time += static_cast<uint64_t>(TimeNamespaceOffsetNs());
  std::memcpy(&out->cpu, p + 16, 4);
  std::memcpy(&out->identifier, p + 24, 8);
  return true;
}

bool ParseTask(const uint8_t* rec, size_t size, TaskRecord* out) {
  if (!Header(rec, size) || size < sizeof(perf_event_header) + 24) return false;
  const uint8_t* p = rec + sizeof(perf_event_header);
  std::memcpy(&out->pid, p, 4);
  std::memcpy(&out->ppid, p + 4, 4);
  std::memcpy(&out->tid, p + 8, 4);
  std::memcpy(&out->ptid, p + 12, 4);
  std::memcpy(&out->time, p + 16, 8);
  out->time += static_cast<uint64_t>(TimeNamespaceOffsetNs());
  return true;
}

bool ParseComm(const uint8_t* rec, size_t size, CommRecord* out) {
  if (!Header(rec, size) || size < sizeof(perf_event_header) + 8 + kSampleIdSize) return false;
  const uint8_t* p = rec + sizeof(perf_event_header);
  std::memcpy(&out->pid, p, 4);
  std::memcpy(&out->tid, p + 4, 4);
  const char* s = reinterpret_cast<const char*>(p + 8);
  size_t max = size - sizeof(perf_event_header) - 8 - kSampleIdSize;
  const void* nul = std::memchr(s, 0, max);
  out->comm = s;
  out->comm_len = nul ? static_cast<size_t>(static_cast<const char*>(nul) - s) : max;
  return true;
}

bool ParseMmap2(const uint8_t* rec, size_t size, Mmap2Record* out) {
  constexpr size_t kFixed = 8 + 24 + 24 + 8;  // pid,tid; addr,len,pgoff; dev/ino or build id; prot,flags
  if (!Header(rec, size) || size < sizeof(perf_event_header) + kFixed + kSampleIdSize) return false;
  perf_event_header h;
  std::memcpy(&h, rec, sizeof h);
  const uint8_t* p = rec + sizeof(perf_event_header);
  std::memcpy(&out->pid, p, 4);
  std::memcpy(&out->tid, p + 4, 4);
  std::memcpy(&out->addr, p + 8, 8);
  std::memcpy(&out->len, p + 16, 8);
  std::memcpy(&out->pgoff, p + 24, 8);
#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif
  out->has_build_id = (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) != 0;
  out->build_id_size = 0;
  if (out->has_build_id) {
    out->build_id_size = p[32] > 20 ? 20 : p[32];
    std::memcpy(out->build_id, p + 36, 20);
  }
  std::memcpy(&out->prot, p + 56, 4);
  std::memcpy(&out->flags, p + 60, 4);
  const char* s = reinterpret_cast<const char*>(p + kFixed);
  size_t max = size - sizeof(perf_event_header) - kFixed - kSampleIdSize;
  const void* nul = std::memchr(s, 0, max);
  out->filename = s;
  out->filename_len = nul ? static_cast<size_t>(static_cast<const char*>(nul) - s) : max;
  return true;
}

bool ParseLost(const uint8_t* rec, size_t size, LostRecord* out) {
  if (!Header(rec, size) || size < sizeof(perf_event_header) + 16) return false;
  std::memcpy(&out->id, rec + sizeof(perf_event_header), 8);
  std::memcpy(&out->lost, rec + sizeof(perf_event_header) + 8, 8);
  return true;
}

bool ParseLostSamples(const uint8_t* rec, size_t size, uint64_t* lost) {
  if (!Header(rec, size) || size < sizeof(perf_event_header) + 8) return false;
  std::memcpy(lost, rec + sizeof(perf_event_header), 8);
  return true;
}

}  // namespace strata::collectors::os

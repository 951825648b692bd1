// Bounds-checked parsing of perf_event ring records (perf_event_open(2), "MMAP
// layout"). Every function takes the record's bytes and size and fails rather
// than read past them, so a corrupt or truncated ring never crashes the
// supervisor (fuzzed by fuzz/fuzz_perf_records.cc).
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::collectors::os {

// x86-64 user registers we ask for with PERF_SAMPLE_REGS_USER, in perf's order:
// AX BX CX DX SI DI BP SP IP (bits 0-8) and R8..R15 (bits 16-23).
inline constexpr uint64_t kX86RegsMask = 0xff01ffull;
inline constexpr uint32_t kX86NumRegs = 17;
enum X86Reg : uint32_t { kAx, kBx, kCx, kDx, kSi, kDi, kBp, kSp, kIp, kR8, kR9, kR10, kR11, kR12, kR13, kR14, kR15 };

struct SampleRecord {
  uint64_t identifier = 0;
  uint64_t ip = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  const uint8_t* chain = nullptr;  // chain_len u64s (unaligned: read with ChainAt)
  uint64_t chain_len = 0;
  const uint8_t* raw = nullptr;
  uint32_t raw_size = 0;
  uint64_t regs_abi = 0;           // PERF_SAMPLE_REGS_ABI_NONE (0) when the sample hit a kernel thread
  const uint8_t* regs = nullptr;   // popcount(regs_mask) u64s
  uint32_t num_regs = 0;
  const uint8_t* stack = nullptr;  // the user stack copy from the sampled SP
  uint64_t stack_size = 0;         // valid bytes (dyn_size)

  uint64_t ChainAt(uint64_t i) const {
    uint64_t v;
    std::memcpy(&v, chain + i * 8, 8);
    return v;
  }
  uint64_t Reg(uint32_t i) const {
    uint64_t v = 0;
    if (i < num_regs) std::memcpy(&v, regs + i * 8, 8);
    return v;
  }
};

// The identifier of a PERF_RECORD_SAMPLE (sample_type must include IDENTIFIER,
// which the kernel then places first). False if the record is too short.
bool SampleIdentifier(const uint8_t* rec, size_t size, uint64_t* id);

// Parses a PERF_RECORD_SAMPLE whose event has `sample_type` (and `regs_mask`
// when REGS_USER is set). Only the fields strata requests are supported;
// unknown bits make it fail.
bool ParseSample(const uint8_t* rec, size_t size, uint64_t sample_type, uint64_t regs_mask, SampleRecord* out);

// The sample_id trailer (sample_id_all) of a non-sample record, for strata's
// sample types (TID | TIME | CPU | IDENTIFIER, in that order at the end).
struct SampleId {
  uint32_t pid = 0, tid = 0;
  uint64_t time = 0;
  uint32_t cpu = 0;
  uint64_t identifier = 0;
};
inline constexpr size_t kSampleIdSize = 32;
bool ParseSampleId(const uint8_t* rec, size_t size, SampleId* out);

// Fixed-layout non-sample records (after perf_event_header).
struct TaskRecord { uint32_t pid, ppid, tid, ptid; uint64_t time; };          // FORK, EXIT
struct CommRecord { uint32_t pid, tid; const char* comm; size_t comm_len; };   // COMM
struct Mmap2Record {
  uint32_t pid, tid;
  uint64_t addr, len, pgoff;
  bool has_build_id;
  uint8_t build_id_size;
  uint8_t build_id[20];
  uint32_t prot, flags;
  const char* filename;
  size_t filename_len;
};
struct LostRecord { uint64_t id, lost; };

bool ParseTask(const uint8_t* rec, size_t size, TaskRecord* out);
bool ParseComm(const uint8_t* rec, size_t size, CommRecord* out);
bool ParseMmap2(const uint8_t* rec, size_t size, Mmap2Record* out);
bool ParseLost(const uint8_t* rec, size_t size, LostRecord* out);
// PERF_RECORD_LOST_SAMPLES: {u64 lost}.
bool ParseLostSamples(const uint8_t* rec, size_t size, uint64_t* lost);

}  // namespace strata::collectors::os

// DWARF (CFI) unwinding of a sampled user stack with elfutils libdw, for code
// built without frame pointers (Debian's libc and python3.11, most wheels).
//
// The kernel hands us the user registers and a copy of the top of the stack
// (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER); libdw walks it with each
// module's .eh_frame/.debug_frame. Same recipe as perf's unwind-libdw.c: one
// Dwfl per address space, modules reported from the MMAP2 records, and thread
// callbacks that serve the *current* sample's registers and stack bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "collectors/os/perf_records.h"
#include "collectors/os/symbolizer.h"

namespace strata::collectors::os {

class DwarfUnwinder {
 public:
  explicit DwarfUnwinder(Symbolizer* symbolizer);  // for ELF types; must outlive this
  ~DwarfUnwinder();
  DwarfUnwinder(const DwarfUnwinder&) = delete;
  DwarfUnwinder& operator=(const DwarfUnwinder&) = delete;

  // Unwinds `s` (which must carry REGS_USER with kX86RegsMask and STACK_USER)
  // in address space `as` (id `as_id`, stable for the life of that image).
  // Appends return addresses, innermost first, the sampled IP included.
  // Returns false when libdw could not start (the caller falls back to the IP).
  bool Unwind(uint32_t as_id, const AddressSpace& as, const SampleRecord& s, std::vector<uint64_t>* pcs,
              size_t max_frames);

  // The address space is gone (exec or exit): free its Dwfl.
  void Forget(uint32_t as_id);

  struct Space;  // internal

 private:
  Symbolizer* symbolizer_;
  std::unordered_map<uint32_t, std::unique_ptr<Space>> spaces_;
};

}  // namespace strata::collectors::os

// x86-64 system call names, from our own table (syscall_table_x86_64.cc, generated
// by scripts/gen_syscall_table.py from the kernel's syscall_64.tbl), because the
// distribution's uapi headers are older than the kernels they run on.
#pragma once

#include <cstdint>
#include <string>

namespace strata::collectors::os {

// The name of syscall `nr`, or nullptr when the table has none.
const char* SyscallName(uint32_t nr);
// One past the highest number in the table.
uint32_t SyscallTableSize();

// The name, or "sys_<nr>" for numbers newer than the table.
inline std::string SyscallNameOr(uint32_t nr) {
  const char* n = SyscallName(nr);
  return n ? std::string(n) : "sys_" + std::to_string(nr);
}

}  // namespace strata::collectors::os

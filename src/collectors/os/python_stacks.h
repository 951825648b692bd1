// Python stacks of a traced CPython 3.11 process, read from outside it with
// process_vm_readv (as py-spy does), for CPU samples of interpreter threads.
//
// Why out of process: in 3.11 Python-to-Python calls do not recurse in C, and
// the frames live in each thread's heap-allocated data stack, so neither frame
// pointers nor a copy of the C stack contain them; 3.11 has no perf trampolines
// (-X perf arrives in 3.12). The supervisor may read its own child's memory
// without ptrace (same user; Yama ptrace_scope <= 1).
//
// What is missing: the line being executed (we report the function's first
// line: the current one needs 3.11's location-table decoder), other Python
// versions than the one strata was built against, and subinterpreters.
// Reads happen when the sample is processed, a few milliseconds after it was
// taken, so a sample can show the Python stack of a moment later.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/os/symbolizer.h"

namespace strata::collectors::os {

struct PythonFrame {
  std::string function;  // co_qualname
  std::string file;      // co_filename
  uint32_t line = 0;     // co_firstlineno
};

class PythonStacks {
 public:
  // Whether this build can read any interpreter (python3.11-dev was present).
  static bool Supported();
  // "3.11" for the version the layout was compiled against, "" if none.
  static std::string SupportedVersion();

  // Looks for a CPython interpreter of the supported version among `as`'s
  // mappings. Returns the address of _PyRuntime in the process, or 0.
  // `*why` explains a miss worth reporting (another Python version, ...).
  uint64_t FindRuntime(pid_t pid, const AddressSpace& as, Symbolizer* sym, std::string* why);

  // The Python stack of thread `tid`, innermost first. False if the thread has
  // no Python state or memory could not be read.
  bool ReadStack(pid_t pid, uint64_t runtime, uint32_t tid, std::vector<PythonFrame>* out);

  void Forget(pid_t pid);
  uint64_t reads() const { return reads_; }
  uint64_t failures() const { return failures_; }

 private:
  struct Code {
    uint64_t qualname = 0, filename = 0;
    int32_t firstlineno = 0;
    std::string function, file;
  };
  bool Read(pid_t pid, uint64_t addr, void* buf, size_t n);
  bool ReadString(pid_t pid, uint64_t obj, std::string* out);
  uint64_t FindThreadState(pid_t pid, uint64_t runtime, uint32_t tid);

  std::unordered_map<uint64_t, Code> codes_;            // key: pid << 48 ^ code address
  std::unordered_map<uint64_t, uint64_t> tstates_;      // key: pid << 32 | tid
  uint64_t reads_ = 0, failures_ = 0;
};

}  // namespace strata::collectors::os

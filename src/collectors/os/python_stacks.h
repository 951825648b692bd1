// Python stacks of a traced CPython 3.11, 3.12 or 3.13 process, for CPU
// samples of interpreter threads.
//
// Why out of process: in 3.11 Python-to-Python calls do not recurse in C, and
// the frames live in each thread's heap-allocated data stack, so neither frame
// pointers nor a copy of the C stack contain them; 3.11 has no perf trampolines
// (-X perf arrives in 3.12, and needs frame pointers or the program's
// consent). Each process is read with its own version's layout
// (python_layout.h), so one recording can hold interpreters of several.
//
// Two ways to get the frames of a sample:
//  - at the sample (python_bpf.h): a BPF program on the cpu-clock events walks
//    the sampled thread's frames in its timer interrupt and hands over, per
//    frame, the code object and the instruction pointer (prev_instr). Resolve()
//    names them. The stack and the sample are of the same instant.
//  - after the sample (ReadStack, without the privilege BPF needs): the
//    supervisor reads the thread's frames with process_vm_readv (as py-spy
//    does) when it processes the sample, milliseconds later; by then the thread
//    may be in other code, so the inner frames can be those of a later moment.
//
// Either way a frame's line is the line being executed (prev_instr through the
// code object's location table), not the function's first line; the first
// line is kept too, to name the function. Code objects are read from memory
// once and cached: they live as long as their function, unlike frames. Other
// Python versions (see SupportedVersions), and subinterpreters, are not read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <set>
#include <unordered_map>
#include <vector>

#include "collectors/os/python_layout.h"
#include "collectors/os/symbolizer.h"

namespace strata::collectors::os {

struct PythonFrame {
  std::string function;     // co_qualname
  std::string file;         // co_filename
  uint32_t line = 0;        // the line being executed (co_firstlineno when unknown)
  uint32_t first_line = 0;  // co_firstlineno: where the function (or module) starts
};

// One frame as the BPF program reports it.
struct PythonRawFrame {
  uint64_t code = 0;        // PyCodeObject*; bit 0 set: a shim frame of an entry from C (3.12+), not named
  uint64_t prev_instr = 0;  // _PyInterpreterFrame.prev_instr
};

// The line of the instruction at byte offset `offset` (of co_code_adaptive) in
// a code object with location table `linetable` (3.11's co_linetable format,
// Objects/locations.md) and first line `first_line`. A negative offset (the
// frame has not started) gives first_line; -1 when the instruction has no line.
int32_t PythonLineAt(std::string_view linetable, int32_t first_line, int64_t offset);

class PythonStacks {
 public:
  // Whether this build can read any interpreter.
  static bool Supported();
  // "3.11, 3.12 and 3.13": the versions strata reads.
  static std::string SupportedVersions();
  static std::string VersionName(uint32_t version_hex);  // "3.12"
  // Where `version`'s _Py_DebugOffsets holds each offset FromDebugOffsets
  // takes (a layout whose fields are those positions, 0 for the fields it
  // does not give), and the bytes read; false for a version without them
  // (before 3.13). For tests against the interpreter's own header.
  static bool DebugOffsetPositions(uint32_t version_hex, StrataPyLayout* positions, size_t* bytes);
  // The versions of the interpreters found so far ("3.12", "3.11, 3.12").
  std::string VersionsSeen() const;

  // Looks for a CPython interpreter of a supported version among `as`'s
  // mappings and takes its layout for this process. Returns the address of
  // _PyRuntime in the process, or 0. `*why` explains a miss worth reporting
  // (another Python version, ...).
  uint64_t FindRuntime(pid_t pid, const AddressSpace& as, Symbolizer* sym, std::string* why);

  // The Python stack of thread `tid` now, innermost first. False if the thread
  // has no Python state or memory could not be read.
  bool ReadStack(pid_t pid, uint64_t runtime, uint32_t tid, std::vector<PythonFrame>* out);

  // Names frames captured at a sample (innermost first). Frames whose code
  // object cannot be read are named "<unknown>".
  void Resolve(pid_t pid, const PythonRawFrame* frames, size_t n, std::vector<PythonFrame>* out);

  // The layout FindRuntime took for `pid` (null if none), or assumes one
  // (a memory image read as if it were such a process: the fuzz target).
  const StrataPyLayout* LayoutOf(pid_t pid) const;
  void Assume(pid_t pid, const StrataPyLayout& layout);

  // A forked child: the parent's interpreter at the same addresses.
  void Inherit(pid_t child, pid_t parent);
  void Forget(pid_t pid);
  uint64_t reads() const { return reads_; }
  uint64_t failures() const { return failures_; }

 private:
  // Addresses of the interpreter's type objects in a process: what is read
  // as a code object or a string must be one (a code object freed since the
  // sample, its memory reused, is not named after garbage).
  struct Types {
    uint64_t code = 0, str = 0, bytes = 0;
  };
  bool IsA(pid_t pid, uint64_t obj, uint64_t Types::*type);
  struct Code {
    uint64_t qualname = 0, filename = 0, linetable = 0;
    int32_t firstlineno = 0;
    bool named = false;
    std::string function, file;
    std::string table;  // co_linetable's bytes
  };
  bool Read(pid_t pid, uint64_t addr, void* buf, size_t n);
  bool ReadString(pid_t pid, uint64_t obj, std::string* out);
  bool ReadBytes(pid_t pid, uint64_t obj, std::string* out);
  const Code* CodeAt(pid_t pid, uint64_t code);
  PythonFrame FrameOf(pid_t pid, uint64_t code, uint64_t prev_instr);
  uint64_t FindThreadState(pid_t pid, uint64_t runtime, uint32_t tid);
  // Overrides `l` with what a 3.13+ interpreter's _PyRuntime.debug_offsets
  // says; false when they are not there or make no sense.
  bool FromDebugOffsets(pid_t pid, uint64_t runtime, StrataPyLayout* l);

  std::unordered_map<uint64_t, Code> codes_;            // key: pid << 48 ^ code address
  std::unordered_map<uint64_t, uint64_t> tstates_;      // key: pid << 32 | tid
  std::unordered_map<uint32_t, Types> types_;           // by pid
  std::unordered_map<uint32_t, StrataPyLayout> layouts_;  // by pid
  std::set<uint32_t> seen_;                             // versions found (major.minor hex)
  std::vector<uint8_t> code_buf_;
  uint64_t reads_ = 0, failures_ = 0;
};

}  // namespace strata::collectors::os

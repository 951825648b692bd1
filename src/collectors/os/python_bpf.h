// The BPF program that reads a sampled thread's Python stack at the instant of
// its CPU sample (python_stacks.bpf.c), and the maps the supervisor keeps for it.
//
// Set-up, all before the traced command execs: Load() the program; for each
// CPU ring, Attach() it to that CPU's cpu-clock event (inherited events take
// it too) and give it an output event on the same ring (SetOutput). While the
// command runs, AddProcess() each interpreter as the supervisor finds it, and
// RemoveProcess() at its exit or exec. Records arrive in the CPU's ring right
// before the sample they belong to, as PERF_RECORD_SAMPLEs of the output
// event whose raw data is a PythonBpfRecord.
//
// Needs CAP_BPF and CAP_PERFMON (or root); Load() says why when refused.
// Built only where clang can target BPF and libbpf is installed
// (STRATA_HAVE_BPF); elsewhere Load() explains that.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "collectors/os/python_stacks.h"

namespace strata::collectors::os {

// The raw data of one output record (python_stacks.bpf.c's struct record).
struct PythonBpfHeader {
  uint32_t magic;  // kPythonBpfMagic
  uint32_t tid;
  uint32_t pid;
  uint32_t frames;  // PythonRawFrame entries that follow
};
inline constexpr uint32_t kPythonBpfMagic = 0x54535950u;  // "PYST"
static_assert(sizeof(PythonBpfHeader) == 16 && sizeof(PythonRawFrame) == 16);

class PythonBpf {
 public:
  // Whether this build has the BPF program.
  static bool Built();
  static StatusOr<std::unique_ptr<PythonBpf>> Load();
  ~PythonBpf();
  PythonBpf(const PythonBpf&) = delete;
  PythonBpf& operator=(const PythonBpf&) = delete;

  // Runs the program on every overflow of `sample_fd` (a cpu-clock event).
  Status Attach(int sample_fd);
  // Opens the BPF output event of `cpu` and returns its fd (to route into that
  // CPU's ring with PerfSetOutput).
  StatusOr<int> OpenOutput(int cpu);
  Status AddProcess(uint32_t pid, uint64_t runtime, const StrataPyLayout& layout);
  void RemoveProcess(uint32_t pid);

 private:
  PythonBpf() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::collectors::os

// OS-level analyses over the model's OS tables (model/os_tables.h): where each
// thread's time went (on CPU, off CPU and why), system calls, the OS time inside
// each step, and CPU samples by function, thread and framework op.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

// Why a thread was off CPU, as a reader would say it.
struct OffCpuCause {
  std::string cause;     // a syscall name ("read", "futex"); without syscall tracing, "in <function>" the thread
                         // blocked in (libc wrapper, from its stack); "preempted"; "sleeping (S)"; "disk sleep (D)"
  std::string category;  // preempted, lock, sleep, io, poll, wait, syscall, blocked, disk, stopped
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t max_ns = 0;
};

// The cause of off-CPU row `row` of t.thread_states (which must not be running).
OffCpuCause OffCpuCauseOf(const model::Trace& t, size_t row);
// The category of a blocking system call: lock (futex...), sleep, io, poll, wait, or syscall.
std::string SyscallCategory(std::string_view name);
// Whether a thread track is one of strata's own (the recorder's flusher, the
// PyTorch observer's thread: named "strata-..." by strata): not the program's.
bool IsStrataThread(const model::Trace& t, uint32_t track);
// A frame of the read/write path (libc wrappers, the kernel's entry points).
bool IsIoFrame(std::string_view function);
// A Python frame's function as a whole: "validate (train.py:12)", its name and
// the line it starts at (frame labels carry the line being executed); "" for
// other frames.
std::string FunctionLabel(const model::Trace& t, uint32_t frame);

struct ThreadOs {
  uint32_t track = 0;
  std::string process;
  std::string thread;
  int64_t pid = 0, tid = 0;
  int64_t on_cpu_ns = 0;
  int64_t off_cpu_ns = 0;     // runnable + blocked
  int64_t runnable_ns = 0;    // preempted or waiting for a CPU
  int64_t blocked_ns = 0;     // sleeping, disk sleep, blocked, stopped
  int64_t lock_ns = 0;        // blocked in futex and friends (part of blocked_ns)
  int64_t unknown_ns = 0;     // no scheduling information
  uint64_t switches = 0;      // off-CPU intervals
  uint64_t preemptions = 0;
  uint64_t syscalls = 0;
  int64_t syscall_ns = 0;
  uint64_t samples = 0;
  std::vector<OffCpuCause> causes;  // by total time
  // Traced threads that woke this one, with how often (sched_wakeup; wakeups by
  // untraced tasks and interrupts are not seen). Most frequent first, at most 5.
  std::vector<std::pair<std::string, uint64_t>> wakers;
  std::string top_function;         // most sampled innermost function
  uint64_t top_function_samples = 0;
};

struct SyscallStats {
  std::string name;
  uint64_t count = 0;
  uint64_t errors = 0;       // returned -4095..-1
  uint64_t unfinished = 0;   // never returned (exit, exec, still blocked at the end)
  uint64_t incomplete = 0;   // entry and exit not paired (kernel records lost between): no duration, not in
                             // total/mean/percentiles
  int64_t total_ns = 0;
  double mean_ns = 0;
  int64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
};

// OS time inside one step (a kStep slice), on the step's own thread.
struct StepOs {
  uint64_t step = 0;
  int64_t ts = 0, dur = 0;
  std::string thread;
  int64_t on_cpu_ns = 0;
  int64_t runnable_ns = 0;
  int64_t blocked_ns = 0;
  int64_t lock_ns = 0;
  int64_t io_ns = 0;          // blocked in I/O system calls (part of blocked_ns)
  uint64_t syscalls = 0;
  int64_t syscall_ns = 0;
  std::string top_syscall;    // by time inside the step
  int64_t top_syscall_ns = 0;
  int64_t process_cpu_ns = 0; // on-CPU time of every thread of the process during the step
  uint64_t samples = 0;
};

struct FunctionSamples {
  std::string function;
  std::string module;
  std::string kind;      // native, python, kernel
  uint64_t self = 0;     // samples with this function innermost
  uint64_t total = 0;    // samples with this function anywhere on the stack
};

// CPU samples joined to the innermost slice (framework op, span) open on the
// sampled thread at the sample's time (model::Trace::SliceAt).
struct OpSamples {
  std::string name;      // "(no span)" for samples outside any slice
  std::string kind;
  uint64_t samples = 0;
  std::string top_function;
  uint64_t top_function_samples = 0;
};

// Per-thread and per-op "top function" is the innermost Python frame when the
// stack has one (the interpreter's own C frames say little), else the innermost frame.
struct ThreadSamples {
  std::string process, thread;
  int64_t tid = 0;
  uint64_t samples = 0;
  std::string top_function;
  uint64_t top_function_samples = 0;
};

struct OsSummary {
  bool has_sched = false;     // thread states exist
  bool has_syscalls = false;
  bool has_samples = false;
  // Every table below is of the program's threads. strata's own threads are
  // here, apart (their time, system calls and samples are in no other table).
  std::vector<ThreadOs> strata_threads;
  // Kernel records dropped (rings full): figures near those gaps are incomplete.
  uint64_t lost_records = 0;
  uint64_t incomplete_syscalls = 0;     // calls whose entry and exit could not be paired
  std::vector<ThreadOs> threads;        // by on+off CPU time
  std::vector<OffCpuCause> off_cpu;     // every thread, by total time
  std::vector<SyscallStats> syscalls;   // by total time
  std::vector<StepOs> steps;            // in step order
  uint64_t samples = 0;
  std::vector<FunctionSamples> functions;  // by self samples
  uint64_t python_samples = 0;               // samples with Python frames
  std::vector<FunctionSamples> python_functions;  // self = innermost Python frame
  std::vector<OpSamples> ops;              // by samples
  std::vector<ThreadSamples> sample_threads;
  uint64_t page_faults = 0;
  uint64_t block_requests = 0;
  uint64_t block_bytes = 0;
};

OsSummary AnalyzeOs(const model::Trace& t);

struct FoldedOptions {
  bool process_and_thread = true;  // start each stack with "process;thread"
  bool spans = false;              // then the slices open at the sample (ops, spans, steps), outermost first
  bool off_cpu = false;            // fold where threads blocked (weight: microseconds off CPU) instead of CPU samples
};
// CPU samples as folded stacks ("frame;frame;frame COUNT" per line, outermost
// first), the input of flamegraph.pl, inferno and speedscope. With off_cpu, the
// stacks threads blocked in (needs root or CAP_PERFMON at record time).
std::string FoldedStacks(const model::Trace& t, const FoldedOptions& o);

}  // namespace strata::analysis

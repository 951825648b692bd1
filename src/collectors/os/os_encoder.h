// Turns perf_event ring records into strata cpu-stream events (schema_os.h).
//
// Runs on the collector's writer thread, never on the thread that drains the
// rings (file I/O there made the kernel drop records in the research probes).
// It keeps the state records need to become useful on their own: address
// spaces from MMAP2/FORK/COMM records, interned stacks (frames and callsites),
// symbols, DWARF unwinding of stack copies, Python stacks, syscall names, and
// the exact count of records the kernel reported lost per ring.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "collectors/os/dwarf_unwind.h"
#include "collectors/os/perf_records.h"
#include "collectors/os/python_bpf.h"
#include "collectors/os/python_stacks.h"
#include "collectors/os/symbolizer.h"
#include "collectors/os/tracepoint.h"
#include "format/ctf_writer.h"

namespace strata::collectors::os {

// What an open perf event is, by its PERF_EVENT_IOC_ID.
enum class EventKind : uint8_t {
  kLeader,       // the dummy event that owns a ring (side-band records)
  kSchedSwitch,  // sched:sched_switch
  kSchedWakeup,  // sched:sched_wakeup
  kSysEnter,     // raw_syscalls:sys_enter
  kSysExit,      // raw_syscalls:sys_exit
  kCpuClock,     // cpu-clock sampling
  kPageFault,    // software page-fault events
  kBlockIssue,   // block:block_rq_issue
  kPythonStack,  // BPF output: the Python stack of the cpu-clock sample that follows it in the ring
};

struct EventInfo {
  EventKind kind = EventKind::kLeader;
  uint64_t sample_type = 0;
  uint64_t regs_mask = 0;
};

struct EncoderOptions {
  bool dwarf = false;       // unwind REGS_USER + STACK_USER copies with libdw
  bool python = true;       // read CPython stacks of sampled threads
  size_t max_frames = 127;  // the kernel's default perf_event_max_stack
};

struct EncoderStats {
  uint64_t records = 0;      // ring records parsed
  uint64_t events = 0;       // cpu-stream events written
  uint64_t lost = 0;         // records the kernel dropped (PERF_RECORD_LOST), all rings
  uint64_t lost_samples = 0; // PERF_RECORD_LOST_SAMPLES
  uint64_t throttled = 0;    // PERF_RECORD_THROTTLE: the kernel slowed sampling down
  uint64_t malformed = 0;    // records that failed to parse (skipped, counted)
  uint64_t unknown = 0;      // records of events or types we do not use
  uint64_t samples = 0;
  uint64_t frames = 0;
  uint64_t callsites = 0;
  uint64_t dwarf_failures = 0;  // samples DWARF could not unwind (fell back to the sampled IP)
  uint64_t python_samples = 0;  // samples with Python frames
  uint64_t python_late = 0;     // ... of them read from memory after the sample (no BPF)
  uint64_t python_bpf_refused = 0;  // interpreter processes the BPF program could not take (read late)
  std::string python_bpf_why;       // the first refusal's reason
  uint64_t python_processes = 0;
  std::vector<std::string> python_notes;  // interpreters found but not readable, and why
};

class OsEncoder {
 public:
  // `streams[i]` receives ring i's events; the encoder does not own them.
  OsEncoder(EncoderOptions opt, std::vector<format::StreamWriter*> streams);
  ~OsEncoder();

  void RegisterEvent(uint64_t id, EventInfo info) { events_[id] = info; }
  // Python stacks come from `bpf`'s records, taken at each sample, instead of
  // being read from memory after it (the encoder does not own it).
  void SetPythonBpf(PythonBpf* bpf) { bpf_ = bpf; }
  void SetTracepoints(TracepointFields f) { tp_ = std::move(f); }

  // Encodes the whole records in [data, data+size) read from ring `ring`, in order.
  void Process(uint32_t ring, const uint8_t* data, size_t size);
  // Encodes records read from the rings in time order across rings. Records
  // newer than `cutoff` (trace-clock ns) are kept (copied) until a later call
  // whose cutoff passes them: records of one ring may reach the reader after
  // younger records of another ring (a drain reads the rings one after the
  // other, and a reader preempted between two rings widens that), and an exec
  // or an mmap must reach the address spaces before the samples that follow it,
  // or their frames stay unmapped ("[unknown]") for good. The caller passes the
  // time before which every ring has been read; UINT64_MAX encodes everything.
  struct Span {
    uint32_t ring;
    const uint8_t* data;
    size_t size;
  };
  void ProcessBatch(const std::vector<Span>& spans, uint64_t cutoff = UINT64_MAX);
  size_t held_records() const { return batch_.size(); }
  // Ties the frames first seen since the last call to their mappings (file,
  // offset). Called after each batch, once every ring has been read, so that the
  // mappings a sample needs have been seen whatever ring they were in.
  void MapPending();
  // Symbolizes every frame mapped so far and writes the frame definitions.
  // Called once, after the traced command has exited: loading symbol tables
  // (and kallsyms) takes CPU time the program should not lose to strata.
  void ResolveFrames();

  const EncoderStats& stats() const { return stats_; }
  // The Python versions of the interpreters read ("3.12").
  std::string PythonVersionsSeen() const { return python_.VersionsSeen(); }
  uint64_t lost(uint32_t ring) const { return ring < lost_.size() ? lost_[ring] : 0; }

 private:
  struct Space {
    uint32_t pid = 0;
    AddressSpace as;
    uint64_t py_runtime = 0;
    uint64_t py_checked_generation = UINT64_MAX;
    std::string py_module;
    bool py_at_sample = false;  // the BPF program reads this interpreter's stacks at each sample
  };
  // Hands an interpreter found in `sp` to the BPF program, if there is one;
  // one it refuses is read from memory after each sample instead.
  void AddToBpf(Space& sp);
  struct PendingFrame {
    uint32_t id;
    uint32_t ring;
    uint32_t space;  // UINT32_MAX: kernel
    uint64_t pc;
  };
  struct MappedFrame {
    uint32_t id;
    uint32_t ring;
    bool kernel;
    uint64_t pc;
    int32_t mapping = -1;  // into mappings_; -1: no mapping covered the pc
    uint64_t offset = 0;   // file offset of pc in that mapping
  };

  void Dispatch(uint32_t ring, const uint8_t* rec, const perf_event_header& h, const uint8_t* py = nullptr);
  EventKind KindOf(const uint8_t* rec, const perf_event_header& h) const;
  uint64_t RecordTime(const uint8_t* rec, const perf_event_header& h) const;
  void OnSample(uint32_t ring, const uint8_t* rec, size_t size, const uint8_t* py);
  void OnSwitch(uint32_t ring, const uint8_t* rec, size_t size, uint16_t misc);
  void OnTask(uint32_t ring, const uint8_t* rec, size_t size, bool fork);
  void OnComm(uint32_t ring, const uint8_t* rec, size_t size, uint16_t misc);
  void OnMmap2(uint32_t ring, const uint8_t* rec, size_t size);
  void OnLost(uint32_t ring, uint64_t lost, uint64_t ts);

  uint32_t SpaceOf(uint32_t pid);  // creates an empty one if unknown
  uint32_t NewSpace(uint32_t pid, const Space* copy_from);
  // `py`: the BPF record of a cpu-clock sample's Python stack, if one came;
  // `late`: read the Python stack from memory now (blocked stacks; or no BPF).
  uint32_t StackOf(uint32_t ring, uint32_t space, const SampleRecord& s, bool with_chain, const uint8_t* py = nullptr,
                   bool late = true);
  bool PythonFromBpf(const SampleRecord& s, const uint8_t* py);
  uint32_t NativeFrame(uint32_t ring, uint32_t space, uint64_t pc);
  uint32_t PythonFrameId(uint32_t ring, const PythonFrame& f);
  uint32_t Callsite(uint32_t ring, uint64_t ts, uint32_t parent, uint32_t frame);
  void Emit(uint32_t ring, uint32_t event, uint64_t ts);
  void CheckPython(Space& sp);

  EncoderOptions opt_;
  std::vector<format::StreamWriter*> streams_;
  std::vector<uint64_t> lost_;
  std::unordered_map<uint64_t, EventInfo> events_;
  TracepointFields tp_;
  EncoderStats stats_;
  std::vector<uint8_t> buf_;  // payload being built

  std::vector<Space> spaces_;
  std::unordered_map<uint32_t, uint32_t> space_of_pid_;
  std::unordered_map<uint64_t, uint32_t> native_frames_;   // (space << 48) ^ pc -> frame id
  std::unordered_map<uint64_t, uint32_t> kernel_frames_;   // pc -> frame id
  std::unordered_map<std::string, uint32_t> python_frames_;
  std::unordered_map<uint64_t, uint32_t> callsites_;       // parent << 32 | frame -> id
  std::vector<PendingFrame> pending_;
  std::vector<MappedFrame> mapped_;
  std::vector<Mapping> mappings_;  // distinct files mapped by frames (path + build id)
  std::unordered_map<std::string, int32_t> mapping_index_;
  std::vector<uint8_t> syscall_named_;
  uint32_t next_frame_ = 1, next_callsite_ = 1;
  std::vector<uint64_t> pcs_;
  std::vector<uint32_t> frame_ids_;
  std::vector<PythonFrame> py_;
  static constexpr size_t kNoPython = SIZE_MAX;
  struct BatchRecord {
    uint64_t time;
    uint32_t ring;
    size_t offset;             // into held_
    size_t py = kNoPython;     // its Python stack record, also in held_ (cpu-clock samples)
  };
  // Appends a record (8-byte aligned) to `bytes`; returns its offset.
  static size_t Hold(std::vector<uint8_t>& bytes, const uint8_t* rec, size_t size);
  std::vector<BatchRecord> batch_;  // held back, oldest first
  std::vector<uint8_t> held_;       // their bytes (8-byte aligned records)
  std::vector<BatchRecord> keep_;   // scratch
  std::vector<uint8_t> keep_bytes_;
  // Per ring: a Python stack record waiting for the sample right after it.
  std::vector<std::vector<uint8_t>> py_pending_;
  PythonBpf* bpf_ = nullptr;
  std::vector<PythonRawFrame> raw_frames_;

  Symbolizer symbolizer_;
  std::unique_ptr<DwarfUnwinder> unwinder_;
  PythonStacks python_;
};

}  // namespace strata::collectors::os

// The in-process recorder's state, shared by its parts (internal to libstrata):
//
//   runtime.cc         thread registry, the slow path, the internal API (runtime.h)
//   chunk_pool.cc      buffer memory: the shared region, chunks, stream slots, the process-event log
//   supervisor_link.cc the connection to `strata record` that hands it the region
//   flusher.cc         the flush cycle: chunks -> CTF packets, with the commit protocol
//   lifecycle.cc       Start, Finalize, the emergency flush, fork
//
// Threads and their locks (always taken in this order):
//   flush_mu     one flush at a time (the flusher thread, FlushNow, exit, signals)
//   registry_mu  the list of thread and external streams
//   stream->mu   a thread stream's chunk list links
//   pool_mu      the free-chunk list
//   intern_mu    the name table
//   log_mu       the process-event log (a leaf)
// The hot path takes none of them; neither does dropping an event.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "format/control.h"
#include "format/ctf_writer.h"
#include "format/tsdl.h"
#include "recorder/buffer.h"
#include "recorder/runtime_internal.h"
#include "recorder/shm_layout.h"

namespace strata::recorder {

using format::StreamWriter;

struct ThreadStream {
  uint32_t tid = 0;
  uint32_t slot_index = kUnattributedSlot;
  StreamSlot* slot = nullptr;  // its own, or the shared unattributed one
  uint64_t stream_instance_id = 0;
  std::mutex mu;
  Chunk* head = nullptr;  // oldest chunk not yet drained
  Chunk* tail = nullptr;  // the chunk the owner writes (or last sealed one)
  uint64_t next_chunk_seq = 0;  // under mu
  std::atomic<bool> retired{false};
  // Flusher-only state.
  std::unique_ptr<StreamWriter> writer;
  uint64_t open_tried = UINT64_MAX;  // the cycle that last tried to open its file
  bool named = false;
  // `retired` as seen at the start of the current flush cycle. Only such a
  // stream may be deleted at the cycle's end: its drops and chunks all happened
  // before the cycle drained it and wrote its events_discarded. One that exits
  // mid-cycle may still have dropped events after that count was taken.
  bool retired_at_cycle_start = false;
  // How far this cycle drained: everything before (chunk seq, pos). Chunks
  // drained completely wait in `drained` until their events are in the file
  // (the commit), so that a process killed before that leaves them to the
  // supervisor.
  uint64_t frontier_seq = 0;
  uint64_t frontier_pos = 0;
  std::vector<Chunk*> drained;
};

// Events one external stream may hold back for reordering; beyond it the
// oldest are written even if younger than the window.
constexpr size_t kMaxExternalPending = 4u << 20;

struct PendingEvent {
  uint64_t ts;
  uint32_t id;
  uint32_t offset;  // into ExternalStream::bytes
  uint32_t size;
};

}  // namespace strata::recorder

namespace strata::recorder {

class ExternalStream {
 public:
  uint32_t index = 0;
  uint32_t stream_class = format::kDeviceStream;
  uint32_t device = 0;  // device streams
  uint64_t queue = 0;
  uint32_t tid = 0;     // thread streams
  StreamSlot* slot = nullptr;  // nullptr when slots ran out
  std::atomic<uint64_t> window_ns{200'000'000};
  // Flusher-only: events routed here and not yet written, and their payloads.
  std::vector<PendingEvent> events;
  std::vector<uint8_t> bytes;
  std::unique_ptr<StreamWriter> writer;
  uint64_t open_tried = UINT64_MAX;
  // Flusher scratch, kept to avoid reallocating each cycle.
  std::vector<PendingEvent> keep_events;
  std::vector<uint8_t> keep_bytes;
};

// The memory the recorder shares with its supervisor: one mapping laid out as
// shm_layout.h says, backed by a memfd the supervisor holds (or anonymous
// memory when there is no supervisor).
struct Region {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  int memfd = -1;  // -1: anonymous
  ShmHeader* header() const { return reinterpret_cast<ShmHeader*>(base); }
  StreamSlot* slot(uint32_t i) const {
    return reinterpret_cast<StreamSlot*>(base + header()->slots_offset) + i;
  }
  Chunk* chunk(uint64_t k) const {
    return reinterpret_cast<Chunk*>(base + header()->chunks_offset + k * header()->chunk_stride);
  }
  uint8_t* log() const { return base + header()->log_offset; }
};

struct Runtime {
  Config cfg;
  uint32_t chunk_capacity = 0;  // record bytes a chunk holds (ChunkStride less its control block)
  format::Uuid uuid{};
  uint64_t instance = 0;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  bool tsc = false;
  std::atomic<bool> finalized{false};

  Region region;
  int supervisor_fd = -1;  // the connection that handed `region` over; -1 without a supervisor

  std::mutex flush_mu;
  std::mutex registry_mu;
  std::vector<ThreadStream*> streams;
  std::vector<ExternalStream*> externals;
  // Threads the program named (strata_thread_name, Python thread names): the
  // flusher does not give them the kernel's name when it first drains them, which
  // could come after the program's name and replace it. A leaf lock.
  std::mutex names_mu;
  std::unordered_set<uint32_t> named_by_program;

  // Buffer memory.
  std::mutex pool_mu;
  std::vector<Chunk*> free_chunks;
  uint64_t allocated_chunks = 0;
  // Chunks a thread could take now (free, or not yet allocated): read without
  // the lock by threads whose buffers are full, so that dropping costs no lock.
  std::atomic<int64_t> available{0};

  // Process events (names, thread names, statuses): the shared log, and what
  // did not fit it (in order after the log's entries; lost if the process dies).
  std::mutex log_mu;
  bool log_spilled = false;
  struct ProcEvent {
    uint32_t id;
    std::string payload;
  };
  std::vector<ProcEvent> log_overflow;

  std::mutex intern_mu;
  std::unordered_map<std::string, uint32_t> name_ids;
  std::vector<std::string> names{""};  // id 0 is "no name"

  // Flusher thread.
  pthread_t flusher{};
  bool flusher_running = false;
  std::mutex wake_mu;
  pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER;
  bool stop = false;
  bool wake = false;
  std::atomic<bool> wake_requested{false};
  std::atomic<bool> more_work{false};  // a cycle stopped early (bounded memory): run again now

  // Flusher-owned (under flush_mu).
  TscCalibration calib;
  ClockAnchor calib_prev{}, calib_last{};  // the anchors calib was built from (published for the supervisor)
  std::unique_ptr<StreamWriter> proc_writer;
  std::vector<ThreadStream*> scratch;
  std::vector<Chunk*> release;  // chunks committed this cycle
  uint64_t stream_seq = 0;  // makes every stream's instance id unique (under registry_mu)
  uint64_t cycle = 0;       // flush cycles so far
  uint64_t events_written = 0;
  uint64_t clamped = 0;
  bool write_error_reported = false;
  pthread_key_t exit_key{};
};

extern Runtime* g_rt;
extern format::ControlBlock* g_control;
extern __thread ThreadStream* t_stream __attribute__((tls_model("initial-exec")));
extern __thread bool t_is_flusher __attribute__((tls_model("initial-exec")));
// A chunk with no room: a thread whose last chunk could not be replaced (buffers
// full, drop policy) points here, so each of its events takes the slow path,
// which counts the drop (and retries the pool only when a chunk is free).
extern Chunk g_full_chunk;

// --- chunk_pool.cc ---------------------------------------------------------------
// Maps the region for `cfg` (memfd-backed when `shared`) and initializes its header.
Status CreateRegion(Runtime& rt, bool shared);
void DestroyRegion(Region& r);
size_t ChunkStride(const Config& cfg);
// A free chunk, Reset, or nullptr when the budget is used up. `grew`: it is fresh memory.
Chunk* TryAcquireChunk(Runtime& rt, bool* grew = nullptr);
// Back to the pool (their slots cleared): flusher only, after their records are committed.
void ReleaseChunks(Runtime& rt, const std::vector<Chunk*>& chunks);
bool PoolLow(Runtime& rt);
// A slot for a new stream (kind, identity and base name filled in); kNoSlot when exhausted.
uint32_t AllocSlot(Runtime& rt, uint32_t kind, uint32_t tid, uint32_t device, uint64_t queue, uint32_t external,
                   uint64_t stream_instance_id, const std::string& base_name);
// Appends a process event to the log (or to the overflow list when it is full).
void AppendProcEvent(Runtime& rt, uint32_t id, std::string_view payload);
void PublishCalibration(Runtime& rt);
// Fills rec[spare] with `r` and publishes it as in flight; Commit publishes it as committed.
struct CommitValues {
  uint64_t chunk_seq = 0, pos = 0;
  format::StreamWriter::ResumePoint at;
  uint64_t events_written = 0, bytes_written = 0, write_failed_events = 0, write_failed_bytes = 0, write_errno = 0;
};
void BeginCommit(StreamSlot* s, const CommitValues& v);
void EndCommit(StreamSlot* s, const CommitValues& v);
const CommitRecord& CommittedRecord(const StreamSlot* s);
// Totals over the slots.
uint64_t SlotsDropped(const Runtime& rt);

// --- supervisor_link.cc ------------------------------------------------------------
// Connects to the `strata record` of this trace; -1 when there is none.
int ConnectSupervisor(const format::Uuid& uuid);
// Hands the region's memfd to the supervisor; false if it could not.
bool SendRegion(int fd, const Runtime& rt);

// --- flusher.cc ------------------------------------------------------------------
struct FlushOptions {
  bool final = false;
};
void FlushCycleLocked(Runtime& rt, FlushOptions opt);
void StartFlusher(Runtime& rt);
void WakeFlusher(Runtime& rt);
std::string StreamPath(const Runtime& rt, const std::string& leaf);
std::string InstanceHex(uint64_t inst);
uint64_t InstanceStreamId(uint64_t instance, uint64_t kind, uint64_t n);

// --- runtime.cc --------------------------------------------------------------------
void QueueProcessInfo(Runtime& rt);  // ...and QueueProcessRank
// Writes the process's rank when its environment names one it has not
// written yet (NoteRank); true when it wrote one. `fresh`: a new process,
// which has written none.
bool QueueProcessRank(Runtime& rt, bool fresh);
void PutString(std::string& out, std::string_view s);
void PutU32(std::string& out, uint32_t v);
void PutU64(std::string& out, uint64_t v);
void OnThreadExit(void* arg);
void RunFlushPhaseHook(FlushPhase phase);

}  // namespace strata::recorder

// libstrata_nccl.so: NCCL's collectives and point-to-point tasks as strata
// events, through NCCL's profiler-plugin interface (collectors/nccl/
// profiler_abi.h). `strata record` sets NCCL_PROFILER_PLUGIN to it; NCCL
// dlopen()s it and finds ncclProfiler_v5 (NCCL 2.28+) or ncclProfiler_v4 (2.27).
// It links no NCCL and no CUDA: it only answers NCCL's calls.
//
// What it records, in every process strata records:
//  - each collective task (ncclProfileColl): a comm_begin / comm_end pair,
//    "nccl:all_reduce", "nccl:all_gather", ... (NCCL's func in torch's
//    spelling), count x the datatype's size in bytes, and a sequence number
//    built from NCCL's seqNumber (nccl_names.h RowSeq), like torch.distributed's
//    works and MPI's calls: Trace::collectives;
//  - each send and receive task (ncclProfileP2p): a row "nccl:send" /
//    "nccl:recv" and, on the enqueuing thread, a span "nccl.send" / "nccl.recv"
//    whose argument is the peer's rank in the communicator;
//  - the process's rank: the rank in its largest communicator, when the
//    environment names none (RANK, OMPI_COMM_WORLD_RANK, ...).
//
// When a task ends. A row begins when NCCL starts the task's event (its plan
// is launched). NCCL stops that event once the task is enqueued, not when it
// ran: the end comes from the task's kernel, through ncclProfileKernelCh
// events (which this plugin activates): NCCL's proxy thread starts one per
// channel when it sees the kernel begin the task on that channel, and stops it
// when it sees the channel finish. The row ends at the last of these stops
// (host clock, on the proxy thread: it lags the GPU by the proxy's polling), or
// at the enqueue when no channel reported. Since a channel's events may come
// after the enqueue's stop, a task whose communicator has reported kernel
// channels before waits for its own (it is "awaiting"); it is settled without
// them when a later task of its communicator begins on the GPU (the kernels of
// one communicator run in order: it had none of its own, e.g. a 0-byte send),
// when more than kAwaitCap tasks of the communicator await, or at the
// communicator's finalize: then its end is an upper bound.
//
// Robustness: every entry point returns success and accepts null pointers;
// handles are numbers (slot, generation), never pointers, so a late or stale
// handle from NCCL matches nothing instead of reading freed memory; memory is
// fixed (kMaxOps tasks in flight, kMaxComms communicators); a task that finds
// no free slot, or a communicator none, is dropped and counted, and the counts
// are reported (collector status "partial").
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "collectors/nccl/nccl_names.h"
#include "collectors/nccl/profiler_abi.h"
#include "format/schema.h"
#include "recorder/hot.h"
#include "recorder/runtime.h"
#include "strata/strata.h"

namespace strata::collectors::nccl {
namespace {

using recorder::EmitBytes;

constexpr uint32_t kMaxOps = 8192;    // collective and p2p tasks in flight
constexpr uint32_t kMaxComms = 256;   // communicators alive at once
constexpr uint32_t kAwaitCap = 128;   // tasks of one communicator awaiting their kernel
constexpr int kMask = kColl | kP2p | kKernelCh;

bool Recording() { return recorder::LoadState() != recorder::kOff; }

// --- counters, reported -------------------------------------------------------

std::atomic<uint64_t> g_ops_dropped{0};     // no free task slot
std::atomic<uint64_t> g_comms_dropped{0};   // no free communicator slot
std::atomic<uint64_t> g_spans_dropped{0};   // a thread with too many open p2p spans
std::atomic<uint64_t> g_ended_early{0};     // settled because too many tasks awaited
std::atomic<uint64_t> g_ops_recorded{0};

void ReportState(bool final_report) {
  uint64_t ops = g_ops_dropped.load(), comms = g_comms_dropped.load(), spans = g_spans_dropped.load(),
           early = g_ended_early.load();
  if (!ops && !comms && !spans && !early) {
    if (!final_report)
      strata_report_collector("nccl", "ok",
                              "NCCL collectives and sends/receives (profiler plugin; ends from kernel channels)");
    return;
  }
  char detail[320];
  std::snprintf(detail, sizeof detail,
                "NCCL tasks recorded: %llu; dropped: %llu tasks (over %u in flight), %llu communicators' tasks (over "
                "%u communicators), %llu send/recv spans (over 16 open on a thread); %llu tasks ended before their "
                "kernel was seen (over %u awaiting)",
                static_cast<unsigned long long>(g_ops_recorded.load()), static_cast<unsigned long long>(ops), kMaxOps,
                static_cast<unsigned long long>(comms), kMaxComms, static_cast<unsigned long long>(spans),
                static_cast<unsigned long long>(early), kAwaitCap);
  strata_report_collector("nccl", "partial", detail);
}

// Says what was dropped when the process exits (or NCCL unloads the plugin,
// which -z nodelete makes a no-op): many programs never destroy their
// communicators, so finalize is not enough.
struct ExitReport {
  ~ExitReport() {
    if (Recording()) ReportState(true);
  }
} g_exit_report;

// --- communicators --------------------------------------------------------------

struct Awaiting {
  uint64_t handle;
  uint64_t order;
};

struct Comm {
  std::atomic<uint32_t> busy{0};
  uint32_t tag = 0;
  std::atomic<uint64_t> order{0};       // tasks begun, in enqueue order
  std::atomic<uint64_t> p2p_count[2];   // sends, receives
  std::atomic<bool> kernel_seen{false}; // a kernel channel of this communicator reported
  std::mutex mu;                        // guards the awaiting FIFO
  Awaiting fifo[kAwaitCap];
  uint32_t head = 0, size = 0;
};

Comm g_comms[kMaxComms];

Comm* AllocComm() {
  for (Comm& c : g_comms) {
    uint32_t expect = 0;
    if (c.busy.compare_exchange_strong(expect, 1, std::memory_order_acquire)) return &c;
  }
  return nullptr;
}

// --- tasks ----------------------------------------------------------------------
//
// A handle is a number: (generation << 32) | (slot << 2) | kind. `word` packs
// the slot's generation and its references: the enqueue's (held from start to
// stop, or on while the task awaits its kernel) and one per kernel channel
// under way. Whoever drops the last one ends the row and frees the slot; a
// reference is taken only while the generation matches and some are held
// (TryAcquire), so a stale handle takes none.

enum HandleKind : uint64_t { kOpHandle = 1, kChannelHandle = 2 };

struct Op {
  std::atomic<uint32_t> busy{0};
  std::atomic<uint64_t> word{0};  // generation << 32 | references
  std::atomic<uint32_t> awaiting{0};
  std::atomic<uint32_t> channels{0};  // kernel channels begun
  std::atomic<bool> stopped{false};   // NCCL stopped the task's event (enqueued)
  uint32_t name = 0;
  uint64_t seq = 0;
  uint64_t order = 0;
  Comm* comm = nullptr;
  uint8_t n_channels = 0;
};

Op g_ops[kMaxOps];
std::atomic<uint32_t> g_next_op{0};

uint64_t MakeHandle(uint32_t slot, uint32_t gen, HandleKind kind) {
  return (static_cast<uint64_t>(gen) << 32) | (static_cast<uint64_t>(slot) << 2) | kind;
}
void* AsPointer(uint64_t h) { return reinterpret_cast<void*>(static_cast<uintptr_t>(h)); }
uint64_t AsNumber(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }
uint32_t SlotOf(uint64_t h) { return static_cast<uint32_t>((h & 0xffffffffu) >> 2); }
uint32_t GenOf(uint64_t h) { return static_cast<uint32_t>(h >> 32); }
uint64_t KindOf(uint64_t h) { return h & 3; }

// A free slot, its references at 1 (the enqueue's); kMaxOps when none (a few
// probes past the ring's next one: tasks mostly end in the order they began).
uint32_t AllocOp(uint32_t* gen) {
  for (int probe = 0; probe < 16; ++probe) {
    uint32_t slot = g_next_op.fetch_add(1, std::memory_order_relaxed) % kMaxOps;
    Op& op = g_ops[slot];
    uint32_t expect = 0;
    if (!op.busy.compare_exchange_strong(expect, 1, std::memory_order_acquire)) continue;
    uint32_t g = static_cast<uint32_t>(op.word.load(std::memory_order_relaxed) >> 32) + 1;
    if (g == 0) g = 1;
    op.awaiting.store(0, std::memory_order_relaxed);
    op.channels.store(0, std::memory_order_relaxed);
    op.stopped.store(false, std::memory_order_relaxed);
    // Release: the fields above are visible to whoever acquires a reference.
    op.word.store((static_cast<uint64_t>(g) << 32) | 1, std::memory_order_release);
    *gen = g;
    return slot;
  }
  return kMaxOps;
}

Op* TryAcquire(uint64_t h) {
  uint32_t slot = SlotOf(h);
  if (slot >= kMaxOps || GenOf(h) == 0) return nullptr;
  Op& op = g_ops[slot];
  uint64_t w = op.word.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(w >> 32) != GenOf(h) || (w & 0xffffffffu) == 0) return nullptr;
    if (op.word.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return &op;
  }
}

void EmitEnd(uint32_t name, uint64_t seq) {
  uint8_t p[12];
  std::memcpy(p, &name, 4);
  std::memcpy(p + 4, &seq, 8);
  EmitBytes(recorder::LoadState(), static_cast<uint16_t>(format::kCommEnd), p, sizeof p);
}

// Drops one reference; the last one ends the row, on the calling thread, now.
void Release(Op* op) {
  uint64_t w = op->word.fetch_sub(1, std::memory_order_acq_rel);
  if ((w & 0xffffffffu) != 1) return;
  if (op->name && Recording()) EmitEnd(op->name, op->seq);
  op->busy.store(0, std::memory_order_release);
}

// Ends the awaiting task `h` without its kernel, if it still awaits; true if so.
bool Settle(uint64_t h) {
  Op* op = TryAcquire(h);
  if (!op) return false;
  bool settled = op->awaiting.exchange(0, std::memory_order_acq_rel) == 1;
  if (settled) Release(op);  // the enqueue's reference, kept while it awaited
  Release(op);               // ours
  return settled;
}

// Tasks of `c` that await their kernel and began before `order`: a later task
// reached the GPU, so theirs ran (or there was none).
void SettleBefore(Comm* c, uint64_t order) {
  std::lock_guard<std::mutex> lk(c->mu);
  while (c->size > 0 && c->fifo[c->head].order < order) {
    uint64_t h = c->fifo[c->head].handle;
    c->head = (c->head + 1) % kAwaitCap;
    --c->size;
    Settle(h);
  }
}

void Await(Comm* c, uint64_t h, uint64_t order) {
  std::lock_guard<std::mutex> lk(c->mu);
  if (c->size == kAwaitCap) {
    uint64_t oldest = c->fifo[c->head].handle;
    c->head = (c->head + 1) % kAwaitCap;
    --c->size;
    if (Settle(oldest)) g_ended_early.fetch_add(1, std::memory_order_relaxed);
  }
  c->fifo[(c->head + c->size) % kAwaitCap] = {h, order};
  ++c->size;
}

// --- names ---------------------------------------------------------------------

// Interned row names by SeqKind (the kinds NCCL has; 0: any other name,
// interned per task).
std::atomic<uint32_t> g_name_ids[16];

uint32_t RowNameId(const char* func, uint32_t* kind) {
  char name[64];
  RowName(func, name, sizeof name);
  *kind = SeqKind(name);
  if (*kind == 0 || *kind >= 16) return strata_intern(name);
  uint32_t id = g_name_ids[*kind].load(std::memory_order_relaxed);
  if (!id) {
    id = strata_intern(name);
    g_name_ids[*kind].store(id, std::memory_order_relaxed);
  }
  return id;
}

uint32_t SpanId(bool send) {
  static std::atomic<uint32_t> ids[2];
  uint32_t id = ids[send].load(std::memory_order_relaxed);
  if (!id) {
    id = strata_intern(send ? "nccl.send" : "nccl.recv");
    ids[send].store(id, std::memory_order_relaxed);
  }
  return id;
}

// --- p2p spans ------------------------------------------------------------------
//
// Spans nest per thread, but NCCL starts all of a plan's tasks, then stops
// them all in the same order. A span is closed when its task has stopped and
// every span opened after it on the thread has closed: the earlier ones end
// with the last (microseconds late) instead of closing the wrong span.

struct OpenSpan {
  uint64_t handle;
};
thread_local OpenSpan t_spans[16];
thread_local uint32_t t_open = 0;

bool SpanDone(uint64_t h) {
  Op* op = TryAcquire(h);
  if (!op) return true;  // the task ended: its event stopped long ago
  bool done = op->stopped.load(std::memory_order_acquire);
  Release(op);
  return done;
}

void CloseStoppedSpans() {
  while (t_open > 0 && SpanDone(t_spans[t_open - 1].handle)) {
    --t_open;
    strata_span_end_();
  }
}

// --- the rank ------------------------------------------------------------------

std::atomic<int> g_rank_nranks{0};  // the size of the communicator whose rank was written

// The process's rank: the runtime's from the environment when it names one
// (runtime.cc QueueProcessRank reads these); otherwise the rank in the largest
// communicator so far (normally the first: the world's).
void NoteRank(int rank, int nranks, const char* comm_name) {
  recorder::NoteRank();  // a program may have set RANK itself by now
  for (const char* v : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK",
                        "SLURM_PROCID", "TF_CONFIG"})
    if (const char* s = ::getenv(v); s && *s) return;
  if (rank < 0 || nranks <= 0) return;
  int best = g_rank_nranks.load(std::memory_order_relaxed);
  do {
    if (nranks <= best) return;
  } while (!g_rank_nranks.compare_exchange_weak(best, nranks, std::memory_order_relaxed));
  std::string p;
  auto put64 = [&p](int64_t v) { p.append(reinterpret_cast<const char*>(&v), 8); };
  auto put_string = [&p](const std::string& s) {
    for (char ch : s) p.push_back(ch == '\0' ? ' ' : ch);
    p.push_back('\0');
  };
  put64(rank);
  put64(-1);  // local rank: unknown
  put64(nranks);
  put_string(std::string("NCCL communicator") + (comm_name && *comm_name ? std::string(" ") + comm_name : ""));
  put_string("");
  recorder::EmitProcessEvent(format::kProcessRank, p.data(), static_cast<uint32_t>(p.size()));
}

// --- the entry points, one body for both versions ---------------------------------

std::atomic<bool> g_reported{false};

Result Init(void** context, int* mask, const char* comm_name, uint64_t comm_hash, int nranks, int rank) {
  if (context) *context = nullptr;
  if (!Recording()) {
    if (mask) *mask = 0;  // nothing to record: NCCL makes no events
    return kSuccess;
  }
  if (!g_reported.exchange(true)) ReportState(false);
  Comm* c = AllocComm();
  if (!c) {
    g_comms_dropped.fetch_add(1, std::memory_order_relaxed);
  } else {
    c->tag = CommTag(comm_hash);
    c->order.store(0, std::memory_order_relaxed);
    c->p2p_count[0].store(0, std::memory_order_relaxed);
    c->p2p_count[1].store(0, std::memory_order_relaxed);
    c->kernel_seen.store(false, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lk(c->mu);
    c->head = c->size = 0;
  }
  if (context) *context = c;
  // One mask per process (NCCL's): every communicator's init sets the same.
  if (mask) __atomic_store_n(mask, kMask, __ATOMIC_RELAXED);
  NoteRank(rank, nranks, comm_name);
  return kSuccess;
}

struct Task {
  bool coll = false;
  const char* func = nullptr;
  const char* datatype = nullptr;
  size_t count = 0;
  uint64_t seq_number = 0;
  int peer = -1;
  uint8_t n_channels = 0;
};

void* StartTask(Comm* c, const Task& t) {
  if (!c) {
    g_ops_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  uint32_t kind = 0;
  uint32_t name = RowNameId(t.func, &kind);
  if (!name) return nullptr;  // not recording (any more)
  uint32_t gen = 0;
  uint32_t slot = AllocOp(&gen);
  if (slot == kMaxOps) {
    g_ops_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Op& op = g_ops[slot];
  bool send = !t.coll && kind == SeqKind("nccl:send");
  uint64_t n = t.coll ? t.seq_number : c->p2p_count[send ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
  op.name = name;
  op.seq = RowSeq(c->tag, kind, n);
  op.comm = c;
  op.order = c->order.fetch_add(1, std::memory_order_relaxed);
  op.n_channels = t.n_channels;
  uint64_t h = MakeHandle(slot, gen, kOpHandle);
  if (!t.coll) {
    if (t_open < sizeof t_spans / sizeof t_spans[0]) {
      strata_span_begin_arg_(SpanId(send), t.peer >= 0 ? static_cast<uint64_t>(t.peer) : uint64_t{1} << 63);
      t_spans[t_open++] = {h};
    } else {
      g_spans_dropped.fetch_add(1, std::memory_order_relaxed);
    }
  }
  uint8_t p[24];
  uint64_t bytes = Bytes(t.count, t.datatype);
  uint32_t tensors = 1;
  std::memcpy(p, &op.name, 4);
  std::memcpy(p + 4, &op.seq, 8);
  std::memcpy(p + 12, &bytes, 8);
  std::memcpy(p + 20, &tensors, 4);
  EmitBytes(recorder::LoadState(), static_cast<uint16_t>(format::kCommBegin), p, sizeof p);
  g_ops_recorded.fetch_add(1, std::memory_order_relaxed);
  return AsPointer(h);
}

void* StartChannel(uint64_t parent) {
  if (KindOf(parent) != kOpHandle) return nullptr;
  Op* op = TryAcquire(parent);  // this channel's reference, dropped at its stop
  if (!op) return nullptr;
  op->channels.fetch_add(1);
  if (op->awaiting.exchange(0) == 1) Release(op);  // no longer awaits (see Stop)
  if (op->comm) SettleBefore(op->comm, op->order);
  return AsPointer(MakeHandle(SlotOf(parent), GenOf(parent), kChannelHandle));
}

template <class Descr>
Result Start(void* context, void** handle, Descr* d) {
  if (handle) *handle = nullptr;
  if (!handle || !d || !Recording()) return kSuccess;
  auto* c = static_cast<Comm*>(context);
  Task t;
  switch (static_cast<uint64_t>(d->type)) {
    case kColl:
      t.coll = true;
      t.func = d->coll.func;
      t.datatype = d->coll.datatype;
      t.count = d->coll.count;
      t.seq_number = d->coll.seqNumber;
      t.n_channels = d->coll.nChannels;
      *handle = StartTask(c, t);
      break;
    case kP2p:
      t.func = d->p2p.func;
      t.datatype = d->p2p.datatype;
      t.count = d->p2p.count;
      t.peer = d->p2p.peer;
      t.n_channels = d->p2p.nChannels;
      *handle = StartTask(c, t);
      break;
    case kKernelCh:
      // The communicator's kernels report (its later tasks await theirs),
      // even when this one's task has ended already.
      if (c) c->kernel_seen.store(true, std::memory_order_relaxed);
      *handle = StartChannel(AsNumber(d->parentObj));
      break;
    default:  // API, group, proxy events: NCCL makes some with the mask we set; none is needed
      break;
  }
  return kSuccess;
}

Result Stop(void* handle) {
  uint64_t h = AsNumber(handle);
  if (!h) return kSuccess;
  if (KindOf(h) == kChannelHandle) {
    // Holds its reference (StartChannel): the slot is still this task's.
    uint32_t slot = SlotOf(h);
    if (slot < kMaxOps) Release(&g_ops[slot]);
    return kSuccess;
  }
  if (KindOf(h) != kOpHandle) return kSuccess;
  Op* op = TryAcquire(h);
  if (!op) return kSuccess;
  op->stopped.store(true, std::memory_order_release);
  Comm* c = op->comm;
  // Enqueued; its kernel, if it reports, has not begun: keep the enqueue's
  // reference until it does (or the task is settled without it).
  bool await = c && c->kernel_seen.load(std::memory_order_relaxed) && op->n_channels > 0 &&
               op->channels.load(std::memory_order_acquire) == 0;
  if (await) {
    // Against StartChannel's increment-then-exchange, both sequentially
    // consistent: either it sees the task awaiting and takes it off, or this
    // sees its channel and does.
    op->awaiting.store(1);
    if (op->channels.load() == 0) Await(c, h, op->order);
    else if (op->awaiting.exchange(0) == 1) Release(op);
  } else {
    Release(op);  // the enqueue's reference
  }
  Release(op);  // ours
  CloseStoppedSpans();
  return kSuccess;
}

Result Finalize(void* context) {
  auto* c = static_cast<Comm*>(context);
  if (!c) return kSuccess;
  {
    std::lock_guard<std::mutex> lk(c->mu);
    while (c->size > 0) {
      uint64_t h = c->fifo[c->head].handle;
      c->head = (c->head + 1) % kAwaitCap;
      --c->size;
      Settle(h);
    }
  }
  if (Recording()) ReportState(true);
  c->busy.store(0, std::memory_order_release);
  return kSuccess;
}

// --- the ABI's signatures -----------------------------------------------------------

Result InitV5(void** context, uint64_t comm_id, int* mask, const char* comm_name, int, int nranks, int rank,
              DebugLogger) {
  return Init(context, mask, comm_name, comm_id, nranks, rank);
}
Result InitV4(void** context, int* mask, const char* comm_name, uint64_t comm_hash, int, int nranks, int rank,
              DebugLogger) {
  return Init(context, mask, comm_name, comm_hash, nranks, rank);
}
Result StartV5(void* context, void** handle, EventDescrV5* d) { return Start(context, handle, d); }
Result StartV4(void* context, void** handle, EventDescrV4* d) { return Start(context, handle, d); }
// The kernel channel's GPU timestamps are not used: the host's time of the
// stop is the row's end (the GPU's globaltimer is not strata's clock).
Result RecordState(void*, EventState, EventStateArgsV5*) { return kSuccess; }

}  // namespace
}  // namespace strata::collectors::nccl

extern "C" {

__attribute__((visibility("default"))) strata::collectors::nccl::ProfilerV5 ncclProfiler_v5 = {
    "strata", strata::collectors::nccl::InitV5, strata::collectors::nccl::StartV5, strata::collectors::nccl::Stop,
    strata::collectors::nccl::RecordState, strata::collectors::nccl::Finalize};

__attribute__((visibility("default"))) strata::collectors::nccl::ProfilerV4 ncclProfiler_v4 = {
    "strata", strata::collectors::nccl::InitV4, strata::collectors::nccl::StartV4, strata::collectors::nccl::Stop,
    strata::collectors::nccl::RecordState, strata::collectors::nccl::Finalize};

}  // extern "C"

// The in-process recorder: registry of thread streams, chunk pool, interning,
// the flusher thread, fork handling and the final flush.
//
// Threads and their locks (always taken in this order):
//   flush_mu     one flush at a time (the flusher thread, FlushNow, exit, signals)
//   registry_mu  the list of thread and external streams, pending process events
//   stream->mu   a thread stream's chunk list links
//   pool_mu      the free-chunk list
//   intern_mu    the name table
// The hot path takes none of them.

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/files.h"
#include "format/ctf_writer.h"
#include "format/schema.h"
#include "format/tsdl.h"
#include "recorder/buffer.h"
#include "recorder/hot.h"
#include "recorder/runtime_internal.h"

extern "C" {
__attribute__((visibility("default"))) uint32_t strata_active_ = 0;
}

namespace strata::recorder {

__thread Chunk* t_chunk __attribute__((tls_model("initial-exec"), visibility("default"))) = nullptr;
std::atomic<uint64_t> g_current_step{UINT64_MAX};

uint64_t CurrentStep() { return g_current_step.load(std::memory_order_relaxed); }

namespace {

using format::StreamWriter;

uint32_t GetTid() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

// A chunk with no room: a thread whose last chunk could not be replaced (buffers
// full, drop policy) points here, so each of its events takes the slow path,
// which retries the pool and counts the drop.
alignas(64) Chunk g_full_chunk;

struct ThreadStream {
  uint32_t tid = 0;
  std::mutex mu;
  Chunk* head = nullptr;  // oldest chunk not yet drained
  Chunk* tail = nullptr;  // the chunk the owner writes (or last sealed one)
  std::atomic<uint64_t> dropped{0};
  std::atomic<bool> retired{false};
  // Flusher-only state.
  std::unique_ptr<StreamWriter> writer;
  bool named = false;
  // `retired` as seen at the start of the current flush cycle. Only such a
  // stream may be deleted at the cycle's end: its drops and chunks all happened
  // before the cycle drained it and wrote its events_discarded. One that exits
  // mid-cycle may still have dropped events after that count was taken.
  bool retired_at_cycle_start = false;
};

struct PendingEvent {
  uint64_t ts;
  uint32_t id;
  uint32_t offset;  // into ExternalStream::bytes
  uint32_t size;
};

}  // namespace

class ExternalStream {
 public:
  uint32_t index = 0;
  uint32_t stream_class = format::kDeviceStream;
  uint32_t device = 0;  // device streams
  uint64_t queue = 0;
  uint32_t tid = 0;     // thread streams
  std::atomic<uint64_t> window_ns{200'000'000};
  // Flusher-only: events routed here and not yet written, and their payloads.
  std::vector<PendingEvent> events;
  std::vector<uint8_t> bytes;
  std::unique_ptr<StreamWriter> writer;
  // Flusher scratch, kept to avoid reallocating each cycle.
  std::vector<PendingEvent> keep_events;
  std::vector<uint8_t> keep_bytes;
};

namespace {

// Events one external stream may hold back for reordering; beyond it the
// oldest are written even if younger than the window.
constexpr size_t kMaxExternalPending = 4u << 20;

struct Runtime {
  Config cfg;
  format::Uuid uuid{};
  uint64_t instance = 0;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  bool tsc = false;
  std::atomic<bool> finalized{false};

  std::mutex flush_mu;
  std::mutex registry_mu;
  std::vector<ThreadStream*> streams;
  std::vector<ExternalStream*> externals;
  struct ProcEvent {
    uint32_t id;
    std::string payload;
  };
  std::vector<ProcEvent> proc_events;  // thread names, statuses, process info
  // Threads the program named (strata_thread_name, Python thread names): the
  // flusher does not give them the kernel's name when it first drains them, which
  // could come after the program's name and replace it. A leaf lock.
  std::mutex names_mu;
  std::unordered_set<uint32_t> named_by_program;

  std::mutex pool_mu;
  std::vector<Chunk*> free_chunks;
  struct Slab {
    void* base;
    size_t bytes;
  };
  std::vector<Slab> slabs;  // every mapping, to unmap on fork
  size_t allocated_chunks = 0;
  std::atomic<uint64_t> dropped_total{0};

  std::mutex intern_mu;
  std::unordered_map<std::string, uint32_t> name_ids;
  std::vector<std::string> names{""};  // id 0 is "no name"
  size_t names_written = 1;            // flusher: names[1..names_written) are in the trace

  // Flusher thread.
  pthread_t flusher{};
  bool flusher_running = false;
  std::mutex wake_mu;
  pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER;
  bool stop = false;
  bool wake = false;

  // Flusher-owned (under flush_mu).
  TscCalibration calib;
  std::unique_ptr<StreamWriter> proc_writer;
  std::vector<ThreadStream*> scratch;
  uint64_t stream_seq = 0;  // makes every stream's instance id unique
  uint64_t events_written = 0;
  uint64_t clamped = 0;
  pthread_key_t exit_key{};
};

Runtime* g_rt = nullptr;
// Mapped once at Start and kept across fork (MAP_SHARED: the child sees the
// supervisor's changes too).
format::ControlBlock* g_control = nullptr;
std::atomic<bool> g_explicit_steps{false};
std::atomic<StepListener> g_step_listener{nullptr};
std::atomic<FlushPhaseHook> g_flush_phase_hook{nullptr};

void RunFlushPhaseHook(FlushPhase phase) {
  if (FlushPhaseHook h = g_flush_phase_hook.load(std::memory_order_acquire)) h(phase);
}

// --- chunk pool --------------------------------------------------------------

// Chunks are carved from slabs of pre-faulted memory: a chunk's control block
// and records take exactly chunk_bytes (rounded to a cache line), so that eight
// 256 KiB chunks fill one 2 MiB transparent huge page. Faulting 4 KiB pages one
// by one costs ~3 us each on a VM (~180 us per 256 KiB chunk, the dominant cost
// of a thread's burst into fresh buffers); a populated huge page costs ~7x less.
constexpr size_t kHugePage = size_t{2} << 20;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

size_t ChunkStride(const Config& cfg) {
  return std::max<size_t>(2 * sizeof(Chunk), (cfg.chunk_bytes + sizeof(Chunk) - 1) & ~(sizeof(Chunk) - 1));
}

// `bytes` of zeroed, already-faulted memory; 2 MiB-aligned and advised as huge
// pages when `huge` (it is then a multiple of 2 MiB).
void* MapSlab(size_t bytes, bool huge) {
  size_t span = huge ? bytes + kHugePage : bytes;
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* base = static_cast<uint8_t*>(p);
  if (huge) {
    auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHugePage - 1) & ~(kHugePage - 1));
    if (aligned > base) ::munmap(base, static_cast<size_t>(aligned - base));
    size_t tail = static_cast<size_t>((base + span) - (aligned + bytes));
    if (tail) ::munmap(aligned + bytes, tail);
    base = aligned;
    ::madvise(base, bytes, MADV_HUGEPAGE);  // a hint: without THP the pages are 4 KiB
  }
  // Fault every page in now, in the slow path, so that the hot path never takes
  // a page fault (several ns per event amortized, and µs spikes). One call
  // instead of a fault per page; older kernels touch them instead.
  if (::madvise(base, bytes, MADV_POPULATE_WRITE) != 0) std::memset(base, 0, bytes);
  return base;
}

// A fresh chunk, and the rest of its slab into the free list (pool_mu held).
// Slabs grow 1, 1, 2, 4, 8 chunks: a process that records little keeps a small
// footprint; a busy one gets huge-page slabs.
Chunk* AllocChunk(Runtime& rt) {
  size_t stride = ChunkStride(rt.cfg);
  size_t per_huge = std::max<size_t>(1, kHugePage / stride);
  size_t n = std::min({per_huge, std::max<size_t>(1, rt.allocated_chunks), rt.cfg.max_chunks - rt.allocated_chunks});
  size_t bytes = (n * stride + 4095) & ~size_t{4095};
  void* mem = MapSlab(bytes, bytes % kHugePage == 0);
  if (!mem) return nullptr;
  rt.slabs.push_back({mem, bytes});
  rt.allocated_chunks += n;
  auto* at = static_cast<uint8_t*>(mem);
  Chunk* first = nullptr;
  for (size_t i = 0; i < n; ++i) {
    Chunk* c = new (at + i * stride) Chunk();
    c->capacity = static_cast<uint32_t>(stride - sizeof(Chunk));
    if (i == 0) first = c;
    else rt.free_chunks.push_back(c);
  }
  return first;
}

// `grew`: the pool was empty and took fresh memory.
Chunk* TryAcquireChunk(Runtime& rt, bool* grew = nullptr) {
  std::lock_guard<std::mutex> lk(rt.pool_mu);
  Chunk* c = nullptr;
  if (!rt.free_chunks.empty()) {
    c = rt.free_chunks.back();
    rt.free_chunks.pop_back();
  } else if (rt.allocated_chunks < rt.cfg.max_chunks) {
    c = AllocChunk(rt);
    if (grew) *grew = c != nullptr;
  }
  if (c) c->Reset();
  return c;
}

void ReleaseChunk(Runtime& rt, Chunk* c) {
  std::lock_guard<std::mutex> lk(rt.pool_mu);
  rt.free_chunks.push_back(c);
}

bool PoolLow(Runtime& rt) {
  std::lock_guard<std::mutex> lk(rt.pool_mu);
  size_t available = rt.free_chunks.size() + (rt.cfg.max_chunks - rt.allocated_chunks);
  return available * 4 < rt.cfg.max_chunks;
}

void WakeFlusher(Runtime& rt) {
  std::lock_guard<std::mutex> lk(rt.wake_mu);
  rt.wake = true;
  pthread_cond_signal(&rt.wake_cv);
}

// --- thread registration -----------------------------------------------------

__thread ThreadStream* t_stream = nullptr;
__thread bool t_is_flusher = false;

void OnThreadExit(void* arg) {
  auto* s = static_cast<ThreadStream*>(arg);
  if (!s || !g_rt) return;
  {
    std::lock_guard<std::mutex> lk(s->mu);
    if (s->tail) s->tail->sealed.store(true, std::memory_order_release);
  }
  s->retired.store(true, std::memory_order_release);
  t_chunk = nullptr;
  t_stream = nullptr;
}

ThreadStream* RegisterThread(Runtime& rt) {
  auto* s = new (std::nothrow) ThreadStream();
  if (!s) return nullptr;
  s->tid = GetTid();
  {
    std::lock_guard<std::mutex> lk(rt.registry_mu);
    rt.streams.push_back(s);
  }
  pthread_setspecific(rt.exit_key, s);
  t_stream = s;
  return s;
}

// --- encoding helpers for process-stream events ----------------------------

void PutString(std::string& out, std::string_view s) {
  for (char c : s) out.push_back(c == '\0' ? ' ' : c);
  out.push_back('\0');
}
void PutU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

std::string ReadProcText(const std::string& path, bool nul_to_space) {
  auto r = ReadFile(path);
  if (!r.ok()) return "";
  std::string s = std::move(r).value();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  if (nul_to_space) std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

std::string ThreadComm(uint32_t tid) {
  return ReadProcText("/proc/self/task/" + std::to_string(tid) + "/comm", false);
}

void QueueProcEvent(Runtime& rt, uint32_t id, std::string payload) {
  std::lock_guard<std::mutex> lk(rt.registry_mu);
  rt.proc_events.push_back({id, std::move(payload)});
}

void QueueProcessInfo(Runtime& rt) {
  std::string p;
  PutU32(p, rt.ppid);
  PutU64(p, RealtimeNs());
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  PutString(p, n > 0 ? std::string_view(exe, static_cast<size_t>(n)) : std::string_view());
  PutString(p, ReadProcText("/proc/self/cmdline", true));
  QueueProcEvent(rt, format::kProcessInfo, std::move(p));
}

// --- the flush cycle ---------------------------------------------------------

uint64_t ToNs(Runtime& rt, uint64_t raw) { return rt.tsc ? rt.calib.ToNs(raw) : raw; }

uint64_t InstanceStreamId(uint64_t instance, uint64_t kind, uint64_t n) {
  // Unique per stream within the trace: mix the process instance with the kind and number.
  uint64_t x = instance ^ (kind << 56) ^ (n * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  return x;
}

std::string StreamPath(Runtime& rt, const std::string& leaf) {
  return JoinPath(JoinPath(rt.cfg.dir, "ctf"), leaf);
}

std::string InstanceHex(uint64_t inst) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(inst & 0xffffffffu));
  return buf;
}

void EnsureProcWriter(Runtime& rt) {
  if (rt.proc_writer) return;
  const format::StreamSpec* spec = format::FindStream(format::kProcessStream);
  rt.proc_writer = std::make_unique<StreamWriter>(rt.uuid, *spec, InstanceStreamId(rt.instance, 1, 0),
                                                  std::vector<uint64_t>{rt.pid, rt.instance});
  std::string path = StreamPath(rt, "proc-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance));
  Status st = rt.proc_writer->Open(path);
  if (!st.ok()) std::fprintf(stderr, "strata: %s\n", st.message().c_str());
}

// Writes one record, substituting the narrow form of the commonest events when
// the values fit (format/schema.h): the hot path stays one fixed layout, and
// the file stays small.
void AppendNarrowed(StreamWriter& w, const Record* r, uint64_t ts) {
  const uint8_t* payload = r->size <= 4 ? reinterpret_cast<const uint8_t*>(&r->inline4)
                                        : reinterpret_cast<const uint8_t*>(r + 1);
  switch (r->event_id) {
    case format::kSpanBegin:
      if (r->inline4 < 0x10000) {
        auto name = static_cast<uint16_t>(r->inline4);
        w.Append(format::kSpanBegin16, ts, &name, 2);
        return;
      }
      break;
    case format::kStepBegin:
    case format::kStepEnd: {
      uint64_t step;
      std::memcpy(&step, payload, 8);
      if (step <= UINT32_MAX) {
        auto s32 = static_cast<uint32_t>(step);
        w.Append(r->event_id == format::kStepBegin ? format::kStepBegin32 : format::kStepEnd32, ts, &s32, 4);
        return;
      }
      break;
    }
    case format::kFlowOut:
    case format::kFlowIn: {
      uint64_t flow;
      std::memcpy(&flow, payload, 8);
      if (flow <= UINT32_MAX) {
        auto f32 = static_cast<uint32_t>(flow);
        w.Append(r->event_id == format::kFlowOut ? format::kFlowOut32 : format::kFlowIn32, ts, &f32, 4);
        return;
      }
      break;
    }
    case format::kCounter: {
      uint32_t name;
      double value;
      std::memcpy(&name, payload, 4);
      std::memcpy(&value, payload + 4, 8);
      if (name < 0x10000 && value >= INT16_MIN && value <= INT16_MAX &&
          value == static_cast<double>(static_cast<int16_t>(value))) {
        uint8_t p[4];
        auto n16 = static_cast<uint16_t>(name);
        auto v16 = static_cast<int16_t>(value);
        std::memcpy(p, &n16, 2);
        std::memcpy(p + 2, &v16, 2);
        w.Append(format::kCounter8, ts, p, 4);
        return;
      }
      if (name < 0x10000 && value >= INT32_MIN && value <= INT32_MAX && value == static_cast<double>(static_cast<int32_t>(value))) {
        uint8_t p[6];
        auto n16 = static_cast<uint16_t>(name);
        auto v32 = static_cast<int32_t>(value);
        std::memcpy(p, &n16, 2);
        std::memcpy(p + 2, &v32, 4);
        w.Append(format::kCounter16, ts, p, 6);
        return;
      }
      break;
    }
    default:
      break;
  }
  w.Append(r->event_id, ts, payload, r->size);
}

ExternalStream* ExternalAt(Runtime& rt, std::vector<ExternalStream*>& externals, uint32_t index) {
  if (index >= externals.size()) {
    std::lock_guard<std::mutex> lk(rt.registry_mu);
    externals = rt.externals;
  }
  return index < externals.size() ? externals[index] : nullptr;
}

// Moves a routed record into its external stream's pending list (flusher only).
void RouteRecord(Runtime& rt, std::vector<ExternalStream*>& externals, const Record* r, ThreadStream* from) {
  ExternalStream* e = ExternalAt(rt, externals, r->inline4 >> 8);
  if (!e) {
    // A stream from before a fork: the child never opened it.
    from->dropped.fetch_add(1, std::memory_order_relaxed);
    rt.dropped_total.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(r + 1);
  e->events.push_back({r->ts, r->inline4 & 0xff, static_cast<uint32_t>(e->bytes.size()), r->size});
  e->bytes.insert(e->bytes.end(), p, p + r->size);
}

void EnsureThreadWriter(Runtime& rt, ThreadStream* s, std::vector<Runtime::ProcEvent>* names_out) {
  if (s->writer) return;
  const format::StreamSpec* spec = format::FindStream(format::kThreadStream);
  s->writer = std::make_unique<StreamWriter>(
      rt.uuid, *spec, InstanceStreamId(rt.instance, 0, (uint64_t{++rt.stream_seq} << 32) | s->tid),
      std::vector<uint64_t>{rt.pid, s->tid, rt.instance});
  std::string path = StreamPath(rt, "thread-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance) + "-" +
                                        std::to_string(s->tid));
  Status st = s->writer->OpenUnique(path);
  if (!st.ok()) std::fprintf(stderr, "strata: %s\n", st.message().c_str());
  if (!s->named) {
    s->named = true;
    {
      std::lock_guard<std::mutex> lk(rt.names_mu);
      if (rt.named_by_program.count(s->tid)) return;
    }
    std::string comm = ThreadComm(s->tid);
    if (!comm.empty()) {
      std::string p;
      PutU32(p, s->tid);
      PutString(p, comm);
      names_out->push_back({format::kThreadName, std::move(p)});
    }
  }
}

// The writer (and the stream file) is created at the thread's first own event:
// a thread that only carries external-stream records (a driver's callback
// thread) leaves no empty thread stream behind.
void DrainChunkRange(Runtime& rt, ThreadStream* s, Chunk* c, uint32_t end, std::vector<ExternalStream*>& externals,
                     std::vector<Runtime::ProcEvent>* names_out) {
  uint32_t pos = c->read_pos;
  while (pos + sizeof(Record) <= end) {
    const Record* r = reinterpret_cast<const Record*>(c->data() + pos);
    if (r->event_id == kRoutedEvent) {
      RouteRecord(rt, externals, r, s);
      pos += RoutedBytes(r->size);
      continue;
    }
    EnsureThreadWriter(rt, s, names_out);
    AppendNarrowed(*s->writer, r, ToNs(rt, r->ts));
    pos += RecordBytes(r->size);
  }
  c->read_pos = pos;
}

void DrainThreadStream(Runtime& rt, ThreadStream* s, std::vector<ExternalStream*>& externals,
                       std::vector<Runtime::ProcEvent>* names_out) {
  // Losses must reach the trace even for a thread that wrote nothing else.
  if (s->dropped.load(std::memory_order_relaxed) > 0) EnsureThreadWriter(rt, s, names_out);
  for (;;) {
    Chunk* c;
    {
      std::lock_guard<std::mutex> lk(s->mu);
      c = s->head;
    }
    if (!c) break;
    uint32_t end = c->write_pos.load(std::memory_order_acquire);
    DrainChunkRange(rt, s, c, end, externals, names_out);
    bool done = false;
    {
      std::lock_guard<std::mutex> lk(s->mu);
      if (c->sealed.load(std::memory_order_acquire)) {
        // Sealed under this lock after the owner's last write_pos store.
        uint32_t final_end = c->write_pos.load(std::memory_order_acquire);
        if (final_end != c->read_pos) DrainChunkRange(rt, s, c, final_end, externals, names_out);
        s->head = c->next;
        if (s->tail == c) s->tail = nullptr;
        done = true;
      }
    }
    if (!done) break;
    ReleaseChunk(rt, c);
    // Bound the writer's memory when a thread produced a lot since the last cycle.
    if (s->writer && s->writer->pending_bytes() > (4u << 20)) {
      Status st = s->writer->Flush(ToNs(rt, NowRaw()));
      (void)st;
    }
  }
}

void EnsureExternalWriter(Runtime& rt, ExternalStream* e) {
  if (e->writer) return;
  const format::StreamSpec* spec = format::FindStream(e->stream_class);
  std::string path;
  if (e->stream_class == format::kThreadStream) {
    e->writer = std::make_unique<StreamWriter>(rt.uuid, *spec, InstanceStreamId(rt.instance, 3, (uint64_t{++rt.stream_seq} << 32) | e->tid),
                                               std::vector<uint64_t>{rt.pid, e->tid, rt.instance});
    path = StreamPath(rt, "thread-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance) + "-" +
                              std::to_string(e->tid) + "-ext");
  } else {
    e->writer = std::make_unique<StreamWriter>(rt.uuid, *spec,
                                               InstanceStreamId(rt.instance, 2, (uint64_t{++rt.stream_seq} << 32) ^ e->queue ^ (uint64_t{e->device} << 48)),
                                               std::vector<uint64_t>{rt.pid, rt.instance, e->device, e->queue});
    path = StreamPath(rt, "device-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance) + "-" +
                              std::to_string(e->device) + "-" + std::to_string(e->queue));
  }
  Status st = e->writer->OpenUnique(path);
  if (!st.ok()) std::fprintf(stderr, "strata: %s\n", st.message().c_str());
}

// Writes the stream's pending events older than its reorder window (all of
// them when `final`), in timestamp order; keeps the rest for the next cycle.
void DrainExternal(Runtime& rt, ExternalStream* e, uint64_t now_ns, bool final) {
  if (e->events.empty()) return;
  EnsureExternalWriter(rt, e);
  // In-order queues mostly deliver in order already.
  auto by_ts = [](const PendingEvent& a, const PendingEvent& b) { return a.ts < b.ts; };
  if (!std::is_sorted(e->events.begin(), e->events.end(), by_ts))
    std::stable_sort(e->events.begin(), e->events.end(), by_ts);
  uint64_t window = e->window_ns.load(std::memory_order_relaxed);
  uint64_t cutoff = final || now_ns < window ? (final ? UINT64_MAX : 0) : now_ns - window;
  size_t n = e->events.size();
  size_t write = 0;
  while (write < n && e->events[write].ts <= cutoff) ++write;
  if (n - write > kMaxExternalPending) write = n - kMaxExternalPending;
  for (size_t i = 0; i < write; ++i) {
    const PendingEvent& p = e->events[i];
    e->writer->Append(p.id, p.ts, e->bytes.data() + p.offset, p.size);
  }
  e->keep_events.clear();
  e->keep_bytes.clear();
  for (size_t i = write; i < n; ++i) {
    PendingEvent p = e->events[i];
    const uint8_t* b = e->bytes.data() + p.offset;
    p.offset = static_cast<uint32_t>(e->keep_bytes.size());
    e->keep_bytes.insert(e->keep_bytes.end(), b, b + p.size);
    e->keep_events.push_back(p);
  }
  e->events.swap(e->keep_events);
  e->bytes.swap(e->keep_bytes);
}

struct FlushOptions {
  bool final = false;
};

void FlushCycleLocked(Runtime& rt, FlushOptions opt) {
  if (rt.tsc) {
    rt.calib.AddAnchor(TakeClockAnchor());
    if (!rt.calib.has_rate()) {
      // Fewer than ~30 µs since start: wait for an interval long enough to measure the rate.
      ClockAnchor a;
      do {
        a = TakeClockAnchor();
        rt.calib.AddAnchor(a);
      } while (!rt.calib.has_rate());
    }
  }
  uint64_t now_ns = MonotonicNs();
  EnsureProcWriter(rt);

  std::vector<ExternalStream*> externals;
  {
    std::lock_guard<std::mutex> lk(rt.registry_mu);
    rt.scratch = rt.streams;
    externals = rt.externals;
  }
  for (ThreadStream* s : rt.scratch) s->retired_at_cycle_start = s->retired.load(std::memory_order_acquire);
  // 1. Encode thread events into the writers' memory (not yet written), moving
  //    external-stream records to their streams on the way.
  std::vector<Runtime::ProcEvent> thread_names;
  for (ThreadStream* s : rt.scratch) DrainThreadStream(rt, s, externals, &thread_names);
  for (ExternalStream* e : externals) DrainExternal(rt, e, now_ns, opt.final);

  // 2. Names first, then the events that use them: a process killed between the
  //    two writes leaves names without events, never events without names.
  std::vector<Runtime::ProcEvent> proc_events = std::move(thread_names);
  {
    std::lock_guard<std::mutex> lk(rt.registry_mu);
    for (auto& ev : rt.proc_events) proc_events.push_back(std::move(ev));
    rt.proc_events.clear();
  }
  std::vector<std::pair<uint32_t, std::string>> new_names;
  {
    std::lock_guard<std::mutex> lk(rt.intern_mu);
    for (size_t i = rt.names_written; i < rt.names.size(); ++i) new_names.emplace_back(static_cast<uint32_t>(i), rt.names[i]);
    rt.names_written = rt.names.size();
  }
  StreamWriter& pw = *rt.proc_writer;
  for (auto& [id, name] : new_names) {
    std::string p;
    PutU32(p, id);
    PutString(p, name);
    pw.Append(format::kNameDef, now_ns, p.data(), p.size());
  }
  for (auto& ev : proc_events) pw.Append(ev.id, now_ns, ev.payload.data(), ev.payload.size());
  Status st = pw.Flush(now_ns);
  (void)st;

  // 3. Event packets.
  uint64_t written = 0, clamped = 0;
  for (ThreadStream* s : rt.scratch) {
    if (!s->writer) continue;
    s->writer->set_discarded(s->dropped.load(std::memory_order_relaxed));
    Status fs = s->writer->Flush(now_ns, opt.final);
    (void)fs;
    written += s->writer->events_total();
    clamped += s->writer->clamped();
  }
  for (ExternalStream* e : externals) {
    if (!e->writer) continue;
    Status fs = e->writer->Flush(now_ns, opt.final);
    (void)fs;
    written += e->writer->events_total();
  }
  RunFlushPhaseHook(FlushPhase::kPacketsWritten);

  // 4. Delete the streams of threads that had exited before step 1: drained
  //    completely, and their final drop count is in the packets just written.
  //    A thread that exited since then is deleted next cycle (streams registered
  //    since the snapshot are not in scratch and still have the flag false).
  {
    std::lock_guard<std::mutex> lk(rt.registry_mu);
    auto it = std::remove_if(rt.streams.begin(), rt.streams.end(), [&](ThreadStream* s) {
      if (!s->retired_at_cycle_start) return false;
      std::lock_guard<std::mutex> sl(s->mu);
      if (s->head != nullptr) return false;
      rt.events_written += s->writer ? s->writer->events_total() : 0;
      rt.clamped += s->writer ? s->writer->clamped() : 0;
      {
        std::lock_guard<std::mutex> nl(rt.names_mu);
        rt.named_by_program.erase(s->tid);  // the kernel may give the id to a new thread
      }
      delete s;
      return true;
    });
    rt.streams.erase(it, rt.streams.end());
  }
  (void)written;
  (void)clamped;
}

void* FlusherMain(void* arg) {
  auto* rt = static_cast<Runtime*>(arg);
  t_is_flusher = true;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "strata-flush");
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(rt->wake_mu);
      if (!rt->stop && !rt->wake) {
        timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        uint64_t ns = static_cast<uint64_t>(deadline.tv_nsec) + uint64_t{rt->cfg.flush_ms} * 1000000ull;
        deadline.tv_sec += static_cast<time_t>(ns / 1000000000ull);
        deadline.tv_nsec = static_cast<long>(ns % 1000000000ull);
        pthread_cond_timedwait(&rt->wake_cv, rt->wake_mu.native_handle(), &deadline);
      }
      rt->wake = false;
      if (rt->stop) break;
    }
    std::lock_guard<std::mutex> lk(rt->flush_mu);
    if (rt->finalized.load()) break;
    FlushCycleLocked(*rt, {});
  }
  return nullptr;
}

void StartFlusher(Runtime& rt) {
  rt.stop = false;
  rt.wake = false;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  rt.flusher_running = pthread_create(&rt.flusher, &attr, FlusherMain, &rt) == 0;
  pthread_attr_destroy(&attr);
  if (!rt.flusher_running)
    std::fprintf(stderr, "strata: cannot start the flusher thread; events are written at exit only\n");
}

// --- fork --------------------------------------------------------------------

void AtForkPrepare() {
  if (!g_rt) return;
  g_rt->flush_mu.lock();
  g_rt->registry_mu.lock();
  g_rt->pool_mu.lock();
  g_rt->intern_mu.lock();
  g_rt->wake_mu.lock();
  g_rt->names_mu.lock();
}

void AtForkParent() {
  if (!g_rt) return;
  g_rt->names_mu.unlock();
  g_rt->wake_mu.unlock();
  g_rt->intern_mu.unlock();
  g_rt->pool_mu.unlock();
  g_rt->registry_mu.unlock();
  g_rt->flush_mu.unlock();
}

void AtForkChild() {
  Runtime* rt = g_rt;
  if (!rt) return;
  // Only this thread survives. Locks held by the parent's other threads are
  // re-created; the parent's unflushed events stay the parent's to write.
  new (&rt->flush_mu) std::mutex();
  new (&rt->registry_mu) std::mutex();
  new (&rt->pool_mu) std::mutex();
  new (&rt->intern_mu) std::mutex();
  new (&rt->wake_mu) std::mutex();
  new (&rt->names_mu) std::mutex();
  rt->named_by_program.clear();  // the parent's threads are not the child's
  rt->wake_cv = PTHREAD_COND_INITIALIZER;
  for (ThreadStream* s : rt->streams) {
    s->writer.reset();  // closes the parent's fd without writing
    s->~ThreadStream();
    ::operator delete(s);
  }
  rt->streams.clear();
  for (ExternalStream* e : rt->externals) delete e;
  rt->externals.clear();
  rt->proc_events.clear();
  rt->proc_writer.reset();
  for (const Runtime::Slab& m : rt->slabs) ::munmap(m.base, m.bytes);
  rt->slabs.clear();
  rt->free_chunks.clear();
  rt->allocated_chunks = 0;
  rt->dropped_total.store(0);
  // Interned ids stay valid (call sites cache them), so the child writes the
  // whole table again into its own process stream.
  rt->names_written = 1;
  rt->ppid = rt->pid;
  rt->pid = static_cast<uint32_t>(::getpid());
  format::Uuid r = format::NewRandomUuid();
  std::memcpy(&rt->instance, r.data(), 8);
  t_chunk = nullptr;
  t_stream = nullptr;
  pthread_setspecific(rt->exit_key, nullptr);
  if (rt->tsc) rt->calib.Start(TakeClockAnchor());
  QueueProcessInfo(*rt);
  if (!rt->finalized.load()) StartFlusher(*rt);
}

}  // namespace

// --- slow path -----------------------------------------------------------------

namespace {

// The calling thread's stream, registered at its first event; nullptr (the
// event dropped) when not recording or out of memory.
ThreadStream* CallingStream(Runtime* rt) {
  if (!rt || LoadState() == kOff || t_is_flusher) return nullptr;
  ThreadStream* s = t_stream;
  if (!s) {
    s = RegisterThread(*rt);
    if (!s) rt->dropped_total.fetch_add(1, std::memory_order_relaxed);
  }
  return s;
}

void CountDrop(Runtime& rt, ThreadStream* s) {
  s->dropped.fetch_add(1, std::memory_order_relaxed);
  rt.dropped_total.fetch_add(1, std::memory_order_relaxed);
}

// Seals the thread's current chunk and makes a fresh one current; nullptr when
// the buffers are full (drop policy, or the bounded wait of the block policy
// ran out): the thread then points at g_full_chunk and the caller counts the drop.
Chunk* NextChunk(Runtime& rt, ThreadStream* s) {
  bool grew = false;
  Chunk* n = TryAcquireChunk(rt, &grew);
  // Every chunk is in use: have the flusher drain the full ones now rather
  // than at its next period, so that a burst reuses them instead of growing
  // the pool further (fresh memory costs the kernel's zeroing of its pages).
  if (grew) WakeFlusher(rt);
  if (!n && rt.cfg.block) {
    // Blocking policy: wait for the flusher to free a chunk. Bounded, so that a
    // dead flusher cannot hang the program: after 10 s we fall back to dropping.
    for (int i = 0; i < 10000 && !n; ++i) {
      WakeFlusher(rt);
      ::usleep(1000);
      n = TryAcquireChunk(rt);
    }
  }
  {
    std::lock_guard<std::mutex> lk(s->mu);
    Chunk* cur = t_chunk;
    if (cur && cur != &g_full_chunk) cur->sealed.store(true, std::memory_order_release);
    if (n) {
      if (s->tail) s->tail->next = n;
      else s->head = n;
      s->tail = n;
    }
  }
  if (!n) {
    t_chunk = &g_full_chunk;
    WakeFlusher(rt);
    return nullptr;
  }
  t_chunk = n;
  return n;
}

// EmitExternal's slow path: a routed record at the start of a fresh chunk.
void SlowEmitRouted(uint32_t word, const void* payload, uint32_t size, uint64_t ts) {
  Runtime* rt = g_rt;
  ThreadStream* s = CallingStream(rt);
  if (!s) return;
  uint32_t need = RoutedBytes(size);
  if (size > 0xffff || need > ChunkStride(rt->cfg) - sizeof(Chunk)) return CountDrop(*rt, s);
  Chunk* n = NextChunk(*rt, s);
  if (!n) return CountDrop(*rt, s);
  Record* r = reinterpret_cast<Record*>(n->data());
  r->ts = ts;
  r->event_id = kRoutedEvent;
  r->size = static_cast<uint16_t>(size);
  r->inline4 = word;
  std::memcpy(r + 1, payload, size);
  n->write_pos.store(need, std::memory_order_release);
  if (PoolLow(*rt)) WakeFlusher(*rt);
}

}  // namespace

void SlowEmit(uint32_t event_id, const void* payload, uint32_t size, uint64_t ts) {
  Runtime* rt = g_rt;
  ThreadStream* s = CallingStream(rt);
  if (!s) return;
  uint32_t need = RecordBytes(size);
  if (size > 0xffff || need > ChunkStride(rt->cfg) - sizeof(Chunk)) return CountDrop(*rt, s);
  Chunk* n = NextChunk(*rt, s);
  if (!n) return CountDrop(*rt, s);
  Record* r = reinterpret_cast<Record*>(n->data());
  r->ts = ts;
  r->event_id = static_cast<uint16_t>(event_id);
  r->size = static_cast<uint16_t>(size);
  r->inline4 = 0;
  if (size <= 4) std::memcpy(&r->inline4, payload, size);
  else std::memcpy(r + 1, payload, size);
  n->write_pos.store(need, std::memory_order_release);
  if (PoolLow(*rt)) WakeFlusher(*rt);
}

// --- public internal API -------------------------------------------------------

uint64_t NowRaw() { return ReadClock(LoadState() == kOnTsc ? kOnTsc : kOnMonotonic); }
uint64_t NowNs() { return MonotonicNs(); }
bool Active() { return LoadState() != kOff; }

uint32_t Intern(std::string_view name) {
  Runtime* rt = g_rt;
  if (!rt || LoadState() == kOff) return 0;
  std::lock_guard<std::mutex> lk(rt->intern_mu);
  auto it = rt->name_ids.find(std::string(name));
  if (it != rt->name_ids.end()) return it->second;
  auto id = static_cast<uint32_t>(rt->names.size());
  rt->names.emplace_back(name);
  rt->name_ids.emplace(std::string(name), id);
  return id;
}

void EmitThreadEvent(uint32_t event_id, const void* payload, uint32_t size) {
  uint32_t st = LoadState();
  if (st == kOff) return;
  EmitBytes(st, static_cast<uint16_t>(event_id), payload, size);
}

void SetThreadName(uint32_t tid, std::string_view name) {
  Runtime* rt = g_rt;
  if (!rt || LoadState() == kOff) return;
  std::string p;
  PutU32(p, tid);
  PutString(p, name);
  {
    std::lock_guard<std::mutex> lk(rt->names_mu);
    rt->named_by_program.insert(tid);
  }
  QueueProcEvent(*rt, format::kThreadName, std::move(p));
}

void ReportCollectorStatus(std::string_view collector, std::string_view state, std::string_view detail) {
  Runtime* rt = g_rt;
  if (!rt || LoadState() == kOff) return;
  std::string p;
  PutString(p, collector);
  PutString(p, state);
  PutString(p, detail);
  QueueProcEvent(*rt, format::kCollectorStatus, std::move(p));
}

namespace {

ExternalStream* OpenExternal(uint32_t stream_class, uint32_t device, uint64_t queue, uint32_t tid) {
  Runtime* rt = g_rt;
  if (!rt || LoadState() == kOff) return nullptr;
  std::lock_guard<std::mutex> lk(rt->registry_mu);
  for (ExternalStream* e : rt->externals)
    if (e->stream_class == stream_class && e->device == device && e->queue == queue && e->tid == tid) return e;
  auto* e = new (std::nothrow) ExternalStream();
  if (!e) return nullptr;
  e->index = static_cast<uint32_t>(rt->externals.size());
  e->stream_class = stream_class;
  e->device = device;
  e->queue = queue;
  e->tid = tid;
  rt->externals.push_back(e);
  return e;
}

}  // namespace

ExternalStream* OpenDeviceStream(uint32_t device, uint64_t queue) {
  return OpenExternal(format::kDeviceStream, device, queue, 0);
}

ExternalStream* OpenThreadStreamFor(uint32_t tid) { return OpenExternal(format::kThreadStream, 0, 0, tid); }

void SetReorderWindow(ExternalStream* s, uint64_t window_ns) {
  if (s) s->window_ns.store(window_ns, std::memory_order_relaxed);
}

void EmitExternal(ExternalStream* s, uint32_t event_id, uint64_t ts_ns, const void* payload, uint32_t size) {
  uint32_t st = LoadState();
  if (!s || st == kOff || event_id > 0xff || s->index >= kMaxRoutedStreams) return;
  uint32_t word = (s->index << 8) | event_id;
  uint32_t need = RoutedBytes(size);
  Chunk* c = t_chunk;
  if (__builtin_expect(c != nullptr && size <= 0xffff, 1)) {
    uint32_t pos = c->write_pos.load(std::memory_order_relaxed);
    if (__builtin_expect(pos + need <= c->capacity, 1)) {
      Record* r = reinterpret_cast<Record*>(c->data() + pos);
      r->ts = ts_ns;  // already trace-clock ns: the flusher routes it without conversion
      r->event_id = kRoutedEvent;
      r->size = static_cast<uint16_t>(size);
      r->inline4 = word;
      std::memcpy(r + 1, payload, size);
      c->write_pos.store(pos + need, std::memory_order_release);
      return;
    }
  }
  // First event of this thread, or a full chunk.
  SlowEmitRouted(word, payload, size, ts_ns);
}

uint32_t RouteOf(const ExternalStream* s) { return s && s->index < kMaxRoutedStreams ? s->index << 8 : kNoRoute; }

void EmitProcessEvent(uint32_t event_id, const void* payload, uint32_t size) {
  Runtime* rt = g_rt;
  if (!rt || LoadState() == kOff) return;
  QueueProcEvent(*rt, event_id, std::string(static_cast<const char*>(payload), size));
}

bool FlushNow() {
  Runtime* rt = g_rt;
  if (!rt || rt->finalized.load()) return false;
  std::lock_guard<std::mutex> lk(rt->flush_mu);
  if (rt->finalized.load()) return false;
  FlushCycleLocked(*rt, {});
  return true;
}

RecorderStats Stats() {
  RecorderStats out;
  Runtime* rt = g_rt;
  if (!rt) return out;
  std::lock_guard<std::mutex> lk(rt->flush_mu);
  std::lock_guard<std::mutex> rl(rt->registry_mu);
  out.events_written = rt->events_written;
  out.clamped = rt->clamped;
  for (ThreadStream* s : rt->streams) {
    if (s->writer) {
      out.events_written += s->writer->events_total();
      out.clamped += s->writer->clamped();
    }
  }
  for (ExternalStream* e : rt->externals) {
    if (e->writer) {
      out.events_written += e->writer->events_total();
      out.clamped += e->writer->clamped();
    }
  }
  out.events_dropped = rt->dropped_total.load();
  out.streams = rt->streams.size() + rt->externals.size();
  return out;
}

const format::ControlBlock* Control() { return g_control; }

bool ExplicitStepsUsed() { return g_explicit_steps.load(std::memory_order_relaxed); }

void SetStepListener(StepListener listener) { g_step_listener.store(listener, std::memory_order_release); }

void SetFlushPhaseHookForTesting(FlushPhaseHook hook) { g_flush_phase_hook.store(hook, std::memory_order_release); }

void NoteExplicitStep(uint64_t step, bool begin) {
  if (begin) g_explicit_steps.store(true, std::memory_order_relaxed);
  if (StepListener l = g_step_listener.load(std::memory_order_acquire)) l(step, begin);
}

bool InOwnProcess() { return g_rt && static_cast<uint32_t>(::syscall(SYS_getpid)) == g_rt->pid; }

uint64_t DroppedTotal() { return g_rt ? g_rt->dropped_total.load(std::memory_order_relaxed) : 0; }

// --- lifecycle -------------------------------------------------------------------

Config ConfigFromEnv() {
  Config c;
  if (const char* d = ::secure_getenv("STRATA_TRACE_DIR")) c.dir = d;
  auto num = [](const char* name, uint64_t def) -> uint64_t {
    const char* v = ::secure_getenv(name);
    if (!v || !*v) return def;
    char* end = nullptr;
    unsigned long long x = std::strtoull(v, &end, 10);
    return (end && *end == '\0') ? x : def;
  };
  c.chunk_bytes = std::max<uint64_t>(256, num("STRATA_CHUNK_BYTES", 256 * 1024));
  c.chunk_bytes &= ~uint64_t{15};
  uint64_t budget = num("STRATA_BUFFER_BYTES", 64ull << 20);
  c.max_chunks = std::max<uint64_t>(2, budget / c.chunk_bytes);
  c.flush_ms = static_cast<uint32_t>(std::clamp<uint64_t>(num("STRATA_FLUSH_MS", 100), 1, 60000));
  const char* pol = ::secure_getenv("STRATA_BUFFER_POLICY");
  c.block = pol && std::strcmp(pol, "block") == 0;
  return c;
}

Status Start(const Config& cfg) {
  if (g_rt) return OkStatus();
  if (cfg.dir.empty()) return Status(StatusCode::kInvalidArgument, "no trace directory");
  auto* rt = new (std::nothrow) Runtime();
  if (!rt) return Status(StatusCode::kInternal, "out of memory");
  rt->cfg = cfg;
  std::string ctf = JoinPath(cfg.dir, "ctf");
  Status st = MakeDirs(ctf);
  if (!st.ok()) {
    delete rt;
    return st;
  }
  // The supervisor writes the metadata before starting the program; a process
  // traced without it (STRATA_TRACE_DIR set by hand) writes it itself.
  std::string md_path = JoinPath(ctf, "metadata");
  if (!PathExists(md_path)) {
    format::TraceIdentity id;
    id.uuid = format::NewRandomUuid();
    id.clock_offset_ns = static_cast<int64_t>(RealtimeNs()) - static_cast<int64_t>(MonotonicNs());
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    id.hostname = host;
    int fd = ::open(md_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      std::string text = format::GenerateMetadata(id);
      WriteAll(fd, text.data(), text.size());
      ::close(fd);
    }
  }
  auto text = ReadFile(md_path);
  if (!text.ok()) {
    delete rt;
    return text.status();
  }
  auto md = format::ParseMetadata(*text);
  if (!md.ok()) {
    delete rt;
    return md.status();
  }
  rt->uuid = md->uuid;
  rt->pid = static_cast<uint32_t>(::getpid());
  rt->ppid = static_cast<uint32_t>(::getppid());
  format::Uuid r = format::NewRandomUuid();
  std::memcpy(&rt->instance, r.data(), 8);
  rt->tsc = TscIsReliable();
  if (rt->tsc) rt->calib.Start(TakeClockAnchor());
  pthread_key_create(&rt->exit_key, OnThreadExit);
  if (!g_control) {
    std::string cpath = JoinPath(cfg.dir, format::kControlFileName);
    if (PathExists(cpath)) {
      auto cb = format::MapControlFile(cpath);
      if (cb.ok()) g_control = *cb;
      else std::fprintf(stderr, "strata: %s (run-time switches unavailable)\n", cb.status().message().c_str());
    }
  }
  g_rt = rt;
  QueueProcessInfo(*rt);
  pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild);
  __atomic_store_n(&strata_active_, rt->tsc ? kOnTsc : kOnMonotonic, __ATOMIC_RELEASE);
  StartFlusher(*rt);
  return OkStatus();
}

void Finalize() {
  Runtime* rt = g_rt;
  if (!rt) return;
  // Stop recording first: events attempted after this point are not recorded,
  // so the final flush below is complete.
  __atomic_store_n(&strata_active_, kOff, __ATOMIC_RELEASE);
  {
    std::lock_guard<std::mutex> lk(rt->flush_mu);
    if (rt->finalized.exchange(true)) return;
    // Seal the exiting thread's own chunk so it is drained completely.
    if (ThreadStream* s = t_stream) {
      std::lock_guard<std::mutex> sl(s->mu);
      if (s->tail) s->tail->sealed.store(true, std::memory_order_release);
    }
    FlushCycleLocked(*rt, {true});
    if (rt->proc_writer) {
      Status st = rt->proc_writer->Close(MonotonicNs());
      (void)st;
    }
  }
  if (rt->flusher_running) {
    {
      std::lock_guard<std::mutex> lk(rt->wake_mu);
      rt->stop = true;
      pthread_cond_signal(&rt->wake_cv);
    }
    pthread_join(rt->flusher, nullptr);
    rt->flusher_running = false;
  }
}

bool EmergencyFlush() {
  Runtime* rt = g_rt;
  if (!rt) return false;
  // From a fatal-signal handler: the crashing thread may hold a lock (or the
  // flusher may be mid-cycle), so only try for a bounded time.
  for (int i = 0; i < 200; ++i) {
    if (rt->flush_mu.try_lock()) {
      __atomic_store_n(&strata_active_, kOff, __ATOMIC_RELEASE);
      if (!rt->finalized.exchange(true)) {
        if (ThreadStream* s = t_stream) {
          if (s->mu.try_lock()) {
            if (s->tail) s->tail->sealed.store(true, std::memory_order_release);
            s->mu.unlock();
          }
        }
        FlushCycleLocked(*rt, {true});
      }
      rt->flush_mu.unlock();
      return true;
    }
    ::usleep(1000);
  }
  return false;
}

}  // namespace strata::recorder

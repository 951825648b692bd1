// The in-process recorder: the registry of thread and external streams, the
// slow path of the hot path (hot.h), interning, and the internal API
// (runtime.h). Buffer memory is in chunk_pool.cc, the flush cycle in
// flusher.cc, start/exit/fork in lifecycle.cc; runtime_state.h says which
// lock guards what.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>

#include "base/files.h"
#include "format/schema.h"
#include "recorder/hot.h"
#include "recorder/runtime_state.h"

extern "C" {
__attribute__((visibility("default"))) uint32_t strata_active_ = 0;
}

namespace strata::recorder {

__thread Chunk* t_chunk __attribute__((tls_model("initial-exec"), visibility("default"))) = nullptr;
std::atomic<uint64_t> g_current_step{UINT64_MAX};
Runtime* g_rt = nullptr;
// Initial-exec like t_chunk (libstrata is preloaded or linked, never dlopen'ed
// late): the slow path, which every dropped event takes, reads them without a
// call to __tls_get_addr.
__thread ThreadStream* t_stream __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_is_flusher __attribute__((tls_model("initial-exec"))) = false;
alignas(64) Chunk g_full_chunk;

uint64_t CurrentStep() { return g_current_step.load(std::memory_order_relaxed); }

namespace {

std::atomic<bool> g_explicit_steps{false};
std::atomic<StepListener> g_step_listener{nullptr};
std::atomic<FlushPhaseHook> g_flush_phase_hook{nullptr};

uint32_t GetTid() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

}  // namespace

// Mapped once at Start and kept across fork (MAP_SHARED: the child sees the
// supervisor's changes too).
format::ControlBlock* g_control = nullptr;

void RunFlushPhaseHook(FlushPhase phase) {
  if (FlushPhaseHook h = g_flush_phase_hook.load(std::memory_order_acquire)) h(phase);
}

// --- thread registration -----------------------------------------------------

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

namespace {

ThreadStream* RegisterThread(Runtime& rt) {
  auto* s = new (std::nothrow) ThreadStream();
  if (!s) return nullptr;
  s->tid = GetTid();
  {
    std::lock_guard<std::mutex> lk(rt.registry_mu);
    uint64_t id = InstanceStreamId(rt.instance, 0, (uint64_t{++rt.stream_seq} << 32) | s->tid);
    std::string base = "thread-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance) + "-" + std::to_string(s->tid);
    s->stream_instance_id = id;
    uint32_t slot = AllocSlot(rt, kSlotThread, s->tid, 0, 0, 0, id, base);
    if (slot != kNoSlot) {
      s->slot_index = slot;
      s->slot = rt.region.slot(slot);
    } else {
      // Out of slots: its drops are counted with the unattributed ones, its
      // stream gets an id of its own.
      s->slot_index = kUnattributedSlot;
      s->slot = rt.region.slot(kUnattributedSlot);
    }
    rt.streams.push_back(s);
  }
  pthread_setspecific(rt.exit_key, s);
  t_stream = s;
  return s;
}

}  // namespace

// --- encoding helpers for process-stream events ----------------------------

void PutString(std::string& out, std::string_view s) {
  for (char c : s) out.push_back(c == '\0' ? ' ' : c);
  out.push_back('\0');
}
void PutU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

namespace {

std::string ReadProcText(const std::string& path) {
  auto r = ReadFile(path);
  if (!r.ok()) return "";
  std::string s = std::move(r).value();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

}  // namespace

void QueueProcessInfo(Runtime& rt) {
  std::string p;
  PutU32(p, rt.ppid);
  PutU64(p, RealtimeNs());
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  PutString(p, n > 0 ? std::string_view(exe, static_cast<size_t>(n)) : std::string_view());
  PutString(p, ReadProcText("/proc/self/cmdline"));
  AppendProcEvent(rt, format::kProcessInfo, p);
  QueueProcessRank(rt, /*fresh=*/true);  // a new process (or a fork's child)
}

namespace {

// The first of `names` set in the environment to an integer, or -1; `which`
// gets its name.
int64_t EnvInt(std::initializer_list<const char*> names, const char** which = nullptr) {
  for (const char* n : names) {
    const char* v = ::getenv(n);
    if (!v || !*v) continue;
    char* end = nullptr;
    long long x = std::strtoll(v, &end, 10);
    if (end && *end == '\0' && x >= 0) {
      if (which) *which = n;
      return x;
    }
  }
  return -1;
}

// TensorFlow's TF_CONFIG ({"cluster": {"chief": [..], "worker": [a, b]},
// "task": {"type": "worker", "index": 1}}): with a chief, it is rank 0 and
// worker i is rank i + 1; without one, worker i is rank i. Other tasks (ps,
// evaluator) have none. A small scan, not a JSON parser: the recorder links no
// JSON library, and the variable is written by launchers in this one shape.
int64_t TfConfigRank(int64_t* world) {
  const char* v = ::getenv("TF_CONFIG");
  if (!v) return -1;
  std::string_view s(v);
  auto value_after = [&s](size_t key) {
    size_t c = s.find(':', key);
    if (c == std::string_view::npos) return std::string_view::npos;
    size_t b = s.find_first_not_of(" \t\n\r", c + 1);
    return b;
  };
  size_t task = s.find("\"task\"");
  if (task == std::string_view::npos) return -1;
  size_t type_key = s.find("\"type\"", task), index_key = s.find("\"index\"", task);
  if (type_key == std::string_view::npos) return -1;
  size_t tb = value_after(type_key);
  if (tb == std::string_view::npos || s[tb] != '"') return -1;
  size_t te = s.find('"', tb + 1);
  if (te == std::string_view::npos) return -1;
  std::string_view type = s.substr(tb + 1, te - tb - 1);
  int64_t index = 0;
  if (index_key != std::string_view::npos) {
    size_t ib = value_after(index_key);
    if (ib == std::string_view::npos) return -1;
    index = std::strtoll(std::string(s.substr(ib, 20)).c_str(), nullptr, 10);
  }
  auto count = [&s](const char* key) -> int64_t {  // entries of the cluster's list `key`
    size_t k = s.find(key);
    if (k == std::string_view::npos) return 0;
    size_t b = s.find('[', k), e = b == std::string_view::npos ? b : s.find(']', b);
    if (e == std::string_view::npos) return 0;
    int64_t quotes = 0;
    for (size_t i = b; i < e; ++i) quotes += s[i] == '"';
    return quotes / 2;
  };
  const int64_t chief = count("\"chief\""), workers = count("\"worker\"");
  *world = chief + workers > 0 ? chief + workers : -1;
  if (type == "chief" || type == "master") return 0;
  if (type == "worker" && index >= 0) return index + chief;
  return -1;
}

std::atomic<int64_t> g_rank_written{-2};  // the rank last written (-1: none known)

}  // namespace

bool QueueProcessRank(Runtime& rt, bool fresh) {
  if (fresh) g_rank_written.store(-2);
  // torchrun / torch.distributed.launch, Open MPI, MPICH and Intel MPI (PMI),
  // PMIx, MVAPICH, Slurm's srun (last: under sbatch alone every process has 0).
  const char* which = "";
  int64_t rank = EnvInt({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK",
                         "SLURM_PROCID"},
                        &which);
  int64_t tf_world = -1;
  if (rank < 0 && (rank = TfConfigRank(&tf_world)) >= 0) which = "TF_CONFIG";
  if (rank < 0 || g_rank_written.exchange(rank) == rank) return false;
  int64_t local = EnvInt({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                          "SLURM_LOCALID"});
  int64_t world = EnvInt({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS"});
  if (world < 0) world = tf_world;
  const char* job = nullptr;
  for (const char* n : {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"})
    if ((job = ::getenv(n)) && *job) break;
  std::string p;
  PutU64(p, static_cast<uint64_t>(rank));
  PutU64(p, static_cast<uint64_t>(local));
  PutU64(p, static_cast<uint64_t>(world));
  PutString(p, which);
  PutString(p, job ? job : "");
  AppendProcEvent(rt, format::kProcessRank, p);
  return true;
}

void NoteRank() {
  Runtime* rt = g_rt;
  if (!rt || LoadState() == kOff) return;
  QueueProcessRank(*rt, false);
}

// --- slow path -----------------------------------------------------------------

namespace {

// The calling thread's stream, registered at its first event; nullptr (the
// event dropped) when not recording or out of memory.
ThreadStream* CallingStream(Runtime* rt) {
  if (!rt || LoadState() == kOff || t_is_flusher) return nullptr;
  ThreadStream* s = t_stream;
  if (!s) {
    s = RegisterThread(*rt);
    if (!s) rt->region.slot(kUnattributedSlot)->dropped.fetch_add(1, std::memory_order_relaxed);
  }
  return s;
}

// Counts one dropped event of `bytes` bytes. A thread's own slot is written by
// that thread only (a plain load and store, no locked instruction), on a cache
// line no other thread writes: threads that drop flat out do not contend.
void CountDrop(ThreadStream* s, uint32_t bytes) {
  StreamSlot* sl = s->slot;
  if (s->slot_index > kUnattributedSlot) {
    sl->dropped.store(sl->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    sl->dropped_bytes.store(sl->dropped_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  } else {
    sl->dropped.fetch_add(1, std::memory_order_relaxed);
    sl->dropped_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
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
  // A thread already on g_full_chunk that lost the race for a freed chunk has
  // nothing to seal or link: it leaves the stream's lock to the flusher.
  if (n || t_chunk != &g_full_chunk) {
    std::lock_guard<std::mutex> lk(s->mu);
    Chunk* cur = t_chunk;
    if (cur && cur != &g_full_chunk) cur->sealed.store(true, std::memory_order_release);
    if (n) {
      // Tagged for the supervisor before any record lands in it. A thread
      // without a slot of its own leaves its chunks untagged: they cannot be
      // told apart after the process is gone.
      n->seq.store(s->next_chunk_seq++, std::memory_order_relaxed);
      n->slot.store(s->slot_index > kUnattributedSlot ? s->slot_index : kNoSlot, std::memory_order_release);
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

// True when the event must be dropped without trying for a chunk: the thread
// already found the buffers full, and none has been freed since. This is all a
// dropped event costs: no lock, no system call.
inline bool StillFull(const Runtime& rt) {
  return t_chunk == &g_full_chunk && !rt.cfg.block && rt.available.load(std::memory_order_relaxed) <= 0;
}

// EmitExternal's slow path: a routed record at the start of a fresh chunk.
void SlowEmitRouted(uint32_t word, const void* payload, uint32_t size, uint64_t ts) {
  Runtime* rt = g_rt;
  ThreadStream* s = CallingStream(rt);
  if (!s) return;
  uint32_t need = RoutedBytes(size);
  if (size > 0xffff || need > rt->chunk_capacity || StillFull(*rt)) return CountDrop(s, need);
  Chunk* n = NextChunk(*rt, s);
  if (!n) return CountDrop(s, need);
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
  if (size > 0xffff || need > rt->chunk_capacity || StillFull(*rt)) return CountDrop(s, need);
  Chunk* n = NextChunk(*rt, s);
  if (!n) return CountDrop(s, need);
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
  // Into the process-event log at once, before any event can use the id.
  std::string p;
  PutU32(p, id);
  PutString(p, name);
  AppendProcEvent(*rt, format::kNameDef, p);
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
  AppendProcEvent(*rt, format::kThreadName, p);
}

void ReportCollectorStatus(std::string_view collector, std::string_view state, std::string_view detail) {
  Runtime* rt = g_rt;
  if (!rt || LoadState() == kOff) return;
  std::string p;
  PutString(p, collector);
  PutString(p, state);
  PutString(p, detail);
  AppendProcEvent(*rt, format::kCollectorStatus, p);
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
  uint64_t id;
  std::string base;
  if (stream_class == format::kThreadStream) {
    id = InstanceStreamId(rt->instance, 3, (uint64_t{++rt->stream_seq} << 32) | tid);
    base = "thread-" + std::to_string(rt->pid) + "-" + InstanceHex(rt->instance) + "-" + std::to_string(tid) + "-ext";
  } else {
    id = InstanceStreamId(rt->instance, 2, (uint64_t{++rt->stream_seq} << 32) ^ queue ^ (uint64_t{device} << 48));
    base = "device-" + std::to_string(rt->pid) + "-" + InstanceHex(rt->instance) + "-" + std::to_string(device) + "-" +
           std::to_string(queue);
  }
  uint32_t slot = AllocSlot(*rt, stream_class == format::kThreadStream ? kSlotThreadExt : kSlotDevice, tid, device,
                            queue, e->index, id, base);
  if (slot != kNoSlot) {
    e->slot = rt->region.slot(slot);
    if (e->index < ShmHeader::kMaxExternal)
      rt->region.header()->external_slot[e->index].store(slot, std::memory_order_release);
  }
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
  AppendProcEvent(*rt, event_id, std::string_view(static_cast<const char*>(payload), size));
}

bool FlushNow() {
  Runtime* rt = g_rt;
  if (!rt || rt->finalized.load()) return false;
  std::lock_guard<std::mutex> lk(rt->flush_mu);
  if (rt->finalized.load()) return false;
  // Cycles stop early to bound their memory: go on until the buffers are drained.
  for (int i = 0; i < 1000; ++i) {
    FlushCycleLocked(*rt, {});
    if (!rt->more_work.load(std::memory_order_relaxed)) break;
  }
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
  out.events_dropped = SlotsDropped(*rt);
  out.streams = rt->streams.size() + rt->externals.size();
  return out;
}

const format::ControlBlock* Control() { return g_control; }

bool ExplicitStepsUsed() { return g_explicit_steps.load(std::memory_order_relaxed); }

void SetStepListener(StepListener listener) { g_step_listener.store(listener, std::memory_order_release); }

void SetFlushPhaseHookForTesting(FlushPhaseHook hook) { g_flush_phase_hook.store(hook, std::memory_order_release); }

void NoteExplicitStep(uint64_t step, bool begin) {
  if (begin) g_explicit_steps.store(true, std::memory_order_relaxed);
  MarkStep(step, begin);  // first: the listener's tiers belong to the step begun, not to the one ended
  if (StepListener l = g_step_listener.load(std::memory_order_acquire)) l(step, begin);
}

namespace {
// The step this process is in, for the live-step ring (steps of one process
// come one at a time; several processes each have their own).
std::atomic<uint64_t> g_step_begin_ns{0};
std::atomic<uint32_t> g_step_tiers{0};
std::atomic<uint32_t> g_step_optimizer{0};  // + 1
}  // namespace

void MarkStep(uint64_t step, bool begin) {
  if (begin) {
    uint64_t prev = g_current_step.exchange(step, std::memory_order_relaxed);
    g_step_begin_ns.store(NowNs(), std::memory_order_relaxed);
    if (prev != step) {
      g_step_tiers.store(0, std::memory_order_relaxed);
      g_step_optimizer.store(0, std::memory_order_relaxed);
    }
    if (g_control && InOwnProcess()) format::PublishStepBegin(g_control, static_cast<int64_t>(step));
    return;
  }
  uint64_t begin_ns = g_step_begin_ns.load(std::memory_order_relaxed);
  g_current_step.store(UINT64_MAX, std::memory_order_relaxed);
  if (!g_control || !InOwnProcess() || step > static_cast<uint64_t>(INT64_MAX)) return;
  uint32_t tiers = g_step_tiers.exchange(0, std::memory_order_relaxed) |
                   (format::GetTiers(*g_control) & (format::kTierMemory | format::kTierGpuMetrics));
  format::PublishStepEnd(g_control, static_cast<int64_t>(step), begin_ns, NowNs(), g_rt->pid, tiers,
                         g_step_optimizer.exchange(0, std::memory_order_relaxed));
}

void NoteStepTiers(uint32_t tiers) { g_step_tiers.fetch_or(tiers, std::memory_order_relaxed); }

void NoteStepOptimizer(uint32_t optimizer) {
  g_step_optimizer.store(optimizer == UINT32_MAX ? optimizer : optimizer + 1, std::memory_order_relaxed);
}

bool InOwnProcess() { return g_rt && static_cast<uint32_t>(::syscall(SYS_getpid)) == g_rt->pid; }

uint64_t DroppedTotal() { return g_rt ? SlotsDropped(*g_rt) : 0; }

// --- lifecycle (the rest is in lifecycle.cc) ---------------------------------------

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

}  // namespace strata::recorder

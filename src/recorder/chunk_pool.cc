// The recorder's memory: one region laid out as shm_layout.h says (control
// block, stream slots, process-event log, chunks), the chunk pool carved from
// it, and the small protocols on the shared parts (slots, the log, commits).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/error.h"
#include "format/schema.h"
#include "recorder/record_encoding.h"
#include "recorder/runtime_state.h"

namespace strata::recorder {

namespace {

// Chunks are populated in slabs: a chunk's control block and records take
// exactly chunk_bytes (rounded to a cache line), so that eight 256 KiB chunks
// fill one 2 MiB transparent huge page. Faulting 4 KiB pages one by one costs
// ~3 us each on a VM (~180 us per 256 KiB chunk, the dominant cost of a
// thread's burst into fresh buffers); a populated huge page costs ~7x less.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPage = 4096;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif
// Streams a process can account for one by one: threads beyond it share the
// unattributed slot (their drops are counted, their buffers not salvaged).
constexpr uint32_t kMaxSlots = 16384;
// The process-event log: names and process events between two flushes. A
// burst beyond it (thousands of names at once) waits in memory instead.
constexpr uint64_t kLogCapacity = 128 * 1024;

size_t RoundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

// Makes [off, off + len) of the region resident: the hot path never takes a
// page fault, and a memfd-backed region never meets a SIGBUS for want of memory
// (fallocate reports that as an error instead).
bool Populate(const Region& r, size_t off, size_t len) {
  size_t begin = off & ~(kPage - 1);
  size_t end = RoundUp(off + len, kPage);
  if (r.memfd >= 0 && ::fallocate(r.memfd, 0, static_cast<off_t>(begin), static_cast<off_t>(end - begin)) != 0)
    return false;
  // A whole, aligned huge page: ask for one (a hint; shared memory gets one
  // only where the kernel allows huge pages for shmem).
  uintptr_t a = reinterpret_cast<uintptr_t>(r.base + begin);
  if (a % kHugePage == 0 && (end - begin) % kHugePage == 0) ::madvise(r.base + begin, end - begin, MADV_HUGEPAGE);
  // One call instead of a fault per page; older kernels touch them instead.
  if (::madvise(r.base + begin, end - begin, MADV_POPULATE_WRITE) != 0) {
    if (r.memfd >= 0 && errno != EINVAL) return false;
    for (size_t p = begin; p < end; p += kPage) {
      volatile uint8_t* v = r.base + p;  // touch each page (a read-modify-write keeps its contents)
      *v = *v;
    }
  }
  return true;
}

}  // namespace

size_t ChunkStride(const Config& cfg) {
  return std::max<size_t>(2 * sizeof(Chunk), (cfg.chunk_bytes + sizeof(Chunk) - 1) & ~(sizeof(Chunk) - 1));
}

Status CreateRegion(Runtime& rt, bool shared) {
  size_t stride = ChunkStride(rt.cfg);
  size_t header_bytes = RoundUp(sizeof(ShmHeader), kPage);
  size_t slots_bytes = RoundUp(kMaxSlots * sizeof(StreamSlot), kPage);
  size_t log_offset = header_bytes + slots_bytes;
  // Chunks start on a huge-page boundary of the region (which is itself mapped
  // at one), so that slabs of whole huge pages line up.
  size_t chunks_offset = RoundUp(log_offset + kLogCapacity, kHugePage);
  size_t total = chunks_offset + rt.cfg.max_chunks * stride;

  Region r;
  if (shared) {
    r.memfd = ::memfd_create("strata-buffers", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (r.memfd < 0) return ErrnoErr(errno, "memfd_create");
    // Its size is sealed: the supervisor maps all of it, and a file that could
    // shrink under that mapping would make it fault (SIGBUS).
    if (::ftruncate(r.memfd, static_cast<off_t>(total)) != 0 ||
        ::fcntl(r.memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      int e = errno;
      ::close(r.memfd);
      return ErrnoErr(e, "sizing the buffer memory");
    }
  }
  // Reserve an aligned range, then map the region over it.
  void* span = ::mmap(nullptr, total + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (span == MAP_FAILED) {
    int e = errno;
    if (r.memfd >= 0) ::close(r.memfd);
    return ErrnoErr(e, "reserving {} bytes of buffer memory", total);
  }
  auto* raw = static_cast<uint8_t*>(span);
  auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + kHugePage - 1) & ~(kHugePage - 1));
  void* m = r.memfd >= 0 ? ::mmap(aligned, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, r.memfd, 0)
                         : ::mmap(aligned, total, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    int e = errno;
    ::munmap(span, total + kHugePage);
    if (r.memfd >= 0) ::close(r.memfd);
    return ErrnoErr(e, "mapping {} bytes of buffer memory", total);
  }
  if (aligned > raw) ::munmap(raw, static_cast<size_t>(aligned - raw));
  size_t tail = static_cast<size_t>((raw + total + kHugePage) - (aligned + total));
  if (tail) ::munmap(aligned + total, tail);
  r.base = aligned;
  r.bytes = total;
  if (!Populate(r, 0, header_bytes) || !Populate(r, log_offset, kLogCapacity)) {
    int e = errno;
    DestroyRegion(r);
    return ErrnoErr(e, "allocating the recorder's control memory");
  }
  ShmHeader* h = new (r.base) ShmHeader();
  h->magic = kShmMagic;
  h->version = kShmVersion;
  h->pid = rt.pid;
  h->ppid = rt.ppid;
  h->instance = rt.instance;
  h->start_ticks = ProcessStartTicks(rt.pid);
  std::memcpy(h->uuid, rt.uuid.data(), 16);
  h->state.store(kShmRunning, std::memory_order_relaxed);
  h->tsc = rt.tsc ? 1 : 0;
  h->total_bytes = total;
  h->slots_offset = header_bytes;
  h->max_slots = kMaxSlots;
  h->log_offset = log_offset;
  h->log_capacity = kLogCapacity;
  h->chunks_offset = chunks_offset;
  h->chunk_stride = stride;
  h->max_chunks = rt.cfg.max_chunks;
  for (auto& e : h->external_slot) e.store(kNoSlot, std::memory_order_relaxed);
  rt.region = r;
  rt.chunk_capacity = static_cast<uint32_t>(stride - sizeof(Chunk));
  rt.free_chunks.clear();
  rt.allocated_chunks = 0;
  rt.available.store(static_cast<int64_t>(rt.cfg.max_chunks), std::memory_order_relaxed);
  // Slot 0: the process stream; slot 1: drops of threads without a slot of their own.
  std::string proc = "proc-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance);
  if (AllocSlot(rt, kSlotProcess, 0, 0, 0, 0, InstanceStreamId(rt.instance, 1, 0), proc) != kProcessSlot ||
      AllocSlot(rt, kSlotUnattributed, 0, 0, 0, 0, 0, "") != kUnattributedSlot) {
    DestroyRegion(rt.region);
    return Status(StatusCode::kIoError, "cannot allocate the recorder's stream slots");
  }
  std::atomic_thread_fence(std::memory_order_release);
  return OkStatus();
}

void DestroyRegion(Region& r) {
  if (r.base) ::munmap(r.base, r.bytes);
  if (r.memfd >= 0) ::close(r.memfd);
  r = Region();
}

// A fresh chunk, and the rest of its slab into the free list (pool_mu held).
// Slabs grow 1, 1, 2, 4, 8 chunks: a process that records little keeps a small
// footprint; a busy one gets huge-page slabs.
static Chunk* AllocChunk(Runtime& rt) {
  size_t stride = rt.region.header()->chunk_stride;
  size_t per_huge = std::max<size_t>(1, kHugePage / stride);
  size_t n = std::min({per_huge, std::max<size_t>(1, rt.allocated_chunks), rt.cfg.max_chunks - rt.allocated_chunks});
  size_t first = rt.allocated_chunks;
  if (!Populate(rt.region, rt.region.header()->chunks_offset + first * stride, n * stride)) return nullptr;
  Chunk* out = nullptr;
  for (size_t i = 0; i < n; ++i) {
    Chunk* c = new (rt.region.chunk(first + i)) Chunk();
    c->capacity = static_cast<uint32_t>(stride - sizeof(Chunk));
    if (i == 0) out = c;
    else rt.free_chunks.push_back(c);
  }
  rt.allocated_chunks += n;
  // The supervisor reads chunks [0, allocated_chunks) after the process is gone.
  rt.region.header()->allocated_chunks.store(rt.allocated_chunks, std::memory_order_release);
  return out;
}

static void UpdateAvailable(Runtime& rt) {
  rt.available.store(static_cast<int64_t>(rt.free_chunks.size() + (rt.cfg.max_chunks - rt.allocated_chunks)),
                     std::memory_order_relaxed);
}

Chunk* TryAcquireChunk(Runtime& rt, bool* grew) {
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
  UpdateAvailable(rt);
  return c;
}

void ReleaseChunks(Runtime& rt, const std::vector<Chunk*>& chunks) {
  if (chunks.empty()) return;
  for (Chunk* c : chunks) c->slot.store(kNoSlot, std::memory_order_release);
  std::lock_guard<std::mutex> lk(rt.pool_mu);
  rt.free_chunks.insert(rt.free_chunks.end(), chunks.begin(), chunks.end());
  UpdateAvailable(rt);
}

bool PoolLow(Runtime& rt) {
  return static_cast<uint64_t>(rt.available.load(std::memory_order_relaxed)) * 4 < rt.cfg.max_chunks;
}

uint32_t AllocSlot(Runtime& rt, uint32_t kind, uint32_t tid, uint32_t device, uint64_t queue, uint32_t external,
                   uint64_t stream_instance_id, const std::string& base_name) {
  ShmHeader* h = rt.region.header();
  uint32_t i = h->used_slots.load(std::memory_order_relaxed);
  if (i >= h->max_slots) return kNoSlot;
  size_t off = h->slots_offset + size_t{i} * sizeof(StreamSlot);
  if (!Populate(rt.region, off, sizeof(StreamSlot))) return kNoSlot;
  // Slots are never reused: this one's memory is still zero.
  StreamSlot* s = rt.region.slot(i);
  s->tid = tid;
  s->device = device;
  s->queue = queue;
  s->external = external;
  s->stream_instance_id = stream_instance_id;
  std::snprintf(s->base_name, sizeof s->base_name, "%s", base_name.c_str());
  s->kind.store(kind, std::memory_order_relaxed);
  h->used_slots.store(i + 1, std::memory_order_release);
  return i;
}

const CommitRecord& CommittedRecord(const StreamSlot* s) { return s->rec[s->committed.load(std::memory_order_acquire)]; }

static void Fill(CommitRecord& r, const CommitValues& v) {
  r.chunk_seq.store(v.chunk_seq, std::memory_order_relaxed);
  r.pos.store(v.pos, std::memory_order_relaxed);
  r.file_bytes.store(v.at.file_bytes, std::memory_order_relaxed);
  r.next_seq.store(v.at.next_seq, std::memory_order_relaxed);
  r.last_ts.store(v.at.last_ts, std::memory_order_relaxed);
  r.discarded.store(v.at.discarded, std::memory_order_relaxed);
  r.events_written.store(v.events_written, std::memory_order_relaxed);
  r.bytes_written.store(v.bytes_written, std::memory_order_relaxed);
  r.write_failed_events.store(v.write_failed_events, std::memory_order_relaxed);
  r.write_failed_bytes.store(v.write_failed_bytes, std::memory_order_relaxed);
  r.write_errno.store(v.write_errno, std::memory_order_relaxed);
}

void BeginCommit(StreamSlot* s, const CommitValues& v) {
  uint32_t spare = 1 - s->committed.load(std::memory_order_relaxed);
  Fill(s->rec[spare], v);
  s->inflight.store(spare + 1, std::memory_order_release);
}

void EndCommit(StreamSlot* s, const CommitValues& v) {
  uint32_t spare = 1 - s->committed.load(std::memory_order_relaxed);
  Fill(s->rec[spare], v);
  s->committed.store(spare, std::memory_order_release);
  s->inflight.store(0, std::memory_order_release);
}

void AppendProcEvent(Runtime& rt, uint32_t id, std::string_view payload) {
  ShmHeader* h = rt.region.header();
  std::lock_guard<std::mutex> lk(rt.log_mu);
  auto size = static_cast<uint32_t>(payload.size());
  uint64_t need = LogEntryBytes(size);
  uint64_t end = h->log_end.load(std::memory_order_relaxed);
  uint64_t written = CommittedRecord(rt.region.slot(kProcessSlot)).pos.load(std::memory_order_relaxed);
  if (rt.log_spilled || end - written + need > h->log_capacity) {
    // Keep the order: once an event waits in memory, later ones do too until
    // the flusher has written them.
    rt.log_spilled = true;
    rt.log_overflow.push_back({id, std::string(payload)});
    h->log_overflow.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  uint8_t* log = rt.region.log();
  uint64_t cap = h->log_capacity;
  LogEntry e{id, size};
  // Entries are 8-byte multiples in a ring of 8-byte multiples: a header never wraps.
  std::memcpy(log + end % cap, &e, sizeof e);
  uint64_t at = (end + sizeof e) % cap;
  size_t first = std::min<size_t>(size, cap - at);
  std::memcpy(log + at, payload.data(), first);
  std::memcpy(log, payload.data() + first, size - first);
  h->log_end.store(end + need, std::memory_order_release);
}

void PublishCalibration(Runtime& rt) {
  ShmHeader* h = rt.region.header();
  uint32_t spare = 1 - h->calib_index.load(std::memory_order_relaxed);
  ShmHeader::Calib& c = h->calib[spare];
  c.prev_tsc.store(rt.calib_prev.tsc, std::memory_order_relaxed);
  c.prev_ns.store(rt.calib_prev.ns, std::memory_order_relaxed);
  c.last_tsc.store(rt.calib_last.tsc, std::memory_order_relaxed);
  c.last_ns.store(rt.calib_last.ns, std::memory_order_relaxed);
  h->calib_index.store(spare, std::memory_order_release);
}

uint64_t SlotsDropped(const Runtime& rt) {
  if (!rt.region.base) return 0;
  uint64_t n = 0;
  uint32_t used = rt.region.header()->used_slots.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) n += rt.region.slot(i)->dropped.load(std::memory_order_relaxed);
  return n;
}

}  // namespace strata::recorder

// The flush cycle: drains the threads' chunks into CTF stream writers, writes
// the packets, and publishes after each packet how far its stream is committed
// (shm_layout.h), so that a process killed at any point leaves the supervisor
// exactly what is not yet in the files.
//
// One cycle:
//   1. encode: every thread's records go into its writer's memory (external
//      stream records into their streams' reorder buffers); chunks drained to
//      the end are held, not yet recycled;
//   2. names and process events (the process stream), before the events that use them;
//   3. each stream's packet, between a BeginCommit and an EndCommit; then its
//      held chunks go back to the pool;
//   4. streams of threads that had exited before step 1 are deleted.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/files.h"
#include "format/schema.h"
#include "recorder/record_encoding.h"
#include "recorder/runtime_state.h"

namespace strata::recorder {

namespace {

// A writer holds at most this much encoded data before the cycle writes it:
// the rest of the stream's chunks wait for the next cycle, which runs at once.
constexpr size_t kMaxPendingBytes = 4u << 20;

uint64_t ToNs(Runtime& rt, uint64_t raw) { return rt.tsc ? rt.calib.ToNs(raw) : raw; }

std::string ReadProcText(const std::string& path) {
  auto r = ReadFile(path);
  if (!r.ok()) return "";
  std::string s = std::move(r).value();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

// Says once per process that the trace is losing events for want of room (or
// another write error); the counts go to the manifest.
void ReportWriteError(Runtime& rt, const Status& st) {
  if (rt.write_error_reported) return;
  rt.write_error_reported = true;
  std::fprintf(stderr, "strata: pid %u: %s; events that cannot be written are counted as lost\n", rt.pid,
               st.message().c_str());
}

CommitValues ValuesOf(const StreamWriter& w, const StreamWriter::ResumePoint& at, uint64_t extra_events,
                      uint64_t extra_bytes) {
  CommitValues v;
  v.at = at;
  v.events_written = w.events_written() + extra_events;
  v.bytes_written = w.bytes_written() + extra_bytes;
  v.write_failed_events = w.write_failed_events();
  v.write_failed_bytes = w.write_failed_bytes();
  v.write_errno = static_cast<uint64_t>(w.last_error());
  return v;
}

// Writes the writer's packet between the two halves of the commit protocol;
// false when it could not (the loss is counted in the writer and reported).
// `pos_if_failed`: where the source stands when the packet could not be
// written and its contents will be appended again (the process stream).
bool FlushCommitted(Runtime& rt, StreamWriter& w, StreamSlot* slot, uint64_t chunk_seq, uint64_t pos, bool force,
                      const uint64_t* pos_if_failed = nullptr) {
  StreamWriter::ResumePoint after = w.AfterFlush(force);
  StreamWriter::ResumePoint now = w.Current();
  CommitValues v = ValuesOf(w, after, after.file_bytes > now.file_bytes ? w.events_in_packet() : 0,
                            after.file_bytes - now.file_bytes);
  v.chunk_seq = chunk_seq;
  v.pos = pos;
  if (slot) BeginCommit(slot, v);
  Status st = w.Flush(0, force);
  v = ValuesOf(w, w.Current(), 0, 0);
  v.chunk_seq = chunk_seq;
  v.pos = !st.ok() && pos_if_failed ? *pos_if_failed : pos;
  if (slot) EndCommit(slot, v);
  if (!st.ok()) ReportWriteError(rt, st);
  return st.ok();
}

void OpenWriter(Runtime& rt, StreamWriter& w, StreamSlot* slot, const std::string& base) {
  if (w.is_open()) return;
  Status st = w.OpenUnique(StreamPath(rt, base));
  if (!st.ok()) {
    ReportWriteError(rt, st);
    return;
  }
  if (slot) {
    std::string leaf = w.path().substr(w.path().rfind('/') + 1);
    std::snprintf(slot->file_name, sizeof slot->file_name, "%s", leaf.c_str());
  }
}

void EnsureProcWriter(Runtime& rt) {
  StreamSlot* slot = rt.region.slot(kProcessSlot);
  if (!rt.proc_writer) {
    const format::StreamSpec* spec = format::FindStream(format::kProcessStream);
    rt.proc_writer = std::make_unique<StreamWriter>(rt.uuid, *spec, slot->stream_instance_id,
                                                    std::vector<uint64_t>{rt.pid, rt.instance});
    // Names must reach the trace: a packet that cannot be written is written again next cycle.
    rt.proc_writer->set_retry_failed(true);
  }
  OpenWriter(rt, *rt.proc_writer, slot, slot->base_name);
}

ExternalStream* ExternalAt(Runtime& rt, std::vector<ExternalStream*>& externals, uint32_t index) {
  if (index >= externals.size()) {
    std::lock_guard<std::mutex> lk(rt.registry_mu);
    externals = rt.externals;
  }
  return index < externals.size() ? externals[index] : nullptr;
}

// Moves a routed record into its external stream's pending list (flusher only).
void RouteRecord(Runtime& rt, std::vector<ExternalStream*>& externals, const Record* r) {
  ExternalStream* e = ExternalAt(rt, externals, r->inline4 >> 8);
  if (!e) {
    // A stream from before a fork: the child never opened it.
    rt.region.slot(kUnattributedSlot)->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(r + 1);
  e->events.push_back({r->ts, r->inline4 & 0xff, static_cast<uint32_t>(e->bytes.size()), r->size});
  e->bytes.insert(e->bytes.end(), p, p + r->size);
}

void OpenThreadWriter(Runtime& rt, ThreadStream* s) {
  if (!s->writer) {
    const format::StreamSpec* spec = format::FindStream(format::kThreadStream);
    s->writer = std::make_unique<StreamWriter>(rt.uuid, *spec, s->stream_instance_id,
                                               std::vector<uint64_t>{rt.pid, s->tid, rt.instance});
  }
  // A file that could not be created is tried again next cycle, not per event.
  if (s->writer->is_open() || s->open_tried == rt.cycle) return;
  s->open_tried = rt.cycle;
  bool own = s->slot_index > kUnattributedSlot;
  std::string base = own ? std::string(s->slot->base_name)
                         : "thread-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance) + "-" + std::to_string(s->tid);
  OpenWriter(rt, *s->writer, own ? s->slot : nullptr, base);
  if (!s->named) {
    s->named = true;
    {
      std::lock_guard<std::mutex> lk(rt.names_mu);
      if (rt.named_by_program.count(s->tid)) return;
    }
    std::string comm = ReadProcText("/proc/self/task/" + std::to_string(s->tid) + "/comm");
    if (!comm.empty()) {
      std::string p;
      PutU32(p, s->tid);
      PutString(p, comm);
      AppendProcEvent(rt, format::kThreadName, p);
    }
  }
}

inline void EnsureThreadWriter(Runtime& rt, ThreadStream* s) {
  if (__builtin_expect(s->writer != nullptr && (s->writer->is_open() || s->open_tried == rt.cycle), 1)) return;
  OpenThreadWriter(rt, s);
}

// The writer (and the stream file) is created at the thread's first own event:
// a thread that only carries external-stream records (a driver's callback
// thread) leaves no empty thread stream behind.
void DrainChunkRange(Runtime& rt, ThreadStream* s, Chunk* c, uint32_t end, std::vector<ExternalStream*>& externals) {
  uint32_t pos = c->read_pos;
  while (pos + sizeof(Record) <= end) {
    const Record* r = reinterpret_cast<const Record*>(c->data() + pos);
    if (r->event_id == kRoutedEvent) {
      RouteRecord(rt, externals, r);
      pos += RoutedBytes(r->size);
      continue;
    }
    EnsureThreadWriter(rt, s);
    AppendNarrowed(*s->writer, r, ToNs(rt, r->ts));
    pos += RecordBytes(r->size);
  }
  c->read_pos = pos;
}

uint64_t Dropped(const ThreadStream* s) {
  return s->slot_index > kUnattributedSlot ? s->slot->dropped.load(std::memory_order_relaxed) : 0;
}

void DrainThreadStream(Runtime& rt, ThreadStream* s, std::vector<ExternalStream*>& externals) {
  // Losses must reach the trace even for a thread that wrote nothing else.
  if (Dropped(s) > 0) EnsureThreadWriter(rt, s);
  for (;;) {
    if (s->writer && s->writer->pending_bytes() > kMaxPendingBytes) {
      rt.more_work.store(true, std::memory_order_relaxed);
      break;
    }
    Chunk* c;
    {
      std::lock_guard<std::mutex> lk(s->mu);
      c = s->head;
    }
    if (!c) break;
    uint32_t end = c->write_pos.load(std::memory_order_acquire);
    DrainChunkRange(rt, s, c, end, externals);
    s->frontier_seq = c->seq.load(std::memory_order_relaxed);
    s->frontier_pos = c->read_pos;
    bool done = false;
    {
      std::lock_guard<std::mutex> lk(s->mu);
      if (c->sealed.load(std::memory_order_acquire)) {
        // Sealed under this lock after the owner's last write_pos store.
        uint32_t final_end = c->write_pos.load(std::memory_order_acquire);
        if (final_end != c->read_pos) DrainChunkRange(rt, s, c, final_end, externals);
        s->head = c->next;
        if (s->tail == c) s->tail = nullptr;
        done = true;
      }
    }
    if (!done) {
      s->frontier_pos = c->read_pos;
      break;
    }
    // Recycled once its events are in the file (CommitThreadStream).
    s->drained.push_back(c);
    s->frontier_seq = c->seq.load(std::memory_order_relaxed) + 1;
    s->frontier_pos = 0;
  }
}

void CommitThreadStream(Runtime& rt, ThreadStream* s, bool final) {
  bool own = s->slot_index > kUnattributedSlot;
  StreamSlot* slot = own ? s->slot : nullptr;
  if (s->writer) {
    s->writer->set_discarded(Dropped(s));
    FlushCommitted(rt, *s->writer, slot, s->frontier_seq, s->frontier_pos, final);
  } else if (slot) {
    // Only routed records: the position moves, the (absent) file does not.
    CommitValues v;
    v.chunk_seq = s->frontier_seq;
    v.pos = s->frontier_pos;
    const CommitRecord& c = CommittedRecord(slot);
    v.at = {c.next_seq.load(), c.last_ts.load(), c.discarded.load(), c.file_bytes.load()};
    BeginCommit(slot, v);
    EndCommit(slot, v);
  }
  for (Chunk* c : s->drained) rt.release.push_back(c);
  s->drained.clear();
}

void EnsureExternalWriter(Runtime& rt, ExternalStream* e) {
  if (e->writer && (e->writer->is_open() || e->open_tried == rt.cycle)) return;
  e->open_tried = rt.cycle;
  if (!e->writer) {
    const format::StreamSpec* spec = format::FindStream(e->stream_class);
    uint64_t id = e->slot ? e->slot->stream_instance_id : InstanceStreamId(rt.instance, 2, e->index);
    if (e->stream_class == format::kThreadStream)
      e->writer = std::make_unique<StreamWriter>(rt.uuid, *spec, id, std::vector<uint64_t>{rt.pid, e->tid, rt.instance});
    else
      e->writer = std::make_unique<StreamWriter>(rt.uuid, *spec, id,
                                                 std::vector<uint64_t>{rt.pid, rt.instance, e->device, e->queue});
  }
  std::string base = e->stream_class == format::kThreadStream
                         ? "thread-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance) + "-" + std::to_string(e->tid) + "-ext"
                         : "device-" + std::to_string(rt.pid) + "-" + InstanceHex(rt.instance) + "-" +
                               std::to_string(e->device) + "-" + std::to_string(e->queue);
  OpenWriter(rt, *e->writer, e->slot, base);
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

// The process stream: the log's entries since the last committed position,
// then what waited in memory, in one packet. A packet that cannot be written
// leaves both where they were, to be written next cycle.
void WriteProcessPacket(Runtime& rt, uint64_t now_ns) {
  EnsureProcWriter(rt);
  ShmHeader* h = rt.region.header();
  StreamSlot* slot = rt.region.slot(kProcessSlot);
  std::vector<Runtime::ProcEvent> overflow;
  uint64_t end;
  {
    std::lock_guard<std::mutex> lk(rt.log_mu);
    overflow.swap(rt.log_overflow);
    rt.log_spilled = false;
    end = h->log_end.load(std::memory_order_acquire);
  }
  uint64_t pos = CommittedRecord(slot).pos.load(std::memory_order_relaxed);
  uint64_t cap = h->log_capacity;
  const uint8_t* log = rt.region.log();
  StreamWriter& pw = *rt.proc_writer;
  std::string payload;
  for (uint64_t at = pos; at < end;) {
    LogEntry e;
    std::memcpy(&e, log + at % cap, sizeof e);
    uint64_t from = (at + sizeof e) % cap;
    size_t first = std::min<size_t>(e.size, cap - from);
    payload.assign(reinterpret_cast<const char*>(log + from), first);
    payload.append(reinterpret_cast<const char*>(log), e.size - first);
    pw.Append(e.event_id, now_ns, payload.data(), payload.size());
    at += LogEntryBytes(e.size);
  }
  for (const auto& ev : overflow) pw.Append(ev.id, now_ns, ev.payload.data(), ev.payload.size());
  if (!FlushCommitted(rt, pw, slot, 0, end, false, &pos)) {
    // Written again next cycle: the log position stayed, the overflow goes back first.
    std::lock_guard<std::mutex> lk(rt.log_mu);
    if (!overflow.empty()) {
      for (auto& ev : rt.log_overflow) overflow.push_back(std::move(ev));
      rt.log_overflow.swap(overflow);
      rt.log_spilled = true;
    }
    return;
  }
  h->log_overflow.fetch_sub(overflow.size(), std::memory_order_relaxed);
}

void AddAnchor(Runtime& rt, ClockAnchor a) {
  rt.calib.AddAnchor(a);
  // Mirror the anchors the calibration kept, for the supervisor: it rebuilds the
  // same conversion from them (TscCalibration ignores anchors too close together).
  if (rt.calib.ToNs(a.tsc) == a.ns && a.tsc != rt.calib_last.tsc) {
    rt.calib_prev = rt.calib_last;
    rt.calib_last = a;
  }
}

}  // namespace

uint64_t InstanceStreamId(uint64_t instance, uint64_t kind, uint64_t n) {
  // Unique per stream within the trace: mix the process instance with the kind and number.
  uint64_t x = instance ^ (kind << 56) ^ (n * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  return x;
}

std::string StreamPath(const Runtime& rt, const std::string& leaf) {
  return JoinPath(JoinPath(rt.cfg.dir, "ctf"), leaf);
}

std::string InstanceHex(uint64_t inst) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(inst & 0xffffffffu));
  return buf;
}

void FlushCycleLocked(Runtime& rt, FlushOptions opt) {
  ++rt.cycle;
  rt.more_work.store(false, std::memory_order_relaxed);
  if (rt.tsc) {
    AddAnchor(rt, TakeClockAnchor());
    if (!rt.calib.has_rate()) {
      // Fewer than ~30 µs since start: wait for an interval long enough to measure the rate.
      do AddAnchor(rt, TakeClockAnchor());
      while (!rt.calib.has_rate());
    }
    PublishCalibration(rt);
  }
  uint64_t now_ns = MonotonicNs();

  std::vector<ExternalStream*> externals;
  {
    std::lock_guard<std::mutex> lk(rt.registry_mu);
    rt.scratch = rt.streams;
    externals = rt.externals;
  }
  for (ThreadStream* s : rt.scratch) s->retired_at_cycle_start = s->retired.load(std::memory_order_acquire);
  // 1. Encode thread events into the writers' memory, moving external-stream
  //    records to their streams on the way.
  for (ThreadStream* s : rt.scratch) DrainThreadStream(rt, s, externals);
  for (ExternalStream* e : externals) DrainExternal(rt, e, now_ns, opt.final);

  // 2. Names first, then the events that use them: a process killed between the
  //    two writes leaves names without events, never events without names.
  WriteProcessPacket(rt, now_ns);

  // 3. Event packets.
  for (ThreadStream* s : rt.scratch) CommitThreadStream(rt, s, opt.final);
  for (ExternalStream* e : externals) {
    if (e->writer) FlushCommitted(rt, *e->writer, e->slot, 0, 0, opt.final);
    // What the reorder buffer holds is lost if the process dies now: the supervisor counts it.
    if (e->slot) e->slot->pending_external.store(e->events.size(), std::memory_order_relaxed);
  }
  // Committed chunks back to the pool, in one go: threads waiting for a chunk
  // take the pool's lock as soon as one is free, and a flusher that queued
  // behind them for each chunk would wait for the CPU behind all of them.
  ReleaseChunks(rt, rt.release);
  rt.release.clear();
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
}

void WakeFlusher(Runtime& rt) {
  // Once per wake-up, however many threads ask: under overload every thread
  // asks, and the flusher must not queue behind them on wake_mu.
  if (rt.wake_requested.exchange(true, std::memory_order_acq_rel)) return;
  std::lock_guard<std::mutex> lk(rt.wake_mu);
  rt.wake = true;
  pthread_cond_signal(&rt.wake_cv);
}

namespace {

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
      if (!rt->stop && !rt->wake && !rt->more_work.load(std::memory_order_relaxed)) {
        timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        uint64_t ns = static_cast<uint64_t>(deadline.tv_nsec) + uint64_t{rt->cfg.flush_ms} * 1000000ull;
        deadline.tv_sec += static_cast<time_t>(ns / 1000000000ull);
        deadline.tv_nsec = static_cast<long>(ns % 1000000000ull);
        pthread_cond_timedwait(&rt->wake_cv, rt->wake_mu.native_handle(), &deadline);
      }
      rt->wake = false;
      rt->wake_requested.store(false, std::memory_order_release);
      if (rt->stop) break;
    }
    std::lock_guard<std::mutex> lk(rt->flush_mu);
    if (rt->finalized.load()) break;
    FlushCycleLocked(*rt, {});
  }
  return nullptr;
}

}  // namespace

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

}  // namespace strata::recorder

// The recorder's life in a process: Start (the trace directory, the buffer
// memory and its hand-over to the supervisor, the flusher), the final flush
// however the process ends, exec, and fork (the child records on its own).
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "base/files.h"
#include "format/schema.h"
#include "recorder/hot.h"
#include "recorder/runtime_state.h"

namespace strata::recorder {

namespace {

void StartCalibration(Runtime& rt) {
  if (!rt.tsc) return;
  ClockAnchor a = TakeClockAnchor();
  rt.calib.Start(a);
  rt.calib_prev = rt.calib_last = a;
}

// Buffer memory the supervisor can take over when there is one (a memfd handed
// over the socket), anonymous memory otherwise.
Status SetUpRegion(Runtime& rt) {
  int sfd = ConnectSupervisor(rt.uuid);
  Status st = CreateRegion(rt, sfd >= 0);
  if (!st.ok() && sfd >= 0) {
    ::close(sfd);
    sfd = -1;
    st = CreateRegion(rt, false);
  }
  if (!st.ok()) return st;
  if (sfd >= 0 && !SendRegion(sfd, rt)) {
    ::close(sfd);
    sfd = -1;
  }
  rt.supervisor_fd = sfd;
  if (rt.tsc) PublishCalibration(rt);
  return OkStatus();
}

void SetState(Runtime& rt, uint32_t state) {
  if (rt.region.base) rt.region.header()->state.store(state, std::memory_order_release);
}

// Without a supervisor to report them, losses are said on stderr at exit.
void ReportLossesIfAlone(Runtime& rt) {
  if (rt.supervisor_fd >= 0 || !rt.region.base) return;
  uint64_t dropped = 0, failed = 0, err = 0;
  uint32_t used = rt.region.header()->used_slots.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    const StreamSlot* s = rt.region.slot(i);
    dropped += s->dropped.load(std::memory_order_relaxed);
    const CommitRecord& c = CommittedRecord(s);
    failed += c.write_failed_events.load(std::memory_order_relaxed);
    if (c.write_errno.load(std::memory_order_relaxed)) err = c.write_errno.load(std::memory_order_relaxed);
  }
  if (dropped == 0 && failed == 0) return;
  std::string why;
  if (dropped) why += std::to_string(dropped) + " dropped (buffers full)";
  if (failed) {
    why += why.empty() ? "" : ", ";
    why += std::to_string(failed) + " not written";
    if (err) why += std::string(" (") + std::strerror(static_cast<int>(err)) + ")";
  }
  std::fprintf(stderr, "strata: pid %u: %llu events lost: %s\n", rt.pid, static_cast<unsigned long long>(dropped + failed),
               why.c_str());
}

// Flushes until the buffers are empty (a cycle stops early to bound its memory).
void FinalFlushLocked(Runtime& rt) {
  for (int i = 0; i < 100000; ++i) {
    FlushCycleLocked(rt, {true});
    if (!rt.more_work.load(std::memory_order_relaxed)) break;
  }
}

// --- fork --------------------------------------------------------------------

void AtForkPrepare() {
  if (!g_rt) return;
  g_rt->flush_mu.lock();
  g_rt->registry_mu.lock();
  g_rt->pool_mu.lock();
  g_rt->intern_mu.lock();
  g_rt->log_mu.lock();
  g_rt->wake_mu.lock();
  g_rt->names_mu.lock();
}

void AtForkParent() {
  if (!g_rt) return;
  g_rt->names_mu.unlock();
  g_rt->wake_mu.unlock();
  g_rt->log_mu.unlock();
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
  new (&rt->log_mu) std::mutex();
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
  rt->log_overflow.clear();
  rt->log_spilled = false;
  rt->proc_writer.reset();
  // The parent's buffers: a memfd-backed region is still the parent's memory
  // (MAP_SHARED), so the child lets go of it before anything could write there.
  DestroyRegion(rt->region);
  if (rt->supervisor_fd >= 0) ::close(rt->supervisor_fd);
  rt->supervisor_fd = -1;
  rt->free_chunks.clear();
  rt->allocated_chunks = 0;
  rt->write_error_reported = false;
  rt->ppid = rt->pid;
  rt->pid = static_cast<uint32_t>(::getpid());
  format::Uuid r = format::NewRandomUuid();
  std::memcpy(&rt->instance, r.data(), 8);
  t_chunk = nullptr;
  t_stream = nullptr;
  pthread_setspecific(rt->exit_key, nullptr);
  StartCalibration(*rt);
  Status st = SetUpRegion(*rt);
  if (!st.ok()) {
    // The child runs unrecorded rather than not at all.
    __atomic_store_n(&strata_active_, kOff, __ATOMIC_RELEASE);
    rt->finalized.store(true);
    std::fprintf(stderr, "strata: not recording forked process %u: %s\n", rt->pid, st.message().c_str());
    return;
  }
  // Interned ids stay valid (call sites cache them), so the child writes the
  // whole table again into its own process stream.
  for (size_t i = 1; i < rt->names.size(); ++i) {
    std::string p;
    PutU32(p, static_cast<uint32_t>(i));
    PutString(p, rt->names[i]);
    AppendProcEvent(*rt, format::kNameDef, p);
  }
  QueueProcessInfo(*rt);
  if (!rt->finalized.load()) StartFlusher(*rt);
}

}  // namespace

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
    id.clock_offset_ns = WallClockNs() - static_cast<int64_t>(MonotonicNs());
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    id.hostname = host;
    int fd = ::open(md_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
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
  StartCalibration(*rt);
  st = SetUpRegion(*rt);
  if (!st.ok()) {
    delete rt;
    return st;
  }
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
    FinalFlushLocked(*rt);
    if (rt->proc_writer) {
      Status st = rt->proc_writer->Close(MonotonicNs());
      (void)st;  // nothing is pending: the cycle wrote the process stream
    }
    SetState(*rt, kShmFinalized);
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
  ReportLossesIfAlone(*rt);
  // The supervisor reads the final counts as soon as the connection closes.
  if (rt->supervisor_fd >= 0) {
    ::close(rt->supervisor_fd);
    rt->supervisor_fd = -1;
  }
}

bool EmergencyFlush() {
  Runtime* rt = g_rt;
  if (!rt) return false;
  // From a fatal-signal handler: the crashing thread may hold a lock (or the
  // flusher may be mid-cycle), so only try for a bounded time. If the lock never
  // comes, the supervisor writes what the buffers hold after the process is gone.
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
        FinalFlushLocked(*rt);
        SetState(*rt, kShmFinalized);
      }
      rt->flush_mu.unlock();
      return true;
    }
    ::usleep(1000);
  }
  return false;
}

void PrepareExec() {
  if (!FlushNow()) return;
  // If the exec succeeds this image is gone, with whatever other threads wrote
  // after the flush: the supervisor writes that when the connection closes.
  SetState(*g_rt, kShmExecing);
}

void ExecFailed() {
  if (g_rt && !g_rt->finalized.load()) SetState(*g_rt, kShmRunning);
}

}  // namespace strata::recorder

// libstrata_mpi.so: MPI's communication as strata events, through the MPI
// profiling interface (PMPI). `strata record` preloads it next to libstrata;
// it defines MPI_Send, MPI_Allreduce, ... and calls the library's PMPI_
// entry points, found at the first call (dlsym): it links no MPI library, so
// a process that does not use MPI never loads one and never calls these.
//
// What it records, in every MPI process strata records:
//  - collectives (MPI_Allreduce, Reduce, Bcast, Barrier, Allgather, Gather,
//    Scatter, Alltoall, Reduce_scatter(_block)): a comm_begin / comm_end pair
//    per call ("mpi:allreduce", a per-process sequence number in call order,
//    which MPI requires every rank of a communicator to keep, and the bytes it
//    contributes), like torch.distributed's works: Trace::collectives;
//  - point-to-point (MPI_Send, Ssend, Isend, Recv, Irecv): a comm row and a
//    span around the call, "mpi.send" / "mpi.isend" / "mpi.recv" / "mpi.irecv",
//    whose argument is
//    the peer's rank in MPI_COMM_WORLD (2^63 when unknown: MPI_ANY_SOURCE, or a
//    communicator that is not MPI_COMM_WORLD), which `strata merge` pairs to
//    bound the clocks of the hosts. A nonblocking call's row ends when its
//    request completes (MPI_Wait, Waitall, Waitany, Waitsome, Test, Testall,
//    Testany, Testsome): an irecv's row ends when its data is there.
// The types are Open MPI's (the ABI it was compiled against, mpi.h from
// libopenmpi-dev). In a process of another MPI (MPICH's integer handles), the
// wrappers only forward: Open MPI's ompi_mpi_comm_world must be present.
#include <dlfcn.h>

// The C API only: mpi.h would otherwise pull in the C++ bindings (libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "format/schema.h"
#include "recorder/hot.h"
#include "strata/strata.h"

namespace {

using strata::recorder::EmitBytes;

// Open MPI's predefined handles are addresses of its globals: looked up, not
// linked (a process without MPI must load this library too).
void* OmpiGlobal(const char* name) { return dlsym(RTLD_DEFAULT, name); }
MPI_Comm World() {
  static void* w = OmpiGlobal("ompi_mpi_comm_world");
  return reinterpret_cast<MPI_Comm>(w);
}

std::atomic<uint64_t> g_seq{0};
std::atomic<int> g_usable{-1};  // -1 unknown, 0 forward only, 1 record

bool Recording() {
  int u = g_usable.load(std::memory_order_relaxed);
  if (u < 0) {
    // Open MPI's handles are what this file was compiled for.
    u = OmpiGlobal("ompi_mpi_comm_world") != nullptr ? 1 : 0;
    g_usable.store(u, std::memory_order_relaxed);
    if (!u)
      strata_report_collector("mpi", "unavailable",
                              "the program's MPI is not Open MPI: its calls run unrecorded (libstrata_mpi is built "
                              "against Open MPI's mpi.h)");
    else
      strata_report_collector("mpi", "ok", "MPI collectives and point-to-point calls (PMPI)");
  }
  return u == 1 && strata::recorder::LoadState() != strata::recorder::kOff;
}

template <class F>
F Next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

uint32_t Name(const char* s) { return strata_intern(s); }


uint64_t Bytes(int count, MPI_Datatype type) {
  static auto type_size = Next<int (*)(MPI_Datatype, int*)>("PMPI_Type_size");
  int size = 0;
  if (count <= 0 || !type_size || type == nullptr || type_size(type, &size) != MPI_SUCCESS) return 0;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

struct Comm {
  uint32_t name = 0;
  uint64_t seq = 0;
  bool on = false;
};

Comm Begin(uint32_t name, uint64_t bytes) {
  Comm c;
  if (!Recording() || !name) return c;
  c.on = true;
  c.name = name;
  c.seq = g_seq.fetch_add(1, std::memory_order_relaxed);
  uint8_t p[24];
  uint32_t tensors = 1;
  std::memcpy(p, &c.name, 4);
  std::memcpy(p + 4, &c.seq, 8);
  std::memcpy(p + 12, &bytes, 8);
  std::memcpy(p + 20, &tensors, 4);
  EmitBytes(strata::recorder::LoadState(), static_cast<uint16_t>(strata::format::kCommBegin), p, sizeof p);
  return c;
}

void End(const Comm& c) {
  if (!c.on) return;
  uint8_t p[12];
  std::memcpy(p, &c.name, 4);
  std::memcpy(p + 4, &c.seq, 8);
  EmitBytes(strata::recorder::LoadState(), static_cast<uint16_t>(strata::format::kCommEnd), p, sizeof p);
}

constexpr uint64_t kAnyPeer = uint64_t{1} << 63;

// The peer as a rank of MPI_COMM_WORLD, where it is one.
uint64_t WorldPeer(int peer, MPI_Comm comm) {
  if (peer < 0 || comm != World()) return kAnyPeer;
  return static_cast<uint64_t>(peer);
}

// A point-to-point call: its span (with the peer) around a comm row.
struct P2p {
  Comm comm;
  bool span = false;
};

P2p P2pBegin(const char* span_name, uint32_t comm_name, uint64_t peer, uint64_t bytes) {
  P2p p;
  if (!Recording()) return p;
  uint32_t id = Name(span_name);
  if (id) {
    strata_span_begin_arg_(id, peer);
    p.span = true;
  }
  p.comm = Begin(comm_name, bytes);
  return p;
}

void P2pEnd(const P2p& p) {
  End(p.comm);
  if (p.span) strata_span_end_();
}

// Nonblocking calls' rows, open until their request completes. Bounded: past
// kMaxPending open requests a call's row ends with the call, and how many did
// is reported with the collector's state at exit.
constexpr size_t kMaxPending = size_t{1} << 20;
std::mutex g_pending_mu;
// (never destroyed: requests may complete during the process's exit)
auto* g_pending = new std::unordered_map<MPI_Request, Comm>();
std::atomic<size_t> g_pending_count{0};
std::atomic<uint64_t> g_untracked{0};

// A nonblocking call returned: its row stays open until `req` completes.
void Pending(const P2p& p, int rc, MPI_Request* req) {
  bool kept = false;
  if (p.comm.on && rc == MPI_SUCCESS && req) {
    std::lock_guard<std::mutex> l(g_pending_mu);
    if (g_pending->size() < kMaxPending) {
      (*g_pending)[*req] = p.comm;
      g_pending_count.store(g_pending->size(), std::memory_order_relaxed);
      kept = true;
    }
  }
  if (!kept) {
    if (p.comm.on && rc == MPI_SUCCESS && req && g_untracked.fetch_add(1, std::memory_order_relaxed) == 0)
      strata_report_collector("mpi", "partial",
                              "MPI collectives and point-to-point calls (PMPI); over a million requests open at once: "
                              "later nonblocking calls' rows end with the call, not at their completion");
    End(p.comm);
  }
  if (p.span) strata_span_end_();
}

// `r` completed (it was a handle before the call that completed it).
void Completed(MPI_Request r) {
  Comm c;
  {
    std::lock_guard<std::mutex> l(g_pending_mu);
    auto it = g_pending->find(r);
    if (it == g_pending->end()) return;
    c = it->second;
    g_pending->erase(it);
    g_pending_count.store(g_pending->size(), std::memory_order_relaxed);
  }
  End(c);
}

// `r` will not be seen to complete (MPI_Request_free): its row stays open.
void Forget(MPI_Request r) {
  std::lock_guard<std::mutex> l(g_pending_mu);
  g_pending->erase(r);
  g_pending_count.store(g_pending->size(), std::memory_order_relaxed);
}

bool AnyPending() { return g_pending_count.load(std::memory_order_relaxed) > 0; }

// The handles of an array of requests before a call completes some of them
// (the call overwrites them with MPI_REQUEST_NULL).
std::vector<MPI_Request> Handles(int n, const MPI_Request* reqs) {
  if (n <= 0 || !reqs || !AnyPending()) return {};
  return std::vector<MPI_Request>(reqs, reqs + n);
}

// Of the handles `h` a call had, the one it completed (at `index`), or those it
// did (`count` of them at `indices`): MPI_Waitany/Testany, Waitsome/Testsome.
void CompletedAt(const std::vector<MPI_Request>& h, const int* index) {
  if (index && *index >= 0 && static_cast<size_t>(*index) < h.size()) Completed(h[static_cast<size_t>(*index)]);
}
void CompletedSome(const std::vector<MPI_Request>& h, const int* count, const int* indices) {
  if (!count || !indices) return;
  for (int k = 0; k < *count; ++k) CompletedAt(h, indices + k);
}

#define STRATA_NAME(var, text)          \
  static const uint32_t var = [] {      \
    return Name(text);                  \
  }()

}  // namespace

extern "C" {

// --- collectives -----------------------------------------------------------------

int MPI_Allreduce(const void* s, void* r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  static auto next = Next<int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm)>("PMPI_Allreduce");
  STRATA_NAME(name, "mpi:allreduce");
  Comm c = Recording() ? Begin(name, Bytes(count, t)) : Comm{};
  int rc = next(s, r, count, t, op, comm);
  End(c);
  return rc;
}

int MPI_Reduce(const void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm) {
  static auto next = Next<int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, int, MPI_Comm)>("PMPI_Reduce");
  STRATA_NAME(name, "mpi:reduce");
  Comm c = Recording() ? Begin(name, Bytes(count, t)) : Comm{};
  int rc = next(s, r, count, t, op, root, comm);
  End(c);
  return rc;
}

int MPI_Bcast(void* buf, int count, MPI_Datatype t, int root, MPI_Comm comm) {
  static auto next = Next<int (*)(void*, int, MPI_Datatype, int, MPI_Comm)>("PMPI_Bcast");
  STRATA_NAME(name, "mpi:broadcast");
  Comm c = Recording() ? Begin(name, Bytes(count, t)) : Comm{};
  int rc = next(buf, count, t, root, comm);
  End(c);
  return rc;
}

int MPI_Barrier(MPI_Comm comm) {
  static auto next = Next<int (*)(MPI_Comm)>("PMPI_Barrier");
  STRATA_NAME(name, "mpi:barrier");
  Comm c = Recording() ? Begin(name, 0) : Comm{};
  int rc = next(comm);
  End(c);
  return rc;
}

int MPI_Allgather(const void* s, int sc, MPI_Datatype st, void* r, int rc_, MPI_Datatype rt, MPI_Comm comm) {
  static auto next = Next<int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm)>("PMPI_Allgather");
  STRATA_NAME(name, "mpi:allgather");
  Comm c = Recording() ? Begin(name, Bytes(sc, st)) : Comm{};
  int rc = next(s, sc, st, r, rc_, rt, comm);
  End(c);
  return rc;
}

int MPI_Gather(const void* s, int sc, MPI_Datatype st, void* r, int rc_, MPI_Datatype rt, int root, MPI_Comm comm) {
  static auto next =
      Next<int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, int, MPI_Comm)>("PMPI_Gather");
  STRATA_NAME(name, "mpi:gather");
  Comm c = Recording() ? Begin(name, Bytes(sc, st)) : Comm{};
  int rc = next(s, sc, st, r, rc_, rt, root, comm);
  End(c);
  return rc;
}

int MPI_Scatter(const void* s, int sc, MPI_Datatype st, void* r, int rc_, MPI_Datatype rt, int root, MPI_Comm comm) {
  static auto next =
      Next<int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, int, MPI_Comm)>("PMPI_Scatter");
  STRATA_NAME(name, "mpi:scatter");
  Comm c = Recording() ? Begin(name, Bytes(rc_, rt)) : Comm{};
  int rc = next(s, sc, st, r, rc_, rt, root, comm);
  End(c);
  return rc;
}

int MPI_Alltoall(const void* s, int sc, MPI_Datatype st, void* r, int rc_, MPI_Datatype rt, MPI_Comm comm) {
  static auto next = Next<int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm)>("PMPI_Alltoall");
  STRATA_NAME(name, "mpi:alltoall");
  Comm c = Recording() ? Begin(name, Bytes(sc, st)) : Comm{};
  int rc = next(s, sc, st, r, rc_, rt, comm);
  End(c);
  return rc;
}

int MPI_Reduce_scatter_block(const void* s, void* r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  static auto next =
      Next<int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm)>("PMPI_Reduce_scatter_block");
  STRATA_NAME(name, "mpi:reduce_scatter");
  Comm c = Recording() ? Begin(name, Bytes(count, t)) : Comm{};
  int rc = next(s, r, count, t, op, comm);
  End(c);
  return rc;
}

// --- point to point ----------------------------------------------------------------

int MPI_Send(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  static auto next = Next<int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm)>("PMPI_Send");
  STRATA_NAME(name, "mpi:send");
  P2p p = P2pBegin("mpi.send", name, WorldPeer(dest, comm), Recording() ? Bytes(count, t) : 0);
  int rc = next(buf, count, t, dest, tag, comm);
  P2pEnd(p);
  return rc;
}

int MPI_Ssend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  static auto next = Next<int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm)>("PMPI_Ssend");
  STRATA_NAME(name, "mpi:send");
  P2p p = P2pBegin("mpi.send", name, WorldPeer(dest, comm), Recording() ? Bytes(count, t) : 0);
  int rc = next(buf, count, t, dest, tag, comm);
  P2pEnd(p);
  return rc;
}

int MPI_Isend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  static auto next = Next<int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*)>("PMPI_Isend");
  STRATA_NAME(name, "mpi:isend");
  P2p p = P2pBegin("mpi.isend", name, WorldPeer(dest, comm), Recording() ? Bytes(count, t) : 0);
  int rc = next(buf, count, t, dest, tag, comm, req);
  Pending(p, rc, req);
  return rc;
}

int MPI_Recv(void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status* status) {
  static auto next = Next<int (*)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*)>("PMPI_Recv");
  STRATA_NAME(name, "mpi:recv");
  P2p p = P2pBegin("mpi.recv", name, WorldPeer(src, comm), Recording() ? Bytes(count, t) : 0);
  int rc = next(buf, count, t, src, tag, comm, status);
  P2pEnd(p);
  return rc;
}

int MPI_Irecv(void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Request* req) {
  static auto next = Next<int (*)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*)>("PMPI_Irecv");
  STRATA_NAME(name, "mpi:irecv");
  P2p p = P2pBegin("mpi.irecv", name, WorldPeer(src, comm), Recording() ? Bytes(count, t) : 0);
  int rc = next(buf, count, t, src, tag, comm, req);
  Pending(p, rc, req);
  return rc;
}

// --- completion of nonblocking calls ----------------------------------------------

int MPI_Wait(MPI_Request* req, MPI_Status* status) {
  static auto next = Next<int (*)(MPI_Request*, MPI_Status*)>("PMPI_Wait");
  MPI_Request r = req && AnyPending() ? *req : nullptr;
  int rc = next(req, status);
  if (r && rc == MPI_SUCCESS) Completed(r);
  return rc;
}

int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status) {
  static auto next = Next<int (*)(MPI_Request*, int*, MPI_Status*)>("PMPI_Test");
  MPI_Request r = req && AnyPending() ? *req : nullptr;
  int rc = next(req, flag, status);
  if (r && rc == MPI_SUCCESS && flag && *flag) Completed(r);
  return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  static auto next = Next<int (*)(int, MPI_Request*, MPI_Status*)>("PMPI_Waitall");
  std::vector<MPI_Request> h = Handles(n, reqs);
  int rc = next(n, reqs, statuses);
  if (rc == MPI_SUCCESS)
    for (MPI_Request r : h) Completed(r);
  return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int* flag, MPI_Status statuses[]) {
  static auto next = Next<int (*)(int, MPI_Request*, int*, MPI_Status*)>("PMPI_Testall");
  std::vector<MPI_Request> h = Handles(n, reqs);
  int rc = next(n, reqs, flag, statuses);
  if (rc == MPI_SUCCESS && flag && *flag)
    for (MPI_Request r : h) Completed(r);
  return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int* index, MPI_Status* status) {
  static auto next = Next<int (*)(int, MPI_Request*, int*, MPI_Status*)>("PMPI_Waitany");
  std::vector<MPI_Request> h = Handles(n, reqs);
  int rc = next(n, reqs, index, status);
  if (rc == MPI_SUCCESS) CompletedAt(h, index);
  return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int* index, int* flag, MPI_Status* status) {
  static auto next = Next<int (*)(int, MPI_Request*, int*, int*, MPI_Status*)>("PMPI_Testany");
  std::vector<MPI_Request> h = Handles(n, reqs);
  int rc = next(n, reqs, index, flag, status);
  if (rc == MPI_SUCCESS && flag && *flag) CompletedAt(h, index);
  return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  static auto next = Next<int (*)(int, MPI_Request*, int*, int*, MPI_Status*)>("PMPI_Waitsome");
  std::vector<MPI_Request> h = Handles(n, reqs);
  int rc = next(n, reqs, outcount, indices, statuses);
  if (rc == MPI_SUCCESS) CompletedSome(h, outcount, indices);
  return rc;
}

int MPI_Testsome(int n, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  static auto next = Next<int (*)(int, MPI_Request*, int*, int*, MPI_Status*)>("PMPI_Testsome");
  std::vector<MPI_Request> h = Handles(n, reqs);
  int rc = next(n, reqs, outcount, indices, statuses);
  if (rc == MPI_SUCCESS) CompletedSome(h, outcount, indices);
  return rc;
}

int MPI_Request_free(MPI_Request* req) {
  static auto next = Next<int (*)(MPI_Request*)>("PMPI_Request_free");
  if (req && AnyPending()) Forget(*req);
  return next(req);
}

}  // extern "C"

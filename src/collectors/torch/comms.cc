// Collectives and point-to-point ops of torch.distributed, from the works their
// backends create.
//
// Every c10d backend (gloo, NCCL, MPI, UCC) gives each work an asynchronous
// USER_SCOPE RecordFunction titled "<backend>:<op>" ("gloo:all_reduce",
// "nccl:all_reduce", "nccl:send 0->1") with the work's input tensors. gloo
// begins it when one of its worker threads starts running the work and ends it
// there when the work completes (torch 1.13 and 2.x alike); other backends
// begin it at enqueue, on the calling thread, and end it on whichever thread
// completes the work. A callback for USER_SCOPE only, with inputs, sees each of
// them: begin {name, seq, bytes, tensors}, end {name, seq} on the completing
// thread. `seq` counts the process's works in the order they began, which c10d
// keeps the same on every rank of a group (each rank issues its collectives in
// the same order; gloo runs them in that order): the n-th work of rank 0 is the
// n-th of rank 1 (the analysis checks that names and sizes agree). The other
// callbacks leave these scopes to this one: as ordinary scopes, an end on
// another thread would match nothing.
#include <ATen/record_function.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "collectors/torch/observer.h"
#include "format/schema.h"
#include "recorder/hot.h"
#include "recorder/runtime.h"

namespace strata::collectors::torch {
namespace {

struct CommContext : at::ObserverContext {
  uint32_t name = 0;
  uint64_t seq = 0;
};

std::atomic<uint64_t> g_comm_seq{0};
std::atomic<bool> g_rank_noted{false};

// Bytes and tensors of a work's inputs (tensors, or lists of them).
void CountInputs(const at::RecordFunction& fn, uint64_t* bytes, uint32_t* tensors) {
  auto add = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    ++*tensors;
    if (!t.is_nested()) *bytes += static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(t.element_size());
  };
  for (const c10::IValue& v : fn.inputs()) {
    if (v.isTensor()) {
      add(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) add(t);
    }
  }
}

}  // namespace

std::unique_ptr<at::ObserverContext> OnCommStart(const at::RecordFunction& fn) {
  ThreadState& ts = CallbackThread();
  const NameEntry* e = ts.names.Lookup(fn.name());
  if (!(e->flags & kNameCollective)) return nullptr;
  // A program that sets RANK itself before init_process_group (spawned
  // workers) names its rank by now.
  if (!g_rank_noted.exchange(true, std::memory_order_relaxed)) recorder::NoteRank();
  auto ctx = std::make_unique<CommContext>();
  ctx->name = e->id;
  ctx->seq = g_comm_seq.fetch_add(1, std::memory_order_relaxed);
  uint64_t bytes = 0;
  uint32_t tensors = 0;
  try {
    CountInputs(fn, &bytes, &tensors);
  } catch (...) {
  }
  Payload p;
  p.Put<uint32_t>(ctx->name).Put<uint64_t>(ctx->seq).Put<uint64_t>(bytes).Put<uint32_t>(tensors);
  recorder::EmitBytes(g_clock, static_cast<uint16_t>(format::kCommBegin), p.data(), p.size());
  return ctx;
}

void OnCommEnd(const at::RecordFunction&, at::ObserverContext* ctx) {
  auto* c = dynamic_cast<CommContext*>(ctx);
  if (!c) return;
  CallbackThread();  // announces a backend thread seen for the first time
  Payload p;
  p.Put<uint32_t>(c->name).Put<uint64_t>(c->seq);
  recorder::EmitBytes(g_clock, static_cast<uint16_t>(format::kCommEnd), p.data(), p.size());
}

}  // namespace strata::collectors::torch

// libstrata_torch: the PyTorch observer. Loaded into a traced process that uses
// libtorch (by the Python import hook, or by libstrata when a C++ program starts
// with libtorch linked), it writes the framework level into the recorder:
//
//  - ops: three global RecordFunction callbacks, exactly one of the first two
//    enabled at a time (the op tier):
//      ops      every op scope but USER_SCOPE; begin {name, seq} / end
//      detail   same, plus inputs and outputs (shapes, dtypes, cost, tensor ids)
//      scopes   USER_SCOPE only, always on: record_function scopes, which carry
//               the step marks (Optimizer.step#, ProfilerStep#) and DataLoader
//               waits. A fourth, comms (comms.cc), USER_SCOPE with inputs,
//               always on, records torch.distributed's works. A USER_SCOPE-only callback costs ~nothing per op: the
//               dispatcher asks for FUNCTION-scope callbacks and finds none.
//    --ops sampled enables `ops` only in windows: whole steps, chosen so that
//    they cover ~window/period of the run (5% by default), or, in a program
//    with no steps, 10 ms windows every ~200 ms from the control thread.
//    RecordFunction's own sampling still pays most of the per-op cost when a
//    coin flip says no (measured in BENCHMARKS.md); a disabled callback pays
//    none of it. Whole steps give exact per-op shares of the sampled steps.
//  - memory (memory.cc): CPU blocks from a wrapper around the process's CPU allocator
//    (CpuAllocator: no table of sizes, no lock); the rest (CUDA's caching
//    allocator, CPU blocks that bypass the wrapper) from a ProfilerStateBase
//    pushed as the thread's PROFILER_STATE debug info, to which c10's
//    allocators report every alloc/free (what the profiler's profile_memory
//    does). PyTorch's profilers refuse to start on a thread whose slot is
//    taken: the Python side hands the slot over around them
//    (strata_torch_release/reclaim_profiler_slot), so the reported allocations
//    made while torch.profiler runs go to it, not to strata (the wrapper's
//    still come to strata).
//  - steps: found from Optimizer.step# scopes, or ProfilerStep#N scopes, unless
//    the program marks steps itself (strata.step / strata_step_begin).
//  - modules: from the Python side (global nn.Module forward hooks, in C:
//    module_hooks.cc, with a Python fallback) through the C entry points at the
//    end of this file.
//
// The op hot path (OnOpStart/OnOpEnd) does: a TLS load, a name-cache probe, one
// record store at begin and one at end, inlined into the two callbacks (autograd
// nodes and TorchScript functions take an out-of-line path). Nothing here
// throws across a callback.
//
// PyTorch versions. Built and tested against Debian's libtorch 1.13; the same
// source compiles against PyTorch 2.x headers (scripts/check-torch-api.sh,
// checked with the 2.3.1 and 2.15.0 wheels). What changed in 2.x and how it is
// handled:
//  - MemoryReportingInfoBase::reportMemoryUsage/reportOutOfMemory take the
//    totals as size_t (int64_t in 1.x): both signatures, by TORCH_VERSION_MAJOR;
//  - Allocator::allocate is no longer const and copy_data() is pure virtual
//    (2.3): both, by TORCH_VERSION_MAJOR/MINOR;
//  - c10::optional/c10::variant became std:: types: the observer uses no API
//    that returns them (RecordFunction::operator_name(), the name variant);
//  - int-list arguments are SymInt[] in many 2.x schemas: concrete SymInt lists
//    box as int lists (isIntList()), symbolic ones (torch.compile tracing) are
//    described as generic lists, without a cost estimate;
//  - nested tensors throw from sizes(): is_nested() is checked first;
//  - ProfilerStateBase/ProfilerConfig live in profiler/orchestration/observer.h
//    in both; both versions' profilers refuse an occupied PROFILER_STATE slot,
//    handed over by the Python side either way.
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "collectors/torch/observer.h"
#include "collectors/torch/sampler.h"
#include "collectors/torch/settings.h"
#include "format/control.h"
#include "format/schema.h"
#include "recorder/hot.h"
#include "recorder/runtime.h"

#define STRATA_TORCH_API extern "C" __attribute__((visibility("default")))

namespace strata::collectors::torch {

// Events written per op and per allocation go through the recorder's inlined
// hot path (recorder/hot.h): the clock and one record store. The callbacks run
// only while this process records, so the recording state is read once at
// start (it only says which clock): a callback still running after the final
// flush writes into a buffer that is never flushed again, which is harmless.
uint32_t g_clock = recorder::kOnMonotonic;

namespace {

namespace fmt_ = strata::format;

inline void EmitThreadEvent(uint32_t id, const void* payload, uint32_t size) {
  recorder::EmitBytes(g_clock, static_cast<uint16_t>(id), payload, size);
}
inline void EmitName(uint32_t id, uint32_t name) { recorder::EmitSmall(g_clock, static_cast<uint16_t>(id), name, 4); }
inline void EmitOpEnd() { recorder::EmitSmall(g_clock, fmt_::kOpEnd, 0, 0); }

uint64_t MonoMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000u + static_cast<uint64_t>(t.tv_nsec) / 1000000u;
}

// --- process state ---------------------------------------------------------------

struct State {
  std::mutex mu;  // settings, tier switches, window state
  Settings settings;
  uint32_t generation = 0;
  at::CallbackHandle ops = 0, detail = 0, scopes = 0;
  at::CallbackHandle comms = 0;    // always on (comms.cc)
  at::CallbackHandle enabled = 0;  // the one of the three that is enabled (0: none)
  bool scopes_allowed = true;      // strata_torch_set_scopes (benchmarks): tier 0 records no scopes either
  uint32_t tier = UINT32_MAX;  // applied: 0 no ops, 1 ops, 2 ops + detail
  OpSampler sampler;            // kSampled: the op windows
  std::atomic<int64_t> current_step{-1};
  std::atomic<bool> step_windows{false};  // settings.detail_first >= 0, readable without mu
  std::atomic<uint64_t> next_step{0};
  std::atomic<bool> profiler_steps{false};
  std::atomic<bool> modules_on{true};
  std::atomic<int64_t> batch_size{0};
  std::shared_ptr<c10::DebugInfoBase> reporter;  // MakeMemoryReporter()
  pthread_t control{};
  bool control_running = false;
  std::atomic<bool> stop{false};
  std::string host;
};

State* g = nullptr;  // leaked on purpose: callbacks may run during static destruction

// --- threads -------------------------------------------------------------------

pthread_key_t g_thread_key;
// Initial-exec: one %fs-relative load on the hot path. This library is dlopened,
// but only a pointer is needed, which fits the loader's static TLS reserve.
__thread ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;

void PushReporter() {
  if (!g || !g->reporter) return;
  // Never on top of a live profiler: it owns the slot while it runs.
  if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != nullptr) return;
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, g->reporter);
}

void Announce(ThreadState& ts) {
  uint64_t tid = ts.torch_thread;
  EmitThreadEvent(fmt_::kTorchThread, &tid, sizeof tid);
}

ThreadState* InitThread() {
  auto* ts = new ThreadState();
  t_state = ts;
  pthread_setspecific(g_thread_key, ts);
  ts->torch_thread = at::RecordFunction::currentThreadId();
  Announce(*ts);
  try {
    PushReporter();
  } catch (...) {
  }
  return ts;
}

inline ThreadState& Thread() {
  ThreadState* ts = t_state;
  return ts ? *ts : *InitThread();
}

}  // namespace

ThreadState& CallbackThread() { return Thread(); }

namespace {

// --- tiers -----------------------------------------------------------------------

uint32_t DesiredTierLocked() {
  const Settings& s = g->settings;
  int64_t cur = g->current_step.load(std::memory_order_relaxed);
  bool step_window = s.detail_first >= 0 && cur >= s.detail_first && cur <= s.detail_last;
  if (s.detail || (step_window && (s.window_tiers & fmt_::kTierShapes))) return 2;
  if (step_window && (s.window_tiers & fmt_::kTierOps)) return 1;
  switch (s.mode) {
    case fmt_::OpsMode::kAll: return 1;
    case fmt_::OpsMode::kSampled: return g->sampler.open() ? 1 : 0;
    case fmt_::OpsMode::kOff: return 0;
  }
  return 1;
}

void EmitTier(uint32_t tier) {
  Payload p;
  p.Put<uint32_t>(tier).Put<uint32_t>(static_cast<uint32_t>(g->settings.mode));
  EmitThreadEvent(fmt_::kOpsTier, p.data(), p.size());
}

// Exactly one callback is enabled at a time, the tier's: `scopes` (tier 0),
// `ops` (1) or `detail` (2); the last two record record_function scopes too.
// The old one goes first: a range constructed between the two switches is
// recorded by neither, never twice (a range keeps the callbacks it was
// constructed with, so its end goes where its begin went).
void SyncCallbacksLocked() {
  at::CallbackHandle want = g->tier == 1 ? g->ops : g->tier == 2 ? g->detail : g->scopes_allowed ? g->scopes : 0;
  if (want == g->enabled) return;
  try {
    if (g->enabled) at::disableCallback(g->enabled);
    g->enabled = 0;
    if (want) at::reenableCallback(want);
    g->enabled = want;
  } catch (...) {
    recorder::ReportCollectorStatus("pytorch", "error", "switching the op tier failed");
  }
}

// What a tier records, in the live-step ring's vocabulary.
uint32_t TierBits(uint32_t tier) {
  if (tier == 2) return fmt_::kTierOps | fmt_::kTierShapes;
  return tier == 1 ? uint32_t{fmt_::kTierOps} : 0u;
}

void ApplyTierLocked() {
  uint32_t want = DesiredTierLocked();
  recorder::NoteStepTiers(TierBits(want));
  if (want == g->tier) return;
  uint32_t old = g->tier == UINT32_MAX ? 0 : g->tier;
  // The tier event brackets the ops it covers: written before ops are switched
  // on, after they are switched off, so every recorded op lies inside a window.
  if (want > old) EmitTier(want);
  g->tier = want;
  SyncCallbacksLocked();
  if (want <= old) EmitTier(want);
}

void ApplyTier() {
  std::lock_guard<std::mutex> lk(g->mu);
  ApplyTierLocked();
}

// --- steps ---------------------------------------------------------------------
//
// A step found automatically runs from its first "activity" (fetching a batch
// from a DataLoader, or the forward of a root module in training mode) to the
// end of the optimizer's step. Its begin is written tentatively: right after the
// previous step ends, then moved to the first activity (a later auto_step_begin
// replaces an earlier one); a begin that no end follows (an eval loop, the end of
// the program) is dropped by the importer.
// The step the tiers follow (--ops-steps windows, sampled steps) changes where
// the importer will put the boundary: at the optimizer step's end, or, on a
// thread that fetches from a DataLoader, at the first activity after it (the
// importer ends such steps at the fetch heading the next iteration, so work
// after the optimizer step stays in its step).

bool AutoStepsOff() { return recorder::ExplicitStepsUsed() || g->profiler_steps.load(std::memory_order_relaxed); }

// --ops sampled with steps: the sampler (sampler.h) closes the sampled step, or
// the time window steps take over from, and opens the next if its budget allows.
void StepBoundary() {
  if (g->settings.mode != fmt_::OpsMode::kSampled) return;
  std::lock_guard<std::mutex> lk(g->mu);
  if (g->settings.mode != fmt_::OpsMode::kSampled) return;
  g->sampler.StepBoundary(recorder::NowNs());
  ApplyTierLocked();
}

void StepBegins(ThreadState& ts, uint64_t step) {
  if (g->current_step.exchange(static_cast<int64_t>(step), std::memory_order_relaxed) == static_cast<int64_t>(step))
    return;  // the same step again (its begin moved to its first activity)
  StepBoundary();
  ApplyTier();  // the step window's tier, and the step's tiers for the live-step ring
}

void EmitAutoStep(uint32_t event, uint64_t step) {
  EmitThreadEvent(event, &step, sizeof step);
  recorder::MarkStep(step, event == fmt_::kAutoStepBegin);
}

void StepActivity(ThreadState& ts) {
  if (AutoStepsOff() || ts.step_activity) return;
  if (!ts.step_pending) ts.step = g->next_step.fetch_add(1, std::memory_order_relaxed);
  ts.step_pending = true;
  ts.step_activity = true;
  EmitAutoStep(fmt_::kAutoStepBegin, ts.step);
  StepBegins(ts, ts.step);
}

void OptimizerStepEnded(ThreadState& ts) {
  if (AutoStepsOff()) return;
  if (ts.step_pending) {
    EmitAutoStep(fmt_::kAutoStepEnd, ts.step);
    ts.step = g->next_step.fetch_add(1, std::memory_order_relaxed);
  } else {
    ts.step = g->next_step.fetch_add(1, std::memory_order_relaxed);
  }
  // The next step begins here unless an activity comes first.
  ts.step_pending = true;
  ts.step_activity = false;
  EmitAutoStep(fmt_::kAutoStepBegin, ts.step);
  if (!ts.loader_fed) StepBegins(ts, ts.step);  // else at the next fetch (StepActivity)
}

void OnExplicitStep(uint64_t step, bool begin) {
  if (!g) return;
  ThreadState& ts = Thread();
  if (begin) {
    StepBegins(ts, step);
  } else {
    g->current_step.store(-1, std::memory_order_relaxed);
    StepBoundary();  // closes a sampled step
    if (g->step_windows.load(std::memory_order_relaxed)) ApplyTier();
  }
}

// --- callbacks -------------------------------------------------------------------

// An op with its name id and, if it has one, its sequence number (the forward
// op an autograd node will point back to).
inline void EmitOpBegin(uint32_t id, int64_t seq) {
  if (seq < 0) {
    EmitName(fmt_::kOpBegin, id);
    return;
  }
  recorder::EmitFixed<12>(g_clock, fmt_::kOpBeginSeq, [id, seq](uint8_t* p) {
    std::memcpy(p, &id, 4);
    std::memcpy(p + 4, &seq, 8);
  });
}

// Everything but an op on a thread that has seen one before: autograd nodes,
// TorchScript functions, a thread's first op.
__attribute__((noinline)) void OpBeginSlow(const at::RecordFunction& fn) {
  ThreadState& ts = Thread();
  switch (fn.scope()) {
    case at::RecordScope::BACKWARD_FUNCTION: {
      // An autograd node's name is a std::string built per call (Node::name()).
      uint32_t id = ts.names.LookupIdByText(fn.name());
      int64_t seq = fn.seqNr();
      uint64_t fwd_thread = fn.forwardThreadId();
      recorder::EmitFixed<20>(g_clock, fmt_::kBwdBegin, [id, seq, fwd_thread](uint8_t* p) {
        std::memcpy(p, &id, 4);
        std::memcpy(p + 4, &seq, 8);
        std::memcpy(p + 12, &fwd_thread, 8);
      });
      break;
    }
    case at::RecordScope::TORCHSCRIPT_FUNCTION:
      EmitName(fmt_::kScriptBegin, ts.names.LookupId(fn.name()));
      break;
    default:
      EmitOpBegin(ts.names.LookupId(fn.name()), fn.seqNr());
  }
}

// The op hot path: an op on a thread that has seen one before. False for
// anything else (OpBeginSlow, or a record_function range).
inline bool OpBeginFast(const at::RecordFunction& fn) {
  ThreadState* ts = t_state;
  if (__builtin_expect(ts == nullptr || fn.scope() != at::RecordScope::FUNCTION, 0)) return false;
  EmitOpBegin(ts->names.LookupId(fn.name()), fn.seqNr());
  return true;
}

inline void OpBegin(const at::RecordFunction& fn) {
  if (!OpBeginFast(fn)) OpBeginSlow(fn);
}

std::unique_ptr<at::ObserverContext> OnScopeStart(const at::RecordFunction& fn);
void OnScopeEnd(const at::RecordFunction& fn, at::ObserverContext*);

__attribute__((noinline)) std::unique_ptr<at::ObserverContext> OnOpStartSlow(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::USER_SCOPE) return OnScopeStart(fn);
  OpBeginSlow(fn);
  return nullptr;
}

std::unique_ptr<at::ObserverContext> OnOpStart(const at::RecordFunction& fn) {
  if (OpBeginFast(fn)) return nullptr;
  return OnOpStartSlow(fn);
}

void OnOpEnd(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (__builtin_expect(fn.scope() == at::RecordScope::USER_SCOPE, 0)) return OnScopeEnd(fn, ctx);
  EmitOpEnd();
}

std::unique_ptr<at::ObserverContext> OnDetailStart(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::USER_SCOPE) return OnScopeStart(fn);
  OpBegin(fn);
  ThreadState& ts = Thread();
  try {
    EmitOpDetail(ts, fn, *ts.names.Lookup(fn.name()));
  } catch (...) {
  }
  return nullptr;
}

void OnDetailEnd(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (fn.scope() == at::RecordScope::USER_SCOPE) return OnScopeEnd(fn, ctx);
  try {
    EmitOpOutputs(Thread(), fn);
  } catch (...) {
  }
  EmitOpEnd();
}

std::unique_ptr<at::ObserverContext> OnScopeStart(const at::RecordFunction& fn) {
  ThreadState& ts = Thread();
  const NameEntry* e = ts.names.Lookup(fn.name());
  if (e->flags & kNameCollective) return nullptr;  // comms.cc records it
  if (e->flags & kNameProfilerStep) {
    if (!recorder::ExplicitStepsUsed()) {
      g->profiler_steps.store(true, std::memory_order_relaxed);
      EmitAutoStep(fmt_::kAutoStepBegin, e->step);
      StepBegins(ts, e->step);
    }
  } else if (e->flags & kNameDataLoader) {
    ts.loader_fed = true;
    StepActivity(ts);
  }
  EmitName(fmt_::kScopeBegin, e->id);
  return nullptr;
}

void OnScopeEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  ThreadState& ts = Thread();
  const NameEntry* e = ts.names.Lookup(fn.name());
  if (e->flags & kNameCollective) return;
  EmitName(fmt_::kScopeEnd, e->id);
  if ((e->flags & kNameProfilerStep) && !recorder::ExplicitStepsUsed()) EmitAutoStep(fmt_::kAutoStepEnd, e->step);
  else if (e->flags & kNameOptimizerStep) OptimizerStepEnded(ts);
}

// --- control thread ----------------------------------------------------------------
//
// Opens and closes the sampled windows, and picks up changes of the control
// block (a supervisor switching tiers while the program runs).

void* ControlMain(void*) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "strata-torch");
  while (!g->stop.load(std::memory_order_relaxed)) {
    uint64_t sleep_ms = 20;
    {
      std::lock_guard<std::mutex> lk(g->mu);
      if (const fmt_::ControlBlock* cb = recorder::Control()) {
        uint32_t gen = cb->generation.load(std::memory_order_acquire);
        if (gen != g->generation) {
          g->generation = gen;
          g->settings = ReadSettings();
          g->sampler.Configure(g->settings.window_ms, g->settings.period_ms);
          g->step_windows.store(g->settings.detail_first >= 0, std::memory_order_relaxed);
          g_memory_on.store(g->settings.memory, std::memory_order_relaxed);
          g->modules_on.store(g->settings.modules, std::memory_order_relaxed);
          g->batch_size.store(g->settings.batch_size, std::memory_order_relaxed);
          ApplyTierLocked();
        }
      }
      if (g->settings.mode == fmt_::OpsMode::kSampled) {
        bool was_open = g->sampler.open();
        sleep_ms = std::clamp<uint64_t>((g->sampler.Tick(recorder::NowNs()) + 999999) / 1000000, 1, 20);
        if (g->sampler.open() != was_open) ApplyTierLocked();
      } else if (g->sampler.open()) {
        g->sampler.Stop();
        ApplyTierLocked();
      }
    }
    timespec ts{static_cast<time_t>(sleep_ms / 1000), static_cast<long>((sleep_ms % 1000) * 1000000)};
    nanosleep(&ts, nullptr);
  }
  return nullptr;
}

void StartControlThread() {
  g->stop.store(false);
  {
    std::lock_guard<std::mutex> lk(g->mu);
    g->sampler.Configure(g->settings.window_ms, g->settings.period_ms);
    g->sampler.Start(recorder::NowNs(),
                     (MonoMs() * 0x9E3779B97F4A7C15ull) ^ static_cast<uint64_t>(::getpid()) ^ 0x5DEECE66Dull);
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  g->control_running = pthread_create(&g->control, &attr, ControlMain, nullptr) == 0;
  pthread_attr_destroy(&attr);
  if (g->control_running) pthread_detach(g->control);
}

// --- fork --------------------------------------------------------------------------

void AtForkPrepare() {
  if (g) g->mu.lock();
}
void AtForkParent() {
  if (g) g->mu.unlock();
}
void AtForkChild() {
  if (!g) return;
  new (&g->mu) std::mutex();
  // The child's streams are new: say again which framework thread this is.
  if (ThreadState* ts = t_state) Announce(*ts);
  EmitTier(g->tier);
  if (g->control_running) StartControlThread();
}

void DeleteThreadState(void* p) {
  delete static_cast<ThreadState*>(p);
  t_state = nullptr;
}

std::string Describe(const Settings& s, const std::string& host, bool cpu_wrapped) {
  std::string d = "PyTorch " TORCH_VERSION " observer (" + host + "): ops " + fmt_::OpsModeName(s.mode);
  if (s.detail) d += ", shapes";
  if (s.detail_first >= 0) d += ", detail for steps " + std::to_string(s.detail_first) + "-" + std::to_string(s.detail_last);
  d += s.memory ? ", memory" : ", no memory";
  d += cpu_wrapped ? " (CPU blocks from strata's allocator wrapper)" : " (CPU blocks from c10's reporting)";
  if (host == "python") d += s.modules ? ", modules" : ", no modules";
  return d;
}

int Start(const std::string& host) {
  if (!recorder::Active()) return -1;
  g_clock = recorder::LoadState() == recorder::kOnTsc ? recorder::kOnTsc : recorder::kOnMonotonic;
  static std::mutex start_mu;
  std::lock_guard<std::mutex> lk(start_mu);
  if (g) return 0;
  auto* st = new State();
  st->host = host;
  st->settings = ReadSettings();
  if (const fmt_::ControlBlock* cb = recorder::Control()) st->generation = cb->generation.load(std::memory_order_acquire);
  st->modules_on.store(st->settings.modules);
  st->step_windows.store(st->settings.detail_first >= 0);
  st->batch_size.store(st->settings.batch_size);
  pthread_key_create(&g_thread_key, DeleteThreadState);
  g = st;
  bool cpu_wrapped = false;
  try {
    // All three stay registered, so that a tier switch is a cheap
    // enable/disable; one is enabled at a time (SyncCallbacksLocked).
    g->scopes = at::addGlobalCallback(
        at::RecordFunctionCallback(OnScopeStart, OnScopeEnd).scopes({at::RecordScope::USER_SCOPE}));
    g->enabled = g->scopes;
    // The scopes the op tiers record: ops and the autograd engine's scopes
    // (FUNCTION), autograd nodes (BACKWARD_FUNCTION), TorchScript functions, and
    // record_function ranges (USER_SCOPE: steps, DataLoader waits). Not the scopes
    // of mobile builds (KERNEL_FUNCTION_DTYPE, BUILD_FEATURE, LITE_INTERPRETER),
    // the static runtime's, or torchbind method calls (CUSTOM_CLASS): every scope a
    // callback is registered for costs PyTorch 1.13 work at every autograd node,
    // where the engine restores its thread-local state twice and so rebuilds
    // the thread's callback lists (callgrind: ~4,800 instructions each time, and
    // ~170 more per enabled scope; 11% of a tiny training step's instructions
    // with the ten scopes registered before).
    const std::unordered_set<at::RecordScope, std::hash<at::RecordScope>> op_scopes = {
        at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::TORCHSCRIPT_FUNCTION,
        at::RecordScope::USER_SCOPE};
    g->ops = at::addGlobalCallback(at::RecordFunctionCallback(OnOpStart, OnOpEnd).scopes(op_scopes));
    at::disableCallback(g->ops);
    g->detail = at::addGlobalCallback(
        at::RecordFunctionCallback(OnDetailStart, OnDetailEnd).needsInputs(true).needsOutputs(true).scopes(op_scopes));
    at::disableCallback(g->detail);
    // torch.distributed's works, in every tier: USER_SCOPE with inputs (their
    // tensors' sizes); USER_SCOPE ranges are few (steps, loader waits, works).
    g->comms = at::addGlobalCallback(
        at::RecordFunctionCallback(OnCommStart, OnCommEnd).needsInputs(true).scopes({at::RecordScope::USER_SCOPE}));
    g->tier = UINT32_MAX;  // forces the first tier event, whatever the tier
    ApplyTier();
    // Pushed even with memory off: the control block may switch it on later.
    g->reporter = MakeMemoryReporter();
    g_memory_on.store(g->settings.memory);
    Thread();  // announces this thread and pushes the reporter on it
    cpu_wrapped = WrapCpuAllocator();
  } catch (const std::exception& e) {
    recorder::ReportCollectorStatus("pytorch", "error", std::string("cannot register the observer: ") + e.what());
    return -1;
  }
  recorder::SetStepListener(OnExplicitStep);
  pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild);
  if (g->settings.mode == fmt_::OpsMode::kSampled || recorder::Control() != nullptr) StartControlThread();
  recorder::ReportCollectorStatus("pytorch", "ok", Describe(g->settings, host, cpu_wrapped));
  return 0;
}

}  // namespace

ThreadState::ThreadState() : names(&recorder::Intern) {}

uint32_t InternDetail(ThreadState& ts, const std::string& s) {
  auto it = ts.strings.find(std::string_view(s));
  if (it != ts.strings.end()) return it->second;
  uint32_t id = recorder::Intern(s);
  if (id) ts.strings.emplace(s, id);
  return id;
}

}  // namespace strata::collectors::torch

using strata::collectors::torch::g;
namespace ct = strata::collectors::torch;
namespace sf = strata::format;

// --- C entry points (Python's ctypes, libstrata's main() hook) --------------------

// Attaches the observer to this process: "python" (the import hook) or "native".
// 0 on success (or already attached); -1 when not recording or registration failed.
STRATA_TORCH_API int strata_torch_start(const char* host) { return ct::Start(host ? host : "native"); }

// The libtorch version this observer was built against ("1.13.0").
STRATA_TORCH_API const char* strata_torch_version() { return TORCH_VERSION; }

STRATA_TORCH_API uint32_t strata_torch_intern(const char* name) {
  return name ? strata::recorder::Intern(name) : 0;
}

enum : uint32_t { kModuleRoot = 1, kModuleTraining = 2, kModuleRaised = 4 };

// A module's forward begins (from a global forward pre-hook). `batch`: the
// leading dimension of its first tensor input, -1 when none.
STRATA_TORCH_API void strata_torch_module_begin(uint32_t name, uint32_t flags, int64_t batch) {
  if (!g || !g->modules_on.load(std::memory_order_relaxed)) return;
  ct::ThreadState& ts = ct::Thread();
  if (flags & kModuleRoot) {
    if (flags & kModuleTraining) ct::StepActivity(ts);
    else ts.step_activity = false;  // eval: the next activity re-places the pending begin
  }
  strata::recorder::EmitThreadEvent(sf::kModuleBegin, &name, 4);
  // Every root forward's batch, inside its module slice: the importer counts a
  // step's samples from them (every micro-batch of gradient accumulation; one
  // model's forwards where several models run per iteration).
  if (flags & kModuleRoot) {
    int64_t given = g->batch_size.load(std::memory_order_relaxed);
    int64_t samples = given > 0 ? given : batch;
    if (samples > 0) {
      struct {
        uint64_t samples;
        uint32_t flags;
      } __attribute__((packed)) v{static_cast<uint64_t>(samples), flags};
      strata::recorder::EmitThreadEvent(sf::kModuleBatch, &v, sizeof v);
    }
  }
}

// A root forward whose inputs gave no batch size (keyword arguments, which
// PyTorch 2.x's global hooks do not see; strings tokenized inside the
// forward), or whose output has a row per sample where its inputs held the
// samples' parts (graphs as their nodes: flag 16, replacing the begin's
// batch), has it from its output's first tensor, as it returns: a
// module_batch with the flags its begin had, before its module_end.
STRATA_TORCH_API void strata_torch_root_batch(uint32_t flags, int64_t batch) {
  if (!g || !g->modules_on.load(std::memory_order_relaxed) || batch <= 0) return;
  if (g->batch_size.load(std::memory_order_relaxed) > 0) return;  // the begin gave the batch the user set
  struct {
    uint64_t samples;
    uint32_t flags;
  } __attribute__((packed)) v{static_cast<uint64_t>(batch), flags | kModuleRoot};
  strata::recorder::EmitThreadEvent(sf::kModuleBatch, &v, sizeof v);
}

// The root module's forward in progress raised (a batch the loop skips, a
// recompute stopped on purpose): it processed no samples. A module_batch of
// none, flagged, before its module_end: the importer drops the batch the
// forward's module_batch gave.
STRATA_TORCH_API void strata_torch_root_raised() {
  if (!g || !g->modules_on.load(std::memory_order_relaxed)) return;
  struct {
    uint64_t samples;
    uint32_t flags;
  } __attribute__((packed)) v{0, kModuleRoot | kModuleRaised};
  strata::recorder::EmitThreadEvent(sf::kModuleBatch, &v, sizeof v);
}

STRATA_TORCH_API void strata_torch_module_end(uint32_t name) {
  if (!g || !g->modules_on.load(std::memory_order_relaxed)) return;
  strata::recorder::EmitThreadEvent(sf::kModuleEnd, &name, 4);
}

// An optimizer's step() begins (from Python: which optimizer object it is, which
// RecordFunction's "Optimizer.step#Adam.step" does not say). The importer tells
// one training iteration from the next by it when several optimizers step in each.
STRATA_TORCH_API void strata_torch_optimizer_step(uint32_t optimizer) {
  if (!g) return;
  strata::recorder::EmitThreadEvent(sf::kOptimizerStep, &optimizer, sizeof optimizer);
  strata::recorder::NoteStepOptimizer(optimizer);
}

// After an optimizer step, the Python loop that called it takes its next
// iteration (what = 0), or the Python side stopped looking for that while the
// iteration's tail still ran (1; python/strata/_loop_head.py): the importer
// ends the step at the first, or at the next step's first activity.
STRATA_TORCH_API void strata_torch_loop_head(uint32_t what) {
  if (!g) return;
  strata::recorder::EmitThreadEvent(sf::kLoopHead, &what, sizeof what);
}

// A host-reading call from Python (.item(), .tolist(), torch.cuda.synchronize)
// begins and returns: `site` names the caller's "file:line (function)". The
// importer gives the site to the call's outermost op (from module_hooks.cc).
STRATA_TORCH_API void strata_torch_site_begin(uint32_t site) {
  if (!g) return;
  strata::recorder::EmitThreadEvent(sf::kSiteBegin, &site, sizeof site);
}

STRATA_TORCH_API void strata_torch_site_end() {
  if (!g) return;
  uint32_t none = 0;
  strata::recorder::EmitThreadEvent(sf::kSiteEnd, &none, 0);
}

// The program says how many samples the current step processes (strata.step(samples=N)).
STRATA_TORCH_API void strata_torch_step_samples(int64_t samples) {
  if (!g || samples <= 0) return;
  uint64_t v = static_cast<uint64_t>(samples);
  strata::recorder::EmitThreadEvent(sf::kStepBatch, &v, sizeof v);
}

// Switches the tiers at once (benchmarks, tests): ops 0 off, 1 sampled, 2 all.
// The control block's next change overrides it.
STRATA_TORCH_API void strata_torch_set_tiers(int ops, int detail, int memory) {
  if (!g) return;
  std::lock_guard<std::mutex> lk(g->mu);
  g->settings.mode = ops == 0 ? sf::OpsMode::kOff : ops == 1 ? sf::OpsMode::kSampled : sf::OpsMode::kAll;
  g->settings.detail = detail != 0;
  g->settings.memory = memory != 0;
  ct::g_memory_on.store(memory != 0, std::memory_order_relaxed);
  ct::ApplyTierLocked();
}

// Switches recording of record_function scopes (steps) while no op tier is on.
// Benchmarks turn it off, with the other tiers and the module hooks, to measure
// an untraced program in the same process as the traced one.
STRATA_TORCH_API void strata_torch_set_scopes(int on) {
  if (!g) return;
  std::lock_guard<std::mutex> lk(g->mu);
  g->scopes_allowed = on != 0;
  ct::SyncCallbacksLocked();
}

// PyTorch's profilers start only on a thread with no PROFILER_STATE: give ours
// up on the calling thread (1 if it was there and is now gone), and take it back
// once the profiler stopped.
STRATA_TORCH_API int strata_torch_release_profiler_slot() {
  if (!g || !g->reporter) return 0;
  try {
    if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != g->reporter.get()) return 0;
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);  // throws if another kind is innermost
    return 1;
  } catch (...) {
    return 0;
  }
}

STRATA_TORCH_API void strata_torch_reclaim_profiler_slot() {
  if (!g) return;
  try {
    ct::PushReporter();
  } catch (...) {
  }
}

// A whole graph (a TorchScript module's IR), encoded as schema_torch.cc says.
STRATA_TORCH_API void strata_torch_graph(uint32_t name, const char* nodes, const char* edges) {
  if (!g) return;
  std::string p(reinterpret_cast<const char*>(&name), 4);
  // One event holds at most 64 KiB; a larger graph is cut at a node boundary.
  std::string n = nodes ? nodes : "", e = edges ? edges : "";
  constexpr size_t kMax = 60000;
  if (n.size() + e.size() > kMax) {
    if (n.size() > kMax / 2) n.resize(n.rfind('\n', kMax / 2) == std::string::npos ? 0 : n.rfind('\n', kMax / 2));
    if (e.size() > kMax / 2) e.resize(e.rfind(' ', kMax / 2) == std::string::npos ? 0 : e.rfind(' ', kMax / 2));
  }
  p += n;
  p.push_back('\0');
  p += e;
  p.push_back('\0');
  strata::recorder::EmitThreadEvent(sf::kGraph, p.data(), static_cast<uint32_t>(p.size()));
}

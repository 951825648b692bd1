// Event classes of the framework level (PyTorch today; the same classes serve any
// framework with ops, modules, steps and an allocator).
//
// Thread stream, ids 16..30 (compact 4-byte header): the events written per op and
// per allocation, so a trace of a tiny-ops loop stays small:
//   op_begin       {u32 name}                     an op with no autograd sequence number
//   op_begin_seq   {u32 name, i64 seq}            a forward op that records autograd history
//   op_end         {}                             closes the innermost open op
//   bwd_begin      {u32 name, i64 seq, u64 fwd_thread}
//                                                 an autograd node run by backward(); (fwd_thread,
//                                                 seq) names the forward op that created it
//   scope_begin    {u32 name}                     a record_function scope (USER_SCOPE)
//   scope_end      {u32 name}                     closes the innermost scope of that name
//   script_begin   {u32 name}                     a TorchScript function (closed by op_end)
//   module_begin   {u32 name}                     an nn.Module forward, by qualified name
//   module_end     {u32 name}                     closes the innermost module of that name
//   mem_alloc      {u64 addr, u64 bytes, u64 total_allocated, u64 total_reserved,
//                   u8 device_type, u8 device_index}
//                  total_allocated ~0: not known (strata's CPU allocator wrapper:
//                  the level is the sum of the trace's allocations and frees)
//   mem_free       (same fields; bytes is the size of the freed block, or 0: the
//                  size of the block allocated at addr, found by the importer)
//
// Thread stream, ids 64..95 (extended header): detail and rare events.
//   torch_thread   {u64 thread}                   the framework's logical id of this thread
//                                                 (RecordFunction::currentThreadId), once
//   op_detail      {u32 shapes, u32 dtypes, i64 flops, i64 bytes, string inputs}
//                                                 right after an op's begin (detail tier): interned
//                                                 shape and dtype strings, estimated cost (-1
//                                                 unknown), and the input tensors' ids (hex, space
//                                                 separated)
//   op_outputs     {string outputs}               right before an op's end: output tensor ids
//   ops_tier       {u32 tier, u32 mode}           the op tier now in effect in this process
//                                                 (0 off, 1 ops, 2 ops+detail) and the configured
//                                                 mode (0 off, 1 sampled, 2 all)
//   step_batch     {u64 samples}                  samples the program says the step in progress
//                                                 processes (strata.step(samples=N)); before
//                                                 module_batch: the first root forward's batch
//   graph          {u32 name, string nodes, string edges}
//                                                 a whole graph (TorchScript IR): node kinds joined
//                                                 by '\n'; edges "from>to" joined by ' '
//   mem_oom        {u64 bytes, u64 total_allocated, u64 total_reserved, u8 device_type, u8 device_index}
//   auto_step_begin {u64 step}                    a step found automatically may start here; a
//                                                 later auto_step_begin replaces it
//   auto_step_end  {u64 step}                     ...and ends here (optimizer.step, ProfilerStep#)
//   module_batch   {u64 samples, u32 flags}       right after a root module's module_begin: the
//                                                 leading dimension of its first tensor input,
//                                                 keyword ones too (or --batch-size); or, where the
//                                                 inputs gave none, of its output's first tensor,
//                                                 before its module_end; flags 2 = training mode;
//                                                 flags 4: that forward raised (samples 0, before
//                                                 its module_end): its batch is not counted;
//                                                 flags 8: a training forward of the module again
//                                                 with no backward pass since its last one, or on
//                                                 the very same input tensor (the same samples:
//                                                 counted once); flags 16 (before its module_end):
//                                                 its 2-D output has fewer rows than its first
//                                                 input (graphs given as their nodes): this
//                                                 batch replaces the begin's
//   optimizer_step {u32 optimizer}               an optimizer's step() begins: which optimizer
//                                                 (numbered in the order they first step)
//   loop_head      {u32 what}                     after an optimizer step, bit 0 clear: the loop that
//                                                 called it takes its next iteration (its
//                                                 `for`/`while` line, seen from Python, in bits
//                                                 1-31; 0: not said): where the step ends; 1: the
//                                                 Python side stopped looking, the iteration still
//                                                 running here
//   comm_begin     {u32 name, u64 seq, u64 bytes, u32 tensors}
//                                                 a collective or point-to-point op's work begins
//                                                 ("gloo:all_reduce", "nccl:all_reduce"; gloo: on
//                                                 the worker thread that runs it; others: at
//                                                 enqueue): seq numbers the process's works in
//                                                 order (the same on every rank of a group),
//                                                 bytes and tensors are its inputs'
//   comm_end       {u32 name, u64 seq}            ...and completes, on the thread that completed it
#include "format/schema.h"

namespace strata::format {
namespace {

using F = FieldSpec;
using T = FieldType;

constexpr F kName[] = {{"name", T::kU32}};
constexpr F kNameSeq[] = {{"name", T::kU32}, {"seq", T::kI64}};
constexpr F kBwd[] = {{"name", T::kU32}, {"seq", T::kI64}, {"fwd_thread", T::kU64}};
constexpr F kMem[] = {{"addr", T::kU64},           {"bytes", T::kU64},      {"total_allocated", T::kU64},
                      {"total_reserved", T::kU64}, {"device_type", T::kU8}, {"device_index", T::kU8}};

constexpr F kThread[] = {{"thread", T::kU64}};
constexpr F kDetail[] = {
    {"shapes", T::kU32}, {"dtypes", T::kU32}, {"flops", T::kI64}, {"bytes", T::kI64}, {"inputs", T::kString}};
constexpr F kOutputs[] = {{"outputs", T::kString}};
constexpr F kTier[] = {{"tier", T::kU32}, {"mode", T::kU32}};
constexpr F kSamples[] = {{"samples", T::kU64}};
constexpr F kGraphFields[] = {{"name", T::kU32}, {"nodes", T::kString}, {"edges", T::kString}};
constexpr F kOom[] = {{"bytes", T::kU64},
                      {"total_allocated", T::kU64},
                      {"total_reserved", T::kU64},
                      {"device_type", T::kU8},
                      {"device_index", T::kU8}};
constexpr F kStep[] = {{"step", T::kU64}};
constexpr F kModuleBatchFields[] = {{"samples", T::kU64}, {"flags", T::kU32}};
constexpr F kOptimizer[] = {{"optimizer", T::kU32}};
constexpr F kSite[] = {{"site", T::kU32}};
constexpr F kLoopHeadFields[] = {{"what", T::kU32}};
constexpr F kCommBeginFields[] = {{"name", T::kU32}, {"seq", T::kU64}, {"bytes", T::kU64}, {"tensors", T::kU32}};
constexpr F kCommEndFields[] = {{"name", T::kU32}, {"seq", T::kU64}};

constexpr EventSpec kThreadEvents[] = {
    {kOpBegin, "op_begin", kName},
    {kOpBeginSeq, "op_begin_seq", kNameSeq},
    {kOpEnd, "op_end", {}},
    {kBwdBegin, "bwd_begin", kBwd},
    {kScopeBegin, "scope_begin", kName},
    {kScopeEnd, "scope_end", kName},
    {kScriptBegin, "script_begin", kName},
    {kModuleBegin, "module_begin", kName},
    {kModuleEnd, "module_end", kName},
    {kMemAlloc, "mem_alloc", kMem},
    {kMemFree, "mem_free", kMem},
    {kTorchThread, "torch_thread", kThread},
    {kOpDetail, "op_detail", kDetail},
    {kOpOutputs, "op_outputs", kOutputs},
    {kOpsTier, "ops_tier", kTier},
    {kStepBatch, "step_batch", kSamples},
    {kGraph, "graph", kGraphFields},
    {kMemOom, "mem_oom", kOom},
    {kAutoStepBegin, "auto_step_begin", kStep},
    {kAutoStepEnd, "auto_step_end", kStep},
    {kModuleBatch, "module_batch", kModuleBatchFields},
    {kOptimizerStep, "optimizer_step", kOptimizer},
    {kSiteBegin, "site_begin", kSite},
    {kSiteEnd, "site_end", {}},
    {kCommBegin, "comm_begin", kCommBeginFields},
    {kCommEnd, "comm_end", kCommEndFields},
    {kLoopHead, "loop_head", kLoopHeadFields},
};

constexpr EventSet kSets[] = {{kThreadStream, kThreadEvents}};

}  // namespace

std::span<const EventSet> TorchEventSets() { return kSets; }

}  // namespace strata::format

// NCCL's profiler-plugin ABI, versions 4 and 5, as strata's own declarations.
//
// NCCL dlopen()s the library named by NCCL_PROFILER_PLUGIN and looks up
// `ncclProfiler_v5` (NCCL 2.28+), then `ncclProfiler_v4` (2.27+), `_v3`, ... : a struct of a name
// and five function pointers. It calls init once per communicator, then
// startEvent / stopEvent / recordEventState from whichever thread produced the
// event (the enqueuing thread, a CUDA host-callback thread, the proxy thread),
// and finalize when the communicator is destroyed. NCCL 2.28 builds every
// descriptor in its v5 form and, for a v4 plugin, copies it field by field into
// the v4 form (the type narrowed to a byte, the coll/p2p parentGroup moved into
// parentObj).
//
// The layouts below were derived from NCCL v2.28.9-1's
// src/include/plugin/profiler/profiler_v{4,5}.h and nccl_profiler.h (NVIDIA/nccl
// tag v2.28.9-1; v4 is unchanged since v2.27.7-1) and checked field by field against them with offsetof; the
// static_asserts pin them for x86-64 (LP64). Only what strata reads is named
// with care; the rest is there to keep the offsets.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace strata::collectors::nccl {

// ncclResult_t: what every entry point returns. NCCL disables the plugin when
// init fails and ignores the result of the others.
enum Result : int { kSuccess = 0, kInternalError = 3, kInvalidArgument = 4 };

// ncclDebugLogger_t: NCCL's logger, handed to init.
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event type bits: the descriptor's `type`, and the activation mask init
// returns (NCCL's ncclProfilerEventMask, one per process: the last init wins).
enum EventType : uint64_t {
  kGroup = 1u << 0,         // a kernel plan's group of tasks (v4)
  kColl = 1u << 1,          // a collective task, started when its plan is launched
  kP2p = 1u << 2,           // a send or a receive task
  kProxyOp = 1u << 3,       // the proxy thread's work on one channel (network)
  kProxyStep = 1u << 4,     // one network transfer of a ProxyOp
  kProxyCtrl = 1u << 5,     // the proxy thread's own activity
  kKernelCh = 1u << 6,      // one channel of the task's kernel, seen by the proxy thread
  kNetPlugin = 1u << 7,     // events the network plugin defines
  kGroupApi = 1u << 8,      // v5: ncclGroupStart .. ncclGroupEnd
  kCollApi = 1u << 9,       // v5: the ncclAllReduce (...) call
  kP2pApi = 1u << 10,       // v5: the ncclSend / ncclRecv call
  kKernelLaunch = 1u << 11  // v5: the kernel's launch
};

// ncclProfilerEventState_t (an int-sized enum): recordEventState's transitions.
// For a KernelCh event, kKernelChStop comes with the GPU's stop timer just
// before stopEvent.
enum EventState : int { kKernelChStop = 22, kGroupStartApiStop = 23, kGroupEndApiStart = 24 };

// --- v5 (NCCL 2.28+) -----------------------------------------------------------

struct EventDescrV5 {
  uint64_t type;    // one EventType bit
  void* parentObj;  // the parent event's handle (for Coll/P2p: the CollApi/P2pApi event's)
  int rank;         // the rank in the communicator
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;    // the communicator's count of collectives of this func before it
      const char* func;      // "AllReduce", "AllGather", "ReduceScatter", "AlltoAll", ...
      const void* sendBuff;
      void* recvBuff;
      size_t count;          // elements, as passed to the call
      int root;
      const char* datatype;  // "ncclFloat32", ... ("Unknown" for ncclUint8 in 2.28)
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;     // the v4 Group event's handle
    } coll;
    struct {
      const char* func;  // "Send" or "Recv"
      void* buff;
      const char* datatype;
      size_t count;
      int peer;  // the other rank, in the communicator
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;  // the process that made the op (PXN: possibly another one)
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;  // the GPU's globaltimer when the channel began the task
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

union EventStateArgsV5 {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // the GPU's globaltimer when the channel finished the task
  } kernelCh;
};

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes, int nranks,
                 int rank, DebugLogger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV5* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, EventStateArgsV5* eStateArgs);
  Result (*finalize)(void* context);
};

// --- v4 (NCCL 2.27) ------------------------------------------------------

struct EventDescrV4 {
  uint8_t type;  // one EventType bit (< 256: v4 knows no API events)
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

using EventStateArgsV4 = EventStateArgsV5;  // the same union in both versions

struct ProfilerV4 {
  const char* name;
  // v4's init takes the communicator's hash after its name (v5 moved it first).
  Result (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes, int nranks,
                 int rank, DebugLogger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV4* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, EventStateArgsV4* eStateArgs);
  Result (*finalize)(void* context);
};

// --- the layouts, x86-64 ---------------------------------------------------------

#if defined(__x86_64__)
static_assert(sizeof(EventState) == 4 && sizeof(Result) == 4);
static_assert(offsetof(EventDescrV5, parentObj) == 8 && offsetof(EventDescrV5, rank) == 16);
static_assert(offsetof(EventDescrV5, groupApi.groupDepth) == 28);
static_assert(offsetof(EventDescrV5, collApi.root) == 48 && offsetof(EventDescrV5, collApi.graphCaptured) == 64);
static_assert(offsetof(EventDescrV5, p2pApi.stream) == 48 && offsetof(EventDescrV5, p2pApi.graphCaptured) == 56);
static_assert(offsetof(EventDescrV5, coll.seqNumber) == 24 && offsetof(EventDescrV5, coll.func) == 32);
static_assert(offsetof(EventDescrV5, coll.count) == 56 && offsetof(EventDescrV5, coll.root) == 64);
static_assert(offsetof(EventDescrV5, coll.datatype) == 72 && offsetof(EventDescrV5, coll.nChannels) == 80);
static_assert(offsetof(EventDescrV5, coll.nWarps) == 81 && offsetof(EventDescrV5, coll.algo) == 88);
static_assert(offsetof(EventDescrV5, coll.proto) == 96 && offsetof(EventDescrV5, coll.parentGroup) == 104);
static_assert(offsetof(EventDescrV5, p2p.func) == 24 && offsetof(EventDescrV5, p2p.datatype) == 40);
static_assert(offsetof(EventDescrV5, p2p.count) == 48 && offsetof(EventDescrV5, p2p.peer) == 56);
static_assert(offsetof(EventDescrV5, p2p.nChannels) == 60 && offsetof(EventDescrV5, p2p.parentGroup) == 64);
static_assert(offsetof(EventDescrV5, proxyOp.channelId) == 28 && offsetof(EventDescrV5, proxyOp.isSend) == 44);
static_assert(offsetof(EventDescrV5, kernelCh.channelId) == 24 && offsetof(EventDescrV5, kernelCh.pTimer) == 32);
static_assert(offsetof(EventDescrV5, netPlugin.data) == 32);
static_assert(sizeof(EventDescrV5) == 112);

static_assert(offsetof(EventDescrV4, parentObj) == 8 && offsetof(EventDescrV4, rank) == 16);
static_assert(offsetof(EventDescrV4, coll.seqNumber) == 24 && offsetof(EventDescrV4, coll.count) == 56);
static_assert(offsetof(EventDescrV4, coll.datatype) == 72 && offsetof(EventDescrV4, coll.nChannels) == 80);
static_assert(offsetof(EventDescrV4, coll.proto) == 96);
static_assert(offsetof(EventDescrV4, p2p.count) == 48 && offsetof(EventDescrV4, p2p.peer) == 56);
static_assert(offsetof(EventDescrV4, p2p.nChannels) == 60);
static_assert(offsetof(EventDescrV4, kernelCh.pTimer) == 32);
static_assert(sizeof(EventDescrV4) == 104);

static_assert(sizeof(EventStateArgsV5) == 8);
static_assert(offsetof(ProfilerV5, init) == 8 && offsetof(ProfilerV5, finalize) == 40 && sizeof(ProfilerV5) == 48);
static_assert(offsetof(ProfilerV4, init) == 8 && offsetof(ProfilerV4, finalize) == 40 && sizeof(ProfilerV4) == 48);
#endif

}  // namespace strata::collectors::nccl

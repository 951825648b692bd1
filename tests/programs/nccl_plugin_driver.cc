// Plays NCCL 2.28 in front of a profiler plugin (tests/nccl_plugin_test.cc):
// dlopen()s it, finds ncclProfiler_v5 and ncclProfiler_v4, and makes the calls
// NCCL makes, with descriptors filled as NCCL fills them (src/plugin/
// profiler.cc of v2.28.9-1), for one rank (2 of 4) of two communicators:
//
//  - "strata-v5" through ncclProfiler_v5 (commId 0x5a5a...):
//      kAllReduces all-reduces of 1 Mi floats (seqNumber 0, 1, ...), each: its
//      group and API events, the Coll event started, 2 ms of enqueue, stopped;
//      then, on a second thread (NCCL's proxy), two kernel channels started,
//      5 ms, KernelChStop, stopped;
//      one all-gather (seqNumber 0) of 1000 int64;
//      kP2pRounds rounds of a send to rank 3 and a receive from rank 1 (4096
//      bf16 each), started together, stopped together in the same order after
//      1 ms, then one kernel channel each;
//  - "strata-v4" through ncclProfiler_v4 (commHash 0x4b4b...): 2 all-reduces
//    and one send, the same way.
//
//   nccl_plugin_driver [PLUGIN]   (default: $NCCL_PROFILER_PLUGIN)
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "collectors/nccl/profiler_abi.h"

namespace n = strata::collectors::nccl;

namespace {

constexpr int kAllReduces = 5;
constexpr int kP2pRounds = 3;
constexpr size_t kAllReduceCount = size_t{1} << 20;

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void Check(n::Result r, const char* what) {
  if (r != n::kSuccess) {
    std::fprintf(stderr, "nccl_plugin_driver: %s returned %d\n", what, static_cast<int>(r));
    std::exit(1);
  }
}

// The version-independent part: how NCCL drives either.
template <class Profiler, class Descr>
struct Driver {
  const Profiler* p;
  void* ctx = nullptr;

  void* Start(Descr& d) {
    void* h = nullptr;
    Check(p->startEvent(ctx, &h, &d), "startEvent");
    return h;
  }
  void Stop(void* h) {
    if (h) Check(p->stopEvent(h), "stopEvent");  // NCCL never stops a null handle
  }

  // The proxy thread: one KernelCh event per channel of a task, 5 ms of kernel.
  void KernelChannels(void* task, int channels) {
    std::thread proxy([&] {
      void* ch[8] = {};
      for (int c = 0; c < channels; ++c) {
        Descr d{};
        d.type = n::kKernelCh;
        d.parentObj = task;
        d.kernelCh.channelId = static_cast<uint8_t>(c);
        d.kernelCh.pTimer = 1000000u + static_cast<uint64_t>(c);
        ch[c] = Start(d);
      }
      SleepMs(5);
      for (int c = 0; c < channels; ++c) {
        if (!ch[c]) continue;
        n::EventStateArgsV5 a{};
        a.kernelCh.pTimer = 6000000u + static_cast<uint64_t>(c);
        Check(p->recordEventState(ch[c], n::kKernelChStop, &a), "recordEventState");
        Stop(ch[c]);
      }
    });
    proxy.join();
  }

  void* Coll(const char* func, uint64_t seq, size_t count, const char* type, void* group) {
    Descr d{};
    d.type = n::kColl;
    d.rank = 2;
    d.coll.seqNumber = seq;
    d.coll.func = func;
    d.coll.count = count;
    d.coll.root = 0;
    d.coll.datatype = type;
    d.coll.nChannels = 2;
    d.coll.nWarps = 16;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.parentObj = group;
    return Start(d);
  }

  void* P2p(const char* func, int peer, void* group) {
    Descr d{};
    d.type = n::kP2p;
    d.rank = 2;
    d.p2p.func = func;
    d.p2p.count = 4096;
    d.p2p.datatype = "ncclBfloat16";
    d.p2p.peer = peer;
    d.p2p.nChannels = 1;
    d.parentObj = group;
    return Start(d);
  }

  // A plan of one collective: the group, the task, its enqueue, its kernel.
  void OneCollective(const char* func, uint64_t seq, size_t count, const char* type) {
    Descr g{};
    g.type = n::kGroup;
    void* group = Start(g);
    void* task = Coll(func, seq, count, type, group);
    SleepMs(2);
    Stop(task);
    Stop(group);
    KernelChannels(task, 2);
    std::printf("  %s seq %llu: %zu x %s\n", func, static_cast<unsigned long long>(seq), count, type);
  }

  void SendRecv(bool with_recv) {
    Descr g{};
    g.type = n::kGroup;
    void* group = Start(g);
    void* send = P2p("Send", 3, group);
    void* recv = with_recv ? P2p("Recv", 1, group) : nullptr;
    SleepMs(1);
    Stop(send);  // NCCL stops a plan's tasks in the order it started them
    Stop(recv);
    Stop(group);
    KernelChannels(send, 1);
    if (recv) KernelChannels(recv, 1);
    std::printf("  send to 3%s: 4096 x ncclBfloat16\n", with_recv ? ", recv from 1" : "");
  }

  void Finalize() { Check(p->finalize(ctx), "finalize"); }
};

void RunV5(const n::ProfilerV5* p) {
  Driver<n::ProfilerV5, n::EventDescrV5> d{p};
  int mask = 0;
  Check(p->init(&d.ctx, 0x5a5a5a5a12345678ull, &mask, "strata-v5", 1, 4, 2, nullptr), "init");
  std::printf("v5 (%s): communicator strata-v5, rank 2 of 4, activation mask 0x%x\n", p->name ? p->name : "?", mask);
  for (int i = 0; i < kAllReduces; ++i) {
    // The API events NCCL 2.28 makes around each call (the plugin needs none).
    n::EventDescrV5 api{};
    api.type = n::kGroupApi;
    api.groupApi.groupDepth = 1;
    void* group_api = d.Start(api);
    n::EventDescrV5 call{};
    call.type = n::kCollApi;
    call.parentObj = group_api;
    call.collApi.func = "AllReduce";
    call.collApi.count = kAllReduceCount;
    call.collApi.datatype = "ncclFloat32";
    void* coll_api = d.Start(call);
    d.Stop(coll_api);
    if (group_api) Check(p->recordEventState(group_api, n::kGroupEndApiStart, nullptr), "recordEventState");
    d.OneCollective("AllReduce", static_cast<uint64_t>(i), kAllReduceCount, "ncclFloat32");
    d.Stop(group_api);
  }
  d.OneCollective("AllGather", 0, 1000, "ncclInt64");
  for (int i = 0; i < kP2pRounds; ++i) d.SendRecv(true);
  d.Finalize();
}

void RunV4(const n::ProfilerV4* p) {
  Driver<n::ProfilerV4, n::EventDescrV4> d{p};
  int mask = 0;
  Check(p->init(&d.ctx, &mask, "strata-v4", 0x4b4b4b4b87654321ull, 1, 4, 2, nullptr), "init");
  std::printf("v4 (%s): communicator strata-v4, rank 2 of 4, activation mask 0x%x\n", p->name ? p->name : "?", mask);
  for (int i = 0; i < 2; ++i) d.OneCollective("AllReduce", static_cast<uint64_t>(i), kAllReduceCount, "ncclFloat32");
  d.SendRecv(false);
  d.Finalize();
}

}  // namespace

int main(int argc, char** argv) {
  const char* lib = argc > 1 ? argv[1] : std::getenv("NCCL_PROFILER_PLUGIN");
  if (!lib || !*lib) {
    std::fprintf(stderr, "usage: nccl_plugin_driver PLUGIN.so (or set NCCL_PROFILER_PLUGIN)\n");
    return 2;
  }
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "nccl_plugin_driver: %s\n", dlerror());
    return 1;
  }
  auto* v5 = static_cast<const n::ProfilerV5*>(dlsym(h, "ncclProfiler_v5"));
  auto* v4 = static_cast<const n::ProfilerV4*>(dlsym(h, "ncclProfiler_v4"));
  if (!v5 || !v4) {
    std::fprintf(stderr, "nccl_plugin_driver: %s lacks ncclProfiler_v5 or ncclProfiler_v4\n", lib);
    return 1;
  }
  RunV5(v5);
  RunV4(v4);
  std::printf("done\n");
  return 0;
}

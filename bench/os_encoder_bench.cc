// The OS collector's writer thread: how many perf records per second OsEncoder
// turns into cpu-stream events (the kernel side is measured by os_overhead.sh).
//
//   build/bin/os_encoder_bench
#include <benchmark/benchmark.h>
#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include "collectors/os/os_encoder.h"
#include "format/ctf_writer.h"
#include "format/schema.h"

namespace {

using namespace strata::collectors::os;
namespace format = strata::format;

template <typename T>
void Put(std::vector<uint8_t>& b, T v) {
  size_t o = b.size();
  b.resize(o + sizeof v);
  std::memcpy(b.data() + o, &v, sizeof v);
}

// N syscall enter/exit pairs and a context switch every 8 calls, as a ring holds them.
std::vector<uint8_t> Records(size_t pairs) {
  std::vector<uint8_t> b;
  uint64_t t = 1000;
  for (size_t i = 0; i < pairs; ++i) {
    for (uint64_t id : {2ull, 3ull}) {
      perf_event_header h{PERF_RECORD_SAMPLE, 0, 8 + 32 + 4 + 28};
      Put(b, h);
      Put(b, id);
      Put(b, uint32_t{100});
      Put(b, uint32_t{101});
      Put(b, t += 500);
      Put(b, uint64_t{0});
      Put(b, uint32_t{28});
      uint8_t raw[28] = {};
      int64_t nr = 39;
      std::memcpy(raw + 8, &nr, 8);
      b.insert(b.end(), raw, raw + 28);
    }
    if (i % 8 == 0) {
      perf_event_header h{PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 8 + 32};
      Put(b, h);
      Put(b, uint32_t{100});
      Put(b, uint32_t{101});
      Put(b, t += 100);
      Put(b, uint64_t{0});
      Put(b, uint64_t{1});
    }
  }
  return b;
}

void BM_EncodeSyscallRecords(benchmark::State& state) {
  std::vector<uint8_t> bytes = Records(static_cast<size_t>(state.range(0)));
  const format::StreamSpec* spec = format::FindStream(format::kCpuStream);
  uint64_t records = 0;
  for (auto _ : state) {
    format::StreamWriter w(format::Uuid{}, *spec, 1, {0});
    if (!w.Open("/dev/null").ok()) state.SkipWithError("cannot open /dev/null");
    OsEncoder enc({}, {&w});
    uint64_t raw = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
    enc.RegisterEvent(1, {EventKind::kLeader, 0, 0});
    enc.RegisterEvent(2, {EventKind::kSysEnter, raw, 0});
    enc.RegisterEvent(3, {EventKind::kSysExit, raw, 0});
    TracepointFields f;
    f.enter_id = {"id", 8, 8, true};
    f.exit_id = {"id", 8, 8, true};
    f.exit_ret = {"ret", 16, 8, true};
    enc.SetTracepoints(f);
    enc.Process(0, bytes.data(), bytes.size());
    (void)w.Flush(0);
    records += enc.stats().records;
  }
  state.counters["records/s"] = benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(bytes.size() * state.iterations()));
}
BENCHMARK(BM_EncodeSyscallRecords)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

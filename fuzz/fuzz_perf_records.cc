// Fuzz target: perf_event ring records through the OS encoder (record framing,
// sample parsing for every event kind, side-band records, stack interning,
// symbolization of whatever addresses come up), into a cpu stream.
//
// Event identifiers 1..8 are registered with the layouts the collector uses,
// and 9 as the CPU samples of --unwind dwarf; the seed corpus holds records of
// each kind.
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>

#include "collectors/os/os_encoder.h"
#include "collectors/os/perf_records.h"
#include "format/ctf_writer.h"
#include "format/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::collectors::os;
  namespace format = strata::format;
  static const format::StreamSpec* spec = format::FindStream(format::kCpuStream);
  format::StreamWriter w(format::Uuid{}, *spec, 1, {0}), w1(format::Uuid{}, *spec, 2, {1});
  // /dev/null through Resume: Open creates a new file only (O_EXCL), which
  // /dev/null is not. A writer that cannot open would make this target a no-op
  // (it was, silently, for a while): stop loudly instead.
  if (!w.Resume("/dev/null", {}).ok() || !w1.Resume("/dev/null", {}).ok()) __builtin_trap();
  EncoderOptions opt;
  opt.python = false;  // no process to read
  OsEncoder enc(opt, {&w, &w1});
  const uint64_t base = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  const uint64_t raw = base | PERF_SAMPLE_RAW;
  enc.RegisterEvent(1, {EventKind::kLeader, base, 0});
  enc.RegisterEvent(2, {EventKind::kSchedSwitch, raw, 0});
  enc.RegisterEvent(3, {EventKind::kSchedWakeup, raw, 0});
  enc.RegisterEvent(4, {EventKind::kSysEnter, raw, 0});
  enc.RegisterEvent(5, {EventKind::kSysExit, raw, 0});
  enc.RegisterEvent(6, {EventKind::kCpuClock, base | PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN, 0});
  enc.RegisterEvent(7, {EventKind::kPageFault, base | PERF_SAMPLE_IP | PERF_SAMPLE_ADDR, 0});
  enc.RegisterEvent(8, {EventKind::kBlockIssue, raw, 0});
  TracepointFields f;
  f.switch_prev_state = {"prev_state", 32, 8, true};
  f.switch_next_pid = {"next_pid", 56, 4, true};
  f.wakeup_pid = {"pid", 24, 4, true};
  f.wakeup_target_cpu = {"target_cpu", 32, 4, true};
  f.enter_id = {"id", 8, 8, true};
  f.exit_id = {"id", 8, 8, true};
  f.exit_ret = {"ret", 16, 8, true};
  f.block_dev = {"dev", 8, 4, false};
  f.block_sector = {"sector", 16, 8, false};
  f.block_bytes = {"bytes", 28, 4, false};
  f.block_rwbs = {"rwbs", 34, 10, false, false, true};
  enc.SetTracepoints(f);
  enc.Process(0, data, size);
  // The same bytes as two rings' drains, merged in time order (split on an 8-byte boundary).
  size_t half = size / 16 * 8;
  enc.ProcessBatch({{0, data, half}, {1, data + half, size - half}});
  enc.ResolveFrames();
  (void)w.Flush(0);
  (void)w1.Flush(0);
  // --unwind dwarf: samples carrying the user registers and a copy of the stack
  // (event 9), unwound with libdw through the files the MMAP2 records name.
  opt.dwarf = true;
  OsEncoder dwarf(opt, {&w, &w1});
  for (uint64_t id = 1; id <= 8; ++id) dwarf.RegisterEvent(id, {EventKind::kLeader, base, 0});
  dwarf.RegisterEvent(9, {EventKind::kCpuClock,
                          base | PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
                          kX86RegsMask});
  dwarf.Process(0, data, size);
  dwarf.ResolveFrames();
  (void)w.Flush(0);
  // The REGS_USER/STACK_USER layout is not reached through the encoder's table above.
  SampleRecord s;
  (void)ParseSample(data, size, base | PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
                    kX86RegsMask, &s);
  return 0;
}

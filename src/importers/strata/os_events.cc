// Decoders of the OS level (cpu streams, format/schema_os.h): scheduling,
// system calls, CPU samples with stacks, page faults, block I/O, /proc counters.
// They collect events (os_events.h); os_replay.cc turns them into the model.
#include "importers/strata/os_events.h"

#include <algorithm>
#include <cstdint>

#include "base/int_math.h"
#include "format/schema.h"
#include "format/schema_os.h"

namespace strata::importers::strata_ctf {
namespace {

using format::EventView;
using format::kCpuStream;

int16_t CpuOf(const StreamState& ss) {
  if (ss.context.empty() || ss.context[0] == format::kSupervisorCpuId) return -1;
  return static_cast<int16_t>(ss.context[0]);
}

void Push(LoadContext& ctx, const StreamState& ss, const EventView& ev, Ev type, uint32_t pid, uint32_t tid,
          uint64_t a = 0, int64_t b = 0, uint32_t c = 0) {
  auto& st = ctx.Ext<OsState>();
  int16_t cpu = CpuOf(ss);
  st.events.push_back({static_cast<int64_t>(ev.ts), st.seq++, type, cpu, pid, tid, a, b, c});
  st.last_ts[cpu] = static_cast<int64_t>(ev.ts);
}

}  // namespace

void RegisterOsDecoders(DecoderRegistry& r) {
  r.On(kCpuStream, "switch_out", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
    Push(ctx, ss, ev, Ev::kSwitchOut, pid, tid, p.Get<uint8_t>());
  });
  r.On(kCpuStream, "switch_in", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
    Push(ctx, ss, ev, Ev::kSwitchIn, pid, tid);
  });
  r.On(kCpuStream, "sched_switch", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
    uint64_t state = p.Get<uint64_t>();
    p.Get<uint32_t>();  // next_tid
    Push(ctx, ss, ev, Ev::kSchedSwitch, pid, tid, state, 0, p.Get<uint32_t>());
  });
  r.On(kCpuStream, "sched_wakeup", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
    Push(ctx, ss, ev, Ev::kWakeup, pid, tid, p.Get<uint32_t>());
  });
  r.On(kCpuStream, "sys_enter", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
    Push(ctx, ss, ev, Ev::kSysEnter, pid, tid, p.Get<uint32_t>());
  });
  r.On(kCpuStream, "sys_exit", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>(), nr = p.Get<uint32_t>();
    Push(ctx, ss, ev, Ev::kSysExit, pid, tid, nr, p.Get<int64_t>());
  });
  r.On(kCpuStream, "cpu_sample", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
    Push(ctx, ss, ev, Ev::kSample, pid, tid, p.Get<uint32_t>());
  });
  r.On(kCpuStream, "page_fault", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
    uint64_t addr = p.Get<uint64_t>();
    Push(ctx, ss, ev, Ev::kFault, pid, tid, p.Get<uint32_t>(), static_cast<int64_t>(addr));
  });
  r.On(kCpuStream, "block_issue", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>(), dev = p.Get<uint32_t>();
    uint64_t sector = p.Get<uint64_t>();
    uint32_t bytes = p.Get<uint32_t>();
    model::StringId rwbs = ctx.trace().strings.Intern(p.Str());
    Push(ctx, ss, ev, Ev::kBlock, pid, tid, sector, static_cast<int64_t>((uint64_t{dev} << 32) | bytes), rwbs);
  });
  auto task = [](Ev type) {
    return [type](LoadContext& ctx, StreamState& ss, const EventView& ev) {
      PayloadReader p(ev);
      uint32_t pid = p.Get<uint32_t>(), ppid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
      Push(ctx, ss, ev, type, pid, tid, ppid);
    };
  };
  r.On(kCpuStream, "task_new", task(Ev::kTaskNew));
  r.On(kCpuStream, "task_exit", task(Ev::kTaskExit));
  r.On(kCpuStream, "comm", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t pid = p.Get<uint32_t>(), tid = p.Get<uint32_t>();
    uint8_t exec = p.Get<uint8_t>();
    auto& st = ctx.Ext<OsState>();
    st.comms.emplace_back(p.Str());
    Push(ctx, ss, ev, Ev::kComm, pid, tid, st.comms.size() - 1, exec);
  });
  // Mappings let a later strata re-symbolize (debug info installed afterwards);
  // the writer already resolved every frame it saw, so nothing to do today.
  r.On(kCpuStream, "mmap", [](LoadContext&, StreamState&, const EventView&) {});
  r.On(kCpuStream, "frame", [](LoadContext& ctx, StreamState&, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t id = p.Get<uint32_t>();
    FrameDef f;
    f.kind = p.Get<uint8_t>();
    f.pc = p.Get<uint64_t>();
    f.function = ctx.trace().strings.Intern(p.Str());
    f.module = ctx.trace().strings.Intern(p.Str());
    f.line = p.Get<uint32_t>();
    if (id != 0) ctx.Ext<OsState>().frames[id] = f;
  });
  r.On(kCpuStream, "callsite", [](LoadContext& ctx, StreamState&, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t id = p.Get<uint32_t>(), parent = p.Get<uint32_t>(), frame = p.Get<uint32_t>();
    // A parent must be defined first; a forward reference would be a cycle.
    if (id != 0 && parent < id) ctx.Ext<OsState>().callsites[id] = {parent, frame};
    else ctx.CountWarning("malformed stack definitions (ignored)");
  });
  r.On(kCpuStream, "syscall_name", [](LoadContext& ctx, StreamState&, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t nr = p.Get<uint32_t>();
    ctx.Ext<OsState>().syscall_names[nr] = ctx.trace().strings.Intern(p.Str());
  });
  r.On(kCpuStream, "lost", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& st = ctx.Ext<OsState>();
    uint64_t n = PayloadReader(ev).Get<uint64_t>();
    st.lost += n;
    int16_t cpu = CpuOf(ss);
    auto last = st.last_ts.find(cpu);
    auto ts = static_cast<int64_t>(ev.ts);
    // Before the stream's first event: the loss may go back to the recording's start.
    st.loss_windows.push_back({cpu, last != st.last_ts.end() ? std::min(last->second, ts) : INT64_MIN, ts});
    Push(ctx, ss, ev, Ev::kLost, 0, 0, n);
  });
  r.On(kCpuStream, "thread_stat", [](LoadContext& ctx, StreamState&, const EventView& ev) {
    PayloadReader p(ev);
    StatSample s{static_cast<int64_t>(ev.ts), true, p.Get<uint32_t>(), p.Get<uint32_t>(), {}};
    for (int k = 0; k < 4; ++k) s.v[k] = p.Get<uint64_t>();
    s.v[4] = p.Get<uint32_t>();
    ctx.Ext<OsState>().stats.push_back(s);
  });
  r.On(kCpuStream, "process_stat", [](LoadContext& ctx, StreamState&, const EventView& ev) {
    PayloadReader p(ev);
    StatSample s{static_cast<int64_t>(ev.ts), false, p.Get<uint32_t>(), 0, {}};
    for (int k = 0; k < 8; ++k) s.v[k] = p.Get<uint64_t>();
    s.v[8] = p.Get<uint32_t>();
    ctx.Ext<OsState>().stats.push_back(s);
  });
  r.BeforeFinalize([](LoadContext& ctx) {
    model::Trace& t = ctx.trace();
    for (model::Track& trk : t.tracks)
      if (trk.kind == model::TrackKind::kCpu && trk.name == 0)
        trk.name = t.strings.Intern(trk.tid == format::kSupervisorCpuId ? std::string("/proc sampler")
                                                                        : "cpu " + std::to_string(trk.tid));
    auto& st = ctx.Ext<OsState>();
    if (st.events.empty() && st.stats.empty()) return;
    ReplayOs(ctx, st);
    if (st.lost > 0)
      ctx.Warn(std::to_string(st.lost) +
               " OS records were dropped by the kernel (rings full): system calls that span a gap have no duration, "
               "and thread time across a gap counts as unknown");
  });
}

}  // namespace strata::importers::strata_ctf

// Decoders of the OS level (cpu streams, format/schema_os.h): scheduling,
// system calls, CPU samples with stacks, page faults, block I/O, /proc counters.
//
// CPU streams interleave every traced thread that ran on a CPU, and one thread's
// story spans CPUs, so events are collected from all cpu streams first, then
// replayed in time order per thread (BeforeFinalize) to build on/off-CPU
// intervals, syscalls and the off-CPU causes that join them.
//
// Events name pids and tids; the thread tracks they land on belong to the model
// process of that pid *image*: a pid that exec'd is several processes (one per
// recorder process instance), told apart by the exec times in comm events.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/int_math.h"
#include "format/schema.h"
#include "format/schema_os.h"
#include "importers/strata/decoder.h"

namespace strata::importers::strata_ctf {
namespace {

using format::EventView;
using format::kCpuStream;
using model::ThreadState;

enum class Ev : uint8_t {
  kTaskNew,  // first so that, at equal times, a thread exists before its events
  kComm,
  kSchedSwitch,
  kSwitchOut,
  kSwitchIn,
  kWakeup,
  kSysEnter,
  kSysExit,
  kSample,
  kFault,
  kBlock,
  kTaskExit,
};

struct OsEvent {
  int64_t ts;
  uint32_t seq;
  Ev type;
  int16_t cpu;
  uint32_t pid, tid;
  uint64_t a;  // switch: preempted; sched_switch: prev_state; wakeup: wakee tid; sys: nr; sample/fault: stack;
               // task: ppid; block: sector; comm: index into comms
  int64_t b;   // sys_exit: ret; fault: addr; wakeup: waker pid; block: (dev << 32) | bytes
  uint32_t c;  // block: rwbs string id
};

struct FrameDef {
  uint8_t kind;
  uint64_t pc;
  model::StringId function, module;
  uint32_t line;
};

struct StatSample {
  int64_t ts;
  bool thread;
  uint32_t pid, tid;
  uint64_t v[9];
};

struct OsState {
  std::vector<OsEvent> events;
  std::vector<std::string> comms;
  std::unordered_map<uint32_t, FrameDef> frames;
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> callsites;  // id -> (parent, frame)
  std::unordered_map<uint32_t, model::StringId> syscall_names;
  std::vector<StatSample> stats;
  uint32_t seq = 0;
  uint64_t lost = 0;
};

int16_t CpuOf(const StreamState& ss) {
  if (ss.context.empty() || ss.context[0] == format::kSupervisorCpuId) return -1;
  return static_cast<int16_t>(ss.context[0]);
}

void Push(LoadContext& ctx, const StreamState& ss, const EventView& ev, Ev type, uint32_t pid, uint32_t tid,
          uint64_t a = 0, int64_t b = 0, uint32_t c = 0) {
  auto& st = ctx.Ext<OsState>();
  st.events.push_back({static_cast<int64_t>(ev.ts), st.seq++, type, CpuOf(ss), pid, tid, a, b, c});
}

// ---- Replay -----------------------------------------------------------------

class Replay {
 public:
  Replay(LoadContext& ctx, OsState& st) : ctx_(ctx), t_(ctx.trace()), st_(st) {}

  void Run() {
    std::sort(st_.events.begin(), st_.events.end(), [](const OsEvent& x, const OsEvent& y) {
      if (x.ts != y.ts) return x.ts < y.ts;
      if (x.type != y.type) return x.type < y.type;
      return x.seq < y.seq;
    });
    BuildImages();
    BuildStacks();
    for (const OsEvent& e : st_.events) {
      end_ = std::max(end_, e.ts);
      switch (e.type) {
        case Ev::kTaskNew: OnTaskNew(e); break;
        case Ev::kComm: OnComm(e); break;
        case Ev::kSchedSwitch: OnSchedSwitch(e); break;
        case Ev::kSwitchOut: OnSwitchOut(e); break;
        case Ev::kSwitchIn: OnSwitchIn(e); break;
        case Ev::kWakeup: OnWakeup(e); break;
        case Ev::kSysEnter: OnSysEnter(e); break;
        case Ev::kSysExit: OnSysExit(e); break;
        case Ev::kSample: OnSample(e); break;
        case Ev::kFault: OnFault(e); break;
        case Ev::kBlock: OnBlock(e); break;
        case Ev::kTaskExit: OnTaskExit(e); break;
      }
    }
    uint64_t alive = 0;
    for (auto& [tid, th] : threads_) {
      alive += !th.exited;
      Close(th, end_, /*exited=*/false);
    }
    if (alive > 0)
      ctx_.Warn(std::to_string(alive) +
                " threads were still running when the command exited; the OS level stops following them there");
    BuildCounters();
    SortTables();
    if (unmatched_exits_ > 0)
      ctx_.Warn(std::to_string(unmatched_exits_) +
                " system call exits without their entry (calls that began before tracing, or lost records)");
  }

 private:
  struct Thread {
    uint32_t track = 0;
    uint32_t tid = 0;
    int64_t first = 0;
    bool created = false;  // seen being created (task_new)
    enum { kNone, kOn, kOff } mode = kNone;
    int64_t since = 0;
    int16_t cpu = -1;
    ThreadState off_state = ThreadState::kBlocked;
    int32_t waker = -1;
    // sched_switch seen before its switch_out
    bool pending_state = false;
    uint64_t prev_state = 0;
    int64_t prev_state_ts = 0;
    int32_t pending_stack = -1;
    int32_t off_stack = -1;
    // the open system call
    int32_t sys_row = -1;
    bool exited = false;
  };

  // Images of a pid: [exec time, next exec time) -> model process.
  struct Image {
    int64_t start;
    int32_t process = -1;
  };

  void BuildImages() {
    // Exec times per pid.
    std::map<uint32_t, std::vector<int64_t>> execs;
    for (const OsEvent& e : st_.events) {
      if (e.type == Ev::kComm && (e.b & 1)) execs[e.pid].push_back(e.ts);
      pids_seen_[e.pid] = true;
    }
    // Recorder processes by pid, by start time on the trace clock.
    std::map<int64_t, std::vector<std::pair<int64_t, uint32_t>>> recorded;
    for (uint32_t i = 0; i < t_.processes.size(); ++i) {
      const model::Process& p = t_.processes[i];
      recorded[p.pid].emplace_back(SatSub(p.start_realtime_ns, t_.clock_offset_ns), i);
    }
    for (auto& [pid, v] : recorded) std::sort(v.begin(), v.end());
    for (auto& [pid, seen] : pids_seen_) {
      std::vector<Image> imgs;
      imgs.push_back({INT64_MIN});
      for (int64_t x : execs[pid]) imgs.push_back({x});
      auto& rec = recorded[pid];
      for (size_t k = 0; k < imgs.size(); ++k) {
        int64_t lo = imgs[k].start, hi = k + 1 < imgs.size() ? imgs[k + 1].start : INT64_MAX;
        for (auto& [start, idx] : rec)
          if (start >= lo && start < hi) imgs[k].process = static_cast<int32_t>(idx);
      }
      // A recorder process that started before any exec we saw (the root, whose
      // exec armed the events) belongs to the first image.
      if (imgs.size() > 1 && imgs[1].process < 0 && imgs[0].process >= 0 && execs[pid].size() == 1 && rec.size() == 1) {
        imgs[1].process = imgs[0].process;
        imgs[0].process = -1;
      }
      images_[pid] = std::move(imgs);
    }
  }

  uint32_t ProcessFor(uint32_t pid, int64_t ts) {
    auto& imgs = images_[pid];
    if (imgs.empty()) imgs.push_back({INT64_MIN});
    size_t k = 0;
    while (k + 1 < imgs.size() && imgs[k + 1].start <= ts) ++k;
    if (imgs[k].process < 0) {
      // No recorder in this image (static binary, or libstrata not loaded):
      // the OS level alone describes it.
      auto& ps = ctx_.Process(pid, 0xFFFF000000000000ull | k);
      imgs[k].process = static_cast<int32_t>(ps.index);
    }
    return static_cast<uint32_t>(imgs[k].process);
  }

  Thread& ThreadOf(const OsEvent& e) { return ThreadFor(e.pid, e.tid, e.ts); }

  Thread& ThreadFor(uint32_t pid, uint32_t tid, int64_t ts) {
    auto it = threads_.find(tid);
    if (it != threads_.end() && !it->second.exited) {
      // Exec keeps the tid but starts a new image: move the thread to its new track.
      uint32_t proc = ProcessFor(pid, ts);
      if (t_.tracks[it->second.track].process == proc) return it->second;
      Close(it->second, ts, false);
      threads_.erase(it);
    } else if (it != threads_.end()) {
      threads_.erase(it);  // tid reused after exit
    }
    Thread th;
    th.tid = tid;
    th.first = ts;
    th.track = ctx_.Track(ProcessFor(pid, ts), model::TrackKind::kThread, tid, model::kNone);
    return threads_.emplace(tid, th).first->second;
  }

  void AddState(Thread& th, int64_t from, int64_t to, ThreadState s, int16_t cpu, int32_t sys, int32_t waker,
                int32_t stack = -1) {
    if (to <= from) return;
    uint32_t r = t_.thread_states.Add(from, to - from, th.track, s, cpu);
    t_.thread_states.syscall[r] = sys;
    t_.thread_states.waker[r] = waker;
    t_.thread_states.callsite[r] = stack;
  }

  void Close(Thread& th, int64_t ts, bool exited) {
    if (th.mode == Thread::kOn) {
      AddState(th, th.since, ts, ThreadState::kRunning, th.cpu, -1, -1);
    } else if (th.mode == Thread::kOff) {
      AddState(th, th.since, ts, th.off_state, th.cpu, th.sys_row, th.waker, th.off_stack);
    } else if (th.first < ts) {
      // Never switched: it ran the whole time (a thread that never blocked) or we
      // cannot tell. Only context-switch records say; without any, unknown.
      AddState(th, th.first, ts, ThreadState::kUnknown, -1, -1, -1);
    }
    th.mode = Thread::kNone;
    th.first = ts;
    if (th.sys_row >= 0) {
      auto& s = t_.syscalls;
      s.dur[static_cast<size_t>(th.sys_row)] = ts - s.ts[static_cast<size_t>(th.sys_row)];
      th.sys_row = -1;
    }
    th.exited = exited;
  }

  void OnTaskNew(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    th.created = true;
    th.first = e.ts;
    if (e.pid == e.tid) {
      model::Process& p = t_.processes[t_.tracks[th.track].process];
      if (p.ppid < 0) p.ppid = static_cast<int64_t>(e.a);
    }
  }

  void OnComm(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    const std::string& name = st_.comms[e.a];
    model::Track& trk = t_.tracks[th.track];
    // The recorder's thread names (pthread_setname_np, Python thread names) win.
    if (trk.name == 0 || comm_named_[th.track]) {
      trk.name = t_.strings.Intern(name);
      comm_named_[th.track] = true;
    }
    if (e.pid == e.tid) {
      model::Process& p = t_.processes[trk.process];
      if (p.name == 0) p.name = t_.strings.Intern(name);
    }
  }

  void OnSchedSwitch(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    // The tracepoint fires just before the context-switch record; it tells the
    // kind of sleep the next off-CPU interval is.
    th.pending_state = true;
    th.prev_state = e.a;
    th.prev_state_ts = e.ts;
    th.pending_stack = CallsiteRow(e.c);
  }

  static ThreadState StateOf(uint64_t prev_state) {
    // TASK_REPORT bits: 0x1 S, 0x2 D, 0x4 T, 0x8 t, 0x10 X, 0x20 Z, 0x40 P, 0x80 I; 0x100 = preempted (R+).
    // Preemption at return to user goes through schedule() and shows as 0, so
    // "runnable" is (state & 0xff) == 0.
    uint64_t s = prev_state & 0xff;
    if (s == 0) return ThreadState::kRunnable;
    if (s & 0x2) return ThreadState::kDiskSleep;
    if (s & 0x1) return ThreadState::kSleeping;
    if (s & 0xc) return ThreadState::kStopped;
    if (s & 0x80) return ThreadState::kSleeping;  // idle kernel threads; not ours in practice
    return ThreadState::kBlocked;
  }

  void OnSwitchOut(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    int64_t from = th.mode == Thread::kOn ? th.since : th.first;
    AddState(th, from, e.ts, ThreadState::kRunning, e.cpu, -1, -1);
    th.mode = Thread::kOff;
    th.since = e.ts;
    th.cpu = e.cpu;
    th.waker = -1;
    th.off_state = e.a ? ThreadState::kRunnable : ThreadState::kBlocked;
    th.off_stack = -1;
    constexpr int64_t kPairWindow = 2000000;  // a sched_switch and its switch record are microseconds apart
    if (th.pending_state && e.ts - th.prev_state_ts <= kPairWindow) {
      ThreadState s = StateOf(th.prev_state);
      // The preempt bit of the switch record and the tracepoint agree; when they
      // do not (a race with a wakeup), the record's view of "still runnable" wins.
      if (!(e.a && s != ThreadState::kRunnable)) {
        th.off_state = s;
        th.off_stack = th.pending_stack;
      }
    }
    th.pending_state = false;
  }

  void OnSwitchIn(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    if (th.mode == Thread::kOff) {
      AddState(th, th.since, e.ts, th.off_state, th.cpu, th.sys_row, th.waker, th.off_stack);
    } else if (th.mode == Thread::kNone && th.first < e.ts) {
      // Created, then waited for a CPU; or an existing thread we know nothing of before.
      AddState(th, th.first, e.ts, th.created ? ThreadState::kRunnable : ThreadState::kUnknown, -1, -1, -1);
    }
    th.mode = Thread::kOn;
    th.since = e.ts;
    th.cpu = e.cpu;
  }

  void OnWakeup(const OsEvent& e) {
    // The waker first: looking it up may insert into threads_ (and rehash).
    uint32_t waker = ThreadOf(e).track;
    auto it = threads_.find(static_cast<uint32_t>(e.a));
    if (it == threads_.end() || it->second.mode != Thread::kOff) return;
    it->second.waker = static_cast<int32_t>(waker);
  }

  model::StringId SyscallName(uint32_t nr) {
    auto it = st_.syscall_names.find(nr);
    if (it != st_.syscall_names.end()) return it->second;
    return st_.syscall_names[nr] = t_.strings.Intern("sys_" + std::to_string(nr));
  }

  void OnSysEnter(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    if (th.sys_row >= 0) {
      // The previous call never returned (its exit was lost): it lasted until now at most.
      auto r = static_cast<size_t>(th.sys_row);
      t_.syscalls.dur[r] = e.ts - t_.syscalls.ts[r];
    }
    auto& s = t_.syscalls;
    s.ts.push_back(e.ts);
    s.dur.push_back(0);
    s.track.push_back(th.track);
    s.name.push_back(SyscallName(static_cast<uint32_t>(e.a)));
    s.nr.push_back(static_cast<uint32_t>(e.a));
    s.ret.push_back(0);
    s.returned.push_back(0);
    th.sys_row = static_cast<int32_t>(s.size() - 1);
  }

  void OnSysExit(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    auto& s = t_.syscalls;
    if (th.sys_row < 0 || s.nr[static_cast<size_t>(th.sys_row)] != e.a) {
      // An exec's exit belongs to the new image; its entry was in the old one (or,
      // for the command itself, before the events armed).
      std::string_view name = t_.strings.Get(SyscallName(static_cast<uint32_t>(e.a)));
      if (name != "execve" && name != "execveat") ++unmatched_exits_;
      return;
    }
    auto r = static_cast<size_t>(th.sys_row);
    s.dur[r] = e.ts - s.ts[r];
    s.ret[r] = e.b;
    s.returned[r] = 1;
    th.sys_row = -1;
  }

  void OnSample(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    auto& s = t_.cpu_samples;
    s.ts.push_back(e.ts);
    s.track.push_back(th.track);
    s.cpu.push_back(e.cpu);
    s.callsite.push_back(CallsiteRow(static_cast<uint32_t>(e.a)));
  }

  void OnFault(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    auto& f = t_.page_faults;
    f.ts.push_back(e.ts);
    f.track.push_back(th.track);
    f.addr.push_back(static_cast<uint64_t>(e.b));
    f.callsite.push_back(CallsiteRow(static_cast<uint32_t>(e.a)));
  }

  void OnBlock(const OsEvent& e) {
    Thread& th = ThreadOf(e);
    auto& b = t_.block_io;
    b.ts.push_back(e.ts);
    b.track.push_back(th.track);
    b.sector.push_back(e.a);
    b.dev.push_back(static_cast<uint32_t>(static_cast<uint64_t>(e.b) >> 32));
    b.bytes.push_back(static_cast<uint32_t>(e.b));
    b.rwbs.push_back(e.c);
  }

  void OnTaskExit(const OsEvent& e) {
    auto it = threads_.find(e.tid);
    if (it == threads_.end()) return;
    Close(it->second, e.ts, /*exited=*/true);
  }

  // ---- stacks ----

  void BuildStacks() {
    // Frames and callsites are defined by id; rows are created in id order, and a
    // callsite's parent always has a smaller id (it was interned first).
    std::vector<uint32_t> fids;
    for (auto& [id, f] : st_.frames) fids.push_back(id);
    std::sort(fids.begin(), fids.end());
    for (uint32_t id : fids) {
      const FrameDef& f = st_.frames[id];
      frame_row_[id] = static_cast<uint32_t>(t_.frames.size());
      t_.frames.function.push_back(f.function);
      t_.frames.module.push_back(f.module);
      t_.frames.kind.push_back(f.kind <= 3 ? static_cast<model::FrameKind>(f.kind) : model::FrameKind::kUnknown);
      t_.frames.pc.push_back(f.pc);
      t_.frames.line.push_back(f.line);
    }
    std::vector<uint32_t> cids;
    for (auto& [id, c] : st_.callsites) cids.push_back(id);
    std::sort(cids.begin(), cids.end());
    uint64_t missing = 0;
    for (uint32_t id : cids) {
      auto [parent, frame] = st_.callsites[id];
      auto pit = callsite_row_.find(parent);
      int32_t prow = parent == 0 || pit == callsite_row_.end() ? -1 : static_cast<int32_t>(pit->second);
      auto fit = frame_row_.find(frame);
      uint32_t frow;
      if (fit != frame_row_.end()) {
        frow = fit->second;
      } else {
        ++missing;
        frow = UnknownFrame();
      }
      callsite_row_[id] = static_cast<uint32_t>(t_.callsites.size());
      t_.callsites.parent.push_back(prow);
      t_.callsites.frame.push_back(frow);
      t_.callsites.depth.push_back(prow < 0 ? 0 : static_cast<uint16_t>(t_.callsites.depth[static_cast<size_t>(prow)] + 1));
    }
    if (missing) ctx_.Warn(std::to_string(missing) + " stack frames were never defined (the recording was cut short)");
  }

  uint32_t UnknownFrame() {
    if (unknown_frame_ < 0) {
      unknown_frame_ = static_cast<int32_t>(t_.frames.size());
      model::StringId u = t_.strings.Intern("[unknown]");
      t_.frames.function.push_back(u);
      t_.frames.module.push_back(u);
      t_.frames.kind.push_back(model::FrameKind::kUnknown);
      t_.frames.pc.push_back(0);
      t_.frames.line.push_back(0);
    }
    return static_cast<uint32_t>(unknown_frame_);
  }

  int32_t CallsiteRow(uint32_t id) {
    if (id == 0) return -1;
    auto it = callsite_row_.find(id);
    return it == callsite_row_.end() ? -1 : static_cast<int32_t>(it->second);
  }

  // ---- /proc counters ----

  uint32_t Series(uint32_t process, int32_t track, const char* name, const char* unit) {
    auto key = std::make_tuple(process, track, std::string(name));
    auto it = series_.find(key);
    if (it != series_.end()) return it->second;
    auto idx = static_cast<uint32_t>(t_.counter_series.size());
    model::CounterSeries cs;
    cs.name = t_.strings.Intern(name);
    cs.process = process;
    cs.unit = t_.strings.Intern(unit);
    cs.track = track;
    t_.counter_series.push_back(cs);
    series_.emplace(key, idx);
    return idx;
  }

  void BuildCounters() {
    std::sort(st_.stats.begin(), st_.stats.end(), [](const StatSample& a, const StatSample& b) { return a.ts < b.ts; });
    struct Prev {
      int64_t ts;
      uint64_t v[9];
    };
    std::map<std::pair<uint32_t, uint32_t>, Prev> prev;  // (pid, tid or 0)
    // The first /proc sample may see the child parked before its exec: that is
    // strata's own fork, not part of the program.
    std::vector<StatSample> kept;
    for (const StatSample& s : st_.stats) {
      auto it = images_.find(s.pid);
      if (it != images_.end() && it->second.size() > 1 && s.ts < it->second[1].start && it->second[0].process < 0) continue;
      kept.push_back(s);
    }
    st_.stats.swap(kept);
    for (const StatSample& s : st_.stats) {
      uint32_t proc = ProcessFor(s.pid, s.ts);
      auto key = std::make_pair(s.pid, s.thread ? s.tid : 0u);
      auto it = prev.find(key);
      if (s.thread) {
        // thread_stat: utime_ns, stime_ns, vol_cs, invol_cs
        uint32_t track = ctx_.Track(proc, model::TrackKind::kThread, s.tid, model::kNone);
        if (it != prev.end() && s.ts > it->second.ts) {
          double dt = static_cast<double>(s.ts - it->second.ts);
          double cpu = static_cast<double>((s.v[0] + s.v[1]) - (it->second.v[0] + it->second.v[1]));
          t_.counters.Add(Series(proc, static_cast<int32_t>(track), "os.cpu_percent", "%"), s.ts, 100.0 * cpu / dt);
        }
      } else {
        // process_stat: rss, vm, rchar, wchar, read_bytes, write_bytes, minflt, majflt, threads
        t_.counters.Add(Series(proc, -1, "os.rss_bytes", "bytes"), s.ts, static_cast<double>(s.v[0]));
        t_.counters.Add(Series(proc, -1, "os.threads", "threads"), s.ts, static_cast<double>(s.v[8]));
        if (it != prev.end() && s.ts > it->second.ts) {
          double dt = static_cast<double>(s.ts - it->second.ts) / 1e9;
          auto rate = [&](int k, const char* name, const char* unit) {
            uint64_t a = it->second.v[k], b = s.v[k];
            t_.counters.Add(Series(proc, -1, name, unit), s.ts, b >= a ? static_cast<double>(b - a) / dt : 0.0);
          };
          rate(2, "os.read_bytes_per_s", "bytes/s");
          rate(3, "os.write_bytes_per_s", "bytes/s");
          rate(4, "os.disk_read_bytes_per_s", "bytes/s");
          rate(5, "os.disk_write_bytes_per_s", "bytes/s");
          rate(6, "os.minor_faults_per_s", "1/s");
          rate(7, "os.major_faults_per_s", "1/s");
        }
      }
      Prev p{s.ts, {}};
      std::copy(std::begin(s.v), std::end(s.v), p.v);
      prev[key] = p;
    }
    // Context switches per thread from /proc (kept also when perf records them: these are the kernel's own counts).
    std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> first;
    for (const StatSample& s : st_.stats) {
      if (!s.thread) continue;
      auto key = std::make_pair(s.pid, s.tid);
      auto it = first.find(key);
      if (it == first.end()) first[key] = {s.v[2], s.v[3]};
      uint32_t proc = ProcessFor(s.pid, s.ts);
      uint32_t track = ctx_.Track(proc, model::TrackKind::kThread, s.tid, model::kNone);
      t_.counters.Add(Series(proc, static_cast<int32_t>(track), "os.voluntary_switches", "switches"), s.ts,
                      static_cast<double>(s.v[2]));
      t_.counters.Add(Series(proc, static_cast<int32_t>(track), "os.involuntary_switches", "switches"), s.ts,
                      static_cast<double>(s.v[3]));
    }
  }

  template <typename T>
  static void Permute(std::vector<T>& v, const std::vector<uint32_t>& order) {
    std::vector<T> out;
    out.reserve(v.size());
    for (uint32_t i : order) out.push_back(v[i]);
    v.swap(out);
  }

  template <typename Table>
  static std::vector<uint32_t> ByTrackTime(const Table& tb) {
    std::vector<uint32_t> order(tb.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&tb](uint32_t a, uint32_t b) {
      return tb.track[a] != tb.track[b] ? tb.track[a] < tb.track[b] : tb.ts[a] < tb.ts[b];
    });
    return order;
  }

  void SortTables() {
    auto& sc = t_.syscalls;
    std::vector<uint32_t> so = ByTrackTime(sc);
    std::vector<int32_t> new_row(so.size());
    for (uint32_t i = 0; i < so.size(); ++i) new_row[so[i]] = static_cast<int32_t>(i);
    Permute(sc.ts, so);
    Permute(sc.dur, so);
    Permute(sc.track, so);
    Permute(sc.name, so);
    Permute(sc.nr, so);
    Permute(sc.ret, so);
    Permute(sc.returned, so);
    auto& ts = t_.thread_states;
    for (auto& r : ts.syscall)
      if (r >= 0) r = new_row[static_cast<size_t>(r)];
    std::vector<uint32_t> to = ByTrackTime(ts);
    Permute(ts.ts, to);
    Permute(ts.dur, to);
    Permute(ts.track, to);
    Permute(ts.state, to);
    Permute(ts.cpu, to);
    Permute(ts.syscall, to);
    Permute(ts.waker, to);
    Permute(ts.callsite, to);
    auto& cs = t_.cpu_samples;
    std::vector<uint32_t> co = ByTrackTime(cs);
    Permute(cs.ts, co);
    Permute(cs.track, co);
    Permute(cs.cpu, co);
    Permute(cs.callsite, co);
  }

  LoadContext& ctx_;
  model::Trace& t_;
  OsState& st_;
  std::unordered_map<uint32_t, Thread> threads_;
  std::map<uint32_t, bool> pids_seen_;
  std::unordered_map<uint32_t, std::vector<Image>> images_;
  std::unordered_map<uint32_t, uint32_t> frame_row_, callsite_row_;
  std::map<std::tuple<uint32_t, int32_t, std::string>, uint32_t> series_;
  std::unordered_map<uint32_t, bool> comm_named_;
  int32_t unknown_frame_ = -1;
  int64_t end_ = INT64_MIN;
  uint64_t unmatched_exits_ = 0;
};

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
  r.On(kCpuStream, "lost", [](LoadContext& ctx, StreamState&, const EventView& ev) {
    ctx.Ext<OsState>().lost += PayloadReader(ev).Get<uint64_t>();
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
    Replay(ctx, st).Run();
    if (st.lost > 0)
      ctx.Warn(std::to_string(st.lost) +
               " OS records were dropped by the kernel (rings full); on/off-CPU and syscall data have gaps there");
  });
}

}  // namespace strata::importers::strata_ctf

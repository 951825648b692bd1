// Replays the OS events of every cpu stream in time order per thread
// (os_events.h) into the model's OS tables.
//
// CPU streams interleave every traced thread that ran on a CPU, and one thread's
// story spans CPUs, so events are collected from all cpu streams first, then
// replayed here to build on/off-CPU intervals, syscalls and the off-CPU causes
// that join them.
//
// Events name pids and tids; the thread tracks they land on belong to the model
// process of that pid *image*: a pid that exec'd is several processes (one per
// recorder process instance), told apart by the exec times in comm events.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/int_math.h"
#include "format/schema_os.h"
#include "importers/common/loss_windows.h"
#include "importers/os_tables_sort.h"
#include "importers/strata/os_events.h"

namespace strata::importers::strata_ctf {
namespace {

using model::ThreadState;

// SyscallTable::returned of a call whose entry and exit cannot be paired: a
// loss of kernel records fell between them.
constexpr uint8_t kReturnLost = 2;

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
    BuildLossWindows();
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
        case Ev::kLost: break;
      }
    }
    EndThreads();
    BuildCounters();
    SortOsTables(t_);
    if (unmatched_exits_ > 0)
      ctx_.Warn(std::to_string(unmatched_exits_) +
                " system call exits without their entry (calls that began before tracing, or lost records)");
  }

 private:
  struct Thread {
    uint32_t track = 0;
    uint32_t pid = 0, tid = 0;
    int64_t first = 0;
    int64_t last = 0;      // its latest event
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
    int16_t sys_cpu = -1;    // where it entered
    bool sys_moved = false;  // it left the CPU since
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
      if (e.type == Ev::kLost) continue;
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

  Thread& ThreadOf(const OsEvent& e) {
    Thread& th = ThreadFor(e.pid, e.tid, e.ts);
    th.last = std::max(th.last, e.ts);
    return th;
  }

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
    th.pid = pid;
    th.tid = tid;
    th.first = ts;
    th.last = ts;
    th.track = ctx_.Track(ProcessFor(pid, ts), model::TrackKind::kThread, tid, model::kNone);
    return threads_.emplace(tid, th).first->second;
  }

  // `loss_cpu`: the one CPU whose losses can hide this interval's records (a
  // thread running on it from start to end), or -1: any CPU's can.
  void AddState(Thread& th, int64_t from, int64_t to, ThreadState s, int16_t cpu, int32_t sys, int32_t waker,
                int32_t stack = -1, int16_t loss_cpu = -1) {
    if (to <= from) return;
    // Switch records of this thread may be missing in a gap: what it did there is unknown.
    if (loss_.Crosses(from, to, loss_cpu)) {
      s = ThreadState::kUnknown;
      cpu = -1;
      sys = waker = stack = -1;
    }
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
      EndUnreturned(static_cast<size_t>(th.sys_row), ts);
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
    // In and out on one CPU: it ran there throughout, and only that CPU's losses matter.
    bool one_cpu = th.mode == Thread::kOn && th.cpu == e.cpu;
    AddState(th, from, e.ts, ThreadState::kRunning, e.cpu, -1, -1, -1, one_cpu ? e.cpu : int16_t{-1});
    if (th.sys_row >= 0) th.sys_moved = true;
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
    if (th.sys_row >= 0) EndUnreturned(static_cast<size_t>(th.sys_row), e.ts);
    auto& s = t_.syscalls;
    s.ts.push_back(e.ts);
    s.dur.push_back(0);
    s.track.push_back(th.track);
    s.name.push_back(SyscallName(static_cast<uint32_t>(e.a)));
    s.nr.push_back(static_cast<uint32_t>(e.a));
    s.ret.push_back(0);
    s.returned.push_back(0);
    th.sys_row = static_cast<int32_t>(s.size() - 1);
    th.sys_cpu = e.cpu;
    th.sys_moved = false;
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
    th.sys_row = -1;
    // Entry and exit on one CPU it never left: every record of the thread in
    // between was on that CPU, whose losses alone can hide a call.
    int16_t loss_cpu = !th.sys_moved && e.cpu == th.sys_cpu ? e.cpu : int16_t{-1};
    if (loss_.Crosses(s.ts[r], e.ts, loss_cpu)) {
      // This exit and that entry may be of two calls whose other halves were lost.
      s.returned[r] = kReturnLost;
      return;
    }
    s.dur[r] = e.ts - s.ts[r];
    s.ret[r] = e.b;
    s.returned[r] = 1;
  }

  // A call whose exit did not come before `ts` (the thread's next call, its end).
  void EndUnreturned(size_t r, int64_t ts) {
    auto& s = t_.syscalls;
    if (loss_.Crosses(s.ts[r], ts)) {
      s.returned[r] = kReturnLost;  // its exit is likely among the lost records: no duration
      s.dur[r] = 0;
    } else {
      s.dur[r] = ts - s.ts[r];  // exit, exec, or still blocked at the end: it lasted until then
    }
  }

  // ---- losses ----

  // Loss windows of every CPU and of each, merged into sorted disjoint intervals.
  void BuildLossWindows() {
    for (const auto& x : st_.loss_windows) loss_.Add(x.cpu, x.from, x.to);
    loss_.Seal();
  }

  // ---- thread ends ----

  // Closes every thread still open. A thread without an exit record (lost, or
  // still running) ended when its process exited, or when /proc stopped
  // listing it; only those that neither say ended are still running.
  void EndThreads() {
    // /proc: when each thread was last listed, and the sampler's rounds per process.
    std::map<std::pair<uint32_t, uint32_t>, int64_t> listed;
    std::map<uint32_t, std::vector<int64_t>> rounds;
    std::vector<int64_t> all_rounds;
    for (const StatSample& s : st_.stats) {
      if (s.thread) {
        int64_t& l = listed[{s.pid, s.tid}];
        l = std::max(l, s.ts);
      } else {
        rounds[s.pid].push_back(s.ts);
        all_rounds.push_back(s.ts);
      }
    }
    for (auto& [pid, v] : rounds) std::sort(v.begin(), v.end());
    std::sort(all_rounds.begin(), all_rounds.end());
    auto next_after = [](const std::vector<int64_t>& v, int64_t t) {
      auto it = std::upper_bound(v.begin(), v.end(), t);
      return it == v.end() ? INT64_MAX : *it;
    };
    uint64_t alive = 0, inferred = 0;
    for (auto& [tid, th] : threads_) {
      if (th.exited) continue;
      int64_t seen = th.last;
      auto l = listed.find({th.pid, th.tid});
      if (l != listed.end()) seen = std::max(seen, l->second);
      int64_t gone = INT64_MAX;
      auto pe = process_exit_.find(th.pid);
      if (pe != process_exit_.end() && pe->second >= th.last) gone = pe->second;
      // A round of its process after it was last seen that did not list it; or,
      // the process gone, any later round.
      auto r = rounds.find(th.pid);
      int64_t round = r != rounds.end() ? next_after(r->second, seen) : INT64_MAX;
      if (round == INT64_MAX) round = next_after(all_rounds, seen);
      gone = std::min(gone, round);
      // Its process exited before the recording ended (strata record saw it):
      // the thread ended by then; when exactly is not known, so at its last sign.
      if (gone == INT64_MAX && ctx_.ManifestExitedPids().count(th.pid)) gone = seen;
      if (gone == INT64_MAX) {
        ++alive;
        Close(th, end_, /*exited=*/false);
      } else {
        ++inferred;
        Close(th, std::max(gone, th.last), /*exited=*/true);
      }
    }
    if (alive > 0)
      ctx_.Warn(std::to_string(alive) +
                " threads were still running when the command exited; the OS level stops following them there");
    if (inferred > 0)
      ctx_.Warn(std::to_string(inferred) +
                " threads have no exit record (lost with kernel records, or not seen): their end is taken from their "
                "process's exit or from /proc no longer listing them");
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
    if (e.pid == e.tid) process_exit_[e.pid] = e.ts;  // exit_group: every thread is gone by now
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
        // process_stat: rss, vm, rchar, wchar, read_bytes, write_bytes, minflt, majflt, threads.
        // A process with no address space has exited between the sampler's
        // reads (a zombie's /proc/PID/stat says rss 0, vm 0): no sample.
        if (s.v[1] == 0) continue;
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
  LossWindows loss_;
  std::unordered_map<uint32_t, int64_t> process_exit_;
  int64_t end_ = INT64_MIN;
  uint64_t unmatched_exits_ = 0;
};


}  // namespace

void ReplayOs(LoadContext& ctx, OsState& st) { Replay(ctx, st).Run(); }

}  // namespace strata::importers::strata_ctf

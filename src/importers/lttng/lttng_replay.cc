// Replays an LTTng trace's events in time order (the muxer's order) into the
// model, the way importers/strata/os_replay.cc does for strata's own OS level:
// per-thread on/off-CPU intervals from sched_switch, system calls paired per
// thread, and the losses that make parts of them unknown.
#include "importers/lttng/lttng_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "importers/common/loss_windows.h"
#include "importers/common/process_tracker.h"
#include "importers/os_tables_sort.h"

namespace strata::importers::lttng {
namespace {

using model::ThreadState;

constexpr uint8_t kReturnLost = 2;  // SyscallTable::returned: a loss fell between entry and exit
// Nesting kept per CPU (interrupts) and per thread (functions, user spans):
// deeper is a broken trace (lost exits), and a fuzzed one must stay bounded.
constexpr size_t kMaxStack = 256;
constexpr size_t kMaxLossWarnings = 8;

std::string_view Basename(std::string_view p) {
  size_t s = p.rfind('/');
  return s == std::string_view::npos ? p : p.substr(s + 1);
}

// prev_state of sched_switch, as strata's own OS level reads it (os_replay.cc):
// bits 0x1 S, 0x2 D, 0x4 T, 0x8 t, 0x80 I (TASK_REPORT); a preempted task
// reports only bits above 0xff (TASK_REPORT_MAX / TASK_STATE_MAX). LTTng-modules
// writes the task's raw state on some kernels, where an idle kernel thread
// (TASK_IDLE) is D plus TASK_NOLOAD (0x400): that is sleep, not disk wait.
ThreadState StateOf(int64_t prev_state) {
  if ((prev_state & 0x402) == 0x402) return ThreadState::kSleeping;
  int64_t s = prev_state & 0xff;
  if (s == 0) return ThreadState::kRunnable;
  if (s & 0x2) return ThreadState::kDiskSleep;
  if (s & 0x1) return ThreadState::kSleeping;
  if (s & 0xc) return ThreadState::kStopped;
  if (s & 0x80) return ThreadState::kSleeping;
  return ThreadState::kBlocked;
}

class Replay {
 public:
  Replay(const LttngEvents& in, model::Trace& t) : in_(in), t_(t) {}

  void Run() {
    for (const Event& e : in_.events) {
      if (e.ts == 0) continue;
      start_ = std::min(start_, e.ts);
      end_ = std::max(end_, e.ts);
    }
    if (start_ > end_) start_ = end_ = 0;
    LearnThreads();
    BuildLossWindows();
    for (const Event& e : in_.events) {
      switch (e.type) {
        case Ev::kSwitch: OnSwitch(e); break;
        case Ev::kWakeup: OnWakeup(e); break;
        case Ev::kFork: OnFork(e); break;
        case Ev::kExec: OnExec(e); break;
        case Ev::kExit: OnExit(e); break;
        case Ev::kStatedump: CpuTrack(e.cpu, true); break;
        case Ev::kSysEntry: OnSysEntry(e); break;
        case Ev::kSysExit: OnSysExit(e); break;
        case Ev::kIrqEntry:
        case Ev::kSoftirqEntry: OnIrqEntry(e); break;
        case Ev::kIrqExit:
        case Ev::kSoftirqExit: OnIrqExit(e); break;
        case Ev::kKernelOther: t_.instants.Add(e.ts, CpuTrack(e.cpu, true), e.s1); break;
        case Ev::kFuncEntry: OnFuncEntry(e); break;
        case Ev::kFuncExit: OnFuncExit(e); break;
        case Ev::kBinInfo: OnBinInfo(e); break;
        case Ev::kMessage: t_.instants.Add(e.ts, UserTrack(e), e.s1); break;
        case Ev::kUserEntry: OnUserEntry(e); break;
        case Ev::kUserExit: OnUserExit(e); break;
        case Ev::kUserPoint: AddArgs(t_.slices.Add(e.ts, 0, UserTrack(e), e.s1, model::SliceKind::kOther), e); break;
      }
    }
    EndAll();
    SortOsTables(t_);
    ReportLosses();
    if (unmatched_exits_)
      t_.warnings.push_back(fmt::format(
          "{} system call exits without their entry (calls that began before tracing, or lost events)", unmatched_exits_));
    if (unattributed_)
      t_.warnings.push_back(fmt::format(
          "{} kernel events before the first sched_switch of their CPU: whose they are is unknown (no tid context)",
          unattributed_));
  }

 private:
  struct Thread {
    uint32_t track = 0;
    enum { kNone, kOn, kOff } mode = kNone;
    int64_t first = 0;  // first seen
    int64_t since = 0;  // current interval's start
    int16_t cpu = -1;
    ThreadState off_state = ThreadState::kBlocked;
    int32_t off_sys = -1;  // the system call it left the CPU in
    int32_t waker = -1;
    int32_t sys_row = -1;  // the open system call
    bool created = false;
    bool exited = false;  // sched_process_exit seen: its next switch-out is its last
  };
  struct Open {
    int64_t ts;
    model::StringId name;
    int64_t key;        // irq: 0 hard, 1 soft; functions: the address; user spans: the name
    bool span = false;  // a user span (provider:X_entry), not a function
    uint32_t args = 0, nargs = 0;
  };
  struct Module {
    uint64_t base, size;
    std::string name;
  };

  // ---- processes, threads, tracks ----

  // Which process each tid is in, and names, from every event that says.
  void LearnThreads() {
    for (const Event& e : in_.events) {
      switch (e.type) {
        case Ev::kFork:
          if (e.b > 0 && e.c > 0) tid_pid_[static_cast<int32_t>(e.b)] = static_cast<int32_t>(e.c);
          if (e.b == e.c && e.a > 0) ppid_[static_cast<int32_t>(e.c)] = e.a;
          break;
        case Ev::kStatedump:
          if (e.a > 0 && e.b > 0) tid_pid_.emplace(static_cast<int32_t>(e.a), static_cast<int32_t>(e.b));
          if (e.a == e.b && e.c >= 0) ppid_.emplace(static_cast<int32_t>(e.b), e.c);
          if (e.a > 0 && e.s1) names_.emplace(static_cast<int32_t>(e.a), e.s1);
          break;
        default:
          if (e.tid > 0 && e.pid > 0) tid_pid_.emplace(e.tid, e.pid);
          break;
      }
    }
  }

  int32_t PidOf(int32_t tid) {
    auto it = tid_pid_.find(tid);
    return it == tid_pid_.end() ? tid : it->second;
  }

  uint32_t ProcessOf(int32_t pid) {
    bool fresh = false;
    uint32_t proc = procs_.Process(pid, 0, &fresh);
    if (fresh) {
      model::Process& p = t_.processes[proc];
      auto pp = ppid_.find(pid);
      if (pp != ppid_.end()) p.ppid = pp->second;
      auto n = names_.find(pid);
      if (n != names_.end()) p.name = n->second;
    }
    return proc;
  }

  uint32_t ThreadTrack(int32_t pid, int32_t tid) {
    bool fresh = false;
    uint32_t track = procs_.Track(ProcessOf(pid), model::TrackKind::kThread, tid, model::kNone, &fresh);
    if (fresh) {
      auto n = names_.find(tid);
      if (n != names_.end()) t_.tracks[track].name = n->second;
    }
    return track;
  }

  // The CPU's track (cpu -1: events whose CPU is unknown). `event`: count one event on it.
  uint32_t CpuTrack(int16_t cpu, bool event) {
    uint32_t track = procs_.CpuTrack(cpu);
    if (event) ++t_.tracks[track].events;
    return track;
  }

  Thread& ThreadOf(int32_t tid, int64_t ts) {
    auto [it, fresh] = threads_.try_emplace(tid);
    if (fresh) {
      it->second.track = ThreadTrack(PidOf(tid), tid);
      it->second.first = ts;
    }
    return it->second;
  }

  void Name(Thread& th, int32_t tid, model::StringId name) {
    if (!name) return;
    model::Track& trk = t_.tracks[th.track];
    trk.name = name;
    model::Process& p = t_.processes[trk.process];
    if (p.pid == tid && !p.name) p.name = name;
  }

  // The thread a kernel event happened in: its tid context, else the CPU's current thread.
  int32_t CurrentTid(const Event& e) {
    if (e.tid >= 0) return e.tid;
    auto it = cpu_cur_.find(e.cpu);
    return it == cpu_cur_.end() ? -1 : it->second;
  }

  // Track of a user-space event: its vtid's; without one, the thread the kernel
  // trace says ran on its CPU then; else the CPU's.
  uint32_t UserTrack(const Event& e) {
    int32_t tid = e.tid;
    int32_t pid = e.pid;
    if (tid < 0) {
      auto it = cpu_cur_.find(e.cpu);
      if (it != cpu_cur_.end() && it->second > 0) tid = it->second;
    }
    if (tid <= 0) return CpuTrack(e.cpu, true);
    uint32_t trk = ThreadTrack(pid > 0 ? pid : PidOf(tid), tid);
    ++t_.tracks[trk].events;
    return trk;
  }

  // ---- scheduling ----

  void AddState(Thread& th, int64_t from, int64_t to, ThreadState s, int16_t cpu, int32_t sys, int32_t waker,
                int16_t loss_cpu = -1) {
    if (to <= from) return;
    if (loss_.Crosses(from, to, loss_cpu)) {
      s = ThreadState::kUnknown;
      cpu = -1;
      sys = waker = -1;
    }
    uint32_t r = t_.thread_states.Add(from, to - from, th.track, s, cpu);
    t_.thread_states.syscall[r] = sys;
    t_.thread_states.waker[r] = waker;
  }

  // Ends the thread's current interval at `ts`.
  void CloseInterval(Thread& th, int64_t ts) {
    if (th.mode == Thread::kOn) AddState(th, th.since, ts, ThreadState::kRunning, th.cpu, -1, -1, th.cpu);
    else if (th.mode == Thread::kOff) AddState(th, th.since, ts, th.off_state, th.cpu, th.off_sys, th.waker);
    else AddState(th, th.first, ts, th.created ? ThreadState::kRunnable : ThreadState::kUnknown, -1, -1, -1);
  }

  void OnSwitch(const Event& e) {
    uint32_t cpu_track = CpuTrack(e.cpu, true);
    (void)cpu_track;
    auto prev = static_cast<int32_t>(e.a), next = static_cast<int32_t>(e.b);
    if (prev > 0) {
      Thread& p = ThreadOf(prev, e.ts);
      Name(p, prev, e.s1);
      if (p.mode == Thread::kNone) {
        // Running when the trace began on this CPU (or when it was first seen).
        auto cf = cpu_first_.find(e.cpu);
        int64_t from = std::max(p.first, cf != cpu_first_.end() ? cf->second : e.ts);
        AddState(p, from, e.ts, ThreadState::kRunning, e.cpu, -1, -1, e.cpu);
      } else {
        CloseInterval(p, e.ts);
      }
      if (p.exited) {
        threads_.erase(prev);  // a later thread with this tid starts afresh
      } else {
        p.mode = Thread::kOff;
        p.since = e.ts;
        p.cpu = e.cpu;
        p.off_state = StateOf(e.c);
        p.off_sys = p.sys_row;
        p.waker = -1;
      }
    }
    if (next > 0) {
      Thread& n = ThreadOf(next, e.ts);
      Name(n, next, e.s2);
      CloseInterval(n, e.ts);
      n.mode = Thread::kOn;
      n.since = e.ts;
      n.cpu = e.cpu;
    }
    cpu_first_.try_emplace(e.cpu, e.ts);
    cpu_cur_[e.cpu] = next;
  }

  void OnWakeup(const Event& e) {
    CpuTrack(e.cpu, true);
    int32_t waker = CurrentTid(e);
    uint32_t waker_track = waker > 0 ? ThreadOf(waker, e.ts).track : 0;
    if (e.a <= 0) return;
    Thread& th = ThreadOf(static_cast<int32_t>(e.a), e.ts);
    // sched_waking runs in the waker; sched_wakeup may run later on the target's
    // CPU: the first of the two names the waker.
    if (th.mode == Thread::kOff && th.waker < 0 && waker > 0) th.waker = static_cast<int32_t>(waker_track);
  }

  void OnFork(const Event& e) {
    CpuTrack(e.cpu, true);
    if (e.b <= 0) return;
    Thread& ch = ThreadOf(static_cast<int32_t>(e.b), e.ts);
    if (ch.mode == Thread::kNone) {
      ch.created = true;
      ch.first = e.ts;
    }
    Name(ch, static_cast<int32_t>(e.b), e.s1);
  }

  void OnExec(const Event& e) {
    CpuTrack(e.cpu, true);
    int32_t tid = e.a > 0 ? static_cast<int32_t>(e.a) : CurrentTid(e);
    if (tid <= 0 || !e.s1) return;
    Thread& th = ThreadOf(tid, e.ts);
    model::StringId name = t_.strings.Intern(Basename(t_.strings.Get(e.s1)));
    t_.tracks[th.track].name = name;
    model::Process& p = t_.processes[t_.tracks[th.track].process];
    p.name = name;
    if (!p.cmdline) p.cmdline = e.s1;
  }

  void OnExit(const Event& e) {
    CpuTrack(e.cpu, true);
    int32_t tid = e.a > 0 ? static_cast<int32_t>(e.a) : CurrentTid(e);
    auto it = threads_.find(tid);
    if (it == threads_.end()) return;
    // It still runs until its last switch; what follows is its death, not sleep.
    Thread& th = it->second;
    if (th.sys_row >= 0) EndUnreturned(static_cast<size_t>(th.sys_row), e.ts);
    th.sys_row = -1;
    th.exited = true;
  }

  // ---- system calls ----

  // The thread a system-call event ran on, or nullptr (counted when the CPU's
  // thread is unknown).
  Thread* SyscallThread(const Event& e) {
    CpuTrack(e.cpu, true);
    int32_t tid = CurrentTid(e);
    if (tid <= 0) {
      unattributed_ += tid < 0;
      return nullptr;
    }
    return &ThreadOf(tid, e.ts);
  }

  void OnSysEntry(const Event& e) {
    Thread* thread = SyscallThread(e);
    if (!thread) return;
    Thread& th = *thread;
    if (th.sys_row >= 0) EndUnreturned(static_cast<size_t>(th.sys_row), e.ts);
    auto& s = t_.syscalls;
    s.ts.push_back(e.ts);
    s.dur.push_back(0);
    s.track.push_back(th.track);
    s.name.push_back(e.s1);
    s.nr.push_back(static_cast<uint32_t>(e.a));
    s.ret.push_back(0);
    s.returned.push_back(0);
    th.sys_row = static_cast<int32_t>(s.size() - 1);
  }

  void OnSysExit(const Event& e) {
    Thread* thread = SyscallThread(e);
    if (!thread) return;
    Thread& th = *thread;
    auto& s = t_.syscalls;
    if (th.sys_row < 0 || s.name[static_cast<size_t>(th.sys_row)] != e.s1) {
      ++unmatched_exits_;
      return;
    }
    auto r = static_cast<size_t>(th.sys_row);
    th.sys_row = -1;
    if (loss_.Crosses(s.ts[r], e.ts)) {
      s.returned[r] = kReturnLost;
      return;
    }
    s.dur[r] = e.ts - s.ts[r];
    s.ret[r] = e.b;
    s.returned[r] = 1;
  }

  void EndUnreturned(size_t r, int64_t ts) {
    auto& s = t_.syscalls;
    if (loss_.Crosses(s.ts[r], ts)) {
      s.returned[r] = kReturnLost;
      s.dur[r] = 0;
    } else {
      s.dur[r] = ts - s.ts[r];
    }
  }

  // ---- interrupts ----

  void OnIrqEntry(const Event& e) {
    uint32_t trk = CpuTrack(e.cpu, true);
    auto& st = irq_[trk];
    if (st.size() < kMaxStack) st.push_back({e.ts, e.s1, e.type == Ev::kSoftirqEntry ? 1 : 0});
  }

  void OnIrqExit(const Event& e) {
    uint32_t trk = CpuTrack(e.cpu, true);
    auto& st = irq_[trk];
    int64_t kind = e.type == Ev::kSoftirqExit ? 1 : 0;
    if (st.empty() || st.back().key != kind) return;  // entered before the trace began
    t_.slices.Add(st.back().ts, e.ts - st.back().ts, trk, st.back().name, model::SliceKind::kOther);
    st.pop_back();
  }

  // ---- user space ----

  void OnBinInfo(const Event& e) {
    UserTrack(e);
    if (e.b <= 0 || !e.s1) return;
    modules_[e.pid].push_back({static_cast<uint64_t>(e.a), static_cast<uint64_t>(e.b),
                               std::string(Basename(t_.strings.Get(e.s1)))});
  }

  model::StringId Symbol(int32_t pid, uint64_t addr) {
    auto key = std::make_pair(pid, addr);
    auto it = symbols_.find(key);
    if (it != symbols_.end()) return it->second;
    std::string name = fmt::format("{:#x}", addr);
    auto m = modules_.find(pid);
    if (m != modules_.end())
      for (const Module& mod : m->second)
        if (addr >= mod.base && addr - mod.base < mod.size) name = fmt::format("{}+{:#x}", mod.name, addr - mod.base);
    return symbols_[key] = t_.strings.Intern(name);
  }

  void OnFuncEntry(const Event& e) {
    uint32_t trk = UserTrack(e);
    auto& st = user_[trk];
    if (st.size() < kMaxStack) st.push_back({e.ts, Symbol(e.pid, static_cast<uint64_t>(e.a)), e.a});
  }

  void OnFuncExit(const Event& e) {
    uint32_t trk = UserTrack(e);
    auto& st = user_[trk];
    // The innermost open call of this function; calls above it lost their exits.
    for (size_t k = st.size(); k-- > 0;) {
      if (st[k].span || st[k].key != e.a) continue;
      t_.slices.Add(st[k].ts, e.ts - st[k].ts, trk, st[k].name, model::SliceKind::kSpan);
      st.resize(k);
      return;
    }
  }

  void AddArgs(uint32_t slice, const Event& e) { AddArgs(slice, e.args, e.nargs); }
  void AddArgs(uint32_t slice, uint32_t first, uint32_t n) {
    for (uint32_t k = first; k < first + n; ++k) t_.args.Add(slice, in_.arg_key[k], in_.arg_str[k], in_.arg_num[k]);
  }

  // User spans share the thread's stack with functions (they nest with them).
  void OnUserEntry(const Event& e) {
    uint32_t trk = UserTrack(e);
    auto& st = user_[trk];
    if (st.size() < kMaxStack) st.push_back({e.ts, e.s1, e.s1, true, e.args, e.nargs});
  }

  void OnUserExit(const Event& e) {
    uint32_t trk = UserTrack(e);
    auto& st = user_[trk];
    for (size_t k = st.size(); k-- > 0;) {
      if (!st[k].span || st[k].key != e.s1) continue;
      AddArgs(t_.slices.Add(st[k].ts, e.ts - st[k].ts, trk, st[k].name, model::SliceKind::kSpan), st[k].args,
              st[k].nargs);
      st.resize(k);
      return;
    }
    // An exit whose entry came before the trace: a point where it returned.
    t_.slices.Add(e.ts, 0, trk, t_.strings.Intern(std::string(t_.strings.Get(e.s1)) + "_exit"),
                  model::SliceKind::kOther);
  }

  // ---- the end ----

  void EndAll() {
    int64_t end = end_;
    for (auto& [tid, th] : threads_) {
      CloseInterval(th, end);
      if (th.sys_row >= 0) {
        // Exits, execs that replaced the image, or still blocked at the end.
        EndUnreturned(static_cast<size_t>(th.sys_row), end);
        th.sys_row = -1;
      }
    }
    for (auto& [trk, st] : irq_)
      for (const Open& o : st) t_.slices.Add(o.ts, end - o.ts, trk, o.name, model::SliceKind::kOther);
    for (auto& [trk, st] : user_)
      for (const Open& o : st) {
        uint32_t s = t_.slices.Add(o.ts, end - o.ts, trk, o.name, model::SliceKind::kSpan);
        if (o.span) AddArgs(s, o.args, o.nargs);
      }
  }

  // ---- losses ----

  // Kernel losses only: they hide scheduling and system-call events. A window
  // runs from the stream's last event kept to its first after the gap.
  void BuildLossWindows() {
    for (const Loss& l : in_.losses) {
      if (!l.kernel) continue;
      int64_t from = l.from, to = l.to;
      if (from == 0 && to == 0) from = INT64_MIN, to = INT64_MAX;  // no clock: anywhere
      loss_.Add(in_.streams[l.stream].cpu, from, to);
    }
    loss_.Seal();
  }

  std::string When(int64_t ns) const {
    return fmt::format("{:.6f} s", static_cast<double>(ns - start_) / 1e9);
  }

  void ReportLosses() {
    uint64_t events = 0, packets = 0, records = 0;
    for (const Loss& l : in_.losses) {
      const StreamDesc& s = in_.streams[l.stream];
      if (l.packets) packets += l.count;
      else events += l.count;
      if (s.kernel && !l.packets) t_.tracks[CpuTrack(s.cpu, false)].lost += l.count;
      if (s.cpu >= 0 || s.kernel)
        t_.instants.Add(l.from ? l.from : start_, CpuTrack(s.cpu, false),
                        t_.strings.Intern(l.packets ? "LTTng: discarded packets" : "LTTng: discarded events"));
      if (++records > kMaxLossWarnings) continue;
      std::string count = l.count ? std::to_string(l.count) : std::string("an unknown number of");
      std::string where = fmt::format("stream {} of trace {}", Basename(s.name), s.trace.empty() ? "?" : s.trace);
      if (s.cpu >= 0) where += fmt::format(" (CPU {})", s.cpu);
      std::string span = l.from || l.to ? fmt::format(" between {} and {} of the trace", When(l.from), When(l.to)) : "";
      t_.warnings.push_back(fmt::format("LTTng: the tracer discarded {} {} in {}{}{}", count,
                                        l.packets ? "packets" : "events", where, span,
                                        s.kernel ? ": thread states and system calls across that gap are unknown" : ""));
    }
    if (records > kMaxLossWarnings)
      t_.warnings.push_back(fmt::format("LTTng: {} more discarded-events/packets records", records - kMaxLossWarnings));
    t_.events_lost += events;
    if (packets)
      t_.warnings.push_back(fmt::format("LTTng: {} packets were discarded in all (their events are not counted as lost: "
                                        "how many they held is unknown)",
                                        packets));
  }

  const LttngEvents& in_;
  model::Trace& t_;
  int64_t start_ = INT64_MAX, end_ = INT64_MIN;
  std::unordered_map<int32_t, int32_t> tid_pid_;
  std::unordered_map<int32_t, int64_t> ppid_;
  std::unordered_map<int32_t, model::StringId> names_;
  ProcessTracker procs_{t_};
  std::unordered_map<int32_t, Thread> threads_;
  std::unordered_map<int16_t, int32_t> cpu_cur_;
  std::unordered_map<int16_t, int64_t> cpu_first_;
  std::unordered_map<uint32_t, std::vector<Open>> irq_, user_;
  std::unordered_map<int32_t, std::vector<Module>> modules_;
  std::map<std::pair<int32_t, uint64_t>, model::StringId> symbols_;
  LossWindows loss_;
  uint64_t unmatched_exits_ = 0;
  uint64_t unattributed_ = 0;
};

}  // namespace

void ReplayLttng(const LttngEvents& in, model::Trace& t) { Replay(in, t).Run(); }

}  // namespace strata::importers::lttng

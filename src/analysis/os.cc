#include "analysis/os.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "analysis/summary.h"
#include "base/int_math.h"
#include "base/intervals.h"

namespace strata::analysis {
namespace {

using model::ThreadState;

std::string Str(const model::Trace& t, model::StringId id) { return std::string(t.strings.Get(id)); }

std::string ThreadLabel(const model::Trace& t, uint32_t track) {
  const model::Track& trk = t.tracks[track];
  std::string name = Str(t, trk.name);
  return (name.empty() ? "tid" : name) + " " + std::to_string(trk.tid);
}

// Rows of a (track, ts)-sorted table, per track.
template <typename Table>
std::vector<std::pair<uint32_t, uint32_t>> RangesByTrack(const Table& tb, size_t tracks) {
  std::vector<std::pair<uint32_t, uint32_t>> r(tracks, {0, 0});
  for (uint32_t i = 0; i < tb.size();) {
    uint32_t trk = tb.track[i], j = i;
    while (j < tb.size() && tb.track[j] == trk) ++j;
    if (trk < tracks) r[trk] = {i, j};
    i = j;
  }
  return r;
}

bool IsIoCategory(const std::string& c) { return c == "io" || c == "poll"; }

std::string FrameLabel(const model::Trace& t, uint32_t frame) {
  std::string f = Str(t, t.frames.function[frame]);
  std::string m = Str(t, t.frames.module[frame]);
  if (t.frames.kind[frame] == model::FrameKind::kPython) {
    auto slash = m.rfind('/');
    return f + " (" + (slash == std::string::npos ? m : m.substr(slash + 1)) + ":" + std::to_string(t.frames.line[frame]) + ")";
  }
  if (f == "[unknown]" && !m.empty() && m != "[unknown]") return "[" + m + "]";
  return f;
}

// "__GI___clock_nanosleep" -> "clock_nanosleep", "__libc_read" -> "read": the
// libc wrapper a thread blocked in, named like the system call it makes.
std::string WrapperName(std::string f) {
  for (bool again = true; again;) {
    again = false;
    for (const char* p : {"__GI_", "__libc_", "__"})
      if (f.rfind(p, 0) == 0 && f.size() > std::strlen(p)) {
        f = f.substr(std::strlen(p));
        again = true;
      }
  }
  // Versioned aliases: __clock_nanosleep_2.
  size_t u = f.rfind('_');
  if (u != std::string::npos && u + 1 < f.size() && f.find_first_not_of("0123456789", u + 1) == std::string::npos)
    f = f.substr(0, u);
  return f;
}

// The kind of wait a blocking function name suggests (no syscall was traced).
std::string WaitCategory(const std::string& f) {
  auto has = [&f](const char* k) { return f.find(k) != std::string::npos; };
  if (has("sleep") || has("pause")) return "sleep";  // before "lock": clock_nanosleep
  if (has("futex") || has("mutex") || has("cond") || has("sem_") || has("lll_lock") || has("_lock") || has("spin"))
    return "lock";
  if (has("poll") || has("select")) return "poll";
  if (has("wait4") || has("waitpid") || has("waitid")) return "wait";
  if (has("read") || has("write") || has("recv") || has("send") || has("accept") || has("connect") || has("sync") ||
      has("io_") || has("ioctl") || has("splice") || has("open") || has("stat"))
    return "io";
  return "blocked";
}

}  // namespace

std::string FunctionLabel(const model::Trace& t, uint32_t frame) {
  if (t.frames.kind[frame] != model::FrameKind::kPython || t.frames.pc[frame] == 0) return "";
  std::string m = Str(t, t.frames.module[frame]);
  auto slash = m.rfind('/');
  return Str(t, t.frames.function[frame]) + " (" + (slash == std::string::npos ? m : m.substr(slash + 1)) + ":" +
         std::to_string(t.frames.pc[frame]) + ")";
}


std::string SyscallCategory(std::string_view n) {
  static const std::unordered_map<std::string_view, const char*> kMap = {
      {"futex", "lock"}, {"futex_wait", "lock"}, {"futex_waitv", "lock"}, {"futex_requeue", "lock"},
      {"semop", "lock"}, {"semtimedop", "lock"}, {"flock", "lock"},
      {"nanosleep", "sleep"}, {"clock_nanosleep", "sleep"}, {"pause", "sleep"}, {"rt_sigsuspend", "sleep"},
      {"rt_sigtimedwait", "sleep"}, {"sched_yield", "sleep"},
      {"read", "io"}, {"write", "io"}, {"pread64", "io"}, {"pwrite64", "io"}, {"readv", "io"}, {"writev", "io"},
      {"preadv", "io"}, {"pwritev", "io"}, {"preadv2", "io"}, {"pwritev2", "io"}, {"recvfrom", "io"},
      {"recvmsg", "io"}, {"recvmmsg", "io"}, {"sendto", "io"}, {"sendmsg", "io"}, {"sendmmsg", "io"},
      {"accept", "io"}, {"accept4", "io"}, {"connect", "io"}, {"fsync", "io"}, {"fdatasync", "io"},
      {"sync_file_range", "io"}, {"io_getevents", "io"}, {"io_pgetevents", "io"}, {"io_uring_enter", "io"},
      {"splice", "io"}, {"sendfile", "io"}, {"copy_file_range", "io"}, {"openat", "io"}, {"open", "io"},
      {"ioctl", "io"}, {"msync", "io"},
      {"poll", "poll"}, {"ppoll", "poll"}, {"select", "poll"}, {"pselect6", "poll"}, {"epoll_wait", "poll"},
      {"epoll_pwait", "poll"}, {"epoll_pwait2", "poll"},
      {"wait4", "wait"}, {"waitid", "wait"},
  };
  auto it = kMap.find(n);
  return it == kMap.end() ? "syscall" : it->second;
}

OffCpuCause OffCpuCauseOf(const model::Trace& t, size_t row) {
  OffCpuCause c;
  const auto& ts = t.thread_states;
  ThreadState s = ts.state[row];
  if (s == ThreadState::kRunnable) {
    c.cause = "preempted";
    c.category = "preempted";
  } else if (ts.syscall[row] >= 0) {
    c.cause = Str(t, t.syscalls.name[static_cast<size_t>(ts.syscall[row])]);
    c.category = SyscallCategory(c.cause);
    if (s == ThreadState::kDiskSleep) c.cause += " (D)";
  } else if (ts.callsite[row] >= 0) {
    // No syscall trace, but the user stack it blocked in: its innermost native frame.
    int32_t k = ts.callsite[row];
    while (k >= 0 && t.frames.kind[t.callsites.frame[static_cast<size_t>(k)]] != model::FrameKind::kNative)
      k = t.callsites.parent[static_cast<size_t>(k)];
    std::string f = k >= 0 ? Str(t, t.frames.function[t.callsites.frame[static_cast<size_t>(k)]]) : "[unknown]";
    c.cause = "in " + WrapperName(f);
    c.category = WaitCategory(c.cause);
    if (s == ThreadState::kDiskSleep) {
      c.cause += " (D)";
      if (c.category == "blocked") c.category = "disk";  // uninterruptible: a page fault or disk I/O
    }
  } else if (s == ThreadState::kSleeping) {
    c.cause = "sleeping (S)";
    c.category = "blocked";
  } else if (s == ThreadState::kDiskSleep) {
    c.cause = "disk sleep (D)";
    c.category = "disk";
  } else if (s == ThreadState::kStopped) {
    c.cause = "stopped";
    c.category = "stopped";
  } else if (s == ThreadState::kUnknown) {
    c.cause = "unknown";
    c.category = "unknown";
  } else {
    c.cause = "blocked";
    c.category = "blocked";
  }
  return c;
}

bool IsStrataThread(const model::Trace& t, uint32_t track) {
  if (track >= t.tracks.size() || t.tracks[track].kind != model::TrackKind::kThread) return false;
  return t.strings.Get(t.tracks[track].name).rfind("strata-", 0) == 0;
}

OsSummary AnalyzeOs(const model::Trace& t) {
  OsSummary o;
  std::vector<uint8_t> own(t.tracks.size(), 0);
  for (uint32_t k = 0; k < t.tracks.size(); ++k) {
    own[k] = IsStrataThread(t, k);
    if (t.tracks[k].kind == model::TrackKind::kCpu) o.lost_records += t.tracks[k].lost;
  }
  auto is_own = [&own](uint32_t trk) { return trk < own.size() && own[trk]; };
  const auto& st = t.thread_states;
  const auto& sc = t.syscalls;
  const auto& cs = t.cpu_samples;
  o.has_sched = st.size() > 0;
  o.has_syscalls = sc.size() > 0;
  o.has_samples = cs.size() > 0;
  o.samples = cs.size();
  o.page_faults = t.page_faults.size();
  o.block_requests = t.block_io.size();
  for (uint32_t b : t.block_io.bytes) o.block_bytes += b;

  // ---- per thread ----
  std::map<uint32_t, ThreadOs> by_track;
  auto thread = [&](uint32_t trk) -> ThreadOs& {
    auto [it, fresh] = by_track.try_emplace(trk);
    if (fresh) {
      ThreadOs& x = it->second;
      x.track = trk;
      const model::Track& tr = t.tracks[trk];
      x.process = ProcessLabel(t, tr.process);
      x.thread = ThreadLabel(t, trk);
      x.pid = tr.process < t.processes.size() ? t.processes[tr.process].pid : 0;
      x.tid = tr.tid;
    }
    return it->second;
  };
  std::map<std::pair<uint32_t, std::string>, OffCpuCause> thread_causes;
  std::map<uint32_t, std::map<uint32_t, uint64_t>> wakers;
  std::map<std::string, OffCpuCause> all_causes;
  for (size_t i = 0; i < st.size(); ++i) {
    ThreadOs& x = thread(st.track[i]);
    int64_t d = st.dur[i];
    if (st.state[i] == ThreadState::kRunning) {
      x.on_cpu_ns += d;
      continue;
    }
    if (st.state[i] == ThreadState::kUnknown) {
      x.unknown_ns += d;
      continue;
    }
    OffCpuCause c = OffCpuCauseOf(t, i);
    bool mine = is_own(st.track[i]);
    if (st.waker[i] >= 0) ++wakers[st.track[i]][static_cast<uint32_t>(st.waker[i])];
    x.off_cpu_ns += d;
    ++x.switches;
    if (st.state[i] == ThreadState::kRunnable) {
      x.runnable_ns += d;
      ++x.preemptions;
    } else {
      x.blocked_ns += d;
      if (c.category == "lock") x.lock_ns += d;
    }
    OffCpuCause* aggs[2] = {&thread_causes[{st.track[i], c.cause}], mine ? nullptr : &all_causes[c.cause]};
    for (OffCpuCause* agg : aggs) {
      if (!agg) continue;
      if (agg->count == 0) {
        agg->cause = c.cause;
        agg->category = c.category;
      }
      ++agg->count;
      agg->total_ns += d;
      agg->max_ns = std::max(agg->max_ns, d);
    }
  }
  for (auto& [key, c] : thread_causes) thread(key.first).causes.push_back(c);
  for (auto& [trk, m] : wakers) {
    std::vector<std::pair<std::string, uint64_t>> v;
    for (auto& [w, n] : m) v.emplace_back(ThreadLabel(t, w), n);
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (v.size() > 5) v.resize(5);
    thread(trk).wakers = std::move(v);
  }
  for (auto& [k, c] : all_causes) o.off_cpu.push_back(c);
  auto by_total = [](const OffCpuCause& a, const OffCpuCause& b) { return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.cause < b.cause; };
  std::sort(o.off_cpu.begin(), o.off_cpu.end(), by_total);

  // ---- syscalls ----
  std::map<model::StringId, std::vector<int64_t>> durs;
  std::map<model::StringId, SyscallStats> calls;
  for (size_t i = 0; i < sc.size(); ++i) {
    ThreadOs& x = thread(sc.track[i]);
    ++x.syscalls;
    x.syscall_ns = SatAdd(x.syscall_ns, sc.dur[i]);
    if (is_own(sc.track[i])) continue;
    SyscallStats& s = calls[sc.name[i]];
    ++s.count;
    if (sc.returned[i] == 2) {  // unpaired across a loss: no duration
      ++s.incomplete;
      ++o.incomplete_syscalls;
      continue;
    }
    if (!sc.returned[i]) ++s.unfinished;
    else if (sc.ret[i] < 0 && sc.ret[i] >= -4095) ++s.errors;
    s.total_ns = SatAdd(s.total_ns, sc.dur[i]);
    durs[sc.name[i]].push_back(sc.dur[i]);
  }
  for (auto& [name, s] : calls) {
    s.name = Str(t, name);
    Distribution d = Distribute(std::move(durs[name]));
    s.mean_ns = d.mean;
    s.p50_ns = d.p50;
    s.p99_ns = d.p99;
    s.max_ns = d.max;
    o.syscalls.push_back(s);
  }
  std::sort(o.syscalls.begin(), o.syscalls.end(), [](const SyscallStats& a, const SyscallStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });

  // ---- samples ----
  static const std::string kImporting = "(importing modules)";
  std::map<std::pair<model::StringId, model::StringId>, FunctionSamples> funcs, pyfuncs;
  std::map<std::pair<int, model::StringId>, std::map<std::string, uint64_t>> op_funcs;
  std::map<uint32_t, std::map<std::string, uint64_t>> thread_funcs;
  std::unordered_set<uint64_t> seen;
  o.samples = 0;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (is_own(cs.track[i])) {
      thread(cs.track[i]).samples++;
      continue;
    }
    ++o.samples;
    int32_t c = cs.callsite[i];
    std::string leaf = "[unknown]";
    if (c >= 0) {
      uint32_t lf = t.callsites.frame[static_cast<size_t>(c)];
      leaf = FrameLabel(t, lf);
      seen.clear();
      bool python_leaf_seen = false, importing = false;
      for (int32_t k = c; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
        uint32_t f = t.callsites.frame[static_cast<size_t>(k)];
        auto key = std::make_pair(t.frames.function[f], t.frames.module[f]);
        uint64_t h = (uint64_t{key.first} << 32) | key.second;
        bool python = t.frames.kind[f] == model::FrameKind::kPython;
        for (auto* table : {&funcs, &pyfuncs}) {
          if (table == &pyfuncs && !python) continue;
          FunctionSamples& fs = (*table)[key];
          if (fs.total == 0 && fs.self == 0) {
            fs.function = FunctionLabel(t, f);
            if (fs.function.empty()) fs.function = FrameLabel(t, f);
            fs.module = Str(t, key.second);
            fs.kind = model::FrameKindName(t.frames.kind[f]);
          }
          if (!seen.count(h)) ++fs.total;  // recursion counts once
          if (table == &funcs ? k == c : !python_leaf_seen) ++fs.self;
        }
        seen.insert(h);
        if (python && !python_leaf_seen) {
          python_leaf_seen = true;
          leaf = FrameLabel(t, f);
        }
        // Importing modules (torch's import is seconds of a short run) is
        // start-up: one label for all of importlib's frames, not the frame
        // that happened to be innermost.
        if (python && !importing) {
          std::string_view m = t.strings.Get(t.frames.module[f]);
          importing = m.find("importlib") != std::string_view::npos;
        }
      }
      if (importing) leaf = kImporting;
      if (python_leaf_seen) ++o.python_samples;
    }
    thread(cs.track[i]).samples++;
    ++thread_funcs[cs.track[i]][leaf];
    int32_t s = t.SliceAt(cs.track[i], cs.ts[i]);
    std::pair<int, model::StringId> key = s >= 0 ? std::make_pair(static_cast<int>(t.slices.kind[static_cast<size_t>(s)]),
                                                                 t.slices.name[static_cast<size_t>(s)])
                                                 : std::make_pair(-1, model::StringId{0});
    ++op_funcs[key][leaf];
  }
  auto by_self = [](const FunctionSamples& a, const FunctionSamples& b) {
    return a.self != b.self ? a.self > b.self : a.total != b.total ? a.total > b.total : a.function < b.function;
  };
  for (auto& [k, f] : funcs) o.functions.push_back(f);
  std::sort(o.functions.begin(), o.functions.end(), by_self);
  for (auto& [k, f] : pyfuncs) o.python_functions.push_back(f);
  std::sort(o.python_functions.begin(), o.python_functions.end(), by_self);
  // The most sampled function (all the import machinery's frames count as one,
  // "(importing modules)"); an unsymbolized "[module]" frame only when nothing
  // else was sampled.
  auto top = [](const std::map<std::string, uint64_t>& m, std::string* name, uint64_t* n) {
    auto vague = [](const std::string& f) { return !f.empty() && f[0] == '['; };
    uint64_t total = 0;
    for (int pass = 0; pass < 2 && *n == 0; ++pass)
      for (auto& [f, c] : m)
        if ((pass == 1 || !vague(f)) && c > *n) {
          *n = c;
          *name = f;
        }
    for (auto& [f, c] : m) total += c;
    return total;
  };

  for (auto& [key, m] : op_funcs) {
    OpSamples op;
    op.name = key.first < 0 ? "(no span)" : Str(t, key.second);
    op.kind = key.first < 0 ? "" : model::SliceKindName(static_cast<model::SliceKind>(key.first));
    op.samples = top(m, &op.top_function, &op.top_function_samples);
    o.ops.push_back(op);
  }
  std::sort(o.ops.begin(), o.ops.end(), [](const OpSamples& a, const OpSamples& b) { return a.samples > b.samples; });
  for (auto& [trk, m] : thread_funcs) {
    ThreadSamples ts;
    ts.process = ProcessLabel(t, t.tracks[trk].process);
    ts.thread = ThreadLabel(t, trk);
    ts.tid = t.tracks[trk].tid;
    ts.samples = top(m, &ts.top_function, &ts.top_function_samples);
    ThreadOs& x = thread(trk);
    x.top_function = ts.top_function;
    x.top_function_samples = ts.top_function_samples;
    o.sample_threads.push_back(ts);
  }
  std::sort(o.sample_threads.begin(), o.sample_threads.end(),
            [](const ThreadSamples& a, const ThreadSamples& b) { return a.samples > b.samples; });

  for (auto& [trk, x] : by_track) {
    std::sort(x.causes.begin(), x.causes.end(), by_total);
    (is_own(trk) ? o.strata_threads : o.threads).push_back(std::move(x));
  }
  std::sort(o.threads.begin(), o.threads.end(), [](const ThreadOs& a, const ThreadOs& b) {
    int64_t ta = a.on_cpu_ns + a.off_cpu_ns, tb = b.on_cpu_ns + b.off_cpu_ns;
    return ta != tb ? ta > tb : a.tid < b.tid;
  });

  // ---- steps ----
  auto st_ranges = RangesByTrack(st, t.tracks.size());
  auto sc_ranges = RangesByTrack(sc, t.tracks.size());
  auto cs_ranges = RangesByTrack(cs, t.tracks.size());
  std::vector<std::vector<uint32_t>> process_tracks(t.processes.size());
  for (uint32_t k = 0; k < t.tracks.size(); ++k)
    if (t.tracks[k].kind == model::TrackKind::kThread && t.tracks[k].process < t.processes.size())
      process_tracks[t.tracks[k].process].push_back(k);
  // Intervals of a sorted, non-overlapping per-track table that overlap [a, b).
  auto rows_in = [](const auto& tb, std::pair<uint32_t, uint32_t> r, int64_t a, int64_t b, auto&& fn) {
    auto first = std::lower_bound(tb.ts.begin() + r.first, tb.ts.begin() + r.second, a);
    size_t i = static_cast<size_t>(first - tb.ts.begin());
    if (i > r.first) --i;  // the interval that began before a may reach into it
    for (; i < r.second && tb.ts[i] < b; ++i) fn(i);
  };
  if (o.has_sched || o.has_syscalls || o.has_samples) {
    std::vector<size_t> steps;
    for (size_t i = 0; i < t.slices.size(); ++i)
      if (t.slices.kind[i] == model::SliceKind::kStep) steps.push_back(i);
    std::sort(steps.begin(), steps.end(), [&t](size_t a, size_t b) { return t.slices.ts[a] < t.slices.ts[b]; });
    for (size_t i : steps) {
      StepOs so;
      so.step = t.slices.arg[i];
      so.ts = t.slices.ts[i];
      so.dur = t.slices.dur[i];
      int64_t a = so.ts, b = so.ts + so.dur;
      uint32_t trk = t.slices.track[i];
      so.thread = ThreadLabel(t, trk);
      if (trk < st_ranges.size()) {
        rows_in(st, st_ranges[trk], a, b, [&](size_t r) {
          int64_t d = Overlap(st.ts[r], st.ts[r] + st.dur[r], a, b);
          if (d == 0) return;
          ThreadState s = st.state[r];
          if (s == ThreadState::kRunning) so.on_cpu_ns += d;
          else if (s == ThreadState::kRunnable) so.runnable_ns += d;
          else if (s != ThreadState::kUnknown) {
            so.blocked_ns += d;
            std::string cat = OffCpuCauseOf(t, r).category;
            if (cat == "lock") so.lock_ns += d;
            if (IsIoCategory(cat)) so.io_ns += d;
          }
        });
        std::map<model::StringId, int64_t> per_call;
        rows_in(sc, sc_ranges[trk], a, b, [&](size_t r) {
          int64_t d = Overlap(sc.ts[r], sc.ts[r] + sc.dur[r], a, b);
          if (sc.ts[r] < a && d == 0) return;
          ++so.syscalls;
          so.syscall_ns += d;
          per_call[sc.name[r]] += d;
        });
        for (auto& [name, d] : per_call)
          if (d > so.top_syscall_ns) {
            so.top_syscall_ns = d;
            so.top_syscall = Str(t, name);
          }
        rows_in(cs, cs_ranges[trk], a, b, [&](size_t r) { so.samples += cs.ts[r] >= a; });
        uint32_t proc = t.tracks[trk].process;
        if (proc < process_tracks.size())
          for (uint32_t other : process_tracks[proc])
            if (!is_own(other))
              rows_in(st, st_ranges[other], a, b, [&](size_t r) {
              if (st.state[r] == ThreadState::kRunning) so.process_cpu_ns += Overlap(st.ts[r], st.ts[r] + st.dur[r], a, b);
            });
      }
      o.steps.push_back(std::move(so));
    }
  }
  return o;
}

std::string FoldedStacks(const model::Trace& t, const FoldedOptions& opt) {
  auto clean = [](std::string s) {
    for (char& ch : s)
      if (ch == ';' || ch == '\n' || ch == '\r') ch = ch == ';' ? ':' : ' ';
    return s;
  };
  std::map<std::string, uint64_t> lines;
  // Rows to fold: CPU samples (weight 1), or blocked intervals with the stack
  // they blocked in (weight: microseconds off CPU).
  struct Row {
    uint32_t track;
    int64_t ts;
    int32_t callsite;
    uint64_t weight;
  };
  std::vector<Row> rows;
  if (opt.off_cpu) {
    const auto& st = t.thread_states;
    for (size_t i = 0; i < st.size(); ++i)
      if (st.callsite[i] >= 0 && st.state[i] != model::ThreadState::kRunning && st.dur[i] >= 1000)
        rows.push_back({st.track[i], st.ts[i], st.callsite[i], static_cast<uint64_t>(st.dur[i] / 1000)});
  } else {
    const auto& cs = t.cpu_samples;
    for (size_t i = 0; i < cs.size(); ++i) rows.push_back({cs.track[i], cs.ts[i], cs.callsite[i], 1});
  }
  std::vector<std::string> parts;
  for (const Row& row : rows) {
    parts.clear();
    const model::Track& trk = t.tracks[row.track];
    if (opt.process_and_thread) {
      std::string pname;
      if (trk.process < t.processes.size()) {
        pname = Str(t, t.processes[trk.process].name);
        auto slash = pname.rfind('/');
        if (slash != std::string::npos) pname = pname.substr(slash + 1);
        pname += "-" + std::to_string(t.processes[trk.process].pid);
      }
      parts.push_back(clean(pname.empty() ? "?" : pname));
      std::string tname = Str(t, trk.name);
      parts.push_back(clean((tname.empty() ? "tid" : tname) + "-" + std::to_string(trk.tid)));
    }
    if (opt.spans) {
      std::vector<std::string> spans;
      for (int32_t s = t.SliceAt(row.track, row.ts); s >= 0; s = t.slices.parent[static_cast<size_t>(s)])
        spans.push_back("[" + std::string(model::SliceKindName(t.slices.kind[static_cast<size_t>(s)])) + "] " +
                        Str(t, t.slices.name[static_cast<size_t>(s)]));
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) parts.push_back(clean(*it));
    }
    std::vector<std::string> frames;
    for (int32_t c = row.callsite; c >= 0; c = t.callsites.parent[static_cast<size_t>(c)])
      frames.push_back(FrameLabel(t, t.callsites.frame[static_cast<size_t>(c)]));
    if (frames.empty()) frames.push_back("[unknown]");
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) parts.push_back(clean(*it));
    std::string line;
    for (size_t k = 0; k < parts.size(); ++k) line += (k ? ";" : "") + parts[k];
    lines[line] += row.weight;
  }
  std::string out;
  for (auto& [line, n] : lines) out += line + " " + std::to_string(n) + "\n";
  return out;
}

// A frame of the read/write path: the libc wrappers, the kernel's entry points.
bool IsIoFrame(std::string_view f) {
  static const std::set<std::string_view> kFrames = {
      "read",       "__read",      "__libc_read", "pread64",   "__pread64", "__libc_pread64", "readv",   "__readv",
      "write",      "__write",     "__libc_write", "pwrite64", "__pwrite64", "writev", "__writev", "ksys_read",
      "vfs_read",   "ksys_write",  "vfs_write",   "ksys_pread64", "ksys_pwrite64", "do_iter_readv_writev",
      "__x64_sys_read", "__x64_sys_write", "__x64_sys_pread64"};
  return kFrames.count(f) > 0;
}


}  // namespace strata::analysis

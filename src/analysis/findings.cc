#include "analysis/findings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "analysis/critical_path.h"
#include "analysis/findings_context.h"
#include "analysis/gpu.h"
#include "analysis/name_classes.h"
#include "analysis/sample_lines.h"
#include "analysis/summary.h"
#include "analysis/track_rows.h"
#include "base/intervals.h"
#include "base/parallel.h"
#include "base/units.h"

namespace strata::analysis {

// --- rules over the core model --------------------------------------------------

namespace {

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Durations, sizes and counts as people read them (base/units.h).
std::string Ms(double ns) { return HumanDuration(ns); }
std::string N(double n) { return HumanCount(n); }

// The interpreter's own code (libpython3.11.so, a static python3.11): a
// thread on CPU in it holds the GIL.
bool InterpreterModule(std::string_view m) {
  size_t slash = m.rfind('/');
  if (slash != std::string_view::npos) m = m.substr(slash + 1);
  return m.starts_with("libpython3") || m.starts_with("python3");
}

// The Python the step's process ran per step, on all its threads (CPU samples
// with a Python frame or the interpreter's code on the stack, each worth the
// process's on-CPU time over its samples in the steps): one interpreter runs
// one thread's Python at a time, so no number of threads makes the steps
// shorter than that.
double ProcessPythonPerStep(const FindingsContext& c) {
  const model::Trace& t = c.t;
  const auto& cs = t.cpu_samples;
  const auto& st = t.thread_states;
  if (cs.size() == 0 || st.size() == 0 || c.windows.empty() || c.windows.front().track >= t.tracks.size()) return 0;
  const uint32_t proc = t.tracks[c.windows.front().track].process;
  double samples = 0, python = 0, running = 0;
  for (uint32_t tr = 0; tr < t.tracks.size(); ++tr) {
    if (t.tracks[tr].kind != model::TrackKind::kThread || t.tracks[tr].process != proc) continue;
    auto srows = TrackRows(cs, tr);
    auto trows = TrackRows(st, tr);
    for (const auto& w : c.windows) {
      auto [lo, hi] = RowsAt(cs, srows, w.start, w.end);
      for (size_t r = lo; r < hi; ++r) {
        samples += 1;
        for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
          const uint32_t fr = t.callsites.frame[static_cast<size_t>(k)];
          if (t.frames.kind[fr] == model::FrameKind::kPython || InterpreterModule(t.strings.Get(t.frames.module[fr]))) {
            python += 1;
            break;
          }
        }
      }
      running += static_cast<double>(RunningIn(st, trows, w.start, w.end));
    }
  }
  if (samples < 20) return 0;
  return c.PerStep(python * running / samples);
}

void InputPipeline(FindingsContext& c, std::vector<Finding>* out) {
  // Time the step's own thread spends inside data-loading scopes.
  const auto& sl = c.t.slices;
  NameClasses nc(c.t);
  double wait = 0;
  std::map<std::string, double> by_name;
  for (size_t i = 0; i < sl.size(); ++i) {
    if (model::IsDeviceKind(sl.kind[i]) || !nc.Is(sl.name[i], kNameDataLoading)) continue;
    int w = c.WindowOf(sl.ts[i]);
    if (w < 0) continue;
    if (c.windows[static_cast<size_t>(w)].track != UINT32_MAX && sl.track[i] != c.windows[static_cast<size_t>(w)].track) continue;
    // Outermost data-loading scope only.
    if (nc.Within(c.t, sl.parent[i], kNameDataLoading)) continue;
    int64_t end = std::min(sl.end(i), c.windows[static_cast<size_t>(w)].end);
    wait += static_cast<double>(end - sl.ts[i]);
    by_name[std::string(c.Name(i))] += static_cast<double>(end - sl.ts[i]);
  }
  // Graphs the step ran (a Keras step, a tf.function) that waited while the
  // tf.data pipeline produced their batch on its own threads.
  double in_graphs = 0;
  if (c.breakdown.counted > 0)
    in_graphs = static_cast<double>(c.breakdown.input_in_graphs) * static_cast<double>(c.steps) /
                static_cast<double>(c.breakdown.counted);
  if (in_graphs > 0) by_name["tf.data pipeline (waited for inside the step's graph)"] += in_graphs;
  wait += in_graphs;
  // The program's own code that produces the batch outside any loader scope
  // (the step breakdown's input part beyond the scopes: reading and decoding
  // before the forward, or blocking on a queue a producer thread fills), and
  // of it the time off CPU, waiting for another thread or process.
  double own = 0, waiting = 0;
  if (c.breakdown.counted > 0) {
    double scale = static_cast<double>(c.steps) / static_cast<double>(c.breakdown.counted);
    own = std::max(0.0, static_cast<double>(c.breakdown.host[static_cast<size_t>(StepPart::kInput)]) * scale - wait);
    // Less the time the device idled through it after a synchronization other
    // than the step's last: that wait is host_sync's (without the sync the
    // device would have had work queued while the host produced the input).
    own = std::max(0.0, own - static_cast<double>(
                                  c.breakdown.device_idle_after_sync[static_cast<size_t>(StepPart::kInput)]) * scale);
    waiting = std::min(own, static_cast<double>(c.breakdown.input_waiting) * scale);
  }
  constexpr const char* kOwnCode = "the program's code before the forward (producing the batch)";
  if (c.Pct(c.PerStep(own)) >= 5) {
    by_name[kOwnCode] += own;
    wait += own;
  } else {
    own = waiting = 0;
  }
  double per_step = c.PerStep(wait);
  double pct = c.Pct(per_step);
  if (pct < 5) return;
  // Loading in background workers overlaps with the rest of the step: the step
  // then takes max(loading, rest), so a fix saves min(loading, rest).
  double rest = c.step_ns - per_step;
  // Loading already in worker processes (PyTorch's multiprocessing iterator):
  // what is left is the workers not keeping up, or the batches' transfer.
  bool workers = false;
  for (auto& [n, v] : by_name) workers = workers || Contains(n, "MultiProcessing");
  Finding f;
  // Mostly blocked on a producer thread or process: the loop already overlaps
  // loading with its work, and the producer sets its pace (a batch every
  // step). The fix is more producers; with twice as many a batch is ready
  // every half step, so the step takes the longer of that and the rest of it.
  // The same for a loader whose worker processes do not keep up (the step's
  // thread waits in the loader for their batches).
  bool producer = waiting > 0.5 * wait;
  bool more_producers = producer || workers;
  double producer_cut = more_producers ? std::min(c.PerStep(producer ? waiting : wait),
                                                  c.step_ns - std::max(rest, c.step_ns / 2))
                                       : 0;
  // Loading in line with the step moves to background workers (the
  // suggestion's DataLoader(num_workers=N), tf.data's parallel map): as many
  // as it takes for a batch to be ready when the rest of the step wants it (at
  // least 2, at most 8), each loading its batch beside the step, so the step
  // takes the longer of the rest and loading / N. (One worker would leave the
  // step at the longer of the two, where the fix's measured gain is more.)
  int workers_after = 0;
  ReplayResult replayed;
  if (more_producers) {
    replayed = c.Replayed(&f, ReduceParts({{{StepPart::kInput}, std::max(0.0, producer_cut)}}, c.replay->steps()));
  } else {
    workers_after = static_cast<int>(std::clamp(std::ceil(per_step / std::max(rest, 1.0)), 2.0, 8.0));
    ReplayFix fix;
    fix.Overlap(StepPart::kInput);
    fix.host = [workers_after](const ReplayStep&, const ReplayPiece& p) {
      return p.part == StepPart::kInput ? static_cast<double>(p.own) / workers_after : static_cast<double>(p.own);
    };
    replayed = c.Replayed(&f, fix);
  }
  // Loading moved beside the step still runs on the machine's cores, beside
  // the step's own work and its framework's threads: the step cannot take
  // less than the program's CPU time per step shared among them (two loader
  // workers on two cores where the model's ops use both gain far less than
  // the overlap alone says).
  const FindingsContext::CpuUse cpu = c.ProgramCpu();
  const double cpu_floor = cpu.cpus > 0 ? cpu.ns_per_step / cpu.cpus : 0;
  const bool cpu_bound = cpu_floor > f.step_after_ns && replayed.measured_ns > 0;
  if (cpu_bound) {
    f.step_after_ns = std::min(cpu_floor, replayed.measured_ns);
    f.estimated_gain_pct = std::max(0.0, 100.0 * (1 - f.step_after_ns / replayed.measured_ns));
    f.metrics.push_back({"program_cpu_ns_per_step", cpu.ns_per_step});
    f.metrics.push_back({"cpus", static_cast<double>(cpu.cpus)});
  }
  // TensorFlow's pipeline runs its per-element Python (tf.py_function,
  // from_generator) on its own threads, in this process: under one GIL,
  // however many parallel calls it is given.
  double gil_floor = 0;
  if (c.framework == Framework::kTensorFlow && !more_producers && replayed.measured_ns > 0) {
    gil_floor = ProcessPythonPerStep(c);
    if (gil_floor > f.step_after_ns) {
      f.step_after_ns = std::min(gil_floor, replayed.measured_ns);
      f.estimated_gain_pct = std::max(0.0, 100.0 * (1 - f.step_after_ns / replayed.measured_ns));
      f.metrics.push_back({"process_python_ns_per_step", gil_floor});
    } else {
      gil_floor = 0;
    }
  }
  f.category = "input_pipeline";
  bool own_code = own > 0.5 * wait;  // mostly the program's own code, not a loader's
  f.title = fmt::format("The loop waits for its input: {:.0f}% of each step {}", pct,
                        own_code ? "produces the batch" : "loads data");
  f.evidence = fmt::format("{} of the {} mean step is spent {} ({} steps measured).", Ms(per_step), Ms(c.step_ns),
                           producer   ? "on the step's thread waiting for its batch"
                           : own_code ? "on the step's thread producing its batch, in line with the model's work "
                                        "instead of beside it"
                           : workers  ? "inside data loading on the step's thread, waiting for batches from the "
                                        "loader's worker processes"
                                      : "inside data loading on the step's thread, in line with the model's work "
                                        "instead of beside it",
                           c.steps);
  if (own > 0)
    f.evidence += fmt::format(" Of it, {} per step is the program's own code before the forward, outside a data "
                              "loader{}.",
                              Ms(c.PerStep(own)),
                              waiting > 0.5 * own ? fmt::format(", {} of it off CPU waiting for another thread or "
                                                                "process to hand over the batch (a queue or a lock)",
                                                                Ms(c.PerStep(waiting)))
                                                  : "");
  // The program's lines that produce the batch, from the step thread's CPU
  // samples in the breakdown's input part.
  std::string input_lines;
  if (own > 0 || !more_producers) {
    SampleLines where = LinesInPart(c, StepPart::kInput);
    if (where.samples - where.framework >= 5) input_lines = LineList(where, 3, nullptr);
    if (!input_lines.empty())
      f.evidence += fmt::format(" Its CPU samples there ({:.0f}) by line of the program: {}.",
                                where.samples - where.framework, input_lines);
  }
  if (in_graphs > 0)
    f.evidence += fmt::format(" Of it, {} per step the step's graph waited while the tf.data pipeline ran its Python "
                              "functions on its own threads and the compute threads were idle.",
                              Ms(c.PerStep(in_graphs)));
  f.metrics.insert(f.metrics.begin(), {{"data_wait_ns_per_step", per_step}, {"step_ns", c.step_ns}, {"data_wait_pct", pct}});
  if (own > 0) {
    f.metrics.emplace_back("own_code_input_ns_per_step", c.PerStep(own));
    f.metrics.emplace_back("input_waiting_ns_per_step", c.PerStep(waiting));
  }
  for (auto& [n, v] : by_name) f.involved.push_back(n);
  f.what_if = more_producers ? fmt::format("twice the {}: a batch ready every {} instead of every {}, so the "
                                     "step takes the longer of that and the rest of the step ({})",
                                     producer ? "producers" : "loader's workers", Ms(c.step_ns / 2), Ms(c.step_ns),
                                     Ms(std::max(0.0, rest)))
                       : fmt::format("loading ({} per step) in {} background workers, beside the rest of the step "
                                     "({}): a batch ready every {}, so the step takes the longer of that and the rest",
                                     Ms(per_step), workers_after, Ms(std::max(0.0, rest)), Ms(per_step / workers_after));
  if (cpu_bound)
    f.what_if += fmt::format("; but the program uses {} of CPU per step (all its threads and processes), and on {} "
                             "CPUs that takes at least {} (keep the framework's own threads from contending with "
                             "the workers for them: torch.set_num_threads, OMP_NUM_THREADS)",
                             Ms(cpu.ns_per_step), cpu.cpus, Ms(f.step_after_ns));
  if (gil_floor > 0)
    f.what_if += fmt::format("; but the process runs {} of Python per step on its threads (the pipeline's Python "
                             "functions among it), and one interpreter runs one thread's Python at a time: the step "
                             "takes at least that",
                             Ms(gil_floor));
  f.suggestion = cpu_bound && !more_producers && c.framework != Framework::kTensorFlow
                     ? std::string(own_code ? "Make each batch cheaper to produce first" : "Make each sample cheaper to load first") +
                           ": on these CPUs, loader workers would share them with the framework's own threads and "
                           "gain little (the what-if). Build tensors from whole arrays (torch.from_numpy, or one "
                           "torch.tensor of the dataset made once and indexed per batch) instead of from per-sample "
                           "Python lists, read many samples per file (one array or memory-mapped file rather than a "
                           "file per sample), decode and augment once and cache the result" +
                           std::string(input_lines.empty() ? "" : " (the lines above)") +
                           "; then move what remains to DataLoader(num_workers=N) workers, with "
                           "torch.set_num_threads() leaving them a core."
                 : producer ? "The thread or process that produces the batches does not keep up: run more producers "
                            "(DataLoader(num_workers=N), a pool of producer threads or processes), make each batch "
                            "cheaper to produce, and keep a queue of ready batches ahead of the step."
                 : in_graphs > 0.5 * wait || gil_floor > 0
                     ? "The pipeline's per-element Python (tf.py_function, tf.numpy_function, from_generator) is the "
                       "cost: express it in TensorFlow ops (map then runs it in parallel with "
                       "num_parallel_calls=tf.data.AUTOTUNE, without the GIL), or compute it once and cache() it; "
                       ".prefetch(tf.data.AUTOTUNE) then overlaps what remains with the step."
                 : c.framework == Framework::kTensorFlow
                     ? "Overlap input with compute: end the tf.data pipeline with .prefetch(tf.data.AUTOTUNE), run its "
                       "map stages with num_parallel_calls=tf.data.AUTOTUNE, cache() what does not change between "
                       "epochs, and read files with interleave(..., num_parallel_calls=AUTOTUNE)."
                 : workers ? "The loader's workers do not keep up: add workers (DataLoader(num_workers=...)), raise "
                           "prefetch_factor, keep them alive across epochs (persistent_workers=True), and make each "
                           "sample cheaper to load (cache, pre-decode, larger sequential reads)."
                         : "Load batches in background worker processes (PyTorch: DataLoader(num_workers=N, "
                           "pin_memory=True, persistent_workers=True); TensorFlow: dataset.prefetch/interleave with "
                           "AUTOTUNE) so that loading overlaps with compute; cache or pre-decode expensive samples.";
  out->push_back(std::move(f));
}

void HostSync(FindingsContext& c, std::vector<Finding>* out) {
  // Synchronizations in the step: the host blocks until the device drains,
  // wakes up, prepares and launches the next work, and the device idles all
  // that time. What a sync costs the device is the gap in its activity that the
  // sync's return falls in, from when the device ran dry (or the sync began, if
  // later) to its next work. Without the sync that work would have been queued
  // already. A step's last sync, whose gap runs into the next step, is the one
  // a step needs and is not counted.
  const auto& sl = c.t.slices;
  // Columns (a row per device activity): they spill past the memory budget.
  struct Span {
    int64_t first, second;
    bool operator<(const Span& o) const { return first != o.first ? first < o.first : second < o.second; }
  };
  model::Column<Span> busy;      // device activity, merged
  model::Column<int64_t> kernels;  // kernel start times
  for (size_t r = 0; r < c.t.device.size(); ++r) {
    size_t s = c.t.device.slice[r];
    auto k = sl.kind[s];
    if (k == model::SliceKind::kKernel || k == model::SliceKind::kMemcpy || k == model::SliceKind::kMemset)
      busy.emplace_back(sl.ts[s], sl.end(s));
    if (k == model::SliceKind::kKernel) kernels.push_back(sl.ts[s]);
  }
  if (kernels.empty()) return;
  std::sort(busy.begin(), busy.end());
  std::sort(kernels.begin(), kernels.end());
  model::Column<Span> merged;
  AppendMerged(busy, merged);
  std::vector<uint8_t> flags = HostCallFlags(c.t);
  NameClasses nc(c.t);
  double count = 0, blocked = 0, drained_idle = 0, counted = 0;
  std::map<std::string, double> by_name;
  // Each step's last sync (by its return): the one a step needs to hand its
  // result to the host (loss.item() for the log); the others are removable.
  std::vector<std::pair<int64_t, int64_t>> last(c.windows.size(), {INT64_MIN, 0});  // (return, blocked)
  std::vector<int32_t> last_slice(c.windows.size(), model::kNone);
  std::set<int32_t> outermost;  // the program's sync points in the steps
  std::map<model::StringId, double> at_site;  // ... by where the program called them
  for (size_t i = 0; i < sl.size(); ++i) {
    if (model::IsDeviceKind(sl.kind[i]) || !IsSyncSlice(c.t, nc, i, flags)) continue;
    int w = c.WindowOf(sl.ts[i]);
    if (w < 0) continue;
    // One sync point of the program per outermost sync: .item() is aten::item
    // around aten::_local_scalar_dense around the runtime's copy and stream
    // synchronization, one wait.
    bool nested = false;
    for (int32_t p = sl.parent[i]; p != model::kNone && !nested; p = sl.parent[static_cast<size_t>(p)])
      nested = IsSyncSlice(c.t, nc, static_cast<size_t>(p), flags);
    if (nested) continue;
    count += 1;
    blocked += static_cast<double>(sl.dur[i]);
    by_name[std::string(c.Name(i))] += 1;
    for (int32_t p = static_cast<int32_t>(i); p != model::kNone; p = sl.parent[static_cast<size_t>(p)]) {
      int32_t row = c.t.OpRow(static_cast<uint32_t>(p));
      if (row != model::kNone && c.t.ops.site[static_cast<size_t>(row)] != 0) {
        at_site[c.t.ops.site[static_cast<size_t>(row)]] += 1;
        break;
      }
    }
    outermost.insert(static_cast<int32_t>(i));
    int64_t ret = sl.end(i);
    if (ret > last[static_cast<size_t>(w)].first) {
      last[static_cast<size_t>(w)] = {ret, sl.dur[i]};
      last_slice[static_cast<size_t>(w)] = static_cast<int32_t>(i);
    }
    // The device is idle at the return when no activity spans it; it ran dry
    // when the last one before it ended (or when the sync began, if later).
    auto it = std::upper_bound(merged.begin(), merged.end(), ret,
                               [](int64_t v, const Span& b) { return v < b.first; });
    int64_t dry = sl.ts[i];
    if (it != merged.begin()) {
      if (std::prev(it)->second > ret) continue;  // still busy with other work
      dry = std::max(dry, std::prev(it)->second);
    }
    // Idle until the next kernel: small copies the host queued meanwhile (the
    // next stage's inputs) do not end the wait for work.
    auto k = std::lower_bound(kernels.begin(), kernels.end(), ret);
    if (k == kernels.end() || *k >= c.windows[static_cast<size_t>(w)].end) continue;
    int64_t idle = *k - dry;
    for (; it != merged.end() && it->first < *k; ++it) idle -= std::min(it->second, *k) - it->first;
    drained_idle += static_cast<double>(std::max<int64_t>(0, idle));
    counted += 1;
  }
  if (count == 0) return;
  double needed = 0;
  for (const auto& [ret, d] : last)
    if (ret != INT64_MIN) needed += static_cast<double>(d);
  double removable = blocked - needed;
  double per_step_syncs = c.PerStep(count);
  double idle = c.PerStep(drained_idle);
  double device_busy = 0;
  for (const auto& win : c.windows) {
    auto it = std::upper_bound(merged.begin(), merged.end(), win.start,
                               [](int64_t v, const Span& b) { return v < b.first; });
    if (it != merged.begin()) --it;
    for (; it != merged.end() && it->first < win.end; ++it)
      device_busy += static_cast<double>(Overlap(it->first, it->second, win.start, win.end));
  }
  // What-if without the removable syncs: the host no longer waits in them, so
  // it needs the step less that time, and the device no longer runs dry after
  // them (what the host does next, launching, producing the next stage's input,
  // then overlaps with the device's work); the device still needs its busy
  // time. The step takes the longer of the host's and the device's time: a
  // host-bound step gains the host's blocked time, a device-bound one at most
  // the device's idle after the syncs.
  double host_floor = c.step_ns - c.PerStep(removable);
  double device_floor = c.PerStep(device_busy);
  double saved = host_floor >= device_floor ? c.PerStep(removable)  // host-bound: its blocked time
                                            : std::min(idle, std::max(0.0, c.step_ns - device_floor));
  if (c.Pct(saved) < 1) return;
  // The what-if, replayed: the removable syncs gone (the value stays on the
  // device: no read call, no copy-out, no wait), so the host goes on at once
  // and the device work stays queued.
  for (int32_t s : last_slice) outermost.erase(s);
  auto removed = [&c, &outermost](const ReplayPiece& p) { return WithinAny(c.t, p.slice, outermost); };
  ReplayFix fix;
  fix.drop_wait = [removed](const ReplayStep&, const ReplayPiece& p) { return removed(p); };
  fix.host = [removed](const ReplayStep&, const ReplayPiece& p) { return removed(p) ? 0.0 : static_cast<double>(p.own); };
  Finding f;
  double gain = c.Replayed(&f, fix).GainPct();
  f.category = "host_sync";
  f.title = host_floor >= device_floor
                ? fmt::format("{} host synchronizations per step: the host waits {:.0f}% of the step for the device",
                              N(per_step_syncs), gain)
                : fmt::format("{} host synchronizations per step leave the device idle {:.0f}% of the step",
                              N(per_step_syncs), gain);
  f.evidence = fmt::format("The host blocks {} per step in synchronization calls, {} of it in syncs other than the "
                           "step's last; {} of them per step drain the device, which then has nothing queued until the "
                           "host has woken up and launched again: {} of device idle per step of {}. Without them the "
                           "step would take the longer of the host's unblocked time ({}) and the device's ({}).",
                           Ms(c.PerStep(blocked)), Ms(c.PerStep(removable)), N(c.PerStep(counted)), Ms(idle),
                           Ms(c.step_ns), Ms(host_floor), Ms(device_floor));
  f.metrics.insert(f.metrics.begin(), {{"syncs_per_step", per_step_syncs},
               {"draining_syncs_per_step", c.PerStep(counted)},
               {"blocked_ns_per_step", c.PerStep(blocked)},
               {"removable_blocked_ns_per_step", c.PerStep(removable)},
               {"device_idle_after_sync_ns_per_step", idle},
               {"device_busy_ns_per_step", c.PerStep(device_busy)}});
  for (auto& [n, v] : by_name) f.involved.push_back(n);
  std::vector<std::pair<double, std::string>> sites;
  for (const auto& [s, n] : at_site) sites.emplace_back(n, std::string(c.t.strings.Get(s)));
  std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (const auto& [n, s] : sites) f.where.push_back(fmt::format("{} ({} per step)", s, N(c.PerStep(n))));
  if (!sites.empty()) {
    f.evidence += " Called at ";
    for (size_t k = 0; k < sites.size() && k < 3; ++k)
      f.evidence += fmt::format("{}{} ({} per step)", k ? ", " : "", sites[k].second, N(c.PerStep(sites[k].first)));
    f.evidence += sites.size() > 3 ? fmt::format(" and {} more places.", sites.size() - 3) : ".";
  }
  f.what_if = host_floor >= device_floor
                  ? fmt::format("the host no longer blocks in the syncs other than the step's last ({} per step); the "
                                "host bounds the step (device busy {})",
                                Ms(c.PerStep(removable)), Ms(device_floor))
                  : fmt::format("the device's idle after the syncs ({} per step) filled with the work the host "
                                "queues ahead; the device bounds the step (busy {})",
                                Ms(idle), Ms(device_floor));
  f.suggestion = c.Fix("Remove synchronizations from the step: keep results on the device (no .item()/.cpu()/blocking "
                       "reads inside the loop), use non-blocking copies and events, and synchronize once per step (or "
                       "every N steps) so that the host keeps the device's queue full.",
                       "Remove synchronizations from the step: keep results on the device (no .numpy(), float(t) or "
                       "printing of tensors inside the loop; accumulate in Keras metrics or tf.Variables) and read "
                       "them once every N steps, so that the host keeps the device's queue full.");
  out->push_back(std::move(f));
}

void Communication(FindingsContext& c, std::vector<Finding>* out) {
  double exposed = c.PathTime([&](const PathSegment& s) {
    return s.type == SegmentType::kDevice && ClassifyByName(c.t.strings.Get(c.t.slices.name[static_cast<size_t>(s.slice)])) ==
                                                 WorkType::kCommunication;
  });
  double per_step = c.PerStep(exposed);
  double pct = c.Pct(per_step);
  if (pct < 3) return;
  Finding f;
  f.category = "communication";
  f.title = fmt::format("Collective communication is exposed on the critical path: {:.0f}% of the step", pct);
  f.evidence = fmt::format("{} per step of communication kernels are not overlapped by computation.", Ms(per_step));
  f.metrics = {{"exposed_communication_ns_per_step", per_step}};
  // Replayed: 60% of each collective hidden behind the backward pass.
  const model::Trace& t = c.t;
  c.Replayed(&f, ScaleTasks(
                     [&t](uint32_t row) {
                       return ClassifyByName(t.strings.Get(t.slices.name[t.device.slice[row]])) == WorkType::kCommunication;
                     },
                     0.4));
  f.what_if = "60% of each collective overlapped with the backward pass (bucketed all-reduce on its own stream)";
  f.suggestion = "Overlap communication with the backward pass (DDP gradient bucketing: tune bucket_cap_mb, "
                 "gradient_as_bucket_view), launch collectives on a separate stream, compress or reduce gradients less "
                 "often (gradient accumulation).";
  out->push_back(std::move(f));
}

// The device idle in the steps is a symptom; its cause is what the step's
// thread was doing meanwhile (the breakdown puts each idle nanosecond on it).
// The largest such part becomes the finding of its own category; when that
// category's own rule fired already (with better evidence), the idle share is
// added to its evidence instead.
void GpuIdle(FindingsContext& c, std::vector<Finding>* out) {
  const StepBreakdowns& b = c.breakdown;
  if (b.device_busy < 0 || b.counted_ns <= 0) return;
  double idle_pct = 100.0 * static_cast<double>(b.counted_ns - b.device_busy) / static_cast<double>(b.counted_ns);
  if (idle_pct < 30) return;
  // Idle that began under a synchronization the step does not need is the
  // host_sync finding's, whatever the thread did next (producing the next
  // stage's input, launching): without that sync the device would have had
  // the work queued. The rest is what a cause of the thread's own explains.
  Finding* sync_finding = nullptr;
  for (Finding& f : *out)
    if (f.category == "host_sync") sync_finding = &f;
  StepParts unclaimed = b.device_idle;
  int64_t claimed = 0;
  if (sync_finding != nullptr)
    for (size_t k = 0; k < kStepParts; ++k) {
      unclaimed[k] -= b.device_idle_after_sync[k];
      claimed += b.device_idle_after_sync[k];
    }
  size_t top = 0;
  for (size_t k = 1; k < kStepParts; ++k)
    if (unclaimed[k] > unclaimed[top]) top = k;
  auto part = static_cast<StepPart>(top);
  double part_pct = 100.0 * static_cast<double>(unclaimed[top]) / static_cast<double>(b.counted_ns);
  struct Cause {
    const char* category;
    const char* doing;
    const char* suggestion;
    const char* xla_suggestion;  // TensorFlow and JAX; null: the same
  };
  static const Cause kCauses[kStepParts] = {
      {"input_pipeline", "produces the next batch",
       "Produce batches ahead of the device: a DataLoader with workers and pin_memory, prefetching to the device on a "
       "side stream, or preprocessing on the device.",
       "Produce batches ahead of the device: end the tf.data pipeline with .prefetch(tf.data.AUTOTUNE) (and "
       "prefetch_to_device), run its map stages with num_parallel_calls=AUTOTUNE, or preprocess on the device."},
      {"placement", "runs framework ops on the CPU",
       "Place these ops and their tensors on the accelerator (model.to(device), create inputs on the device).",
       "Place these ops on the accelerator (tf.device, jax.device_put; tf.debugging.set_log_device_placement shows "
       "the ops that fall back to the CPU)."},
      {"dispatch_overhead", "launches work (per-op framework overhead and kernel launches)",
       "Give each launch more work (larger batches, fused ops), capture the step in a CUDA graph "
       "(torch.cuda.graphs, torch.compile(mode=\"reduce-overhead\")), or fuse small ops with torch.compile.",
       "Compile the step with XLA (tf.function(jit_compile=True), Keras compile(jit_compile=True), jax.jit) so that "
       "small ops fuse into a few kernels, and give each launch more work (larger batches, steps_per_execution)."},
      {"memory_allocation", "allocates memory",
       "Allocate once and reuse: keep buffers across steps, use the framework's caching allocator, avoid "
       "cudaMalloc/cudaFree in the loop.",
       nullptr},
      {"host_sync", "waits in synchronizations",
       "Remove synchronizations from the step: no .item(), .cpu() or printing of device tensors each step; "
       "accumulate on the device and read once per N steps.",
       "Remove synchronizations from the step: no .numpy(), float(t) or printing of tensors each step; accumulate "
       "in Keras metrics or tf.Variables and read them once per N steps."},
      {"memcpy", "copies data",
       "Copy from pinned memory asynchronously (pin_memory=True, .to(device, non_blocking=True)) so copies overlap "
       "with compute.",
       "Copy ahead of use so copies overlap with compute (tf.data's prefetch_to_device, jax.device_put of the next "
       "batch), and keep tensors on the device between steps (no .numpy() round trips)."},
      {"io_syscalls", "reads or writes files",
       "Move file I/O off the step's thread (a DataLoader with workers, a background writer) and read in large blocks.",
       "Move file I/O into the tf.data pipeline (interleave and prefetch) or a background writer, and read in large "
       "blocks."},
      {"host_bound", "runs the program's own Python code",
       "Move this Python work off the step's critical path (precompute it, vectorize it on the device, or run it "
       "in a background thread), or launch the next step's work before it (CUDA graphs, asynchronous logging).",
       "Move this Python work off the step's critical path (into the compiled step or the tf.data pipeline, or "
       "every N steps)."},
      {"cpu_contention", "is off CPU (sleeping, waiting on a lock, or preempted)",
       "Find what the thread waits for (record with --sched for wake-ups and sleep states) and take it off the "
       "step's thread.",
       nullptr},
  };
  const Cause& cause = kCauses[top];
  std::string split;
  for (size_t k = 0; k < kStepParts; ++k) {
    double p = 100.0 * static_cast<double>(b.device_idle[k]) / static_cast<double>(b.counted_ns);
    if (p >= 0.5) split += fmt::format("{}{} {:.0f}%", split.empty() ? "" : ", ", StepPartName(static_cast<StepPart>(k)), p);
  }
  std::string idle_words = fmt::format("The device idles {:.0f}% of the step; while it idles, the step's thread is in: {} "
                                       "(of the step).",
                                       idle_pct, split);
  if (sync_finding != nullptr && claimed > 0)
    sync_finding->evidence += fmt::format(" {} Of that idle, {:.0f}% of the step followed a synchronization "
                                          "other than the step's last.",
                                          idle_words,
                                          100.0 * static_cast<double>(claimed) / static_cast<double>(b.counted_ns));
  for (Finding& f : *out)
    if (f.category == cause.category) {
      if (&f != sync_finding || claimed == 0) f.evidence += " " + idle_words;
      return;
    }
  if (part_pct < 5) return;
  Finding f;
  f.category = cause.category;
  f.title = fmt::format("The device idles {:.0f}% of the step while the host {}", part_pct, cause.doing);
  f.evidence = idle_words + fmt::format(" Device busy {} of a {} step ({} steps measured).",
                                        Ms(static_cast<double>(b.device_busy) / static_cast<double>(b.counted)),
                                        Ms(c.step_ns), b.counted);
  f.metrics = {{"device_idle_pct", idle_pct}, {"idle_pct_while_" + std::string(StepPartName(part)), part_pct}};
  f.involved.push_back(StepPartName(part));
  // Replayed with the cause's fix. Work that can move off the step's thread
  // (producing input, the program's own code, file I/O: a worker or a
  // background thread) runs beside the rest of the step, which then takes the
  // longer of the two. Work that must stay (launching, allocating, copying,
  // waiting) is cut by the time the device idled during it (CUDA graphs, a
  // warm allocator, asynchronous copies fill that idle with device work).
  double idle_ns = static_cast<double>(unclaimed[top]) / static_cast<double>(b.counted);
  bool moves = part == StepPart::kInput || part == StepPart::kPython || part == StepPart::kIo;
  if (moves) {
    ReplayFix fix;
    fix.Overlap(part);
    c.Replayed(&f, fix);
    f.what_if = fmt::format("the host's work while it {} ({} per step with the device idle) moved off the step's "
                            "thread, beside the rest of the step",
                            cause.doing, Ms(idle_ns));
  } else {
    c.Replayed(&f, ReduceParts({{{part}, idle_ns}}, c.replay->steps()));
    f.what_if = fmt::format("the host's time while it {} with the device idle ({} per step) overlapped with device work",
                            cause.doing, Ms(idle_ns));
  }
  f.suggestion = cause.xla_suggestion != nullptr ? c.Fix(cause.suggestion, cause.xla_suggestion) : cause.suggestion;
  out->push_back(std::move(f));
}

}  // namespace

std::vector<Finding> Diagnose(const model::Trace& t, const DiagnosisOptions& opt, ReplayCheck* check) {
  FindingsContext c(t, opt);
  if (check != nullptr) {
    ReplayResult r = c.replay->Run({});
    *check = {r.steps, r.measured_ns, r.baseline_ns, c.replay->BaselineErrorPct()};
  }
  std::vector<Finding> out;
  if (c.steps == 0 || c.step_ns <= 0) return out;
  InputPipeline(c, &out);
  DispatchOverheadHost(c, &out);
  HostSync(c, &out);
  AllocationOps(c, &out);
  Memcpy(c, &out);
  Communication(c, &out);
  HostPlacement(c, &out);
  CrossDevicePlacement(c, &out);
  ComputeBound(c, &out);
  MemoryBound(c, &out);
  UnoptimizedLibrary(c, &out);
  PythonCode(c, &out);
  Checkpointing(c, &out);
  EagerExecution(c, &out);
  GilContention(c, &out);
  IoSyscalls(c, &out);
  CpuContention(c, &out);
  RankStraggler(c, &out);
  ExposedCollectives(c, &out);
  Straggler(c, &out);
  GpuIdle(c, &out);  // after the rules it may add its evidence to
  std::erase_if(out, [&](const Finding& f) { return f.estimated_gain_pct < opt.min_gain_pct; });
  for (auto& f : out) {
    f.estimated_gain_pct = std::min(f.estimated_gain_pct, 95.0);
    f.step_ns = c.step_ns;
    f.step_after_ns = c.step_ns * (1 - f.estimated_gain_pct / 100);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.estimated_gain_pct > b.estimated_gain_pct; });
  return out;
}

}  // namespace strata::analysis

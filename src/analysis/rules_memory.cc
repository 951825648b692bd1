// Diagnosis rules about memory: large temporaries allocated every step
// (memory_allocation) and host-device copies on the critical path (memcpy),
// each with its gain as a what-if of the fix.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "analysis/findings_context.h"
#include "analysis/memory.h"
#include "analysis/name_classes.h"
#include "analysis/roofline.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

std::string Ms(double ns) { return HumanDuration(ns); }
std::string MiB(double bytes) { return HumanBytes(bytes); }
std::string N(double n) { return HumanCount(n); }

// What a host-device copy from pinned memory achieves on this machine: the
// median bandwidth of the trace's own pinned copies of that direction (1 MiB and
// larger), else the link's typical figure: PCIe 5.0 x16 for Hopper and later
// (compute capability 9+), PCIe 4.0 x16 before. 0 when unknown.
// Pinned host-device copies on PCIe 3.0 x16.
constexpr double kPcie3Pinned = 12e9;

double PinnedBandwidth(const model::Trace& t, model::CopyKind kind, bool* measured) {
  std::vector<double> bw;
  for (size_t r = 0; r < t.device.size(); ++r) {
    size_t s = t.device.slice[r];
    if (t.slices.kind[s] != model::SliceKind::kMemcpy || t.device.copy_kind[r] != kind || t.device.pinned[r] != 1 ||
        t.device.bytes[r] < (1u << 20) || t.slices.dur[s] <= 0)
      continue;
    bw.push_back(static_cast<double>(t.device.bytes[r]) / (static_cast<double>(t.slices.dur[s]) * 1e-9));
  }
  *measured = !bw.empty();
  if (!bw.empty()) {
    std::nth_element(bw.begin(), bw.begin() + static_cast<ptrdiff_t>(bw.size() / 2), bw.end());
    return bw[bw.size() / 2];
  }
  uint32_t major = 0;
  for (const auto& d : t.devices) major = std::max(major, d.compute_major);
  if (major == 0) return kPcie3Pinned;  // no device described: the slowest link such GPUs sit on
  return major >= 9 ? 50e9 : 25e9;
}

}  // namespace

void AllocationOps(FindingsContext& c, std::vector<Finding>* out) {
  // Large temporaries allocated and freed within every step: each step pays to
  // get fresh memory (the allocator, and on the host the kernel mapping and
  // zeroing new pages on first touch) for buffers it could have kept. A cost
  // that recurs per step: without steps, a slow first allocation (a CUDA
  // context created inside the first aten::empty) would pass for one.
  if (!c.has_steps) return;
  const auto& sl = c.t.slices;
  std::vector<MemoryOptions::Window> windows;
  for (size_t i = 0; i < c.windows.size(); ++i)
    windows.push_back({c.windows[i].start, c.windows[i].end, static_cast<int64_t>(i)});
  StepAllocations a = AllocationsInWindows(c.t, windows);
  bool have_memory = c.t.memory.size() > 0;
  double temp_bytes = c.PerStep(static_cast<double>(a.temporary_bytes));
  constexpr double kLarge = 1 << 20;  // bytes of temporaries per step worth a look
  if (have_memory && temp_bytes < kLarge) return;

  // The time: allocation ops that made the temporaries (all allocation ops in
  // the steps when the trace has no allocator events).
  // (Not those the program's data loading runs: the input's time, which the
  // step breakdown counts as input and input_pipeline claims, not a buffer
  // the step could keep.)
  NameClasses nc(c.t);
  std::vector<bool> target(sl.size(), false);
  for (int32_t s : a.allocating_slices)
    if (c.InSteps(static_cast<size_t>(s)) && !nc.Within(c.t, s, kNameDataLoading)) target[static_cast<size_t>(s)] = true;
  if (!have_memory) {
    for (size_t i = 0; i < sl.size(); ++i) {
      if (sl.kind[i] != model::SliceKind::kOp || !nc.Is(sl.name[i], kNameAllocationOp) || !c.InSteps(i) ||
          nc.Within(c.t, static_cast<int32_t>(i), kNameDataLoading))
        continue;
      bool nested = false;
      for (int32_t p = sl.parent[i]; p != model::kNone; p = sl.parent[static_cast<size_t>(p)])
        if (nc.Is(sl.name[static_cast<size_t>(p)], kNameAllocationOp)) nested = true;
      if (!nested) target[i] = true;
    }
  }
  double op_ns = 0, op_count = 0;
  std::map<std::string, double> op_names;
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> ranges;  // track -> target slice spans
  for (size_t i = 0; i < sl.size(); ++i) {
    if (!target[i]) continue;
    op_ns += static_cast<double>(sl.dur[i]);
    op_count += 1;
    op_names[std::string(c.Name(i))] += static_cast<double>(sl.dur[i]);
    ranges[sl.track[i]].emplace_back(sl.ts[i], sl.end(i));
  }
  auto inside_target = [&](uint32_t track, int64_t ts) {
    auto it = ranges.find(track);
    if (it == ranges.end()) return false;
    for (const auto& [b, e] : it->second)
      if (ts >= b && ts < e) return true;
    return false;
  };
  double on_path = c.PerStep(static_cast<double>(
      c.PathTimeInside([&](size_t s) { return target[s]; })));
  // Mapping and unmapping outside those ops (a large block freed later is
  // returned to the OS by munmap), when the OS level traced system calls.
  double sys_ns = 0;
  for (size_t i = 0; i < c.t.syscalls.size(); ++i) {
    std::string_view n = c.t.strings.Get(c.t.syscalls.name[i]);
    if (n != "mmap" && n != "munmap" && n != "brk" && n != "mremap" && n != "madvise") continue;
    int w = c.WindowOf(c.t.syscalls.ts[i]);
    if (w < 0) continue;
    uint32_t wt = c.windows[static_cast<size_t>(w)].track;
    if ((wt != UINT32_MAX && c.t.syscalls.track[i] != wt) || inside_target(c.t.syscalls.track[i], c.t.syscalls.ts[i])) continue;
    sys_ns += static_cast<double>(c.t.syscalls.dur[i]);
  }
  sys_ns = c.PerStep(sys_ns);
  // Freeing a large block returns it to the OS (munmap) when the allocator does
  // not keep it, in whatever code drops the last reference. Without a system
  // call trace, the step thread's CPU samples in the unmap path outside the
  // allocation ops measure it (their share of the step).
  double free_ns = 0;
  if (sys_ns == 0) {
    const auto& cs = c.t.cpu_samples;
    double samples = 0, unmapping = 0;
    for (const auto& w : c.windows) {
      if (w.track == UINT32_MAX) continue;
      auto rows = std::equal_range(cs.track.begin(), cs.track.end(), w.track);
      for (auto r = static_cast<size_t>(rows.first - cs.track.begin()); r < static_cast<size_t>(rows.second - cs.track.begin()); ++r) {
        if (cs.ts[r] < w.start || cs.ts[r] >= w.end) continue;
        samples += 1;
        if (inside_target(w.track, cs.ts[r])) continue;
        for (int32_t k = cs.callsite[r]; k >= 0; k = c.t.callsites.parent[static_cast<size_t>(k)]) {
          std::string_view fn = c.t.strings.Get(c.t.frames.function[c.t.callsites.frame[static_cast<size_t>(k)]]);
          if (fn.find("munmap") != std::string_view::npos) {  // munmap, __GI_munmap, __x64_sys_munmap, ...
            unmapping += 1;
            break;
          }
        }
      }
    }
    if (samples >= 10) free_ns = c.step_ns * unmapping / samples;
  }
  double faults = 0;
  for (size_t i = 0; i < c.t.page_faults.size(); ++i)
    if (inside_target(c.t.page_faults.track[i], c.t.page_faults.ts[i])) faults += 1;
  faults = c.PerStep(faults);
  double pct = c.Pct(on_path + sys_ns + free_ns);
  if (pct < 5) return;
  // What stays when the buffers are kept: the fill the program asked for
  // (zeros, ones, full) on memory already mapped, at the host's measured memory
  // bandwidth (`strata record`'s probe; 10 GB/s when absent).
  double fill_bytes = 0;
  for (const auto& g : a.temporaries_by_name)
    if (g.name.find("zeros") != std::string::npos || g.name.find("ones") != std::string::npos ||
        g.name.find("full") != std::string::npos || g.name.find("fill") != std::string::npos)
      fill_bytes += c.PerStep(static_cast<double>(g.bytes));
  double bandwidth = RecordedHostPeaks(c.t).memory_bandwidth;
  if (bandwidth <= 0) bandwidth = 10e9;
  double fill_ns = fill_bytes / bandwidth * 1e9;

  Finding f;
  f.category = "memory_allocation";
  std::string names;
  for (auto& [n, x] : op_names) names += (names.empty() ? "" : ", ") + n;
  if (have_memory) {
    f.title = fmt::format("Large temporary allocations every step: {} per step, {:.0f}% of the step getting fresh "
                          "memory",
                          MiB(temp_bytes), pct);
    std::string top;
    for (size_t i = 0; i < a.temporaries_by_name.size() && i < 3; ++i)
      top += fmt::format("{}{} {} ({} blocks)", i ? ", " : "", a.temporaries_by_name[i].name,
                         MiB(c.PerStep(static_cast<double>(a.temporaries_by_name[i].bytes))),
                         N(c.PerStep(static_cast<double>(a.temporaries_by_name[i].count))));
    f.evidence = fmt::format(
        "Each step allocates {} in {} allocations; {} of it in {} temporaries freed within the "
        "same step{} (largest per step: {}). The allocation ops that made them ({}) take {} per step including the first "
        "touch of their fresh pages, {} of it on the critical path of a {} step{}{}.",
        MiB(c.PerStep(static_cast<double>(a.bytes))), N(c.PerStep(static_cast<double>(a.allocs))), MiB(temp_bytes),
        N(c.PerStep(static_cast<double>(a.temporaries))), a.addresses ? "" : " (no addresses: every allocation counted)", top,
        names.empty() ? "none" : names, Ms(c.PerStep(op_ns)), Ms(on_path), Ms(c.step_ns),
        faults > 0 ? fmt::format("; {} page faults per step inside them", N(faults)) : "",
        sys_ns > 0 ? fmt::format("; {} per step in mmap/munmap/brk/madvise outside them", Ms(sys_ns))
        : free_ns > 0 ? fmt::format("; {} per step returning freed blocks to the OS (munmap, from CPU samples)", Ms(free_ns))
                      : "");
    for (size_t i = 0; i < a.temporaries_by_name.size() && i < 5; ++i) f.involved.push_back(a.temporaries_by_name[i].name);
  } else {
    f.title = fmt::format("Allocating tensors takes {:.0f}% of each step", pct);
    f.evidence = fmt::format("{:.0f} allocation ops per step ({}) take {} per step, {} of it on the critical path of a {} "
                             "step (no allocator events recorded: sizes unknown).",
                             c.PerStep(op_count), names, Ms(c.PerStep(op_ns)), Ms(on_path), Ms(c.step_ns));
  }
  for (auto& [n, v] : op_names)
    if (std::find(f.involved.begin(), f.involved.end(), n) == f.involved.end()) f.involved.push_back(n);
  // What-if, replayed: reusing a preallocated buffer removes the allocation,
  // the page mapping, the first touch and the unmapping (outside the
  // allocation ops: wherever the program dropped the last reference); a fill
  // the program needs stays, on warm memory.
  c.Replayed(&f, ReduceParts({{{StepPart::kAllocation},
                               std::max(0.0, on_path + sys_ns + free_ns - fill_ns),
                               {StepPart::kPython, StepPart::kIo, StepPart::kIdle, StepPart::kDispatch, StepPart::kCompute}}},
                             c.replay->steps()));
  f.metrics.insert(f.metrics.begin(), {{"allocation_ns_per_step", on_path},
               {"allocation_op_ns_per_step", c.PerStep(op_ns)},
               {"allocator_syscall_ns_per_step", sys_ns},
               {"page_faults_per_step", faults},
               {"allocations_per_step", c.PerStep(static_cast<double>(a.allocs))},
               {"bytes_allocated_per_step", c.PerStep(static_cast<double>(a.bytes))},
               {"temporaries_per_step", c.PerStep(static_cast<double>(a.temporaries))},
               {"temporary_bytes_per_step", temp_bytes}});
  f.metrics.push_back({"free_ns_per_step", free_ns});
  f.metrics.push_back({"refill_ns_per_step", fill_ns});
  f.what_if = fmt::format("buffers kept across steps: {} of allocation and first touch, {} of mapping and unmapping "
                          "become a refill of {} on warm memory ({} at {:.1f} GB/s)",
                          Ms(on_path), Ms(sys_ns + free_ns), MiB(fill_bytes), Ms(fill_ns), bandwidth / 1e9);
  bool device = std::any_of(a.devices.begin(), a.devices.end(), [](int32_t d) { return d != model::kNone; });
  bool host = std::any_of(a.devices.begin(), a.devices.end(), [](int32_t d) { return d == model::kNone; });
  std::string what = a.temporaries_by_name.empty() ? std::string("step-sized tensors")
                                                   : "the buffers allocated by " + a.temporaries_by_name[0].name;
  f.suggestion = fmt::format(
      "Allocate {} once, outside the loop, and reuse them every step: keep a preallocated workspace (a module buffer), "
      "refill it in place (buf.zero_(), buf.copy_(x)), write results into it with out= arguments (torch.add(a, b, "
      "out=buf)) and use in-place ops (x.add_(y), relu_) instead of creating new tensors.",
      what);
  if (host)
    f.suggestion += " On the host, glibc returns blocks above its mmap threshold (at most 32 MiB) to the OS on every free, "
                    "so each step faults them in again: a caching malloc (LD_PRELOAD jemalloc or tcmalloc) or "
                    "MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ keeps them.";
  if (device)
    f.suggestion += " On the GPU, keep PyTorch's caching allocator warm (no torch.cuda.empty_cache() in the loop) and "
                    "tune PYTORCH_CUDA_ALLOC_CONF (expandable_segments:True, max_split_size_mb) if reserved memory "
                    "grows.";
  out->push_back(std::move(f));
}

// What an asynchronous copy call costs the host (a launch).
constexpr double kLaunchNs = 10'000;

void Memcpy(FindingsContext& c, std::vector<Finding>* out) {
  double on_path = c.PathTime([&](const PathSegment& s) {
    return s.type == SegmentType::kDevice && c.t.slices.kind[static_cast<size_t>(s.slice)] == model::SliceKind::kMemcpy;
  });
  // A pageable copy's call stages the bytes through the driver's buffer: the
  // host is in the call for about as long as the copy runs, and the path goes
  // through the call rather than the copy.
  model::Column<uint8_t> staging(c.t.slices.size(), 0);
  for (size_t r = 0; r < c.t.device.size(); ++r)
    if (c.t.device.pinned[r] == 0 && c.t.device.launch[r] != model::kNone &&
        c.t.slices.kind[c.t.device.slice[r]] == model::SliceKind::kMemcpy)
      staging[static_cast<size_t>(c.t.device.launch[r])] = 1;
  on_path += static_cast<double>(c.PathTimeInside([&](size_t s) { return staging[s] != 0; }));
  double per_step = c.PerStep(on_path);
  double pct = c.Pct(per_step);
  if (pct < 3) return;
  double bytes = 0, pageable = 0, copies = 0, pageable_ns = 0, pageable_bytes = 0, saved = 0;
  bool measured = true;
  // Where the program asked for each copy (the Python file:line of the op
  // around its API call: a .to(device), a copy_): copies and bytes per site.
  std::map<model::StringId, std::pair<double, double>> at_site;
  std::map<model::CopyKind, double> pinned_bw;
  for (size_t r = 0; r < c.t.device.size(); ++r) {
    size_t s = c.t.device.slice[r];
    if (c.t.slices.kind[s] != model::SliceKind::kMemcpy || !c.InSteps(s)) continue;
    copies += 1;
    bytes += static_cast<double>(c.t.device.bytes[r]);
    for (int32_t p = c.t.device.launch[r]; p != model::kNone; p = c.t.slices.parent[static_cast<size_t>(p)]) {
      int32_t row = c.t.OpRow(static_cast<uint32_t>(p));
      if (row != model::kNone && c.t.ops.site[static_cast<size_t>(row)] != 0) {
        auto& site = at_site[c.t.ops.site[static_cast<size_t>(row)]];
        site.first += 1;
        site.second += static_cast<double>(c.t.device.bytes[r]);
        break;
      }
    }
    if (c.t.device.pinned[r] != 0) continue;
    pageable += 1;
    double d = static_cast<double>(c.t.slices.dur[s]), b = static_cast<double>(c.t.device.bytes[r]);
    pageable_ns += d;
    pageable_bytes += b;
    auto kind = c.t.device.copy_kind[r];
    auto it = pinned_bw.find(kind);
    if (it == pinned_bw.end()) {
      bool m = false;
      it = pinned_bw.emplace(kind, PinnedBandwidth(c.t, kind, &m)).first;
      measured = measured && m;
    }
    // What-if: the same bytes from pinned memory, at the pinned bandwidth (a
    // copy already faster than that saves nothing).
    if (it->second > 0) saved += std::max(0.0, d - b / it->second * 1e9);
  }
  Finding f;
  f.category = "memcpy";
  f.title = fmt::format("Copies between host and device are on the critical path: {:.0f}% of the step", pct);
  f.evidence = fmt::format("{} per step of copies sit on the critical path; {} copies per step move {}, {} "
                           "of them from pageable host memory",
                           Ms(per_step), N(c.PerStep(copies)), MiB(c.PerStep(bytes)), N(c.PerStep(pageable)));
  double pageable_bw = pageable_ns > 0 ? pageable_bytes / (pageable_ns * 1e-9) : 0;
  double pinned = 0;
  for (auto& [k, v] : pinned_bw) pinned = std::max(pinned, v);
  bool described = false;
  for (const auto& d : c.t.devices) described = described || d.compute_major > 0;
  const char* source = measured ? "reach" : described ? "typically reach, on this link," : "reach at least, on PCIe 3 x16,";
  if (pageable > 0)
    f.evidence += fmt::format(" ({} per step at {:.1f} GB/s; pinned copies {} {:.1f} GB/s)", MiB(c.PerStep(pageable_bytes)),
                              pageable_bw / 1e9, source, pinned / 1e9);
  f.evidence += ".";
  std::vector<std::tuple<double, double, std::string>> sites;  // bytes, copies, site
  for (const auto& [site, n] : at_site) sites.emplace_back(n.second, n.first, std::string(c.t.strings.Get(site)));
  std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) > std::get<0>(b) : std::get<2>(a) < std::get<2>(b);
  });
  for (const auto& [b, n, site] : sites)
    f.where.push_back(fmt::format("{} ({} copies, {} per step)", site, N(c.PerStep(n)), MiB(c.PerStep(b))));
  if (!sites.empty()) {
    f.evidence += " The program asks for them at ";
    for (size_t k = 0; k < sites.size() && k < 3; ++k)
      f.evidence += fmt::format("{}{} ({} per step)", k ? ", " : "", std::get<2>(sites[k]), MiB(c.PerStep(std::get<0>(sites[k]))));
    f.evidence += sites.size() > 3 ? fmt::format(" and {} more places.", sites.size() - 3) : ".";
  }
  f.metrics = {{"copy_ns_on_path_per_step", per_step}, {"copies_per_step", c.PerStep(copies)},
               {"bytes_per_step", c.PerStep(bytes)}, {"pageable_copies_per_step", c.PerStep(pageable)},
               {"pageable_bandwidth_bytes_per_s", pageable_bw}, {"pinned_bandwidth_bytes_per_s", pinned}};
  const model::Trace& t = c.t;
  // Pageable copies: what pinning saves, capped by the copies' time on the path.
  // Pinned ones already: asynchronous copies on a side stream can hide about
  // half of what is on the path behind compute.
  if (pageable > 0 && saved > 0) {
    // Replayed: each pageable copy at the pinned bandwidth of its direction,
    // and asynchronous (its call no longer waits for it).
    auto pageable_row = [&t](uint32_t row) {
      return t.device.pinned[row] == 0 && t.slices.kind[t.device.slice[row]] == model::SliceKind::kMemcpy;
    };
    ReplayFix fix;
    fix.device = [&t, &pinned_bw, pageable_row](const ReplayStep&, const ReplayTask& task) {
      double d = static_cast<double>(task.dur);
      if (!pageable_row(task.row)) return d;
      auto it = pinned_bw.find(t.device.copy_kind[task.row]);
      if (it == pinned_bw.end() || it->second <= 0) return d;
      return std::min(d, static_cast<double>(t.device.bytes[task.row]) / it->second * 1e9);
    };
    fix.drop_wait = [pageable_row](const ReplayStep& st, const ReplayPiece& p) {
      return p.wait == ReplayPiece::kWaitTask && pageable_row(st.tasks[static_cast<size_t>(p.wait_task)].row);
    };
    // The call that staged pageable bytes through the driver's buffer (the
    // `staging` calls above) returns at once from pinned memory: what is left
    // of it is a launch.
    fix.host = [&staging](const ReplayStep&, const ReplayPiece& p) {
      double own = static_cast<double>(p.own);
      return p.slice != model::kNone && staging[static_cast<size_t>(p.slice)] ? std::min(own, kLaunchNs) : own;
    };
    c.Replayed(&f, fix);
    f.what_if = fmt::format("the {} of pageable copies per step from pinned memory at {:.1f} GB/s ({}) instead of {:.1f} "
                            "GB/s: {} less per step",
                            MiB(c.PerStep(pageable_bytes)), pinned / 1e9,
                            measured ? "measured in this trace" : described ? "the link's typical" : "PCIe 3 x16's",
                            pageable_bw / 1e9, Ms(std::min(c.PerStep(saved), per_step)));
  } else {
    // Replayed: asynchronous copies, overlapped with compute on a side stream,
    // hide about half of their time.
    ReplayFix fix = ScaleTasks([&t](uint32_t row) { return t.slices.kind[t.device.slice[row]] == model::SliceKind::kMemcpy; }, 0.5);
    fix.drop_wait = [](const ReplayStep&, const ReplayPiece& p) { return p.wait == ReplayPiece::kWaitTask; };
    c.Replayed(&f, fix);
    f.what_if = "asynchronous copies on a side stream hide about half of the copy time on the critical path";
  }
  f.suggestion = "Use pinned host memory (pin_memory=True) and non-blocking copies (tensor.to(device, non_blocking=True)) "
                 "on a separate stream so that transfers overlap with compute; keep data resident on the device across "
                 "steps; copy fewer, larger buffers.";
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

// Diagnosis rule: the step's compute runs in an unoptimized library. The
// reference BLAS (netlib's, Debian's default libblas.so.3 until an optimized
// one is installed) computes a matrix product with scalar triple loops: one
// multiply-add per cycle or so, where an optimized BLAS (OpenBLAS, BLIS, MKL)
// uses the core's vector FMA units, blocked for its caches, on every core.
// Found in the CPU samples of the step's thread: their innermost frame is a
// BLAS routine's own Fortran entry point (sgemm_, dgemv_...) doing the work
// itself, where an optimized BLAS's samples land in its kernels
// (sgemm_kernel_HASWELL, dgemm_oncopy...).
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>

#include "analysis/findings_context.h"
#include "analysis/track_rows.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The reference BLAS's routines, as their Fortran entry points (sgemm_), and
// the helpers only it calls in its loops (lsame_ compares option letters).
bool IsReferenceBlasRoutine(std::string_view f) {
  static const std::set<std::string_view> kCore = {
      "gemm", "symm", "hemm", "syrk", "herk", "syr2k", "her2k", "trmm", "trsm", "gemv", "gbmv", "symv", "hemv",
      "sbmv", "trmv", "trsv", "tbmv", "tbsv", "ger",  "geru", "gerc", "syr",  "syr2", "her",  "her2", "axpy",
      "dot",  "dotu", "dotc", "scal", "copy", "swap", "nrm2", "asum", "rot"};
  if (f == "lsame_" || f == "xerbla_") return true;
  if (f.size() < 4 || f.back() != '_') return false;
  char p = f[0];
  if (p != 's' && p != 'd' && p != 'c' && p != 'z') return false;
  return kCore.count(f.substr(1, f.size() - 2)) > 0;
}

bool IsBlasModule(std::string_view m) {
  return StartsWith(m, "libblas") || StartsWith(m, "librefblas") || StartsWith(m, "libcblas");
}

// What an optimized BLAS does with the same products, at least: vector FMA
// units (8-16 multiply-adds per cycle and core against the reference's one or
// two), cache blocking. Measured on this project's 2-core machine with Debian's
// OpenBLAS against its reference BLAS, the products ran 12-20x faster; 10x is
// the conservative end, before more cores.
constexpr double kOptimizedSpeedup = 10;

}  // namespace

void UnoptimizedLibrary(FindingsContext& c, std::vector<Finding>* out) {
  const model::Trace& t = c.t;
  const auto& cs = t.cpu_samples;
  const auto& st = t.thread_states;
  double samples = 0, ref = 0, on_cpu = 0;
  std::map<std::string, double> routines;
  std::string module;
  // Per op name (the innermost op around each sample): its samples and those in the reference BLAS.
  std::map<model::StringId, std::pair<double, double>> by_op;
  auto op_of = [&](uint32_t track, int64_t ts) -> int32_t {
    for (int32_t s = t.SliceAt(track, ts); s != model::kNone; s = t.slices.parent[static_cast<size_t>(s)])
      if (t.slices.kind[static_cast<size_t>(s)] == model::SliceKind::kOp) return s;
    return model::kNone;
  };
  for (const auto& w : c.windows) {
    if (w.track == UINT32_MAX) continue;
    auto rows = std::equal_range(cs.track.begin(), cs.track.end(), w.track);
    auto first = cs.ts.begin() + (rows.first - cs.track.begin());
    auto last = cs.ts.begin() + (rows.second - cs.track.begin());
    for (auto it = std::lower_bound(first, last, w.start); it != last && *it < w.end; ++it) {
      size_t r = static_cast<size_t>(it - cs.ts.begin());
      samples += 1;
      int32_t op = op_of(w.track, *it);
      std::pair<double, double>* per_op = op == model::kNone ? nullptr : &by_op[t.slices.name[static_cast<size_t>(op)]];
      if (per_op) per_op->first += 1;
      int32_t k = cs.callsite[r];
      if (k < 0) continue;
      uint32_t fr = t.callsites.frame[static_cast<size_t>(k)];
      if (t.frames.kind[fr] != model::FrameKind::kNative) continue;
      std::string_view fn = t.strings.Get(t.frames.function[fr]);
      std::string_view mod = t.strings.Get(t.frames.module[fr]);
      if (!IsBlasModule(mod) || !IsReferenceBlasRoutine(fn)) continue;
      ref += 1;
      if (per_op) per_op->second += 1;
      routines[std::string(fn)] += 1;
      module = std::string(mod);
    }
    if (st.size() > 0) on_cpu += static_cast<double>(RunningIn(st, TrackRows(st, w.track), w.start, w.end));
  }
  if (ref < 10 || samples <= 0 || ref / samples < 0.1) return;
  double cpu_per_step = st.size() > 0 && on_cpu > 0 ? c.PerStep(on_cpu) : c.step_ns;
  // The ops whose samples are mostly the reference BLAS's (aten::mm, addmm,
  // bmm, MatMul) are its calls: their own time, measured exactly, is the BLAS's
  // time (a few samples per op call would give only a noisy share of it). The
  // BLAS's samples outside such ops (NumPy's products, ops with other work)
  // count as their share of the thread's CPU time.
  std::set<model::StringId> blas_ops;
  double ref_in_ops = 0;
  for (const auto& [name, n] : by_op)
    if (n.second >= 2 && n.second >= 0.5 * n.first) {
      blas_ops.insert(name);
      ref_in_ops += n.second;
    }
  double op_ns = 0;
  if (!blas_ops.empty())
    for (size_t i = 0; i < t.slices.size(); ++i)
      if (t.slices.kind[i] == model::SliceKind::kOp && blas_ops.count(t.slices.name[i])) {
        int w = c.WindowOf(t.slices.ts[i]);
        if (w >= 0 && c.windows[static_cast<size_t>(w)].track == t.slices.track[i]) op_ns += static_cast<double>((*c.self)[i]);
      }
  // (The ops' wall time, preemptions included: a product 10x shorter is
  // preempted about 10x less on a loaded machine too.)
  double blas_ns = std::min(c.PerStep(op_ns) + cpu_per_step * (ref - ref_in_ops) / samples, c.step_ns);
  double pct = c.Pct(blas_ns);
  Finding f;
  f.category = "unoptimized_library";
  f.title = fmt::format("{:.0f}% of the step runs in the reference BLAS ({}), the slowest implementation of its matrix "
                        "products",
                        pct, module);
  std::string top;
  for (auto& [n, v] : routines) top += fmt::format("{}{} {:.0f}", top.empty() ? "" : ", ", n, v);
  std::string ops;
  for (model::StringId n : blas_ops) ops += fmt::format("{}{}", ops.empty() ? "" : ", ", t.strings.Get(n));
  f.evidence = fmt::format("{:.0f} of the step thread's {:.0f} CPU samples in the measured steps are inside the "
                           "reference BLAS's own routines ({}) of {}{}: about {} of a {} step. The reference BLAS "
                           "multiplies with scalar loops on one core; an optimized BLAS runs the same products "
                           "about {:.0f}x faster or more.",
                           ref, samples, top, module,
                           ops.empty() ? "" : fmt::format(", the work of the ops {} (their own time counted)", ops),
                           HumanDuration(blas_ns), HumanDuration(c.step_ns), kOptimizedSpeedup);
  f.metrics = {{"blas_samples", ref}, {"samples", samples}, {"blas_ns_per_step", blas_ns}, {"step_ns", c.step_ns},
               {"blas_op_ns_per_step", c.PerStep(op_ns)}};
  for (auto& [n, v] : routines) f.involved.push_back(n);
  // Replayed: the reference BLAS's time (inside ops first, then in the
  // program's own calls) that many times shorter.
  double cut = blas_ns * (1 - 1 / kOptimizedSpeedup);
  c.Replayed(&f, ReduceParts({{{StepPart::kCompute}, cut, {StepPart::kPython, StepPart::kInput, StepPart::kDispatch}}},
                             c.replay->steps()));
  f.what_if = fmt::format("the reference BLAS's share of the step ({:.0f}%) {:.0f}x faster, as an optimized BLAS runs "
                          "these routines",
                          pct, kOptimizedSpeedup);
  f.suggestion = "Use an optimized BLAS: on Debian/Ubuntu `apt install libopenblas0-pthread` (it becomes libblas.so.3 "
                 "through update-alternatives; or run with LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread "
                 "to try it first), or use a PyTorch/NumPy build linked with MKL or OpenBLAS (the PyPI wheels are).";
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

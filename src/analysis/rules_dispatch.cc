// Dispatch overhead as a cause: many tiny framework ops per step, called one
// after the other from the program (a Python loop over columns or small
// tensors, a recurrent layer stepping through time), each paying the
// framework's per-call cost for a few microseconds of math. The finding
// claims the loops' time on the step's critical path that dispatch really
// spent, names the module the calls come from, and replays the step with each
// loop as one call per distinct op.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/findings_context.h"
#include "analysis/name_classes.h"
#include "base/intervals.h"
#include "base/units.h"

namespace strata::analysis {
namespace {

std::string Ms(double ns) { return HumanDuration(ns); }
std::string Us(double ns) { return HumanDuration(ns); }
std::string N(double n) { return HumanCount(n); }

}  // namespace

void DispatchOverheadHost(FindingsContext& c, std::vector<Finding>* out) {
  // Many tiny framework ops per step, called one after the other from the
  // program (a Python loop over columns or small tensors): each call pays the
  // framework's dispatch cost (argument parsing, dispatcher, allocation) and the
  // interpreter's between calls, for a few microseconds of math. Counted per
  // call the program makes: outermost ops only (an op's nested ops are part of
  // its dispatch). The calls of one scope (a module's forward, a span, the step
  // itself) form a loop; its time runs from its first tiny call to its last,
  // host code between the calls included (vectorizing removes that too), less
  // the larger ops of the thread that ran in between, in any scope.
  const auto& sl = c.t.slices;
  constexpr int64_t kTiny = 20000;  // ns: an op this short does little math
  constexpr double kMinLoop = 8;    // tiny calls in a scope before it counts as a loop
  struct Loop {
    int64_t first = INT64_MAX, last = INT64_MIN;
    uint32_t track = 0;
    double calls = 0, ns = 0;
  };
  // Outermost op calls in the steps, with their enclosing non-op scope.
  struct Call {
    size_t slice;
    int window;
    int32_t scope;
  };
  std::vector<Call> calls;
  std::map<model::StringId, std::vector<int64_t>> durations;
  NameClasses nc(c.t);
  for (size_t i = 0; i < sl.size(); ++i) {
    if (sl.kind[i] != model::SliceKind::kOp) continue;
    int w = c.WindowOf(sl.ts[i]);
    if (w < 0) continue;
    int32_t scope = sl.parent[i];
    bool outermost = true;
    for (; scope != model::kNone; scope = sl.parent[static_cast<size_t>(scope)])
      if (sl.kind[static_cast<size_t>(scope)] == model::SliceKind::kOp) outermost = false;
      else break;
    if (!outermost) continue;
    // The step's own thread only (loader workers and other threads overlap
    // with it), and not inside data loading, which input_pipeline accounts.
    uint32_t step_track = c.windows[static_cast<size_t>(w)].track;
    if (step_track != UINT32_MAX && sl.track[i] != step_track) continue;
    if (nc.Within(c.t, scope, kNameDataLoading)) continue;
    calls.push_back({i, w, scope});
    durations[sl.name[i]].push_back(sl.dur[i]);
  }
  // An op is tiny by its typical (median) call: a call preempted by other load
  // on the machine is longer but costs the same dispatch.
  std::set<model::StringId> tiny;
  for (auto& [name, d] : durations) {
    std::nth_element(d.begin(), d.begin() + static_cast<ptrdiff_t>(d.size() / 2), d.end());
    if (d[d.size() / 2] < kTiny) tiny.insert(name);
  }
  std::map<std::tuple<int, uint32_t, int32_t>, Loop> loops;  // (window, thread, enclosing non-op scope)
  // The larger ops of each step's thread, whatever scope they ran in (a
  // module's forward between two tiny calls of the step's own code): their
  // time is the ops' work, never dispatch overhead.
  std::map<std::pair<int, uint32_t>, std::vector<std::pair<int64_t, int64_t>>> large;
  double ops = static_cast<double>(calls.size());
  std::map<std::string, double> by_name;
  // Where the tiny calls come from: the module whose forward made them (for an
  // autograd node, its forward op's module), so that a loop inside a layer (a
  // recurrent layer stepping through time, its backward one node per step and
  // gate) is named, not only its ops.
  auto module_of = [&sl](int32_t s) {
    for (; s != model::kNone; s = sl.parent[static_cast<size_t>(s)])
      if (sl.kind[static_cast<size_t>(s)] == model::SliceKind::kModule) return s;
    return model::kNone;
  };
  std::map<std::pair<model::StringId, bool>, double> by_module;  // (module, in its backward) -> tiny calls
  // Outermost op slice of each autograd node (PyTorch records the node inside
  // "autograd::engine::evaluate_function: ...") -> the node's forward op.
  std::unordered_map<size_t, int32_t> forward_of_call;
  for (size_t r = 0; r < c.t.ops.size(); ++r) {
    if (c.t.ops.scope[r] != model::OpScope::kBackward || c.t.ops.forward[r] == model::kNone) continue;
    size_t top = c.t.ops.slice[r];
    for (int32_t p = sl.parent[top]; p != model::kNone && sl.kind[static_cast<size_t>(p)] == model::SliceKind::kOp;
         p = sl.parent[static_cast<size_t>(p)])
      top = static_cast<size_t>(p);
    forward_of_call.emplace(top, c.t.ops.forward[r]);
  }
  for (const Call& k : calls) {
    size_t i = k.slice;
    Loop& l = loops[{k.window, sl.track[i], k.scope}];
    if (!tiny.count(sl.name[i])) {
      large[{k.window, sl.track[i]}].emplace_back(sl.ts[i], sl.end(i));
      continue;
    }
    l.first = std::min(l.first, sl.ts[i]);
    l.last = std::max(l.last, sl.end(i));
    l.track = sl.track[i];
    l.calls += 1;
    l.ns += static_cast<double>(sl.dur[i]);
    by_name[std::string(c.Name(i))] += 1;
    auto fwd = forward_of_call.find(i);
    bool backward = fwd != forward_of_call.end();
    int32_t m = module_of(backward ? fwd->second : static_cast<int32_t>(i));
    if (m != model::kNone) by_module[{sl.name[static_cast<size_t>(m)], backward}] += 1;
  }
  // The autograd nodes the loops' calls created run in the backward pass, one
  // per call: vectorizing removes them too. Forward op (outermost call) of each
  // backward node, through the node's innermost forward op.
  std::map<size_t, std::tuple<int, uint32_t, int32_t>> loop_of_call;
  for (const Call& k : calls)
    if (tiny.count(sl.name[k.slice])) loop_of_call[k.slice] = {k.window, sl.track[k.slice], k.scope};
  std::map<std::tuple<int, uint32_t, int32_t>, std::pair<double, double>> backward_of_loop;  // (nodes, ns)
  std::map<size_t, std::tuple<int, uint32_t, int32_t>> node_loop;  // backward node -> the loop of its forward call
  double backward_large_ns = 0;  // of nodes too long to count as dispatch in the breakdown
  for (size_t r = 0; r < c.t.ops.size(); ++r) {
    if (c.t.ops.scope[r] != model::OpScope::kBackward || c.t.ops.forward[r] == model::kNone) continue;
    size_t node = c.t.ops.slice[r];
    bool nested = false;  // a node inside another node's slice is part of it
    for (int32_t p = sl.parent[node]; p != model::kNone && !nested; p = sl.parent[static_cast<size_t>(p)]) {
      int32_t pr = c.t.OpRow(static_cast<uint32_t>(p));
      nested = pr != model::kNone && c.t.ops.scope[static_cast<size_t>(pr)] == model::OpScope::kBackward;
    }
    if (nested) continue;
    auto f = static_cast<size_t>(c.t.ops.forward[r]);
    for (int32_t p = sl.parent[f]; p != model::kNone && sl.kind[static_cast<size_t>(p)] == model::SliceKind::kOp;
         p = sl.parent[static_cast<size_t>(p)])
      f = static_cast<size_t>(p);
    auto it = loop_of_call.find(f);
    if (it == loop_of_call.end()) continue;
    auto& [n, ns] = backward_of_loop[it->second];
    node_loop[node] = it->second;
    n += 1;
    ns += static_cast<double>(sl.dur[node]);
    if (sl.dur[node] >= kTiny) backward_large_ns += static_cast<double>(sl.dur[node]);
  }
  double tiny_count = 0, tiny_ns = 0, loop_ns = 0, nloops = 0, backward_nodes = 0, backward_ns = 0, residual_ns = 0;
  std::map<std::tuple<int, uint32_t, int32_t>, std::set<model::StringId>> names_of_loop;
  for (const Call& k : calls)
    if (tiny.count(sl.name[k.slice])) names_of_loop[{k.window, sl.track[k.slice], k.scope}].insert(sl.name[k.slice]);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> loop_ranges(c.windows.size());
  // A loop's share on its step's critical path; in a step that was not walked
  // (kMaxWalkedSteps), the share of the loops of the walked steps.
  auto on_path_of = [&c](const Loop& l, size_t window) {
    double on_path = 0;
    for (const PathSegment& g : c.paths[window]->segments)
      if (g.track == l.track) on_path += static_cast<double>(Overlap(g.start, g.end, l.first, l.last));
    return on_path;
  };
  double walked_on = 0, walked_span = 0;
  if (c.walked_steps < c.windows.size())
    for (auto& [key, l] : loops)
      if (l.calls >= kMinLoop && c.walked[static_cast<size_t>(std::get<0>(key))]) {
        walked_on += on_path_of(l, static_cast<size_t>(std::get<0>(key)));
        walked_span += static_cast<double>(l.last - l.first);
      }
  for (auto& [key, l] : loops) {
    if (l.calls < kMinLoop) continue;
    loop_ranges[static_cast<size_t>(std::get<0>(key))].emplace_back(l.first, l.last);
    double span = static_cast<double>(l.last - l.first);
    for (auto [b, e] : large[{std::get<0>(key), std::get<1>(key)}])
      span -= static_cast<double>(Overlap(b, e, l.first, l.last));
    span = std::max(span, l.ns);
    // What the loop costs the step: the share of it on the step's critical
    // path (all of it when the host is the bottleneck; little when the host
    // runs ahead of a busy device).
    const auto window = static_cast<size_t>(std::get<0>(key));
    if (!c.walked[window]) span *= walked_span > 0 ? std::min(1.0, walked_on / walked_span) : 1.0;
    else if (l.last > l.first) span *= std::min(1.0, on_path_of(l, window) / static_cast<double>(l.last - l.first));
    nloops += 1;
    tiny_count += l.calls;
    tiny_ns += l.ns;
    loop_ns += span;
    // What stays after vectorizing: one call per distinct op of the loop, on the
    // whole tensor (its work was spread over the loop's calls), and its node.
    double mean_call = l.ns / l.calls;
    double distinct = static_cast<double>(names_of_loop[key].size());
    auto b = backward_of_loop.find(key);
    double nodes = b == backward_of_loop.end() ? 0 : b->second.first;
    double node_ns = b == backward_of_loop.end() ? 0 : b->second.second;
    backward_nodes += nodes;
    backward_ns += node_ns;
    residual_ns += distinct * mean_call + (nodes > 0 ? distinct * node_ns / nodes : 0) + (l.ns - mean_call * l.calls);
  }
  double per_step_count = c.PerStep(tiny_count);
  double per_step_ops_ns = c.PerStep(tiny_ns);
  double per_step_loop_ns = c.PerStep(loop_ns + backward_ns);
  // The loops' time is claimed only as far as the step's thread really spent it
  // on framework overhead (tiny ops, the gaps between calls): never the work of
  // the larger ops around them, nor the program's own code.
  // (The autograd nodes of the calls, in the backward pass, are theirs too.)
  if (c.breakdown.counted > 0)
    per_step_loop_ns = std::min(per_step_loop_ns, c.breakdown.PerStep(StepPart::kDispatch) + c.PerStep(backward_large_ns));
  double pct = c.Pct(per_step_loop_ns);
  if (per_step_count < 100 || pct < 10) return;
  // What-if, replayed: vectorizing turns each loop into one call per distinct
  // op on the whole tensor (and one autograd node each): the per-call costs of
  // the others go, and the host code between them; the arithmetic stays. The
  // loops' framework and program time (and their autograd nodes) shrink by
  // what vectorizing removes; the device work they launch stays.
  std::set<int32_t> nodes;
  for (const auto& [node, key] : node_loop)
    if (loops[key].calls >= kMinLoop) nodes.insert(static_cast<int32_t>(node));
  auto selected = [&c, &loop_ranges, &nodes](const ReplayStep& st, const ReplayPiece& p) {
    if (WithinAny(c.t, p.slice, nodes)) return true;
    if (p.part != StepPart::kDispatch && p.part != StepPart::kPython && p.part != StepPart::kAllocation &&
        p.part != StepPart::kCopy)
      return false;
    for (auto [a, b] : loop_ranges[st.window])
      if (p.start < b && p.start + p.dur > a) return true;
    return false;
  };
  double selected_ns = 0;
  for (const ReplayStep& st : c.replay->steps())
    for (const ReplayPiece& p : st.pieces)
      if (selected(st, p)) selected_ns += static_cast<double>(p.own);
  double cut = std::max(0.0, per_step_loop_ns - c.PerStep(residual_ns)) * static_cast<double>(c.replay->steps().size());
  double keep = selected_ns > 0 ? std::clamp(1 - cut / selected_ns, 0.0, 1.0) : 1.0;
  ReplayFix fix;
  fix.host = [selected, keep](const ReplayStep& st, const ReplayPiece& p) {
    return selected(st, p) ? static_cast<double>(p.own) * keep : static_cast<double>(p.own);
  };
  Finding f;
  c.Replayed(&f, fix);
  f.category = "dispatch_overhead";
  f.title = fmt::format("{:.0f} tiny framework ops per step take {:.0f}% of the step", per_step_count, pct);
  f.evidence = fmt::format("{:.0f} op calls per step typically shorter than {} each (mean {}), issued one after the other in "
                           "{} scopes per step: {} per step inside the ops, {} with the host code between them and "
                           "the {} autograd nodes they create, of a {} step. Mostly per-call dispatch cost, not math. "
                           "{:.0f} op calls per step in all.",
                           per_step_count, Us(kTiny), Us(tiny_count > 0 ? tiny_ns / tiny_count : 0), N(c.PerStep(nloops)),
                           Ms(per_step_ops_ns), Ms(per_step_loop_ns), N(c.PerStep(backward_nodes)), Ms(c.step_ns),
                           c.PerStep(ops));
  f.metrics.insert(f.metrics.begin(), {{"tiny_ops_per_step", per_step_count},
               {"tiny_op_ns_per_step", per_step_ops_ns},
               {"backward_nodes_per_step", c.PerStep(backward_nodes)},
               {"backward_node_ns_per_step", c.PerStep(backward_ns)},
               {"tiny_op_loop_ns_per_step", per_step_loop_ns},
               {"step_ns", c.step_ns}});
  // The module that made most of them, where one made at least half.
  std::pair<model::StringId, bool> where{0, false};
  double where_calls = 0;
  for (const auto& [k, n] : by_module)
    if (n > where_calls) {
      where = k;
      where_calls = n;
    }
  std::string_view where_name = where_calls > 0 ? c.t.strings.Get(where.first) : std::string_view{};
  bool recurrent = false;
  if (where_calls >= 0.5 * tiny_count && where_calls > 0) {
    f.evidence += fmt::format(" {:.0f} of the tiny calls per step are {} {}.", c.PerStep(where_calls),
                              where.second ? "autograd nodes of the backward of" : "made inside", where_name);
    f.metrics.push_back({"tiny_ops_in_top_module_per_step", c.PerStep(where_calls)});
    // (a module slice is named "path (Class)")
    for (std::string_view cls : {"(LSTM)", "(GRU)", "(RNN)"}) recurrent |= where_name.ends_with(cls);
  }
  std::vector<std::pair<double, std::string>> top;
  for (auto& [n, v] : by_name) top.emplace_back(v, n);
  std::sort(top.rbegin(), top.rend());
  for (size_t k = 0; k < top.size() && k < 8; ++k) f.involved.push_back(top[k].second);
  f.what_if = fmt::format("each of the {} loops per step as one call per distinct op on the whole tensor: {} of calls, "
                          "host code between them and their autograd nodes become {}",
                          N(c.PerStep(nloops)), Ms(per_step_loop_ns), Ms(c.PerStep(residual_ns)));
  std::string torch_fix =
      "Batch the small operations into a few large ones (stack the tensors and apply each op once, use "
      "vectorized/fused functions, torch.compile or TorchScript to fuse elementwise chains); avoid Python loops over "
      "tensor elements, columns or small tensors.";
  if (recurrent)
    torch_fix += " The loop is a recurrent layer's, one time step at a time: on the CPU, PyTorch 2.x runs an LSTM, GRU "
                 "or RNN over a padded batch as one fused oneDNN op but over a PackedSequence step by step (pad the "
                 "batch and take each sequence's last valid output by its length); on a GPU, cuDNN fuses both.";
  f.suggestion = c.Fix(torch_fix.c_str(),
                       "Batch the small operations into a few large ones (whole-tensor ops, tf.vectorized_map / "
                       "jax.vmap instead of Python loops over elements or rows), and compile the step with XLA "
                       "(tf.function(jit_compile=True), Keras compile(jit_compile=True), jax.jit) so that chains of "
                       "small ops fuse into a few kernels.");
  out->push_back(std::move(f));
}

}  // namespace strata::analysis

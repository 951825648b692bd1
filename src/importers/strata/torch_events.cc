// Decoders of the framework level (schema_torch.cc): ops, record_function
// scopes, modules, automatic steps, allocator events, tiers, graphs. Ops become
// kOp slices with an OpTable row (kSpan for record_function scopes), modules
// kModule slices, steps kStep slices; after Finalize the importer links
// backward nodes to their forward ops and builds dataflow edges from tensor ids.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "format/schema.h"
#include "importers/strata/decoder.h"
#include "importers/strata/torch_payloads.h"
#include "importers/strata/marker_steps.h"
#include "importers/strata/torch_steps.h"

namespace strata::importers::strata_ctf {
namespace {

using format::EventView;
using format::kThreadStream;
using model::kNone;
using model::OpScope;
using model::SliceKind;

struct PendingOp {
  uint32_t process = 0;
  uint32_t track = 0;
  int64_t begin = 0;
  OpScope scope = OpScope::kFunction;
  int64_t seq = -1;
  uint64_t fwd_thread = 0;
  int32_t slice = -1;  // pre-Finalize slice index, set when the op closes
  int32_t row = -1;    // OpTable row
  model::StringId shapes = 0, dtypes = 0, site = 0;
  int64_t flops = -1, bytes = -1;
  uint32_t in_begin = 0, in_count = 0, out_begin = 0, out_count = 0;  // into TorchState::tensors
};

struct PendingStep {
  int64_t ts = 0;
  uint64_t step = 0;
};

struct TierChange {
  uint32_t process;
  int64_t ts;
  uint32_t tier;
};

struct TorchState {
  std::vector<PendingOp> ops;
  std::vector<uint64_t> tensors;
  std::map<const StreamState*, PendingStep> pending_steps;
  // Per thread: the host-reading and copying calls from Python open now (site
  // names), and the last op given the innermost one's site (an index into ops,
  // -1 before the first).
  std::map<const StreamState*, std::vector<std::pair<model::StringId, int32_t>>> sites;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> track_of_thread;  // (process, framework thread) -> track
  std::unordered_map<uint32_t, uint64_t> thread_of_track;
  std::vector<BatchMark> batches;
  // Steps found automatically (optimizer.step boundaries): torch_steps.h.
  std::vector<FoundStep> auto_steps;
  std::vector<OptimizerMark> optimizer_marks;
  std::vector<LoopHead> loop_heads;
  std::vector<std::pair<uint32_t, int64_t>> partial_steps;  // (track, begin) of first found steps
  std::map<uint32_t, size_t> optimizer_steps_per_step;       // track -> optimizer steps an iteration takes (> 1)
  std::vector<TierChange> tiers;
  std::map<uint32_t, int64_t> process_end;  // last event of any stream of the process
  uint32_t mode = UINT32_MAX;
  model::StringId step_name = 0;
  bool sizeless_frees = false;  // mem_free events with bytes 0 (resolved after Finalize)
  uint64_t unmatched_ends = 0, orphan_details = 0, bad_ids = 0, orphan_step_ends = 0, ooms = 0;
};

// Frees recorded without their size (bytes 0: the observer's CPU allocator
// wrapper keeps no table of sizes) get the size of the block allocated at the
// same address in the same process and device, earlier. A free with no such
// allocation (a block allocated before memory was recorded) is dropped: it
// says nothing about the level. Runs after Finalize, when no importer holds
// memory row numbers any more.
void ResolveSizelessFrees(model::Trace& t) {
  model::MemoryTable& m = t.memory;
  std::vector<uint32_t> order(m.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return m.ts[a] < m.ts[b]; });
  using Key = std::tuple<uint32_t, int32_t, model::MemoryLayer, uint64_t>;  // process, device, layer, address
  std::map<Key, int64_t> live;
  std::vector<bool> drop(m.size(), false);
  for (uint32_t i : order) {
    if (m.addr[i] == 0) continue;
    uint32_t process = m.track[i] < t.tracks.size() ? t.tracks[m.track[i]].process : 0;
    Key k{process, m.device[i], m.layer[i], m.addr[i]};
    if (m.bytes[i] > 0) {
      live[k] = m.bytes[i];
      continue;
    }
    auto it = live.find(k);
    if (m.bytes[i] == 0) {
      if (it == live.end()) {
        drop[i] = true;
        continue;
      }
      m.bytes[i] = -it->second;
    }
    if (it != live.end()) live.erase(it);
  }
  m.Erase(drop);
}

bool IsOpEntry(const OpenSlice& o) { return o.ext >= 0 && (o.kind == SliceKind::kOp || o.kind == SliceKind::kSpan); }

int32_t NewOp(LoadContext& ctx, StreamState& ss, int64_t ts, OpScope scope, int64_t seq, uint64_t fwd) {
  auto& st = ctx.Ext<TorchState>();
  PendingOp op;
  op.process = ss.process->index;
  op.track = ss.track;
  op.begin = ts;
  op.scope = scope;
  op.seq = seq;
  op.fwd_thread = fwd;
  // The ops a call site runs at its outermost level carry the site: the first
  // to begin inside it, and each that begins after the last of them closed
  // (Tensor.to runs aten::resolve_conj, then aten::to).
  int32_t index = static_cast<int32_t>(st.ops.size());
  if (scope == OpScope::kFunction && !st.sites.empty()) {
    auto it = st.sites.find(&ss);
    if (it != st.sites.end() && !it->second.empty()) {
      int32_t& last = it->second.back().second;
      if (last < 0 || static_cast<size_t>(last) >= st.ops.size() || st.ops[static_cast<size_t>(last)].slice >= 0) {
        op.site = it->second.back().first;
        last = index;
      }
    }
  }
  st.ops.push_back(op);
  return index;
}

void BeginOp(LoadContext& ctx, StreamState& ss, const EventView& ev, SliceKind kind, OpScope scope, int64_t seq,
             uint64_t fwd, uint32_t name) {
  int64_t ts = static_cast<int64_t>(ev.ts);
  OpenSlice o{ts, ctx.Name(*ss.process, name), kind, static_cast<uint64_t>(seq < 0 ? 0 : seq)};
  o.ext = NewOp(ctx, ss, ts, scope, seq, fwd);
  ss.stack.push_back(o);
}

// Closes stack entries down to and including entry `k`.
void CloseDownTo(LoadContext& ctx, StreamState& ss, size_t k, int64_t ts) {
  while (ss.stack.size() > k) {
    const OpenSlice o = ss.stack.back();
    ss.stack.pop_back();
    ctx.AddSlice(o, ts, ss.track, ss.stack.size());
  }
}

// The innermost open entry satisfying `pred`, or -1.
template <typename Pred>
int64_t FindOpen(const StreamState& ss, Pred pred) {
  for (size_t k = ss.stack.size(); k-- > 0;)
    if (pred(ss.stack[k])) return static_cast<int64_t>(k);
  return -1;
}

PendingOp* TopOp(LoadContext& ctx, StreamState& ss) {
  int64_t k = FindOpen(ss, [](const OpenSlice& o) { return IsOpEntry(o); });
  if (k < 0) return nullptr;
  return &ctx.Ext<TorchState>().ops[static_cast<size_t>(ss.stack[static_cast<size_t>(k)].ext)];
}

// Adds the tensor ids of `s` to the pool; returns (begin, count).
std::pair<uint32_t, uint32_t> AddIds(TorchState& st, std::string_view s) {
  auto begin = static_cast<uint32_t>(st.tensors.size());
  st.bad_ids += ParseTensorIds(s, &st.tensors);
  return {begin, static_cast<uint32_t>(st.tensors.size() - begin)};
}

void OnEnd(LoadContext& ctx, StreamState& ss, int64_t ts, bool user_scope, model::StringId name) {
  int64_t k = FindOpen(ss, [&](const OpenSlice& o) {
    if (!IsOpEntry(o)) return false;
    if (user_scope) return o.kind == SliceKind::kSpan && o.name == name;
    return o.kind == SliceKind::kOp;
  });
  if (k < 0) {
    ++ctx.Ext<TorchState>().unmatched_ends;
    return;
  }
  CloseDownTo(ctx, ss, static_cast<size_t>(k), ts);
}

// --- after Finalize ------------------------------------------------------------

// Backward node -> the forward op with the same sequence number on the thread
// that ran the forward (the innermost: the op that created the node).
void LinkBackward(LoadContext& ctx, TorchState& st) {
  model::Trace& t = ctx.trace();
  std::map<std::tuple<uint32_t, uint64_t, int64_t>, std::pair<int64_t, int32_t>> forward;  // -> (begin, slice)
  for (const PendingOp& op : st.ops) {
    if (op.row < 0 || op.scope != OpScope::kFunction || op.seq < 0) continue;
    auto th = st.thread_of_track.find(op.track);
    if (th == st.thread_of_track.end()) continue;
    auto key = std::make_tuple(op.process, th->second, op.seq);
    int32_t slice = static_cast<int32_t>(t.ops.slice[static_cast<size_t>(op.row)]);
    auto [it, inserted] = forward.try_emplace(key, op.begin, slice);
    if (!inserted && op.begin >= it->second.first) it->second = {op.begin, slice};
  }
  for (const PendingOp& op : st.ops) {
    if (op.row < 0 || op.scope != OpScope::kBackward || op.seq < 0) continue;
    auto it = forward.find(std::make_tuple(op.process, op.fwd_thread, op.seq));
    if (it != forward.end()) t.ops.forward[static_cast<size_t>(op.row)] = it->second.second;
  }
}

// Dataflow edges: sweep each process's ops in time order; an op's outputs
// become the producers of their tensors when it ends, its inputs are looked up
// when it begins. A consumer whose enclosing op also took the tensor as input
// leaves the edge to that op (aten::relu, not the clamp_min inside it).
void BuildEdges(LoadContext& ctx, TorchState& st) {
  model::Trace& t = ctx.trace();
  struct Ev {
    int64_t ts;
    bool produce;  // ends sort before begins at the same time
    uint32_t op;
  };
  std::map<uint32_t, std::vector<Ev>> by_process;
  for (uint32_t i = 0; i < st.ops.size(); ++i) {
    const PendingOp& op = st.ops[i];
    if (op.row < 0 || (op.in_count == 0 && op.out_count == 0)) continue;
    uint32_t s = t.ops.slice[static_cast<size_t>(op.row)];
    by_process[op.process].push_back({op.begin, false, i});
    by_process[op.process].push_back({t.slices.end(s), true, i});
  }
  std::unordered_map<int32_t, uint32_t> op_of_slice;  // slice -> pending op, for the ancestor test
  for (uint32_t i = 0; i < st.ops.size(); ++i)
    if (st.ops[i].row >= 0 && st.ops[i].in_count > 0)
      op_of_slice[static_cast<int32_t>(t.ops.slice[static_cast<size_t>(st.ops[i].row)])] = i;
  auto takes = [&](uint32_t op, uint64_t tensor) {
    const PendingOp& o = st.ops[op];
    for (uint32_t k = 0; k < o.in_count; ++k)
      if (st.tensors[o.in_begin + k] == tensor) return true;
    return false;
  };
  for (auto& [process, evs] : by_process) {
    std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      return a.produce && !b.produce;
    });
    std::unordered_map<uint64_t, uint32_t> producer;
    for (const Ev& e : evs) {
      const PendingOp& op = st.ops[e.op];
      int32_t slice = static_cast<int32_t>(t.ops.slice[static_cast<size_t>(op.row)]);
      if (e.produce) {
        for (uint32_t k = 0; k < op.out_count; ++k) producer[st.tensors[op.out_begin + k]] = e.op;
        continue;
      }
      for (uint32_t k = 0; k < op.in_count; ++k) {
        uint64_t tensor = st.tensors[op.in_begin + k];
        auto p = producer.find(tensor);
        if (p == producer.end() || p->second == e.op) continue;
        bool outer_takes_it = false;
        for (int32_t a = t.slices.parent[static_cast<size_t>(slice)]; a != kNone; a = t.slices.parent[static_cast<size_t>(a)]) {
          auto oa = op_of_slice.find(a);
          if (oa != op_of_slice.end() && takes(oa->second, tensor)) {
            outer_takes_it = true;
            break;
          }
        }
        if (outer_takes_it) continue;
        int32_t from = static_cast<int32_t>(t.ops.slice[static_cast<size_t>(st.ops[p->second].row)]);
        t.edges.Add(from, slice, tensor);
      }
    }
  }
}

// The periods each process recorded ops in, from its tier changes.
void BuildWindows(LoadContext& ctx, TorchState& st) {
  model::Trace& t = ctx.trace();
  std::stable_sort(st.tiers.begin(), st.tiers.end(), [](const TierChange& a, const TierChange& b) {
    return a.process != b.process ? a.process < b.process : a.ts < b.ts;
  });
  for (size_t i = 0; i < st.tiers.size();) {
    uint32_t p = st.tiers[i].process;
    int64_t end = st.process_end.count(p) ? st.process_end[p] : st.tiers[i].ts;
    int64_t open_ts = 0;
    uint32_t open_tier = 0;
    for (; i < st.tiers.size() && st.tiers[i].process == p; ++i) {
      const TierChange& c = st.tiers[i];
      if (open_tier > 0 && c.tier != open_tier) t.op_windows.push_back({p, open_ts, c.ts - open_ts, open_tier == 2});
      if (c.tier != open_tier) open_ts = c.ts;
      open_tier = c.tier;
    }
    if (open_tier > 0 && end > open_ts) t.op_windows.push_back({p, open_ts, end - open_ts, open_tier == 2});
  }
  // PyTorch picks an op's callbacks when the op is created and calls them just
  // after: an op created before its window closed but preempted in between begins
  // after the close. Its window ends at it, so that every recorded op lies in one.
  std::map<uint32_t, std::pair<size_t, size_t>> of_process;  // [first, last) in op_windows
  for (size_t w = 0; w < t.op_windows.size(); ++w) {
    auto [it, inserted] = of_process.try_emplace(t.op_windows[w].process, w, w + 1);
    if (!inserted) it->second.second = w + 1;
  }
  if (of_process.empty()) return;
  const model::SliceTable& s = t.slices;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.kind[i] != model::SliceKind::kOp || s.track[i] >= t.tracks.size()) continue;
    auto it = of_process.find(t.tracks[s.track[i]].process);
    if (it == of_process.end()) continue;
    auto first = t.op_windows.begin() + static_cast<std::ptrdiff_t>(it->second.first);
    auto last = t.op_windows.begin() + static_cast<std::ptrdiff_t>(it->second.second);
    auto next = std::upper_bound(first, last, s.ts[i], [](int64_t ts, const model::OpWindow& w) { return ts < w.ts; });
    if (next == first) continue;
    model::OpWindow& w = *(next - 1);
    if (s.ts[i] > w.ts + w.dur) w.dur = s.ts[i] - w.ts;
  }
}


}  // namespace

void RegisterTorchDecoders(DecoderRegistry& r) {
  r.On(kThreadStream, "op_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    BeginOp(ctx, ss, ev, SliceKind::kOp, OpScope::kFunction, -1, 0, PayloadReader(ev).Get<uint32_t>());
  });
  r.On(kThreadStream, "op_begin_seq", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t name = p.Get<uint32_t>();
    BeginOp(ctx, ss, ev, SliceKind::kOp, OpScope::kFunction, p.Get<int64_t>(), 0, name);
  });
  r.On(kThreadStream, "bwd_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    uint32_t name = p.Get<uint32_t>();
    int64_t seq = p.Get<int64_t>();
    BeginOp(ctx, ss, ev, SliceKind::kOp, OpScope::kBackward, seq, p.Get<uint64_t>(), name);
  });
  r.On(kThreadStream, "script_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    BeginOp(ctx, ss, ev, SliceKind::kOp, OpScope::kTorchScript, -1, 0, PayloadReader(ev).Get<uint32_t>());
  });
  r.On(kThreadStream, "scope_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    BeginOp(ctx, ss, ev, SliceKind::kSpan, OpScope::kUser, -1, 0, PayloadReader(ev).Get<uint32_t>());
  });
  r.On(kThreadStream, "op_end", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    OnEnd(ctx, ss, static_cast<int64_t>(ev.ts), false, 0);
  });
  r.On(kThreadStream, "scope_end", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    OnEnd(ctx, ss, static_cast<int64_t>(ev.ts), true, ctx.Name(*ss.process, PayloadReader(ev).Get<uint32_t>()));
  });
  r.On(kThreadStream, "module_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    ss.stack.push_back(
        {static_cast<int64_t>(ev.ts), ctx.Name(*ss.process, PayloadReader(ev).Get<uint32_t>()), SliceKind::kModule, 0});
  });
  r.On(kThreadStream, "module_end", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    model::StringId name = ctx.Name(*ss.process, PayloadReader(ev).Get<uint32_t>());
    int64_t k = FindOpen(ss, [&](const OpenSlice& o) { return o.kind == SliceKind::kModule && o.name == name; });
    if (k < 0) {
      ++ctx.Ext<TorchState>().unmatched_ends;
      return;
    }
    CloseDownTo(ctx, ss, static_cast<size_t>(k), static_cast<int64_t>(ev.ts));
  });

  auto mem = [](bool alloc) {
    return [alloc](LoadContext& ctx, StreamState& ss, const EventView& ev) {
      PayloadReader p(ev);
      uint64_t addr = p.Get<uint64_t>();
      uint64_t bytes = p.Get<uint64_t>();
      uint64_t total_allocated = p.Get<uint64_t>();
      uint64_t total_reserved = p.Get<uint64_t>();
      uint8_t device_type = p.Get<uint8_t>();
      uint8_t device_index = p.Get<uint8_t>();
      int64_t b = static_cast<int64_t>(std::min<uint64_t>(bytes, INT64_MAX));
      if (b == 0) {
        if (alloc) return;  // nothing allocated
        ctx.Ext<TorchState>().sizeless_frees = true;
      }
      // c10::DeviceType 0 is the CPU: host memory.
      ctx.trace().memory.Add(static_cast<int64_t>(ev.ts), ss.track,
                             device_type == 0 ? kNone : (device_index == 255 ? 0 : device_index), addr, alloc ? b : -b,
                             total_allocated == UINT64_MAX ? -1 : static_cast<int64_t>(std::min<uint64_t>(total_allocated, INT64_MAX)),
                             static_cast<int64_t>(std::min<uint64_t>(total_reserved, INT64_MAX)));
    };
  };
  r.On(kThreadStream, "mem_alloc", mem(true));
  r.On(kThreadStream, "mem_free", mem(false));
  r.On(kThreadStream, "mem_oom", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    ++ctx.Ext<TorchState>().ooms;
    ctx.trace().instants.Add(static_cast<int64_t>(ev.ts), ss.track, ctx.trace().strings.Intern("out of memory"));
  });

  r.On(kThreadStream, "torch_thread", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& st = ctx.Ext<TorchState>();
    uint64_t th = PayloadReader(ev).Get<uint64_t>();
    st.thread_of_track[ss.track] = th;
    st.track_of_thread[{ss.process->index, th}] = ss.track;
  });
  r.On(kThreadStream, "op_detail", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& st = ctx.Ext<TorchState>();
    PendingOp* op = TopOp(ctx, ss);
    if (!op) {
      ++st.orphan_details;
      return;
    }
    PayloadReader p(ev);
    op->shapes = ctx.Name(*ss.process, p.Get<uint32_t>());
    op->dtypes = ctx.Name(*ss.process, p.Get<uint32_t>());
    op->flops = p.Get<int64_t>();
    op->bytes = p.Get<int64_t>();
    auto [b, n] = AddIds(st, p.Str());
    op->in_begin = b;
    op->in_count = n;
  });
  r.On(kThreadStream, "op_outputs", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& st = ctx.Ext<TorchState>();
    PendingOp* op = TopOp(ctx, ss);
    if (!op) {
      ++st.orphan_details;
      return;
    }
    auto [b, n] = AddIds(st, PayloadReader(ev).Str());
    op->out_begin = b;
    op->out_count = n;
  });
  r.On(kThreadStream, "ops_tier", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& st = ctx.Ext<TorchState>();
    PayloadReader p(ev);
    uint32_t tier = p.Get<uint32_t>();
    uint32_t mode = p.Get<uint32_t>();
    st.tiers.push_back({ss.process->index, static_cast<int64_t>(ev.ts), std::min<uint32_t>(tier, 2)});
    if (st.mode == UINT32_MAX) st.mode = mode;
  });
  r.On(kThreadStream, "step_batch", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    BatchMark b{ss.track, static_cast<int64_t>(ev.ts), PayloadReader(ev).Get<uint64_t>()};
    b.given = true;
    ctx.Ext<TorchState>().batches.push_back(b);
  });
  r.On(kThreadStream, "site_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    ctx.Ext<TorchState>().sites[&ss].emplace_back(ctx.Name(*ss.process, PayloadReader(ev).Get<uint32_t>()), -1);
  });
  r.On(kThreadStream, "site_end", [](LoadContext& ctx, StreamState& ss, const EventView&) {
    auto& sites = ctx.Ext<TorchState>().sites;
    auto it = sites.find(&ss);
    if (it != sites.end() && !it->second.empty()) it->second.pop_back();
  });
  r.On(kThreadStream, "optimizer_step", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    ctx.Ext<TorchState>().optimizer_marks.push_back({ss.track, static_cast<int64_t>(ev.ts), PayloadReader(ev).Get<uint32_t>()});
  });
  r.On(kThreadStream, "loop_head", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    uint32_t what = PayloadReader(ev).Get<uint32_t>();
    ctx.Ext<TorchState>().loop_heads.push_back({ss.track, static_cast<int64_t>(ev.ts), (what & 1) == 0, what >> 1});
  });
  r.On(kThreadStream, "module_batch", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    BatchMark b{ss.track, static_cast<int64_t>(ev.ts), p.Get<uint64_t>()};
    b.flags = p.Get<uint32_t>();
    ctx.Ext<TorchState>().batches.push_back(b);
  });
  r.On(kThreadStream, "graph", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    PayloadReader p(ev);
    model::Graph g;
    g.process = ss.process->index;
    g.name = ctx.Name(*ss.process, p.Get<uint32_t>());
    std::string_view nodes = p.Str();
    std::string_view edges = p.Str();
    GraphEncoding enc = ParseGraph(nodes, edges);
    for (std::string_view n : enc.nodes) g.nodes.push_back(ctx.trace().strings.Intern(n));
    g.edges = std::move(enc.edges);
    if (enc.bad_edges) ctx.CountWarning("graph edges naming no node (dropped)");
    ctx.trace().graphs.push_back(std::move(g));
  });
  r.On(kThreadStream, "auto_step_begin", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    ctx.Ext<TorchState>().pending_steps[&ss] = {static_cast<int64_t>(ev.ts), PayloadReader(ev).Get<uint64_t>()};
  });
  r.On(kThreadStream, "auto_step_end", [](LoadContext& ctx, StreamState& ss, const EventView& ev) {
    auto& st = ctx.Ext<TorchState>();
    uint64_t step = PayloadReader(ev).Get<uint64_t>();
    auto it = st.pending_steps.find(&ss);
    if (it == st.pending_steps.end() || it->second.step != step) {
      ++st.orphan_step_ends;
      return;
    }
    st.auto_steps.push_back({it->second.ts, static_cast<int64_t>(ev.ts), ss.track, ss.process->index, step});
    st.pending_steps.erase(it);
  });
  // Steps: torch_steps.h. A program that marks its steps (strata.step,
  // strata_step_begin) says what a step is: the observer stops finding steps
  // once it does, and the ones it found before (warm-up iterations, typically)
  // are dropped, so that the steps are exactly the marked ones.
  r.BeforeFinalize([](LoadContext& ctx) {
    auto& st = ctx.Ext<TorchState>();
    if (!st.step_name) st.step_name = ctx.trace().strings.Intern("step");
    st.partial_steps = AddFoundSteps(ctx, st.auto_steps, st.optimizer_marks, st.loop_heads, st.step_name, &st.optimizer_steps_per_step);
  });

  // Every op slice, however it was closed, gets its OpTable row.
  r.OnSliceAdded([](LoadContext& ctx, const OpenSlice& o, uint32_t slice, int64_t) {
    if (!IsOpEntry(o)) return;
    auto& st = ctx.Ext<TorchState>();
    if (static_cast<size_t>(o.ext) >= st.ops.size()) return;
    PendingOp& op = st.ops[static_cast<size_t>(o.ext)];
    if (op.slice >= 0) return;
    op.slice = static_cast<int32_t>(slice);
    model::OpTable& t = ctx.trace().ops;
    op.row = static_cast<int32_t>(t.Add(slice, op.scope, op.seq));
    t.shapes.back() = op.shapes;
    t.dtypes.back() = op.dtypes;
    t.flops.back() = op.flops;
    t.bytes.back() = op.bytes;
    t.site.back() = op.site;
  });
  r.OnStreamEnd([](LoadContext& ctx, StreamState& ss) {
    auto& st = ctx.Ext<TorchState>();
    st.pending_steps.erase(&ss);  // a step that never ended was only tentative
    st.sites.erase(&ss);
    if (ss.process) {
      int64_t& e = st.process_end[ss.process->index];
      e = std::max(e, ss.last_ts);
    }
  });

  r.AfterFinalize([](LoadContext& ctx) {
    auto& st = ctx.Ext<TorchState>();
    model::Trace& t = ctx.trace();
    if (st.mode != UINT32_MAX) t.ops_mode = st.mode == 0 ? "off" : st.mode == 1 ? "sampled" : "all";
    if (st.ops.empty() && st.tiers.empty() && st.batches.empty() && st.partial_steps.empty()) return;
    // Pending ops hold pre-Finalize slice indices.
    const model::Column<int32_t>& remap = ctx.SliceRemap();
    for (PendingOp& op : st.ops) {
      if (op.slice < 0 || static_cast<size_t>(op.slice) >= remap.size()) {
        op.row = -1;
        continue;
      }
      op.slice = remap[static_cast<size_t>(op.slice)];
      op.row = t.OpRow(static_cast<uint32_t>(op.slice));
    }
    if (st.sizeless_frees) ResolveSizelessFrees(t);
    LinkBackward(ctx, st);
    BuildEdges(ctx, st);
    BuildWindows(ctx, st);
    AddSampleMarks(t, &st.batches);
    std::vector<std::pair<uint32_t, int64_t>> profiled;
    AddProfiledSteps(t, &profiled);
    AttachStepSamples(t, st.batches, st.partial_steps, profiled, st.optimizer_steps_per_step);
    if (st.unmatched_ends) ctx.Warn(std::to_string(st.unmatched_ends) + " framework op/scope/module ends had no matching begin");
    if (st.orphan_details) ctx.Warn(std::to_string(st.orphan_details) + " op details arrived with no op open");
    if (st.bad_ids) ctx.Warn(std::to_string(st.bad_ids) + " malformed tensor ids skipped");
    if (st.orphan_step_ends) ctx.Warn(std::to_string(st.orphan_step_ends) + " automatic step ends had no begin");
    if (st.ooms) ctx.Warn(std::to_string(st.ooms) + " out-of-memory reports from the framework allocator");
  });
}

}  // namespace strata::importers::strata_ctf

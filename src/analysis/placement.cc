#include "analysis/placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "analysis/layers.h"
#include "analysis/memo.h"

namespace strata::analysis {
namespace {

using model::SliceKind;
using model::StringId;

constexpr int32_t kNone = -1;
constexpr double kNever = -std::numeric_limits<double>::infinity();
constexpr std::string_view kPlacedSuffix = " (placed)";

bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool IsSend(std::string_view type) { return type == "_Send" || type == "_HostSend"; }
bool IsRecv(std::string_view type) { return type == "_Recv" || type == "_HostRecv"; }

// "/job:localhost/replica:0/task:0/device:CPU:1" -> "CPU:1".
std::string ShortDevice(std::string_view d) {
  size_t p = d.rfind("device:");
  return std::string(p == std::string_view::npos ? d : d.substr(p + 7));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// One placed graph and the calls in which its nodes were profiled.
class PlacedGraph {
 public:
  PlacedGraph(const model::Trace& t, const model::Graph& g) : t_(t), g_(g), n_(g.nodes.size()) {}

  bool Analyse(PlacementResult* r) {
    std::string_view gname = t_.strings.Get(g_.name);
    r->process = g_.process;
    r->function = std::string(gname.substr(0, gname.size() - kPlacedSuffix.size()));
    if (g_.node_devices.size() != n_ || g_.node_names.size() != n_) return false;
    Structure();
    std::map<StringId, size_t> device_index;
    for (size_t v = 0; v < n_; ++v) {
      StringId d = g_.node_devices[v];
      if (t_.strings.Get(d).empty()) continue;
      auto [it, fresh] = device_index.try_emplace(d, r->devices.size());
      if (fresh) r->devices.push_back({ShortDevice(t_.strings.Get(d)), 0, 0});
      r->devices[it->second].nodes++;
      dev_[v] = static_cast<int32_t>(it->second);
    }
    if (r->devices.size() < 2) return false;
    for (size_t v = 0; v < n_; ++v) r->cross_tensors += send_[v];
    Measure(r);
    Propose(r);
    if (r->calls_measured > 0) Replay(r);
    Choose(r);
    return true;
  }

 private:
  std::string_view Type(size_t v) const { return t_.strings.Get(g_.nodes[v]); }
  std::string_view Name(size_t v) const { return t_.strings.Get(g_.node_names[v]); }

  // preds/succs, Send/Recv roles, the logical producer of each Recv, and a topological order.
  void Structure() {
    preds_.assign(n_, {});
    succs_.assign(n_, {});
    for (auto [a, b] : g_.edges)
      if (a < n_ && b < n_) {
        preds_[b].push_back(a);
        succs_[a].push_back(b);
      }
    send_.assign(n_, 0);
    recv_.assign(n_, 0);
    for (size_t v = 0; v < n_; ++v) {
      send_[v] = IsSend(Type(v));
      recv_[v] = IsRecv(Type(v));
    }
    dev_.assign(n_, kNone);
    std::vector<uint32_t> indeg(n_, 0);
    for (size_t v = 0; v < n_; ++v) indeg[v] = static_cast<uint32_t>(preds_[v].size());
    order_.clear();
    for (size_t v = 0; v < n_; ++v)
      if (indeg[v] == 0) order_.push_back(static_cast<uint32_t>(v));
    for (size_t i = 0; i < order_.size(); ++i)
      for (uint32_t s : succs_[order_[i]])
        if (--indeg[s] == 0) order_.push_back(s);
    // Cycles (loops' NextIteration edges): the rest in index order.
    std::vector<uint8_t> seen(n_, 0);
    for (uint32_t v : order_) seen[v] = 1;
    for (size_t v = 0; v < n_; ++v)
      if (!seen[v]) order_.push_back(static_cast<uint32_t>(v));
    pos_.assign(n_, 0);
    for (size_t i = 0; i < order_.size(); ++i) pos_[order_[i]] = static_cast<uint32_t>(i);
  }

  // The producer a node's input comes from across a Recv (the Send's input), or the input itself.
  int32_t Producer(uint32_t u) const {
    if (!recv_[u]) return static_cast<int32_t>(u);
    for (uint32_t s : preds_[u])
      if (send_[s])
        for (uint32_t p : preds_[s]) return static_cast<int32_t>(p);
    return kNone;
  }

  // The profiled calls and each node's first start and end in them.
  void Measure(PlacementResult* r) {
    StringId fn = t_.strings.Find(r->function);
    StringId key = t_.strings.Find("tf_op");
    if (fn == model::StringPool::kNotFound || key == model::StringPool::kNotFound) return;
    const auto& s = t_.slices;
    std::vector<std::pair<int64_t, int64_t>> calls;
    for (size_t i = 0; i < s.size(); ++i)
      if (s.name[i] == fn && t_.tracks[s.track[i]].process == g_.process) calls.push_back({s.ts[i], s.ts[i] + s.dur[i]});
    std::sort(calls.begin(), calls.end());
    std::unordered_map<StringId, uint32_t> by_name;
    for (size_t v = 0; v < n_; ++v) by_name.emplace(g_.node_names[v], static_cast<uint32_t>(v));
    std::map<size_t, std::vector<std::pair<double, double>>> per_call;  // call -> node -> (start, end)
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] != SliceKind::kOp || t_.tracks[s.track[i]].process != g_.process) continue;
      int32_t a = t_.FindArg(static_cast<uint32_t>(i), key);
      if (a == model::kNone) continue;
      std::string_view op = t_.strings.Get(t_.args.str[static_cast<size_t>(a)]);
      if (size_t c = op.rfind(':'); c != std::string_view::npos) op = op.substr(0, c);
      StringId id = t_.strings.Find(op);
      auto node = by_name.find(id);
      if (id == model::StringPool::kNotFound || node == by_name.end()) continue;
      auto it = std::upper_bound(calls.begin(), calls.end(), std::make_pair(s.ts[i], std::numeric_limits<int64_t>::max()));
      if (it == calls.begin() || s.ts[i] >= std::prev(it)->second) continue;
      size_t call = static_cast<size_t>(std::prev(it) - calls.begin());
      auto& nodes = per_call[call];
      if (nodes.empty()) nodes.assign(n_, {kNever, kNever});
      auto& [st, en] = nodes[node->second];
      if (st != kNever) continue;  // a loop body's later runs: the first counts
      st = static_cast<double>(s.ts[i]);
      en = static_cast<double>(s.ts[i] + s.dur[i]);
    }
    for (auto& [call, nodes] : per_call) {
      call_start_.push_back(static_cast<double>(calls[call].first));
      r->call_ns += static_cast<double>(calls[call].second - calls[call].first);
      runs_.push_back(std::move(nodes));
    }
    r->calls_measured = runs_.size();
    if (runs_.empty()) return;
    r->call_ns /= static_cast<double>(runs_.size());
    for (const auto& run : runs_)
      for (size_t v = 0; v < n_; ++v)
        if (run[v].first != kNever && dev_[v] != kNone)
          r->devices[static_cast<size_t>(dev_[v])].op_ns += (run[v].second - run[v].first) / static_cast<double>(runs_.size());
  }

  // Layers the program placed, in graph order, cut into contiguous runs with
  // each device's present share of the time; everything else follows.
  void Propose(PlacementResult* r) {
    // The program's own graph (requested devices) tells which layers it placed.
    std::string_view placed_name = t_.strings.Get(g_.name);
    std::string_view plain = placed_name.substr(0, placed_name.size() - kPlacedSuffix.size());
    std::map<std::string, bool> requested;  // layer -> some node asked for a device
    for (const auto& o : t_.graphs) {
      if (o.process != g_.process || t_.strings.Get(o.name) != plain || o.node_devices.size() != o.nodes.size()) continue;
      for (size_t v = 0; v < o.nodes.size(); ++v) {
        bool bw = false;
        std::string layer = TfLayerOf(t_.strings.Get(o.node_names[v]), &bw);
        if (!layer.empty() && !bw && !t_.strings.Get(o.node_devices[v]).empty()) requested[layer] = true;
      }
    }
    struct Unit {
      std::string layer;
      uint32_t first = UINT32_MAX;  // graph position of its first forward node
      std::map<int32_t, double> fwd_devices;
      double load = 0;
      int32_t device = kNone, to = kNone;
      uint64_t nodes = 0;
    };
    std::map<std::string, size_t> unit_index;
    std::vector<Unit> units;
    unit_.assign(n_, kNone);
    for (size_t v = 0; v < n_; ++v) {
      if (send_[v] || recv_[v] || dev_[v] == kNone) continue;
      bool bw = false;
      std::string layer = TfLayerOf(Name(v), &bw);
      // "block_1/add/ReadVariableOp" reads a variable of the layer "block_1".
      while (!requested.empty() && !requested.count(layer) && layer.rfind('/') != std::string::npos)
        layer.resize(layer.rfind('/'));
      if (layer.empty() || (!requested.empty() && !requested.count(layer))) continue;
      auto [it, fresh] = unit_index.try_emplace(layer, units.size());
      if (fresh) units.push_back({layer});
      Unit& u = units[it->second];
      if (!bw) unit_[v] = static_cast<int32_t>(it->second);  // gradients stay where TF put them
      u.nodes += !bw;
      if (!bw) {
        u.first = std::min(u.first, pos_[v]);
        u.fwd_devices[dev_[v]] += 1;
      }
      double t = 1;  // without a profile, nodes count alike
      if (!runs_.empty()) {
        t = 0;
        for (const auto& run : runs_)
          if (run[v].first != kNever) t += run[v].second - run[v].first;
      }
      u.load += t;
    }
    std::vector<std::string> unit_layer;  // unit_ holds indices from before the sort
    for (const Unit& u : units) unit_layer.push_back(u.layer);
    std::erase_if(units, [](const Unit& u) { return u.first == UINT32_MAX; });
    std::sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) { return a.first < b.first; });
    std::map<std::string, int32_t> new_index;
    for (size_t i = 0; i < units.size(); ++i) new_index[units[i].layer] = static_cast<int32_t>(i);
    for (size_t v = 0; v < n_; ++v)
      if (unit_[v] != kNone) {
        auto it = new_index.find(unit_layer[static_cast<size_t>(unit_[v])]);
        unit_[v] = it == new_index.end() ? kNone : it->second;
      }
    if (units.size() < 2) return;
    // Devices in the order the layers first use them, with their share of the layers' time.
    std::vector<int32_t> order;
    std::map<int32_t, double> load;
    double total = 0;
    for (Unit& u : units) {
      u.device = std::max_element(u.fwd_devices.begin(), u.fwd_devices.end(),
                                  [](auto& a, auto& b) { return a.second < b.second; })->first;
      if (std::find(order.begin(), order.end(), u.device) == order.end()) order.push_back(u.device);
      load[u.device] += u.load;
      total += u.load;
    }
    if (order.size() < 2 || total <= 0) return;
    // Candidates: the contiguous split with the present shares, and every
    // layer on one device (for each device). Replay (or, unmeasured, the
    // crossings) picks one.
    std::vector<int32_t> contiguous;
    double cum_target = load[order[0]], cum = 0;
    size_t k = 0;
    for (Unit& u : units) {
      while (k + 1 < order.size() && cum + u.load / 2 > cum_target) cum_target += load[order[++k]];
      contiguous.push_back(order[k]);
      cum += u.load;
    }
    plans_.push_back(contiguous);
    for (int32_t d : order) plans_.push_back(std::vector<int32_t>(units.size(), d));
    for (const Unit& u : units) units_.push_back({u.layer, u.device, u.nodes});
    r->cross_tensors_after = r->cross_tensors;
  }

  // Each node's device under a plan (a device per unit): the units' forward
  // nodes move; a variable goes with the layer that reads it and the ops that
  // update it with the variable; the rest (gradients, loss, optimizer math)
  // stays where the framework placed it, as it would for unpinned ops.
  std::vector<int32_t> Apply(const std::vector<int32_t>& plan) const {
    std::vector<int32_t> after = dev_;
    auto is_resource_user = [&](size_t v) {
      std::string_view ty = Type(v);
      return EndsWith(ty, "VariableOp") || ty.substr(0, 8) == "Resource";
    };
    auto is_resource = [&](size_t v) { return Type(v) == "_Arg" || Type(v) == "VarHandleOp"; };
    for (size_t v = 0; v < n_; ++v)
      if (unit_[v] != kNone) after[v] = plan[static_cast<size_t>(unit_[v])];
    for (size_t v = 0; v < n_; ++v) {
      if (!is_resource(v)) continue;
      std::map<int32_t, int> votes;
      for (uint32_t c : succs_[v])
        if (unit_[c] != kNone && is_resource_user(c)) votes[after[c]]++;
      if (!votes.empty())
        after[v] = std::max_element(votes.begin(), votes.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    }
    for (size_t v = 0; v < n_; ++v)
      if (unit_[v] == kNone && is_resource_user(v))
        for (uint32_t p : preds_[v])
          if (is_resource(p)) after[v] = after[p];
    // Glue the program did not place (NoOp, Identity, Const) joins its
    // neighbours when they all end on one device; gradients stay.
    for (size_t v = 0; v < n_; ++v) {
      std::string_view ty = Type(v);
      if (unit_[v] != kNone || (ty != "NoOp" && ty != "Identity" && ty != "Const")) continue;
      int32_t only = kNone;
      bool one = true;
      auto vote = [&](int32_t p) {
        if (p == kNone || after[static_cast<size_t>(p)] == kNone) return;
        if (only != kNone && only != after[static_cast<size_t>(p)]) one = false;
        only = after[static_cast<size_t>(p)];
      };
      for (uint32_t u : preds_[v]) vote(Producer(u));
      for (uint32_t c : succs_[v])
        if (send_[c])
          for (uint32_t rcv : succs_[c])
            for (uint32_t x : succs_[rcv]) vote(static_cast<int32_t>(x));
        else
          vote(static_cast<int32_t>(c));
      if (one && only != kNone) after[v] = only;
    }
    return after;
  }

  // Tensors crossing devices under `after`: (producer, destination device) pairs.
  size_t Crossings(const std::vector<int32_t>& after) const {
    std::map<std::pair<int32_t, int32_t>, bool> crossing;
    for (size_t v = 0; v < n_; ++v) {
      if (send_[v] || recv_[v] || after[v] == kNone) continue;
      for (uint32_t u : preds_[v]) {
        int32_t p = Producer(u);
        if (p == kNone || send_[static_cast<size_t>(p)]) continue;
        if (after[static_cast<size_t>(p)] != kNone && after[static_cast<size_t>(p)] != after[v])
          crossing[{p, after[v]}] = true;
      }
    }
    return crossing.size();
  }

  // The plan with the shortest replayed call (unmeasured: the fewest crossings),
  // if it crosses less than now; its moves.
  void Choose(PlacementResult* r) {
    double best_time = r->path_ns;
    size_t best_cross = r->cross_tensors;
    int best = -1;
    std::vector<int32_t> keep_after;
    for (size_t i = 0; i < plans_.size(); ++i) {
      after_ = Apply(plans_[i]);
      size_t cross = Crossings(after_);
      if (cross >= r->cross_tensors) continue;
      double time = 0;
      for (size_t c = 0; c < runs_.size(); ++c) time += ReplayCall(c, delay_[c], last_[c], true, nullptr);
      if (!runs_.empty()) time /= static_cast<double>(runs_.size());
      bool better = runs_.empty() ? cross < best_cross
                                  : time < best_time - 1e-9 || (best >= 0 && time <= best_time + 1e-9 && cross < best_cross);
      if (better) {
        best = static_cast<int>(i);
        best_time = time;
        best_cross = cross;
        keep_after = after_;
      }
    }
    after_.clear();
    if (best < 0) return;
    after_ = keep_after;
    r->cross_tensors_after = best_cross;
    r->path_after_ns = runs_.empty() ? 0 : best_time;
    const auto& plan = plans_[static_cast<size_t>(best)];
    for (size_t u = 0; u < units_.size(); ++u)
      if (plan[u] != units_[u].device)
        r->moves.push_back({units_[u].layer, r->devices[static_cast<size_t>(units_[u].device)].name,
                            r->devices[static_cast<size_t>(plan[u])].name, units_[u].nodes});
  }

  // The calls replayed as measured, then with the moves.
  void Replay(PlacementResult* r) {
    // Delays: a node's measured start after its last input was ready.
    std::vector<double> local, cross;
    std::map<uint32_t, CrossEdge> edges;  // by Send node
    delay_.assign(runs_.size(), std::vector<double>(n_, 0));
    last_.assign(runs_.size(), std::vector<int32_t>(n_, kNone));
    auto& delay = delay_;
    auto& last = last_;
    for (size_t c = 0; c < runs_.size(); ++c) {
      const auto& run = runs_[c];
      std::vector<double> ready(n_, kNever), fin(n_, kNever);
      for (uint32_t v : order_) {
        for (uint32_t u : preds_[v])
          if (fin[u] > ready[v]) {
            ready[v] = fin[u];
            last[c][v] = static_cast<int32_t>(u);
          }
        if (run[v].first == kNever) {
          fin[v] = ready[v];
          continue;
        }
        double base = ready[v] == kNever ? call_start_[c] : ready[v];
        delay[c][v] = std::max(0.0, run[v].first - base);
        fin[v] = run[v].second;
        int32_t l = last[c][v];
        if (l == kNone) continue;
        bool through_recv = recv_[static_cast<size_t>(l)];
        (through_recv ? cross : local).push_back(delay[c][v]);
        if (through_recv)
          for (uint32_t s : preds_[static_cast<size_t>(l)])
            if (send_[s]) edges[s].wait_ns += delay[c][v];
      }
      for (size_t v = 0; v < n_; ++v)
        if (send_[v] && run[v].first != kNever) {
          edges[static_cast<uint32_t>(v)].sends += 1;
          edges[static_cast<uint32_t>(v)].send_ns += run[v].second - run[v].first;
        }
    }
    r->local_delay_ns = Median(local);
    local_delay_ = r->local_delay_ns;
    std::vector<double> sends;
    for (auto& [snd, e] : edges)
      if (e.sends > 0) sends.push_back(e.send_ns / e.sends);
    cross_cost_ = Median(cross) + Median(sends);
    double calls = static_cast<double>(runs_.size());
    for (auto& [s, e] : edges) {
      e.sends /= calls;
      e.send_ns /= calls;
      e.wait_ns /= calls;
      if (!preds_[s].empty()) e.from = std::string(Name(preds_[s][0]));
      for (uint32_t rcv : succs_[s])
        for (uint32_t cons : succs_[rcv])
          if (e.to.empty()) e.to = std::string(Name(cons));
      if (dev_[s] != kNone) e.src_device = r->devices[static_cast<size_t>(dev_[s])].name;
      for (uint32_t rcv : succs_[s])
        if (dev_[rcv] != kNone) e.dst_device = r->devices[static_cast<size_t>(dev_[rcv])].name;
      if (s < g_.node_bytes.size()) e.bytes = g_.node_bytes[s];
      r->cross_ns += e.send_ns + e.wait_ns;
      r->edges.push_back(std::move(e));
    }
    std::stable_sort(r->edges.begin(), r->edges.end(),
              [](const CrossEdge& a, const CrossEdge& b) { return a.send_ns + a.wait_ns > b.send_ns + b.wait_ns; });
    // Replays: unchanged, and with the moves (removed crossings: no Send, the local delay).
    std::vector<double> path_time(n_, 0);
    for (size_t c = 0; c < runs_.size(); ++c) {
      r->path_ns += ReplayCall(c, delay[c], last[c], false, &path_time) / calls;
    }
    std::vector<uint32_t> on_path;
    for (size_t v = 0; v < n_; ++v)
      if (path_time[v] > 0) on_path.push_back(static_cast<uint32_t>(v));
    std::sort(on_path.begin(), on_path.end(), [&](uint32_t a, uint32_t b) { return path_time[a] > path_time[b]; });
    for (size_t i = 0; i < on_path.size() && i < 10; ++i) r->critical_path.push_back(std::string(Name(on_path[i])));
  }

  // Makespan of call c; `path` (if given) gains each critical-path node's time.
  double ReplayCall(size_t c, const std::vector<double>& delay, const std::vector<int32_t>& last, bool moved,
                    std::vector<double>* path) const {
    const auto& run = runs_[c];
    std::vector<double> fin(n_, call_start_[c]);
    std::vector<int32_t> from(n_, kNone);
    auto removed = [&](uint32_t v) {  // a Send/Recv whose tensor no longer crosses
      if (!moved || after_.empty()) return false;
      uint32_t s = v;
      if (recv_[v]) {
        bool found = false;
        for (uint32_t p : preds_[v])
          if (send_[p]) s = p, found = true;
        if (!found) return false;
      }
      int32_t prod = preds_[s].empty() ? kNone : static_cast<int32_t>(preds_[s][0]);
      if (prod == kNone || after_[static_cast<size_t>(prod)] == kNone) return false;
      for (uint32_t rcv : succs_[s])
        for (uint32_t cons : succs_[rcv])
          if (after_[cons] != after_[static_cast<size_t>(prod)]) return false;
      return true;
    };
    double end = call_start_[c];
    int32_t end_node = kNone;
    for (uint32_t v : order_) {
      double ready = call_start_[c];
      for (uint32_t u : preds_[v])
        if (fin[u] > ready) {
          ready = fin[u];
          from[v] = static_cast<int32_t>(u);
        }
      double dur = run[v].first == kNever ? 0 : run[v].second - run[v].first;
      double d = delay[v];
      if (moved && send_[v] && removed(v)) dur = 0;
      if (moved && last[v] != kNone) {
        auto l = static_cast<size_t>(last[v]);
        if (recv_[l] && removed(static_cast<uint32_t>(l)))
          d = std::min(d, local_delay_);  // the crossing it waited for is gone
        else if (!send_[v] && !recv_[v] && !recv_[l] && !send_[l] && after_[l] != kNone && after_[v] != kNone &&
                 after_[l] != after_[v])
          d = std::max(d, cross_cost_);  // a new crossing: a Send and the wait after one
      }
      fin[v] = ready + d + dur;
      if (fin[v] > end) end = fin[v], end_node = static_cast<int32_t>(v);
    }
    if (path != nullptr)
      for (int32_t v = end_node; v != kNone; v = from[static_cast<size_t>(v)])
        if (run[static_cast<size_t>(v)].first != kNever)
          (*path)[static_cast<size_t>(v)] += run[static_cast<size_t>(v)].second - run[static_cast<size_t>(v)].first;
    return end - call_start_[c];
  }

  const model::Trace& t_;
  const model::Graph& g_;
  size_t n_;
  std::vector<std::vector<uint32_t>> preds_, succs_;
  std::vector<uint8_t> send_, recv_;
  std::vector<int32_t> dev_, unit_, after_;
  std::vector<uint32_t> order_, pos_;
  std::vector<std::vector<std::pair<double, double>>> runs_;
  std::vector<double> call_start_;
  std::vector<std::vector<double>> delay_;   // per call and node: its start after its last input
  std::vector<std::vector<int32_t>> last_;   // per call and node: that last input
  struct UnitInfo {
    std::string layer;
    int32_t device;
    uint64_t nodes;
  };
  std::vector<UnitInfo> units_;              // the layers that can move, in graph order
  std::vector<std::vector<int32_t>> plans_;  // candidate device per unit
  double local_delay_ = 0;  // median delay after a same-device input
  double cross_cost_ = 0;   // median Send plus median delay after a crossing
};

}  // namespace

namespace {

std::vector<PlacementResult> ComputePlacement(const model::Trace& t) {
  std::vector<PlacementResult> out;
  for (const auto& g : t.graphs) {
    if (!EndsWith(t.strings.Get(g.name), kPlacedSuffix)) continue;
    PlacementResult r;
    PlacedGraph pg(t, g);
    if (pg.Analyse(&r)) out.push_back(std::move(r));
  }
  // Most time lost to crossings first, then most crossings.
  std::stable_sort(out.begin(), out.end(), [](const PlacementResult& a, const PlacementResult& b) {
    return std::make_pair(a.cross_ns, a.cross_tensors) > std::make_pair(b.cross_ns, b.cross_tensors);
  });
  return out;
}

}  // namespace

std::vector<PlacementResult> Placement(const model::Trace& t) {
  Memo* memo = Memo::Of(t);
  if (memo == nullptr) return ComputePlacement(t);
  return memo->Get<std::vector<PlacementResult>>("placement", [&] { return ComputePlacement(t); });
}

}  // namespace strata::analysis

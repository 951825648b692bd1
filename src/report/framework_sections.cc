// Framework-level report sections (PyTorch): training steps, ops, modules,
// memory, dataflow. JSON keys live under "framework".
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/framework.h"
#include "analysis/roofline.h"
#include "analysis/step_breakdown.h"
#include "base/units.h"
#include "report/section.h"

namespace strata::report {
using nlohmann::json;

// --skip-steps and --batch-size of `strata record`, from the manifest; `strata
// report --batch-size` overrides the recorded batch size.
analysis::FrameworkOptions FrameworkOptionsFor(const model::Trace& t, const ReportOptions& ro) {
  analysis::FrameworkOptions o;
  if (ro.analysis.batch_size > 0) o.batch_size = static_cast<int64_t>(std::llround(ro.analysis.batch_size));
  if (t.manifest_json.empty()) return o;
  json m = json::parse(t.manifest_json, nullptr, false);
  if (!m.is_object() || !m.contains("options") || !m["options"].is_object()) return o;
  const json& opt = m["options"];
  if (opt.contains("skip_steps") && opt["skip_steps"].is_number_integer()) o.skip_steps = opt["skip_steps"].get<int64_t>();
  if (o.batch_size == 0 && opt.contains("batch_size") && opt["batch_size"].is_number_integer())
    o.batch_size = opt["batch_size"].get<int64_t>();
  return o;
}

namespace {

std::string ThreadLabel(const model::Trace& t, uint32_t track) {
  if (track >= t.tracks.size()) return "?";
  std::string_view name = t.strings.Get(t.tracks[track].name);
  return fmt::format("{} {}", name.empty() ? "tid" : name, t.tracks[track].tid);
}

json& Framework(json& root) {
  if (!root.contains("framework")) root["framework"] = json::object();
  return root["framework"];
}

// What the steps are, as far as the trace tells: training (backward ops or an
// optimizer's step were recorded), inference (PyTorch ops without either),
// else just steps. The string pool is scanned, not the slices: a name is
// interned only when something used it.
const char* StepsLabel(const model::Trace& t) {
  bool backward = false, optimizer = false, torch_ops = false;
  for (size_t i = 0; i < t.ops.size() && !backward; ++i) backward = t.ops.scope[i] == model::OpScope::kBackward;
  for (size_t i = 1; i < t.strings.size() && !optimizer; ++i) {
    std::string_view s = t.strings.Get(static_cast<model::StringId>(i));
    optimizer = s.starts_with("Optimizer.step") || s.starts_with("Optimizer.zero_grad");
    torch_ops = torch_ops || s.starts_with("aten::");
  }
  if (backward || optimizer) return "Training steps";
  return torch_ops ? "Inference steps" : "Steps";
}

class TrainingSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions& ro) override {
    opt_ = FrameworkOptionsFor(t, ro);
    s_ = analysis::Training(t, opt_);
    label_ = StepsLabel(t);
    b_ = analysis::BreakdownSteps(t, s_);
    if (b_.Pct(analysis::StepPart::kCompute) >= 50 && !b_.compute_ops.empty()) BoundingOps(t);
    if (!s_.steps.empty() && s_.steps.front().slice != model::kNone)
      thread_ = ThreadLabel(t, t.slices.track[static_cast<size_t>(s_.steps.front().slice)]);
    // Each step's rank, when the steps come from two or more ranks (a job's
    // trace, a merged one): its rows are told apart by a rank column.
    ranks_.assign(s_.steps.size(), -1);
    int64_t first = -1;
    for (size_t i = 0; i < s_.steps.size(); ++i) {
      int32_t sl = s_.steps[i].slice;
      if (sl == model::kNone || static_cast<size_t>(sl) >= t.slices.size()) continue;
      uint32_t trk = t.slices.track[static_cast<size_t>(sl)];
      if (trk >= t.tracks.size() || t.tracks[trk].process >= t.processes.size()) continue;
      ranks_[i] = t.processes[t.tracks[trk].process].rank;
      if (ranks_[i] >= 0 && first < 0) first = ranks_[i];
      if (ranks_[i] >= 0 && ranks_[i] != first) by_rank_ = true;
    }
  }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (s_.steps.empty()) return;
    const auto& d = s_.duration;
    out += fmt::format("{}: {} counted", label_, d.count);
    size_t partial = 0, profiled = 0;
    for (const auto& st : s_.steps) {
      partial += st.partial;
      profiled += st.profiled && !st.partial;
    }
    if (s_.skipped > partial + profiled)
      out += fmt::format(" ({} warm-up step{} left out: strata record --skip-steps {})", s_.skipped - partial - profiled,
                         s_.skipped - partial - profiled == 1 ? "" : "s", opt_.skip_steps);
    if (profiled)
      out += fmt::format(" ({} step{} under the framework's own profiler left out: --ops-steps)", profiled,
                         profiled == 1 ? "" : "s");
    if (partial)
      out += fmt::format(" (the first step left out: found steps begin at the first batch or forward, not where the "
                         "loop's first iteration began)");
    out += fmt::format("   mean {}   p50 {}   p90 {}\n", FormatDuration(static_cast<int64_t>(d.mean)),
                       FormatDuration(d.p50), FormatDuration(d.p90));
    if (s_.samples_per_s > 0)
      out += fmt::format("  throughput  {}{}\n", HumanRate(s_.samples_per_s, "samples"),
                         s_.batch_size ? fmt::format(" (batch {})", s_.batch_size) : std::string());
    else
      out += fmt::format("  throughput  {} (no batch size: pass --batch-size or strata.step(samples=N) for samples/s)\n",
                         HumanRate(s_.duration.mean > 0 ? 1e9 / s_.duration.mean : 0, "steps"));
    out += fmt::format("  data wait   {:.1f}% of step time fetching batches (DataLoader __next__, tf.data iterators)\n", s_.data_wait_pct);
    RenderBreakdown(out);
    out += fmt::format("  {}{:>6} {:>12} {:>12} {:>9} {:>12} {:>8}\n", by_rank_ ? fmt::format("{:>5} ", "rank") : "",
                       "step", "time", "data wait", "samples", "mem peak", "allocs");
    size_t shown = 0;
    for (size_t i = 0; i < s_.steps.size(); ++i) {
      const auto& st = s_.steps[i];
      if (shown++ >= opt.top) {
        out += fmt::format("  ... {} more\n", s_.steps.size() - opt.top);
        break;
      }
      std::string rank = !by_rank_ ? "" : ranks_[i] >= 0 ? fmt::format("{:>5} ", ranks_[i]) : fmt::format("{:>5} ", "-");
      out += fmt::format("  {}{:>6} {:>12} {:>12} {:>9} {:>12} {:>8}{}\n", rank, st.number, FormatDuration(st.dur),
                         FormatDuration(st.data_wait_ns), st.samples ? std::to_string(st.samples) : "-",
                         st.mem_peak >= 0 ? FormatBytes(static_cast<double>(st.mem_peak)) : "-", st.allocs,
                         st.partial ? "  (partial)" : st.profiled ? "  (profiled)" : st.skipped ? "  (warm-up)" : "");
    }
  }
  void RenderJson(json& root, const ReportOptions& opt) const override {
    // Every step in time order with --full; else the slowest counted steps.
    std::vector<size_t> order(s_.steps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (!opt.full)
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (s_.steps[a].skipped != s_.steps[b].skipped) return !s_.steps[a].skipped;
        return s_.steps[a].dur > s_.steps[b].dur;
      });
    json steps = JsonRows(root, "framework.steps.steps", order.size(), opt, [&](size_t k) {
      const auto& st = s_.steps[order[k]];
      json row = json{{"number", st.number},   {"ts_ns", st.ts},
                  {"duration_ns", st.dur}, {"data_wait_ns", st.data_wait_ns},
                  {"samples", st.samples}, {"mem_peak_bytes", st.mem_peak},
                  {"allocs", st.allocs},   {"skipped", st.skipped},
                  {"partial", st.partial}, {"profiled", st.profiled}, {"breakdown", BreakdownJson(b_.steps[order[k]])}};
      if (by_rank_ && ranks_[order[k]] >= 0) row["rank"] = ranks_[order[k]];  // steps of several ranks
      return row;
    });
    const auto& d = s_.duration;
    Framework(root)["steps"] = {{"count", d.count},
                                {"skipped", s_.skipped},
                                {"mean_ns", d.mean},
                                {"p50_ns", d.p50},
                                {"p90_ns", d.p90},
                                {"max_ns", d.max},
                                {"batch_size", s_.batch_size},
                                {"samples_per_s", s_.samples_per_s},
                                {"data_wait_pct", s_.data_wait_pct},
                                {"breakdown", TotalsJson()},
                                {"steps_order", opt.full ? "time" : "slowest first"},
                                {"steps", steps}};
    // The one throughput of the report: the steps section shows this too.
    if (root.contains("steps") && s_.samples_per_s > 0) {
      root["steps"]["throughput_per_s"] = s_.samples_per_s;
      root["steps"]["batch_size"] = s_.batch_size;
    }
  }

 private:
  // Where the counted steps' time went, largest part first; parts under 0.05% are left out.
  void RenderBreakdown(std::string& out) const {
    if (b_.counted == 0 || b_.counted_ns <= 0) return;
    out += fmt::format("  where the step's time goes (mean of {} counted step{}, thread {}; the parts sum to the step):\n",
                       b_.counted, b_.counted == 1 ? "" : "s", thread_);
    std::vector<size_t> order;
    for (size_t k = 0; k < analysis::kStepParts; ++k) order.push_back(k);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return b_.host[a] > b_.host[b]; });
    for (size_t k : order) {
      auto p = static_cast<analysis::StepPart>(k);
      if (b_.Pct(p) < 0.05) continue;
      out += fmt::format("    {:<11} {:>11} {:>6.1f}%  {}\n", analysis::StepPartName(p),
                         FormatDuration(static_cast<int64_t>(b_.PerStep(p))), b_.Pct(p), PartMeaning(p));
    }
    // A step that is mostly the ops' own work: which ops bound it.
    if (b_.Pct(analysis::StepPart::kCompute) >= 50 && !b_.compute_ops.empty()) {
      out += fmt::format("  compute-bound: {:.0f}% of the step inside ops; the ops doing it:",
                         b_.Pct(analysis::StepPart::kCompute));
      for (size_t i = 0; i < b_.compute_ops.size() && i < 4; ++i)
        out += fmt::format("{} {} {:.0f}%", i ? "," : "", b_.compute_ops[i].first,
                           100.0 * static_cast<double>(b_.compute_ops[i].second) / static_cast<double>(b_.counted_ns));
      out += " (of the step)\n";
      if (!bounding_.empty()) {
        out += "    achieved:";
        for (size_t i = 0; i < bounding_.size(); ++i)
          out += fmt::format("{} {} {:.1f} GFLOP/s ({}-bound, {:.0f}% of its roof)", i ? "," : "", bounding_[i].name,
                             bounding_[i].flops_per_s / 1e9, bounding_[i].bound, bounding_[i].pct_of_roof);
        out += fmt::format("; roofs: {}\n", roof_);
      } else if (!roof_.empty()) {
        out += fmt::format("    (record with --shapes for their FLOP/s against {})\n", roof_);
      }
    }
    if (b_.device_busy < 0) return;
    double busy = 100.0 * static_cast<double>(b_.device_busy) / static_cast<double>(b_.counted_ns);
    out += fmt::format("  device busy {:.1f}% of the step; idle {:.1f}% while the thread was in:", busy, 100 - busy);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return b_.device_idle[a] > b_.device_idle[b]; });
    for (size_t k : order) {
      double pct = 100.0 * static_cast<double>(b_.device_idle[k]) / static_cast<double>(b_.counted_ns);
      if (pct >= 0.05) out += fmt::format(" {} {:.1f}%", analysis::StepPartName(static_cast<analysis::StepPart>(k)), pct);
    }
    out += "\n";
  }

  static const char* PartMeaning(analysis::StepPart p) {
    switch (p) {
      case analysis::StepPart::kInput: return "producing the batch (loader waits, code before the forward, its reads)";
      case analysis::StepPart::kCompute: return "inside framework ops";
      case analysis::StepPart::kDispatch: return "framework overhead (tiny ops, gaps between ops, module code, launches)";
      case analysis::StepPart::kAllocation: return "allocating and filling new tensors";
      case analysis::StepPart::kSync: return "waiting for the device (.item(), synchronize)";
      case analysis::StepPart::kCopy: return "copies (.to(), copy_, memcpy)";
      case analysis::StepPart::kIo: return "system calls and I/O outside ops";
      case analysis::StepPart::kPython: return "the program's own code outside ops";
      case analysis::StepPart::kIdle: return "off CPU, not in I/O (sleeping, locks, preempted)";
    }
    return "";
  }

  static json PartsJson(const analysis::StepParts& parts) {
    json j = json::object();
    for (size_t k = 0; k < analysis::kStepParts; ++k) j[analysis::StepPartName(static_cast<analysis::StepPart>(k))] = parts[k];
    return j;
  }

  static json BreakdownJson(const analysis::StepBreakdown& b) {
    json j = {{"host_ns", PartsJson(b.host)}};
    if (b.device_busy >= 0) {
      j["device_busy_ns"] = b.device_busy;
      j["device_idle_ns"] = PartsJson(b.device_idle);
    }
    return j;
  }

  json TotalsJson() const {
    json j = {{"counted_steps", b_.counted}, {"counted_ns", b_.counted_ns}, {"thread", thread_}, {"host_ns", PartsJson(b_.host)}};
    json pct = json::object();
    for (size_t k = 0; k < analysis::kStepParts; ++k)
      pct[analysis::StepPartName(static_cast<analysis::StepPart>(k))] = b_.Pct(static_cast<analysis::StepPart>(k));
    j["host_pct"] = pct;
    if (b_.device_busy >= 0) {
      j["device_busy_ns"] = b_.device_busy;
      j["device_idle_ns"] = PartsJson(b_.device_idle);
      j["device_idle_after_sync_ns"] = PartsJson(b_.device_idle_after_sync);
    }
    json ops = json::array();
    for (size_t i = 0; i < b_.compute_ops.size() && i < 10; ++i)
      ops.push_back({{"name", b_.compute_ops[i].first}, {"ns", b_.compute_ops[i].second}});
    j["compute_ops"] = ops;
    if (!roof_.empty()) {
      json bound = json::array();
      for (const auto& p : bounding_)
        bound.push_back({{"name", p.name}, {"flops_per_s", p.flops_per_s}, {"pct_of_roof", p.pct_of_roof}, {"bound", p.bound}});
      j["compute_bound"] = {{"roof", roof_}, {"ops", bound}};
    }
    return j;
  }

  // The step's ops' achieved FLOP/s against the roofs of what ran them (the
  // roofline's op points, most time first, where the trace has FLOP
  // estimates: --shapes).
  void BoundingOps(const model::Trace& t) {
    analysis::RooflineResult r = analysis::Roofline(t);
    const analysis::Roof* roof = r.RoofOf(r.primary);
    if (roof == nullptr) {
      analysis::RecordedHost h = analysis::RecordedHostPeaks(t);
      if (h.peak_flops_f32 > 0) roof_ = fmt::format("the host's fp32 peak ({:.0f} GFLOP/s, all cores)", h.peak_flops_f32 / 1e9);
      return;
    }
    roof_ = fmt::format("{} peak {:.0f} GFLOP/s, {:.0f} GB/s", roof->name, roof->peak_flops / 1e9, roof->bandwidth / 1e9);
    // The estimated ops taking the most time (outermost: aten::linear for its addmm).
    for (const analysis::RooflinePoint& p : r.ops)
      if (p.flops_per_s > 0 && p.pct_of_roof > 0 && bounding_.size() < 3) bounding_.push_back(p);
  }

  analysis::FrameworkOptions opt_;
  analysis::TrainingSteps s_;
  const char* label_ = "Steps";
  analysis::StepBreakdowns b_;
  std::vector<analysis::RooflinePoint> bounding_;
  std::string roof_;  // what bounding_'s percentages are of
  std::string thread_;
  std::vector<int64_t> ranks_;  // per step: its process's rank (-1 unknown)
  bool by_rank_ = false;        // steps of two or more ranks
};

class FrameworkOpsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { s_ = analysis::FrameworkOps(t); }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (s_.ops_by_name.empty() && s_.modules.empty()) return;
    out += fmt::format("Framework ops ({} recorded, --ops {}", s_.ops, s_.mode.empty() ? "?" : s_.mode);
    if (s_.mode == "sampled")
      out += fmt::format(": windows covered {:.1f}% of the run; counts and times are of the windows", 100 * s_.coverage);
    out += ")\n";
    if (s_.backward) out += fmt::format("  backward ops linked to their forward op: {} of {}\n", s_.backward_linked, s_.backward);
    if (s_.flops > 0 || s_.bytes > 0)
      out += fmt::format("  estimated work: {:.3f} GFLOP, {} moved ({:.2f} FLOP/byte)\n", static_cast<double>(s_.flops) / 1e9,
                         HumanBytes(static_cast<double>(s_.bytes)),
                         s_.bytes > 0 ? static_cast<double>(s_.flops) / static_cast<double>(s_.bytes) : 0.0);
    bool cost = std::any_of(s_.ops_by_name.begin(), s_.ops_by_name.end(), [](const auto& o) { return o.flops >= 0; });
    out += fmt::format("  {:<44} {:<8} {:>8} {:>11} {:>11} {:>7}{}\n", "op", "scope", "count", "total", "self", "self%",
                       cost ? fmt::format(" {:>10} {:>11}", "GFLOP", "moved") : "");
    for (size_t i = 0; i < s_.ops_by_name.size() && i < opt.top; ++i) {
      const auto& o = s_.ops_by_name[i];
      std::string c;
      if (cost)
        c = fmt::format(" {:>10} {:>11}", o.flops >= 0 ? fmt::format("{:.3f}", static_cast<double>(o.flops) / 1e9) : "-",
                        o.bytes >= 0 ? HumanBytes(static_cast<double>(o.bytes)) : "-");
      out += fmt::format("  {:<44} {:<8} {:>8} {:>11} {:>11} {:>6.1f}%{}\n", Truncate(o.name, 44), o.scope, o.count,
                         FormatDuration(o.total_ns), FormatDuration(o.self_ns), o.self_pct, c);
    }
    if (!s_.modules.empty()) {
      out += fmt::format("\nModules\n  {:<52} {:>8} {:>11} {:>11}\n", "module", "count", "total", "self");
      for (size_t i = 0; i < s_.modules.size() && i < opt.top; ++i) {
        const auto& m = s_.modules[i];
        out += fmt::format("  {:<52} {:>8} {:>11} {:>11}\n", Truncate(m.name, 52), m.count, FormatDuration(m.total_ns),
                           FormatDuration(m.self_ns));
      }
    }
  }
  void RenderJson(json& root, const ReportOptions& opt) const override {
    auto rows = [&](const std::vector<analysis::FrameworkOpStats>& v, const std::string& key) {
      return JsonRows(root, key, v.size(), opt, [&](size_t i) {
        const auto& o = v[i];
        return json{{"name", o.name},         {"scope", o.scope},     {"count", o.count},
                    {"total_ns", o.total_ns}, {"self_ns", o.self_ns}, {"max_ns", o.max_ns},
                    {"self_pct", o.self_pct}, {"flops", o.flops},     {"bytes", o.bytes}};
      });
    };
    json& f = Framework(root);
    f["ops_mode"] = s_.mode;
    f["ops_recorded"] = s_.ops;
    f["ops_coverage"] = s_.coverage;
    f["backward_ops"] = s_.backward;
    f["backward_linked"] = s_.backward_linked;
    f["flops"] = s_.flops;
    f["bytes"] = s_.bytes;
    f["ops"] = rows(s_.ops_by_name, "framework.ops");
    f["modules"] = rows(s_.modules, "framework.modules");
  }

 private:
  analysis::FrameworkOpsSummary s_;
};

class MemorySection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { s_ = analysis::Memory(t); }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    // Peaks, live blocks and churn per device: the Memory section.
    if (s_.ops.empty()) return;
    out += "Framework memory by op\n";
    out += fmt::format("  {:<44} {:>10} {:>12} {:>14}\n", "op (allocating directly)", "allocs", "bytes", "peak increase");
    for (size_t i = 0; i < s_.ops.size() && i < std::min<size_t>(opt.top, 10); ++i) {
      const auto& o = s_.ops[i];
      out += fmt::format("  {:<44} {:>10} {:>12} {:>14}\n", Truncate(o.name, 44), o.allocs,
                         FormatBytes(static_cast<double>(o.bytes)), FormatBytes(static_cast<double>(o.peak_increase)));
    }
  }
  void RenderJson(json& root, const ReportOptions& opt) const override {
    json devs = json::array();
    for (const auto& d : s_.devices) {
      if (d.layer != model::MemoryLayer::kAllocator) continue;  // the runtime's: the Memory section
      // The timeline, thinned to at most kSeriesPoints points that keep each bucket's maximum.
      json tl = json::array();
      size_t n = d.timeline.size(), per = std::max<size_t>(1, (n + kSeriesPoints - 1) / kSeriesPoints);
      for (size_t i = 0; i < n; i += per) {
        size_t best = i;
        for (size_t j = i; j < std::min(n, i + per); ++j)
          if (d.timeline[j].bytes > d.timeline[best].bytes) best = j;
        tl.push_back({d.timeline[best].ts, d.timeline[best].bytes});
      }
      devs.push_back({{"process", d.process_label}, {"device", d.device == model::kNone ? "host" : std::to_string(d.device)},
                      {"peak_bytes", d.peak_bytes}, {"peak_ts_ns", d.peak_ts}, {"allocs", d.allocs}, {"frees", d.frees},
                      {"bytes_allocated", d.bytes_allocated}, {"timeline", tl}});
    }
    json ops = JsonRows(root, "framework.memory.ops", s_.ops.size(), opt, [&](size_t i) {
      const auto& o = s_.ops[i];
      return json{{"name", o.name}, {"allocs", o.allocs}, {"bytes", o.bytes}, {"peak_increase_bytes", o.peak_increase}};
    });
    Framework(root)["memory"] = {{"devices", devs}, {"ops", ops}};
  }

 private:
  analysis::MemorySummary s_;
};

class DataflowSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { s_ = analysis::Dataflow(t); }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (s_.edges == 0 && s_.graphs.empty()) return;
    out += fmt::format("Dataflow: {} edges between {} ops\n", s_.edges, s_.ops_with_edges);
    for (size_t i = 0; i < s_.top_pairs.size() && i < std::min<size_t>(opt.top, 10); ++i)
      out += fmt::format("  {:<64} {:>8}\n", Truncate(s_.top_pairs[i].first, 64), s_.top_pairs[i].second);
    for (const auto& g : s_.graphs)
      out += fmt::format("  graph {} ({}): {} nodes, {} edges\n", g.name, g.process, g.nodes, g.edges);
  }
  void RenderJson(json& root, const ReportOptions& opt) const override {
    json pairs = JsonRows(root, "framework.dataflow.pairs", s_.top_pairs.size(), opt, [&](size_t i) {
      return json{{"edge", s_.top_pairs[i].first}, {"count", s_.top_pairs[i].second}};
    });
    json graphs = json::array();
    for (const auto& g : s_.graphs)
      graphs.push_back({{"name", g.name}, {"process", g.process}, {"nodes", g.nodes}, {"edges", g.edges}});
    Framework(root)["dataflow"] = {{"edges", s_.edges}, {"ops_with_edges", s_.ops_with_edges}, {"pairs", pairs},
                                   {"graphs", graphs}};
  }

 private:
  analysis::DataflowSummary s_;
};

}  // namespace

std::unique_ptr<Section> MakeTrainingSection() { return std::make_unique<TrainingSection>(); }
std::unique_ptr<Section> MakeFrameworkOpsSection() { return std::make_unique<FrameworkOpsSection>(); }
std::unique_ptr<Section> MakeFrameworkMemorySection() { return std::make_unique<MemorySection>(); }
std::unique_ptr<Section> MakeDataflowSection() { return std::make_unique<DataflowSection>(); }

}  // namespace strata::report

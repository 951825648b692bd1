// Core report sections: overview (trace.*), steps, spans, counters, collectors, warnings.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/summary.h"
#include "base/files.h"
#include "base/int_math.h"
#include "base/units.h"
#include "base/json_get.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

// How the recorded program ended, from the manifest: its exit status, the
// signal that killed it, or why that is unknown. A manifest still marked
// "running" whose directory no `strata record` holds locked was left by a
// supervisor that died (SIGKILL) before it could write the end.
std::string ProgramEnd(const json& m, const std::string& path) {
  std::string state;
  if (m.contains("recording") && m["recording"].is_object() && m["recording"].contains("state") &&
      m["recording"]["state"].is_string())
    state = m["recording"]["state"].get<std::string>();
  if (state == "running") {
    if (DirectoryLocked(path)) return "unknown: still being recorded (strata record is running)";
    return "unknown: the recording supervisor died (strata record was killed before the program ended); the "
           "program's exit status is unknown and the trace may lack its end";
  }
  if (state == "not_run")
    return "none: " + (m.contains("note") && m["note"].is_string() ? m["note"].get<std::string>()
                                                                     : std::string("the command could not be run"));
  if (m.contains("signal") && m["signal"].is_number_integer() && m["signal"].get<int>() > 0) {
    std::string name = m.contains("signal_name") && m["signal_name"].is_string()
                           ? m["signal_name"].get<std::string>()
                           : "";
    return fmt::format("killed by signal {}{}", m["signal"].get<int>(), name.empty() ? "" : " (" + name + ")");
  }
  if (m.contains("exit_status")) return m["exit_status"].dump();
  return "";
}

class OverviewSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override {
    o_ = analysis::Overview(t);
    source_ = t.source;
    path_ = t.path;
    if (!t.manifest_json.empty()) {
      manifest_ = json::parse(t.manifest_json, nullptr, /*allow_exceptions=*/false);
      if (manifest_.is_discarded()) manifest_ = nullptr;
    }
    for (const auto& w : t.warnings)
      if (w.find("the manifest could not be read") != std::string::npos) manifest_error_ = w;
    // The recording's own account of its losses (strata record), when there is
    // one: it counts what never reached the stream files (failed writes, a
    // killed process's buffers) as well as the drops the streams record.
    lost_ = o_.lost_events;
    if (manifest_.is_object() && manifest_.contains("loss") && manifest_["loss"].is_object()) {
      loss_ = manifest_["loss"];
      lost_ = json_get::Int<uint64_t>(manifest_, "lost_events", lost_);
    }
    damaged_packets_ = t.damaged_packets;
    damaged_bytes_ = t.damaged_bytes;
    damaged_events_ = t.damaged_events_estimate;
  }
  void RenderText(std::string& out, const ReportOptions&) const override {
    out += fmt::format("strata report: {} ({})\n", path_, source_);
    if (manifest_.is_object()) {
      if (manifest_.contains("command") && manifest_["command"].is_array()) {
        std::string cmd;
        for (const auto& a : manifest_["command"])
          if (a.is_string()) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
        out += fmt::format("  command     {}\n", cmd);
      }
      if (std::string end = ProgramEnd(manifest_, path_); !end.empty())
        out += fmt::format("  exit status {}\n", end);
    }
    out += fmt::format("  duration    {}\n", FormatDuration(o_.duration_ns));
    out += fmt::format("  processes   {}   threads {}   streams {}\n", o_.processes, o_.threads, o_.streams.size());
    out += fmt::format("  events      {}   lost {}\n", o_.events, lost_);
    if (loss_.is_object()) {
      auto n = [this](const char* k) { return loss_.contains(k) ? json_get::Int<uint64_t>(loss_[k], "events") : uint64_t{0}; };
      std::vector<std::string> why;
      if (n("dropped")) why.push_back(fmt::format("{} dropped (buffers full)", n("dropped")));
      if (n("write_failed"))
        why.push_back(fmt::format("{} not written ({})", n("write_failed"),
                                  json_get::Str(loss_["write_failed"], "error", "write failed")));
      if (n("unflushed_at_death")) why.push_back(fmt::format("{} unflushed when their process died", n("unflushed_at_death")));
      std::string line;
      for (const auto& w : why) line += (line.empty() ? "" : ", ") + w;
      if (!line.empty()) out += "  loss        " + line + "\n";
      if (n("salvaged"))
        out += fmt::format("              {} events written by strata record from the buffers of processes that died\n",
                           n("salvaged"));
      if (loss_.contains("note")) out += "              " + json_get::Str(loss_, "note") + "\n";
    }
    if (damaged_packets_)
      out += fmt::format("  damaged     {} packet{} skipped by the reader ({} bytes, about {} events)\n", damaged_packets_,
                         damaged_packets_ == 1 ? "" : "s", damaged_bytes_, damaged_events_);
    if (!manifest_error_.empty()) out += "  manifest    could not be read: the command, exit status and losses are unknown\n";
  }
  void RenderJson(json& j, const ReportOptions& opt) const override {
    // Every stream that lost events, then the others up to the row limit.
    std::vector<const analysis::StreamStats*> rows;
    for (const auto& s : o_.streams)
      if (s.lost > 0) rows.push_back(&s);
    size_t others = 0;
    for (const auto& s : o_.streams)
      if (s.lost == 0 && others++ < opt.max_rows) rows.push_back(&s);
    if (rows.size() < o_.streams.size()) j["detail"]["omitted_rows"]["trace.streams"] = o_.streams.size() - rows.size();
    json streams = json::array();
    for (const auto* s : rows)
      streams.push_back({{"process", s->process}, {"pid", s->pid}, {"tid", s->tid}, {"name", s->name}, {"kind", s->kind},
                         {"events", s->events}, {"lost_events", s->lost}});
    j["trace"] = {{"source", source_},           {"path", path_},
                  {"start_ns", o_.start_ns},     {"end_ns", o_.end_ns},
                  {"duration_ns", o_.duration_ns}, {"events", o_.events},
                  {"lost_events", lost_}, {"processes", o_.processes},
                  {"threads", o_.threads},       {"stream_count", o_.streams.size()},
                  {"streams", streams}};
    // Only when there is something to say: reports of other tools' traces (and their goldens) are unchanged.
    if (loss_.is_object() || damaged_packets_) {
      json loss = loss_.is_object() ? loss_ : json::object();
      loss["damaged"] = {{"packets", damaged_packets_}, {"bytes", damaged_bytes_}, {"events_estimate", damaged_events_}};
      j["trace"]["loss"] = loss;
    }
    if (!manifest_error_.empty()) j["trace"]["manifest_error"] = manifest_error_;
    if (!manifest_.is_null()) j["manifest"] = manifest_;
    if (manifest_.is_object())
      if (std::string end = ProgramEnd(manifest_, path_); !end.empty()) j["trace"]["program_end"] = end;
  }

 private:
  analysis::TraceOverview o_;
  std::string source_, path_;
  json manifest_;
  json loss_;
  uint64_t lost_ = 0;
  uint64_t damaged_packets_ = 0, damaged_bytes_ = 0, damaged_events_ = 0;
  std::string manifest_error_;
};

class StepsSection : public Section {
 public:
  // The throughput is the training section's (one source, whatever gives the
  // batch size): it adds steps.throughput_per_s to the JSON.
  void Build(const model::Trace& t, const ReportOptions&) override { s_ = analysis::Steps(t); }
  void RenderText(std::string& out, const ReportOptions&) const override {
    if (s_.count == 0) {
      out += "Steps: none recorded\n";
      return;
    }
    const auto& d = s_.duration;
    out += fmt::format("Steps: {}   mean {}   p50 {}   p90 {}   p99 {}   min {}   max {}\n", s_.count,
                       FormatDuration(static_cast<int64_t>(d.mean)), FormatDuration(d.p50), FormatDuration(d.p90),
                       FormatDuration(d.p99), FormatDuration(d.min), FormatDuration(d.max));
  }
  void RenderJson(json& j, const ReportOptions& opt) const override {
    const auto& d = s_.duration;
    j["steps"] = {{"count", s_.count}, {"mean_ns", d.mean}, {"p50_ns", d.p50}, {"p90_ns", d.p90},
                  {"p99_ns", d.p99},   {"min_ns", d.min},   {"max_ns", d.max}};
    // The slowest steps, slowest first.
    std::vector<size_t> order(s_.durations_ns.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s_.durations_ns[a] > s_.durations_ns[b]; });
    order.resize(std::min(order.size(), opt.full ? size_t{0} : opt.max_rows));
    if (!opt.full) {
      json slowest = json::array();
      for (size_t i : order) slowest.push_back({{"number", s_.numbers[i]}, {"index", i}, {"duration_ns", s_.durations_ns[i]}});
      j["steps"]["slowest"] = slowest;
    }
    // One duration per step (the step-time chart), thinned on very long runs to
    // each stretch's longest step: durations_every steps per point.
    const auto& v = s_.durations_ns;
    size_t every = opt.full ? 1 : std::max<size_t>(1, (v.size() + kStepSeriesPoints - 1) / kStepSeriesPoints);
    json series = json::array();
    for (size_t i = 0; i < v.size(); i += every) series.push_back(*std::max_element(v.begin() + static_cast<ptrdiff_t>(i),
                                                                                     v.begin() + static_cast<ptrdiff_t>(std::min(v.size(), i + every))));
    j["steps"]["durations_ns"] = series;
    j["steps"]["durations_every"] = every;
    if (opt.full) j["steps"]["numbers"] = s_.numbers;
  }

 private:
  analysis::StepStats s_;
};

class SpansSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { spans_ = analysis::SpanTable(t); }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (spans_.empty()) return;
    out += fmt::format("Top spans by total time\n  {:<40} {:<7} {:>9} {:>12} {:>12} {:>12}\n", "name", "kind", "count",
                       "total", "self", "max");
    for (size_t i = 0; i < spans_.size() && i < opt.top; ++i) {
      const auto& s = spans_[i];
      out += fmt::format("  {:<40} {:<7} {:>9} {:>12} {:>12} {:>12}\n", Truncate(s.name, 40), s.kind, s.count,
                         FormatDuration(s.total_ns), FormatDuration(s.self_ns), FormatDuration(s.max_ns));
    }
    std::vector<const analysis::SpanStats*> by_self;
    int64_t self_sum = 0;
    for (const auto& s : spans_) {
      by_self.push_back(&s);
      self_sum = SatAdd(self_sum, s.self_ns);
    }
    std::sort(by_self.begin(), by_self.end(), [](auto* a, auto* b) { return a->self_ns > b->self_ns; });
    out += fmt::format("\nTop spans by self time\n  {:<40} {:<7} {:>9} {:>12} {:>8}\n", "name", "kind", "count", "self", "share");
    for (size_t i = 0; i < by_self.size() && i < opt.top; ++i) {
      const auto& s = *by_self[i];
      double share = self_sum ? 100.0 * static_cast<double>(s.self_ns) / static_cast<double>(self_sum) : 0.0;
      out += fmt::format("  {:<40} {:<7} {:>9} {:>12} {:>7.1f}%\n", Truncate(s.name, 40), s.kind, s.count,
                         FormatDuration(s.self_ns), share);
    }
  }
  void RenderJson(json& j, const ReportOptions& opt) const override {
    j["spans"] = JsonRows(j, "spans", spans_.size(), opt, [&](size_t i) {
      const auto& s = spans_[i];
      return json{{"name", s.name},         {"kind", s.kind},       {"count", s.count},
                  {"total_ns", s.total_ns}, {"self_ns", s.self_ns}, {"max_ns", s.max_ns}};
    });
  }

 private:
  std::vector<analysis::SpanStats> spans_;
};

class CountersSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { c_ = analysis::Counters(t); }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (c_.empty()) return;
    out += fmt::format("Counters\n  {:<32} {:<24} {:>9} {:>12} {:>12} {:>12} {:>12}\n", "name", "process", "samples",
                       "min", "mean", "max", "last");
    for (size_t i = 0; i < c_.size() && i < opt.top; ++i) {
      const auto& c = c_[i];
      auto v = [&c](double x) { return CounterValue(x, c.unit); };
      out += fmt::format("  {:<32} {:<24} {:>9} {:>12} {:>12} {:>12} {:>12}\n", Truncate(c.name, 32),
                         Truncate(c.process, 24), c.samples, v(c.min), v(c.mean), v(c.max), v(c.last));
    }
    if (c_.size() > opt.top) out += fmt::format("  ... {} more\n", c_.size() - opt.top);
  }
  void RenderJson(json& j, const ReportOptions& opt) const override {
    j["counters"] = JsonRows(j, "counters", c_.size(), opt, [&](size_t i) {
      const auto& c = c_[i];
      return json{{"name", c.name}, {"process", c.process}, {"unit", c.unit}, {"samples", c.samples},
                  {"min", c.min},   {"mean", c.mean},       {"max", c.max},   {"last", c.last}};
    });
  }

  // A counter's value in its unit: bytes as KiB/MiB/GiB, rates per second, else
  // integers as integers.
  static std::string CounterValue(double v, const std::string& unit) {
    if (unit == "bytes") return HumanBytes(v);
    if (unit == "bytes/s") return HumanBytes(v) + "/s";
    if (unit == "%") return HumanNumber(std::round(v * 10) / 10) + "%";
    if (unit == "ns") return HumanDuration(v);
    if (unit == "1/s") return HumanNumber(std::round(v * 10) / 10) + "/s";
    return HumanNumber(v);
  }

 private:
  std::vector<analysis::CounterStats> c_;
};

// What each collector recorded or could not, from the processes and the manifest.
class CollectorsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override {
    // A collector may report more than once (at start, at exit): its last word counts.
    for (size_t i = 0; i < t.collectors.size(); ++i) {
      const auto& c = t.collectors[i];
      bool superseded = false;
      for (size_t k = i + 1; k < t.collectors.size() && !superseded; ++k)
        superseded = t.collectors[k].process == c.process && t.collectors[k].collector == c.collector;
      if (!superseded) rows_.push_back({analysis::ProcessLabel(t, c.process), c.collector, c.state, c.detail});
    }
    if (!t.manifest_json.empty()) {
      json m = json::parse(t.manifest_json, nullptr, false);
      if (m.is_object() && m.contains("collectors") && m["collectors"].is_array())
        for (const auto& c : m["collectors"]) {
          // (json::value() throws on a member of another type: the manifest is a file like any other.)
          auto str = [&c](const char* key, const char* absent) {
            auto it = c.find(key);
            return it != c.end() && it->is_string() ? it->get<std::string>() : std::string(absent);
          };
          // Entries the supervisor merged from the processes are already listed per process.
          if (c.is_object() && str("source", "") != "process")
            rows_.push_back({"supervisor", str("name", "?"), str("state", "?"), str("detail", "")});
        }
    }
  }
  void RenderText(std::string& out, const ReportOptions&) const override {
    bool any = false;
    for (const auto& r : rows_) {
      if (r.state == "ok") continue;
      if (!any) out += "Not recorded\n";
      any = true;
      out += fmt::format("  {:<14} {:<12} {:<24} {}\n", r.collector, r.state, Truncate(r.process, 24), r.detail);
    }
  }
  void RenderJson(json& j, const ReportOptions&) const override {
    json a = json::array();
    for (const auto& r : rows_)
      a.push_back({{"process", r.process}, {"collector", r.collector}, {"state", r.state}, {"detail", r.detail}});
    j["collectors"] = a;
  }

 private:
  struct Row {
    std::string process, collector, state, detail;
  };
  std::vector<Row> rows_;
};

class WarningsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { w_ = t.warnings; }
  void RenderText(std::string& out, const ReportOptions&) const override {
    if (w_.empty()) return;
    out += "Warnings\n";
    for (const auto& w : w_) out += "  " + w + "\n";
  }
  void RenderJson(json& j, const ReportOptions&) const override { j["warnings"] = w_; }

 private:
  std::vector<std::string> w_;
};

// The recording's streams with their event and loss counts: text only, at the
// end of the report (the JSON has them in the overview's keys).
class StreamsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { streams_ = analysis::Overview(t).streams; }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (streams_.empty()) return;
    out += "Streams                                                                   events     lost\n";
    size_t shown = 0;
    for (const auto& s : streams_) {
      if (shown++ >= opt.top) {
        out += fmt::format("  ... {} more\n", streams_.size() - opt.top);
        break;
      }
      // Only a thread's stream has a thread id (the CPU streams' is the CPU's
      // number, the /proc sampler's a sentinel that printed as 4294967295).
      std::string tid = s.kind == "thread" && s.tid >= 0 && s.tid < UINT32_MAX ? std::to_string(s.tid) : "-";
      out += fmt::format("  {:<28} {:<7} tid {:<8} {:<20} {:>10} {:>8}\n", Truncate(s.process, 28), s.kind, tid,
                         Truncate(s.name, 20), s.events, s.lost);
    }
  }
  void RenderJson(json&, const ReportOptions&) const override {}

 private:
  std::vector<analysis::StreamStats> streams_;
};

}  // namespace

std::unique_ptr<Section> MakeStreamsSection() { return std::make_unique<StreamsSection>(); }
std::unique_ptr<Section> MakeOverviewSection() { return std::make_unique<OverviewSection>(); }
std::unique_ptr<Section> MakeStepsSection() { return std::make_unique<StepsSection>(); }
std::unique_ptr<Section> MakeSpansSection() { return std::make_unique<SpansSection>(); }
std::unique_ptr<Section> MakeCountersSection() { return std::make_unique<CountersSection>(); }
std::unique_ptr<Section> MakeCollectorsSection() { return std::make_unique<CollectorsSection>(); }
std::unique_ptr<Section> MakeWarningsSection() { return std::make_unique<WarningsSection>(); }

}  // namespace strata::report

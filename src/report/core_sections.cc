// Core report sections: overview (trace.*), steps, spans, counters, collectors, warnings.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/summary.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

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
  }
  void RenderText(std::string& out, const ReportOptions& opt) const override {
    out += fmt::format("strata report: {} ({})\n", path_, source_);
    if (manifest_.is_object()) {
      if (manifest_.contains("command") && manifest_["command"].is_array()) {
        std::string cmd;
        for (const auto& a : manifest_["command"])
          if (a.is_string()) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
        out += fmt::format("  command     {}\n", cmd);
      }
      if (manifest_.contains("exit_status")) out += fmt::format("  exit status {}\n", manifest_["exit_status"].dump());
    }
    out += fmt::format("  duration    {}\n", FormatDuration(o_.duration_ns));
    out += fmt::format("  processes   {}   threads {}   streams {}\n", o_.processes, o_.threads, o_.streams.size());
    out += fmt::format("  events      {}   lost {}\n", o_.events, o_.lost_events);
    out += "\nStreams                                                                   events     lost\n";
    size_t shown = 0;
    for (const auto& s : o_.streams) {
      if (shown++ >= opt.top) {
        out += fmt::format("  ... {} more\n", o_.streams.size() - opt.top);
        break;
      }
      out += fmt::format("  {:<28} {:<7} tid {:<8} {:<20} {:>10} {:>8}\n", Truncate(s.process, 28), s.kind, s.tid,
                         Truncate(s.name, 20), s.events, s.lost);
    }
  }
  void RenderJson(json& j, const ReportOptions&) const override {
    json streams = json::array();
    for (const auto& s : o_.streams)
      streams.push_back({{"process", s.process}, {"pid", s.pid}, {"tid", s.tid}, {"name", s.name}, {"kind", s.kind},
                         {"events", s.events}, {"lost_events", s.lost}});
    j["trace"] = {{"source", source_},           {"path", path_},
                  {"start_ns", o_.start_ns},     {"end_ns", o_.end_ns},
                  {"duration_ns", o_.duration_ns}, {"events", o_.events},
                  {"lost_events", o_.lost_events}, {"processes", o_.processes},
                  {"threads", o_.threads},       {"streams", streams}};
    if (!manifest_.is_null()) j["manifest"] = manifest_;
  }

 private:
  analysis::TraceOverview o_;
  std::string source_, path_;
  json manifest_;
};

class StepsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions& opt) override { s_ = analysis::Steps(t, opt.analysis.batch_size); }
  void RenderText(std::string& out, const ReportOptions&) const override {
    if (s_.count == 0) {
      out += "Steps: none recorded\n";
      return;
    }
    const auto& d = s_.duration;
    out += fmt::format("Steps: {}   mean {}   p50 {}   p90 {}   p99 {}   min {}   max {}\n", s_.count,
                       FormatDuration(static_cast<int64_t>(d.mean)), FormatDuration(d.p50), FormatDuration(d.p90),
                       FormatDuration(d.p99), FormatDuration(d.min), FormatDuration(d.max));
    if (s_.throughput_per_s > 0)
      out += fmt::format("  throughput {:.1f} samples/s (batch size {:g})\n", s_.throughput_per_s, s_.batch_size);
  }
  void RenderJson(json& j, const ReportOptions&) const override {
    const auto& d = s_.duration;
    j["steps"] = {{"count", s_.count}, {"mean_ns", d.mean}, {"p50_ns", d.p50}, {"p90_ns", d.p90}, {"p99_ns", d.p99},
                  {"min_ns", d.min},   {"max_ns", d.max},   {"durations_ns", s_.durations_ns},
                  {"numbers", s_.numbers}};
    if (s_.batch_size > 0) {
      j["steps"]["batch_size"] = s_.batch_size;
      j["steps"]["throughput_per_s"] = s_.throughput_per_s;
    }
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
      self_sum += s.self_ns;
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
    json a = json::array();
    for (size_t i = 0; i < spans_.size() && i < opt.max_rows; ++i) {
      const auto& s = spans_[i];
      a.push_back({{"name", s.name}, {"kind", s.kind}, {"count", s.count}, {"total_ns", s.total_ns},
                   {"self_ns", s.self_ns}, {"max_ns", s.max_ns}});
    }
    j["spans"] = a;
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
      out += fmt::format("  {:<32} {:<24} {:>9} {:>12.6g} {:>12.6g} {:>12.6g} {:>12.6g}\n", Truncate(c.name, 32),
                         Truncate(c.process, 24), c.samples, c.min, c.mean, c.max, c.last);
    }
  }
  void RenderJson(json& j, const ReportOptions&) const override {
    json a = json::array();
    for (const auto& c : c_)
      a.push_back({{"name", c.name}, {"process", c.process}, {"samples", c.samples}, {"min", c.min}, {"mean", c.mean},
                   {"max", c.max}, {"last", c.last}});
    j["counters"] = a;
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

}  // namespace

std::unique_ptr<Section> MakeOverviewSection() { return std::make_unique<OverviewSection>(); }
std::unique_ptr<Section> MakeStepsSection() { return std::make_unique<StepsSection>(); }
std::unique_ptr<Section> MakeSpansSection() { return std::make_unique<SpansSection>(); }
std::unique_ptr<Section> MakeCountersSection() { return std::make_unique<CountersSection>(); }
std::unique_ptr<Section> MakeCollectorsSection() { return std::make_unique<CollectorsSection>(); }
std::unique_ptr<Section> MakeWarningsSection() { return std::make_unique<WarningsSection>(); }

}  // namespace strata::report

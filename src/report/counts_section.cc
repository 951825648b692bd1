// The report's "counts": how many events of each level the trace holds, as one
// compact object that stays in every form of the JSON report. Each export
// writes every one of them (src/exporters), so these are the numbers that a
// reader of the Perfetto, Chrome JSON or SQLite output must find again
// (tests/matrix). Counted from the model alone, independently of the writers.
#include <algorithm>
#include <vector>

#include "base/json_get.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

class CountsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override {
    for (model::SliceKind k : t.slices.kind) {
      steps_ += k == model::SliceKind::kStep;
      modules_ += k == model::SliceKind::kModule;
    }
    slices_ = t.slices.size();
    // One arrow per pair of slices, whatever recorded it: a launch and its
    // device work, a forward op and the backward op it created, the source's flows.
    // (Sorted and deduplicated: a node-based hash set here was 8% of a report.)
    std::vector<uint64_t> pairs;
    pairs.reserve(t.device.size() + t.ops.size() + t.flows.size());
    auto add = [&](int64_t from, int64_t to) {
      if (from >= 0 && to >= 0 && static_cast<size_t>(from) < t.slices.size() && static_cast<size_t>(to) < t.slices.size())
        pairs.push_back((static_cast<uint64_t>(from) << 32) | static_cast<uint64_t>(to));
    };
    for (size_t r = 0; r < t.device.size(); ++r) add(t.device.launch[r], t.device.slice[r]);
    for (size_t r = 0; r < t.ops.size(); ++r) add(t.ops.forward[r], t.ops.slice[r]);
    for (size_t f = 0; f < t.flows.size(); ++f) add(t.flows.from[f], t.flows.to[f]);
    std::sort(pairs.begin(), pairs.end());
    flows_ = static_cast<size_t>(std::unique(pairs.begin(), pairs.end()) - pairs.begin());
    for (model::ThreadState s : t.thread_states.state) context_switches_ += s == model::ThreadState::kRunning;
    j_ = {{"slices", slices_},
          {"steps", steps_},
          {"modules", modules_},
          {"ops", t.ops.size()},
          {"flows", flows_},
          {"instants", t.instants.size()},
          {"samples", t.cpu_samples.size()},
          {"stack_frames", t.frames.size()},
          {"thread_states", t.thread_states.size()},
          {"context_switches", context_switches_},
          {"syscalls", t.syscalls.size()},
          {"counter_series", t.counter_series.size()},
          {"counters", t.counters.size()},
          {"memory", t.memory.size()},
          {"page_faults", t.page_faults.size()},
          {"block_io", t.block_io.size()},
          {"not_recorded", NotRecorded(t)}};
  }
  void RenderText(std::string&, const ReportOptions&) const override {}
  void RenderJson(json& root, const ReportOptions&) const override { root["counts"] = j_; }

 private:
  // Collectors whose last word in a process was not "ok", and the supervisor's
  // own such entries in the manifest: the rows of "Not recorded".
  static uint64_t NotRecorded(const model::Trace& t) {
    uint64_t n = 0;
    for (size_t i = 0; i < t.collectors.size(); ++i) {
      const auto& c = t.collectors[i];
      bool superseded = false;
      for (size_t k = i + 1; k < t.collectors.size() && !superseded; ++k)
        superseded = t.collectors[k].process == c.process && t.collectors[k].collector == c.collector;
      n += !superseded && c.state != "ok";
    }
    if (t.manifest_json.empty()) return n;
    json m = json::parse(t.manifest_json, nullptr, /*allow_exceptions=*/false);
    if (m.is_object() && m.contains("collectors") && m["collectors"].is_array())
      for (const auto& c : m["collectors"])
        if (c.is_object() && json_get::Str(c, "source") != "process" && c.contains("state") && c["state"] != "ok") ++n;
    return n;
  }

  uint64_t slices_ = 0, steps_ = 0, modules_ = 0, flows_ = 0, context_switches_ = 0;
  json j_;
};

}  // namespace

std::unique_ptr<Section> MakeCountsSection() { return std::make_unique<CountsSection>(); }

}  // namespace strata::report

#include "exporters/view.h"

#include <algorithm>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace strata::exporters {

const char* FlowKindName(FlowKind k) {
  switch (k) {
    case FlowKind::kLaunch: return "launch";
    case FlowKind::kBackward: return "backward";
    case FlowKind::kSource: return "flow";
  }
  return "flow";
}

std::string ProcessName(const model::Trace& t, uint32_t process) {
  if (process >= t.processes.size()) return "os";
  const model::Process& p = t.processes[process];
  std::string name(t.strings.Get(p.name));
  auto slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  std::string out = (p.is_device ? "device " : "pid ") + std::to_string(p.is_device ? p.device : p.pid);
  if (!name.empty()) out += " (" + name + ")";
  return out;
}

uint32_t AssignLanes(std::vector<TimelineItem>& items) {
  std::vector<std::vector<int64_t>> stacks(1);  // per lane, the ends of the open items
  for (TimelineItem& it : items) {
    int64_t end = it.end();
    uint32_t k = 0;
    for (;; ++k) {
      if (k == stacks.size()) stacks.emplace_back();
      auto& st = stacks[k];
      while (!st.empty() && st.back() <= it.ts) st.pop_back();
      if (st.empty() || st.back() >= end) {
        st.push_back(end);
        break;
      }
    }
    it.lane = k;
  }
  return static_cast<uint32_t>(stacks.size());
}

namespace {

void BuildTimelines(const model::Trace& t, ExportView& v) {
  v.timeline.assign(t.tracks.size(), {});
  v.lanes.assign(t.tracks.size(), 1);
  std::vector<std::vector<uint32_t>> calls(t.tracks.size());
  for (uint32_t i = 0; i < t.syscalls.size(); ++i)
    if (t.syscalls.track[i] < t.tracks.size()) calls[t.syscalls.track[i]].push_back(i);
  for (uint32_t k = 0; k < t.tracks.size(); ++k) {
    auto& items = v.timeline[k];
    if (k < t.track_slices.size()) {
      auto [first, last] = t.track_slices[k];
      items.reserve(last - first + calls[k].size());
      for (uint32_t i = first; i < last; ++i) items.push_back({t.slices.ts[i], t.slices.dur[i], i, 0, false});
    }
    if (calls[k].empty()) {
      v.lanes[k] = AssignLanes(items);  // slices are sorted already (Finalize)
      continue;
    }
    size_t nslices = items.size();
    for (uint32_t r : calls[k]) items.push_back({t.syscalls.ts[r], std::max<int64_t>(0, t.syscalls.dur[r]), r, 0, true});
    // Begin order, longest first, so that an enclosing item precedes what it holds;
    // at equal begin and length a slice encloses a system call.
    auto before = [](const TimelineItem& a, const TimelineItem& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.dur != b.dur) return a.dur > b.dur;
      return a.syscall < b.syscall;
    };
    std::sort(items.begin() + static_cast<std::ptrdiff_t>(nslices), items.end(), before);
    std::inplace_merge(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(nslices), items.end(), before);
    v.lanes[k] = AssignLanes(items);
  }
}

void BuildFlows(const model::Trace& t, ExportView& v) {
  std::unordered_set<uint64_t> seen;
  auto add = [&](int64_t from, int64_t to, FlowKind kind) {
    if (from < 0 || to < 0 || static_cast<size_t>(from) >= t.slices.size() || static_cast<size_t>(to) >= t.slices.size())
      return;
    uint64_t key = (static_cast<uint64_t>(from) << 32) | static_cast<uint64_t>(to);
    if (seen.insert(key).second) v.flows.push_back({static_cast<uint32_t>(from), static_cast<uint32_t>(to), kind});
  };
  for (size_t r = 0; r < t.device.size(); ++r) add(t.device.launch[r], t.device.slice[r], FlowKind::kLaunch);
  for (size_t r = 0; r < t.ops.size(); ++r) add(t.ops.forward[r], t.ops.slice[r], FlowKind::kBackward);
  for (size_t f = 0; f < t.flows.size(); ++f) add(t.flows.from[f], t.flows.to[f], FlowKind::kSource);
}

// The same rows as the report's "Not recorded": each collector's last word per
// process, then the supervisor's own entries of the manifest.
void ReadCollectorsAndManifest(const model::Trace& t, ExportView& v) {
  for (size_t i = 0; i < t.collectors.size(); ++i) {
    const auto& c = t.collectors[i];
    bool superseded = false;
    for (size_t k = i + 1; k < t.collectors.size() && !superseded; ++k)
      superseded = t.collectors[k].process == c.process && t.collectors[k].collector == c.collector;
    if (!superseded && c.state != "ok") v.not_recorded.push_back({ProcessName(t, c.process), c.collector, c.state, c.detail});
  }
  if (t.manifest_json.empty()) return;
  nlohmann::json m = nlohmann::json::parse(t.manifest_json, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object()) return;
  if (m.contains("collectors") && m["collectors"].is_array())
    for (const auto& c : m["collectors"]) {
      if (!c.is_object() || c.value("source", "") == "process") continue;
      std::string state = c.contains("state") && c["state"].is_string() ? c["state"].get<std::string>() : "?";
      if (state == "ok") continue;
      v.not_recorded.push_back({"supervisor", c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : "?",
                                state, c.contains("detail") && c["detail"].is_string() ? c["detail"].get<std::string>() : ""});
    }
  if (m.contains("command") && m["command"].is_array())
    for (const auto& a : m["command"])
      if (a.is_string()) v.command += (v.command.empty() ? "" : " ") + a.get<std::string>();
  if (m.contains("exit_status")) v.exit_status = m["exit_status"].dump();
  if (m.contains("host") && m["host"].is_object()) {
    const auto& h = m["host"];
    if (h.contains("kernel") && h["kernel"].is_string()) v.kernel = h["kernel"].get<std::string>();
    if (h.contains("machine") && h["machine"].is_string()) v.machine = h["machine"].get<std::string>();
  }
}

}  // namespace

ExportView BuildView(const model::Trace& t) {
  ExportView v;
  BuildTimelines(t, v);
  BuildFlows(t, v);
  ReadCollectorsAndManifest(t, v);
  return v;
}

}  // namespace strata::exporters

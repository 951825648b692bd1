#include "importers/strata/ort_merge.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "base/files.h"

namespace strata::importers::strata_ctf {
namespace {

using model::SliceKind;

struct OrtEvent {
  std::string_view cat, name, op, provider;
  int64_t ts = 0, dur = 0;  // ns from ORT's profiler start
  int64_t tid = 0;
};

std::vector<std::string> Entries(const std::string& dir, bool dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (dirs ? it->is_directory(ec) : it->is_regular_file(ec)) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

uint32_t ThreadTrack(model::Trace& t, uint32_t process, int64_t tid) {
  for (uint32_t k = 0; k < t.tracks.size(); ++k)
    if (t.tracks[k].process == process && t.tracks[k].tid == tid && t.tracks[k].kind == model::TrackKind::kThread)
      return k;
  model::Track trk;
  trk.process = process;
  trk.tid = tid;
  trk.name = t.strings.Intern(fmt::format("ort {}", tid));
  t.tracks.push_back(trk);
  return static_cast<uint32_t>(t.tracks.size() - 1);
}

void MergeFile(model::Trace& t, uint32_t process, const std::string& path, int64_t first, int64_t last) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.load(path).get(doc) || !doc.is_array()) {
    t.warnings.push_back(fmt::format("{}: not an ONNX Runtime profile (a JSON array of events): not merged", path));
    return;
  }
  std::vector<OrtEvent> events;
  std::vector<size_t> runs;  // model_run events, by time
  for (simdjson::dom::element e : doc.get_array()) {
    std::string_view ph;
    if (e["ph"].get_string().get(ph) || ph != "X") continue;
    OrtEvent ev;
    double ts = 0, dur = 0;
    int64_t tid = 0;
    if (e["ts"].get_double().get(ts) || e["dur"].get_double().get(dur) || dur < 0 || ts < 0 || ts > 1e15 ||
        dur > 1e15)
      continue;
    if (!e["tid"].get_int64().get(tid)) ev.tid = tid;
    // (A member absent or of another type leaves the field empty.)
    if (e["cat"].get_string().get(ev.cat)) ev.cat = {};
    if (e["name"].get_string().get(ev.name)) ev.name = {};
    simdjson::dom::element args;
    if (!e["args"].get(args)) {
      if (args["op_name"].get_string().get(ev.op)) ev.op = {};
      if (args["provider"].get_string().get(ev.provider)) ev.provider = {};
    }
    ev.ts = static_cast<int64_t>(ts * 1000);
    ev.dur = static_cast<int64_t>(dur * 1000);
    if (ev.cat == "Session" && ev.name == "model_run") runs.push_back(events.size());
    events.push_back(ev);
  }
  std::sort(runs.begin(), runs.end(), [&](size_t a, size_t b) { return events[a].ts < events[b].ts; });
  if (runs.empty()) {
    t.warnings.push_back(fmt::format("{}: no model_run events: not merged (nothing to align it by)", path));
    return;
  }
  // strata's "ort.run" spans on the thread of the first run, in order.
  uint32_t track = ThreadTrack(t, process, events[runs[0]].tid);
  model::StringId run_name = t.strings.Find("ort.run");
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.track[i] == track && t.slices.name[i] == run_name) spans.emplace_back(t.slices.ts[i], t.slices.end(i));
  std::sort(spans.begin(), spans.end());
  size_t n = std::min(spans.size(), runs.size());
  if (n == 0) {
    t.warnings.push_back(fmt::format("{}: no ort.run spans on thread {}: not merged", path, events[runs[0]].tid));
    return;
  }
  // The runs asked for: first..last (step numbers are run numbers).
  if (first < 0 || static_cast<size_t>(first) >= n) {
    t.warnings.push_back(fmt::format("{}: ORT recorded {} runs, none in steps {}-{}: nothing merged", path, n, first, last));
    return;
  }
  size_t lo = static_cast<size_t>(first), hi = std::min(n - 1, static_cast<size_t>(std::max(first, last)));
  model::StringId node_key = t.strings.Intern("node"), provider_key = t.strings.Intern("provider");
  size_t merged = 0, outside = 0, represented = 0;
  for (const OrtEvent& ev : events) {
    // The run an event belongs to: the last model_run that began before it.
    auto it = std::upper_bound(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(n), ev.ts,
                               [&](int64_t ts, size_t r) { return ts < events[r].ts; });
    size_t k = static_cast<size_t>(it - runs.begin());
    bool in_run = k > 0 && ev.ts + ev.dur <= events[runs[k - 1]].ts + events[runs[k - 1]].dur;
    // The run itself and its executor are strata's ort.run span already.
    bool run_span = ev.cat == "Session" && (ev.name == "model_run" || ev.name == "SequentialExecutor::Execute");
    if (!in_run || k - 1 < lo || k - 1 > hi) {
      ++outside;
      continue;
    }
    if (run_span) {
      ++represented;
      continue;
    }
    // Each run aligned on its own span (ORT's clock and strata's drift apart
    // over a run's microseconds at most), its events kept inside it.
    const OrtEvent& run = events[runs[k - 1]];
    auto [span_ts, span_end] = spans[k - 1];
    int64_t ts = std::clamp(ev.ts - run.ts + span_ts, span_ts, span_end);
    int64_t end = std::clamp(ts + ev.dur, ts, span_end);
    uint32_t trk = ThreadTrack(t, process, ev.tid);
    bool node = ev.cat == "Node" && !ev.op.empty();
    std::string_view name = ev.name;
    if (node && name.ends_with("_kernel_time")) name.remove_suffix(12);
    uint32_t s = t.slices.Add(ts, end - ts, trk, t.strings.Intern(node ? ev.op : name),
                              node ? SliceKind::kOp : SliceKind::kSpan);
    if (node) {
      t.args.Add(s, node_key, t.strings.Intern(name), std::numeric_limits<double>::quiet_NaN());
      if (!ev.provider.empty()) t.args.Add(s, provider_key, t.strings.Intern(ev.provider), std::numeric_limits<double>::quiet_NaN());
    }
    ++t.tracks[trk].events;
    ++merged;
  }
  t.events_read += merged + outside + represented;
  if (outside)
    t.warnings.push_back(fmt::format("{}: {} ONNX Runtime events outside steps {}-{} (not merged)", path, outside, first, last));
}

}  // namespace

void MergeOrtProfiles(const std::string& trace_dir, model::Trace& t) {
  for (const std::string& dir : Entries(JoinPath(trace_dir, "ort"), true)) {
    auto text = ReadFile(JoinPath(dir, "strata_ort.json"));
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    int64_t pid = 0, first = -1, last = -1;
    if (!text.ok() || parser.parse(simdjson::padded_string(*text)).get(doc) || doc["pid"].get_int64().get(pid) ||
        doc["first_step"].get_int64().get(first) || doc["last_step"].get_int64().get(last)) {
      t.warnings.push_back(fmt::format("{}: no readable strata_ort.json: its ONNX Runtime profiles are not merged", dir));
      continue;
    }
    int32_t process = model::kNone;
    for (size_t p = 0; p < t.processes.size(); ++p)
      if (t.processes[p].pid == pid && !t.processes[p].is_device) process = static_cast<int32_t>(p);
    if (process == model::kNone) {
      t.warnings.push_back(fmt::format("{}: pid {} is not in the trace: not merged", dir, pid));
      continue;
    }
    for (const std::string& f : Entries(dir, false))
      if (f.ends_with(".json") && !f.ends_with("strata_ort.json")) MergeFile(t, static_cast<uint32_t>(process), f, first, last);
  }
}

}  // namespace strata::importers::strata_ctf

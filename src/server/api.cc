#include "server/api.h"

#include <tuple>
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "analysis/critical_path.h"
#include "analysis/framework.h"
#include "index/index_file.h"
#include "index/results_file.h"
#include "report/diff_report.h"
#include "report/stored_report.h"
#include "server/api_internal.h"
#include "server/grouped_rows.h"
#include "server/live.h"
#include "server/responses.h"

namespace strata::server {

using nlohmann::json;
using namespace api_detail;

Api::Api(std::vector<std::string> traces, index::IndexOptions io) : io_(std::move(io)) {
  for (std::string& p : traces) {
    traces_.push_back(std::make_unique<Served>());
    traces_.back()->path = std::move(p);
  }
}

Api::~Api() = default;

size_t Api::AddTrace(std::string path) {
  std::lock_guard lock(traces_mu_);
  traces_.push_back(std::make_unique<Served>());
  traces_.back()->path = std::move(path);
  return traces_.size() - 1;
}

void Api::AddOpened(std::string name, model::Trace t) {
  Served* added;
  {
    std::lock_guard lock(traces_mu_);
    traces_.push_back(std::make_unique<Served>());
    added = traces_.back().get();
  }
  Served& s = *added;
  s.path = std::move(name);
  std::call_once(s.opened, [&] {
    s.trace = std::make_unique<model::Trace>(std::move(t));
    s.lod = index::BuildLod(*s.trace);
    std::tie(s.start_ns, s.end_ns) = s.trace->span_ns();
  });
}

Api::Served* Api::Open(size_t id, ApiResponse* error) {
  Served* found = nullptr;
  {
    std::lock_guard lock(traces_mu_);
    if (id < traces_.size()) found = traces_[id].get();
  }
  if (!found) {
    *error = Error(404, "no such trace");
    return nullptr;
  }
  Served& s = *found;
  std::call_once(s.opened, [&] {
    auto t = index::OpenTrace(s.path, {}, io_, &s.use);
    if (!t.ok()) {
      s.status = t.status();
      return;
    }
    s.trace = std::make_unique<model::Trace>(std::move(t).value());
    // The levels of detail stored in the index; built here when the trace
    // could not be indexed.
    auto lod = s.use.path.empty() ? StatusOr<index::LodTable>(Status(StatusCode::kNotFound, ""))
                                  : index::ReadIndexLod(s.use.path, s.use.key);
    s.lod = lod.ok() ? std::move(lod).value() : index::BuildLod(*s.trace);
    std::tie(s.start_ns, s.end_ns) = s.trace->span_ns();
  });
  if (!s.status.ok()) {
    *error = Error(422, s.path + ": " + s.status.message());
    return nullptr;
  }
  return &s;
}

ApiResponse Api::Handle(std::string_view method, std::string_view path,
                        const std::multimap<std::string, std::string>& params, std::string_view body) {
  try {
    auto seg = Segments(path);
    if (seg.size() < 3 || seg[0] != "api" || seg[1] != "v1") return Error(404, "no such endpoint");
    if (seg.size() == 3 && seg[2] == "record") {
      if (method != "POST") return Error(405, "POST a JSON body: {\"steps\": N, \"detail\": [...]}");
      if (!live_) return Error(409, "no recording under way: start one with `strata record --serve -- CMD`");
      return live_->Request(body);
    }
    if (method != "GET") return Error(405, "only GET (and POST /api/v1/record)");
    if (seg.size() == 3 && seg[2] == "live") {
      if (!live_) return Error(404, "no recording under way (this is `strata view`)");
      uint64_t since = 0;
      if (std::string e = Param<uint64_t>(params, "since", 0, 0, UINT64_MAX / 2, &since); !e.empty())
        return Error(400, e);
      return live_->State(since);
    }
    if (seg.size() == 3 && seg[2] == "diff") return Diff(params);
    if (seg[2] != "traces") return Error(404, "no such endpoint");
    if (seg.size() == 3) return Traces();
    size_t id = 0;
    if (!ParseNumber(seg[3], &id)) return Error(404, "no such trace");
    ApiResponse err;
    Served* s = Open(id, &err);
    if (!s) return err;
    if (seg.size() == 4) return TraceInfo(*s);
    if (seg.size() == 5 && seg[4] == "summary") return Summary(*s);
    if (seg.size() == 5 && seg[4] == "steps") return Steps(*s);
    if (seg.size() == 5 && seg[4] == "viewport") return Viewport(*s, params);
    if (seg.size() == 5 && seg[4] == "slices") return Slices(*s, params);
    if (seg.size() == 5 && seg[4] == "search") return Search(*s, params);
    if (seg.size() == 5 && seg[4] == "counters") return Counters(*s);
    if (seg.size() == 7 && seg[4] == "threads" && seg[6] == "states") return ThreadStates(*s, seg[5], params);
    if (seg.size() == 7 && seg[4] == "threads" && seg[6] == "syscalls") return Syscalls(*s, seg[5], params);
    if (seg.size() == 6 && seg[4] == "counters") return Counter(*s, seg[5], params);
    if (seg.size() == 6 && seg[4] == "slices") return Slice(*s, seg[5]);
    if (seg.size() == 7 && seg[4] == "slices" && seg[6] == "path") return SlicePath(*s, seg[5]);
    return Error(404, "no such endpoint");
  } catch (const std::bad_alloc&) {
    return Error(503, "out of memory");
  } catch (const std::exception& e) {
    return Error(500, e.what());
  }
}

ApiResponse Api::Traces() {
  json list = json::array();
  {
    std::lock_guard lock(traces_mu_);
    for (size_t i = 0; i < traces_.size(); ++i) list.push_back({{"id", i}, {"path", traces_[i]->path}});
  }
  return Ok({{"traces", list}, {"live", live_ != nullptr}});
}

ApiResponse Api::TraceInfo(Served& s) {
  const model::Trace& t = *s.trace;
  json procs = json::array();
  for (size_t i = 0; i < t.processes.size(); ++i) {
    const model::Process& p = t.processes[i];
    procs.push_back({{"id", i},
                     {"pid", p.pid},
                     {"name", std::string(t.strings.Get(p.name))},
                     {"cmdline", std::string(t.strings.Get(p.cmdline))},
                     {"rank", p.rank},
                     {"is_device", p.is_device}});
  }
  const GroupedRows& states = s.StateRows();
  const GroupedRows& syscalls = s.SyscallRows();
  json tracks = json::array();
  for (size_t i = 0; i < t.tracks.size(); ++i) {
    const model::Track& k = t.tracks[i];
    size_t slices = i < t.track_slices.size() ? t.track_slices[i].second - t.track_slices[i].first : 0;
    tracks.push_back({{"id", i},
                      {"kind", TrackKindName(k.kind)},
                      {"process", k.process == model::kNoProcess ? json(nullptr) : json(k.process)},
                      {"tid", k.tid},
                      {"name", std::string(t.strings.Get(k.name))},
                      {"device", k.device},
                      {"slices", slices},
                      {"states", states.Count(i)},
                      {"syscalls", syscalls.Count(i)}});
  }
  return Ok({{"path", s.path},
             {"source", t.source},
             {"start_ns", s.start_ns},
             {"end_ns", s.end_ns},
             {"slices", t.slices.size()},
             {"device_activities", t.device.size()},
             {"events_read", t.events_read},
             {"events_lost", t.events_lost},
             {"indexed", !s.use.path.empty()},
             {"processes", procs},
             {"tracks", tracks}});
}

ApiResponse Api::Summary(Served& s) {
  std::lock_guard lock(s.analysis_mu);
  if (s.summary.empty()) {
    const report::ReportOptions opt = report::DefaultReportOptions();
    auto stored = report::StoredReport(s.use, s.path, opt, report::ReportFormat::kJson);
    if (stored) {
      s.summary = std::move(*stored);
    } else {
      report::Report r(*s.trace, opt);
      s.summary = report::RenderReport(r, s.path, report::ReportFormat::kJson);
      report::StoreReport(s.use, s.path, opt, report::ReportFormat::kJson, s.summary);
    }
  }
  return {200, s.summary};
}

ApiResponse Api::Steps(Served& s) {
  std::lock_guard lock(s.analysis_mu);
  // Kept beside the index like a report (a pass over every slice on a large trace).
  const std::string question = "strata view/1\nsteps\ntrace=" + s.path + "\n";
  if (s.steps.empty() && !s.use.path.empty())
    if (auto stored = index::ReadResult(s.use.path, s.use.key, question); stored.ok()) s.steps = std::move(*stored);
  if (!s.steps.empty()) return {200, s.steps};
  const model::Trace& t = *s.trace;
  analysis::TrainingSteps st = analysis::Training(t, report::FrameworkOptionsFor(t, report::ReportOptions{}));
  json steps = json::array();
  for (const analysis::TrainingStep& x : st.steps) {
    json j = {{"number", x.number}, {"ts", x.ts}, {"dur", x.dur}, {"data_wait_ns", x.data_wait_ns},
              {"samples", x.samples}};
    if (x.slice != model::kNone) j["track"] = t.slices.track[static_cast<size_t>(x.slice)];
    if (x.skipped) j["skipped"] = true;
    if (x.partial) j["partial"] = true;
    if (x.profiled) j["profiled"] = true;
    steps.push_back(std::move(j));
  }
  const analysis::Distribution& d = st.duration;
  s.steps = Ok({{"steps", steps},
                {"counted", d.count},
                {"duration_ns", {{"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"max", d.max}}},
                {"samples_per_s", st.samples_per_s},
                {"data_wait_pct", st.data_wait_pct}})
                .body;
  if (!s.use.path.empty()) {
    (void)index::WriteResult(s.use.path, s.use.key, question, s.steps);
    index::KeepCacheBounded(s.use);
  }
  return {200, s.steps};
}

ApiResponse Api::Viewport(Served& s, const std::multimap<std::string, std::string>& params) {
  const model::Trace& t = *s.trace;
  Range r;
  if (std::string e = ParseRange(params, s.start_ns, s.end_ns, true, &r); !e.empty()) return Error(400, e);
  // (copies, not a structured binding: clang 14 lets no lambda capture one)
  const int64_t start = r.start, end = r.end;
  const int pixels = r.pixels;
  // The lanes asked for ("tracks=0,3,4"), or all of them.
  std::vector<uint32_t> tracks;
  auto it = params.find("tracks");
  if (it == params.end()) {
    for (size_t i = 0; i < t.tracks.size() && i < kMaxViewportTracks; ++i) tracks.push_back(static_cast<uint32_t>(i));
  } else {
    std::string_view list = it->second;
    size_t i = 0;
    while (i <= list.size()) {
      size_t j = list.find(',', i);
      if (j == std::string_view::npos) j = list.size();
      uint32_t id = 0;
      if (!ParseNumber(list.substr(i, j - i), &id) || id >= t.tracks.size()) return Error(400, "no such track");
      tracks.push_back(id);
      if (tracks.size() > kMaxViewportTracks) return Error(400, "too many tracks");
      i = j + 1;
    }
  }
  int level = 0;
  json lanes = json::array();
  for (uint32_t k : tracks) {
    json tiles = json::array();
    for (const index::LodTile& x : index::QueryLod(s.lod, k, start, end, pixels, &level))
      tiles.push_back({x.start, x.end, x.count, x.busy_ns});
    lanes.push_back({{"track", k}, {"tiles", std::move(tiles)}});
  }
  return Ok({{"start", start}, {"end", end}, {"level", level}, {"tracks", std::move(lanes)}});
}

ApiResponse Api::Slices(Served& s, const std::multimap<std::string, std::string>& params) {
  const model::Trace& t = *s.trace;
  uint32_t track = 0;
  size_t limit = 0;
  Range r;
  std::string e = Param<uint32_t>(params, "track", UINT32_MAX, 0, UINT32_MAX, &track);
  if (e.empty() && (track == UINT32_MAX || track >= t.tracks.size())) e = "parameter track names no track";
  if (e.empty()) e = ParseRange(params, s.start_ns, s.end_ns, false, &r);
  if (e.empty()) e = Param<size_t>(params, "limit", 2000, 1, kMaxSlices, &limit);
  if (!e.empty()) return Error(400, e);
  const int64_t start = r.start, end = r.end;
  json out = json::array();
  bool truncated = false;
  if (track < t.track_slices.size()) {
    auto [a, b] = t.track_slices[track];
    const auto& sl = t.slices;
    auto add = [&](size_t i) {
      out.push_back({{"id", i},
                     {"ts", sl.ts[i]},
                     {"dur", sl.dur[i]},
                     {"depth", sl.depth[i]},
                     {"name", std::string(t.strings.Get(sl.name[i]))},
                     {"kind", static_cast<int>(sl.kind[i])}});
    };
    // Those open at `start` (the chain of enclosing slices there), then those
    // starting in the range, in time order.
    std::vector<size_t> open;
    for (int32_t i = t.SliceAt(track, start); i != model::kNone; i = sl.parent[static_cast<size_t>(i)])
      if (sl.ts[static_cast<size_t>(i)] < start) open.push_back(static_cast<size_t>(i));
    std::reverse(open.begin(), open.end());
    for (size_t i : open) add(i);
    size_t i = static_cast<size_t>(std::lower_bound(sl.ts.begin() + a, sl.ts.begin() + b, start) - sl.ts.begin());
    for (; i < b && sl.ts[i] < end; ++i) {
      if (out.size() >= limit) {
        truncated = true;
        break;
      }
      add(i);
    }
  }
  json result = {{"track", track}, {"slices", std::move(out)}, {"truncated", truncated}};
  if (auto f = params.find("flows"); f != params.end() && f->second == "1") {
    // The flows that start or end at a slice returned, [from, to], the
    // other end anywhere (the page draws those whose ends it has): the
    // trace's flows, and each device activity's launch.
    std::call_once(s.flows_once, [&] {
      auto add = [&](int32_t a, int32_t b) {
        if (a == model::kNone || b == model::kNone) return;
        s.flows_out.emplace_back(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
        s.flows_in.emplace_back(static_cast<uint32_t>(b), static_cast<uint32_t>(a));
      };
      for (size_t i = 0; i < t.flows.size(); ++i) add(t.flows.from[i], t.flows.to[i]);
      for (size_t d = 0; d < t.device.size(); ++d) add(t.device.launch[d], static_cast<int32_t>(t.device.slice[d]));
      std::sort(s.flows_out.begin(), s.flows_out.end());
      std::sort(s.flows_in.begin(), s.flows_in.end());
    });
    // [from, to, from's track, start, depth, to's track, start, depth]: where
    // to draw an end that was not returned (on another lane, out of range).
    json flows = json::array();
    auto flow = [&](uint32_t a, uint32_t b) {
      const auto& sl = t.slices;
      return json{a, b, sl.track[a], sl.ts[a], sl.depth[a], sl.track[b], sl.ts[b], sl.depth[b]};
    };
    for (const json& x : result["slices"]) {
      uint32_t id = x["id"].get<uint32_t>();
      for (auto it = std::lower_bound(s.flows_out.begin(), s.flows_out.end(), std::make_pair(id, 0u));
           it != s.flows_out.end() && it->first == id; ++it)
        flows.push_back(flow(id, it->second));
      for (auto it = std::lower_bound(s.flows_in.begin(), s.flows_in.end(), std::make_pair(id, 0u));
           it != s.flows_in.end() && it->first == id; ++it)
        flows.push_back(flow(it->second, id));
    }
    result["flows"] = std::move(flows);
  }
  return Ok(result);
}

ApiResponse Api::Search(Served& s, const std::multimap<std::string, std::string>& params) {
  const model::Trace& t = *s.trace;
  auto it = params.find("q");
  if (it == params.end() || it->second.empty()) return Error(400, "parameter q (the text searched for) is required");
  if (it->second.size() > kMaxSearchText) return Error(400, "parameter q is too long");
  size_t limit = 0;
  if (std::string e = Param<size_t>(params, "limit", 100, 1, kMaxSlices, &limit); !e.empty()) return Error(400, e);
  // The names that contain the text (ignoring case), then the slices that
  // have one of them: the earliest `limit` by start time, and how many in all.
  auto lower = [](std::string_view v) {
    std::string out(v);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string q = lower(it->second);
  std::vector<uint8_t> hit(t.strings.size(), 0);
  size_t names = 0;
  for (size_t id = 1; id < t.strings.size(); ++id)
    if (lower(t.strings.Get(static_cast<model::StringId>(id))).find(q) != std::string::npos) hit[id] = 1, ++names;
  std::vector<std::pair<int64_t, uint32_t>> first;  // a max-heap of the earliest (ts, slice)
  uint64_t matches = 0;
  if (names > 0) {
    const auto& sl = t.slices;
    for (size_t i = 0; i < sl.size(); ++i) {
      if (sl.name[i] >= hit.size() || !hit[sl.name[i]]) continue;
      ++matches;
      std::pair<int64_t, uint32_t> x{sl.ts[i], static_cast<uint32_t>(i)};
      if (first.size() < limit) {
        first.push_back(x);
        std::push_heap(first.begin(), first.end());
      } else if (x < first.front()) {
        std::pop_heap(first.begin(), first.end());
        first.back() = x;
        std::push_heap(first.begin(), first.end());
      }
    }
  }
  std::sort_heap(first.begin(), first.end());
  json out = json::array();
  for (auto [ts, i] : first)
    out.push_back({{"id", i},
                   {"ts", ts},
                   {"dur", t.slices.dur[i]},
                   {"track", t.slices.track[i]},
                   {"depth", t.slices.depth[i]},
                   {"name", std::string(t.strings.Get(t.slices.name[i]))}});
  return Ok({{"q", it->second}, {"matches", matches}, {"names", names}, {"slices", std::move(out)}});
}

ApiResponse Api::Diff(const std::multimap<std::string, std::string>& params) {
  size_t a = 0, b = 0;
  std::string e = Param<size_t>(params, "before", SIZE_MAX, 0, SIZE_MAX - 1, &a);
  if (e.empty()) e = Param<size_t>(params, "after", SIZE_MAX, 0, SIZE_MAX - 1, &b);
  if (!e.empty()) return Error(400, e);
  if (a == SIZE_MAX || b == SIZE_MAX) return Error(400, "before and after are required (trace ids)");
  if (a == b) return Error(400, "before and after are the same trace");
  {
    std::lock_guard lock(diffs_mu_);
    if (auto it = diffs_.find({a, b}); it != diffs_.end()) return {200, it->second};
  }
  ApiResponse err;
  Served* sa = Open(a, &err);
  if (!sa) return err;
  Served* sb = Open(b, &err);
  if (!sb) return err;
  std::string body;
  {
    // Both traces' analyses (their memos) are used: one diff at a time per pair, locked in id order.
    std::scoped_lock lock(sa->analysis_mu, sb->analysis_mu);
    analysis::TraceDiff d = analysis::Diff(*sa->trace, *sb->trace, analysis::DiffOptions{});
    json j = report::DiffToJson(d, 50);
    j["before"] = {{"id", a}, {"path", sa->path}};
    j["after"] = {{"id", b}, {"path", sb->path}};
    body = Ok(j).body;
  }
  std::lock_guard lock(diffs_mu_);
  diffs_[{a, b}] = body;
  return {200, body};
}

ApiResponse Api::SlicePath(Served& s, std::string_view id_text) {
  const model::Trace& t = *s.trace;
  size_t i = 0;
  if (!ParseNumber(id_text, &i) || i >= t.slices.size()) return Error(404, "no such slice");
  std::call_once(s.steps_once, [&] { s.step_slices = analysis::StepSlicesByTime(t); });
  // The step whose time holds the slice's start: the last to begin at or before it.
  const int64_t at = t.slices.ts[i];
  auto it = std::upper_bound(s.step_slices.begin(), s.step_slices.end(), at,
                             [&t](int64_t v, uint32_t k) { return v < t.slices.ts[k]; });
  if (it == s.step_slices.begin() || t.slices.end(*(it - 1)) <= at)
    return Ok({{"slice", i}, {"step", nullptr}, {"note", "outside every step: no critical path to place it on"}});
  const uint32_t step = *(it - 1);
  std::lock_guard lock(s.analysis_mu);
  auto found = s.paths.find(step);
  if (found == s.paths.end()) {
    if (s.paths.size() >= 64) s.paths.erase(s.paths.begin());
    found = s.paths.emplace(step, analysis::CriticalPathOfStep(t, step)).first;
  }
  const analysis::StepCriticalPath& path = found->second;
  // The slice's time on the path: segments of the slice itself or of work nested in it.
  auto within = [&t, i](int32_t k) {
    for (int guard = 0; k != model::kNone && guard < 4096; ++guard, k = t.slices.parent[static_cast<size_t>(k)])
      if (static_cast<size_t>(k) == i) return true;
    return false;
  };
  int64_t on_path = 0;
  json segments = json::array();
  constexpr size_t kMaxSegments = 5000;
  for (const analysis::PathSegment& g : path.segments) {
    if (g.slice != model::kNone && within(g.slice)) on_path += g.end - g.start;
    if (segments.size() < kMaxSegments)
      segments.push_back({g.start, g.end, g.track, g.slice, analysis::SegmentTypeName(g.type)});
  }
  json items = json::array();
  for (size_t k = 0; k < path.items.size() && k < 10; ++k)
    items.push_back({{"kind", path.items[k].kind}, {"name", path.items[k].name},
                     {"on_path_ns", path.items[k].on_path_ns}, {"share", path.items[k].share}});
  const int64_t step_ns = std::max<int64_t>(1, path.end - path.start);
  return Ok({{"slice", i},
             {"step", {{"number", path.step}, {"slice", step}, {"ts", path.start}, {"end", path.end}}},
             {"on_path_ns", on_path},
             {"share", static_cast<double>(on_path) / static_cast<double>(step_ns)},
             {"segments", std::move(segments)},
             {"segments_total", path.segments.size()},
             {"items", std::move(items)}});
}

ApiResponse Api::Slice(Served& s, std::string_view id_text) {
  const model::Trace& t = *s.trace;
  size_t i = 0;
  if (!ParseNumber(id_text, &i) || i >= t.slices.size()) return Error(404, "no such slice");
  const auto& sl = t.slices;
  json args = json::object();
  auto it = std::lower_bound(t.args.slice.begin(), t.args.slice.end(), static_cast<uint32_t>(i));
  for (size_t r = static_cast<size_t>(it - t.args.slice.begin()); r < t.args.size() && t.args.slice[r] == i; ++r) {
    std::string key(t.strings.Get(t.args.key[r]));
    if (t.args.str[r] != 0)
      args[key] = std::string(t.strings.Get(t.args.str[r]));
    else if (std::isfinite(t.args.num[r]))
      args[key] = t.args.num[r];
  }
  json flows_in = json::array(), flows_out = json::array();
  for (size_t f = 0; f < t.flows.size(); ++f) {
    if (t.flows.to[f] == static_cast<int32_t>(i) && t.flows.from[f] != model::kNone) flows_in.push_back(t.flows.from[f]);
    if (t.flows.from[f] == static_cast<int32_t>(i) && t.flows.to[f] != model::kNone) flows_out.push_back(t.flows.to[f]);
    if (flows_in.size() + flows_out.size() > 64) break;
  }
  json j = {{"id", i},
            {"name", std::string(t.strings.Get(sl.name[i]))},
            {"ts", sl.ts[i]},
            {"dur", sl.dur[i]},
            {"track", sl.track[i]},
            {"depth", sl.depth[i]},
            {"parent", sl.parent[i] == model::kNone ? json(nullptr) : json(sl.parent[i])},
            {"kind", static_cast<int>(sl.kind[i])},
            {"arg", sl.arg[i]},
            {"args", std::move(args)},
            {"flows_in", std::move(flows_in)},
            {"flows_out", std::move(flows_out)}};
  if (i < t.device_row_of_slice.size() && t.device_row_of_slice[i] != model::kNone) {
    size_t d = static_cast<size_t>(t.device_row_of_slice[i]);
    j["device"] = {{"device", t.device.device[d]},     {"stream", t.device.stream[d]},
                   {"correlation", t.device.correlation[d]}, {"launch", t.device.launch[d]},
                   {"bytes", t.device.bytes[d]}};
  }
  return Ok(j);
}

}  // namespace strata::server

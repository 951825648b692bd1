#include "job/summary.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>
#include <tuple>
#include <type_traits>

#include "base/json_get.h"

namespace strata::job {
namespace {

using nlohmann::json;

constexpr char kFormat[] = "strata-member-summary";
constexpr int kVersion = 1;
// Times and offsets a summary may hold (about 73 years of nanoseconds): sums
// of three of them (a time, its clock's offset, a difference) stay in int64.
constexpr int64_t kMaxTime = int64_t{1} << 61;
bool Sane(int64_t t) { return t > -kMaxTime && t < kMaxTime; }
// A duration or a size (13 days; a pebibyte): sums of many stay in int64.
constexpr int64_t kMaxAmount = int64_t{1} << 50;
bool Amount(int64_t v) { return v >= 0 && v < kMaxAmount; }

json Ends(const std::vector<analysis::MessageEnd>& v) {
  json a = json::array();
  for (const analysis::MessageEnd& m : v) a.push_back({m.from, m.to, m.order, m.ts});
  return a;
}

// A column of integers of type T, every one of them; false if anything else.
template <typename T>
bool Column(const json& rows, const char* key, size_t n, std::vector<T>* out) {
  auto it = rows.find(key);
  if (it == rows.end() || !it->is_array() || it->size() != n) return false;
  out->reserve(n);
  for (const json& x : *it) {
    if (!x.is_number_integer()) return false;
    if constexpr (std::is_unsigned_v<T>) {
      if (x.is_number_unsigned() ? x.get<uint64_t>() > std::numeric_limits<T>::max() : x.get<int64_t>() < 0) return false;
      out->push_back(static_cast<T>(x.get<uint64_t>()));
    } else {
      if (x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
      out->push_back(static_cast<T>(x.get<int64_t>()));
    }
  }
  return true;
}

bool ParseEnds(const json& a, std::vector<analysis::MessageEnd>* out) {
  if (!a.is_array()) return false;
  for (const json& e : a) {
    if (!e.is_array() || e.size() != 4) return false;
    for (const json& x : e)
      if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) ||
          !Sane(x.get<int64_t>()))
        return false;
    out->push_back({e[0].get<int64_t>(), e[1].get<int64_t>(), 0, e[2].get<int64_t>(), e[3].get<int64_t>()});
  }
  return true;
}

}  // namespace

std::pair<std::string, std::string> ClockKey(const model::Trace& t, const std::string& path) {
  json m = json::parse(t.manifest_json, nullptr, false);
  const json host = m.is_object() && m.contains("host") ? m["host"] : json();
  std::string name = json_get::Str(host, "hostname", t.hostname);
  std::string boot = json_get::Str(host, "boot_id");
  if (boot.empty()) {
    // No manifest saying which boot: a clock of its own.
    std::string stem = std::filesystem::path(path).filename().string();
    return {"trace " + path, name.empty() ? stem : name};
  }
  return {name + " " + boot + " " + json_get::Str(host, "time_namespace"), name};
}

MemberSummary Summarize(const model::Trace& t, const std::string& path, json report) {
  MemberSummary s;
  s.path = path;
  std::tie(s.clock_key, s.host) = ClockKey(t, path);
  s.wall_offset_ns = t.clock_offset_ns;
  std::set<int64_t> ranks;
  for (const model::Process& p : t.processes)
    if (p.rank >= 0) ranks.insert(p.rank);
  s.ranks.assign(ranks.begin(), ranks.end());
  s.events = t.slices.size() + t.instants.size() + t.counters.size() + t.collectives.size() +
             t.thread_states.size() + t.syscalls.size() + t.cpu_samples.size();
  s.comms = analysis::CommsInputOf(t);
  analysis::CollectMessages(t, 0, &s.sends, &s.receives);
  s.report = std::move(report);
  return s;
}

std::string SummaryJson(const MemberSummary& s) {
  json ranks = json::array();
  for (const analysis::RankComms& r : s.comms.ranks) {
    json parts = json::array();
    for (int64_t p : r.parts) parts.push_back(p);
    ranks.push_back({{"rank", r.rank},
                     {"pid", r.pid},
                     {"label", r.label},
                     {"steps", r.steps},
                     {"step_p50_ns", r.step_p50},
                     {"counted_steps", r.counted_steps},
                     {"parts_ns", parts},
                     {"comm_wait_ns", r.comm_wait},
                     {"collectives", r.collectives},
                     {"bytes", r.bytes},
                     {"in_flight_ns", r.in_flight_ns}});
  }
  json names = json::array();
  for (size_t i = 0; i < s.comms.names.size(); ++i) names.push_back(std::string(s.comms.names.Get(static_cast<model::StringId>(i))));
  const model::CollectiveTable& c = s.comms.collectives;
  auto col = [](const auto& v) { return json(std::vector<std::decay_t<decltype(v[0])>>(v.begin(), v.end())); };
  json rows = {{"rank", col(c.process)}, {"name", col(c.name)},   {"seq", col(c.seq)},        {"ts", col(c.ts)},
               {"dur", col(c.dur)},      {"bytes", col(c.bytes)}, {"tensors", col(c.tensors)}};
  json j = {{"format", kFormat},
            {"version", kVersion},
            {"path", s.path},
            {"clock", {{"key", s.clock_key}, {"host", s.host}, {"wall_offset_ns", s.wall_offset_ns}}},
            {"ranks", s.ranks},
            {"events", s.events},
            {"comms", {{"ranks", ranks}, {"names", names}, {"rows", rows}}},
            {"messages", {{"sends", Ends(s.sends)}, {"receives", Ends(s.receives)}}},
            {"report", s.report}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

StatusOr<MemberSummary> ParseSummary(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  auto bad = [](const std::string& what) { return Status(StatusCode::kInvalidArgument, "not a strata member summary: " + what); };
  if (!j.is_object() || json_get::Str(j, "format") != kFormat) return bad("no \"format\": \"" + std::string(kFormat) + "\"");
  if (json_get::Int<int>(j, "version") != kVersion)
    return bad("version " + std::to_string(json_get::Int<int>(j, "version")) + " (this strata reads " +
               std::to_string(kVersion) + ")");
  MemberSummary s;
  s.path = json_get::Str(j, "path");
  const json clock = j.value("clock", json());
  s.clock_key = json_get::Str(clock, "key");
  s.host = json_get::Str(clock, "host");
  s.wall_offset_ns = json_get::Int<int64_t>(clock, "wall_offset_ns");
  if (s.clock_key.empty()) return bad("no clock key");
  if (!Sane(s.wall_offset_ns)) return bad("a wall-clock offset out of range");
  s.events = json_get::Int<uint64_t>(j, "events");
  if (!j.contains("ranks") || !Column(j, "ranks", j["ranks"].is_array() ? j["ranks"].size() : 0, &s.ranks))
    return bad("\"ranks\" is not a list of integers");
  const json comms = j.value("comms", json());
  if (!comms.is_object() || !comms.contains("ranks") || !comms["ranks"].is_array()) return bad("no \"comms\" ranks");
  for (const json& r : comms["ranks"]) {
    analysis::RankComms rc;
    rc.process = static_cast<uint32_t>(s.comms.ranks.size());
    rc.rank = json_get::Int<int64_t>(r, "rank", -1);
    rc.pid = json_get::Int<int64_t>(r, "pid");
    rc.label = json_get::Str(r, "label");
    rc.steps = json_get::Int<size_t>(r, "steps");
    rc.step_p50 = json_get::Int<int64_t>(r, "step_p50_ns");
    rc.counted_steps = json_get::Int<size_t>(r, "counted_steps");
    std::vector<int64_t> parts;
    if (!Column(r, "parts_ns", analysis::kStepParts, &parts)) return bad("a rank's \"parts_ns\"");
    std::copy(parts.begin(), parts.end(), rc.parts.begin());
    rc.comm_wait = json_get::Int<int64_t>(r, "comm_wait_ns");
    rc.collectives = json_get::Int<uint64_t>(r, "collectives");
    rc.bytes = json_get::Int<int64_t>(r, "bytes");
    rc.in_flight_ns = json_get::Int<int64_t>(r, "in_flight_ns");
    if (!Amount(rc.step_p50) || !Amount(rc.comm_wait) || !Amount(rc.bytes) || !Amount(rc.in_flight_ns) ||
        rc.steps >= (size_t{1} << 40) || rc.counted_steps >= (size_t{1} << 40))
      return bad("a rank's times or sizes out of range");
    for (int64_t p : rc.parts)
      if (!Amount(p)) return bad("a rank's times or sizes out of range");
    s.comms.ranks.push_back(std::move(rc));
  }
  const json names = comms.value("names", json());
  if (!names.is_array()) return bad("no collective names");
  for (const json& n : names) {
    if (!n.is_string()) return bad("a collective name is not a string");
    s.comms.names.Intern(n.get<std::string>());
  }
  if (s.comms.names.size() != names.size()) return bad("collective names repeat");
  const json rows = comms.value("rows", json());
  if (!rows.is_object() || !rows.contains("ts") || !rows["ts"].is_array()) return bad("no collective rows");
  const size_t n = rows["ts"].size();
  model::CollectiveTable& c = s.comms.collectives;
  std::vector<uint32_t> process, name, tensors;
  std::vector<uint64_t> seq;
  std::vector<int64_t> ts, dur, bytes;
  if (!Column(rows, "rank", n, &process) || !Column(rows, "name", n, &name) || !Column(rows, "seq", n, &seq) ||
      !Column(rows, "ts", n, &ts) || !Column(rows, "dur", n, &dur) || !Column(rows, "bytes", n, &bytes) ||
      !Column(rows, "tensors", n, &tensors))
    return bad("collective rows of unequal lengths or not integers");
  for (size_t i = 0; i < n; ++i) {
    if (process[i] >= s.comms.ranks.size()) return bad("a collective row of no rank");
    if (name[i] >= s.comms.names.size()) return bad("a collective row of no name");
    if (!Sane(ts[i]) || (dur[i] != -1 && !Amount(dur[i])) || !Amount(bytes[i]))
      return bad("a collective's time or size out of range");
    c.process.push_back(process[i]);
    c.name.push_back(name[i]);
    c.seq.push_back(seq[i]);
    c.ts.push_back(ts[i]);
    c.dur.push_back(dur[i]);
    c.track.push_back(0);
    c.end_track.push_back(0);
    c.bytes.push_back(bytes[i]);
    c.tensors.push_back(tensors[i]);
  }
  const json messages = j.value("messages", json());
  if (!messages.is_object() || !ParseEnds(messages.value("sends", json()), &s.sends) ||
      !ParseEnds(messages.value("receives", json()), &s.receives))
    return bad("\"messages\" are not lists of [from, to, order, ts]");
  s.report = j.value("report", json());
  return s;
}

}  // namespace strata::job

#include "importers/merged/merged.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/files.h"
#include "base/json_get.h"

namespace strata::importers {

using nlohmann::json;

namespace {
constexpr size_t kMaxMembers = 1 << 16;
}

bool IsMergedTraceDir(const std::string& path) {
  return IsDirectory(path) && PathExists((std::filesystem::path(path) / kMergeFile).string());
}

json MergeClockJson(const MergeClock& c) {
  return {{"host", c.host},
          {"key", c.key},
          {"reference", c.reference},
          {"offset_ns", c.map.offset_ns},
          {"drift", c.map.drift},
          {"center_ns", c.map.center_ns},
          {"method", c.method},
          {"uncertainty_ns", c.uncertainty_ns},
          {"wall_offset_ns", c.wall_offset_ns},
          {"constraints", c.constraints},
          {"via", c.via},
          {"violation_ns", c.violation_ns},
          {"dropped", c.dropped}};
}

std::string MergePlanJson(const MergePlan& plan) {
  json clocks = json::array();
  for (const MergeClock& c : plan.clocks) clocks.push_back(MergeClockJson(c));
  json members = json::array();
  for (const MergeMember& m : plan.members)
    members.push_back({{"path", m.path}, {"clock", m.clock}, {"host", m.host}, {"ranks", m.ranks}});
  json j = {{"format", "strata-merge"}, {"version", 1}, {"clocks", clocks}, {"members", members}};
  return j.dump(1) + "\n";
}

StatusOr<MergePlan> ParseMergePlan(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Err(StatusCode::kInvalidArgument, "{} is not JSON", kMergeFile);
  if (json_get::Str(j, "format") != "strata-merge")
    return Err(StatusCode::kInvalidArgument, "{}: format is not \"strata-merge\"", kMergeFile);
  if (json_get::Int<int64_t>(j, "version") != 1)
    return Err(StatusCode::kUnsupported, "{}: version {} (this strata reads version 1)", kMergeFile,
               json_get::Int<int64_t>(j, "version"));
  auto clocks = j.find("clocks");
  auto members = j.find("members");
  if (clocks == j.end() || !clocks->is_array() || members == j.end() || !members->is_array())
    return Err(StatusCode::kInvalidArgument, "{}: no clocks or members", kMergeFile);
  if (clocks->empty() || members->empty() || clocks->size() > kMaxMembers || members->size() > kMaxMembers)
    return Err(StatusCode::kInvalidArgument, "{}: {} clocks and {} members (1 to {} of each)", kMergeFile,
               clocks->size(), members->size(), kMaxMembers);
  MergePlan p;
  for (const json& c : *clocks) {
    MergeClock k;
    k.host = json_get::Str(c, "host");
    k.key = json_get::Str(c, "key");
    k.reference = c.is_object() && c.contains("reference") && c["reference"].is_boolean() && c["reference"].get<bool>();
    k.map.offset_ns = json_get::Int<int64_t>(c, "offset_ns");
    k.map.drift = json_get::Num(c, "drift");
    k.map.center_ns = json_get::Int<int64_t>(c, "center_ns");
    if (!std::isfinite(k.map.drift) || std::fabs(k.map.drift) > 0.01)
      return Err(StatusCode::kInvalidArgument, "{}: clock {}: drift {} (at most 1%)", kMergeFile, k.host, k.map.drift);
    k.method = json_get::Str(c, "method");
    k.uncertainty_ns = json_get::Int<int64_t>(c, "uncertainty_ns", -1);
    k.wall_offset_ns = json_get::Int<int64_t>(c, "wall_offset_ns");
    k.constraints = json_get::Int<uint64_t>(c, "constraints");
    k.via = json_get::Int<int64_t>(c, "via", -1);
    k.violation_ns = json_get::Int<int64_t>(c, "violation_ns");
    k.dropped = json_get::Int<uint64_t>(c, "dropped");
    p.clocks.push_back(std::move(k));
  }
  for (const json& m : *members) {
    MergeMember mm;
    mm.path = json_get::Str(m, "path");
    mm.host = json_get::Str(m, "host");
    int64_t clock = json_get::Int<int64_t>(m, "clock", -1);
    if (mm.path.empty() || clock < 0 || static_cast<size_t>(clock) >= p.clocks.size())
      return Err(StatusCode::kInvalidArgument, "{}: member {} has no path or no clock of the {}", kMergeFile,
                 p.members.size(), p.clocks.size());
    mm.clock = static_cast<uint32_t>(clock);
    if (m.is_object() && m.contains("ranks") && m["ranks"].is_array())
      for (const json& r : m["ranks"])
        if (r.is_number_integer()) mm.ranks.push_back(r.get<int64_t>());
    p.members.push_back(std::move(mm));
  }
  return p;
}

StatusOr<MergePlan> ReadMergePlan(const std::string& dir) {
  auto text = ReadFile((std::filesystem::path(dir) / kMergeFile).string());
  if (!text.ok()) return text.status();
  auto p = ParseMergePlan(*text);
  if (!p.ok()) return Status(p.status().code(), dir + ": " + p.status().message());
  return p;
}

Status WriteMergePlan(const std::string& dir, const MergePlan& plan) {
  if (Status st = MakeDirs(dir); !st.ok()) return st;
  return WriteFileAtomic((std::filesystem::path(dir) / kMergeFile).string(), MergePlanJson(plan));
}

std::string MemberPath(const std::string& dir, const MergeMember& m) {
  std::filesystem::path p(m.path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (std::filesystem::path(dir) / p).lexically_normal().string();
}

StatusOr<model::Trace> LoadMergedTrace(const std::string& dir, const OpenMember& open) {
  auto plan = ReadMergePlan(dir);
  if (!plan.ok()) return plan.status();
  model::Trace out;
  for (const MergeMember& m : plan->members) {
    std::string path = MemberPath(dir, m);
    if (IsMergedTraceDir(path))
      return Err(StatusCode::kInvalidArgument, "{}: member {} is itself a merged trace (merge its members instead)",
                 dir, path);
    auto t = open(path);
    if (!t.ok()) return Status(t.status().code(), dir + ": member " + path + ": " + t.status().message());
    AppendTrace(&out, *t, plan->clocks[m.clock].map, m.path);
  }
  out.path = dir;
  out.Finalize();
  return out;
}

}  // namespace strata::importers

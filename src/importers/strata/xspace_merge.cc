#include "importers/strata/xspace_merge.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "base/files.h"
#include "importers/strata/step_stats_merge.h"
#include "importers/xplane/xplane.h"

namespace strata::importers::strata_ctf {
namespace {

// The subdirectories of `dir`, sorted (none when it cannot be read).
std::vector<std::string> Subdirs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec)) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The .xplane.pb files under dir/plugins/profile/<run>/.
std::vector<std::string> SpaceFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& rd : Subdirs(JoinPath(JoinPath(dir, "plugins"), "profile"))) {
    auto files = ListFiles(rd);
    if (!files.ok()) continue;
    for (const std::string& f : *files)
      if (f.size() > 10 && f.ends_with(".xplane.pb")) out.push_back(JoinPath(rd, f));
  }
  return out;
}

}  // namespace

bool ReadProfileClock(const std::string& dir, model::Trace& t, uint32_t* process, int64_t* realtime_to_trace) {
  std::string clock_path = JoinPath(dir, "strata_clock.json");
  auto text = ReadFile(clock_path);
  if (!text.ok()) {
    t.warnings.push_back(fmt::format("{}: no strata_clock.json: its framework profile is not merged", dir));
    return false;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  int64_t pid = 0, realtime = 0, trace_clock = 0;
  if (parser.parse(simdjson::padded_string(*text)).get(doc) || doc["pid"].get_int64().get(pid) ||
      doc["realtime_ns"].get_int64().get(realtime) || doc["trace_clock_ns"].get_int64().get(trace_clock)) {
    t.warnings.push_back(fmt::format("{}: malformed (pid, realtime_ns, trace_clock_ns): not merged", clock_path));
    return false;
  }
  // The process that wrote it: the last image of that pid (a profile is written by the running program).
  int32_t found = model::kNone;
  for (size_t p = 0; p < t.processes.size(); ++p)
    if (t.processes[p].pid == pid && !t.processes[p].is_device) found = static_cast<int32_t>(p);
  if (found == model::kNone) {
    t.warnings.push_back(fmt::format("{}: pid {} is not in the trace: its framework profile is not merged", dir, pid));
    return false;
  }
  *process = static_cast<uint32_t>(found);
  *realtime_to_trace = trace_clock - realtime;
  return true;
}

void MergeFrameworkProfiles(const std::string& trace_dir, model::Trace& t) {
  for (const std::string& dir : Subdirs(JoinPath(trace_dir, "xspace"))) {
    XSpaceMerge m;
    if (!ReadProfileClock(dir, t, &m.process, &m.realtime_to_trace_ns)) continue;
    std::vector<std::string> files = SpaceFiles(dir);
    if (files.empty()) t.warnings.push_back(fmt::format("{}: the framework profile wrote no XSpace", dir));
    for (const std::string& f : files) {
      auto bytes = ReadFile(f);
      if (!bytes.ok()) {
        t.warnings.push_back(bytes.status().message());
        continue;
      }
      if (Status s = MergeXSpace(t, *bytes, m); !s.ok())
        t.warnings.push_back(fmt::format("{}: {} (not merged)", f, s.message()));
    }
  }
  MergeStepStats(trace_dir, t);
}

}  // namespace strata::importers::strata_ctf

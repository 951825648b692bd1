// `strata merge -o OUT TRACE...`: one trace of a job's ranks and hosts on one
// time base. Each trace's clock is told apart by its manifest (hostname, boot,
// time namespace: traces of one host share theirs); the reference is the clock
// of the lowest rank. Offsets start from the wall clocks and are refined with
// what the ranks' collectives bound (analysis/clock_sync.h); OUT gets the plan
// (importers/merged/merged.h), which every command then opens as one trace.
// Members are read one at a time: the merge holds their collectives only.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/clock_sync.h"
#include "base/json_get.h"
#include "base/units.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "importers/merged/merged.h"

namespace strata::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> traces;
  std::string out;
  bool force = false;
};

// What identifies the clock a trace was recorded on, and its host's name.
std::pair<std::string, std::string> ClockKey(const model::Trace& t, const std::string& path) {
  nlohmann::json m = nlohmann::json::parse(t.manifest_json, nullptr, false);
  const nlohmann::json host = m.is_object() && m.contains("host") ? m["host"] : nlohmann::json();
  std::string name = json_get::Str(host, "hostname", t.hostname);
  std::string boot = json_get::Str(host, "boot_id");
  if (boot.empty()) {
    // No manifest saying which boot: a clock of its own.
    std::string stem = std::filesystem::path(path).filename().string();
    return {"trace " + path, name.empty() ? stem : name};
  }
  return {name + " " + boot + " " + json_get::Str(host, "time_namespace"), name};
}

std::string Ranks(const std::vector<int64_t>& r) {
  if (r.empty()) return "-";
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) {
    // Runs of consecutive ranks as a-b.
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += j > i + 1 ? fmt::format("{}-{}", r[i], r[j]) : j == i + 1 ? fmt::format("{},{}", r[i], r[j])
                                                                   : std::to_string(r[i]);
    i = j;
  }
  return s;
}

std::string SignedDuration(int64_t ns) {
  return (ns < 0 ? "-" : "+") + HumanDuration(ns < 0 ? -ns : ns);
}

int RunMerge(const MergeArgs& a) {
  namespace fs = std::filesystem;
  if (int rc = CheckOutputPath(fs::path(a.out) / importers::kMergeFile, a.force); rc != kExitOk) return rc;
  if (fs::exists(a.out) && !fs::is_directory(a.out)) {
    PrintError(a.out + " exists and is not a directory");
    return kExitOutput;
  }
  importers::MergePlan plan;
  std::map<std::string, uint32_t> clock_of_key;
  std::vector<int64_t> clock_wall;  // each clock's wall-clock offset (add to its times for wall time)
  std::vector<bool> wall_known;
  // Every member's collectives in one table (local times), for the bounds.
  model::CollectiveTable all;
  model::StringPool names;
  std::vector<uint32_t> clock_of_process;
  std::vector<analysis::MessageEnd> sends, receives;
  int64_t best_rank = INT64_MAX;
  uint32_t reference = 0;
  for (const std::string& path : a.traces) {
    if (importers::IsMergedTraceDir(path)) {
      PrintError(path + " is a merged trace: merge its members instead");
      return kExitBadInput;
    }
    auto t = OpenTraceForCommand(path);
    if (!t.ok()) return BadInput(t.status().message().find(path) == std::string::npos
                                     ? path + ": " + t.status().message()
                                     : t.status().message());
    auto [key, host] = ClockKey(*t, path);
    auto [it, added] = clock_of_key.emplace(key, static_cast<uint32_t>(plan.clocks.size()));
    if (added) {
      importers::MergeClock c;
      c.host = host;
      c.key = key;
      plan.clocks.push_back(c);
      clock_wall.push_back(t->clock_offset_ns);
      wall_known.push_back(t->clock_offset_ns != 0);
    }
    importers::MergeMember m;
    fs::path abs = fs::absolute(path).lexically_normal();
    fs::path rel = abs.lexically_relative(fs::absolute(a.out).lexically_normal());
    m.path = rel.empty() ? abs.string() : rel.string();
    m.clock = it->second;
    m.host = host;
    std::set<int64_t> ranks;
    for (const model::Process& p : t->processes)
      if (p.rank >= 0) ranks.insert(p.rank);
    m.ranks.assign(ranks.begin(), ranks.end());
    if (!m.ranks.empty() && m.ranks.front() < best_rank) best_rank = m.ranks.front(), reference = m.clock;
    const uint32_t base = static_cast<uint32_t>(clock_of_process.size());
    clock_of_process.resize(base + t->processes.size(), m.clock);
    const model::CollectiveTable& c = t->collectives;
    for (size_t i = 0; i < c.size(); ++i) {
      all.process.push_back(base + c.process[i]);
      all.name.push_back(names.Intern(t->strings.Get(c.name[i])));
      all.seq.push_back(c.seq[i]);
      all.ts.push_back(c.ts[i]);
      all.dur.push_back(c.dur[i]);
      all.track.push_back(0);
      all.end_track.push_back(0);
      all.bytes.push_back(c.bytes[i]);
      all.tensors.push_back(c.tensors[i]);
    }
    analysis::CollectMessages(*t, m.clock, &sends, &receives);
    plan.members.push_back(std::move(m));
  }

  // Offsets by the wall clocks (0 where a trace does not pair its clock with one).
  std::vector<int64_t> wall(plan.clocks.size(), 0);
  for (size_t k = 0; k < wall.size(); ++k)
    if (wall_known[k] && wall_known[reference]) wall[k] = clock_wall[k] - clock_wall[reference];
  std::vector<analysis::HappenedBefore> pairs = analysis::CollectivePairs(all, names, clock_of_process);
  const size_t collective_bounds = pairs.size();
  {
    std::vector<analysis::HappenedBefore> messages = analysis::MessagePairs(std::move(sends), std::move(receives));
    pairs.insert(pairs.end(), messages.begin(), messages.end());
  }
  const std::vector<analysis::ClockSync> sync =
      analysis::SynchronizeClocks(plan.clocks.size(), reference, wall, pairs);
  std::vector<model::ClockMap> maps;
  for (size_t k = 0; k < sync.size(); ++k) {
    importers::MergeClock& c = plan.clocks[k];
    c.reference = k == reference;
    c.map = sync[k].map;
    c.method = sync[k].method;
    c.uncertainty_ns = sync[k].uncertainty_ns;
    c.wall_offset_ns = wall[k];
    c.constraints = sync[k].constraints;
    c.via = sync[k].via;
    c.violation_ns = sync[k].violation_ns;
    c.dropped = sync[k].dropped;
    maps.push_back(c.map);
  }
  if (Status st = importers::WriteMergePlan(a.out, plan); !st.ok()) {
    PrintError(a.out + ": " + st.message());
    return kExitOutput;
  }

  std::set<int64_t> all_ranks;
  for (const auto& m : plan.members) all_ranks.insert(m.ranks.begin(), m.ranks.end());
  std::string out = fmt::format("merged {} trace{} ({} rank{} on {} clock{}) into {}\n", plan.members.size(),
                                plan.members.size() == 1 ? "" : "s", all_ranks.size(), all_ranks.size() == 1 ? "" : "s",
                                plan.clocks.size(), plan.clocks.size() == 1 ? "" : "s", a.out);
  out += fmt::format("  {:<5} {:<16} {:<8} {:>22} {:>14} {:>9} {:>13}  {}\n", "clock", "host", "ranks",
                     "offset to reference", "wall clock off", "drift", "uncertainty", "from");
  for (size_t k = 0; k < plan.clocks.size(); ++k) {
    const importers::MergeClock& c = plan.clocks[k];
    std::vector<int64_t> r;
    for (const auto& m : plan.members)
      if (m.clock == k) r.insert(r.end(), m.ranks.begin(), m.ranks.end());
    std::sort(r.begin(), r.end());
    std::string from = c.method;
    if (c.constraints)
      from += fmt::format(" ({} bounds{}{})", c.constraints, c.dropped ? fmt::format(", {} contradicting the rest", c.dropped) : "",
                          c.via >= 0 ? fmt::format(", via clock {}", c.via) : "");
    if (c.violation_ns > 0) from += fmt::format("; they contradict each other by {}", HumanDuration(c.violation_ns));
    out += fmt::format("  {:<5} {:<16} {:<8} {:>22} {:>14} {:>9} {:>13}  {}\n", k, c.host, Ranks(r),
                       c.reference ? "reference" : fmt::format("{:.6f} s", static_cast<double>(c.map.offset_ns) / 1e9),
                       c.reference || !wall_known[k] ? "-" : SignedDuration(c.wall_offset_ns - c.map.offset_ns),
                       c.reference ? "-" : fmt::format("{:.2f} ppm", c.map.drift * 1e6),
                       c.reference ? "0" : c.uncertainty_ns < 0 ? "unknown" : "±" + HumanDuration(c.uncertainty_ns),
                       from);
  }
  const analysis::OrderCheck check = analysis::CheckOrder(pairs, maps);
  if (check.pairs)
    out += fmt::format("  order: {} of {} bounds between clocks ({} from collectives, {} from messages) hold after the "
                       "merge{}\n",
                       check.pairs - check.violated, check.pairs, collective_bounds, check.pairs - collective_bounds,
                       check.violated ? fmt::format(" (worst off by {})", HumanDuration(check.worst_ns)) : "");
  else if (plan.clocks.size() > 1)
    out += "  no collectives or messages across clocks: offsets are the wall clocks' (as good as the hosts' NTP)\n";
  return WriteStdout(out);
}

}  // namespace

void AddMergeCommand(CLI::App& app) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* cmd = app.add_subcommand("merge", "Put the traces of a job's ranks and hosts on one time base, as one trace");
  cmd->add_option("traces", args->traces, "trace directories or files: one per host (or per rank)")->required();
  cmd->add_option("-o,--output", args->out, "the merged trace's directory (every command opens it as one trace)")
      ->required();
  cmd->add_flag("-f,--force", args->force, "Replace an existing merged trace in OUT");
  SetCommandHelp(cmd, "strata merge -o OUT [OPTIONS] TRACE...",
                 "  strata merge -o job node1/trace node2/trace   one trace of two hosts' ranks\n"
                 "  strata report job                            ranks, stragglers, collectives across hosts\n"
                 "  strata merge -o job rank*.json               PyTorch-profiler traces of each rank");
  cmd->callback([args]() { throw CLI::RuntimeError(RunMerge(*args)); });
}

}  // namespace strata::cli

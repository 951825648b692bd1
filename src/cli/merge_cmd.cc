// `strata merge -o OUT TRACE...`: one trace of a job's ranks and hosts on one
// time base. Each trace's clock is told apart by its manifest (hostname, boot,
// time namespace: traces of one host share theirs); the reference is the clock
// of the lowest rank. Offsets start from the wall clocks and are refined with
// what the ranks' collectives bound (analysis/clock_sync.h); OUT gets the plan
// (importers/merged/merged.h), which every command then opens as one trace.
// Members are read one at a time: the merge holds their summaries only
// (job/summary.h; the clocks are found as the job report finds them).
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

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "importers/merged/merged.h"
#include "job/combine.h"
#include "job/summary.h"
#include "report/job_report.h"

namespace strata::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> traces;
  std::string out;
  bool force = false;
};

int RunMerge(const MergeArgs& a) {
  namespace fs = std::filesystem;
  if (int rc = CheckOutputPath(fs::path(a.out) / importers::kMergeFile, a.force); rc != kExitOk) return rc;
  if (fs::exists(a.out) && !fs::is_directory(a.out)) {
    PrintError(a.out + " exists and is not a directory");
    return kExitOutput;
  }
  importers::MergePlan plan;
  // Each member's clock, ranks, collectives and messages (job/summary.h):
  // the model of one member at a time.
  std::vector<job::MemberSummary> members;
  for (const std::string& path : a.traces) {
    if (importers::IsMergedTraceDir(path)) {
      PrintError(path + " is a merged trace: merge its members instead");
      return kExitBadInput;
    }
    auto t = OpenTraceForCommand(path);
    if (!t.ok()) return BadInput(t.status().message().find(path) == std::string::npos
                                     ? path + ": " + t.status().message()
                                     : t.status().message());
    members.push_back(job::Summarize(*t, path, nullptr));
  }
  const job::JobClocks clocks = job::SynchronizeMembers(members);
  plan.clocks = clocks.clocks;
  std::vector<std::vector<int64_t>> ranks_of;
  for (size_t i = 0; i < members.size(); ++i) {
    importers::MergeMember m;
    fs::path abs = fs::absolute(members[i].path).lexically_normal();
    fs::path rel = abs.lexically_relative(fs::absolute(a.out).lexically_normal());
    m.path = rel.empty() ? abs.string() : rel.string();
    m.clock = clocks.clock_of_member[i];
    m.host = members[i].host;
    m.ranks = members[i].ranks;
    ranks_of.push_back(m.ranks);
    plan.members.push_back(std::move(m));
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
  out += report::ClocksText(clocks, ranks_of);
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

// A job of many ranks analysed where its traces are: `strata summarize TRACE`
// (one member's summary, job/summary.h: what a Dask worker runs) and the plan
// behind `strata report TRACE TRACE...` and `strata report --cluster ADDR`:
// one `strata summarize` per trace, on local cores or as tasks on a Dask
// distributed cluster (python/strata/cluster.py), then the summaries combined
// on the client (job/combine.h) and reported (report/job_report.h). The
// client never holds a member's model: its memory is the summaries'.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/units.h"
#include "cli/child.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/job_plan.h"
#include "importers/merged/merged.h"
#include "job/combine.h"
#include "job/summary.h"
#include "report/job_report.h"
#include "report/report.h"
#include "report/stored_report.h"

namespace strata::cli {
namespace {

struct SummarizeArgs {
  std::string trace;
  std::string output;
  size_t top = report::DefaultReportOptions().top;
  bool no_report = false;
};

int RunSummarize(const SummarizeArgs& a) {
  if (int rc = CheckOutputPath(a.output, true); rc != kExitOk) return rc;
  if (importers::IsMergedTraceDir(a.trace)) return BadInput(a.trace + " is a merged trace: summarize its members");
  index::IndexUse use;
  auto t = OpenTraceForCommand(a.trace, {}, &use);
  if (!t.ok()) return BadInput(t.status().message());
  nlohmann::json rep;
  if (!a.no_report) {
    report::ReportOptions opt = report::DefaultReportOptions();
    opt.top = a.top;
    // The member's report as `strata report TRACE --json` gives it: stored
    // beside its index, and answered from there the next time.
    std::optional<std::string> text = report::StoredReport(use, a.trace, opt, report::ReportFormat::kJson);
    if (!text) {
      report::Report r(*t, opt);
      text = report::RenderReport(r, a.trace, report::ReportFormat::kJson);
      report::StoreReport(use, a.trace, opt, report::ReportFormat::kJson, *text);
    }
    rep = nlohmann::json::parse(*text, nullptr, false);
  }
  std::string out = job::SummaryJson(job::Summarize(*t, a.trace, std::move(rep)));
  return a.output.empty() || a.output == "-" ? WriteStdout(out) : WriteOutput(a.output, out, true);
}

// The last line of a log (what a failed child said).
std::string LastLine(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  size_t nl = s.rfind('\n');
  std::string line = nl == std::string::npos ? s : s.substr(nl + 1);
  if (line.rfind("strata: ", 0) == 0) line = line.substr(8);
  return line;
}

}  // namespace

int RunJobReport(const JobReportArgs& a) {
  namespace fs = std::filesystem;
  // The members: each trace given, a merged trace's members in its place.
  std::vector<std::string> given;
  for (const std::string& p : a.traces) {
    if (!importers::IsMergedTraceDir(p)) {
      given.push_back(p);
      continue;
    }
    auto plan = importers::ReadMergePlan(p);
    if (!plan.ok()) return BadInput(p + ": " + plan.status().message());
    for (const importers::MergeMember& m : plan->members) given.push_back(importers::MemberPath(p, m));
  }
  for (const std::string& p : given)
    if (!PathExists(p)) return BadInput(p + ": no such file or directory");
  char tmpl[] = "/tmp/strata-job-XXXXXX";
  std::string dir;
  if (const char* tmp = ::getenv("TMPDIR"); tmp && *tmp) {
    std::string t = std::string(tmp) + "/strata-job-XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data())) dir = buf.data();
  }
  if (dir.empty() && ::mkdtemp(tmpl)) dir = tmpl;
  if (dir.empty()) {
    PrintError("cannot make a temporary directory for the members' summaries");
    return kExitOutput;
  }
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};

  // Every task gets the same arguments, wherever it runs: absolute paths.
  std::vector<std::string> abs;
  for (const std::string& p : given) abs.push_back(fs::absolute(p).lexically_normal().string());
  const std::vector<std::string> extra = {"--top", std::to_string(a.top)};
  const auto start = std::chrono::steady_clock::now();
  std::string where;
  uint64_t moved = 0;
  if (a.cluster.empty()) {
    // Local cores: at most `jobs` summaries at a time, in order.
    size_t jobs = a.jobs ? a.jobs : std::max(1u, std::thread::hardware_concurrency());
    jobs = std::min(jobs, abs.size());
    std::map<pid_t, size_t> running;
    size_t next = 0;
    int failed = 0;
    std::string why;
    const std::string self = SelfExe();
    while (next < abs.size() || !running.empty()) {
      while (!failed && next < abs.size() && running.size() < jobs) {
        std::vector<std::string> argv = {self, "summarize"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        argv.insert(argv.end(), {"-o", fmt::format("{}/member-{}.json", dir, next), abs[next]});
        pid_t pid = StartChild(argv, {}, fmt::format("{}/member-{}.log", dir, next));
        if (pid < 0) {
          PrintError("cannot run " + self);
          return kExitOutput;
        }
        running[pid] = next++;
      }
      if (running.empty()) break;
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, 0);
      if (pid < 0) {
        if (errno == EINTR) continue;
        break;
      }
      auto it = running.find(pid);
      if (it == running.end()) continue;
      size_t k = it->second;
      running.erase(it);
      int rc = ExitCode(status);
      if (rc != 0 && !failed) {
        failed = rc;
        why = given[k] + ": " + LastLine(fmt::format("{}/member-{}.log", dir, k));
      }
    }
    if (failed) {
      PrintError(why);
      return failed == kExitBadInput ? kExitBadInput : kExitOutput;
    }
    where = fmt::format("on local cores ({} at a time)", jobs);
    for (size_t k = 0; k < abs.size(); ++k) {
      std::error_code ec;
      moved += fs::file_size(fmt::format("{}/member-{}.json", dir, k), ec);
    }
  } else {
    // A Dask cluster: python/strata/cluster.py runs the same tasks on its workers.
    const InstallPaths paths = FindInstallPaths();
    const char* py = ::secure_getenv("STRATA_DASK_PYTHON");
    std::vector<std::string> argv = {py && *py ? py : "python3", "-m", "strata.cluster", "--scheduler", a.cluster,
                                     "--strata", a.worker_strata.empty() ? SelfExe() : a.worker_strata, "--out", dir};
    for (const std::string& x : extra) argv.push_back("--summarize-arg=" + x);
    argv.insert(argv.end(), abs.begin(), abs.end());
    std::string pythonpath = paths.python_dir;
    if (const char* pp = ::getenv("PYTHONPATH"); pp && *pp) pythonpath += std::string(":") + pp;
    const std::string log = dir + "/cluster.log";
    pid_t pid = StartChild(argv, {"PYTHONPATH=" + pythonpath}, log);
    if (pid < 0) {
      PrintError("cannot run " + argv[0] + " for the Dask path (set STRATA_DASK_PYTHON to a Python with `distributed`)");
      return kExitUsage;
    }
    if (int rc = WaitChild(pid); rc != 0) {
      std::string line = LastLine(log);
      PrintError(line.empty() ? fmt::format("the Dask client exited with {}", rc) : line);
      return kExitFailure;
    }
    auto run = ReadFile(dir + "/run.json");
    nlohmann::json r = run.ok() ? nlohmann::json::parse(*run, nullptr, false) : nlohmann::json();
    moved = r.is_object() && r.contains("bytes") && r["bytes"].is_number() ? r["bytes"].get<uint64_t>() : 0;
    size_t workers = r.is_object() && r.contains("workers") && r["workers"].is_number() ? r["workers"].get<size_t>() : 0;
    where = fmt::format("on the Dask cluster at {} ({} worker{})", a.cluster, workers, workers == 1 ? "" : "s");
  }

  // The client's half: the summaries, combined.
  std::vector<job::MemberSummary> members;
  for (size_t k = 0; k < abs.size(); ++k) {
    auto text = ReadFile(fmt::format("{}/member-{}.json", dir, k));
    if (!text.ok()) return BadInput(given[k] + ": its summary is missing: " + text.status().message());
    auto s = job::ParseSummary(*text);
    if (!s.ok()) return BadInput(given[k] + ": " + s.status().message());
    s->path = given[k];  // as the user named it
    members.push_back(std::move(s).value());
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const job::JobAnalysis analysis = job::AnalyzeJob(members);
  report::ReportOptions opt = report::DefaultReportOptions();
  opt.top = a.top;
  std::string out = a.json ? report::JobReportJson(members, analysis, opt).dump(2, ' ', false,
                                                                                nlohmann::json::error_handler_t::replace) +
                                 "\n"
                           : report::JobReportText(members, analysis, opt);
  if (!a.quiet) {
    // The client's own peak (the summaries ran in other processes).
    struct rusage ru {};
    ::getrusage(RUSAGE_SELF, &ru);
    std::fprintf(stderr,
                 "strata: summarized %zu trace%s %s in %.1f s; %s of summaries to the client (its peak RSS %s)\n",
                 members.size(), members.size() == 1 ? "" : "s", where.c_str(), secs,
                 HumanBytes(static_cast<double>(moved)).c_str(),
                 HumanBytes(static_cast<double>(ru.ru_maxrss) * 1024).c_str());
  }
  return WriteOutput(a.output, out, a.force);
}

void AddSummarizeCommand(CLI::App& app) {
  auto args = std::make_shared<SummarizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "summarize", "One trace's part of a job's analysis (what strata report --cluster runs on each worker)");
  cmd->add_option("trace", args->trace, "a trace directory or file, one member of a job")->required();
  cmd->add_option("-o,--output", args->output, "Write the summary (JSON) to this file instead of standard output");
  cmd->add_option("--top", args->top, "Rows in each table of the member's own report")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
  cmd->add_flag("--no-report", args->no_report, "Leave the member's own report out (the clocks and collectives only)");
  SetCommandHelp(cmd, "strata summarize [OPTIONS] TRACE",
                 "  strata summarize node1/trace -o node1.json     what the job report needs of this trace");
  cmd->callback([args]() { throw CLI::RuntimeError(RunSummarize(*args)); });
}

}  // namespace strata::cli

// `strata report TRACE [--json|--html FILE] [--full] [--top N] [-o FILE]`
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "base/files.h"
#include "base/progress.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/job_plan.h"
#include "importers/load.h"
#include "report/stored_report.h"
#include "report/html_report.h"
#include "report/report.h"
#include "report/sweep_report.h"

namespace strata::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> traces;
  std::string trace;  // the one trace, when one is given
  std::string cluster;
  std::string worker_strata;
  size_t jobs = 0;
  bool json = false;
  std::string html;
  std::string output;
  size_t top = report::DefaultReportOptions().top;
  bool full = false;
  bool what_if = false;
  bool force = false;
  bool hta = false;
  double batch_size = 0;
  double kernel_wait_us = static_cast<double>(report::DefaultReportOptions().analysis.kernel_wait_threshold_ns) / 1000;
  std::string flamegraph;
};

int WriteHtml(const std::string& path, const std::string& html, bool force) {
  int rc = WriteOutput(path, html, force);
  if (rc == kExitOk && path != "-") std::fprintf(stderr, "strata: wrote %s\n", path.c_str());
  return rc;
}

int RunSweepReport(const ReportArgs& a, const std::string& sweep_json) {
  auto text = ReadFile(sweep_json);
  if (!text.ok()) return BadInput(text.status().message());
  analysis::SweepSummary s;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!report::SweepFromJson(j, &s)) return BadInput(sweep_json + ": not a strata sweep summary");
  if (!a.html.empty()) {
    nlohmann::json r = {{"trace", {{"path", a.trace}, {"source", "sweep"}}}, {"sweep", report::SweepToJson(s)}};
    int rc = WriteHtml(a.html, report::RenderHtml(r, "strata sweep: " + a.trace), a.force);
    if (rc != kExitOk || !a.json) return rc;
  }
  std::string out = a.json ? report::SweepToJson(s).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" : report::SweepToText(s);
  return WriteOutput(a.output, out, a.force);
}

report::ReportOptions OptionsOf(const ReportArgs& a) {
  report::ReportOptions opt;
  opt.top = a.top;
  opt.full = a.full;
  opt.what_if = a.what_if;
  opt.analysis.hta_compat = a.hta;
  opt.analysis.batch_size = a.batch_size;
  opt.analysis.kernel_wait_threshold_ns = static_cast<int64_t>(a.kernel_wait_us * 1000);
  return opt;
}

// Several traces (a job's ranks and hosts) or --cluster: the job's report
// from its members' summaries (job_cmd.cc).
int RunJob(const ReportArgs& a) {
  for (auto [set, name] : std::initializer_list<std::pair<bool, const char*>>{
           {!a.html.empty(), "--html"}, {!a.flamegraph.empty(), "--flamegraph"}, {a.full, "--full"},
           {a.hta, "--hta-compat"}, {a.batch_size > 0, "--batch-size"}})
    if (set) {
      PrintError(std::string(name) + " is for one trace: report each member on its own for it");
      return kExitUsage;
    }
  JobReportArgs j;
  j.traces = a.traces;
  j.cluster = a.cluster;
  j.worker_strata = a.worker_strata;
  j.jobs = a.jobs;
  j.top = a.top;
  j.json = a.json;
  j.output = a.output;
  j.force = a.force;
  if (int rc = CheckOutputPath(j.output, j.force); rc != kExitOk) return rc;
  return RunJobReport(j);
}

int RunReport(ReportArgs& a) {
  if (a.traces.size() > 1 || !a.cluster.empty() || a.jobs) return RunJob(a);
  if (!a.worker_strata.empty()) {
    PrintError("--worker-strata is for a job's report on a cluster (--cluster)");
    return kExitUsage;
  }
  a.trace = a.traces.front();
  // Refuse before the (long) analysis rather than after it.
  for (const std::string* p : {&a.html, &a.output, &a.flamegraph})
    if (int rc = CheckOutputPath(*p, a.force); rc != kExitOk) return rc;
  // A sweep directory (strata sweep) reports its summary.
  std::string sweep_json = JoinPath(a.trace, "sweep.json");
  if (IsDirectory(a.trace) && PathExists(sweep_json)) return RunSweepReport(a, sweep_json);
  const report::ReportOptions opt = OptionsOf(a);
  // What is asked: the HTML file, and the text or JSON unless only the HTML is.
  std::vector<report::ReportFormat> asked;
  if (!a.html.empty()) asked.push_back(report::ReportFormat::kHtml);
  if (a.html.empty() || a.json) asked.push_back(a.json ? report::ReportFormat::kJson : report::ReportFormat::kText);
  auto write = [&](report::ReportFormat f, const std::string& answer) {
    if (f == report::ReportFormat::kHtml) return WriteHtml(a.html, answer, a.force);
    return WriteOutput(a.output, answer, a.force);
  };
  // Asked before, of the same trace with the same options: the answers stored
  // beside the index `at` written (all of them, or none and the analyses run),
  // and the exit code. (Not with --flamegraph, which reads the samples.)
  auto answer_stored = [&](const index::IndexUse& at) -> std::optional<int> {
    if (!a.flamegraph.empty()) return std::nullopt;
    std::vector<std::string> stored;
    for (report::ReportFormat f : asked) {
      auto s = report::StoredReport(at, a.trace, opt, f);
      if (!s) return std::nullopt;
      stored.push_back(std::move(*s));
    }
    for (size_t i = 0; i < asked.size(); ++i)
      if (int rc = write(asked[i], stored[i]); rc != kExitOk) return rc;
    return kExitOk;
  };
  // A trace current by its signature: without opening the model.
  if (auto current = index::FindCurrentIndex(a.trace, IndexOptionsForCommand()); current.ok()) {
    index::IndexUse found;
    found.path = current->path;
    found.key = current->key;
    if (auto rc = answer_stored(found)) return *rc;
  }
  importers::LoadOptions lo;
  lo.progress = true;  // drawn only on a terminal
  index::IndexUse use;
  auto trace = OpenTraceForCommand(a.trace, lo, &use);
  if (!trace.ok()) return BadInput(trace.status().message());
  // An index found current by the trace's content (its signature was not
  // settled yet): its stored answers are as good.
  if (use.read)
    if (auto rc = answer_stored(use)) return *rc;
  if (!a.flamegraph.empty()) {
    int rc = WriteFlamegraph(*trace, a.flamegraph, /*spans=*/false, /*threads=*/true, /*off_cpu=*/false, a.force);
    if (rc != kExitOk) return rc;
    if (a.flamegraph == "-") return kExitOk;
  }
  // The model and the report are left for the OS to reclaim at exit: freeing
  // millions of rows one by one would only delay the exit.
  auto* t = new model::Trace(std::move(trace).value());
  ProgressBar bar("analysing", true, /*bytes=*/false);  // drawn only on a terminal
  auto* rep = new report::Report(*t, opt, [&bar](size_t done, size_t total) { bar.Update(done, total); });
  bar.Finish();
  for (report::ReportFormat f : asked) {
    std::string answer = report::RenderReport(*rep, a.trace, f);
    report::StoreReport(use, a.trace, opt, f, answer);
    if (int rc = write(f, answer); rc != kExitOk) return rc;
  }
  return kExitOk;
}

}  // namespace

void AddReportCommand(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Summarize a trace: steps, GPU time breakdown, kernels, launches, transfers, ops, spans, counters");
  cmd->add_option("traces", args->traces,
                  "a strata trace directory, or a PyTorch-profiler trace (.json, .json.gz); several: a job's ranks "
                  "and hosts, reported together")
      ->required();
  cmd->add_option("--cluster", args->cluster,
                  "Summarize each trace as a task on this Dask scheduler's workers (tcp://HOST:8786), where the traces "
                  "are; the client combines the summaries (needs Python with `distributed`: STRATA_DASK_PYTHON)");
  cmd->add_option("-j,--jobs", args->jobs, "A job's report (of one merged trace too) on local cores: traces summarized at a time (default: the cores)")
      ->check(CLI::Range(size_t{1}, size_t{1024}));
  cmd->add_option("--worker-strata", args->worker_strata,
                  "With --cluster: the strata binary on the workers (default: this one's path)");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text (a summary; --full for every row)");
  cmd->add_option("--html", args->html, "Write a self-contained HTML report with charts to this file");
  cmd->add_option("-o,--output", args->output, "Write the text or JSON report to this file instead of standard output");
  cmd->add_option("--top", args->top, "Rows in each table, in the text and the JSON (and the slowest steps shown)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
  cmd->add_flag("--full", args->full,
                "JSON and HTML: every row of every table, every step, every segment of every step's critical path "
                "(large on long runs)");
  cmd->add_flag("--what-if", args->what_if,
                "Text: under each finding, how its gain was estimated: the fix applied to the measured steps and the "
                "step time it predicts (always in the JSON)");
  cmd->add_flag("--force", args->force, "Replace output files (-o, --html, --flamegraph) that already exist");
  cmd->add_flag("--hta-compat", args->hta,
                "Compute the GPU figures as HTA (HolisticTraceAnalysis) does: whole microseconds, last step dropped, "
                "every event with a stream number counted as GPU work, devices of a rank pooled");
  cmd->add_option("--batch-size", args->batch_size,
                  "Samples per step, for the throughput (default: as recorded, or `strata record --batch-size`)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--kernel-wait-us", args->kernel_wait_us,
                  "Idle gaps between kernels shorter than this are 'kernel wait'")
      ->capture_default_str();
  cmd->add_option("--flamegraph", args->flamegraph, "Also write the CPU samples as folded stacks to FILE (- for stdout only)");
  SetCommandHelp(cmd, "strata report [OPTIONS] TRACE\nstrata report [OPTIONS] [--cluster tcp://HOST:8786] TRACE TRACE...",
                 "  strata report mytrace                        the summary as text\n"
                 "  strata report mytrace --json -o r.json       as JSON: the top 20 rows of each table, step statistics\n"
                 "  strata report mytrace --json --full          every row, every step, every critical-path segment\n"
                 "  strata report mytrace --what-if              each finding's fix as a what-if: the predicted step\n"
                 "  strata report mytrace --html report.html     one self-contained page with charts\n"
                 "  strata report rank0.pt.trace.json.gz --hta-compat --batch-size 32\n"
                 "                                               a PyTorch-profiler trace, GPU figures as HTA computes them\n"
                 "  strata report node*/trace                    a job: clocks, ranks, stragglers, each member's top finding\n"
                 "  strata report --cluster tcp://sched:8786 node*/trace\n"
                 "                                               the same, each trace summarized on a Dask worker");
  cmd->callback([args]() { throw CLI::RuntimeError(RunReport(*args)); });
}

}  // namespace strata::cli

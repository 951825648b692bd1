// `strata index [--rebuild] [--check] [--no-report] TRACE...`: builds (or
// checks) the index of each trace ahead of the commands that read it, and
// stores its default report beside it: after a job, so that the first `report`
// or the web UI opens at once; or to see where a trace's index is and whether
// it is current. One line per trace on stdout; a trace that cannot be
// imported is an error on stderr and makes the exit code non-zero.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "report/stored_report.h"
#include "index/open_trace.h"

namespace strata::cli {
namespace {

struct IndexArgs {
  std::vector<std::string> traces;
  bool rebuild = false;
  bool check = false;
  bool no_report = false;
};

// Stores the default report (text and JSON) of a trace just opened through
// its index, unless already stored: the first `strata report` then prints it
// at once. Returns the seconds spent (0 when both were stored).
double StoreDefaultReports(const std::string& trace, const model::Trace& t, const index::IndexUse& use) {
  const report::ReportOptions opt = report::DefaultReportOptions();
  const report::ReportFormat formats[] = {report::ReportFormat::kText, report::ReportFormat::kJson};
  bool all = true;
  for (report::ReportFormat f : formats) all = all && report::StoredReport(use, trace, opt, f).has_value();
  if (all) return 0;
  auto t0 = std::chrono::steady_clock::now();
  // (Left for the OS to reclaim at exit, as `strata report` does.)
  auto* r = new report::Report(t, opt);
  for (report::ReportFormat f : formats) report::StoreReport(use, trace, opt, f, report::RenderReport(*r, trace, f));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t FileBytes(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

int IndexOne(const std::string& trace, const IndexArgs& a) {
  index::IndexOptions io = index::IndexOptionsFromEnv();
  io.cache_dir = CacheDir();
  if (a.rebuild) io.mode = index::IndexOptions::Mode::kRebuild;
  if (io.mode == index::IndexOptions::Mode::kOff) {
    PrintError("STRATA_INDEX=off: no index is read or written");
    return kExitUsage;
  }
  index::IndexUse use;
  importers::LoadOptions lo;
  lo.progress = true;  // drawn only on a terminal
  auto t0 = std::chrono::steady_clock::now();
  auto t = index::OpenTrace(trace, lo, io, &use);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!t.ok()) {
    const std::string& m = t.status().message();
    PrintError(m.find(trace) == std::string::npos ? trace + ": " + m : m);
    return kExitBadInput;
  }
  if (!use.rejected.empty()) std::fprintf(stderr, "strata: %s: %s; rebuilt\n", trace.c_str(), use.rejected.c_str());
  double report_secs = 0;
  std::string stored;
  if (!a.no_report && !use.path.empty()) {
    report_secs = StoreDefaultReports(trace, *t, use);
    if (report_secs > 0) stored = fmt::format("; default report stored in {:.2f} s", report_secs);
  }
  const double mb = static_cast<double>(FileBytes(use.path)) / 1e6;
  if (use.read) {
    std::printf("%s: up to date: %s (%.1f MB, %zu slices)%s\n", trace.c_str(), use.path.c_str(), mb, t->slices.size(),
                stored.c_str());
  } else if (use.written) {
    std::printf("%s: indexed in %.2f s: %s (%.1f MB, %zu slices, %llu events read)%s\n", trace.c_str(), secs,
                use.path.c_str(), mb, t->slices.size(), static_cast<unsigned long long>(t->events_read), stored.c_str());
  } else {
    // Imported, but nowhere to keep the index (a trace still being recorded,
    // no writable folder and no cache directory).
    PrintError(trace + ": imported, but its index could not be written (the trace is still being recorded, or "
                       "neither its folder nor the cache directory is writable)");
    return kExitOutput;
  }
  return kExitOk;
}

int RunIndex(const IndexArgs& a) {
  int rc = kExitOk;
  for (const std::string& tr : a.traces) {
    if (a.check) {
      // Only look: read the index if it is current, never import.
      index::IndexOptions io = index::IndexOptionsFromEnv();
      io.cache_dir = CacheDir();
      io.mode = index::IndexOptions::Mode::kCheck;
      index::IndexUse use;
      bool current = index::OpenTrace(tr, {}, io, &use).ok() && use.read;
      std::printf("%s: %s%s%s\n", tr.c_str(), current ? "up to date: " : "not indexed",
                  current ? use.path.c_str() : "", use.rejected.empty() ? "" : (" (" + use.rejected + ")").c_str());
      if (!current) rc = kExitBadInput;
      continue;
    }
    int r = IndexOne(tr, a);
    if (r != kExitOk) rc = r;
  }
  return rc;
}

}  // namespace

void AddIndexCommand(CLI::App& app) {
  auto args = std::make_shared<IndexArgs>();
  CLI::App* cmd = app.add_subcommand("index", "Build the index of traces now, so that later commands open them at once");
  cmd->add_option("traces", args->traces, "trace directories or files (strata, PyTorch-profiler JSON, XSpace, LTTng)")
      ->required();
  cmd->add_flag("--rebuild", args->rebuild, "Import the traces again and replace their indexes");
  cmd->add_flag("--check", args->check, "Only say whether each trace has a current index (exit 3 if one has not)");
  cmd->add_flag("--no-report", args->no_report,
                "Do not store the default report (text and JSON) beside the index (stored by default, so that the "
                "first `strata report` prints it at once)");
  SetCommandHelp(cmd, "strata index [OPTIONS] TRACE...",
                 "  strata index runs/*/trace.json      index a job's traces once, for report, export and the web UI\n"
                 "  strata index --check mytrace        is its index current? (where it is, or exit 3)\n"
                 "  STRATA_INDEX_BUDGET_MB=512 strata index big.json   hold at most 512 MB of columns in memory");
  cmd->callback([args]() { throw CLI::RuntimeError(RunIndex(*args)); });
}

}  // namespace strata::cli

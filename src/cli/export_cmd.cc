// `strata export TRACE --format perfetto|chrome-json|sqlite [-o OUT]`
#include <cstdio>
#include <cstring>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "exporters/export.h"
#include "importers/load.h"

namespace strata::cli {
namespace {

struct ExportArgs {
  std::string trace;
  std::string format = "perfetto";
  std::string output;
  bool quiet = false;
  bool force = false;
};

std::string DefaultOutput(const std::string& trace, exporters::ExportFormat f) {
  std::string base = trace;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  base = base.substr(base.rfind('/') == std::string::npos ? 0 : base.rfind('/') + 1);
  for (const char* ext : {".gz", ".json"})
    if (base.size() > std::strlen(ext) && base.ends_with(ext)) base.resize(base.size() - std::strlen(ext));
  switch (f) {
    case exporters::ExportFormat::kPerfetto: return base + ".perfetto-trace";
    case exporters::ExportFormat::kChromeJson: return base + ".chrome.json";
    case exporters::ExportFormat::kSqlite: return base + ".sqlite";
  }
  return base;
}

int RunExport(const ExportArgs& a) {
  exporters::ExportFormat f;
  if (!exporters::ParseExportFormat(a.format, &f)) {
    PrintError("unknown export format '" + a.format + "' (expected perfetto, chrome-json or sqlite)");
    return kExitUsage;
  }
  std::string out = a.output.empty() ? DefaultOutput(a.trace, f) : a.output;
  if (int rc = CheckOutputPath(out, a.force); rc != kExitOk) return rc;
  importers::LoadOptions lo;
  lo.progress = !a.quiet;
  auto trace = OpenTraceForCommand(a.trace, lo);
  if (!trace.ok()) return BadInput(trace.status().message());
  // Left for the OS to reclaim at exit (freeing millions of rows only delays it).
  auto* t = new model::Trace(std::move(trace).value());
  auto st = exporters::ExportTrace(*t, f, out);
  if (!st.ok()) {
    PrintError(st.status().message());
    // The exporters fail when the file cannot be created or written (any errno),
    // else on an internal error.
    return st.status().code() == StatusCode::kInternal ? kExitFailure : kExitOutput;
  }
  if (!a.quiet)
    std::fprintf(stderr, "strata: wrote %s (%s): %llu slices, %llu instants, %llu counter samples, %llu memory events, %llu flows\n",
                 out.c_str(), a.format.c_str(), static_cast<unsigned long long>(st->slices),
                 static_cast<unsigned long long>(st->instants), static_cast<unsigned long long>(st->counter_samples),
                 static_cast<unsigned long long>(st->memory_events), static_cast<unsigned long long>(st->flows));
  return kExitOk;
}

}  // namespace

void AddExportCommand(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "Convert a trace for other tools: Perfetto, Chrome JSON, SQLite");
  cmd->add_option("trace", args->trace, "a strata trace directory, or a PyTorch-profiler trace (.json, .json.gz)")
      ->required();
  cmd->add_option("-f,--format", args->format,
                  "perfetto (protobuf, for ui.perfetto.dev), chrome-json (chrome://tracing), or sqlite "
                  "(tables in docs/sqlite-schema.md)")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Output file (default: named after the trace, in the current directory)");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress or summary on stderr");
  cmd->add_flag("--force", args->force, "Replace the output file if it exists");
  SetCommandHelp(cmd, "strata export [OPTIONS] TRACE",
                 "  strata export mytrace                        mytrace.perfetto-trace, for ui.perfetto.dev\n"
                 "  strata export mytrace -f sqlite -o run.db    tables for SQL (docs/sqlite-schema.md)\n"
                 "  strata export rank0.pt.trace.json.gz -f chrome-json --force\n"
                 "                                               Chrome JSON, replacing rank0.pt.trace.chrome.json");
  cmd->callback([args]() { throw CLI::RuntimeError(RunExport(*args)); });
}

}  // namespace strata::cli

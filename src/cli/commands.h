// `strata` subcommands. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "importers/load_options.h"
#include "index/open_trace.h"
#include "model/trace.h"

namespace strata::cli {

void AddRecordCommand(CLI::App& app);
void AddReportCommand(CLI::App& app);
void AddControlCommand(CLI::App& app);
void AddSweepCommand(CLI::App& app);
void AddDiffCommand(CLI::App& app);
void AddExportCommand(CLI::App& app);
void AddFlamegraphCommand(CLI::App& app);  // flamegraph_cmd.cc
void AddIndexCommand(CLI::App& app);       // index_cmd.cc
void AddViewCommand(CLI::App& app);        // view_cmd.cc
void AddMergeCommand(CLI::App& app);       // merge_cmd.cc
void AddSummarizeCommand(CLI::App& app);   // job_cmd.cc

// Locations of strata's own files next to the running binary.
struct InstallPaths {
  std::string bin_dir;
  std::string lib_dir;     // libstrata.so and collector libraries
  std::string python_dir;  // the `strata` Python package and import hooks
};
InstallPaths FindInstallPaths();
// Where strata caches what it measured or built on this machine (host peaks,
// PyTorch observers): $STRATA_CACHE_DIR, else $XDG_CACHE_HOME/strata, else
// ~/.cache/strata.
std::string CacheDir();

// The arguments after "--" on strata's command line (the program to record).
std::vector<std::string>& TrailingCommand();
bool& TrailingCommandGiven();

// Writes `t`'s CPU samples as folded stacks to `path` ("-" or empty: stdout);
// an existing file is replaced only with `force`. Returns an exit code.
int WriteFlamegraph(const model::Trace& t, const std::string& path, bool spans, bool threads, bool off_cpu = false,
                    bool force = false);

// Prints "strata: <message>" on stderr.
void PrintError(const std::string& message);

// `cmd`'s usage line(s) for --help and usage errors ("strata report [OPTIONS]
// TRACE"; a newline between forms) and the examples that end its --help (main.cc).
void SetCommandHelp(CLI::App* cmd, const std::string& synopsis, const std::string& examples);
// The command or option of `app`/`cmd` closest to a mistyped one; empty when
// none is close ("did you mean").
std::string SuggestCommand(const CLI::App& app, const std::string& typed);
std::string SuggestOption(const CLI::App& cmd, const std::string& typed);

// Output files: every command that writes one refuses to replace an existing
// file unless --force is given, as `record` does with its directory. Returns
// kExitOk, or prints why not and returns kExitOutput.
int CheckOutputPath(const std::string& path, bool force);
// Writes `contents` to `path` (atomically; "-" or empty: standard output) after
// CheckOutputPath. Returns an exit code (kExitOutput when it cannot be written).
int WriteOutput(const std::string& path, const std::string& contents, bool force);
// Writes to standard output; kExitOutput (with a message) when that fails (a
// closed pipe, a full disk).
int WriteStdout(const std::string& contents);
// Opens a trace as every command does: through its index (index/open_trace.h),
// built on the first open. STRATA_INDEX=off imports the trace directly,
// STRATA_INDEX=rebuild imports it and replaces the index.
// The index options every command opens traces with: STRATA_INDEX's, and the
// cache directory for indexes of read-only traces.
index::IndexOptions IndexOptionsForCommand();
// `use`: what was read or written (the index's path and key), when asked.
StatusOr<model::Trace> OpenTraceForCommand(const std::string& path, const importers::LoadOptions& lo = {},
                                           index::IndexUse* use = nullptr);

// A trace that could not be loaded: prints the reason, returns kExitBadInput.
int BadInput(const std::string& message);

}  // namespace strata::cli

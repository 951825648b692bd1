// `strata` subcommands. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace strata::model {
struct Trace;
}

namespace strata::cli {

void AddRecordCommand(CLI::App& app);
void AddReportCommand(CLI::App& app);
void AddControlCommand(CLI::App& app);
void AddSweepCommand(CLI::App& app);
void AddDiffCommand(CLI::App& app);
void AddExportCommand(CLI::App& app);
void AddFlamegraphCommand(CLI::App& app);  // flamegraph_cmd.cc

// Locations of strata's own files next to the running binary.
struct InstallPaths {
  std::string bin_dir;
  std::string lib_dir;     // libstrata.so and collector libraries
  std::string python_dir;  // the `strata` Python package and import hooks
};
InstallPaths FindInstallPaths();

// The arguments after "--" on strata's command line (the program to record).
std::vector<std::string>& TrailingCommand();
bool& TrailingCommandGiven();

// Writes `t`'s CPU samples as folded stacks to `path` ("-" or empty: stdout).
int WriteFlamegraph(const model::Trace& t, const std::string& path, bool spans, bool threads, bool off_cpu = false);

// Prints "strata: <message>" on stderr.
void PrintError(const std::string& message);

}  // namespace strata::cli

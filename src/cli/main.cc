// strata: record an unmodified program across the stack, then analyse and show it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "base/files.h"
#include "cli/commands.h"

namespace strata::cli {

std::vector<std::string>& TrailingCommand() {
  static std::vector<std::string> v;
  return v;
}
bool& TrailingCommandGiven() {
  static bool given = false;
  return given;
}

void PrintError(const std::string& message) { std::fprintf(stderr, "strata: %s\n", message.c_str()); }

InstallPaths FindInstallPaths() {
  InstallPaths p;
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  p.bin_dir = exe.substr(0, exe.rfind('/'));
  std::string prefix = p.bin_dir.substr(0, p.bin_dir.rfind('/'));
  if (const char* l = ::secure_getenv("STRATA_LIB_DIR")) p.lib_dir = l;
  else if (PathExists(prefix + "/lib/libstrata.so")) p.lib_dir = prefix + "/lib";
  else p.lib_dir = prefix + "/lib/strata";
  if (PathExists(prefix + "/python/strata/__init__.py")) p.python_dir = prefix + "/python";
  else p.python_dir = prefix + "/share/strata/python";
  return p;
}

}  // namespace strata::cli

int main(int argc, char** argv) {
  CLI::App app{"strata: traces and profiles ML dataflow programs across the stack (OS, accelerator runtime, "
               "framework ops, model steps) with no change to the program.",
               "strata"};
  app.set_version_flag("--version", std::string("strata ") + STRATA_VERSION);
  app.require_subcommand(0, 1);
  app.footer(
      "Examples:\n"
      "  strata record -- python3 train.py        record an unmodified program\n"
      "  strata report strata-20261122-101500     summarize a trace (text; --json for JSON)\n"
      "  strata report trace.pt.trace.json.gz     the same for a PyTorch-profiler trace\n"
      "  strata export TRACE -f perfetto          convert for ui.perfetto.dev (or chrome-json, sqlite)\n"
      "\nRun 'strata COMMAND --help' for a command's options.");
  strata::cli::AddRecordCommand(app);
  strata::cli::AddReportCommand(app);
  strata::cli::AddControlCommand(app);
  strata::cli::AddSweepCommand(app);
  strata::cli::AddDiffCommand(app);
  strata::cli::AddExportCommand(app);
  strata::cli::AddFlamegraphCommand(app);
  if (argc <= 1) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  // Everything after the first "--" is the command to record, passed through
  // untouched; CLI11 only sees what comes before it.
  int parse_argc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      parse_argc = i;
      for (int k = i + 1; k < argc; ++k) strata::cli::TrailingCommand().push_back(argv[k]);
      strata::cli::TrailingCommandGiven() = true;
      break;
    }
  try {
    app.parse(parse_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a subcommand finished with this code
  } catch (const CLI::ParseError& e) {
    strata::cli::PrintError(e.what());
    std::fprintf(stderr, "Run 'strata --help' for usage.\n");
    return 2;
  }
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  return 0;
}

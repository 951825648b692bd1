// strata: record an unmodified program across the stack, then analyse and show it.
//
// The command line behaves as git's and perf's do: each command has its own
// usage line and examples (`strata COMMAND --help`), a mistyped command or
// option gets a suggestion, a usage error prints the command's usage line and
// exits 2, and each command's other failures have their own exit codes
// (cli/exit_codes.h, README "Exit codes").
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <new>
#include <cstdlib>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "base/files.h"
#include "base/parallel.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"

namespace strata::cli {
namespace {

// Each command's synopsis: after "Usage: ", a line per form.
std::map<const CLI::App*, std::string>& Synopses() {
  static std::map<const CLI::App*, std::string> s;
  return s;
}

// CLI11's usage line lists options and positionals; strata's commands print
// their own (a trailing "-- COMMAND [ARGS...]" is not a CLI11 positional).
class StrataFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    auto it = Synopses().find(app);
    if (it == Synopses().end()) return CLI::Formatter::make_usage(app, std::move(name));
    std::string out;
    size_t start = 0;
    const std::string& s = it->second;
    while (start < s.size()) {
      size_t nl = s.find('\n', start);
      if (nl == std::string::npos) nl = s.size();
      out += (start == 0 ? "Usage: " : "       ") + s.substr(start, nl - start) + "\n";
      start = nl + 1;
    }
    return out;
  }
};

// Damerau-Levenshtein distance (adjacent transpositions count one), the measure
// git's "did you mean" uses in spirit.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "--jsn=1" -> "--jsn"; "-x" stays.
std::string OptionName(const std::string& arg) { return arg.substr(0, arg.find('=')); }

bool IsKnownOption(const CLI::App& cmd, const std::string& arg) {
  std::string name = OptionName(arg);
  if (name == "--help" || name == "-h") return true;
  // CLI11 accepts -ovalue for short options: its first two characters name it.
  if (name.size() > 2 && name[1] != '-') name = name.substr(0, 2);
  return cmd.get_option_no_throw(name) != nullptr;
}

// The option names of `cmd` with their dashes: "--json", "-o".
std::vector<std::string> OptionNames(const CLI::App& cmd) {
  std::vector<std::string> out;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  out.push_back("--help");
  return out;
}

void PrintUsageHint(const CLI::App& cmd) {
  std::string usage = StrataFormatter().make_usage(&cmd, "strata " + cmd.get_name());
  std::fputs(usage.c_str(), stderr);
  std::fprintf(stderr, "Run 'strata %s --help' for the options and examples.\n", cmd.get_name().c_str());
}

// The command-line arguments strata itself parses (before a "--").
struct Args {
  std::vector<std::string> v;
  // The first argument that is not an option: the command's name (or a typo of one).
  std::string command;
  size_t command_index = 0;
};

// A usage error inside `cmd` (or at the top level when `cmd` is null): one line
// that says what is wrong, the usage line, and a pointer to --help.
int UsageError(CLI::App& app, CLI::App* cmd, const CLI::ParseError& e, const Args& args) {
  const std::string who = cmd ? "strata " + cmd->get_name() : "strata";
  if (!cmd) {
    if (!args.command.empty()) {
      std::fprintf(stderr, "strata: '%s' is not a strata command.", args.command.c_str());
      std::string s = SuggestCommand(app, args.command);
      if (!s.empty()) std::fprintf(stderr, " Did you mean '%s'?", s.c_str());
      std::fprintf(stderr, "\nRun 'strata --help' for the list of commands.\n");
      return kExitUsage;
    }
    for (const auto& a : args.v)
      if (a.size() > 1 && a[0] == '-' && !IsKnownOption(app, a)) {
        std::fprintf(stderr, "strata: unknown option '%s'\n", OptionName(a).c_str());
        std::fprintf(stderr, "Run 'strata --help' for usage.\n");
        return kExitUsage;
      }
    PrintError(e.what());
    std::fprintf(stderr, "Run 'strata --help' for usage.\n");
    return kExitUsage;
  }
  std::string message;
  if (dynamic_cast<const CLI::RequiredError*>(&e)) {
    for (const CLI::Option* o : cmd->get_options()) {
      if (!o->get_required() || o->count() > 0) continue;
      if (!message.empty()) message += "; ";
      if (!o->nonpositional())
        message += "missing " + Upper(o->get_name()) + " (" + o->get_description() + ")";
      else
        message += "missing option " + o->get_name(false, true);
    }
  } else if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    for (size_t i = args.command_index + 1; i < args.v.size(); ++i) {
      const std::string& a = args.v[i];
      if (a.size() < 2 || a[0] != '-' || IsKnownOption(*cmd, a)) continue;
      message = "unknown option '" + OptionName(a) + "'";
      std::string s = SuggestOption(*cmd, a);
      if (!s.empty()) message += "; did you mean '" + s + "'?";
      break;
    }
    if (message.empty()) {
      message = e.what();
      const std::string prefix = "The following argument";
      if (message.rfind(prefix, 0) == 0) {
        size_t colon = message.find(": ");
        message = "unexpected argument" + std::string(message[prefix.size()] == 's' ? "s" : "") + " '" +
                  message.substr(colon + 2) + "'";
      }
    }
  }
  if (message.empty()) message = e.what();
  std::fprintf(stderr, "%s: %s\n", who.c_str(), message.c_str());
  PrintUsageHint(*cmd);
  return kExitUsage;
}

void DescribeRecord(CLI::App& app) {
  CLI::App* rec = app.get_subcommand("record");
  // The record command (record.cc) is parsed as a prefix command: an unknown
  // option lands in its remaining arguments rather than failing the parse. Catch
  // it here, where the suggestions are made, before the program is started.
  rec->parse_complete_callback([rec]() {
    std::vector<std::string> rem = rec->remaining();
    if (!rem.empty() && rem[0].size() > 1 && rem[0][0] == '-' && !IsKnownOption(*rec, rem[0])) {
      std::string message = "unknown option '" + OptionName(rem[0]) + "'";
      std::string s = SuggestOption(*rec, rem[0]);
      if (!s.empty()) message += "; did you mean '" + s + "'?";
      std::fprintf(stderr, "strata record: %s\n", message.c_str());
      PrintUsageHint(*rec);
      throw CLI::RuntimeError(kExitUsage);
    }
  });
  SetCommandHelp(rec, "strata record [OPTIONS] -- COMMAND [ARGS...]",
                 "  strata record -- python3 train.py             record an unmodified program (and its children)\n"
                 "  strata record -o mytrace -- ./app --epochs 1  choose the trace directory (-f: replace a trace there)\n"
                 "  strata record --shapes --ops-steps 10-20 -- python3 train.py\n"
                 "                                                shapes, FLOPs and dataflow for steps 10..20 only\n"
                 "  strata record --sched --syscalls -- ./server  as root: sleep states, wakeups, every system call\n"
                 "\n"
                 "Exit status: the program's own (strata dies by the same signal when the program did); 125 when\n"
                 "strata could not set up the recording, 126 when the program cannot be executed, 127 when it is\n"
                 "not found. See README.md, \"Exit codes\".");
}

}  // namespace

std::vector<std::string>& TrailingCommand() {
  static std::vector<std::string> v;
  return v;
}
bool& TrailingCommandGiven() {
  static bool given = false;
  return given;
}

void PrintError(const std::string& message) { std::fprintf(stderr, "strata: %s\n", message.c_str()); }

void SetCommandHelp(CLI::App* cmd, const std::string& synopsis, const std::string& examples) {
  Synopses()[cmd] = synopsis;
  cmd->footer("Examples:\n" + examples);
}

int CheckOutputPath(const std::string& path, bool force) {
  struct stat st;
  if (path.empty() || path == "-" || ::stat(path.c_str(), &st) != 0) return kExitOk;
  if (S_ISDIR(st.st_mode)) {
    PrintError(path + " is a directory (give a file name)");
    return kExitOutput;
  }
  if (S_ISREG(st.st_mode) && !force) {
    PrintError(path + " already exists (use --force to replace it)");
    return kExitOutput;
  }
  return kExitOk;
}

int WriteStdout(const std::string& contents) {
  size_t n = std::fwrite(contents.data(), 1, contents.size(), stdout);
  if (n != contents.size() || std::fflush(stdout) != 0) {
    int err = errno;
    PrintError(std::string("cannot write to standard output: ") + std::strerror(err));
    return kExitOutput;
  }
  return kExitOk;
}

int WriteOutput(const std::string& path, const std::string& contents, bool force) {
  if (path.empty() || path == "-") return WriteStdout(contents);
  if (int rc = CheckOutputPath(path, force); rc != kExitOk) return rc;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device or a pipe (/dev/null, a FIFO): written into, never replaced by a
    // rename (which, as root, would replace the device node itself).
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    int err = fd < 0 ? errno : WriteAll(fd, contents.data(), contents.size());
    if (fd >= 0) ::close(fd);
    if (err != 0) {
      PrintError("cannot write " + path + ": " + std::strerror(err));
      return kExitOutput;
    }
    return kExitOk;
  }
  Status s = WriteFileAtomic(path, contents);
  if (!s.ok()) {
    PrintError(s.message());
    return kExitOutput;
  }
  return kExitOk;
}

int BadInput(const std::string& message) {
  PrintError(message);
  return kExitBadInput;
}

static std::string Closest(const std::vector<std::string>& candidates, const std::string& typed) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = EditDistance(typed, c);
    // A prefix of a name is what a user means by it ("rep" for "report").
    if (typed.size() >= 3 && c.rfind(typed, 0) == 0) d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Close enough: at most a third of the name wrong (two edits for short names).
  size_t limit = std::max<size_t>(2, typed.size() / 3);
  return best_d <= limit ? best : std::string();
}

std::string SuggestCommand(const CLI::App& app, const std::string& typed) {
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands({})) names.push_back(s->get_name());
  return Closest(names, typed);
}

std::string SuggestOption(const CLI::App& cmd, const std::string& typed) {
  std::string name = OptionName(typed);
  // "-json" for "--json": the single-dash spelling of a long option.
  if (name.size() > 2 && name[1] != '-' && cmd.get_option_no_throw("-" + name) != nullptr) return "-" + name;
  std::vector<std::string> names = OptionNames(cmd);
  std::erase_if(names, [&](const std::string& n) { return (n.size() == 2) != (name.size() == 2); });
  return Closest(names, name);
}

InstallPaths FindInstallPaths() {
  InstallPaths p;
  std::string exe = strata::SelfExePath();
  p.bin_dir = exe.substr(0, exe.rfind('/'));
  std::string prefix = p.bin_dir.substr(0, p.bin_dir.rfind('/'));
  if (const char* l = ::secure_getenv("STRATA_LIB_DIR")) p.lib_dir = l;
  else if (PathExists(prefix + "/lib/libstrata.so")) p.lib_dir = prefix + "/lib";
  else p.lib_dir = prefix + "/lib/strata";
  if (PathExists(prefix + "/python/strata/__init__.py")) p.python_dir = prefix + "/python";
  else p.python_dir = prefix + "/share/strata/python";
  return p;
}

std::string CacheDir() {
  if (const char* d = ::secure_getenv("STRATA_CACHE_DIR"); d && *d) return d;
  const char* xdg = ::secure_getenv("XDG_CACHE_HOME");
  const char* home = ::secure_getenv("HOME");
  return xdg && *xdg ? std::string(xdg) + "/strata" : std::string(home ? home : "/tmp") + "/.cache/strata";
}

}  // namespace strata::cli

int main(int argc, char** argv) {
  using namespace strata::cli;
  strata::MappedFile::InstallGuard();  // a mapped index shortened under us: a one-line error
  // The analyses allocate and free arrays of every size per section and per
  // step: keep what was freed in the heap for the next (one heap for the few
  // threads of a small machine) instead of handing it back to the kernel to
  // fault in and zero again: a tenth of a report's CPU on the 274k-event
  // replicate (BENCHMARKS.md). Set here, not through GLIBC_TUNABLES, which a
  // traced program would inherit.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_ARENA_MAX, 1 + static_cast<int>(strata::base::WorkerThreads() / 8));
  CLI::App app{"strata: traces and profiles ML dataflow programs across the stack (OS, accelerator runtime, "
               "framework ops, model steps) with no change to the program.",
               "strata"};
  // Set before the commands are added: they inherit it.
  app.formatter(std::make_shared<StrataFormatter>());
  app.set_version_flag("--version", std::string("strata ") + STRATA_VERSION);
  app.require_subcommand(0, 1);
  AddRecordCommand(app);
  AddReportCommand(app);
  AddControlCommand(app);
  AddSweepCommand(app);
  AddDiffCommand(app);
  AddExportCommand(app);
  AddFlamegraphCommand(app);
  AddIndexCommand(app);
  AddMergeCommand(app);
  AddSummarizeCommand(app);
  AddViewCommand(app);
  DescribeRecord(app);
  for (CLI::App* sub : app.get_subcommands({})) sub->group("Commands");
  SetCommandHelp(&app, "strata COMMAND [OPTIONS] [ARGS...]",
                 "  strata record -- python3 train.py        record an unmodified program\n"
                 "  strata report strata-20261122-101500     summarize a trace (text; --json, --html)\n"
                 "  strata report trace.pt.trace.json.gz     the same for a PyTorch-profiler trace\n"
                 "  strata export TRACE -f perfetto          convert for ui.perfetto.dev (or chrome-json, sqlite)\n"
                 "  strata view TRACE                        the web UI: main view, timeline, analyses\n"
                 "\nRun 'strata COMMAND --help' for a command's options and examples.");
  if (argc <= 1) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  }
  // Everything after the first "--" is the command to record, passed through
  // untouched; CLI11 only sees what comes before it.
  int parse_argc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      parse_argc = i;
      for (int k = i + 1; k < argc; ++k) TrailingCommand().push_back(argv[k]);
      TrailingCommandGiven() = true;
      break;
    }
  Args args;
  for (int i = 1; i < parse_argc; ++i) args.v.push_back(argv[i]);
  for (size_t i = 0; i < args.v.size(); ++i)
    if (args.v[i].empty() || args.v[i][0] != '-') {
      args.command = args.v[i];
      args.command_index = i;
      break;
    }
  CLI::App* cmd = nullptr;
  if (!args.command.empty()) {
    try {
      cmd = app.get_subcommand(args.command);
    } catch (const CLI::OptionNotFound&) {
      cmd = nullptr;
    }
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
    return e.get_exit_code();  // a command finished with this code
  } catch (const CLI::ParseError& e) {
    return UsageError(app, cmd, e, args);
  } catch (const std::bad_alloc&) {
    // Memory (or, for spilled columns, the disk beside the index) ran out.
    PrintError("out of memory; a lower STRATA_INDEX_BUDGET_MB keeps more of a large trace's columns in files "
               "beside its index (which need free disk space there)");
    return 1;
  }
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  }
  return kExitOk;
}

// `strata flamegraph TRACE [-o FILE]`: the trace's CPU samples as folded stacks
// ("process;thread;outer;...;inner COUNT"), the input of flamegraph.pl, inferno
// and speedscope. Also reachable as `strata report TRACE --flamegraph FILE`.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "analysis/os.h"
#include "base/files.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "importers/load.h"

namespace strata::cli {

int WriteFlamegraph(const model::Trace& t, const std::string& path, bool spans, bool threads, bool off_cpu, bool force) {
  analysis::FoldedOptions o;
  o.spans = spans;
  o.off_cpu = off_cpu;
  o.process_and_thread = threads;
  std::string folded = analysis::FoldedStacks(t, o);
  if (off_cpu && folded.empty())
    std::fprintf(stderr, "strata: the trace has no off-CPU stacks (they need root or CAP_PERFMON at record time)\n");
  else if (!off_cpu && t.cpu_samples.size() == 0)
    std::fprintf(stderr, "strata: the trace has no CPU samples (recorded with --sample-hz 0, --no-os, or the kernel refused sampling)\n");
  return WriteOutput(path, folded, force);
}

namespace {

struct FlamegraphArgs {
  std::string trace;
  std::string output;
  bool spans = false;
  bool no_threads = false;
  bool off_cpu = false;
  bool force = false;
};

int RunFlamegraph(const FlamegraphArgs& a) {
  if (int rc = CheckOutputPath(a.output, a.force); rc != kExitOk) return rc;
  auto trace = OpenTraceForCommand(a.trace);
  if (!trace.ok()) return BadInput(trace.status().message());
  return WriteFlamegraph(*trace, a.output, a.spans, !a.no_threads, a.off_cpu, a.force);
}

}  // namespace

void AddFlamegraphCommand(CLI::App& app) {
  auto args = std::make_shared<FlamegraphArgs>();
  CLI::App* cmd = app.add_subcommand("flamegraph", "Write a trace's CPU samples as folded stacks for flame graphs");
  cmd->add_option("trace", args->trace, "a strata trace directory")->required();
  cmd->add_option("-o,--output", args->output, "Output file (default: stdout)");
  cmd->add_flag("--force", args->force, "Replace the -o file if it exists");
  cmd->add_flag("--spans", args->spans, "Put the spans/ops open at each sample between the thread and its frames");
  cmd->add_flag("--no-threads", args->no_threads, "Do not start stacks with process and thread");
  cmd->add_flag("--off-cpu", args->off_cpu,
                "Fold the stacks threads blocked in, weighted by microseconds off CPU (recorded as root)");
  SetCommandHelp(cmd, "strata flamegraph [OPTIONS] TRACE",
                 "  strata flamegraph mytrace | flamegraph.pl > cpu.svg   an SVG flame graph (Brendan Gregg's flamegraph.pl)\n"
                 "  strata flamegraph mytrace -o cpu.folded               for speedscope or inferno\n"
                 "  strata flamegraph mytrace --spans --no-threads        the ops open at each sample under its frames\n"
                 "  strata flamegraph mytrace --off-cpu -o wait.folded    where threads blocked (recorded with --sched)");
  cmd->callback([args]() { throw CLI::RuntimeError(RunFlamegraph(*args)); });
}

}  // namespace strata::cli

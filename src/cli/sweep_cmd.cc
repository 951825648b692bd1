// `strata sweep --param batch_size=1,2,4,8 [-o DIR] -- CMD ... {batch_size} ...`
//
// Records CMD once per value (the value substituted for {name} in CMD's
// arguments, and exported as NAME with --env), measures the model level (steps)
// of each run, and reports throughput and latency per value and where
// throughput saturates. Each run is an ordinary trace in DIR/name=value/; the
// summary is DIR/sweep.json, which `strata report DIR` shows again.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/summary.h"
#include "analysis/sweep.h"
#include "base/files.h"
#include "cli/child.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "report/sweep_report.h"
#include "importers/load.h"


namespace strata::cli {
namespace {

struct SweepArgs {
  std::string param;
  std::string output;
  bool env = false;
  bool force = false;
  std::string samples_per_step;
  uint64_t skip_steps = 1;
  bool json = false;
};

std::string Substitute(std::string arg, const std::string& name, const std::string& value) {
  std::string key = "{" + name + "}";
  for (size_t pos = arg.find(key); pos != std::string::npos; pos = arg.find(key, pos + value.size()))
    arg.replace(pos, key.size(), value);
  return arg;
}

int RunSweep(SweepArgs a) {
  auto eq = a.param.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= a.param.size()) {
    PrintError("sweep: --param takes NAME=V1,V2,... (e.g. batch_size=1,2,4,8)");
    return kExitUsage;
  }
  std::string name = a.param.substr(0, eq);
  std::vector<std::string> values;
  for (size_t i = eq + 1; i <= a.param.size();) {
    size_t j = a.param.find(',', i);
    if (j == std::string::npos) j = a.param.size();
    if (j > i) values.push_back(a.param.substr(i, j - i));
    i = j + 1;
  }
  if (values.empty()) {
    PrintError("sweep: no values given for " + name);
    return kExitUsage;
  }
  if (!TrailingCommandGiven() || TrailingCommand().empty()) {
    PrintError("sweep: no command given (usage: strata sweep --param NAME=V1,V2 -- CMD ... {NAME} ...)");
    return kExitUsage;
  }
  const std::vector<std::string>& cmd = TrailingCommand();
  bool placeholder = std::any_of(cmd.begin(), cmd.end(), [&](const std::string& s) {
    return s.find("{" + name + "}") != std::string::npos;
  });
  if (!placeholder && !a.env) {
    PrintError("sweep: the command has no {" + name + "} placeholder; add one or use --env");
    return kExitUsage;
  }
  if (a.output.empty()) {
    time_t now = ::time(nullptr);
    struct tm tm;
    ::localtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "strata-sweep-%Y%m%d-%H%M%S", &tm);
    a.output = buf;
  }
  if (PathExists(JoinPath(a.output, "sweep.json")) && !a.force) {
    PrintError(a.output + " already holds a sweep (use --force to replace it)");
    return kExitOutput;
  }
  Status st = MakeDirs(a.output);
  if (!st.ok()) {
    PrintError(st.message());
    return kExitOutput;
  }
  // Samples per step: a number, the parameter itself ({name} or a name with
  // "batch" in it), or unknown (throughput is then in steps/s).
  bool per_value_samples = a.samples_per_step == "{" + name + "}" ||
                           (a.samples_per_step.empty() && name.find("batch") != std::string::npos);
  double fixed_samples = 0;
  if (!per_value_samples && !a.samples_per_step.empty()) {
    try {
      fixed_samples = std::stod(a.samples_per_step);
    } catch (...) {
      PrintError("sweep: --samples-per-step takes a number or {" + name + "}");
      return kExitUsage;
    }
  }

  analysis::SweepSummary sum;
  sum.param = name;
  sum.throughput_unit = (per_value_samples || fixed_samples > 0) ? "samples/s" : "steps/s";
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string& v : values) {
    analysis::SweepPoint p;
    p.value = v;
    char* end = nullptr;
    p.numeric = std::strtod(v.c_str(), &end);
    if (!end || *end != '\0') p.numeric = NAN;
    std::string dir = JoinPath(a.output, name + "=" + v);
    std::vector<std::string> argv = {SelfExe(), "record", "-q", "--force", "-o", dir, "--"};
    for (const auto& c : cmd) argv.push_back(Substitute(c, name, v));
    std::vector<std::string> env;
    if (a.env) env.push_back(upper + "=" + v);
    std::fprintf(stderr, "strata sweep: %s=%s\n", name.c_str(), v.c_str());
    std::string log = dir + ".log";
    const pid_t pid = StartChild(argv, env, log);
    p.exit_status = pid < 0 ? 127 : WaitChild(pid);
    auto trace = OpenTraceForCommand(dir);
    if (p.exit_status != 0)
      p.error = "the command exited with status " + std::to_string(p.exit_status) + " (output in " + log + ")";
    if (!trace.ok()) {
      p.error = trace.status().message();
    } else if (p.error.empty()) {
      analysis::StepStats steps = analysis::Steps(*trace);
      std::vector<int64_t> d = steps.durations_ns;
      size_t skip = std::min<size_t>(a.skip_steps, d.size() > 1 ? d.size() - 1 : 0);
      d.erase(d.begin(), d.begin() + static_cast<ptrdiff_t>(skip));
      if (d.empty()) {
        p.error = "no steps recorded (mark them with strata.step() / strata::Step, or a framework collector)";
      } else {
        analysis::Distribution dist = analysis::Distribute(d);
        p.steps = d.size();
        p.step_p50_ns = dist.p50;
        p.step_p90_ns = dist.p90;
        p.samples_per_step = per_value_samples ? p.numeric : fixed_samples;
        double total_s = dist.mean * static_cast<double>(d.size()) / 1e9;
        double work = (p.samples_per_step > 0 ? p.samples_per_step : 1.0) * static_cast<double>(d.size());
        p.throughput = total_s > 0 ? work / total_s : 0;
      }
    }
    sum.points.push_back(std::move(p));
  }
  analysis::SummarizeSweep(&sum);
  nlohmann::json j = report::SweepToJson(sum);
  j["command"] = cmd;
  st = WriteFileAtomic(JoinPath(a.output, "sweep.json"), j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (!st.ok()) {
    PrintError(st.message());
    return kExitOutput;
  }
  std::string out = a.json ? j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" : report::SweepToText(sum);
  if (int rc = WriteStdout(out); rc != kExitOk) return rc;
  bool any = std::any_of(sum.points.begin(), sum.points.end(), [](const auto& p) { return p.error.empty(); });
  if (!any) PrintError("sweep: no run produced steps (see the errors above and the logs in " + a.output + ")");
  return any ? kExitOk : kExitFailure;
}

}  // namespace

void AddSweepCommand(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "Record CMD once per parameter value; throughput and latency per value");
  cmd->add_option("--param", args->param, "NAME=V1,V2,...; {NAME} in CMD is replaced by each value")->required();
  cmd->add_option("-o,--output", args->output, "Sweep directory (default: ./strata-sweep-DATE-TIME)");
  cmd->add_flag("--env", args->env, "Also export the value as the environment variable NAME (upper case)");
  cmd->add_option("--samples-per-step", args->samples_per_step,
                  "Samples in one step: a number or {NAME} (default: the value, when NAME contains 'batch')");
  cmd->add_option("--skip-steps", args->skip_steps, "Warm-up steps to leave out of each run")->capture_default_str();
  cmd->add_flag("-f,--force", args->force, "Replace a sweep already in the output directory");
  cmd->add_flag("--json", args->json, "Print the summary as JSON");
  SetCommandHelp(cmd, "strata sweep --param NAME=V1,V2,... [OPTIONS] -- COMMAND [ARGS...]",
                 "  strata sweep --param batch_size=1,2,4,8 -- python3 train.py --batch {batch_size}\n"
                 "                                  throughput and latency per batch size, where throughput saturates\n"
                 "  strata sweep --param workers=0,2,4 --env -o loaders -- python3 train.py\n"
                 "                                  the value also in $WORKERS; the runs in loaders/workers=N/\n"
                 "  strata report loaders            the sweep's summary again");
  cmd->callback([args]() { throw CLI::RuntimeError(RunSweep(*args)); });
}

}  // namespace strata::cli

// OS-level report sections: threads (on/off CPU and why), off-CPU causes,
// system calls, OS time per step, CPU samples. JSON under the "os" key.
#include <fmt/format.h>

#include "analysis/os.h"
#include "report/section.h"

namespace strata::report {
namespace {

using nlohmann::json;

std::string Pct(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.0f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

json CauseJson(const analysis::OffCpuCause& c) {
  return {{"cause", c.cause}, {"category", c.category}, {"count", c.count}, {"total_ns", c.total_ns}, {"max_ns", c.max_ns}};
}

// One section renders the whole OS level: its parts share one analysis pass.
class OsSection : public Section {
 public:
  void Build(const model::Trace& t, const ReportOptions&) override { o_ = analysis::AnalyzeOs(t); }

  void RenderText(std::string& out, const ReportOptions& opt) const override {
    if (o_.lost_records > 0 && (o_.has_sched || o_.has_syscalls || o_.has_samples)) Losses(out);
    if (o_.has_sched || o_.has_syscalls) Threads(out, opt);
    if (!o_.strata_threads.empty()) StrataThreads(out, opt);
    if (!o_.off_cpu.empty()) OffCpu(out, opt);
    if (o_.has_syscalls) Syscalls(out, opt);
    if (!o_.steps.empty() && (o_.has_sched || o_.has_syscalls)) Steps(out, opt);
    if (o_.has_samples) Samples(out, opt);
    if (o_.page_faults || o_.block_requests) {
      if (!out.empty()) out += "\n";
      out += fmt::format("OS: {} page faults; {} block requests issued ({})\n", o_.page_faults, o_.block_requests,
                         FormatBytes(static_cast<double>(o_.block_bytes)));
    }
  }

  void RenderJson(json& root, const ReportOptions& opt) const override {
    json os = json::object();
    json threads = JsonRows(root, "os.threads", o_.threads.size(), opt, [&](size_t i) {
      const auto& x = o_.threads[i];
      json causes = json::array();
      for (size_t k = 0; k < x.causes.size() && k < opt.max_rows; ++k) causes.push_back(CauseJson(x.causes[k]));
      json wakers = json::array();
      size_t w_shown = 0;
      for (const auto& [w, n] : x.wakers)
        if (w_shown++ < opt.max_rows) wakers.push_back({{"thread", w}, {"count", n}});
      return json{{"process", x.process},         {"thread", x.thread},
                  {"pid", x.pid},                 {"tid", x.tid},
                  {"on_cpu_ns", x.on_cpu_ns},     {"off_cpu_ns", x.off_cpu_ns},
                  {"runnable_ns", x.runnable_ns}, {"blocked_ns", x.blocked_ns},
                  {"lock_ns", x.lock_ns},         {"unknown_ns", x.unknown_ns},
                  {"switches", x.switches},       {"preemptions", x.preemptions},
                  {"syscalls", x.syscalls},       {"syscall_ns", x.syscall_ns},
                  {"samples", x.samples},         {"top_function", x.top_function},
                  {"off_cpu_causes", causes},     {"woken_by", wakers}};
    });
    os["threads"] = threads;
    json own = json::array();
    for (const auto& x : o_.strata_threads)
      own.push_back({{"process", x.process}, {"thread", x.thread},       {"pid", x.pid},
                     {"tid", x.tid},         {"on_cpu_ns", x.on_cpu_ns}, {"off_cpu_ns", x.off_cpu_ns},
                     {"syscalls", x.syscalls}, {"syscall_ns", x.syscall_ns}, {"samples", x.samples}});
    // Present only when there is something to say (traces from other tools have neither).
    if (!own.empty()) os["strata_threads"] = own;
    if (o_.lost_records > 0) {
      os["lost_records"] = o_.lost_records;
      os["incomplete_syscalls"] = o_.incomplete_syscalls;
    }
    os["off_cpu"] = JsonRows(root, "os.off_cpu", o_.off_cpu.size(), opt, [&](size_t i) { return CauseJson(o_.off_cpu[i]); });
    os["syscalls"] = JsonRows(root, "os.syscalls", o_.syscalls.size(), opt, [&](size_t i) {
      const auto& s = o_.syscalls[i];
      return json{{"name", s.name},         {"count", s.count},     {"errors", s.errors}, {"unfinished", s.unfinished},
                  {"incomplete", s.incomplete}, {"total_ns", s.total_ns}, {"mean_ns", s.mean_ns}, {"p50_ns", s.p50_ns}, {"p99_ns", s.p99_ns},
                  {"max_ns", s.max_ns}};
    });
    // Per step: every step in time order with --full, else the slowest.
    std::vector<size_t> order(o_.steps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (!opt.full)
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return o_.steps[a].dur > o_.steps[b].dur; });
    json steps = JsonRows(root, "os.steps", order.size(), opt, [&](size_t k) {
      const auto& s = o_.steps[order[k]];
      return json{{"step", s.step},           {"ts", s.ts},
                       {"dur_ns", s.dur},          {"thread", s.thread},
                       {"on_cpu_ns", s.on_cpu_ns}, {"runnable_ns", s.runnable_ns},
                       {"blocked_ns", s.blocked_ns}, {"lock_ns", s.lock_ns},
                       {"io_ns", s.io_ns},         {"syscalls", s.syscalls},
                       {"syscall_ns", s.syscall_ns}, {"top_syscall", s.top_syscall},
                       {"top_syscall_ns", s.top_syscall_ns}, {"process_cpu_ns", s.process_cpu_ns},
                       {"samples", s.samples}};
    });
    os["steps"] = steps;
    os["steps_order"] = opt.full ? "time" : "slowest first";
    json funcs = JsonRows(root, "os.samples.functions", o_.functions.size(), opt, [&](size_t i) {
      const auto& f = o_.functions[i];
      return json{{"function", f.function}, {"module", f.module}, {"kind", f.kind}, {"self", f.self}, {"total", f.total}};
    });
    json ops = JsonRows(root, "os.samples.ops", o_.ops.size(), opt, [&](size_t i) {
      const auto& p = o_.ops[i];
      return json{{"name", p.name}, {"kind", p.kind}, {"samples", p.samples}, {"top_function", p.top_function},
                  {"top_function_samples", p.top_function_samples}};
    });
    json sthreads = JsonRows(root, "os.samples.threads", o_.sample_threads.size(), opt, [&](size_t i) {
      const auto& s = o_.sample_threads[i];
      return json{{"process", s.process}, {"thread", s.thread}, {"tid", s.tid}, {"samples", s.samples},
                  {"top_function", s.top_function}, {"top_function_samples", s.top_function_samples}};
    });
    json pyfuncs = JsonRows(root, "os.samples.python_functions", o_.python_functions.size(), opt, [&](size_t i) {
      const auto& f = o_.python_functions[i];
      return json{{"function", f.function}, {"file", f.module}, {"self", f.self}, {"total", f.total}};
    });
    os["samples"] = {{"total", o_.samples},           {"functions", funcs},       {"python_samples", o_.python_samples},
                     {"python_functions", pyfuncs},   {"ops", ops},               {"threads", sthreads}};
    os["page_faults"] = o_.page_faults;
    os["block_io"] = {{"requests", o_.block_requests}, {"bytes", o_.block_bytes}};
    root["os"] = os;
  }

 private:
  static void Sep(std::string& out) {
    if (!out.empty()) out += "\n";
  }

  void Threads(std::string& out, const ReportOptions& opt) const {
    Sep(out);
    out += fmt::format("OS: threads\n  {:<26} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9}  {}\n", "thread", "on-CPU", "off-CPU",
                       "preempted", "blocked", "syscalls", "samples", "top off-CPU cause");
    for (size_t i = 0; i < o_.threads.size() && i < opt.top; ++i) {
      const auto& x = o_.threads[i];
      std::string cause;
      for (const auto& c : x.causes)
        if (c.category != "preempted") {
          cause = fmt::format("{} {} ({})", c.cause, FormatDuration(c.total_ns), Pct(c.total_ns, x.off_cpu_ns));
          break;
        }
      out += fmt::format("  {:<26} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9}  {}\n", Truncate(x.thread, 26),
                         FormatDuration(x.on_cpu_ns), FormatDuration(x.off_cpu_ns), FormatDuration(x.runnable_ns),
                         FormatDuration(x.blocked_ns), x.syscalls, x.samples, cause);
    }
    if (o_.threads.size() > opt.top) out += fmt::format("  ... {} more\n", o_.threads.size() - opt.top);
  }

  void Losses(std::string& out) const {
    Sep(out);
    out += fmt::format(
        "OS: incomplete. The kernel dropped {} records (its rings were full): thread time across those gaps counts "
        "as unknown, and {} system calls whose entry and exit fell on either side of a gap have no duration (not in "
        "the totals below)\n",
        o_.lost_records, o_.incomplete_syscalls);
  }

  // strata's own threads, apart: their time is strata's, not the program's.
  // The busiest are named (a program that runs through a launcher or a shell
  // script, pyenv's shims, has one flush thread per process it started), the
  // rest summed.
  void StrataThreads(std::string& out, const ReportOptions& opt) const {
    auto threads = o_.strata_threads;
    std::stable_sort(threads.begin(), threads.end(), [](const auto& a, const auto& b) { return a.on_cpu_ns > b.on_cpu_ns; });
    const size_t named = std::min(threads.size(), std::max<size_t>(1, std::min<size_t>(opt.top, 5)));
    std::string list;
    for (size_t i = 0; i < named; ++i) {
      const auto& x = threads[i];
      if (!list.empty()) list += "; ";
      list += fmt::format("{} ({}): {} on CPU, {} system calls, {} samples", x.thread, x.process,
                          FormatDuration(x.on_cpu_ns), x.syscalls, x.samples);
    }
    if (threads.size() > named) {
      int64_t cpu = 0;
      uint64_t calls = 0, samples = 0;
      for (size_t i = named; i < threads.size(); ++i) {
        cpu += threads[i].on_cpu_ns;
        calls += threads[i].syscalls;
        samples += threads[i].samples;
      }
      list += fmt::format("; {} more: {} on CPU, {} system calls, {} samples", threads.size() - named,
                          FormatDuration(cpu), calls, samples);
    }
    Sep(out);
    out += "OS: strata's own threads (not in the tables of this report): " + list + "\n";
  }

  void OffCpu(std::string& out, const ReportOptions& opt) const {
    Sep(out);
    out += fmt::format("OS: off-CPU time by cause\n  {:<28} {:<10} {:>9} {:>12} {:>12}\n", "cause", "category", "count",
                       "total", "max");
    for (size_t i = 0; i < o_.off_cpu.size() && i < opt.top; ++i) {
      const auto& c = o_.off_cpu[i];
      out += fmt::format("  {:<28} {:<10} {:>9} {:>12} {:>12}\n", Truncate(c.cause, 28), c.category, c.count,
                         FormatDuration(c.total_ns), FormatDuration(c.max_ns));
    }
  }

  void Syscalls(std::string& out, const ReportOptions& opt) const {
    Sep(out);
    out += fmt::format("OS: system calls\n  {:<22} {:>9} {:>7} {:>12} {:>11} {:>11} {:>11}\n", "name", "count", "errors",
                       "total", "mean", "p99", "max");
    for (size_t i = 0; i < o_.syscalls.size() && i < opt.top; ++i) {
      const auto& s = o_.syscalls[i];
      out += fmt::format("  {:<22} {:>9} {:>7} {:>12} {:>11} {:>11} {:>11}\n", Truncate(s.name, 22), s.count, s.errors,
                         FormatDuration(s.total_ns), FormatDuration(static_cast<int64_t>(s.mean_ns)),
                         FormatDuration(s.p99_ns), FormatDuration(s.max_ns));
    }
    if (o_.syscalls.size() > opt.top) out += fmt::format("  ... {} more\n", o_.syscalls.size() - opt.top);
  }

  void Steps(std::string& out, const ReportOptions& opt) const {
    Sep(out);
    out += fmt::format("OS: time inside steps (the step's thread)\n  {:>6} {:>11} {:>10} {:>10} {:>10} {:>10} {:>8}  {}\n",
                       "step", "duration", "on-CPU", "preempted", "blocked", "syscalls", "calls", "top syscall");
    for (size_t i = 0; i < o_.steps.size() && i < opt.top; ++i) {
      const auto& s = o_.steps[i];
      out += fmt::format("  {:>6} {:>11} {:>10} {:>10} {:>10} {:>10} {:>8}  {}\n", s.step, FormatDuration(s.dur),
                         FormatDuration(s.on_cpu_ns), FormatDuration(s.runnable_ns), FormatDuration(s.blocked_ns),
                         FormatDuration(s.syscall_ns), s.syscalls,
                         s.top_syscall.empty() ? "" : s.top_syscall + " " + FormatDuration(s.top_syscall_ns));
    }
    if (o_.steps.size() > opt.top) out += fmt::format("  ... {} more\n", o_.steps.size() - opt.top);
  }

  void Samples(std::string& out, const ReportOptions& opt) const {
    Sep(out);
    uint64_t own_samples = 0;
    for (const auto& x : o_.strata_threads) own_samples += x.samples;
    out += fmt::format("CPU samples: {}{}\n  {:<48} {:<18} {:>8} {:>7} {:>8} {:>7}\n", o_.samples,
                       own_samples ? fmt::format(" (and {} in strata's own threads)", own_samples) : "",
                       "function (innermost)",
                       "module", "self", "", "total", "");
    auto share = [this](uint64_t n) {
      return fmt::format("{:.1f}%", 100.0 * static_cast<double>(n) / static_cast<double>(std::max<uint64_t>(o_.samples, 1)));
    };
    for (size_t i = 0; i < o_.functions.size() && i < opt.top; ++i) {
      const auto& f = o_.functions[i];
      if (f.self == 0) break;
      out += fmt::format("  {:<48} {:<18} {:>8} {:>7} {:>8} {:>7}\n", Truncate(f.function, 48), Truncate(f.module, 18),
                         f.self, share(f.self), f.total, share(f.total));
    }
    if (!o_.python_functions.empty()) {
      out += fmt::format("\n  Python function (innermost Python frame: {} samples)\n", o_.python_samples);
      for (size_t i = 0; i < o_.python_functions.size() && i < opt.top; ++i) {
        const auto& f = o_.python_functions[i];
        if (f.self == 0) break;
        out += fmt::format("  {:<67} {:>8} {:>7} {:>8} {:>7}\n", Truncate(f.function, 67), f.self, share(f.self), f.total,
                           share(f.total));
      }
    }
    if (o_.ops.size() > 1 || (o_.ops.size() == 1 && o_.ops[0].name != "(no span)")) {
      out += fmt::format("\n  by innermost span/op          {:>8} {:>7}  top function\n", "samples", "");
      for (size_t i = 0; i < o_.ops.size() && i < opt.top; ++i) {
        const auto& p = o_.ops[i];
        out += fmt::format("  {:<30} {:>8} {:>7}  {}\n", Truncate(p.name, 30), p.samples, share(p.samples),
                           Truncate(p.top_function, 40));
      }
    }
    out += fmt::format("\n  by thread                     {:>8} {:>7}  top function\n", "samples", "");
    for (size_t i = 0; i < o_.sample_threads.size() && i < opt.top; ++i) {
      const auto& s = o_.sample_threads[i];
      out += fmt::format("  {:<30} {:>8} {:>7}  {}\n", Truncate(s.thread, 30), s.samples, share(s.samples),
                         Truncate(s.top_function, 40));
    }
  }

  analysis::OsSummary o_;
};

}  // namespace

std::unique_ptr<Section> MakeOsSection() { return std::make_unique<OsSection>(); }

}  // namespace strata::report

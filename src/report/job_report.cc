#include "report/job_report.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/units.h"

namespace strata::report {
namespace {

using nlohmann::json;

std::string Ranks(const std::vector<int64_t>& r) {
  if (r.empty()) return "-";
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) {
    // Runs of consecutive ranks as a-b.
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += j > i + 1 ? fmt::format("{}-{}", r[i], r[j]) : j == i + 1 ? fmt::format("{},{}", r[i], r[j])
                                                                   : std::to_string(r[i]);
    i = j;
  }
  return s;
}

std::string SignedDuration(int64_t ns) { return (ns < 0 ? "-" : "+") + HumanDuration(ns < 0 ? -ns : ns); }

// A member's figures from its own report (null members where it has none).
const json& At(const json& j, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* at = &j;
  for (const char* k : path) {
    if (!at->is_object()) return kNull;
    auto it = at->find(k);
    if (it == at->end()) return kNull;
    at = &*it;
  }
  return *at;
}
double Number(const json& j, std::initializer_list<const char*> path) {
  const json& v = At(j, path);
  return v.is_number() ? v.get<double>() : 0;
}
// A member's steps: all of them (the report's "steps"), else those its
// framework section counted.
const json& StepsOf(const json& report, const char* key) {
  const json& all = At(report, {"steps", key});
  return all.is_null() ? At(report, {"framework", "steps", key}) : all;
}

std::string TopFinding(const json& report, double* gain) {
  const json& f = At(report, {"findings"});
  *gain = 0;
  if (!f.is_array() || f.empty() || !f[0].is_object()) return "";
  *gain = Number(f[0], {"estimated_gain_pct"});
  const json& t = At(f[0], {"title"});
  return t.is_string() ? t.get<std::string>() : "";
}

}  // namespace

std::string ClocksText(const job::JobClocks& j, const std::vector<std::vector<int64_t>>& ranks_of_member) {
  std::string out = fmt::format("  {:<5} {:<16} {:<8} {:>22} {:>14} {:>9} {:>13}  {}\n", "clock", "host", "ranks",
                                "offset to reference", "wall clock off", "drift", "uncertainty", "from");
  for (size_t k = 0; k < j.clocks.size(); ++k) {
    const importers::MergeClock& c = j.clocks[k];
    std::vector<int64_t> r;
    for (size_t m = 0; m < ranks_of_member.size() && m < j.clock_of_member.size(); ++m)
      if (j.clock_of_member[m] == k) r.insert(r.end(), ranks_of_member[m].begin(), ranks_of_member[m].end());
    std::sort(r.begin(), r.end());
    std::string from = c.method;
    if (c.constraints)
      from += fmt::format(" ({} bounds{}{})", c.constraints,
                          c.dropped ? fmt::format(", {} contradicting the rest", c.dropped) : "",
                          c.via >= 0 ? fmt::format(", via clock {}", c.via) : "");
    if (c.violation_ns > 0) from += fmt::format("; they contradict each other by {}", HumanDuration(c.violation_ns));
    out += fmt::format("  {:<5} {:<16} {:<8} {:>22} {:>14} {:>9} {:>13}  {}\n", k, Truncate(c.host, 16), Ranks(r),
                       c.reference ? "reference" : fmt::format("{:.6f} s", static_cast<double>(c.map.offset_ns) / 1e9),
                       c.reference || !j.wall_known[k] ? "-" : SignedDuration(c.wall_offset_ns - c.map.offset_ns),
                       c.reference ? "-" : fmt::format("{:.2f} ppm", c.map.drift * 1e6),
                       c.reference ? "0" : c.uncertainty_ns < 0 ? "unknown" : "±" + HumanDuration(c.uncertainty_ns),
                       from);
  }
  const analysis::OrderCheck& check = j.check;
  if (check.pairs)
    out += fmt::format("  order: {} of {} bounds between clocks ({} from collectives, {} from messages) hold after the "
                       "merge{}\n",
                       check.pairs - check.violated, check.pairs, j.collective_bounds,
                       check.pairs - j.collective_bounds,
                       check.violated ? fmt::format(" (worst off by {})", HumanDuration(check.worst_ns)) : "");
  else if (j.clocks.size() > 1)
    out += "  no collectives or messages across clocks: offsets are the wall clocks' (as good as the hosts' NTP)\n";
  return out;
}

std::string JobReportText(const std::vector<job::MemberSummary>& members, const job::JobAnalysis& a,
                          const ReportOptions& opt) {
  std::set<int64_t> ranks;
  std::set<std::string> hosts;
  uint64_t events = 0;
  std::vector<std::vector<int64_t>> ranks_of;
  for (const job::MemberSummary& m : members) {
    ranks.insert(m.ranks.begin(), m.ranks.end());
    hosts.insert(m.host);
    events += m.events;
    ranks_of.push_back(m.ranks);
  }
  std::string out = fmt::format("Job: {} trace{}, {} rank{} on {} host{} ({} clock{}), {} events\n", members.size(),
                                members.size() == 1 ? "" : "s", ranks.size(), ranks.size() == 1 ? "" : "s",
                                hosts.size(), hosts.size() == 1 ? "" : "s", a.clocks.clocks.size(),
                                a.clocks.clocks.size() == 1 ? "" : "s", HumanCount(static_cast<double>(events)));
  out += ClocksText(a.clocks, ranks_of);
  out += "\nMembers (each one's own report: strata report TRACE)\n";
  out += fmt::format("  {:<32} {:<12} {:<6} {:>6} {:>10} {:>12}  {}\n", "trace", "host", "ranks", "steps", "step p50",
                     "samples/s", "top finding (est. gain)");
  for (size_t i = 0; i < members.size(); ++i) {
    const job::MemberSummary& m = members[i];
    double gain = 0;
    std::string top = TopFinding(m.report, &gain);
    double rate = Number(m.report, {"framework", "steps", "samples_per_s"});
    out += fmt::format("  {:<32} {:<12} {:<6} {:>6} {:>10} {:>12}  {}\n", Truncate(m.path, 32), Truncate(m.host, 12),
                       Ranks(m.ranks), StepsOf(m.report, "count").is_number() ? StepsOf(m.report, "count").get<int64_t>() : 0,
                       HumanDuration(StepsOf(m.report, "p50_ns").is_number() ? StepsOf(m.report, "p50_ns").get<double>() : 0),
                       rate > 0 ? fmt::format("{:.1f}", rate) : "-",
                       top.empty() ? "-" : fmt::format("{} ({:.1f}%)", Truncate(top, 90), gain));
  }
  out += "\n";
  CommsText(a.comms, opt, out);
  if (!a.straggler_withheld.empty()) out += "  straggler: none named: " + a.straggler_withheld + "\n";
  if (!a.comms.empty()) out += "\n";
  if (a.findings.empty()) {
    out += a.comms.empty() ? "Findings across ranks: none (no collectives of two or more ranks)\n"
                           : "Findings across ranks: none (no straggler; no rank waits for its collectives long)\n";
  } else {
    std::string f;
    FindingsText(a.findings, opt, f);
    out += "Findings across ranks" + f.substr(std::string("Findings").size());
  }
  return out;
}

json JobReportJson(const std::vector<job::MemberSummary>& members, const job::JobAnalysis& a, const ReportOptions& opt) {
  json ms = json::array();
  for (size_t i = 0; i < members.size(); ++i) {
    const job::MemberSummary& m = members[i];
    ms.push_back({{"path", m.path},
                  {"host", m.host},
                  {"clock", a.clocks.clock_of_member[i]},
                  {"ranks", m.ranks},
                  {"events", m.events},
                  {"steps", StepsOf(m.report, "count")},
                  {"step_p50_ns", StepsOf(m.report, "p50_ns")},
                  {"samples_per_s", At(m.report, {"framework", "steps", "samples_per_s"})},
                  {"report", m.report}});
  }
  json clocks = json::array();
  for (const importers::MergeClock& c : a.clocks.clocks) clocks.push_back(importers::MergeClockJson(c));
  const analysis::OrderCheck& check = a.clocks.check;
  json j = {{"job",
             {{"members", ms},
              {"clocks", clocks},
              {"order",
               {{"bounds", check.pairs},
                {"from_collectives", a.clocks.collective_bounds},
                {"violated", check.violated},
                {"worst_ns", check.worst_ns}}},
              {"straggler_withheld", a.straggler_withheld.empty() ? json(nullptr) : json(a.straggler_withheld)}}},
            {"ranks", CommsJson(a.comms, opt)},
            {"findings", FindingsJson(a.findings)}};
  return j;
}

}  // namespace strata::report

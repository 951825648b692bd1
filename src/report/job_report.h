// The report of a job of many ranks (`strata report TRACE TRACE...`, on local
// cores or a Dask cluster: cli/job_plan.h): its clocks, each member's steps
// and top finding (from the member's own report), the ranks' communication
// and the findings across ranks. Rendered from the members' summaries and
// their combination alone (job/), never from a model of the whole job.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/combine.h"
#include "job/summary.h"
#include "report/section.h"

namespace strata::report {

// The clock table `strata merge` prints too.
std::string ClocksText(const job::JobClocks& c, const std::vector<std::vector<int64_t>>& ranks_of_member);

std::string JobReportText(const std::vector<job::MemberSummary>& members, const job::JobAnalysis& a,
                          const ReportOptions& opt);
// {"job": {"members": [{"path", "host", "clock", "ranks", "events", "steps", "step_p50_ns",
//  "samples_per_s", "report"}], "clocks": [...], "order": {...}}, "ranks": {...}, "findings": [...]}
nlohmann::json JobReportJson(const std::vector<job::MemberSummary>& members, const job::JobAnalysis& a,
                             const ReportOptions& opt);

}  // namespace strata::report

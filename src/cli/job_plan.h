// The report of a job of many traces (job_cmd.cc): see there.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace strata::cli {

struct JobReportArgs {
  std::vector<std::string> traces;  // trace paths, or merged traces (their members)
  std::string cluster;              // a Dask scheduler's address; empty: local cores
  std::string worker_strata;        // the strata binary on the workers (default: this one's path)
  size_t jobs = 0;                  // local summaries at a time (0: the cores)
  size_t top = 20;
  bool json = false;
  std::string output;
  bool force = false;
  bool quiet = false;
};
int RunJobReport(const JobReportArgs& a);

}  // namespace strata::cli

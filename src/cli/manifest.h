// strata.json: the trace's manifest, written by `strata record`.
//
// It holds what the CTF streams cannot: how the trace was made (command, options,
// strata version), where (host, kernel, CPU, memory, rank/job environment), when
// (wall-clock and monotonic pairs at start and end, for aligning hosts later),
// what each collector could not do, and what was lost (per stream).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "cli/host_probe.h"

namespace strata::cli {

struct Manifest {
  std::vector<std::string> command;
  std::string cwd;
  std::string hostname;
  int64_t start_realtime_ns = 0;
  int64_t start_monotonic_ns = 0;
  std::string trace_uuid;
  HostPeaks host_peaks;
  nlohmann::json options = nlohmann::json::object();
  nlohmann::json collectors = nlohmann::json::array();  // {name, state, detail}
  // Collectors the supervisor enabled in CMD's processes, with what to record
  // when no process reports on them (why there is no data): name -> detail.
  std::map<std::string, std::string> silent_collectors;
  nlohmann::json extra = nlohmann::json::object();      // merged at top level
  // Filled by FinishManifest.
  uint64_t lost = 0;
  uint64_t bytes = 0;
};

Manifest NewManifest(const std::vector<std::string>& command);
void AddCollector(Manifest* m, const std::string& name, const std::string& state, const std::string& detail);
Status WriteManifest(const std::string& dir, const Manifest& m);
// Adds the end time, exit status, processes and per-stream loss counts, and
// what each in-process collector said (collector_status events; per collector,
// the worst state any process reported, with that process's detail).
Status FinishManifest(const std::string& dir, Manifest* m, int exit_status, int signal, const std::string& note);

}  // namespace strata::cli

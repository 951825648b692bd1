// strata.json: the trace's manifest, written by `strata record`.
//
// It holds what the CTF streams cannot: how the trace was made (command, options,
// strata version), where (host, kernel, CPU, memory, rank/job environment), when
// (wall-clock and monotonic pairs at start and end, for aligning hosts later),
// what each collector could not do, and what was lost (per stream).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "cli/host_probe.h"
#include "recorder/salvage.h"

namespace strata::cli {

// Room kept on the trace's file system for the final manifest, so that it is
// written even when the program fills the disk (manifest.cc).
struct ManifestReserve;

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
  // What each traced process's recorder published (recorder/supervision.h),
  // set before FinishManifest; `supervised` false when no process could hand
  // its buffers over (their losses at death are then unknown).
  std::vector<recorder::ProcessAccount> accounts;
  bool supervised = false;
  // Filled by FinishManifest.
  uint64_t lost = 0;
  uint64_t bytes = 0;
  struct Loss {
    uint64_t events = 0, bytes = 0;
  };
  Loss dropped, write_failed, unflushed, salvaged;
  std::string write_error;  // the last write failure's reason
  // Created by the first WriteManifest; the final manifest is written into it.
  mutable std::shared_ptr<ManifestReserve> reserve;
};

Manifest NewManifest(const std::vector<std::string>& command);
void AddCollector(Manifest* m, const std::string& name, const std::string& state, const std::string& detail);
// Writes strata.json (atomically: a temporary file renamed over it). The first
// call also sets room aside on the trace's file system for the final one.
Status WriteManifest(const std::string& dir, const Manifest& m);
// Adds the end time, exit status, processes and per-stream loss counts (why
// each event was lost: dropped on full buffers, a write that failed, unflushed
// when its process died; and what the supervisor wrote after a process died),
// and what each in-process collector said (collector_status events; per
// collector, the worst state any process reported, with that process's
// detail). Written into the room set aside at start, so a full disk cannot
// stop it; a shorter form is written if the full one would not fit.
Status FinishManifest(const std::string& dir, Manifest* m, int exit_status, int signal, const std::string& note);
// "N events lost" with the reasons, for the end of `strata record`.
std::string LossSummary(const Manifest& m);

}  // namespace strata::cli

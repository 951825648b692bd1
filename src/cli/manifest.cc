#include "cli/manifest.h"

#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <cstring>
#include <map>

#include "base/clock.h"
#include "base/files.h"
#include "cli/host_probe.h"
#include "format/ctf_reader.h"
#include "format/schema.h"
#include "format/tsdl.h"

namespace strata::cli {

using nlohmann::json;

namespace {

std::string CpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  }
  return "";
}

std::string OsRelease() {
  std::ifstream f("/etc/os-release");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  return "";
}

json Environment() {
  // Distributed-job identity, recorded now so that `strata merge` can later put
  // many ranks' traces on one time base.
  json e = json::object();
  for (const char* k : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "SLURM_JOB_ID",
                        "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"})
    if (const char* v = std::getenv(k)) e[k] = v;
  return e;
}

int StateRank(const std::string& s) {
  if (s == "ok") return 0;
  if (s == "partial") return 1;
  if (s == "unavailable") return 2;
  return 3;  // error, or a state this strata does not know
}

void MergeCollectorStatuses(Manifest* m,
                            const std::map<std::pair<uint64_t, std::string>, std::pair<std::string, std::string>>& st) {
  struct Agg {
    std::string state, detail;
    uint64_t pid = 0;
    int processes = 0;
  };
  std::map<std::string, Agg> by_name;
  for (const auto& [key, v] : st) {
    Agg& a = by_name[key.second];
    ++a.processes;
    if (a.processes == 1 || StateRank(v.first) > StateRank(a.state)) {
      a.state = v.first;
      a.detail = v.second;
      a.pid = key.first;
    }
  }
  for (const auto& [name, a] : by_name) {
    std::string detail = "pid " + std::to_string(a.pid) + ": " + a.detail;
    if (a.processes > 1) detail += " (" + std::to_string(a.processes) + " processes reported)";
    AddCollector(m, name, a.state, detail);
    for (auto& c : m->collectors)
      if (c["name"] == name) c["source"] = "process";
  }
  for (const auto& [name, why] : m->silent_collectors)
    if (!by_name.count(name)) AddCollector(m, name, "unavailable", why);
}

}  // namespace

Manifest NewManifest(const std::vector<std::string>& command) {
  Manifest m;
  m.command = command;
  char buf[4096];
  if (::getcwd(buf, sizeof buf)) m.cwd = buf;
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  m.hostname = host;
  m.start_realtime_ns = static_cast<int64_t>(RealtimeNs());
  m.start_monotonic_ns = static_cast<int64_t>(MonotonicNs());
  AddCollector(&m, "recorder", "ok", "in-process recorder (libstrata) preloaded into CMD and its children");
  // Peaks for rooflines of host work: measured once per machine, then cached.
  m.host_peaks = ProbeHost(CpuModel(), static_cast<unsigned>(::sysconf(_SC_NPROCESSORS_ONLN)));
  return m;
}

void AddCollector(Manifest* m, const std::string& name, const std::string& state, const std::string& detail) {
  for (auto& c : m->collectors)
    if (c["name"] == name) {
      c["state"] = state;
      c["detail"] = detail;
      return;
    }
  m->collectors.push_back({{"name", name}, {"state", state}, {"detail", detail}});
}

namespace {

json ToJson(const Manifest& m) {
  struct utsname u;
  ::uname(&u);
  struct sysinfo si;
  ::sysinfo(&si);
  json j = {
      {"strata_version", STRATA_VERSION},
      {"schema", {{"major", format::kSchemaMajor}, {"minor", format::kSchemaMinor}}},
      {"trace_uuid", m.trace_uuid},
      {"command", m.command},
      {"cwd", m.cwd},
      {"host",
       {{"hostname", m.hostname},
        {"kernel", std::string(u.sysname) + " " + u.release},
        {"machine", u.machine},
        {"os", OsRelease()},
        {"cpu_model", CpuModel()},
        {"cpu_count", ::sysconf(_SC_NPROCESSORS_ONLN)},
        {"memory_bytes", static_cast<uint64_t>(si.totalram) * si.mem_unit},
        {"clocksource", TscIsReliable() ? "tsc" : "monotonic"},
        {"peak_flops_f32", m.host_peaks.flops_f32},
        {"memory_bandwidth", m.host_peaks.memory_bandwidth},
        {"vector_isa", m.host_peaks.isa}}},
      {"environment", Environment()},
      {"clock",
       {{"trace_clock", "CLOCK_MONOTONIC"},
        {"start", {{"realtime_ns", m.start_realtime_ns}, {"monotonic_ns", m.start_monotonic_ns}}}}},
      {"options", m.options},
      {"collectors", m.collectors},
  };
  for (auto& [k, v] : m.extra.items()) j[k] = v;
  return j;
}

}  // namespace

Status WriteManifest(const std::string& dir, const Manifest& m) {
  // A command line or path need not be UTF-8 (a Latin-1 file name): such bytes
  // are written as U+FFFD rather than aborting on json's type_error.
  return WriteFileAtomic(JoinPath(dir, "strata.json"), ToJson(m).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

Status FinishManifest(const std::string& dir, Manifest* m, int exit_status, int signal, const std::string& note) {
  json streams = json::array();
  json processes = json::array();
  std::map<std::pair<uint64_t, std::string>, std::pair<std::string, std::string>> statuses;
  std::string ctf = JoinPath(dir, "ctf");
  auto text = ReadFile(JoinPath(ctf, "metadata"));
  m->lost = 0;
  m->bytes = 0;
  if (text.ok()) {
    auto md = format::ParseMetadata(*text);
    auto files = ListFiles(ctf);
    if (md.ok() && files.ok()) {
      for (const std::string& name : *files) {
        if (name == "metadata" || name[0] == '.') continue;
        std::string path = JoinPath(ctf, name);
        auto map = MappedFile::Open(path);
        if (!map.ok()) continue;
        m->bytes += map->size();
        format::StreamFileReader r(*md, map->data(), map->size(), path);
        format::Packet pk;
        uint64_t lost = 0, packets = 0;
        json proc;
        uint64_t pid = 0;
        while (r.NextPacket(&pk)) {
          ++packets;
          lost = pk.discarded;
          if (pk.stream_id != format::kProcessStream) continue;
          // Process streams are small: decode them for the process list.
          const auto& s = md->streams[pk.stream_id];
          pid = pk.context.empty() ? 0 : pk.context[0];
          format::EventView ev;
          while (r.NextEvent(&ev)) {
            const std::string& en = s.events[ev.id].name;
            const uint8_t* p = ev.payload;
            const uint8_t* end = ev.payload + ev.size;
            auto str = [&]() {
              if (p >= end) return std::string();
              const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
              size_t n = nul ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - p) : static_cast<size_t>(end - p);
              std::string out(reinterpret_cast<const char*>(p), n);
              p += n + 1;
              return out;
            };
            if (en == "collector_status") {
              std::string cname = str(), state = str(), detail = str();
              statuses[{pid, cname}] = {state, detail};  // a process's last word on a collector counts
            } else if (en == "process_info" && ev.size >= 12) {
              p = ev.payload + 12;
              proc["pid"] = pid;
              proc["ppid"] = format::ReadLE<uint32_t>(ev.payload);
              proc["exe"] = str();
              proc["cmdline"] = str();
            }
          }
        }
        m->lost += lost;
        streams.push_back({{"file", "ctf/" + name}, {"packets", packets}, {"lost_events", lost}});
        if (!proc.is_null()) processes.push_back(proc);
      }
    }
  }
  MergeCollectorStatuses(m, statuses);
  if (processes.empty()) {
    AddCollector(m, "recorder", "unavailable",
                 "no process of CMD loaded libstrata (a statically linked program, a setuid binary, or LD_PRELOAD "
                 "cleared by the program)");
  }
  m->extra["exit_status"] = exit_status;
  if (signal) m->extra["signal"] = signal;
  if (!note.empty()) m->extra["note"] = note;
  m->extra["end"] = {{"realtime_ns", RealtimeNs()}, {"monotonic_ns", MonotonicNs()}};
  m->extra["processes"] = processes;
  m->extra["streams"] = streams;
  m->extra["lost_events"] = m->lost;
  m->extra["trace_bytes"] = m->bytes;
  return WriteManifest(dir, *m);
}

}  // namespace strata::cli

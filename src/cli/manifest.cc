#include "cli/manifest.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/files.h"
#include "cli/host_probe.h"
#include "format/ctf_reader.h"
#include "format/ctf_writer.h"
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

// This boot of this host: processes that share it share CLOCK_MONOTONIC (the
// trace clock), whatever their hostname says (containers).
std::string BootId() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(f, id);
  return id;
}

// The time namespace: processes in different ones have CLOCK_MONOTONIC offset
// from each other even on one boot (containers started with one).
std::string TimeNamespace() {
  char buf[64] = {0};
  ssize_t n = ::readlink("/proc/self/ns/time", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

json Environment() {
  // Distributed-job identity, recorded now so that `strata merge` can later put
  // many ranks' traces on one time base.
  json e = json::object();
  for (const char* k : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "SLURM_JOB_ID",
                        "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"})
    if (const char* v = ::secure_getenv(k)) e[k] = v;
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
  m.start_realtime_ns = WallClockNs();
  m.start_monotonic_ns = static_cast<int64_t>(MonotonicNs());
  AddCollector(&m, "recorder", "ok", "in-process recorder (libstrata) preloaded into CMD and its children");
  // The supervisor's own stream writers (the OS level) report what they could not write.
  format::EnableWriteLossLedger();
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
        {"boot_id", BootId()},
        {"time_namespace", TimeNamespace()},
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

// --- the reserve -------------------------------------------------------------------

// A file of preallocated blocks in the trace directory, taken when recording
// starts: the final manifest is written into its blocks (which need no new
// space), cut to length, and renamed over strata.json. A program that fills the
// disk therefore cannot keep the manifest from being finalized, and no
// temporary file is left behind.
struct ManifestReserve {
  std::string path;
  int fd = -1;
  size_t bytes = 0;
  ~ManifestReserve() {
    if (fd >= 0) ::close(fd);
  }
};

namespace {

constexpr const char* kReserveName = ".strata.json.reserve";

std::shared_ptr<ManifestReserve> CreateReserve(const std::string& dir, size_t manifest_bytes) {
  auto r = std::make_shared<ManifestReserve>();
  r->path = JoinPath(dir, kReserveName);
  // A sixteenth of the free space, between 64 KiB and 1 MiB, and room for four
  // times the manifest as it starts (the compact final form needs less).
  struct statvfs vfs;
  uint64_t free_bytes = ::statvfs(dir.c_str(), &vfs) == 0 ? uint64_t{vfs.f_bavail} * vfs.f_frsize : 0;
  size_t want = static_cast<size_t>(std::clamp<uint64_t>(free_bytes / 16, 64 << 10, 1 << 20));
  want = std::max(want, 4 * manifest_bytes + (64 << 10));
  ::unlink(r->path.c_str());  // one left by a supervisor that was killed
  int fd = ::open(r->path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return r;
  int err = ::posix_fallocate(fd, 0, static_cast<off_t>(want));
  if (err == EOPNOTSUPP || err == EINVAL) {
    // No fallocate here: write the blocks instead.
    std::string zeros(64 << 10, '\0');
    err = 0;
    for (size_t at = 0; at < want && err == 0; at += zeros.size()) err = WriteAll(fd, zeros.data(), std::min(zeros.size(), want - at));
  }
  if (err != 0) {
    ::close(fd);
    ::unlink(r->path.c_str());
    return r;
  }
  r->fd = fd;
  r->bytes = want;
  return r;
}

// The manifest without its longest lists: what the reserve always holds.
json CompactForm(const json& full) {
  json j = full;
  auto trim = [&j](const char* key, auto keep) {
    if (!j.contains(key) || !j[key].is_array()) return;
    json kept = json::array();
    size_t omitted = 0;
    for (const auto& e : j[key]) {
      if (keep(e) && kept.size() < 64) kept.push_back(e);
      else ++omitted;
    }
    j[key] = kept;
    if (omitted) j[std::string(key) + "_omitted"] = omitted;
  };
  trim("streams", [](const json& e) { return e.value("lost_events", uint64_t{0}) > 0 || e.contains("salvaged"); });
  trim("processes", [](const json& e) { return e.value("end", std::string()) != "exited"; });
  return j;
}

bool WriteInto(ManifestReserve& r, const std::string& text) {
  if (r.fd < 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::pwrite(r.fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return ::ftruncate(r.fd, static_cast<off_t>(text.size())) == 0 && ::fsync(r.fd) == 0;
}

Status WriteFinal(const std::string& dir, const Manifest& m, const json& j) {
  std::string path = JoinPath(dir, "strata.json");
  std::string text = j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  if (m.reserve && m.reserve->fd >= 0) {
    ManifestReserve& r = *m.reserve;
    bool ok = WriteInto(r, text);
    if (!ok) {
      std::string compact = CompactForm(j).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      if (compact.size() > r.bytes) {
        // The totals alone: the reserve holds four times the initial manifest.
        json c = CompactForm(j);
        c.erase("streams");
        c.erase("processes");
        c["lists_omitted"] = "no room on the file system for the per-stream and per-process lists";
        compact = c.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      }
      ok = WriteInto(r, compact);
    }
    ::close(r.fd);
    r.fd = -1;
    if (ok && ::rename(r.path.c_str(), path.c_str()) == 0) return OkStatus();
    ::unlink(r.path.c_str());
  }
  Status st = WriteFileAtomic(path, text);
  if (!st.ok()) ::unlink((path + ".tmp").c_str());
  return st;
}

std::string Count(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

json LossJson(uint64_t events, uint64_t bytes) { return {{"events", events}, {"bytes", bytes}}; }

}  // namespace

Status WriteManifest(const std::string& dir, const Manifest& m) {
  std::string text = ToJson(m).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (!m.reserve) m.reserve = CreateReserve(dir, text.size());
  return WriteFileAtomic(JoinPath(dir, "strata.json"), text);
}

Status FinishManifest(const std::string& dir, Manifest* m, int exit_status, int signal, const std::string& note) {
  json streams = json::array();
  json processes = json::array();
  std::map<std::pair<uint64_t, std::string>, std::pair<std::string, std::string>> statuses;
  std::string ctf = JoinPath(dir, "ctf");
  auto text = ReadFile(JoinPath(ctf, "metadata"));
  m->lost = 0;
  m->bytes = 0;
  m->dropped = m->write_failed = m->unflushed = m->salvaged = {};
  // What the recorders published, by stream file; and the supervisor's own
  // writers' failures (the OS level), by path.
  std::map<std::string, std::pair<const recorder::StreamAccount*, const recorder::ProcessAccount*>> by_file;
  for (const auto& p : m->accounts)
    for (const auto& s : p.streams)
      if (!s.file.empty()) by_file[s.file] = {&s, &p};
  std::map<std::string, format::WriteLoss> ledger;
  for (const auto& l : format::WriteLossLedger()) ledger[l.path.substr(l.path.rfind('/') + 1)] = l;
  auto add_loss = [m](json& e, uint64_t dropped_ev, uint64_t dropped_b, uint64_t failed_ev, uint64_t failed_b, int err,
                      uint64_t unflushed_ev, uint64_t unflushed_b, uint64_t salvaged_ev, uint64_t salvaged_b) {
    uint64_t lost = dropped_ev + failed_ev + unflushed_ev;
    e["lost_events"] = lost;
    if (lost > 0) {
      json l = json::object();
      if (dropped_ev) l["dropped"] = LossJson(dropped_ev, dropped_b);
      if (failed_ev || failed_b) {
        l["write_failed"] = LossJson(failed_ev, failed_b);
        if (err) l["write_failed"]["error"] = std::strerror(err);
      }
      if (unflushed_ev || unflushed_b) l["unflushed_at_death"] = LossJson(unflushed_ev, unflushed_b);
      e["lost"] = l;
    }
    if (salvaged_ev) e["salvaged"] = LossJson(salvaged_ev, salvaged_b);
    m->lost += lost;
    m->dropped.events += dropped_ev;
    m->dropped.bytes += dropped_b;
    m->write_failed.events += failed_ev;
    m->write_failed.bytes += failed_b;
    if (err) m->write_error = std::strerror(err);
    m->unflushed.events += unflushed_ev;
    m->unflushed.bytes += unflushed_b;
    m->salvaged.events += salvaged_ev;
    m->salvaged.bytes += salvaged_b;
  };
  std::map<std::string, bool> file_seen;
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
        // Packet headers only (events are read for process streams alone).
        format::StreamFileReader r(*md, map->data(), map->size(), path);
        format::Packet pk;
        uint64_t lost = 0, packets = 0, instance = 0;
        json proc;
        uint64_t pid = 0;
        while (r.NextPacket(&pk)) {
          ++packets;
          lost = std::max(lost, pk.discarded);
          if (pk.stream_id != format::kProcessStream) continue;
          // Process streams are small: decode them for the process list.
          const auto& s = md->streams[pk.stream_id];
          pid = pk.context.empty() ? 0 : pk.context[0];
          instance = pk.context.size() > 1 ? pk.context[1] : 0;
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
            } else if (en == "process_rank" && ev.size >= 24) {
              auto num = [&](size_t at) { return static_cast<int64_t>(format::ReadLE<uint64_t>(ev.payload + at)); };
              p = ev.payload + 24;
              proc["rank"] = num(0);
              if (num(8) >= 0) proc["local_rank"] = num(8);
              if (num(16) >= 0) proc["world_size"] = num(16);
              proc["rank_from"] = str();
              if (std::string job = str(); !job.empty()) proc["job"] = job;
            }
          }
        }
        json e = {{"file", "ctf/" + name}, {"packets", packets}, {"bytes", map->size()}};
        if (r.damaged_packets()) e["damaged_packets"] = r.damaged_packets();
        auto acc = by_file.find(name);
        if (acc != by_file.end()) {
          const recorder::StreamAccount& a = *acc->second.first;
          file_seen[name] = true;
          e["events"] = a.events_written + a.salvaged_events;
          add_loss(e, a.dropped_events, a.dropped_bytes, a.write_failed_events, a.write_failed_bytes, a.write_errno,
                   a.unflushed_events, a.unflushed_bytes, a.salvaged_events, a.salvaged_bytes);
        } else {
          // Not a supervised recorder's stream: its own count, and what the
          // supervisor could not write of it.
          auto l = ledger.find(name);
          uint64_t failed = l != ledger.end() ? l->second.events : 0;
          uint64_t in_band = lost >= failed ? lost - failed : lost;  // later packets carry failed writes too
          add_loss(e, in_band, 0, failed, l != ledger.end() ? l->second.bytes : 0,
                   l != ledger.end() ? l->second.error : 0, 0, 0, 0, 0);
        }
        streams.push_back(e);
        if (!proc.is_null()) {
          proc["instance"] = fmt::format("{:016x}", instance);
          for (const auto& a : m->accounts)
            if (a.pid == pid && a.instance == instance) {
              proc["end"] = a.end;
              if (!a.note.empty()) proc["note"] = a.note;
            }
          if (!proc.contains("end") && m->supervised) proc["end"] = "unknown";
          processes.push_back(proc);
        }
      }
    }
  }
  // Streams that lost events without ever reaching a file (it could not be
  // created, or the disk was full from the start).
  for (const auto& p : m->accounts)
    for (const auto& a : p.streams) {
      if ((!a.file.empty() && file_seen.count(a.file)) || (a.LostEvents() == 0 && a.salvaged_events == 0)) continue;
      json e = {{"file", a.file.empty() ? "" : "ctf/" + a.file}, {"pid", p.pid}, {"kind", a.kind}, {"packets", 0}};
      if (a.tid) e["tid"] = a.tid;
      add_loss(e, a.dropped_events, a.dropped_bytes, a.write_failed_events, a.write_failed_bytes, a.write_errno,
               a.unflushed_events, a.unflushed_bytes, a.salvaged_events, a.salvaged_bytes);
      streams.push_back(e);
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
  m->extra["end"] = {{"realtime_ns", WallClockNs()}, {"monotonic_ns", MonotonicNs()}};
  m->extra["processes"] = processes;
  m->extra["streams"] = streams;
  m->extra["lost_events"] = m->lost;
  json loss = {{"dropped", LossJson(m->dropped.events, m->dropped.bytes)},
               {"write_failed", LossJson(m->write_failed.events, m->write_failed.bytes)},
               {"unflushed_at_death", LossJson(m->unflushed.events, m->unflushed.bytes)},
               {"salvaged", LossJson(m->salvaged.events, m->salvaged.bytes)},
               {"supervised", m->supervised}};
  if (!m->write_error.empty()) loss["write_failed"]["error"] = m->write_error;
  if (!m->supervised)
    loss["note"] = "the processes' buffers were not handed to strata record: what a killed process had buffered is "
                   "neither in the trace nor counted";
  m->extra["loss"] = loss;
  m->extra["trace_bytes"] = m->bytes;
  return WriteFinal(dir, *m, ToJson(*m));
}

std::string LossSummary(const Manifest& m) {
  std::string out = Count(m.lost) + " events lost";
  std::vector<std::string> why;
  if (m.dropped.events) why.push_back(Count(m.dropped.events) + " dropped (buffers full)");
  if (m.write_failed.events || m.write_failed.bytes)
    why.push_back(Count(m.write_failed.events) + " not written (" +
                  (m.write_error.empty() ? std::string("write failed") : m.write_error) + ")");
  if (m.unflushed.events || m.unflushed.bytes)
    why.push_back(Count(m.unflushed.events) + " unflushed when their process died");
  if (!why.empty()) {
    out += ": ";
    for (size_t i = 0; i < why.size(); ++i) out += (i ? ", " : "") + why[i];
  }
  if (m.salvaged.events)
    out += "; " + Count(m.salvaged.events) + " written by strata record from the buffers of processes that died";
  return out;
}

}  // namespace strata::cli

// Import throughput and peak memory of one trace file or directory, for bench/bench_import.sh:
//   strata_import_bench PATH [--repeat N] [--window BYTES] [--digest] [--no-fast-path]
// Prints one JSON line: bytes (uncompressed), seconds (best and median of N,
// wall and CPU), MB/s, events and events/s (wall), peak RSS. CPU time is this
// process's: the LTTng importer reads in a child process, so compare its wall time. --digest adds a hash of every model table, so
// that an optimized importer can be checked to build the identical model.
#include <sys/resource.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "importers/kineto/byte_source.h"
#include "importers/load.h"

namespace {

// FNV-1a over raw bytes; order-sensitive on purpose (string ids, row order).
struct Digest {
  uint64_t h = 1469598103934665603ull;
  void Bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  template <typename C>
  void Col(const C& v) {
    uint64_t n = v.size();
    Bytes(&n, sizeof n);
    if (!v.empty()) Bytes(v.data(), v.size() * sizeof(v[0]));
  }
  void Str(std::string_view s) {
    uint64_t n = s.size();
    Bytes(&n, sizeof n);
    Bytes(s.data(), s.size());
  }
};

template <typename T>
void Pod(Digest& d, const T& v) {
  d.Bytes(&v, sizeof v);
}

std::string ModelDigest(const strata::model::Trace& t) {
  std::string out;
  auto add = [&out](const char* name, const Digest& d) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s\"%s\": \"%016llx\"", out.empty() ? "" : ", ", name,
                  static_cast<unsigned long long>(d.h));
    out += buf;
  };
  Digest strings;
  for (size_t i = 0; i < t.strings.size(); ++i) strings.Str(t.strings.Get(static_cast<strata::model::StringId>(i)));
  add("strings", strings);
  Digest procs;
  for (const auto& p : t.processes) {
    Pod(procs, p.pid), Pod(procs, p.instance), Pod(procs, p.ppid), Pod(procs, p.name), Pod(procs, p.cmdline);
    Pod(procs, p.start_realtime_ns), Pod(procs, p.rank), Pod(procs, p.is_device), Pod(procs, p.device);
  }
  add("processes", procs);
  Digest tracks;
  for (const auto& k : t.tracks) {
    Pod(tracks, k.kind), Pod(tracks, k.process), Pod(tracks, k.tid), Pod(tracks, k.name), Pod(tracks, k.device);
    Pod(tracks, k.events), Pod(tracks, k.lost);
  }
  add("tracks", tracks);
  Digest s;
  s.Col(t.slices.ts), s.Col(t.slices.dur), s.Col(t.slices.track), s.Col(t.slices.name), s.Col(t.slices.kind);
  s.Col(t.slices.depth), s.Col(t.slices.parent), s.Col(t.slices.arg);
  add("slices", s);
  Digest dv;
  const auto& d = t.device;
  dv.Col(d.slice), dv.Col(d.device), dv.Col(d.stream), dv.Col(d.correlation), dv.Col(d.launch), dv.Col(d.bytes);
  dv.Col(d.copy_kind), dv.Col(d.pinned), dv.Col(d.grid), dv.Col(d.block), dv.Col(d.shared_mem), dv.Col(d.registers);
  dv.Col(d.occupancy);
  add("device", dv);
  Digest other;
  other.Col(t.instants.ts), other.Col(t.instants.track), other.Col(t.instants.name);
  for (const auto& c : t.counter_series) Pod(other, c.name), Pod(other, c.process), Pod(other, c.unit);
  other.Col(t.counters.series), other.Col(t.counters.ts), other.Col(t.counters.value);
  other.Col(t.memory.ts), other.Col(t.memory.track), other.Col(t.memory.device), other.Col(t.memory.addr);
  other.Col(t.memory.bytes), other.Col(t.memory.total_allocated), other.Col(t.memory.total_reserved);
  for (const auto& v : t.devices) other.Str(v.name), Pod(other, v.id), other.Str(v.vendor), other.Str(v.api);
  Pod(other, t.clock_offset_ns), other.Str(t.hostname), Pod(other, t.source_fractional_us), Pod(other, t.events_read);
  add("other", other);
  Digest flows;
  flows.Col(t.flows.id), flows.Col(t.flows.from), flows.Col(t.flows.to);
  add("flows", flows);
  Digest args;
  args.Col(t.args.slice), args.Col(t.args.key), args.Col(t.args.str), args.Col(t.args.num);
  add("args", args);
  Digest warnings;
  for (const auto& w : t.warnings) warnings.Str(w);
  add("warnings", warnings);
  return "{" + out + "}";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [--repeat N] [--window BYTES] [--digest] [--no-fast-path]\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  int repeat = 1;
  bool digest = false;
  strata::importers::LoadOptions opt;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--window") == 0 && i + 1 < argc) opt.json_window = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--digest") == 0) digest = true;
    else if (std::strcmp(argv[i], "--no-fast-path") == 0) opt.json_fast_path = false;
    else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  // Uncompressed size: what the throughput is measured against.
  uint64_t bytes = 0;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    // A trace directory (strata's, LTTng's): the bytes of its files.
    for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec))
      if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  } else {
    auto src = strata::importers::kineto::OpenByteSource(path);
    if (!src.ok()) {
      std::fprintf(stderr, "%s\n", src.status().message().c_str());
      return 1;
    }
    static char buf[1 << 20];
    for (;;) {
      auto n = (*src)->Read(buf, sizeof buf);
      if (!n.ok() || *n == 0) break;
      bytes += *n;
    }
  }
  auto cpu_now = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  };
  std::vector<double> wall, cpu;
  long first_rss_kb = 0;
  size_t slices = 0;
  uint64_t events = 0;
  std::string model_digest;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpu_now();
    auto t = strata::importers::LoadTrace(path, opt);
    double c1 = cpu_now();
    auto t1 = std::chrono::steady_clock::now();
    cpu.push_back(c1 - c0);
    wall.push_back(std::chrono::duration<double>(t1 - t0).count());
    if (r == 0) {
      rusage ru0;
      getrusage(RUSAGE_SELF, &ru0);
      first_rss_kb = ru0.ru_maxrss;  // peak of one import, model included
    }
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.status().message().c_str());
      return 1;
    }
    slices = t->slices.size();
    events = t->events_read;
    if (digest && r == 0) model_digest = ModelDigest(*t);
  }
  double best = *std::min_element(wall.begin(), wall.end()), best_cpu = *std::min_element(cpu.begin(), cpu.end());
  double med = Median(wall), med_cpu = Median(cpu);
  std::printf(
      "{\"file\": \"%s\", \"bytes\": %llu, \"slices\": %zu, \"runs\": %d, \"wall_s\": %.4f, \"cpu_s\": %.4f, "
      "\"mb_per_s_wall\": %.1f, \"mb_per_s_cpu\": %.1f, \"median_cpu_s\": %.4f, \"median_mb_per_s_cpu\": %.1f, "
      "\"median_wall_s\": %.4f, \"events\": %llu, \"events_per_s_wall\": %.0f, \"peak_rss_bytes\": %lld%s%s}\n",
      path.c_str(), static_cast<unsigned long long>(bytes), slices, repeat, best, best_cpu, bytes / best / 1e6,
      bytes / best_cpu / 1e6, med_cpu, bytes / med_cpu / 1e6, med, static_cast<unsigned long long>(events),
      static_cast<double>(events) / best, static_cast<long long>(first_rss_kb) * 1024,
      digest ? ", \"digest\": " : "", model_digest.c_str());
  return 0;
}

// Faults a recording must survive without losing events silently or leaving
// anything half-written (issue #16, item 8): a full disk, SIGKILL of a program
// that saturates its buffers, a damaged stream file, a damaged manifest. Each
// test is the reproduction from the issue, with an exact account: every event
// the program emitted is either in the trace or counted as lost, with its reason.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "format/ctf_reader.h"
#include "format/schema.h"
#include "format/tsdl.h"
#include "tests/testing.h"

namespace strata {
namespace {

using nlohmann::json;
using testing::Load;
using testing::Record;
using testing::RunCommand;
using testing::StrataBin;
using testing::TempDir;
using testing::TestProgram;

json Manifest(const std::string& dir) {
  auto text = ReadFile(dir + "/strata.json");
  EXPECT_TRUE(text.ok()) << dir;
  return text.ok() ? json::parse(*text, nullptr, false) : json();
}

struct StreamFile {
  uint32_t tid = 0;
  std::vector<double> counters;  // the counter values, in stream order
  uint64_t events = 0;
  std::vector<uint64_t> packet_events;  // events per packet
  std::vector<size_t> packet_offsets;
};

// Every thread stream file of a trace, read with the format reader.
std::map<std::string, StreamFile> ThreadFiles(const std::string& dir) {
  std::map<std::string, StreamFile> out;
  std::string ctf = dir + "/ctf";
  auto text = ReadFile(ctf + "/metadata");
  EXPECT_TRUE(text.ok());
  if (!text.ok()) return out;
  auto md = format::ParseMetadata(*text);
  EXPECT_TRUE(md.ok());
  std::map<uint32_t, int> counter_ids;  // event id -> payload form: 0 f64, 1 i32, 2 i16
  for (const auto& e : md->streams[format::kThreadStream].events) {
    if (e.name == "counter") counter_ids[e.id] = 0;
    if (e.name == "counter16") counter_ids[e.id] = 1;
    if (e.name == "counter8") counter_ids[e.id] = 2;
  }
  auto files = ListFiles(ctf);
  for (const auto& f : *files) {
    if (f.rfind("thread-", 0) != 0) continue;
    auto map = MappedFile::Open(ctf + "/" + f);
    if (!map.ok() || map->size() == 0) {
      out[f];
      continue;
    }
    format::StreamFileReader r(*md, map->data(), map->size(), f);
    format::Packet pk;
    format::EventView ev;
    StreamFile& s = out[f];
    while (r.NextPacket(&pk)) {
      s.tid = static_cast<uint32_t>(pk.context[1]);
      s.packet_offsets.push_back(pk.offset);
      s.packet_events.push_back(0);
      while (r.NextEvent(&ev)) {
        ++s.events;
        ++s.packet_events.back();
        auto it = counter_ids.find(ev.id);
        if (it == counter_ids.end()) continue;
        if (it->second == 0) {
          double v;
          std::memcpy(&v, ev.payload + 4, 8);
          s.counters.push_back(v);
        } else if (it->second == 1) {
          int32_t v;
          std::memcpy(&v, ev.payload + 2, 4);
          s.counters.push_back(v);
        } else {
          int16_t v;
          std::memcpy(&v, ev.payload + 2, 2);
          s.counters.push_back(v);
        }
      }
    }
    EXPECT_EQ(r.damaged_packets(), 0u) << f;
  }
  return out;
}

// The manifest's entry for a stream file ("ctf/NAME"), or null.
json StreamEntry(const json& m, const std::string& file) {
  for (const auto& s : m["streams"])
    if (s.value("file", std::string()) == "ctf/" + file) return s;
  return json();
}

// Files anywhere under `dir` that a finished recording must not leave.
std::vector<std::string> Leftovers(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.ends_with(".tmp") || n.find("reserve") != std::string::npos) out.push_back(e.path().string());
  }
  return out;
}

// What an emitter run with --progress had emitted, per thread id.
std::map<uint32_t, uint64_t> Progress(const std::string& path, int threads) {
  std::map<uint32_t, uint64_t> out;
  auto text = ReadFile(path);
  EXPECT_TRUE(text.ok());
  if (!text.ok() || text->size() < static_cast<size_t>(threads) * 16) return out;
  for (int t = 0; t < threads; ++t) {
    uint64_t tid, n;
    std::memcpy(&tid, text->data() + t * 16, 8);
    std::memcpy(&n, text->data() + t * 16 + 8, 8);
    out[static_cast<uint32_t>(tid)] = n;
  }
  return out;
}

// Reproduction: "recording into a 2 MB filesystem, the program emitted 140.9M
// events, strata said 'trace written (2.0 MiB, 0 events lost)', the report
// showed 0 events, babeltrace2 could not open the result, strata.json was stale
// and an empty strata.json.tmp was left."
TEST(FaultLoss, FullDiskLossIsCountedAndWhatWasWrittenReads) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a 16 MiB tmpfs (the full-disk reproduction)";
  std::string mnt = TempDir("full_disk");
  std::filesystem::create_directories(mnt);
  // 16 MiB, not the reproduction's 2: a flush cycle that falls behind (a
  // loaded machine, ASan) writes a packet of up to 4 MiB per stream
  // (recorder/flusher.cc kMaxPendingBytes), so on 2 MiB the emitters' first
  // packets could both be refused and nothing would be left to read back. The
  // two emitters write ~58 MB, so the disk still fills.
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16m"), 0) << std::strerror(errno);
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  std::string trace = mnt + "/trace";
  constexpr uint64_t kEvents = 3'000'000;
  // (--no-os: the OS level's streams would otherwise race the emitters for the
  // room, and on a loaded machine fill it before the emitters' first flush.)
  auto r = Record(trace, {TestProgram("emitter"), "2", std::to_string(kEvents), "--exit-code", "3"}, {"--no-os"});
  // The program's exit status is kept, and the loss is said at the end.
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("not written (No space left on device)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(" 0 events lost"), std::string::npos) << r.err;
  // Nothing half-written: no temporary file, no reserve, a final manifest.
  EXPECT_EQ(Leftovers(trace), std::vector<std::string>{});
  json m = Manifest(trace);
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["exit_status"], 3);
  EXPECT_GT(m["loss"]["write_failed"]["events"].get<uint64_t>(), 0u);
  EXPECT_EQ(m["loss"]["write_failed"]["error"], "No space left on device");
  EXPECT_EQ(m["lost_events"].get<uint64_t>(), m["loss"]["dropped"]["events"].get<uint64_t>() +
                                                  m["loss"]["write_failed"]["events"].get<uint64_t>() +
                                                  m["loss"]["unflushed_at_death"]["events"].get<uint64_t>());
  // Every event of each emitter thread is in its stream file or counted lost.
  int emitters = 0;
  uint64_t in_files = 0;
  for (const auto& [file, s] : ThreadFiles(trace)) {
    json e = StreamEntry(m, file);
    ASSERT_TRUE(e.is_object()) << file;
    uint64_t lost = e["lost_events"];
    if (s.counters.size() + lost != kEvents) continue;
    ++emitters;
    EXPECT_EQ(e.value("events", uint64_t{0}), s.events) << file;
    EXPECT_GT(lost, 0u) << file;
    // What is in the file is a prefix-with-gaps of the sequence: nothing invented.
    for (size_t i = 1; i < s.counters.size(); ++i) ASSERT_LT(s.counters[i - 1], s.counters[i]) << file;
    in_files += s.counters.size();
  }
  EXPECT_EQ(emitters, 2) << m["streams"].dump(1);
  EXPECT_GT(in_files, 0u);
  // What was written reads: babeltrace2 opens it and counts what strata counts;
  // the report shows the events and the loss.
  testing::ExpectBabeltraceAgrees(trace);
  auto rep = RunCommand({StrataBin(), "report", trace, "--json"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  json j = json::parse(rep.out, nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_GE(j["trace"]["events"].get<uint64_t>(), in_files);
  EXPECT_EQ(j["trace"]["lost_events"], m["lost_events"]);
  auto text = RunCommand({StrataBin(), "report", trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("not written (No space left on device)"), std::string::npos) << text.out;
}

// Reproduction: "16 threads emitting flat out lost 0.66-1.72 s per thread
// before the kill (the README promises <= 100 ms), while the lost count covers
// only the drops." The supervisor now writes what the killed program had
// buffered, and counts the rest: for every thread, the events in its stream
// plus the events counted lost are what it had emitted.
TEST(FaultLoss, SigkillOfASaturatedProgramAccountsForEveryEvent) {
  std::string dir = TempDir("sigkill_saturated");
  std::string progress = TempDir("sigkill_saturated_progress");
  constexpr int kThreads = 16;
  auto r = Record(dir, {TestProgram("emitter"), std::to_string(kThreads), "4000000000", "--kill-self-after-ms", "1500",
                        "--progress", progress});
  EXPECT_EQ(r.exit_code, 128 + 9) << r.err;
  json m = Manifest(dir);
  ASSERT_TRUE(m.is_object());
  bool died = false;
  for (const auto& p : m["processes"]) died |= p.value("end", std::string()) == "died";
  EXPECT_TRUE(died) << m["processes"].dump(1);
  EXPECT_GT(m["loss"]["salvaged"]["events"].get<uint64_t>(), 0u) << "the killed program's buffers were not written";
  std::map<uint32_t, uint64_t> emitted = Progress(progress, kThreads);
  ASSERT_EQ(emitted.size(), static_cast<size_t>(kThreads));
  int checked = 0;
  uint64_t total_lost = 0;
  for (const auto& [file, s] : ThreadFiles(dir)) {
    auto it = emitted.find(s.tid);
    if (it == emitted.end()) continue;
    ++checked;
    json e = StreamEntry(m, file);
    ASSERT_TRUE(e.is_object()) << file;
    uint64_t lost = e["lost_events"];
    total_lost += lost;
    // The event being emitted when the kill came may or may not have reached the buffer.
    uint64_t accounted = s.counters.size() + lost;
    EXPECT_TRUE(accounted == it->second || accounted == it->second + 1)
        << file << ": " << s.counters.size() << " in the file + " << lost << " lost, " << it->second << " emitted";
    // Gaps in the recorded sequence are drops, all counted.
    for (size_t i = 1; i < s.counters.size(); ++i) ASSERT_LT(s.counters[i - 1], s.counters[i]) << file;
    if (!s.counters.empty()) {
      EXPECT_LE(static_cast<uint64_t>(s.counters.back()) + 1 - s.counters.size(), lost) << file;
    }
  }
  EXPECT_EQ(checked, kThreads);
  EXPECT_EQ(m["lost_events"].get<uint64_t>(), total_lost);
  testing::ExpectBabeltraceAgrees(dir);
}

// Below saturation, SIGKILL loses nothing: what reached the buffers is written
// by the supervisor after the program is gone.
TEST(FaultLoss, SigkillLosesNothingThatReachedTheBuffers) {
  std::string dir = TempDir("sigkill_calm");
  std::string progress = TempDir("sigkill_calm_progress");
  auto r = Record(dir, {TestProgram("emitter"), "4", "4000000000", "--sleep-ms", "1", "--kill-self-after-ms", "700",
                        "--progress", progress});
  EXPECT_EQ(r.exit_code, 128 + 9) << r.err;
  json m = Manifest(dir);
  std::map<uint32_t, uint64_t> emitted = Progress(progress, 4);
  int checked = 0;
  for (const auto& [file, s] : ThreadFiles(dir)) {
    auto it = emitted.find(s.tid);
    if (it == emitted.end()) continue;
    ++checked;
    EXPECT_EQ(StreamEntry(m, file)["lost_events"], 0u) << file;
    EXPECT_TRUE(s.counters.size() == it->second || s.counters.size() == it->second + 1)
        << file << ": " << s.counters.size() << " in the file, " << it->second << " emitted";
    for (size_t i = 0; i < s.counters.size(); ++i) ASSERT_EQ(s.counters[i], static_cast<double>(i)) << file;
  }
  EXPECT_EQ(checked, 4);
  testing::ExpectBabeltraceAgrees(dir);
}

// Killed before its first flush (100 ms): nothing of the process is in the
// files yet, not even its names or its clock rate; the supervisor writes it all.
TEST(FaultLoss, SigkillBeforeTheFirstFlushLosesNothing) {
  std::string dir = TempDir("sigkill_early");
  std::string progress = TempDir("sigkill_early_progress");
  auto r = Record(dir, {TestProgram("emitter"), "2", "4000000000", "--spans", "--kill-self-after-ms", "30",
                        "--progress", progress});
  EXPECT_EQ(r.exit_code, 128 + 9) << r.err;
  std::map<uint32_t, uint64_t> emitted = Progress(progress, 2);
  int checked = 0;
  for (const auto& [file, s] : ThreadFiles(dir)) {
    auto it = emitted.find(s.tid);
    if (it == emitted.end()) continue;
    ++checked;
    EXPECT_GT(s.counters.size(), 0u) << file;
    EXPECT_TRUE(s.counters.size() == it->second || s.counters.size() == it->second + 1)
        << file << ": " << s.counters.size() << " in the file, " << it->second << " emitted";
  }
  EXPECT_EQ(checked, 2);
  model::Trace t = Load(dir);
  EXPECT_EQ(t.events_lost, 0u);
  // Names and times from the salvaged process stream and clock: spans resolve, and the
  // trace lasts about as long as the program ran (ticks converted at the machine's rate).
  EXPECT_GT(testing::CountSlices(t, "batch"), 0u);
  for (const auto& w : t.warnings) EXPECT_EQ(w.find("undefined string"), std::string::npos) << w;
  EXPECT_LT(t.end_ns() - t.start_ns(), int64_t{5'000'000'000});
  testing::ExpectBabeltraceAgrees(dir);
}

// Reproduction: "One flipped byte in a stream makes the whole trace
// unreadable; a corrupt first packet_size drops the whole stream." Now a
// damaged packet costs that packet: the trace loads with exactly its events
// missing, and says so.
TEST(FaultLoss, AFlippedByteLosesOnePacketOnly) {
  std::string dir = TempDir("flip_intact");
  auto r = Record(dir, {TestProgram("emitter"), "2", "2000000"}, {"--buffer-size", "512"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  model::Trace intact = Load(dir);
  ASSERT_EQ(intact.damaged_packets, 0u);
  // The emitter thread with the most packets.
  auto files = ThreadFiles(dir);
  std::string victim;
  for (const auto& [file, s] : files)
    if (victim.empty() || s.packet_offsets.size() > files[victim].packet_offsets.size()) victim = file;
  const StreamFile& v = files[victim];
  ASSERT_GE(v.packet_offsets.size(), 3u);
  size_t k = v.packet_offsets.size() / 2;
  struct Case {
    const char* what;
    size_t packet;
    size_t offset;  // within the packet
    uint8_t flip;
  } cases[] = {
      {"the magic of a middle packet", k, 0, 0x01},
      {"the first packet's packet_size", 0, format::kPacketHeaderSize + 24 + 3, 0x10},
      {"the top byte of a middle packet's packet_size", k, format::kPacketHeaderSize + 24 + 7, 0x80},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::string copy = TempDir("flip_damaged");
    std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
    std::string path = copy + "/ctf/" + victim;
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      size_t at = v.packet_offsets[c.packet] + c.offset;
      f.seekg(static_cast<std::streamoff>(at));
      char b = 0;
      f.read(&b, 1);
      b = static_cast<char>(b ^ c.flip);
      f.seekp(static_cast<std::streamoff>(at));
      f.write(&b, 1);
    }
    model::Trace t = Load(copy);
    EXPECT_EQ(t.events_read, intact.events_read - v.packet_events[c.packet]);
    EXPECT_EQ(t.damaged_packets, 1u);
    bool said = false;
    for (const auto& w : t.warnings) said |= w.find(victim) != std::string::npos && w.find("damaged packet") != std::string::npos;
    EXPECT_TRUE(said);
    auto rep = RunCommand({StrataBin(), "report", copy});
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    EXPECT_NE(rep.out.find("damaged"), std::string::npos) << rep.out;
  }
}

// Reproduction: "a corrupt strata.json is ignored without a warning."
TEST(FaultLoss, ADamagedManifestIsSaidOnce) {
  std::string dir = TempDir("bad_manifest");
  auto r = Record(dir, {TestProgram("emitter"), "1", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    std::ofstream f(dir + "/strata.json", std::ios::trunc);
    f << "{\"command\": [\"emitter\", ";  // cut short
  }
  auto rep = RunCommand({StrataBin(), "report", dir});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.err.find("strata.json: the manifest could not be read"), std::string::npos) << rep.err;
  EXPECT_EQ(std::count(rep.err.begin(), rep.err.end(), '\n'), 1) << rep.err;
  EXPECT_NE(rep.out.find("manifest could not be read"), std::string::npos) << rep.out;
}

}  // namespace
}  // namespace strata

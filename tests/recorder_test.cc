// The in-process recorder, exercised through real programs run under `strata record`.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include "base/clock.h"
#include "base/files.h"
#include "format/ctf_reader.h"
#include "format/tsdl.h"
#include "recorder/runtime_internal.h"
#include "strata/strata.h"
#include "tests/testing.h"

namespace strata {
namespace {

using testing::Load;
using testing::Record;
using testing::TempDir;
using testing::TestProgram;

struct ThreadSeq {
  uint32_t tid = 0;
  std::vector<double> values;  // counter values in stream order
  uint64_t lost = 0;           // the stream's final events_discarded
  uint64_t events = 0;
};

// Reads every thread stream directly with the format reader: one file is one
// thread, so the order of its counter events is the order the thread wrote them.
std::vector<ThreadSeq> ThreadSequences(const std::string& dir) {
  std::vector<ThreadSeq> out;
  std::string ctf = dir + "/ctf";
  auto text = ReadFile(ctf + "/metadata");
  EXPECT_TRUE(text.ok());
  auto md = format::ParseMetadata(*text);
  EXPECT_TRUE(md.ok());
  uint32_t counter_id = UINT32_MAX, counter16_id = UINT32_MAX, counter8_id = UINT32_MAX;
  for (const auto& e : md->streams[format::kThreadStream].events) {
    if (e.name == "counter") counter_id = e.id;
    if (e.name == "counter16") counter16_id = e.id;
    if (e.name == "counter8") counter8_id = e.id;
  }
  auto files = ListFiles(ctf);
  for (const auto& f : *files) {
    if (f.rfind("thread-", 0) != 0) continue;
    auto map = MappedFile::Open(ctf + "/" + f);
    format::StreamFileReader r(*md, map->data(), map->size(), f);
    format::Packet pk;
    format::EventView ev;
    ThreadSeq ts;
    while (r.NextPacket(&pk)) {
      ts.tid = static_cast<uint32_t>(pk.context[1]);
      ts.lost = pk.discarded;
      while (r.NextEvent(&ev)) {
        ++ts.events;
        if (ev.id == counter_id) {
          double v;
          std::memcpy(&v, ev.payload + 4, 8);
          ts.values.push_back(v);
        } else if (ev.id == counter16_id) {
          int32_t v;  // the narrow forms the flusher writes for integral values
          std::memcpy(&v, ev.payload + 2, 4);
          ts.values.push_back(v);
        } else if (ev.id == counter8_id) {
          int16_t v;
          std::memcpy(&v, ev.payload + 2, 2);
          ts.values.push_back(v);
        }
      }
    }
    EXPECT_TRUE(r.status().ok()) << r.status().message();
    out.push_back(std::move(ts));
  }
  return out;
}

// The flusher's tick -> ns conversion (fixed point) against exact arithmetic:
// interpolation before the newest anchor, extrapolation after it, rounding to
// the nearest ns, hours of ticks without overflow.
TEST(TscCalibration, ConvertsTicksPiecewiseLinearlyToTheNearestNs) {
  TscCalibration c;
  c.Start({1000, 5000});
  EXPECT_EQ(c.ToNs(1000 + 7), 5007u);  // no rate yet: 1 ns per tick
  c.AddAnchor({1000 + 3'000'000'000ull, 5000 + 1'000'000'000ull});  // 3 ticks per ns
  EXPECT_EQ(c.ToNs(1000), 5000u);
  EXPECT_EQ(c.ToNs(1000 + 4), 5001u);  // 1.33 -> 1
  EXPECT_EQ(c.ToNs(1000 + 5), 5002u);  // 1.67 -> 2
  EXPECT_EQ(c.ToNs(1000 + 3'000'000'000ull + 30), 5000 + 1'000'000'010ull);
  // Ten hours past the newest anchor.
  uint64_t ten_hours = 36'000'000'000'000ull;
  EXPECT_NEAR(static_cast<double>(c.ToNs(1000 + 3'000'000'000ull + 3 * ten_hours)),
              static_cast<double>(5000 + 1'000'000'000ull + ten_hours), 2.0);
  // A newer anchor at a slightly different rate: ticks before it use the old interval's rate.
  c.AddAnchor({1000 + 6'000'000'000ull, 5000 + 2'000'000'100ull});
  EXPECT_EQ(c.ToNs(1000 + 3'000'000'000ull), 5000 + 1'000'000'000ull);
  EXPECT_EQ(c.ToNs(1000 + 6'000'000'000ull), 5000 + 2'000'000'100ull);
  // Before the first anchor: clamped at 0, never wrapped.
  TscCalibration early;
  early.Start({1000, 10});
  EXPECT_EQ(early.ToNs(0), 0u);
}

TEST(Recorder, FourThreadsTwoMillionEventsEachExactSequencesNoLoss) {
  std::string dir = TempDir("four_threads");
  // 4 threads x 2M events x 32-byte records fit in 512 MiB: nothing may be lost.
  auto r = Record(dir, {TestProgram("emitter"), "4", "2000000"}, {"--buffer-size", "512"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int emitters = 0;
  for (const ThreadSeq& s : ThreadSequences(dir)) {
    if (s.values.empty()) continue;
    ++emitters;
    EXPECT_EQ(s.lost, 0u);
    ASSERT_EQ(s.values.size(), 2000000u) << "tid " << s.tid;
    for (size_t i = 0; i < s.values.size(); ++i)
      ASSERT_EQ(s.values[i], static_cast<double>(i)) << "tid " << s.tid << " position " << i;
  }
  EXPECT_EQ(emitters, 4);
  model::Trace t = Load(dir);
  EXPECT_EQ(t.events_lost, 0u);
  testing::ExpectBabeltraceAgrees(dir);
}

TEST(Recorder, TinyBufferDropsAreCountedExactlyPerThread) {
  std::string dir = TempDir("tiny_buffer");
  // 1 MiB of 4 KiB chunks for 4 threads writing as fast as they can: the flusher
  // cannot keep up, so events are dropped, and every drop must be counted.
  auto r = Record(dir, {TestProgram("emitter"), "4", "2000000"}, {"--buffer-size", "1", "--chunk-size", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t total_lost = 0;
  int emitters = 0;
  for (const ThreadSeq& s : ThreadSequences(dir)) {
    if (s.values.empty() && s.lost == 0) continue;
    if (s.tid == 0) continue;
    ++emitters;
    // Strictly increasing: nothing duplicated or reordered, only gaps.
    for (size_t i = 1; i < s.values.size(); ++i) ASSERT_LT(s.values[i - 1], s.values[i]) << "tid " << s.tid;
    // The thread's other events (span_begin/end of main) are not counters; the
    // emitter threads write only counters, so received + lost is exactly 2M.
    EXPECT_EQ(s.values.size() + s.lost, 2000000u) << "tid " << s.tid;
    total_lost += s.lost;
  }
  EXPECT_EQ(emitters, 4);
  EXPECT_GT(total_lost, 0u) << "the buffer was expected to overflow";
  model::Trace t = Load(dir);
  EXPECT_EQ(t.events_lost, total_lost);
  testing::ExpectBabeltraceAgrees(dir);
  testing::ExpectBabeltraceCountsLost(dir, total_lost);
}

// The flusher deletes an exited thread's stream once drained. A thread that
// drops events after the flusher wrote its events_discarded and exits before
// the deletion (a flusher descheduled between the two on a loaded machine) had
// those drops vanish uncounted; so did a thread that started, dropped
// everything and exited within one cycle. The recorder runs in a forked child
// (it is once per process) with a hook at that point of the flush cycle, so the
// interleaving is exact rather than left to the scheduler.
namespace exit_race {
std::atomic<bool> armed{false}, hook_ran{false}, go_on{false};
std::thread* late_dropper = nullptr;  // started before the cycle; drops and exits inside it
uint32_t seq_name = 0;

void Drop(int n) {
  for (int i = 0; i < n; ++i) strata_counter(seq_name, i);
}

void AtFlushPhase(recorder::FlushPhase phase) {
  if (phase != recorder::FlushPhase::kPacketsWritten || !armed.exchange(false)) return;
  go_on.store(true);
  late_dropper->join();
  std::thread([] { Drop(500); }).join();  // a thread born and gone within the cycle
  hook_ran.store(true);
}

void Scenario(const std::string& dir) {
  recorder::Config cfg;
  cfg.dir = dir;
  cfg.chunk_bytes = 4096;
  cfg.max_chunks = 2;
  if (!recorder::Start(cfg).ok()) ::_exit(3);
  seq_name = strata_intern("seq");
  // Two threads hold the pool's two chunks, unsealed (so never recycled), for
  // the whole scenario: every other thread's events are dropped.
  std::atomic<int> holding{0};
  std::atomic<bool> release{false};
  auto hold = [&] {
    for (int i = 0; i < 10; ++i) strata_counter(seq_name, i);
    holding.fetch_add(1);
    while (!release.load()) ::usleep(1000);
  };
  std::thread a(hold), b(hold);
  while (holding.load() < 2) ::usleep(1000);
  std::atomic<bool> dropped_first{false};
  std::thread late([&] {
    Drop(10);
    dropped_first.store(true);
    while (!go_on.load()) ::usleep(1000);
    Drop(1000);
  });
  late_dropper = &late;
  while (!dropped_first.load()) ::usleep(1000);
  // A cycle writes the late dropper's first 10 losses; the next one, with the
  // hook armed, has it drop 1000 more and exit right after its packets.
  recorder::FlushNow();
  recorder::SetFlushPhaseHookForTesting(AtFlushPhase);
  armed.store(true);
  recorder::FlushNow();
  for (int i = 0; i < 10000 && !hook_ran.load(); ++i) ::usleep(1000);
  if (!hook_ran.load()) ::_exit(4);
  release.store(true);
  a.join();
  b.join();
  recorder::Finalize();
  ::_exit(0);
}
}  // namespace exit_race

TEST(Recorder, DropsOfAThreadExitingDuringAFlushAreCounted) {
  std::string dir = TempDir("exit_race");
  pid_t pid = ::fork();
  if (pid == 0) exit_race::Scenario(dir);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "scenario process failed: " << status;
  std::vector<uint64_t> lost;
  int holders = 0;
  for (const ThreadSeq& s : ThreadSequences(dir)) {
    if (s.lost > 0) {
      EXPECT_TRUE(s.values.empty()) << "tid " << s.tid;
      lost.push_back(s.lost);
    } else if (!s.values.empty()) {
      EXPECT_EQ(s.values.size(), 10u) << "tid " << s.tid;
      ++holders;
    }
  }
  std::sort(lost.begin(), lost.end());
  EXPECT_EQ(lost, (std::vector<uint64_t>{500, 1010}));
  EXPECT_EQ(holders, 2);
  model::Trace t = Load(dir);
  EXPECT_EQ(t.events_lost, 1510u);
  testing::ExpectBabeltraceAgrees(dir);
  testing::ExpectBabeltraceCountsLost(dir, 1510);
}

TEST(Recorder, BlockingPolicyLosesNothingUnderTheSameLoad) {
  std::string dir = TempDir("tiny_buffer_block");
  auto r = Record(dir, {TestProgram("emitter"), "4", "500000"},
                  {"--buffer-size", "1", "--chunk-size", "4", "--buffer-policy", "block"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int emitters = 0;
  for (const ThreadSeq& s : ThreadSequences(dir)) {
    if (s.values.empty()) continue;
    ++emitters;
    EXPECT_EQ(s.lost, 0u);
    EXPECT_EQ(s.values.size(), 500000u);
  }
  EXPECT_EQ(emitters, 4);
}

TEST(Recorder, ManyShortLivedThreadsAreEachFlushedCompletely) {
  std::string dir = TempDir("short_threads");
  auto r = Record(dir, {TestProgram("emitter"), "300", "100", "--sequential"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int complete = 0;
  for (const ThreadSeq& s : ThreadSequences(dir)) {
    if (s.values.empty()) continue;
    ASSERT_EQ(s.values.size(), 100u) << "tid " << s.tid;
    ++complete;
  }
  EXPECT_EQ(complete, 300);
  testing::ExpectBabeltraceAgrees(dir);
}

TEST(Recorder, InternedNamesAndThreadNamesResolve) {
  std::string dir = TempDir("names");
  auto r = Record(dir, {TestProgram("emitter"), "2", "5000", "--spans"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  model::Trace t = Load(dir);
  EXPECT_EQ(testing::CountSlices(t, "batch"), 10u);  // 2 threads x 5 batches of 1000
  EXPECT_EQ(testing::CountSlices(t, "main"), 1u);
  int named = 0;
  std::string names;
  for (const auto& trk : t.tracks) {
    named += std::string(t.strings.Get(trk.name)).rfind("emitter-", 0) == 0;
    names += std::to_string(static_cast<int>(trk.kind)) + ":" + std::to_string(trk.tid) + "=" +
             std::string(t.strings.Get(trk.name)) + " ";
  }
  EXPECT_EQ(named, 2) << names;
  for (const auto& w : t.warnings) EXPECT_EQ(w.find("undefined string"), std::string::npos) << w;
  testing::ExpectBabeltraceAgrees(dir);
}

TEST(Recorder, SigkillLeavesAReadableTraceUpToTheLastFlush) {
  std::string dir = TempDir("sigkill");
  // Writes 1000-event batches with 5 ms pauses, and SIGKILLs itself after 400 ms.
  auto r = Record(dir, {TestProgram("emitter"), "2", "100000000", "--sleep-ms", "5", "--kill-self-after-ms", "400"});
  EXPECT_EQ(r.exit_code, 128 + 9);
  model::Trace t = Load(dir);
  EXPECT_GT(t.events_read, 10000u) << "the periodic flush should have written most of 400 ms of events";
  for (const ThreadSeq& s : ThreadSequences(dir)) {
    for (size_t i = 0; i < s.values.size(); ++i) ASSERT_EQ(s.values[i], static_cast<double>(i));
  }
  testing::ExpectBabeltraceAgrees(dir);
}

TEST(Recorder, CrashFlushesEverythingBeforeTheSignal) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer owns SIGSEGV in this build; the recorder leaves signals it finds handled alone";
#endif
  std::string dir = TempDir("crash");
  auto r = Record(dir, {TestProgram("emitter"), "1", "30000", "--crash"});
  EXPECT_EQ(r.exit_code, 128 + 11);
  int emitters = 0;
  for (const ThreadSeq& s : ThreadSequences(dir))
    if (!s.values.empty()) {
      ++emitters;
      EXPECT_EQ(s.values.size(), 30000u);
    }
  EXPECT_EQ(emitters, 1);
  testing::ExpectBabeltraceAgrees(dir);
}

TEST(Recorder, UnderscoreExitFlushes) {
  std::string dir = TempDir("underscore_exit");
  auto r = Record(dir, {TestProgram("emitter"), "1", "30000", "--underscore-exit", "--exit-code", "7"});
  EXPECT_EQ(r.exit_code, 7);
  int emitters = 0;
  for (const ThreadSeq& s : ThreadSequences(dir))
    if (!s.values.empty()) {
      ++emitters;
      EXPECT_EQ(s.values.size(), 30000u);
    }
  EXPECT_EQ(emitters, 1);
}

TEST(Recorder, ForkAndExecChildrenAreTheirOwnProcesses) {
  std::string dir = TempDir("fork_exec");
  auto r = Record(dir, {TestProgram("emitter"), "1", "1000", "--fork", "--exec", "/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  model::Trace t = Load(dir);
  // The emitter, its forked child (same pid as the exec'd /bin/true, but a
  // different process instance), and /bin/true after exec.
  ASSERT_EQ(t.processes.size(), 3u);
  int emitters = 0, trues = 0;
  for (const auto& p : t.processes) {
    std::string exe(t.strings.Get(p.name));
    if (exe.find("emitter") != std::string::npos) ++emitters;
    if (exe.find("true") != std::string::npos) ++trues;
  }
  EXPECT_EQ(emitters, 2);
  EXPECT_EQ(trues, 1);
  // The forked child's events are its own: "child_work" is in the child's
  // process, "main" in the parent's, and /bin/true has the child's pid.
  auto pid_of = [&](const std::string& slice) -> int64_t {
    model::StringId id = t.strings.Find(slice);
    for (size_t i = 0; i < t.slices.size(); ++i)
      if (t.slices.name[i] == id) return t.processes[t.tracks[t.slices.track[i]].process].pid;
    return -1;
  };
  int64_t parent = pid_of("main"), child = pid_of("child_work");
  ASSERT_GT(parent, 0);
  ASSERT_GT(child, 0);
  EXPECT_NE(parent, child);
  EXPECT_EQ(testing::CountSlices(t, "child_work"), 1u);
  for (const auto& p : t.processes) {
    std::string exe(t.strings.Get(p.name));
    if (exe.find("true") != std::string::npos) {
      EXPECT_EQ(p.pid, child);
    }
    if (p.pid == child && exe.find("emitter") != std::string::npos) {
      EXPECT_EQ(p.ppid, parent);
    }
  }
  testing::ExpectBabeltraceAgrees(dir);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(Recorder, EveryOnDiskEncodingDecodesToTheRecordedValues) {
  std::string dir = TempDir("encodings");
  auto r = Record(dir, {TestProgram("encodings")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  model::Trace t = Load(dir);
  EXPECT_EQ(t.warnings.size(), 0u) << (t.warnings.empty() ? "" : t.warnings[0]);
  EXPECT_EQ(testing::CountSlices(t, "name_0"), 2u);
  EXPECT_EQ(testing::CountSlices(t, "name_69999"), 1u);
  // Steps 7 and 2^40, nested.
  std::vector<uint64_t> steps;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == model::SliceKind::kStep) steps.push_back(t.slices.arg[i]);
  EXPECT_EQ(steps, (std::vector<uint64_t>{7, 1ull << 40}));
  // The span with an argument keeps it.
  bool arg_found = false;
  for (size_t i = 0; i < t.slices.size(); ++i) arg_found |= t.slices.arg[i] == (1ull << 50);
  EXPECT_TRUE(arg_found);
  // Flows 5 and 2^40 link name_0 -> name_69999 -> name_0.
  ASSERT_EQ(t.flows.size(), 2u);
  for (size_t i = 0; i < t.flows.size(); ++i) {
    EXPECT_NE(t.flows.from[i], model::kNone);
    EXPECT_NE(t.flows.to[i], model::kNone);
  }
  // The program's own counter "value" (the OS level adds its /proc series beside it).
  std::vector<double> values;
  for (size_t i = 0; i < t.counters.size(); ++i)
    if (t.strings.Get(t.counter_series[t.counters.series[i]].name) == "value") values.push_back(t.counters.value[i]);
  EXPECT_EQ(values, (std::vector<double>{0, -1, 32767, -32768, 32768, -2147483648.0, 2147483647.0, 2147483648.0, 0.5,
                                         -1e300, 1e12}));
  testing::ExpectBabeltraceAgrees(dir);
}

}  // namespace
}  // namespace strata

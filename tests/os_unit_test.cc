// The OS level without the kernel: tracefs format parsing, the syscall table,
// perf record parsing, address spaces and symbols, and the encoder -> cpu
// stream -> importer -> model path on hand-made perf records (so these run
// wherever perf_event_open is refused, e.g. in containers).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "analysis/os.h"
#include "base/files.h"
#include "collectors/os/os_encoder.h"
#include "collectors/os/perf_records.h"
#include "collectors/os/python_stacks.h"
#include "collectors/os/symbolizer.h"
#include "collectors/os/syscall_table.h"
#include "collectors/os/tracefs.h"
#include "format/ctf_writer.h"
#include "format/schema.h"
#include "format/schema_os.h"
#include "format/tsdl.h"
#include "tests/testing.h"

extern "C" __attribute__((noinline)) int strata_os_unit_test_marker(int x) { return x * 3 + 1; }

namespace strata::collectors::os {
namespace {

constexpr const char* kSchedSwitchFormat = R"(name: sched_switch
ID: 372
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:int prev_prio;	offset:28;	size:4;	signed:1;
	field:long prev_state;	offset:32;	size:8;	signed:1;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;
	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
	field:int next_prio;	offset:60;	size:4;	signed:1;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm
)";

TEST(Tracefs, ParsesAFormatFile) {
  auto f = ParseTracepointFormat(kSchedSwitchFormat);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->name, "sched_switch");
  EXPECT_EQ(f->id, 372u);
  const TracepointField* s = f->Find("prev_state");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->offset, 32u);
  EXPECT_EQ(s->size, 8u);
  EXPECT_TRUE(s->is_signed);
  const TracepointField* c = f->Find("prev_comm");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->is_array);
  EXPECT_EQ(c->size, 16u);
  EXPECT_EQ(f->Find("next_pid")->offset, 56u);
  EXPECT_EQ(f->Find("no_such_field"), nullptr);
}

TEST(Tracefs, DataLocFieldsAndErrors) {
  auto f = ParseTracepointFormat("name: x\nID: 5\nformat:\n\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->Find("cmd")->data_loc);
  EXPECT_FALSE(ParseTracepointFormat("name: x\nformat:\n").ok());  // no ID
  EXPECT_FALSE(ParseTracepointFormat("ID: 1\n\tfield:int a;\tsize:4;\n").ok());  // no offset
  EXPECT_FALSE(ParseTracepointFormat("ID: 1\n\tfield:int a[3;\toffset:0;\tsize:4;\n").ok());
}

TEST(Tracefs, ReadsRawFieldsWithinBounds) {
  uint8_t raw[16] = {};
  int32_t v = -5;
  std::memcpy(raw + 4, &v, 4);
  TracepointField f{"x", 4, 4, true};
  EXPECT_EQ(ReadRawField(raw, sizeof raw, f), -5);
  f.is_signed = false;
  EXPECT_EQ(ReadRawField(raw, sizeof raw, f), 0xfffffffbll);
  f.offset = 14;  // runs past the payload
  EXPECT_EQ(ReadRawField(raw, sizeof raw, f), 0);
}

TEST(Tracefs, TheRunningKernelsFormatsParse) {
  bool mounted = false;
  auto root = FindTracefs(false, &mounted);
  if (!root.ok() || ::access((*root + "/events/sched/sched_switch/format").c_str(), R_OK) != 0)
    GTEST_SKIP() << "tracefs not readable here (needs root): " << (root.ok() ? *root : root.status().message());
  for (auto [sys, name, field] : {std::tuple{"sched", "sched_switch", "prev_state"}, {"sched", "sched_wakeup", "pid"},
                                  {"raw_syscalls", "sys_enter", "id"}, {"raw_syscalls", "sys_exit", "ret"}}) {
    auto f = ReadTracepointFormat(*root, sys, name);
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_NE(f->Find(field), nullptr) << sys << ":" << name;
  }
}

TEST(SyscallTable, NamesAndNewerThanDistributionHeaders) {
  EXPECT_STREQ(SyscallName(0), "read");
  EXPECT_STREQ(SyscallName(35), "nanosleep");
  EXPECT_STREQ(SyscallName(202), "futex");
  EXPECT_STREQ(SyscallName(230), "clock_nanosleep");
  EXPECT_STREQ(SyscallName(451), "cachestat");
  EXPECT_STREQ(SyscallName(462), "mseal");
  EXPECT_EQ(SyscallName(400), nullptr);  // the reserved gap
  EXPECT_EQ(SyscallNameOr(100000), "sys_100000");
  // Every number the installed header knows has the same name in our table.
  std::ifstream h("/usr/include/x86_64-linux-gnu/asm/unistd_64.h");
  if (!h) GTEST_SKIP() << "no asm/unistd_64.h to compare with";
  std::regex re(R"(#define __NR_(\w+) (\d+))");
  std::string line;
  int checked = 0;
  while (std::getline(h, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    const char* n = SyscallName(static_cast<uint32_t>(std::stoul(m[2])));
    ASSERT_NE(n, nullptr) << line;
    EXPECT_EQ(m[1].str(), n);
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

// ---- hand-made perf records ----

class Records {
 public:
  template <typename T>
  void Put(T v) {
    size_t o = b_.size();
    b_.resize(o + sizeof v);
    std::memcpy(b_.data() + o, &v, sizeof v);
  }
  void Begin(uint32_t type, uint16_t misc) {
    start_ = b_.size();
    perf_event_header h{type, misc, 0};
    Put(h);
  }
  void End() {
    while ((b_.size() - start_) % 8) b_.push_back(0);
    auto size = static_cast<uint16_t>(b_.size() - start_);
    std::memcpy(b_.data() + start_ + 6, &size, 2);
  }
  void Trailer(uint32_t pid, uint32_t tid, uint64_t t, uint64_t id) {
    Put(pid);
    Put(tid);
    Put(t);
    Put(uint32_t{0});
    Put(uint32_t{0});
    Put(id);
  }
  void Switch(uint32_t pid, uint32_t tid, uint64_t t, bool out, bool preempt) {
    Begin(PERF_RECORD_SWITCH, static_cast<uint16_t>((out ? PERF_RECORD_MISC_SWITCH_OUT : 0) | (preempt ? (1 << 14) : 0)));
    Trailer(pid, tid, t, kLeader);
    End();
  }
  void Comm(uint32_t pid, uint32_t tid, uint64_t t, const char* name, bool exec) {
    Begin(PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
    Put(pid);
    Put(tid);
    char buf[16] = {};
    std::strncpy(buf, name, 15);
    for (char c : buf) Put(c);
    Trailer(pid, tid, t, kLeader);
    End();
  }
  void Raw(uint64_t id, uint32_t pid, uint32_t tid, uint64_t t, const std::vector<uint8_t>& raw) {
    Begin(PERF_RECORD_SAMPLE, 0);
    Put(id);
    Put(pid);
    Put(tid);
    Put(t);
    Put(uint32_t{0});
    Put(uint32_t{0});
    auto n = static_cast<uint32_t>(raw.size() + 4);  // u32 + payload pad to 8
    n = (n + 7) / 8 * 8 - 4;
    Put(n);
    for (uint32_t i = 0; i < n; ++i) b_.push_back(i < raw.size() ? raw[i] : 0);
    End();
  }
  static std::vector<uint8_t> Payload(std::initializer_list<std::pair<uint32_t, int64_t>> fields, size_t size) {
    std::vector<uint8_t> r(size, 0);
    for (auto [off, v] : fields) std::memcpy(r.data() + off, &v, 8);
    return r;
  }
  void Lost(uint64_t n, uint64_t t) {
    Begin(PERF_RECORD_LOST, 0);
    Put(kLeader);
    Put(n);
    Trailer(0, 0, t, kLeader);
    End();
  }
  void Exit(uint32_t pid, uint32_t tid, uint64_t t) {
    Begin(PERF_RECORD_EXIT, 0);
    Put(pid);
    Put(pid);
    Put(tid);
    Put(tid);
    Put(t);
    Trailer(pid, tid, t, kLeader);
    End();
  }
  const std::vector<uint8_t>& bytes() const { return b_; }
  static constexpr uint64_t kLeader = 1, kEnter = 2, kExit = 3, kSwitchTp = 4;

 private:
  std::vector<uint8_t> b_;
  size_t start_ = 0;
};

TEST(PerfRecords, RejectTruncatedRecords) {
  Records r;
  r.Switch(1, 2, 3, true, false);
  const auto& b = r.bytes();
  SampleId sid;
  ASSERT_TRUE(ParseSampleId(b.data(), b.size(), &sid));
  EXPECT_EQ(sid.tid, 2u);
  EXPECT_EQ(sid.time, 3u);
  EXPECT_FALSE(ParseSampleId(b.data(), b.size() - 8, &sid));  // header says longer than the bytes
  SampleRecord s;
  Records raw;
  raw.Raw(5, 1, 2, 3, std::vector<uint8_t>(100, 1));
  const auto& rb = raw.bytes();
  uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
  ASSERT_TRUE(ParseSample(rb.data(), rb.size(), st, 0, &s));
  EXPECT_EQ(s.raw_size % 8, 4u);
  // A raw size pointing past the record.
  std::vector<uint8_t> bad = rb;
  uint32_t huge = 100000;
  std::memcpy(bad.data() + 8 + 8 + 8 + 8 + 8, &huge, 4);
  EXPECT_FALSE(ParseSample(bad.data(), bad.size(), st, 0, &s));
  // Unknown sample bits are refused rather than misparsed.
  EXPECT_FALSE(ParseSample(rb.data(), rb.size(), st | PERF_SAMPLE_BRANCH_STACK, 0, &s));
}

TEST(AddressSpace, LaterMappingsReplaceOverlaps) {
  AddressSpace as;
  as.Add({0x1000, 0x5000, 0, "/a", ""});
  as.Add({0x2000, 0x3000, 0x100, "/b", ""});
  ASSERT_EQ(as.mappings().size(), 3u);
  EXPECT_EQ(as.Find(0x1800)->path, "/a");
  EXPECT_EQ(as.Find(0x2800)->path, "/b");
  const Mapping* right = as.Find(0x4000);
  ASSERT_NE(right, nullptr);
  EXPECT_EQ(right->path, "/a");
  EXPECT_EQ(right->pgoff, 0x2000u);  // its file offset moved with its start
  EXPECT_EQ(as.Find(0x6000), nullptr);
}

TEST(Symbolizer, ResolvesAFunctionOfThisProgram) {
  // Build our own address space from /proc/self/maps, as MMAP2 records would.
  AddressSpace as;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo, hi, off;
    char perms[8], path[512] = "";
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %*s %*s %511s", &lo, &hi, perms, &off, path) >= 4 && perms[2] == 'x')
      as.Add({lo, hi, off, path, ""});
  }
  Symbolizer sym;
  auto pc = reinterpret_cast<uint64_t>(&strata_os_unit_test_marker) + 2;
  SymbolInfo si = sym.Symbolize(as, pc);
  EXPECT_EQ(si.function, "strata_os_unit_test_marker");
  EXPECT_EQ(si.module, "os_unit_test");
  SymbolInfo libc = sym.Symbolize(as, reinterpret_cast<uint64_t>(&::getpid));
  EXPECT_EQ(libc.module, "libc.so.6");
  EXPECT_NE(libc.function.find("getpid"), std::string::npos) << libc.function;
  EXPECT_EQ(sym.Symbolize(as, 16).function, "[unknown]");
}

// A trace directory with the metadata of a fresh identity, for stream files
// the tests write through OsEncoder.
void NewTraceDir(const std::string& name, std::string* dir, format::TraceIdentity* id) {
  *dir = testing::TempDir(name);
  ASSERT_TRUE(MakeDirs(*dir + "/ctf").ok());
  id->uuid = format::NewRandomUuid();
  ASSERT_TRUE(WriteFileAtomic(*dir + "/ctf/metadata", format::GenerateMetadata(*id)).ok());
}

constexpr uint64_t kRawSample =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;

// The leader and the two syscall tracepoints, with the field layout Records
// writes; returns the fields for the caller to add to before SetTracepoints.
TracepointFields RegisterSyscalls(OsEncoder& enc) {
  enc.RegisterEvent(Records::kLeader, {EventKind::kLeader, 0, 0});
  enc.RegisterEvent(Records::kEnter, {EventKind::kSysEnter, kRawSample, 0});
  enc.RegisterEvent(Records::kExit, {EventKind::kSysExit, kRawSample, 0});
  TracepointFields f;
  f.enter_id = {"id", 8, 8, true};
  f.exit_id = {"id", 8, 8, true};
  f.exit_ret = {"ret", 16, 8, true};
  return f;
}

// Records -> OsEncoder -> cpu stream file -> importer -> model.
TEST(OsEncoder, ReplaysHandMadeRecordsIntoThreadStatesAndSyscalls) {
  std::string dir;
  format::TraceIdentity id;
  ASSERT_NO_FATAL_FAILURE(NewTraceDir("os_encoder", &dir, &id));
  const format::StreamSpec* spec = format::FindStream(format::kCpuStream);
  format::StreamWriter w(id.uuid, *spec, 1, {0});
  ASSERT_TRUE(w.Open(dir + "/ctf/cpu-0").ok());
  OsEncoder enc({}, {&w});
  TracepointFields f = RegisterSyscalls(enc);
  enc.RegisterEvent(Records::kSwitchTp, {EventKind::kSchedSwitch, kRawSample, 0});
  f.switch_prev_state = {"prev_state", 32, 8, true};
  f.switch_next_pid = {"next_pid", 56, 4, true};
  enc.SetTracepoints(f);

  Records r;
  const uint32_t pid = 4242, tid = 4242;
  r.Comm(pid, tid, 1000, "sleepy", true);
  r.Raw(Records::kEnter, pid, tid, 1500, Records::Payload({{8, 35}}, 64));         // nanosleep
  r.Raw(Records::kSwitchTp, pid, tid, 1990, Records::Payload({{32, 1}}, 64));      // S
  r.Switch(pid, tid, 2000, /*out=*/true, /*preempt=*/false);
  r.Switch(pid, tid, 12000, false, false);
  r.Raw(Records::kExit, pid, tid, 12500, Records::Payload({{8, 35}, {16, 0}}, 24));
  r.Switch(pid, tid, 20000, true, /*preempt=*/true);
  r.Lost(7, 21000);
  r.Switch(pid, tid, 25000, false, false);
  r.Exit(pid, tid, 30000);
  enc.Process(0, r.bytes().data(), r.bytes().size());
  // A torn tail is counted, not parsed.
  std::vector<uint8_t> torn(r.bytes().begin(), r.bytes().begin() + 20);
  enc.Process(0, torn.data(), torn.size());
  enc.ResolveFrames();
  EXPECT_EQ(enc.stats().malformed, 1u);
  EXPECT_EQ(enc.lost(0), 7u);
  ASSERT_TRUE(w.Close(40000).ok());

  model::Trace t = testing::Load(dir);
  EXPECT_EQ(t.events_lost, 7u);
  const auto& st = t.thread_states;
  ASSERT_EQ(st.size(), 5u);
  using S = model::ThreadState;
  std::vector<S> states(st.state.begin(), st.state.end());
  // The kernel lost records between 20000 and 21000: what the thread did from
  // its switch out at 20000 to its switch in at 25000 is unknown.
  EXPECT_EQ(states, (std::vector<S>{S::kRunning, S::kSleeping, S::kRunning, S::kUnknown, S::kRunning}));
  EXPECT_EQ(st.ts, (std::vector<int64_t>{1000, 2000, 12000, 20000, 25000}));
  EXPECT_EQ(st.dur, (std::vector<int64_t>{1000, 10000, 8000, 5000, 5000}));
  ASSERT_EQ(t.syscalls.size(), 1u);
  EXPECT_EQ(t.strings.Get(t.syscalls.name[0]), "nanosleep");
  EXPECT_EQ(t.syscalls.dur[0], 11000);
  EXPECT_EQ(st.syscall[1], 0);
  EXPECT_EQ(t.strings.Get(t.tracks[st.track[0]].name), "sleepy");

  analysis::OsSummary o = analysis::AnalyzeOs(t);
  ASSERT_EQ(o.threads.size(), 1u);
  EXPECT_EQ(o.threads[0].on_cpu_ns, 14000);
  EXPECT_EQ(o.threads[0].off_cpu_ns, 10000);
  EXPECT_EQ(o.threads[0].runnable_ns, 0);
  EXPECT_EQ(o.threads[0].unknown_ns, 5000);
  EXPECT_EQ(o.lost_records, 7u);
  ASSERT_FALSE(o.threads[0].causes.empty());
  EXPECT_EQ(o.threads[0].causes[0].cause, "nanosleep");
  EXPECT_EQ(o.threads[0].causes[0].category, "sleep");
  EXPECT_EQ(o.threads[0].causes[0].total_ns, 10000);
}

// A drain reads the rings one after the other, so records of one CPU can reach
// the encoder after younger ones of another CPU (an exec's mmaps after the
// samples that need them). Records younger than the caller's cutoff wait until
// a later call brings what is older, then everything goes out in time order.
TEST(OsEncoder, RecordsYoungerThanTheCutoffWaitForOlderOnesFromOtherRings) {
  std::string dir;
  format::TraceIdentity id;
  ASSERT_NO_FATAL_FAILURE(NewTraceDir("os_encoder_order", &dir, &id));
  const format::StreamSpec* spec = format::FindStream(format::kCpuStream);
  format::StreamWriter w0(id.uuid, *spec, 1, {0}), w1(id.uuid, *spec, 2, {1});
  ASSERT_TRUE(w0.Open(dir + "/ctf/cpu-0").ok());
  ASSERT_TRUE(w1.Open(dir + "/ctf/cpu-1").ok());
  OsEncoder enc({}, {&w0, &w1});
  enc.RegisterEvent(Records::kLeader, {EventKind::kLeader, 0, 0});
  const uint32_t pid = 4242, tid = 4243;
  Records cpu0, cpu1_early, cpu1_late;
  cpu0.Switch(pid, tid, 2000, /*out=*/true, /*preempt=*/false);
  cpu0.Switch(pid, tid, 3000, false, false);
  cpu1_early.Comm(pid, tid, 1000, "sleeper", false);
  cpu1_late.Switch(pid, tid, 5000, true, true);
  // First drain: CPU 0's records are younger than the cutoff (the drain began at
  // 1500): they wait; CPU 1's older record was not read yet.
  enc.ProcessBatch({{0, cpu0.bytes().data(), cpu0.bytes().size()}}, 1500);
  EXPECT_EQ(enc.stats().records, 0u);
  EXPECT_EQ(enc.held_records(), 2u);
  // Second drain (began at 4000) brings it: everything up to 4000 goes out.
  enc.ProcessBatch({{1, cpu1_early.bytes().data(), cpu1_early.bytes().size()},
                    {1, cpu1_late.bytes().data(), cpu1_late.bytes().size()}},
                   4000);
  EXPECT_EQ(enc.stats().records, 3u);
  EXPECT_EQ(enc.held_records(), 1u);
  enc.ProcessBatch({}, UINT64_MAX);
  EXPECT_EQ(enc.stats().records, 4u);
  EXPECT_EQ(enc.held_records(), 0u);
  enc.ResolveFrames();
  ASSERT_TRUE(w0.Close(10000).ok());
  ASSERT_TRUE(w1.Close(10000).ok());
  model::Trace t = testing::Load(dir);
  const auto& st = t.thread_states;
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st.ts, (std::vector<int64_t>{1000, 2000, 3000}));
  EXPECT_EQ(t.strings.Get(t.tracks[st.track[0]].name), "sleeper");
}

// After the kernel drops records, an entry and an exit on either side of the
// gap are not one call (a getpid "lasting" a second), threads whose exit record
// was lost are not "still running", and the report says figures are incomplete.
TEST(OsEncoder, LostRecordsLeaveGapsNotWrongFigures) {
  std::string dir;
  format::TraceIdentity id;
  ASSERT_NO_FATAL_FAILURE(NewTraceDir("os_encoder_lost", &dir, &id));
  const format::StreamSpec* spec = format::FindStream(format::kCpuStream);
  format::StreamWriter w(id.uuid, *spec, 1, {0});
  ASSERT_TRUE(w.Open(dir + "/ctf/cpu-0").ok());
  format::StreamWriter proc(id.uuid, *spec, 2, {format::kSupervisorCpuId});
  ASSERT_TRUE(proc.Open(dir + "/ctf/os-proc").ok());
  OsEncoder enc({}, {&w});
  enc.SetTracepoints(RegisterSyscalls(enc));

  const uint32_t pid = 500, main_tid = 500, worker = 501, joined = 502;
  constexpr int64_t kMs = 1000000;
  Records r;
  r.Comm(pid, main_tid, 1 * kMs, "prog", true);
  // getpid (39) enters; its exit and the next call's entry are lost; the next exit pairs with nothing.
  r.Raw(Records::kEnter, pid, main_tid, 2 * kMs, Records::Payload({{8, 39}}, 64));
  r.Lost(1000, 3 * kMs);
  r.Raw(Records::kExit, pid, main_tid, 1071 * kMs, Records::Payload({{8, 39}, {16, 500}}, 24));
  // A clean getpid afterwards keeps its real duration.
  r.Raw(Records::kEnter, pid, main_tid, 1100 * kMs, Records::Payload({{8, 39}}, 64));
  r.Raw(Records::kExit, pid, main_tid, 1100 * kMs + 700, Records::Payload({{8, 39}, {16, 500}}, 24));
  // Two threads run; neither exit record arrives.
  r.Switch(pid, worker, 1200 * kMs, false, false);
  r.Switch(pid, worker, 1201 * kMs, true, false);
  r.Switch(pid, joined, 1200 * kMs, false, false);
  r.Switch(pid, joined, 1202 * kMs, true, false);
  enc.Process(0, r.bytes().data(), r.bytes().size());
  enc.ResolveFrames();
  // /proc: round 1 lists both threads, round 2 only the worker (the other was joined).
  auto thread_stat = [&](uint32_t tid, uint64_t ts) {
    std::vector<uint8_t> p;
    auto put = [&p](auto v) {
      size_t o = p.size();
      p.resize(o + sizeof v);
      std::memcpy(p.data() + o, &v, sizeof v);
    };
    put(pid), put(tid), put(uint64_t{0}), put(uint64_t{0}), put(uint64_t{0}), put(uint64_t{0}), put(uint32_t{0});
    proc.Append(format::kThreadStat, ts, p.data(), p.size());
  };
  auto process_stat = [&](uint64_t ts) {
    std::vector<uint8_t> p(4 + 8 * 8 + 4, 0);
    std::memcpy(p.data(), &pid, 4);
    proc.Append(format::kProcessStat, ts, p.data(), p.size());
  };
  thread_stat(main_tid, 1300 * kMs), thread_stat(worker, 1300 * kMs), thread_stat(joined, 1300 * kMs);
  process_stat(1300 * kMs);
  thread_stat(main_tid, 1400 * kMs), thread_stat(worker, 1400 * kMs);
  process_stat(1400 * kMs);
  ASSERT_TRUE(w.Close(1500 * kMs).ok());
  ASSERT_TRUE(proc.Close(1500 * kMs).ok());

  model::Trace t = testing::Load(dir);
  ASSERT_EQ(t.syscalls.size(), 2u);
  EXPECT_EQ(t.syscalls.returned[0], 2);  // unpaired: no duration
  EXPECT_EQ(t.syscalls.dur[0], 0);
  EXPECT_EQ(t.syscalls.returned[1], 1);
  EXPECT_EQ(t.syscalls.dur[1], 700);
  std::string warnings;
  for (const auto& x : t.warnings) warnings += x + "\n";
  // The main thread and the worker are listed at the last /proc round: still
  // running. The joined thread is not: it ended between the rounds, its exit
  // record lost.
  EXPECT_NE(warnings.find("2 threads were still running"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("1 threads have no exit record"), std::string::npos) << warnings;

  analysis::OsSummary o = analysis::AnalyzeOs(t);
  ASSERT_EQ(o.syscalls.size(), 1u);
  EXPECT_EQ(o.syscalls[0].name, "getpid");
  EXPECT_EQ(o.syscalls[0].count, 2u);
  EXPECT_EQ(o.syscalls[0].incomplete, 1u);
  EXPECT_EQ(o.syscalls[0].max_ns, 700);  // not 1.069 s
  EXPECT_EQ(o.incomplete_syscalls, 1u);
  EXPECT_EQ(o.lost_records, 1000u);
}

// strata's own threads (named strata-... by strata) are kept out of the
// program's tables, and shown apart.
TEST(OsEncoder, StrataThreadsAreKeptApart) {
  std::string dir;
  format::TraceIdentity id;
  ASSERT_NO_FATAL_FAILURE(NewTraceDir("os_encoder_own", &dir, &id));
  const format::StreamSpec* spec = format::FindStream(format::kCpuStream);
  format::StreamWriter w(id.uuid, *spec, 1, {0});
  ASSERT_TRUE(w.Open(dir + "/ctf/cpu-0").ok());
  OsEncoder enc({}, {&w});
  enc.SetTracepoints(RegisterSyscalls(enc));
  const uint32_t pid = 600, flusher = 601;
  Records r;
  r.Comm(pid, pid, 1000, "prog", true);
  r.Comm(pid, flusher, 1500, "strata-flush", false);
  r.Raw(Records::kEnter, pid, flusher, 2000, Records::Payload({{8, 202}}, 64));  // futex
  r.Raw(Records::kExit, pid, flusher, 900000, Records::Payload({{8, 202}, {16, 0}}, 24));
  r.Raw(Records::kEnter, pid, pid, 3000, Records::Payload({{8, 0}}, 64));  // read
  r.Raw(Records::kExit, pid, pid, 4000, Records::Payload({{8, 0}}, 24));
  r.Exit(pid, flusher, 950000);
  r.Exit(pid, pid, 960000);
  enc.Process(0, r.bytes().data(), r.bytes().size());
  enc.ResolveFrames();
  ASSERT_TRUE(w.Close(1000000).ok());
  analysis::OsSummary o = analysis::AnalyzeOs(testing::Load(dir));
  ASSERT_EQ(o.syscalls.size(), 1u);
  EXPECT_EQ(o.syscalls[0].name, "read");
  ASSERT_EQ(o.strata_threads.size(), 1u);
  EXPECT_EQ(o.strata_threads[0].tid, flusher);
  EXPECT_EQ(o.strata_threads[0].syscalls, 1u);
  for (const auto& x : o.threads) EXPECT_NE(x.tid, flusher);
}

// 3.11's location table against the interpreter's own co_lines(), for a
// module (its first instruction on line 0), a function spanning lines, and a
// comprehension; offsets are in bytes of co_code_adaptive.
TEST(PythonStacks, LineOfAnInstructionFromTheLocationTable) {
  auto bytes = [](const std::string& hex) {
    std::string b;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) b.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return b;
  };
  struct Range {
    int start, end, line;
  };
  struct Case {
    const char* name;
    int first;
    const char* table;
    std::vector<Range> lines;  // co_lines()
  };
  // Generated by /usr/bin/python3.11 from compile(src, "m.py", "exec") of:
  //   total = 0 / for i in range(10): / total += i / (blank) / def f(a, / b): / x = a + b /
  //   if x > 3: / return [y / for y in range(x)] / return None
  std::vector<Case> cases = {
      {"<module>", 1,
       "f003010101e008098005d8090e8815887289198c19f00001010ff00001010f8041d804098851814a80458045f004060110f000060110f0"
       "00060110f000060110f000060110",
       {{0, 2, 0}, {2, 4, 2}, {4, 6, 2}, {6, 8, 3}, {8, 10, 3}, {10, 12, 3}, {12, 16, 3}, {16, 26, 3}, {26, 28, 3},
        {28, 30, 3}, {30, 32, 3}, {32, 34, 4}, {34, 36, 4}, {36, 40, 4}, {40, 42, 4}, {42, 44, 4}, {44, 46, 6},
        {46, 48, 6}, {48, 50, 6}, {50, 52, 6}, {52, 54, 6}}},
      {"f", 6,
       "8000e00809884189058041d80708883182758075f002011023f000011023dd191e987199189c18f003011023f100011023f400011023f00"
       "0010923e00b0f8834",
       {{0, 2, 6}, {2, 4, 8}, {4, 6, 8}, {6, 10, 8}, {10, 12, 8}, {12, 14, 9}, {14, 16, 9}, {16, 22, 9}, {22, 24, 9},
        {24, 26, 10}, {26, 28, 10}, {28, 40, 11}, {40, 42, 11}, {42, 46, 11}, {46, 56, 11}, {56, 58, 10},
        {58, 62, 10}, {62, 72, 10}, {72, 74, 10}, {74, 76, 12}, {76, 78, 12}}},
      {"<listcomp>", 10, "8000f000011023f000011023f000011023d81415f003001112f000011023f000011023f000011023",
       {{0, 2, 10}, {2, 4, 10}, {4, 6, 10}, {6, 8, 10}, {8, 10, 11}, {10, 12, 10}, {12, 14, 10}, {14, 16, 10},
        {16, 18, 10}}},
  };
  for (const Case& c : cases) {
    std::string table = bytes(c.table);
    for (const Range& r : c.lines)
      for (int off = r.start; off < r.end; off += 2)
        EXPECT_EQ(PythonLineAt(table, c.first, off), r.line) << c.name << " at byte " << off;
    EXPECT_EQ(PythonLineAt(table, c.first, -2), c.first) << c.name << ": before the first instruction";
    EXPECT_EQ(PythonLineAt(table, c.first, c.lines.back().end), -1) << c.name << ": past the end";
  }
}

}  // namespace
}  // namespace strata::collectors::os

#include "collectors/os/os_collector.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/error.h"
#include "base/files.h"
#include "collectors/os/os_encoder.h"
#include "collectors/os/perf_event.h"
#include "collectors/os/proc_sampler.h"
#include "collectors/os/python_bpf.h"
#include "collectors/os/python_stacks.h"
#include "collectors/os/tracefs.h"
#include "format/ctf_writer.h"
#include "format/schema.h"
#include "format/schema_os.h"

namespace strata::collectors::os {
namespace {

constexpr uint64_t kStreamIdBase = 0x0Cull << 56;
constexpr uint64_t kPidTag = UINT64_MAX - 1, kStopTag = UINT64_MAX - 2;

int ReadSysctl(const char* path, int fallback) {
  std::ifstream f(path);
  int v;
  return (f >> v) ? v : fallback;
}

// Without BPF (`why`), what the Python frames of samples are worth.
std::string LateNoteFor(const std::string& why) {
  return "read from the interpreter's memory after each sample, not at it (" + why +
         "): a sample's inner Python frames may be those of code that ran a few milliseconds later";
}

size_t FloorPow2(size_t v) {
  size_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

struct OsCollector::Impl {
  struct Ring {
    int cpu = 0;
    int leader = -1;
    PerfRing ring;
    std::vector<int> fds;  // every event of this CPU, leader included
  };
  struct Chunk {
    uint32_t ring = 0;
    std::vector<uint8_t> data;
  };

  OsOptions opt;
  std::string dir;
  format::Uuid uuid;
  pid_t child = -1;
  std::vector<CollectorNote> notes;
  std::vector<Ring> rings;
  std::vector<std::unique_ptr<format::StreamWriter>> streams;
  std::unique_ptr<OsEncoder> encoder;
  std::unique_ptr<ProcSampler> proc;
  // Python stacks read at each sample; null when they are read after it (and why in python_bpf_why).
  std::unique_ptr<PythonBpf> python_bpf;
  std::string python_bpf_why;
  std::unique_ptr<PythonBpf> retired_bpf;  // attached to some events but unused
  std::string LateNote() const { return LateNoteFor(python_bpf_why); }
  size_t ring_pages = 0;
  bool kernel_allowed = false;

  std::mutex mu;
  std::condition_variable cv_data, cv_space;
  std::deque<Chunk> queue;
  std::vector<std::vector<uint8_t>> pool;
  uint64_t queued = 0;
  bool closed = false;
  // Every record stamped before this (trace clock) is in `queue` or already
  // encoded: the start of the last drain that read every ring, less a margin
  // for a record stamped just before it and committed to its ring just after.
  uint64_t drained_before = 0;

  std::thread reader, writer;
  int stop_fd = -1;
  int pidfd = -1;
  bool started = false, stopped = false;
  std::atomic<uint64_t> bytes_read{0}, wakeups{0};
  Status write_status;

  void Note(std::string name, std::string state, std::string detail) {
    notes.push_back({std::move(name), std::move(state), std::move(detail)});
  }
  void SetNote(const std::string& name, std::string state, std::string detail) {
    for (auto& n : notes)
      if (n.name == name) {
        n.state = std::move(state);
        n.detail = std::move(detail);
        return;
      }
    Note(name, std::move(state), std::move(detail));
  }

  // Opens `attr` on every CPU with a ring and routes it there. All or nothing.
  Status OpenOnAllCpus(perf_event_attr attr, const char* what, EventKind kind, std::vector<std::pair<uint64_t, EventInfo>>* ids,
                       const std::string& filter = "") {
    std::vector<std::pair<size_t, int>> opened;
    EventInfo info{kind, attr.sample_type, attr.sample_regs_user};
    Status st;
    for (size_t i = 0; i < rings.size() && st.ok(); ++i) {
      auto fd = PerfEventOpen(attr, child, rings[i].cpu, what);
      if (!fd.ok()) {
        st = fd.status();
        break;
      }
      opened.emplace_back(i, *fd);
      // A filter is an optimization: without it (old kernel) the decoder sees more, not less.
      if (!filter.empty()) (void)PerfSetFilter(*fd, filter);
      st = PerfSetOutput(*fd, rings[i].leader);
      if (!st.ok()) break;
      auto id = PerfEventId(*fd);
      if (!id.ok()) {
        st = id.status();
        break;
      }
      ids->emplace_back(*id, info);
    }
    if (!st.ok()) {
      for (auto& [i, fd] : opened) ::close(fd);
      ids->clear();
      return st;
    }
    for (auto& [i, fd] : opened) rings[i].fds.push_back(fd);
    return OkStatus();
  }

  void Register(const std::vector<std::pair<uint64_t, EventInfo>>& ids) {
    for (auto& [id, info] : ids) encoder->RegisterEvent(id, info);
  }

  bool OpenLeaders(std::string* error);
  void OpenTracepoints(const std::string& why_priv);
  void OpenSampling();
  void OpenPythonBpf(const std::vector<int>& sample_fds);
  void ReaderLoop();
  void WriterLoop();
  bool DrainRings(bool final);
};

bool OsCollector::Impl::OpenLeaders(std::string* error) {
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t kb = opt.ring_kb;
  long ncpu = ::sysconf(_SC_NPROCESSORS_CONF);
  if (kb == 0) {
    // Syscall tracing writes ~2 records per call: 4 MiB rings kept 1M calls/s on
    // both CPUs loss-free in the research runs. Locked kernel memory grows with the
    // CPU count, so large machines get smaller rings (128 MiB in all at most).
    kb = kernel_allowed ? (opt.syscalls ? 4096 : 1024) : 512;
    kb = std::min<size_t>(kb, std::max<size_t>(256, (128u << 10) / static_cast<size_t>(std::max(ncpu, 1L))));
  }
  ring_pages = std::max<size_t>(FloorPow2(kb * 1024 / page), 1);
  bool build_id = true;
  for (long cpu = 0; cpu < ncpu; ++cpu) {
    perf_event_attr a = BaseAttr(!kernel_allowed);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.task = 1;
    a.comm = 1;
    a.comm_exec = 1;
    a.mmap = 1;
    a.mmap2 = 1;
    a.context_switch = 1;
    a.build_id = build_id;
    a.watermark = 1;
    a.wakeup_watermark = static_cast<uint32_t>(ring_pages * page / 4);
    int err = 0;
    auto fd = PerfEventOpen(a, child, static_cast<int>(cpu), "dummy+context_switch", &err);
    if (!fd.ok() && build_id && err == EINVAL) {
      build_id = false;  // MMAP2 build ids need Linux 5.12
      a.build_id = 0;
      fd = PerfEventOpen(a, child, static_cast<int>(cpu), "dummy+context_switch", &err);
    }
    if (!fd.ok()) {
      if (err == ENODEV) continue;  // an offline CPU
      *error = fd.status().message();
      for (auto& r : rings)
        for (int f : r.fds) ::close(f);
      rings.clear();
      return false;
    }
    Ring r;
    r.cpu = static_cast<int>(cpu);
    r.leader = *fd;
    r.fds.push_back(*fd);
    // The per-user locked-memory budget may not fit our ring: halve until it does.
    for (;;) {
      auto ring = PerfRing::Map(*fd, ring_pages);
      if (ring.ok()) {
        r.ring = std::move(ring).value();
        break;
      }
      if (ring_pages <= 1) {
        *error = ring.status().message();
        ::close(*fd);
        for (auto& x : rings)
          for (int f : x.fds) ::close(f);
        rings.clear();
        return false;
      }
      ring_pages /= 2;
    }
    rings.push_back(std::move(r));
  }
  if (rings.empty()) {
    *error = "no online CPU accepted a perf event";
    return false;
  }
  return true;
}

void OsCollector::Impl::OpenTracepoints(const std::string& why_priv) {
  // Context-switch records come from the leaders, privileged or not.
  Note("os.sched", "ok", "context switches: on/off-CPU intervals of every thread, preempted vs blocked");
  std::string tracefs, tf_error;
  if (!(opt.sched_detail || opt.syscalls || opt.block_io)) {
    // Nothing below needs tracefs: do not mount it.
  } else if (why_priv.empty()) {
    bool mounted = false;
    auto t = FindTracefs(true, &mounted);
    if (t.ok()) tracefs = *t;
    else tf_error = t.status().message();
  } else {
    tf_error = why_priv;
  }
  TracepointFields f;
  auto tp_open = [&](const char* sys, const char* name, EventKind kind,
                     const std::vector<std::pair<const char*, TracepointField*>>& fields, uint64_t extra = 0,
                     const std::string& filter = "") -> Status {
    if (tracefs.empty()) return Status(StatusCode::kUnavailable, tf_error);
    auto fmt = ReadTracepointFormat(tracefs, sys, name);
    if (!fmt.ok()) return fmt.status();
    for (auto& [fname, out] : fields) {
      const TracepointField* tf = fmt->Find(fname);
      if (!tf) return Err(StatusCode::kUnsupported, "{}:{} has no field '{}' on this kernel", sys, name, fname);
      *out = *tf;
    }
    perf_event_attr a = BaseAttr(false);
    a.type = PERF_TYPE_TRACEPOINT;
    a.config = fmt->id;
    a.sample_type |= PERF_SAMPLE_RAW | extra;
    std::vector<std::pair<uint64_t, EventInfo>> ids;
    std::string what = std::string(sys) + ":" + name;
    STRATA_RETURN_IF_ERROR(OpenOnAllCpus(a, what.c_str(), kind, &ids, filter));
    Register(ids);
    return OkStatus();
  };

  if (!opt.sched_detail) {
    Note("os.sched_detail", "off",
         "not requested (--sched: sleep state S/D, the user stack each wait began in, and wakeups; about 1-3 us per "
         "context switch)");
  } else {
    // Only blocking switches: preemptions are known from the switch records, and
    // the filter spares their sample and call chain in the kernel.
    Status sw = tp_open("sched", "sched_switch", EventKind::kSchedSwitch,
                        {{"prev_pid", &f.switch_prev_pid}, {"prev_state", &f.switch_prev_state},
                         {"next_pid", &f.switch_next_pid}},
                        PERF_SAMPLE_CALLCHAIN, "prev_state & 255");
    Status wk = tp_open("sched", "sched_wakeup", EventKind::kSchedWakeup,
                        {{"pid", &f.wakeup_pid}, {"target_cpu", &f.wakeup_target_cpu}});
    if (sw.ok() && wk.ok())
      Note("os.sched_detail", "ok",
           "sleep state (S/D) and the user stack each wait began in (sched:sched_switch), wakeups "
           "(sched:sched_wakeup; only those done by traced tasks)");
    else if (sw.ok() || wk.ok())
      Note("os.sched_detail", "partial",
           std::string(sw.ok() ? "no wakeups: " + wk.message() : "no sleep state or blocked stacks: " + sw.message()));
    else
      Note("os.sched_detail", "unavailable", "no sleep state, blocked stacks or wakeups: " + sw.message());
  }

  if (!opt.syscalls) {
    Note("os.syscalls", "off", "not requested (--syscalls; costs about 1.3 us per system call); off-CPU time is not attributed to system calls");
  } else {
    Status en = tp_open("raw_syscalls", "sys_enter", EventKind::kSysEnter, {{"id", &f.enter_id}});
    Status ex = en.ok() ? tp_open("raw_syscalls", "sys_exit", EventKind::kSysExit, {{"id", &f.exit_id}, {"ret", &f.exit_ret}})
                        : en;
    if (en.ok() && ex.ok())
      Note("os.syscalls", "ok", "every system call's entry and exit (raw_syscalls), named from strata's x86-64 table");
    else if (en.ok())
      Note("os.syscalls", "partial", "system call entries only (counts, no durations): " + ex.message());
    else
      Note("os.syscalls", "unavailable", "system calls not recorded: " + en.message());
  }

  if (!opt.block_io) {
    Note("os.block", "off", "not requested (--block-io)");
  } else {
    // The byte count field is "bytes" on current kernels; older ones have only nr_sector.
    Status b = tp_open("block", "block_rq_issue", EventKind::kBlockIssue,
                       {{"dev", &f.block_dev}, {"sector", &f.block_sector}, {"bytes", &f.block_bytes}, {"rwbs", &f.block_rwbs}});
    if (b.ok())
      Note("os.block", "ok", "block requests issued by traced tasks (block:block_rq_issue); completions happen in interrupt context and are not seen per task");
    else
      Note("os.block", "unavailable", "block I/O not recorded: " + b.message());
  }
  encoder->SetTracepoints(f);
}

void OsCollector::Impl::OpenPythonBpf(const std::vector<int>& sample_fds) {
  auto bpf = PythonBpf::Load();
  if (!bpf.ok()) {
    python_bpf_why = bpf.status().message();
    return;
  }
  std::unique_ptr<PythonBpf> b = std::move(bpf).value();
  std::vector<std::pair<uint64_t, EventInfo>> ids;
  Status st;
  for (size_t i = 0; i < rings.size() && st.ok(); ++i) {
    auto out = b->OpenOutput(rings[i].cpu);
    if (!out.ok()) {
      st = out.status();
      break;
    }
    st = PerfSetOutput(*out, rings[i].leader);
    if (!st.ok()) break;
    auto id = PerfEventId(*out);
    if (!id.ok()) {
      st = id.status();
      break;
    }
    perf_event_attr a = BaseAttr(false);
    ids.emplace_back(*id, EventInfo{EventKind::kPythonStack, a.sample_type | PERF_SAMPLE_RAW, 0});
  }
  // The program writes nothing until the encoder registers an interpreter, so
  // a failure half-way leaves it attached but silent.
  for (size_t i = 0; i < sample_fds.size() && st.ok(); ++i) st = b->Attach(sample_fds[i]);
  if (!st.ok()) {
    python_bpf_why = st.message();
    retired_bpf = std::move(b);
    return;
  }
  Register(ids);
  python_bpf = std::move(b);
  encoder->SetPythonBpf(python_bpf.get());
}

void OsCollector::Impl::OpenSampling() {
  if (opt.sample_hz == 0) {
    Note("os.samples", "off", "not requested (--sample-hz 0)");
  } else {
    uint32_t hz = opt.sample_hz;
    int max_rate = ReadSysctl("/proc/sys/kernel/perf_event_max_sample_rate", 100000);
    std::string clamp;
    if (max_rate > 0 && hz > static_cast<uint32_t>(max_rate)) {
      clamp = fmt::format(" (asked {} Hz; kernel.perf_event_max_sample_rate is {})", hz, max_rate);
      hz = static_cast<uint32_t>(max_rate);
    }
    perf_event_attr a = BaseAttr(!kernel_allowed);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.freq = 1;
    a.sample_freq = hz;
    a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
    bool dwarf = opt.unwind == Unwind::kDwarf;
    if (dwarf) {
      a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
      a.sample_regs_user = kX86RegsMask;
      a.sample_stack_user = (std::min<uint32_t>(opt.dwarf_stack_bytes, 65528) + 7) & ~7u;
    }
    std::vector<std::pair<uint64_t, EventInfo>> ids;
    Status st = OpenOnAllCpus(a, "cpu-clock", EventKind::kCpuClock, &ids);
    if (st.ok()) {
      Register(ids);
      if (opt.python && PythonStacks::Supported()) {
        std::vector<int> sample_fds;
        for (const Ring& r : rings) sample_fds.push_back(r.fds.back());
        OpenPythonBpf(sample_fds);
      }
      std::string how = dwarf ? fmt::format("user stacks unwound with DWARF CFI (libdw) from {} KiB stack copies",
                                            a.sample_stack_user / 1024)
                              : "user stacks by frame pointers (code built without them, such as Debian's libc and "
                                "python3.11, shows only its innermost frame; --unwind dwarf recovers them)";
      std::string kernel = kernel_allowed ? "; samples in kernel mode end in a [kernel] frame"
                                          : "; time in the kernel (system calls, page faults) is not sampled: "
                                            "exclude_kernel, needs root or CAP_PERFMON (perf_event_paranoid=" +
                                                std::to_string(PerfEventParanoid()) + ")";
      Note("os.samples", clamp.empty() && kernel_allowed ? "ok" : "partial",
           fmt::format("cpu-clock at {} Hz{}, {}{}", hz, clamp, how, kernel));
    } else {
      Note("os.samples", "unavailable", "CPU samples not recorded: " + st.message());
    }
  }
  if (opt.sample_hz == 0) {
    Note("os.python", "off", "no CPU samples");
  } else if (!opt.python) {
    Note("os.python", "off", "not requested");
  } else if (python_bpf) {
    Note("os.python", "ok", "Python " + PythonStacks::SupportedVersions() +
                                " frames (function, file, line) read by a BPF program at each sample of an interpreter "
                                "thread");
  } else {
    Note("os.python", "partial", "Python " + PythonStacks::SupportedVersions() + " frames (function, file, line) " + LateNote());
  }
  if (!opt.page_faults) {
    Note("os.faults", "off", "not requested (--page-faults)");
  } else {
    perf_event_attr a = BaseAttr(!kernel_allowed);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_PAGE_FAULTS;
    a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
    std::vector<std::pair<uint64_t, EventInfo>> ids;
    Status st = OpenOnAllCpus(a, "page-faults", EventKind::kPageFault, &ids);
    if (st.ok()) {
      Register(ids);
      Note("os.faults", "ok", "every page fault with its address and faulting instruction");
    } else {
      Note("os.faults", "unavailable", "page faults not recorded: " + st.message());
    }
  }
}

OsCollector::OsCollector(OsOptions opt, std::string ctf_dir, const format::Uuid& uuid) : impl_(std::make_unique<Impl>()) {
  impl_->opt = opt;
  impl_->dir = std::move(ctf_dir);
  impl_->uuid = uuid;
}

OsCollector::~OsCollector() { (void)Stop(); }

const std::vector<CollectorNote>& OsCollector::notes() const { return impl_->notes; }
bool OsCollector::active() const { return !impl_->rings.empty(); }

void OsCollector::Open(pid_t child) {
  Impl& m = *impl_;
  m.child = child;
  const format::StreamSpec* spec = format::FindStream(format::kCpuStream);
  if (m.opt.proc_hz > 0) {
    auto w = std::make_unique<format::StreamWriter>(m.uuid, *spec, kStreamIdBase | format::kSupervisorCpuId,
                                                    std::vector<uint64_t>{format::kSupervisorCpuId});
    Status st = w->Open(JoinPath(m.dir, "os-proc"));
    if (st.ok()) {
      m.proc = std::make_unique<ProcSampler>(m.opt.proc_hz, std::move(w));
      m.Note("os.proc", "ok",
             fmt::format("/proc at {} Hz: CPU time and context switches per thread; RSS, I/O bytes and page faults "
                         "per process",
                         m.opt.proc_hz));
    } else {
      m.Note("os.proc", "unavailable", st.message());
    }
  } else {
    m.Note("os.proc", "off", "not requested (--proc-hz 0)");
  }
  if (!m.opt.perf) return;

  bool priv = HasPerfmonPrivilege();
  int paranoid = PerfEventParanoid();
  m.kernel_allowed = priv || paranoid <= 1;
  bool raw_allowed = priv || paranoid <= -1;
  std::string why_priv =
      raw_allowed ? "" : fmt::format("needs root or CAP_PERFMON (perf_event_paranoid={})", paranoid);

  std::string error;
  if (!m.OpenLeaders(&error)) {
    std::string d = "perf_event_open refused: " + error;
    m.Note("os.sched", "unavailable", "no scheduling data: " + d);
    m.Note("os.syscalls", m.opt.syscalls ? "unavailable" : "off", m.opt.syscalls ? "no system calls: " + d : "not requested (--syscalls)");
    m.Note("os.samples", m.opt.sample_hz ? "unavailable" : "off", m.opt.sample_hz ? "no CPU samples: " + d : "not requested");
    return;
  }
  std::vector<format::StreamWriter*> raw_streams;
  for (auto& r : m.rings) {
    auto w = std::make_unique<format::StreamWriter>(m.uuid, *spec, kStreamIdBase | static_cast<uint64_t>(r.cpu),
                                                    std::vector<uint64_t>{static_cast<uint64_t>(r.cpu)});
    Status st = w->Open(JoinPath(m.dir, "cpu-" + std::to_string(r.cpu)));
    if (!st.ok() && m.write_status.ok()) m.write_status = st;
    raw_streams.push_back(w.get());
    m.streams.push_back(std::move(w));
  }
  EncoderOptions eo;
  eo.dwarf = m.opt.unwind == Unwind::kDwarf;
  eo.python = m.opt.python;
  m.encoder = std::make_unique<OsEncoder>(eo, raw_streams);
  for (auto& r : m.rings) {
    auto id = PerfEventId(r.leader);
    if (id.ok()) m.encoder->RegisterEvent(*id, {EventKind::kLeader, BaseAttr(false).sample_type, 0});
  }
  m.OpenTracepoints(why_priv);
  m.OpenSampling();
}

void OsCollector::Start() {
  Impl& m = *impl_;
  if (m.started) return;
  m.started = true;
  if (m.proc) m.proc->Start(m.child);
  if (m.rings.empty()) return;
  m.stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  m.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, m.child, 0));
  m.reader = std::thread([&m] { m.ReaderLoop(); });
  m.writer = std::thread([&m] { m.WriterLoop(); });
}

bool OsCollector::Impl::DrainRings(bool final) {
  bool any = false, complete = true;
  uint64_t start = MonotonicNs();
  for (uint32_t i = 0; i < rings.size(); ++i) {
    size_t avail = rings[i].ring.Available();
    if (avail == 0) continue;
    Chunk c;
    c.ring = i;
    {
      std::unique_lock<std::mutex> lock(mu);
      // Over budget: leave the records in the ring. If the writer does not catch
      // up, the kernel drops what does not fit and says so (PERF_RECORD_LOST).
      if (queued + avail > opt.queue_bytes) {
        if (!final) {
          complete = false;
          continue;
        }
        cv_space.wait(lock, [&] { return queued + avail <= opt.queue_bytes || queue.empty(); });
      }
      if (!pool.empty()) {
        c.data = std::move(pool.back());
        pool.pop_back();
      }
    }
    c.data.clear();
    size_t n = rings[i].ring.CopyOut(&c.data);
    bytes_read += n;
    any = true;
    {
      std::lock_guard<std::mutex> lock(mu);
      queued += c.data.size();
      queue.push_back(std::move(c));
    }
    cv_data.notify_one();
  }
  if (complete) {
    // A record is committed to its ring within microseconds of its timestamp
    // (interrupts off in between); 1 ms is ample.
    constexpr uint64_t kCommitMargin = 1'000'000;
    std::lock_guard<std::mutex> lock(mu);
    if (start > kCommitMargin) drained_before = std::max(drained_before, start - kCommitMargin);
  }
  return any;
}

void OsCollector::Impl::ReaderLoop() {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  for (uint32_t i = 0; i < rings.size(); ++i) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = i;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, rings[i].leader, &e);
  }
  for (auto [fd, tag] : {std::pair<int, uint64_t>{pidfd, kPidTag}, {stop_fd, kStopTag}}) {
    if (fd < 0) continue;
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = tag;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
  }
  // Rings wake us when a quarter full; the timeout bounds how stale data on disk
  // (and Python stacks read for samples) can be when the rate is low.
  int timeout_ms = opt.sample_hz > 0 && opt.python ? 10 : 50;
  bool done = false;
  while (!done) {
    epoll_event evs[64];
    int n = ::epoll_wait(ep, evs, 64, timeout_ms);
    ++wakeups;
    for (int k = 0; k < n; ++k) {
      uint64_t tag = evs[k].data.u64;
      if (tag == kPidTag || tag == kStopTag) {
        done = true;
      } else if (evs[k].events & (EPOLLHUP | EPOLLERR)) {
        // Every task of this event has exited: nothing more will come, and the
        // level-triggered HUP would wake us forever.
        ::epoll_ctl(ep, EPOLL_CTL_DEL, rings[tag].leader, nullptr);
      }
    }
    DrainRings(false);
  }
  DrainRings(true);
  ::close(ep);
  {
    std::lock_guard<std::mutex> lock(mu);
    closed = true;
  }
  cv_data.notify_all();
}

constexpr auto kResolvePeriod = std::chrono::seconds(1);

void OsCollector::Impl::WriterLoop() {
  auto flush_period = std::chrono::milliseconds(std::max<uint32_t>(opt.flush_ms, 1));
  auto last_flush = std::chrono::steady_clock::now();
  auto last_resolve = last_flush;
  std::deque<Chunk> work;
  std::vector<OsEncoder::Span> spans;
  for (;;) {
    bool finished = false;
    uint64_t cutoff = 0;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv_data.wait_for(lock, flush_period, [&] { return !queue.empty() || closed; });
      work.swap(queue);
      for (auto& c : work) queued -= c.data.size();
      finished = closed && work.empty();
      // Once closed, the final drain is in `work`: nothing older can come.
      cutoff = closed ? UINT64_MAX : drained_before;
    }
    cv_space.notify_all();
    spans.clear();
    for (Chunk& c : work) spans.push_back({c.ring, c.data.data(), c.data.size()});
    // Records younger than the cutoff wait in the encoder: another ring may still
    // hold older ones that the next drain brings.
    encoder->ProcessBatch(spans, cutoff);
    {
      std::lock_guard<std::mutex> lock(mu);
      for (Chunk& c : work)
        if (pool.size() < 16) pool.push_back(std::move(c.data));
    }
    work.clear();
    encoder->MapPending();
    auto now = std::chrono::steady_clock::now();
    // Frames are symbolized as the run goes (once a second), not all at the
    // end: loading the symbol tables of libtorch and libpython took ~120 ms,
    // which a user waited for after the program had ended.
    if (finished || now - last_resolve >= kResolvePeriod) {
      encoder->ResolveFrames();
      last_resolve = now;
    }
    size_t pending = 0;
    for (auto& s : streams) pending += s->pending_bytes();
    if (finished || now - last_flush >= flush_period || pending > (4u << 20)) {
      uint64_t ts = MonotonicNs();
      for (auto& s : streams) {
        Status st = s->Flush(ts);
        if (!st.ok() && write_status.ok()) write_status = st;
      }
      last_flush = now;
    }
    if (finished) break;
  }
}

Status OsCollector::Stop() {
  Impl& m = *impl_;
  if (m.stopped) return m.write_status;
  m.stopped = true;
  if (m.reader.joinable()) {
    uint64_t one = 1;
    ssize_t w = ::write(m.stop_fd, &one, sizeof one);
    (void)w;
    m.reader.join();
  }
  if (m.writer.joinable()) m.writer.join();
  uint64_t end = MonotonicNs();
  for (size_t i = 0; i < m.streams.size(); ++i) {
    auto& s = m.streams[i];
    Status st = s->Close(end);
    if (!st.ok() && m.write_status.ok()) m.write_status = st;
    if (s->packets() == 0) ::unlink(JoinPath(m.dir, "cpu-" + std::to_string(m.rings[i].cpu)).c_str());
  }
  for (auto& r : m.rings) {
    r.ring = PerfRing();
    for (int fd : r.fds) ::close(fd);
    r.fds.clear();
  }
  for (int* fd : {&m.stop_fd, &m.pidfd})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
  if (m.proc) {
    Status st = m.proc->Stop();
    if (!st.ok() && m.write_status.ok()) m.write_status = st;
    std::string path = JoinPath(m.dir, "os-proc");
    auto f = MappedFile::Open(path);
    if (f.ok() && f->size() == 0) ::unlink(path.c_str());
  }
  if (m.encoder) {
    const EncoderStats& es = m.encoder->stats();
    if (m.opt.python && m.opt.sample_hz > 0 && PythonStacks::Supported()) {
      std::string extra;
      for (const auto& n : es.python_notes) extra += (extra.empty() ? "" : "; ") + n;
      bool at_sample = m.python_bpf != nullptr;
      std::string how = at_sample ? "read by a BPF program at each sample" : m.LateNote();
      if (at_sample && es.python_bpf_refused > 0) {
        how += fmt::format(", except {} processes read from memory after each sample ({})", es.python_bpf_refused,
                           es.python_bpf_why);
        at_sample = false;
      }
      if (es.python_processes > 0)
        m.SetNote("os.python", extra.empty() && at_sample ? "ok" : "partial",
                  fmt::format("Python {} frames in {} of {} samples ({} interpreter processes), {}{}",
                              m.encoder->PythonVersionsSeen(), es.python_samples, es.samples, es.python_processes,
                              how,
                              extra.empty() ? "" : "; not read: " + extra));
      else if (!extra.empty())
        m.SetNote("os.python", "unavailable", "no Python frames: " + extra);
    }
    if (es.lost > 0)
      m.SetNote("os.lost", "partial",
                fmt::format("the kernel dropped {} records ({} KiB rings per CPU could not hold the event rate; "
                            "counted in each cpu stream's events_discarded)",
                            es.lost, m.ring_pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE)) / 1024));
    m.encoder->SetPythonBpf(nullptr);
  }
  m.python_bpf.reset();
  m.retired_bpf.reset();
  return m.write_status;
}

OsStats OsCollector::stats() const {
  const Impl& m = *impl_;
  OsStats s;
  s.cpus = static_cast<uint32_t>(m.rings.size());
  s.ring_kb = static_cast<uint32_t>(m.ring_pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE)) / 1024);
  s.bytes_read = m.bytes_read;
  s.reader_wakeups = static_cast<double>(m.wakeups);
  if (m.encoder) {
    const EncoderStats& es = m.encoder->stats();
    s.events = es.events;
    s.records = es.records;
    s.lost = es.lost;
    s.throttled = es.throttled;
    s.malformed = es.malformed;
    s.samples = es.samples;
    s.python_samples = es.python_samples;
  }
  if (m.proc) s.proc_samples = m.proc->samples();
  for (const auto& w : m.streams) s.reordered += w->clamped();
  return s;
}

}  // namespace strata::collectors::os

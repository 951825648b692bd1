#include "collectors/os/python_bpf.h"

#include "collectors/os/python_layout.h"

#ifdef STRATA_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/error.h"
#include "collectors/os/perf_event.h"
#endif

namespace strata::collectors::os {

#ifdef STRATA_HAVE_BPF

// python_stacks_bpf_object.cc, generated at build time from python_stacks.bpf.c.
extern const unsigned char kPythonStacksBpf[];
extern const size_t kPythonStacksBpf_size;

namespace {

// python_stacks.bpf.c's struct proc (and its struct layout).
struct BpfProc {
  uint64_t runtime;
  uint64_t runtime_interpreters_head, interp_threads_head, tstate_next, tstate_native_thread_id, tstate_cframe,
      cframe_current_frame, current_frame_direct, frame_code, frame_previous, frame_prev_instr, frame_owner,
      cstack_owner;
};
constexpr size_t kFrameHeadBytes = 80;  // python_stacks.bpf.c's FRAME_HEAD_BYTES

// libbpf reports through one process-wide callback; the supervisor loads one
// program, once, so a static buffer holds what it said.
std::mutex g_log_mu;
std::string* g_log = nullptr;

int CaptureLog(enum libbpf_print_level level, const char* format, va_list args) {
  // STRATA_BPF_LOG=1: all of libbpf's and the verifier's words on stderr (the
  // note keeps only the last line), for whoever changes python_stacks.bpf.c.
  if (std::getenv("STRATA_BPF_LOG")) {
    std::vfprintf(stderr, format, args);
    return 0;
  }
  if (level == LIBBPF_DEBUG || !g_log) return 0;
  char line[512];
  int n = std::vsnprintf(line, sizeof line, format, args);
  if (n > 0) g_log->append(line, std::min<size_t>(static_cast<size_t>(n), sizeof line - 1));
  return 0;
}

// The last line libbpf printed that says something (the verifier's verdict).
std::string LastLine(const std::string& log) {
  std::string last;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    if (line.find_first_not_of(" \t") != std::string::npos) last = line;
    start = end + 1;
  }
  return last;
}

}  // namespace

struct PythonBpf::Impl {
  bpf_object* obj = nullptr;
  int prog = -1, procs = -1, out = -1;
  std::vector<int> outputs;
  ~Impl() {
    for (int fd : outputs) ::close(fd);
    if (obj) bpf_object__close(obj);
  }
};

bool PythonBpf::Built() { return true; }

StatusOr<std::unique_ptr<PythonBpf>> PythonBpf::Load() {
  std::unique_ptr<PythonBpf> p(new PythonBpf());
  p->impl_ = std::make_unique<Impl>();
  Impl& m = *p->impl_;
  std::string log;
  int err = 0;
  {
    std::lock_guard<std::mutex> lock(g_log_mu);
    g_log = &log;
    libbpf_print_fn_t old = libbpf_set_print(CaptureLog);
    LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "strata_python");
    m.obj = bpf_object__open_mem(kPythonStacksBpf, kPythonStacksBpf_size, &opts);
    if (!m.obj) err = errno ? errno : EINVAL;
    if (m.obj && bpf_object__load(m.obj) != 0) err = errno ? errno : EINVAL;
    libbpf_set_print(old);
    g_log = nullptr;
  }
  if (!m.obj || err != 0) {
    bool denied = err == EPERM || err == EACCES;
    std::string why = denied ? "needs CAP_BPF and CAP_PERFMON, or root" : std::strerror(err);
    // libbpf's last word says more than errno unless the kernel simply said no.
    std::string last = denied ? "" : LastLine(log);
    return Err(StatusCode::kUnavailable, "loading the BPF program refused ({}){}", why,
               last.empty() ? "" : ": " + last);
  }
  bpf_program* prog = bpf_object__find_program_by_name(m.obj, "python_stack");
  bpf_map* procs = bpf_object__find_map_by_name(m.obj, "procs");
  bpf_map* out = bpf_object__find_map_by_name(m.obj, "out");
  if (!prog || !procs || !out) return Status(StatusCode::kInternal, "the BPF object lacks its program or maps");
  m.prog = bpf_program__fd(prog);
  m.procs = bpf_map__fd(procs);
  m.out = bpf_map__fd(out);
  return p;
}

PythonBpf::~PythonBpf() = default;

Status PythonBpf::Attach(int sample_fd) {
  if (::ioctl(sample_fd, PERF_EVENT_IOC_SET_BPF, impl_->prog) != 0)
    return Err(StatusCode::kUnavailable, "ioctl(PERF_EVENT_IOC_SET_BPF): {}", std::strerror(errno));
  return OkStatus();
}

StatusOr<int> PythonBpf::OpenOutput(int cpu) {
  // A CPU-wide event, enabled now: bpf_perf_event_output writes only through
  // an event active on the CPU the program runs on.
  perf_event_attr a = BaseAttr(false);
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_BPF_OUTPUT;
  a.sample_type |= PERF_SAMPLE_RAW;
  a.disabled = 0;
  a.enable_on_exec = 0;
  a.inherit = 0;
  auto fd = PerfEventOpen(a, -1, cpu, "bpf-output");
  if (!fd.ok()) return fd.status();
  impl_->outputs.push_back(*fd);
  uint32_t key = static_cast<uint32_t>(cpu);
  int value = *fd;
  if (bpf_map_update_elem(impl_->out, &key, &value, BPF_ANY) != 0)
    return Err(StatusCode::kUnavailable, "bpf_map_update_elem(out, cpu {}): {}", cpu, std::strerror(errno));
  return *fd;
}

Status PythonBpf::AddProcess(uint32_t pid, uint64_t runtime, const StrataPyLayout& l) {
  // The program reads a frame's first kFrameHeadBytes, as 8-byte words.
  for (size_t off : {l.frame_code, l.frame_previous, l.frame_prev_instr})
    if (off % 8 != 0 || off + 8 > kFrameHeadBytes)
      return Status(StatusCode::kUnsupported, "this interpreter's frame layout does not fit the BPF program");
  if (l.frame_owner >= kFrameHeadBytes)
    return Status(StatusCode::kUnsupported, "this interpreter's frame layout does not fit the BPF program");
  BpfProc p{runtime,          l.runtime_interpreters_head, l.interp_threads_head, l.tstate_next,
            l.tstate_native_thread_id, l.tstate_cframe, l.cframe_current_frame, l.current_frame_direct,
            l.frame_code,     l.frame_previous, l.frame_prev_instr, l.frame_owner, l.cstack_owner};
  if (bpf_map_update_elem(impl_->procs, &pid, &p, BPF_ANY) != 0)
    return Err(StatusCode::kUnavailable, "bpf_map_update_elem(procs): {}", std::strerror(errno));
  return OkStatus();
}

void PythonBpf::RemoveProcess(uint32_t pid) { (void)bpf_map_delete_elem(impl_->procs, &pid); }

#else  // !STRATA_HAVE_BPF

struct PythonBpf::Impl {};

bool PythonBpf::Built() { return false; }

StatusOr<std::unique_ptr<PythonBpf>> PythonBpf::Load() {
  return Status(StatusCode::kUnsupported, "strata was built without clang's BPF target or libbpf-dev");
}

PythonBpf::~PythonBpf() = default;
Status PythonBpf::Attach(int) { return Status(StatusCode::kUnsupported, "no BPF"); }
StatusOr<int> PythonBpf::OpenOutput(int) { return Status(StatusCode::kUnsupported, "no BPF"); }
Status PythonBpf::AddProcess(uint32_t, uint64_t, const StrataPyLayout&) { return Status(StatusCode::kUnsupported, "no BPF"); }
void PythonBpf::RemoveProcess(uint32_t) {}

#endif

}  // namespace strata::collectors::os

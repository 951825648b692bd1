#include "collectors/os/proc_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/clock.h"
#include "format/schema_os.h"

namespace strata::collectors::os {
namespace {

// Reads a small /proc file into buf (NUL-terminated). Returns its length, or -1.
ssize_t ReadProc(const char* path, char* buf, size_t cap) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = ::read(fd, buf, cap - 1);
  ::close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return n;
}

// Fields of /proc/<pid>/[task/<tid>/]stat after the parenthesized comm, 1-based as in proc(5).
bool StatFields(const char* text, std::vector<uint64_t>* f) {
  const char* p = std::strrchr(text, ')');
  if (!p) return false;
  p += 2;  // ") "
  f->assign(4, 0);  // fields 1-3 (pid, comm, state) are not parsed; keep indices aligned
  ++p;             // skip field 3, the state letter
  while (*p) {
    while (*p == ' ') ++p;
    if (!*p || *p == '\n') break;
    char* end;
    f->push_back(std::strtoull(p, &end, 10));
    if (end == p) break;
    p = end;
  }
  return f->size() > 24;
}

uint64_t StatusValue(const char* text, const char* key) {
  const char* p = std::strstr(text, key);
  if (!p) return 0;
  return std::strtoull(p + std::strlen(key), nullptr, 10);
}

template <typename... T>
void Put(std::vector<uint8_t>& b, T... v) {
  (
      [&b](auto x) {
        size_t o = b.size();
        b.resize(o + sizeof x);
        std::memcpy(b.data() + o, &x, sizeof x);
      }(v),
      ...);
}

}  // namespace

ProcSampler::ProcSampler(uint32_t hz, std::unique_ptr<format::StreamWriter> writer)
    : hz_(hz ? hz : 10), writer_(std::move(writer)) {
  long tck = ::sysconf(_SC_CLK_TCK);
  if (tck > 0) ns_per_tick_ = 1000000000 / tck;
}

ProcSampler::~ProcSampler() { (void)Stop(); }

void ProcSampler::Start(pid_t root) {
  root_ = root;
  pids_.insert(root);
  thread_ = std::thread([this] { Run(); });
}

void ProcSampler::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto period = std::chrono::nanoseconds(1000000000 / hz_);
  while (!stop_) {
    lock.unlock();
    SampleOnce();
    lock.lock();
    cv_.wait_for(lock, period, [this] { return stop_; });
  }
}

Status ProcSampler::Stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  if (writer_ && writer_->is_open()) {
    uint64_t now = MonotonicNs();
    status_ = writer_->Close(now);
  }
  return status_;
}

void ProcSampler::Discover() {
  // Children of every thread of every known process (CONFIG_PROC_CHILDREN).
  std::set<pid_t> next;
  char path[320], buf[4096];
  for (pid_t pid : pids_) {
    std::snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR* d = ::opendir(path);
    if (!d) continue;  // gone
    next.insert(pid);
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::snprintf(path, sizeof path, "/proc/%d/task/%s/children", pid, e->d_name);
      if (ReadProc(path, buf, sizeof buf) <= 0) continue;
      char* p = buf;
      while (*p) {
        char* end;
        long c = std::strtol(p, &end, 10);
        if (end == p) break;
        next.insert(static_cast<pid_t>(c));
        p = end;
      }
    }
    ::closedir(d);
  }
  pids_.swap(next);
}

void ProcSampler::SampleOnce() {
  if (!writer_ || !writer_->is_open()) return;
  Discover();
  char path[320], buf[8192];
  std::vector<uint64_t> f;
  std::vector<uint8_t> ev;
  for (pid_t pid : pids_) {
    uint64_t now = MonotonicNs();
    std::snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR* d = ::opendir(path);
    if (!d) continue;
    uint32_t threads = 0;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      uint32_t tid = static_cast<uint32_t>(std::strtoul(e->d_name, nullptr, 10));
      std::snprintf(path, sizeof path, "/proc/%d/task/%u/stat", pid, tid);
      if (ReadProc(path, buf, sizeof buf) <= 0 || !StatFields(buf, &f) || f.size() <= 39) continue;
      uint64_t utime = f[14] * static_cast<uint64_t>(ns_per_tick_), stime = f[15] * static_cast<uint64_t>(ns_per_tick_);
      uint32_t cpu = static_cast<uint32_t>(f[39]);
      std::snprintf(path, sizeof path, "/proc/%d/task/%u/status", pid, tid);
      uint64_t vol = 0, invol = 0;
      if (ReadProc(path, buf, sizeof buf) > 0) {
        vol = StatusValue(buf, "voluntary_ctxt_switches:");
        invol = StatusValue(buf, "nonvoluntary_ctxt_switches:");
      }
      ev.clear();
      Put(ev, static_cast<uint32_t>(pid), tid, utime, stime, vol, invol, cpu);
      writer_->Append(format::kThreadStat, now, ev.data(), ev.size());
      ++threads;
    }
    ::closedir(d);
    uint64_t rss = 0, vm = 0, rchar = 0, wchar = 0, rbytes = 0, wbytes = 0, minflt = 0, majflt = 0;
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (ReadProc(path, buf, sizeof buf) > 0 && StatFields(buf, &f)) {
      minflt = f[10];
      majflt = f[12];
      vm = f[23];
      rss = f[24] * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    }
    std::snprintf(path, sizeof path, "/proc/%d/io", pid);
    if (ReadProc(path, buf, sizeof buf) > 0) {
      rchar = StatusValue(buf, "rchar:");
      wchar = StatusValue(buf, "wchar:");
      rbytes = StatusValue(buf, "\nread_bytes:");
      wbytes = StatusValue(buf, "\nwrite_bytes:");
    }
    ev.clear();
    Put(ev, static_cast<uint32_t>(pid), rss, vm, rchar, wchar, rbytes, wbytes, minflt, majflt, threads);
    writer_->Append(format::kProcessStat, now, ev.data(), ev.size());
  }
  ++samples_;
  Status st = writer_->Flush(MonotonicNs());
  if (!st.ok() && status_.ok()) status_ = st;
}

}  // namespace strata::collectors::os

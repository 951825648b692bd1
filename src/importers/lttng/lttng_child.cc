// Runs the LTTng reader (lttng_reader.cc) in a forked child process.
//
// libbabeltrace2 (2.0) stops the process with an assertion on some malformed
// traces (packet sizes that contradict each other, in msg-iter.c), as its CLI
// does. A damaged trace must be an error, not the end of `strata report`: the
// graph runs in a child, which hands its LttngEvents back through a memory
// file (memfd) as flat columns, its strings last, re-interned here.
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "base/error.h"
#include "importers/lttng/lttng_reader.h"

namespace strata::importers::lttng {
namespace {

class Writer {
 public:
  template <typename T>
  void Pod(const T& v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  template <typename T>
  void Vec(const std::vector<T>& v) {
    Pod<uint64_t>(v.size());
    buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void Str(std::string_view s) {
    Pod<uint64_t>(s.size());
    buf_.append(s.data(), s.size());
  }
  bool WriteTo(int fd) const {
    size_t off = 0;
    while (off < buf_.size()) {
      ssize_t n = ::write(fd, buf_.data() + off, buf_.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

 private:
  std::string buf_;
};

class Parser {
 public:
  explicit Parser(std::string_view b) : b_(b) {}
  template <typename T>
  bool Pod(T* v) {
    if (b_.size() - off_ < sizeof(T)) return false;
    std::memcpy(v, b_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return true;
  }
  template <typename T>
  bool Vec(std::vector<T>* v) {
    uint64_t n;
    if (!Pod(&n) || n > (b_.size() - off_) / sizeof(T)) return false;
    v->resize(n);
    if (n > 0) std::memcpy(v->data(), b_.data() + off_, n * sizeof(T));  // (an empty vector's data() may be null)
    off_ += n * sizeof(T);
    return true;
  }
  bool Str(std::string* s) {
    uint64_t n;
    if (!Pod(&n) || n > b_.size() - off_) return false;
    s->assign(b_.data() + off_, n);
    off_ += n;
    return true;
  }

 private:
  std::string_view b_;
  size_t off_ = 0;
};

constexpr uint64_t kMagic = 0x53545241544c5454ull;  // "STRATLTT"

void Serialize(const Status& st, const std::string& stopped, const model::StringPool& strings, const LttngEvents& ev,
               Writer& w) {
  w.Pod(kMagic);
  w.Pod(static_cast<uint8_t>(st.code()));
  w.Str(st.message());
  w.Str(stopped);
  w.Vec(ev.events);
  w.Vec(ev.arg_key);
  w.Vec(ev.arg_str);
  w.Vec(ev.arg_num);
  w.Vec(ev.losses);
  w.Pod<uint64_t>(ev.streams.size());
  for (const StreamDesc& s : ev.streams) {
    w.Str(s.trace);
    w.Str(s.name);
    w.Pod(s.cpu);
    w.Pod(static_cast<uint8_t>(s.kernel));
  }
  w.Pod(ev.total);
  w.Str(ev.hostname);
  w.Pod<uint64_t>(ev.traces.size());
  for (const std::string& s : ev.traces) w.Str(s);
  w.Pod<uint64_t>(strings.size());
  for (size_t i = 0; i < strings.size(); ++i) w.Str(strings.Get(static_cast<model::StringId>(i)));
}

// The child's strings are interned into `strings`, and every id remapped.
Status Deserialize(std::string_view bytes, model::StringPool& strings, LttngEvents& ev, std::string* stopped) {
  Parser p(bytes);
  uint64_t magic = 0;
  uint8_t code = 0;
  std::string msg;
  auto bad = [] { return Err(StatusCode::kInternal, "the babeltrace2 reader process returned a malformed result"); };
  if (!p.Pod(&magic) || magic != kMagic || !p.Pod(&code) || !p.Str(&msg) || !p.Str(stopped)) return bad();
  if (code != 0) return Status(static_cast<StatusCode>(code), msg);
  uint64_t n = 0;
  if (!p.Vec(&ev.events) || !p.Vec(&ev.arg_key) || !p.Vec(&ev.arg_str) || !p.Vec(&ev.arg_num) || !p.Vec(&ev.losses) ||
      !p.Pod(&n) || n > bytes.size())
    return bad();
  ev.streams.resize(n);
  for (StreamDesc& s : ev.streams) {
    uint8_t k = 0;
    if (!p.Str(&s.trace) || !p.Str(&s.name) || !p.Pod(&s.cpu) || !p.Pod(&k)) return bad();
    s.kernel = k != 0;
  }
  if (!p.Pod(&ev.total) || !p.Str(&ev.hostname) || !p.Pod(&n) || n > bytes.size()) return bad();
  ev.traces.resize(n);
  for (std::string& s : ev.traces)
    if (!p.Str(&s)) return bad();
  if (!p.Pod(&n) || n > bytes.size()) return bad();
  std::vector<model::StringId> remap(n);
  std::string s;
  for (uint64_t i = 0; i < n; ++i) {
    if (!p.Str(&s)) return bad();
    remap[i] = strings.Intern(s);
  }
  auto map = [&remap](model::StringId& id) {
    id = id < remap.size() ? remap[id] : 0;
  };
  for (Event& e : ev.events) {
    map(e.s1);
    map(e.s2);
    if (e.nargs > ev.arg_key.size() || e.args > ev.arg_key.size() - e.nargs) e.args = e.nargs = 0;
  }
  for (auto& id : ev.arg_key) map(id);
  for (auto& id : ev.arg_str) map(id);
  if (ev.arg_str.size() != ev.arg_key.size() || ev.arg_num.size() != ev.arg_key.size()) return bad();
  for (Loss& l : ev.losses)
    if (l.stream >= ev.streams.size()) return bad();
  return OkStatus();
}

// How long babeltrace2 may take over the trace: 10 s and 1 s more per MiB of
// its files, far more than it needs (it reads 3.7M events a second here, tens
// of MB). Damaged metadata can have it loop without end inside its own code
// (LTTng-UST 0.x's packet fix-up decoding events that take no bits, again and
// again, before any message), where nothing reaches strata's sink to stop it.
double ReadLimitSeconds(const std::vector<std::string>& dirs) {
  std::error_code ec;
  uint64_t bytes = 0;
  for (const std::string& d : dirs)
    for (auto it = std::filesystem::recursive_directory_iterator(d, ec); !ec && it != decltype(it)(); it.increment(ec))
      if (it->is_regular_file(ec)) bytes += it->file_size(ec);
  return 10.0 + static_cast<double>(bytes) / (1 << 20);
}

// Waits for the child until `limit_s`; kills it past that. True when it ended
// by itself.
bool WaitOrKill(pid_t pid, double limit_s, int* ws) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(limit_s));
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  for (;;) {
    pid_t r = ::waitpid(pid, ws, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, ws, 0) < 0 && errno == EINTR) {
      }
      if (pidfd >= 0) ::close(pidfd);
      return false;
    }
    if (pidfd >= 0) {
      struct pollfd p = {pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));  // readable when the child ends
    } else {
      ::usleep(5000);  // (no pidfd_open before Linux 5.3)
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return true;
}

}  // namespace

Status ReadLttng(const std::vector<std::string>& dirs, model::StringPool& strings, LttngEvents& out,
                 std::string* stopped) {
#ifndef STRATA_HAVE_BABELTRACE2
  return ReadLttngInProcess(dirs, strings, out, stopped);  // says it cannot
#endif
  int fd = ::memfd_create("strata-lttng", MFD_CLOEXEC);
  if (fd < 0) return ReadLttngInProcess(dirs, strings, out, stopped);  // no memfd: unprotected, but read
  std::fflush(nullptr);  // nothing buffered is written twice
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return ReadLttngInProcess(dirs, strings, out, stopped);
  }
  if (pid == 0) {
    // The child: default crash handling (a sanitizer's or fuzzer's handler
    // would report babeltrace2's abort as strata's), no exit handlers.
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    // babeltrace2 prints its assertion there; the parent's Status says it.
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDERR_FILENO);
    model::StringPool pool;
    LttngEvents ev;
    std::string why;
    Status st = ReadLttngInProcess(dirs, pool, ev, &why);
    Writer w;
    Serialize(st, why, pool, ev, w);
    ::_exit(w.WriteTo(fd) ? 0 : 1);
  }
  int ws = 0;
  const double limit_s = ReadLimitSeconds(dirs);
  if (!WaitOrKill(pid, limit_s, &ws)) {
    ::close(fd);
    return Err(StatusCode::kCorrupt,
               "babeltrace2 did not finish reading the trace in {:.0f} s (10 s and 1 s per MiB of its files), "
               "stopped: it loops on the trace's metadata or packets; the trace is damaged",
               limit_s);
  }
  struct stat sb;
  std::string bytes;
  if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && ::fstat(fd, &sb) == 0) {
    bytes.resize(static_cast<size_t>(sb.st_size));
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::pread(fd, bytes.data() + off, bytes.size() - off, static_cast<off_t>(off));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    bytes.resize(off);
  }
  ::close(fd);
  if (WIFSIGNALED(ws))
    return Err(StatusCode::kCorrupt,
               "babeltrace2 crashed reading the trace (signal {}: its own check of a malformed packet or field "
               "failed); the trace is damaged",
               WTERMSIG(ws));
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || bytes.empty())
    return Err(StatusCode::kInternal, "the babeltrace2 reader process failed (status {:#x})", ws);
  return Deserialize(bytes, strings, out, stopped);
}

}  // namespace strata::importers::lttng

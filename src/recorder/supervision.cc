#include "recorder/supervision.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "recorder/record_encoding.h"
#include "recorder/shm_layout.h"

namespace strata::recorder {

namespace {

// Connections beyond this are refused (each holds a descriptor and, until its
// process ends, that process's buffers).
constexpr size_t kMaxConns = 65536;

}  // namespace

Supervision::~Supervision() {
  if (thread_running_ || listen_fd_ >= 0) (void)Finish();
}

Status Supervision::Start(const std::string& trace_dir, const format::Uuid& uuid) {
  dir_ = trace_dir;
  std::string name = SupervisorSocketName(uuid);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoErr(errno, "socket");
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    int e = errno;
    ::close(fd);
    return ErrnoErr(e, "cannot listen for the traced processes");
  }
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    int e = errno;
    ::close(fd);
    return ErrnoErr(e, "pipe");
  }
  listen_fd_ = fd;
  // The thread must not take the signals the supervisor forwards to the command.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_running_ = pthread_create(&thread_, nullptr, ThreadMain, this) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!thread_running_) return Status(StatusCode::kInternal, "cannot start the supervision thread");
  return OkStatus();
}

void* Supervision::ThreadMain(void* self) {
  static_cast<Supervision*>(self)->Loop();
  return nullptr;
}

void Supervision::Accept() {
  for (;;) {
    int s = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (s < 0) return;
    // Only this user's processes (or root's) may hand over buffers.
    ucred cred{};
    socklen_t cl = sizeof cred;
    bool ok = ::getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && (cred.uid == ::geteuid() || cred.uid == 0);
    std::lock_guard<std::mutex> lk(mu_);
    if (!ok || conns_.size() >= kMaxConns) {
      ::close(s);
      continue;
    }
    Conn c;
    c.sock = s;
    conns_.push_back(std::move(c));
  }
}

void Supervision::OnReadable(Conn& c) {
  for (;;) {
    Hello hello{};
    iovec iov{&hello, sizeof hello};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(c.sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EINTR)) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // Every descriptor that came along, kept or closed.
    int fds[4] = {-1, -1, -1, -1};
    size_t nfds = 0;
    for (cmsghdr* h = CMSG_FIRSTHDR(&msg); h; h = CMSG_NXTHDR(&msg, h))
      if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
        nfds = std::min<size_t>(4, (h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        std::memcpy(fds, CMSG_DATA(h), nfds * sizeof(int));
      }
    if (n <= 0) {
      for (size_t i = 0; i < nfds; ++i) ::close(fds[i]);
      End(c, false);  // the connection closed: the process exited, exec'ed or died
      return;
    }
    bool kept = false;
    struct stat st;
    // A memfd whose size is sealed: mapped whole, it cannot shrink under the mapping.
    auto sealed = [](int fd) {
      int seals = ::fcntl(fd, F_GET_SEALS);
      return seals >= 0 && (seals & F_SEAL_SHRINK) != 0;
    };
    if (c.memfd < 0 && n == static_cast<ssize_t>(sizeof hello) && nfds == 1 && hello.magic == kShmMagic &&
        hello.version == kShmVersion && ::fstat(fds[0], &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<uint64_t>(st.st_size) >= hello.region_bytes && hello.region_bytes >= sizeof(ShmHeader) &&
        sealed(fds[0])) {
      c.memfd = fds[0];
      c.bytes = hello.region_bytes;
      c.pid = hello.pid;
      c.instance = hello.instance;
      kept = true;
    }
    for (size_t i = kept ? 1 : 0; i < nfds; ++i) ::close(fds[i]);
  }
}

void Supervision::End(Conn& c, bool recording_over) {
  if (c.ended) return;
  if (c.memfd < 0) {
    // It never handed anything over.
    if (c.sock >= 0) ::close(c.sock);
    c.sock = -1;
    c.ended = true;
    return;
  }
  void* m = ::mmap(nullptr, c.bytes, PROT_READ, MAP_SHARED, c.memfd, 0);
  if (m == MAP_FAILED) {
    c.account.pid = c.pid;
    c.account.instance = c.instance;
    c.account.end = "unknown";
    c.account.note = std::string("cannot map its buffer memory: ") + std::strerror(errno);
  } else {
    const auto* h = static_cast<const ShmHeader*>(m);
    uint32_t state = h->state.load(std::memory_order_acquire);
    bool same_process = h->start_ticks != 0 && ProcessStartTicks(h->pid) == h->start_ticks;
    if (state == kShmFinalized) {
      c.account = AccountForRegion(static_cast<const uint8_t*>(m), c.bytes, dir_, false);
      c.account.end = "exited";
    } else if (state == kShmExecing) {
      c.account = AccountForRegion(static_cast<const uint8_t*>(m), c.bytes, dir_, true);
      c.account.end = "exec";
    } else if (same_process && state == kShmRunning) {
      // Alive: it closed the connection itself, or it outlives the command.
      // Its buffers are still being written: look again at the end.
      ::munmap(m, c.bytes);
      if (!recording_over) {
        if (c.sock >= 0) ::close(c.sock);
        c.sock = -1;
        return;
      }
      m = ::mmap(nullptr, c.bytes, PROT_READ, MAP_SHARED, c.memfd, 0);
      if (m != MAP_FAILED) c.account = AccountForRegion(static_cast<const uint8_t*>(m), c.bytes, dir_, false);
      c.account.end = "running";
      c.account.note = "still running when the recording ended: what it recorded after that is not in the trace";
    } else {
      c.account = AccountForRegion(static_cast<const uint8_t*>(m), c.bytes, dir_, true);
      c.account.end = "died";
    }
    if (m != MAP_FAILED) ::munmap(m, c.bytes);
    if (c.account.pid == 0) {
      c.account.pid = c.pid;
      c.account.instance = c.instance;
    }
  }
  ::close(c.memfd);
  c.memfd = -1;
  if (c.sock >= 0) ::close(c.sock);
  c.sock = -1;
  c.ended = true;
}

void Supervision::Loop() {
  std::vector<pollfd> pfds;
  std::vector<size_t> which;
  for (;;) {
    pfds.clear();
    which.clear();
    pfds.push_back({wake_[0], POLLIN, 0});
    pfds.push_back({listen_fd_, POLLIN, 0});
    {
      std::lock_guard<std::mutex> lk(mu_);
      for (size_t i = 0; i < conns_.size(); ++i)
        if (!conns_[i].ended && conns_[i].sock >= 0) {
          pfds.push_back({conns_[i].sock, POLLIN, 0});
          which.push_back(i);
        }
    }
    int n = ::poll(pfds.data(), pfds.size(), -1);
    if (n < 0 && errno != EINTR) break;
    if (pfds[0].revents) break;  // Finish
    if (pfds[1].revents & POLLIN) Accept();
    for (size_t k = 2; k < pfds.size(); ++k) {
      if (!pfds[k].revents) continue;
      std::lock_guard<std::mutex> lk(mu_);
      OnReadable(conns_[which[k - 2]]);
    }
  }
}

std::vector<ProcessAccount> Supervision::Finish() {
  if (thread_running_) {
    char b = 1;
    ssize_t w = ::write(wake_[1], &b, 1);
    (void)w;
    pthread_join(thread_, nullptr);
    thread_running_ = false;
  }
  std::vector<ProcessAccount> out;
  if (listen_fd_ < 0) return out;
  // Connections still waiting to be accepted, and what is still unread.
  Accept();
  std::lock_guard<std::mutex> lk(mu_);
  for (Conn& c : conns_)
    if (!c.ended && c.sock >= 0) OnReadable(c);
  for (Conn& c : conns_) {
    End(c, true);
    if (!c.account.end.empty()) out.push_back(std::move(c.account));
  }
  conns_.clear();
  ::close(listen_fd_);
  listen_fd_ = -1;
  for (int& f : wake_) {
    if (f >= 0) ::close(f);
    f = -1;
  }
  return out;
}

}  // namespace strata::recorder

// The traced process's side of the link to `strata record`: at start it hands
// its buffer memory (a memfd, shm_layout.h) to the supervisor over an abstract
// unix socket named after the trace. The connection stays open for the
// process's life; the supervisor sees it close when the process exits, execs or
// dies, and then reads what the memory says.
//
// Without a supervisor (the recorder driven by a test, STRATA_TRACE_DIR set by
// hand) the connect fails at once and the recorder keeps its buffers in
// anonymous memory.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "recorder/record_encoding.h"
#include "recorder/runtime_state.h"

namespace strata::recorder {

int ConnectSupervisor(const format::Uuid& uuid) {
  std::string name = SupervisorSocketName(uuid);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() > sizeof addr.sun_path) return -1;
  std::memcpy(addr.sun_path, name.data(), name.size());
  // Non-blocking: a supervisor that does not accept must never hold the program up.
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendRegion(int fd, const Runtime& rt) {
  if (fd < 0 || rt.region.memfd < 0) return false;
  Hello hello{};
  hello.magic = kShmMagic;
  hello.version = kShmVersion;
  hello.pid = rt.pid;
  hello.instance = rt.instance;
  hello.region_bytes = rt.region.bytes;
  iovec iov{&hello, sizeof hello};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &rt.region.memfd, sizeof(int));
  ssize_t n;
  do n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof hello);
}

}  // namespace strata::recorder

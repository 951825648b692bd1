#include "base/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <atomic>
#include <cstring>
#include <cerrno>

#include "base/error.h"

namespace strata {

Status MakeDirs(const std::string& path) {
  if (path.empty()) return Err(StatusCode::kInvalidArgument, "empty directory path");
  std::string cur;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    cur = path.substr(0, j);
    if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoErr(errno, "cannot create directory {}", cur);
    }
    i = j + 1;
  }
  if (!IsDirectory(path)) return Err(StatusCode::kIoError, "{} exists and is not a directory", path);
  return OkStatus();
}

const char* FileKindName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

Status StatError(int err, const std::string& path) {
  switch (err) {
    case ENOENT: return Err(StatusCode::kNotFound, "{}: no such file or directory", path);
    case ELOOP: return Err(StatusCode::kInvalidArgument, "{}: symbolic link loop", path);
    case ENOTDIR: return Err(StatusCode::kNotFound, "{}: a component of the path is not a directory", path);
    default: return ErrnoErr(err, "{}", path);
  }
}

StatusOr<int> OpenRegularFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP || e == ENOENT || e == ENOTDIR) return StatError(e, path);
    return ErrnoErr(e, "cannot open {}", path);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return ErrnoErr(e, "cannot stat {}", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Err(StatusCode::kInvalidArgument, "{} is {}, not a regular file", path, FileKindName(st.st_mode));
  }
  int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return ErrnoErr(e, "cannot read {}", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

int WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

StatusOr<int> CreateNewFile(const std::string& path, int extra_flags, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_flags, mode);
  if (fd >= 0) return fd;
  int e = errno;
  struct stat st;
  if (e == EEXIST && ::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      return Err(StatusCode::kPermission, "{} is a symbolic link: refusing to write through it", path);
    return Err(StatusCode::kIoError, "cannot create {}: it already exists ({})", path, FileKindName(st.st_mode));
  }
  return ErrnoErr(e, "cannot create {}", path);
}

StatusOr<int> CreateTempFile(const std::string& tmp) {
  auto created = CreateNewFile(tmp);
  struct stat st;
  if (!created.ok() && ::lstat(tmp.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    // Left by a writer that died before its rename: replace it (unlink removes
    // the name only; it never follows anything).
    ::unlink(tmp.c_str());
    created = CreateNewFile(tmp);
  }
  return created;
}

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp";
  auto created = CreateTempFile(tmp);
  if (!created.ok()) return created.status();
  int fd = *created;
  int err = WriteAll(fd, contents.data(), contents.size());
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) return ErrnoErr(err, "cannot write {}", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoErr(errno, "cannot rename {} to {}", tmp, path);
  return OkStatus();
}

StatusOr<std::vector<std::string>> ListFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return ErrnoErr(errno, "cannot open directory {}", dir);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::stat(JoinPath(dir, name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void RemoveOldestDirectories(const std::string& root, size_t kept, const std::string& keep) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> dirs;
  size_t keeping = 0;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (!it->is_directory(e2) || it->is_symlink(e2)) continue;
    if (!keep.empty() && fs::equivalent(it->path(), keep, e2)) {
      ++keeping;
      continue;
    }
    auto when = fs::last_write_time(it->path(), e2);
    if (!e2) dirs.emplace_back(when, it->path());
  }
  if (dirs.size() + keeping <= kept) return;
  std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = kept > keeping ? kept - keeping : 0; i < dirs.size(); ++i) fs::remove_all(dirs[i].second, ec);
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string SelfExePath() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int TryLockDirectory(int dir_fd) {
  while (::flock(dir_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

bool DirectoryLocked(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  // A shared lock is refused only while someone holds the exclusive one.
  bool locked = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock if it was taken
  return locked;
}

std::string JoinPath(std::string_view a, std::string_view b) {
  std::string out(a);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(b);
  return out;
}

namespace {

// The mapped files, for the SIGBUS handler: what it reads is written before
// `begin` is published, and `begin` is cleared before a slot is reused.
struct MapSlot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  char path[256] = {};
};
constexpr size_t kMapSlots = 256;
MapSlot g_map_slots[kMapSlots];

void RegisterMapping(const void* p, size_t n, const std::string& path) {
  for (MapSlot& s : g_map_slots) {
    uintptr_t expected = 0;
    // Claimed with a sentinel while its fields are filled in.
    if (!s.begin.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    size_t k = std::min(path.size(), sizeof s.path - 1);
    std::memcpy(s.path, path.data(), k);
    s.path[k] = '\0';
    s.end.store(reinterpret_cast<uintptr_t>(p) + n, std::memory_order_relaxed);
    s.begin.store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);
    return;
  }
}

void UnregisterMapping(const void* p) {
  for (MapSlot& s : g_map_slots) {
    if (s.begin.load(std::memory_order_acquire) == reinterpret_cast<uintptr_t>(p)) {
      s.end.store(0, std::memory_order_relaxed);
      s.begin.store(0, std::memory_order_release);
      return;
    }
  }
}

void WriteStr(const char* s) { (void)!::write(2, s, std::strlen(s)); }

void OnSigbus(int, siginfo_t* si, void*) {
  auto a = reinterpret_cast<uintptr_t>(si->si_addr);
  for (MapSlot& s : g_map_slots) {
    uintptr_t b = s.begin.load(std::memory_order_acquire);
    if (b > 1 && a >= b && a < s.end.load(std::memory_order_relaxed)) {
      WriteStr("strata: ");
      WriteStr(s.path);
      WriteStr(" was shortened by another program while strata read it; run the command again\n");
      ::_exit(1);
    }
  }
  ::signal(SIGBUS, SIG_DFL);  // not a mapped file's: the default action when the fault repeats
}

}  // namespace

void MappedFile::InstallGuard() {
  struct sigaction sa {};
  sa.sa_sigaction = OnSigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) {
      UnregisterMapping(data_);
      ::munmap(const_cast<uint8_t*>(data_), size_);
    }
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) {
    UnregisterMapping(data_);
    ::munmap(const_cast<uint8_t*>(data_), size_);
  }
}

StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return ErrnoErr(e, "cannot stat {}", path);
  }
  MappedFile mf;
  mf.size_ = static_cast<size_t>(st.st_size);
  if (mf.size_ > 0) {
    void* p = ::mmap(nullptr, mf.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return ErrnoErr(e, "cannot map {}", path);
    }
    ::madvise(p, mf.size_, MADV_SEQUENTIAL);
    mf.data_ = static_cast<const uint8_t*>(p);
    RegisterMapping(p, mf.size_, path);
  }
  ::close(fd);
  return mf;
}

}  // namespace strata

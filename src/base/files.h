// Small file helpers that report failures as Status (errno text and path included).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata {

// Creates a directory and its parents (mode 0755). OK if it exists.
Status MakeDirs(const std::string& path);
StatusOr<std::string> ReadFile(const std::string& path);
// Writes to path.tmp then renames, so readers never see a half-written file.
// The .tmp is created new (CreateNewFile): a stale regular .tmp is replaced, a
// symbolic link there is refused. rename() replaces a link at `path` itself
// rather than writing through it.
Status WriteFileAtomic(const std::string& path, std::string_view contents);

// Creates a new file for writing and returns its descriptor: O_CREAT | O_EXCL |
// O_NOFOLLOW, so a symbolic link or a file planted at `path` (in a trace
// directory another user can write to, or as root in someone else's) is refused
// rather than written through or truncated. Every file strata creates in a
// trace directory goes through here. `extra_flags` adds to O_WRONLY (O_APPEND).
StatusOr<int> CreateNewFile(const std::string& path, int extra_flags = 0, mode_t mode = 0644);
// CreateNewFile for the temporary file of an atomic replace (FILE.tmp, renamed
// over FILE when written): a regular file already there, left by a writer that
// died before its rename, is replaced; anything else there is refused.
StatusOr<int> CreateTempFile(const std::string& tmp);

// Opens a file for reading and returns its descriptor, refusing anything but a
// regular file with what it is ("a FIFO", "a character device"): a FIFO blocks
// a reader forever and a device never ends. The open itself never blocks
// (O_NONBLOCK until the check is done), and a symbolic link loop is called one.
StatusOr<int> OpenRegularFile(const std::string& path);
// The kind of a file that is not a regular file or a directory, as a noun
// phrase ("a FIFO", "a socket", ...).
const char* FileKindName(mode_t mode);
// A stat() failure as a Status naming the path: "no such file or directory",
// "symbolic link loop", ...
Status StatError(int err, const std::string& path);

// The advisory lock `strata record` holds on a trace directory while it writes
// into it (flock(LOCK_EX) on the directory's own descriptor, so no lock file is
// needed and the lock goes with the process however it ends).
// TryLockDirectory: 0 when taken, EWOULDBLOCK when another process holds it, or
// the errno of a failure.
int TryLockDirectory(int dir_fd);
// True when some process holds that lock on `dir` now (a recording in progress).
bool DirectoryLocked(const std::string& dir);
// Lists regular files in a directory (names only, sorted).
StatusOr<std::vector<std::string>> ListFiles(const std::string& dir);
bool PathExists(const std::string& path);
// Keeps the `kept` most recently modified directories in `root` (`keep`, a
// path in it, always: the one just made or used) and removes the others with
// everything in them: a cache of builds that each new version adds to.
void RemoveOldestDirectories(const std::string& root, size_t kept, const std::string& keep);
bool IsDirectory(const std::string& path);
// This process's executable (/proc/self/exe), or "" when it cannot be read.
std::string SelfExePath();
// write(2) until done, retrying on EINTR. Returns errno on failure, 0 on success.
int WriteAll(int fd, const void* data, size_t size);
std::string JoinPath(std::string_view a, std::string_view b);

// A read-only memory map of a whole file; empty files map to an empty view.
// A file shortened by another program while it is mapped makes reading past
// its new end fault (SIGBUS): with InstallMappedFileGuard, that ends the
// process with a one-line error naming the file instead of a crash.
class MappedFile {
 public:
  // Once per process (the CLI's main): the SIGBUS handler above. Faults at
  // other addresses keep their default action.
  static void InstallGuard();

  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  static StatusOr<MappedFile> Open(const std::string& path);
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace strata

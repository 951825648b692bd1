// Small file helpers that report failures as Status (errno text and path included).
#pragma once

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
Status WriteFileAtomic(const std::string& path, std::string_view contents);
// Lists regular files in a directory (names only, sorted).
StatusOr<std::vector<std::string>> ListFiles(const std::string& dir);
bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
// write(2) until done, retrying on EINTR. Returns errno on failure, 0 on success.
int WriteAll(int fd, const void* data, size_t size);
std::string JoinPath(std::string_view a, std::string_view b);

// A read-only memory map of a whole file; empty files map to an empty view.
class MappedFile {
 public:
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

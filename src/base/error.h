// Formatting constructors for Status: Err(StatusCode::kCorrupt, "bad magic {:#x} at byte {}", m, off).
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "base/status.h"

namespace strata {

template <typename... Args>
Status Err(StatusCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}

// An I/O failure with the errno text appended: "open /x: Permission denied".
template <typename... Args>
Status ErrnoErr(int err, fmt::format_string<Args...> f, Args&&... args) {
  StatusCode code = (err == EACCES || err == EPERM) ? StatusCode::kPermission
                    : err == ENOENT                 ? StatusCode::kNotFound
                                                    : StatusCode::kIoError;
  // ELOOP's own text ("Too many levels of symbolic links") hides what it almost always is.
  return Status(code, fmt::format(f, std::forward<Args>(args)...) + ": " +
                          (err == ELOOP ? "symbolic link loop" : std::strerror(err)));
}

}  // namespace strata

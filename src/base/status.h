// Status and StatusOr: how every strata library reports failure.
//
// Libraries never throw across their API (they must work inside hosts built with
// -fno-exceptions); they return a Status that carries a code and a one-line,
// human-readable message. The CLI prints that message and exits non-zero.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace strata {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,  // bad user input: options, malformed files
  kNotFound,
  kIoError,          // the OS refused: open, read, write
  kCorrupt,          // a file is not what it claims to be (bad magic, truncated, ...)
  kUnsupported,      // valid but not handled (newer schema, unknown format)
  kPermission,
  kUnavailable,      // a facility is missing here (no driver, no privilege)
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with context, "reading foo: <message>", keeping the code.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}              // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}       // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }

 private:
  std::variant<T, Status> v_;
};

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

#define STRATA_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::strata::Status strata_status_ = (expr);     \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

#define STRATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(strata_statusor_, __LINE__), lhs, expr)

}  // namespace strata

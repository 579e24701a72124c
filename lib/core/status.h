// Errors are values: everything in lib/ that can fail on input from a file,
// the network or the user returns a Status naming what failed and where, or
// a StatusOr<T> where a value comes back.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace shoal {

class [[nodiscard]] Status {
 public:
  enum class Code { kOk, kInvalidArgument, kCorruption, kIOError, kUnavailable, kTimeout };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {Code::kInvalidArgument, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {Code::kCorruption, std::move(msg)}; }
  static Status IOError(std::string msg) { return {Code::kIOError, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {Code::kUnavailable, std::move(msg)}; }
  static Status Timeout(std::string msg) { return {Code::kTimeout, std::move(msg)}; }

  bool ok() const { return code_ == Code::kOk; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsUnavailable() const { return code_ == Code::kUnavailable; }
  bool IsTimeout() const { return code_ == Code::kTimeout; }
  // A peer that did not answer in time or went away: the failures a
  // supervisor may retry (exit 3), not bad input.
  bool IsPeerFailure() const { return IsTimeout() || IsUnavailable(); }

  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Prefixes the message with where it happened ("plan.json: ...").
  Status Within(const std::string& where) const {
    return ok() ? *this : Status(code_, where + ": " + message_);
  }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value, or the Status that says why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit, as a return value
  StatusOr(Status status)                          // NOLINT: implicit, as a return value
      : status_(status.ok() ? Status::InvalidArgument("no value and no error") : std::move(status)) {}

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // The value; only when ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

// Evaluates an expression yielding Status and returns it from the caller on error.
#define SHOAL_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::shoal::Status _shoal_status = (expr);        \
    if (!_shoal_status.ok()) return _shoal_status; \
  } while (0)

}  // namespace shoal

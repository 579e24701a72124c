// Errors are values: everything in lib/ that can fail on input from a file,
// the network or the user returns a Status naming what failed and where.
#pragma once

#include <string>
#include <utility>

namespace shoal {

class Status {
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

// Evaluates an expression yielding Status and returns it from the caller on error.
#define SHOAL_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::shoal::Status _shoal_status = (expr);        \
    if (!_shoal_status.ok()) return _shoal_status; \
  } while (0)

}  // namespace shoal

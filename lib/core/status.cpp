#include "core/status.h"

namespace shoal {

std::string Status::ToString() const {
  switch (code_) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid argument: " + message_;
    case Code::kCorruption:
      return "corruption: " + message_;
    case Code::kIOError:
      return "i/o error: " + message_;
    case Code::kUnavailable:
      return "unavailable: " + message_;
    case Code::kTimeout:
      return "timeout: " + message_;
  }
  return message_;
}

}  // namespace shoal

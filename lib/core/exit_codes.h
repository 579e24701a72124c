// The exit codes of every dl-* tool, and the one way they report a failure.
#pragma once

#include "core/log.h"
#include "core/status.h"

namespace shoal {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // bad input, corrupt data, I/O error
constexpr int kExitUsage = 2;    // bad command line (CLI11's own code for parse errors)
constexpr int kExitTimeout = 3;  // a peer did not answer in time or went away

// Logs "tool: error: message" and returns the exit code for it.
inline int ReportFailure(const Status& status) {
  Log("error: " + status.ToString());
  return status.IsPeerFailure() ? kExitTimeout : kExitFailure;
}

}  // namespace shoal

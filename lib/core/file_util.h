// Whole-file reads and crash-safe writes.
#pragma once

#include <string>

#include "core/status.h"

namespace shoal {

Status ReadFile(const std::string& path, std::string* contents);

// Writes `contents` so that `path` holds either its old bytes or all the new
// ones, never a mix: temporary file, fsync, rename, fsync of the directory.
Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace shoal

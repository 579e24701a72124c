// Shared by the fuzz targets: every target feeds one reader of outside bytes
// and needs nothing but the library; a crash, a leak, an abort, a sanitizer's
// report or a stray exception is a bug (the readers return Status values).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace shoal {

// A file of this process's holding `bytes`, for the readers that read files.
inline std::string FuzzFile(const uint8_t* data, size_t size, const char* name = "input") {
  static const std::string dir = [] {
    const std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return base + "/shoal-fuzz-" + std::to_string(getpid());
  }();
  static bool made = (mkdir(dir.c_str(), 0700), true);
  (void)made;
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace shoal

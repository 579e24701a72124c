// The FNV-1a 64 of a file as a shard manifest records it (16 lowercase hex
// digits), for tests that edit a shard and then its manifest to match.
//   fnv1a64 FILE
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/file_util.h"
#include "core/hash.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fnv1a64 FILE\n");
    return 2;
  }
  const int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "fnv1a64: cannot open '%s': %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  uint64_t hash = 0;
  const shoal::Status s = shoal::Fnv1a64OfFile(fd, std::string("'") + argv[1] + "'", &hash);
  close(fd);
  if (!s.ok()) {
    std::fprintf(stderr, "fnv1a64: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("%s\n", shoal::HexU64(hash).c_str());
  return 0;
}

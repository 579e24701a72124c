// The FNV-1a 64 of a file as a shard manifest records it (16 lowercase hex
// digits), for tests that edit a shard and then its manifest to match.
//   fnv1a64 FILE
#include <cstdio>
#include <fstream>
#include <vector>

#include "core/hash.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fnv1a64 FILE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fnv1a64: cannot read '%s'\n", argv[1]);
    return 1;
  }
  std::vector<char> piece(1 << 20);
  uint64_t hash = shoal::kFnv1a64Start;
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    hash = shoal::Fnv1a64(hash, piece.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    std::fprintf(stderr, "fnv1a64: cannot read '%s'\n", argv[1]);
    return 1;
  }
  std::printf("%s\n", shoal::HexU64(hash).c_str());
  return 0;
}

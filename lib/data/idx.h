// Reader for the idx format that MNIST and Fashion-MNIST are published in:
// magic 0x00 0x00 <element type> <rank>, rank × big-endian u32 dims, data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace shoal {

struct IdxArray {
  std::vector<int> dims;       // e.g. [60000, 28, 28] for images, [60000] for labels
  std::vector<uint8_t> bytes;  // row-major, product(dims) bytes
};

// Reads `path`, gzipped or plain (zlib reads either). Only unsigned-byte
// arrays (type 0x08) are accepted; the data must match the dims exactly.
// IOError where it cannot be opened or read, Corruption for a bad header,
// another type, or data that is short or runs on; *out is unchanged then.
Status ReadIdx(const std::string& path, IdxArray* out);

}  // namespace shoal

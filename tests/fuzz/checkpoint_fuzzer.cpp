// A checkpoint file in every reader: as given, and (input "header JSON \0
// data") as a file whose checksums are recomputed, as anyone editing one can,
// so the checks behind the CRC are reached: read, merged, listed.
#include <cstring>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_set.h"
#include "core/hash.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  Checkpoint ckpt;
  (void)ReadCheckpoint(FuzzFile(data, size, "raw.ckpt"), &ckpt);
  const uint8_t* zero = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t header = zero ? static_cast<size_t>(zero - data) : size;
  std::string file("SHOALCKP", 8);
  const uint32_t version = 1, crc = Crc32(data, header);
  const uint64_t header_bytes = header;
  file.append(reinterpret_cast<const char*>(&version), 4);
  file.append(reinterpret_cast<const char*>(&header_bytes), 8);
  file.append(reinterpret_cast<const char*>(data), header);
  file.append(reinterpret_cast<const char*>(&crc), 4);
  if (zero) file.append(reinterpret_cast<const char*>(zero + 1), size - header - 1);
  const std::string path =
      FuzzFile(reinterpret_cast<const uint8_t*>(file.data()), file.size(), "server-0-step-0000000001.ckpt");
  (void)ReadCheckpoint(path, &ckpt);
  Checkpoint merged;
  (void)MergeCheckpoints({path}, &merged);
  CheckpointDir scan;
  (void)ScanCheckpointDir(path.substr(0, path.rfind('/')), &scan);
  return 0;
}

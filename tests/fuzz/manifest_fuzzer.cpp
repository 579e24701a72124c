// A shard directory's manifest.json.
#include <string>

#include "data/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shoal::Manifest manifest;
  (void)shoal::ParseManifest(std::string(reinterpret_cast<const char*>(data), size), "manifest.json",
                             &manifest);
  return 0;
}

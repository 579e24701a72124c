// An idx file (MNIST's format), plain or gzipped.
#include "data/idx.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shoal::IdxArray array;
  (void)shoal::ReadIdx(shoal::FuzzFile(data, size, "images-idx3-ubyte"), &array);
  return 0;
}

// An image file's bytes (JPEG or PNG, by their magic): decoded as stored and
// as gray and RGB, at a reduced DCT scale too, and their size read from the
// header alone.
#include "data/image.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  int width = 0, height = 0;
  (void)ImageSize(data, size, &width, &height);
  for (int channels : {0, 1, 3}) {
    Image image;
    (void)DecodeImage(data, size, channels, &image);
  }
  Image small;
  (void)DecodeImage(data, size, 3, &small, 8, 8);
  return 0;
}

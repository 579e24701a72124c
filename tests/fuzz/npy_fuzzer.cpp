// A numpy array file: its header parsed, then the file opened as images with
// a fixed labels file beside it, and every image read.
#include <string>

#include "data/image_sources.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  NpyHeader header;
  (void)ParseNpyHeader(data, size, &header);
  const std::string images = FuzzFile(data, size, "images.npy");
  // Four int64 labels: the images must be four to match them.
  static const uint8_t kLabels[] =
      "\x93NUMPY\x01\x00\x76\x00{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }"
      "                                                            \n";
  std::string labels(reinterpret_cast<const char*>(kLabels), sizeof kLabels - 1);
  labels.resize(10 + 0x76, ' ');
  labels.back() = '\n';
  for (int i = 0; i < 4; ++i) labels += std::string("\x01\0\0\0\0\0\0\0", 8);
  const std::string labels_path =
      FuzzFile(reinterpret_cast<const uint8_t*>(labels.data()), labels.size(), "labels.npy");
  for (ArrayLayout layout : {ArrayLayout::kNhwc, ArrayLayout::kNchw}) {
    std::unique_ptr<RecordSource> source;
    if (!OpenNpy(images, labels_path, layout, &source).ok()) continue;
    for (uint64_t i = 0; i < source->size(); ++i) {
      Image image;
      int32_t label;
      (void)source->Read(i, 0, &image, &label);
    }
  }
  return 0;
}

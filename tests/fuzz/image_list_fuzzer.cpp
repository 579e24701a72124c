// A list file of 'PATH LABEL' lines (dl-shard --images LIST): parsed, and
// the images it names (mostly missing, or itself) read.
#include <string>

#include "data/image_sources.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string list = FuzzFile(data, size, "list.txt");
  std::unique_ptr<RecordSource> source;
  if (!OpenImageList(list, &source).ok()) return 0;
  for (uint64_t i = 0; i < source->size() && i < 8; ++i) {
    Image image;
    int32_t label;
    (void)source->Read(i, 0, &image, &label);
    std::string bytes;
    (void)source->Encoded(i, &bytes);
  }
  return 0;
}

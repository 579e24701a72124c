// CIFAR binary batches: the input is CIFAR-100's train.bin and test.bin, and
// CIFAR-10's data_batch_1.bin with the other batches and test_batch.bin
// empty; every record of what opens is read.
#include <string>

#include "data/image_sources.h"
#include "fuzz_util.h"

namespace {

void ReadAll(const shoal::RecordSource& source) {
  for (uint64_t i = 0; i < source.size() && i < 64; ++i) {
    shoal::Image image;
    int32_t label;
    (void)source.Read(i, 0, &image, &label);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string path = FuzzFile(data, size, "train.bin");
  FuzzFile(data, size, "test.bin");
  FuzzFile(data, size, "data_batch_1.bin");
  for (int i = 2; i <= 5; ++i) FuzzFile(data, size, ("data_batch_" + std::to_string(i) + ".bin").c_str());
  FuzzFile(data, size, "test_batch.bin");
  const std::string dir = path.substr(0, path.rfind('/'));
  for (bool hundred : {false, true})
    for (bool coarse : {false, true}) {
      std::unique_ptr<RecordSource> train, test;
      if (!OpenCifar(dir, hundred, coarse, &train, &test).ok()) continue;
      ReadAll(*train);
      ReadAll(*test);
    }
  return 0;
}

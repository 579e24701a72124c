// A shard file (raw records, or encoded ones with their index): its header
// and first records, then the same file opened as
// a manifest listing it would have it (its count, shape and hash; ten
// classes), which checks every record's label.
#include <string>
#include <vector>

#include "core/hash.h"
#include "data/shard.h"
#include "fuzz_util.h"

namespace {

void ReadRecords(shoal::ShardReader& reader) {
  std::vector<float> pixels(shoal::NumElements(reader.record_shape()));
  std::vector<uint8_t> bytes;
  int32_t label;
  for (uint64_t i = 0; i < reader.records() && i < 64; ++i) {
    (void)reader.ReadRecord(i, &bytes, &label);
    if (reader.stored() == shoal::StoredForm::kRaw) (void)reader.Read(i, pixels.data(), &label);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string path = FuzzFile(data, size, "train-00000.shard");
  ShardReader reader;
  if (!reader.Open(path).ok()) return 0;
  ReadRecords(reader);
  Manifest manifest;
  manifest.dataset = "fashion-mnist";
  manifest.record_shape = reader.record_shape();
  manifest.classes = 10;
  manifest.stored = reader.stored();
  manifest.train = {{"train-00000.shard", reader.records(), HexU64(Fnv1a64(kFnv1a64Start, data, size))}};
  ShardReader listed;
  if (!listed.Open(path.substr(0, path.rfind('/')), manifest.train[0], manifest).ok()) return 0;
  ReadRecords(listed);
  return 0;
}

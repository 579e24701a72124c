#include "data/text_corpus.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/file_util.h"

namespace shoal {

Status ReadTextCorpus(const std::vector<std::string>& paths, int window, double test_fraction,
                      ShardSpec* spec) {
  if (paths.empty()) return Status::InvalidArgument("no text files");
  if (window < 2 || window > (1 << 16))
    return Status::InvalidArgument("a window must hold 2..65536 symbols, not " + std::to_string(window));
  if (!(test_fraction > 0.0 && test_fraction < 1.0))
    return Status::InvalidArgument("the test fraction must be between 0 and 1");
  std::string corpus;
  for (const std::string& path : paths) {
    std::string text;
    SHOAL_RETURN_IF_ERROR(ReadFile(path, &text, kMaxCorpusBytes - corpus.size()));
    corpus += text;
  }
  const size_t stride = static_cast<size_t>(window) - 1;
  const size_t windows = corpus.size() > stride ? (corpus.size() - 1) / stride : 0;
  const size_t test = std::min(windows, static_cast<size_t>(std::ceil(test_fraction * windows)));
  if (windows < 2 || test < 1 || test >= windows)
    return Status::InvalidArgument("the text holds " + std::to_string(corpus.size()) +
                                   " bytes: " + std::to_string(windows) + " windows of " +
                                   std::to_string(window) + ", too few for a train and a test set");
  std::array<int, 256> id;
  id.fill(-1);
  for (unsigned char c : corpus) id[c] = 0;
  spec->vocabulary.clear();
  for (int b = 0; b < 256; ++b)
    if (id[b] == 0) {
      id[b] = static_cast<int>(spec->vocabulary.size());
      spec->vocabulary.push_back(b);
    }
  auto fill = [&](size_t first, size_t count, IdxArray* records, IdxArray* labels) {
    records->dims = {static_cast<int>(count), window};
    records->bytes.resize(count * window);
    for (size_t w = 0; w < count; ++w)
      for (int k = 0; k < window; ++k)
        records->bytes[w * window + k] =
            static_cast<uint8_t>(id[static_cast<unsigned char>(corpus[(first + w) * stride + k])]);
    labels->dims = {static_cast<int>(count)};
    labels->bytes.assign(count, 0);  // unused: a window's symbols are its labels
  };
  fill(0, windows - test, &spec->train_images, &spec->train_labels);
  fill(windows - test, test, &spec->test_images, &spec->test_labels);
  spec->dataset = "text";
  return Status::Ok();
}

}  // namespace shoal

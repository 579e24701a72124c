#include "data/datasets.h"

#include <filesystem>
#include <utility>

#include "data/idx.h"

namespace shoal {

const std::vector<Dataset>& Datasets() {
  static const std::vector<Dataset> kDatasets = {
      {"fashion-mnist", "/usr/share/datasets/fashion-mnist"},  // dataset-fashion-mnist
      {"mnist", "/usr/share/datasets/mnist"},                  // dataset-mnist
  };
  return kDatasets;
}

const std::vector<std::string>& DatasetNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& d : Datasets()) v.push_back(d.name);
    return v;
  }();
  return names;
}

const Dataset* FindDataset(const std::string& name) {
  for (const auto& d : Datasets())
    if (name == d.name) return &d;
  return nullptr;
}

Status ReadDataset(const std::string& name, const std::string& source_dir, ShardSpec* spec) {
  const Dataset* dataset = FindDataset(name);
  if (!dataset) return Status::InvalidArgument("no dataset is called '" + name + "'");
  const std::string source = source_dir.empty() ? dataset->default_source : source_dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(source, ec))
    return Status::InvalidArgument("source directory '" + source + "' does not exist");
  spec->dataset = name;
  // Both are published as the same four idx files.
  const std::pair<const char*, IdxArray*> inputs[] = {{"train-images-idx3-ubyte.gz", &spec->train_images},
                                                      {"train-labels-idx1-ubyte.gz", &spec->train_labels},
                                                      {"t10k-images-idx3-ubyte.gz", &spec->test_images},
                                                      {"t10k-labels-idx1-ubyte.gz", &spec->test_labels}};
  for (const auto& [file, array] : inputs) SHOAL_RETURN_IF_ERROR(ReadIdx(source + "/" + file, array));
  return Status::Ok();
}

}  // namespace shoal

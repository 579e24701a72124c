// Tests for lib/data/datasets: the table of datasets dl-shard reads.
#include "data/datasets.h"

#include <doctest/doctest.h>

#include "test_util.h"

namespace shoal {
namespace {

TEST_CASE("every dataset has a name and a default source; names are unique and found") {
  CHECK(DatasetNames() == std::vector<std::string>{"fashion-mnist", "mnist"});
  for (const auto& d : Datasets()) {
    REQUIRE(FindDataset(d.name) == &d);
    CHECK(std::string(d.default_source).rfind("/usr/share/datasets/", 0) == 0);
  }
  CHECK(FindDataset("cifar") == nullptr);
}

TEST_CASE("reading a dataset from a missing directory or by an unknown name is refused naming it") {
  ShardSpec spec;
  CHECK(ReadDataset("fashion-mnist", "/no/such/dir", &spec).message() ==
        "source directory '/no/such/dir' does not exist");
  CHECK(ReadDataset("cifar", "", &spec).message() == "no dataset is called 'cifar'");
}

TEST_CASE("Fashion-MNIST from its Debian package: 60000 train and 10000 test images of 28x28") {
  ShardSpec spec;
  Status s = ReadDataset("fashion-mnist", "", &spec);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(spec.train_images.dims == std::vector<int>{60000, 28, 28});
  CHECK(spec.test_labels.dims == std::vector<int>{10000});
  CHECK(spec.dataset == "fashion-mnist");
}

}  // namespace
}  // namespace shoal

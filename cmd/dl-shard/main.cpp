// dl-shard: turns an idx dataset (MNIST, Fashion-MNIST) into a shard directory
// (lib/data/shard.h). Exit codes: 0 ok, 1 runtime failure, 2 usage error.
#include "parse_command_line.h"
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/build_info.h"
#include "data/idx.h"
#include "data/shard_writer.h"

namespace {

int Fail(const shoal::Status& status) {
  std::fprintf(stderr, "dl-shard: error: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::string> default_source = {
      {"fashion-mnist", "/usr/share/datasets/fashion-mnist"}, {"mnist", "/usr/share/datasets/mnist"}};
  std::string dataset, source, out_dir;
  int shards = 0;
  uint64_t seed = 1;
  CLI::App app{"Shuffle an idx dataset and deal it into N shard files plus test.shard."};
  app.add_option("--dataset", dataset, "fashion-mnist or mnist")
      ->required()->check(CLI::IsMember({"fashion-mnist", "mnist"}));
  app.add_option("--source", source, "directory of the *-ubyte.gz files (default: by dataset)");
  app.add_option("--out", out_dir, "output directory, created if missing")->required();
  app.add_option("--shards", shards, "number of train shards (one per worker)")
      ->required()->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", seed, "shuffle seed; same seed, same shards")->capture_default_str();
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  if (source.empty()) source = default_source.at(dataset);

  std::error_code ec;
  if (!std::filesystem::is_directory(source, ec))
    return Fail(shoal::Status::InvalidArgument("source directory '" + source + "' does not exist"));
  shoal::ShardSpec spec;
  spec.dataset = dataset;
  spec.out_dir = out_dir;
  spec.shards = shards;
  spec.seed = seed;
  const std::pair<const char*, shoal::IdxArray*> inputs[] = {
      {"train-images-idx3-ubyte.gz", &spec.train_images}, {"train-labels-idx1-ubyte.gz", &spec.train_labels},
      {"t10k-images-idx3-ubyte.gz", &spec.test_images}, {"t10k-labels-idx1-ubyte.gz", &spec.test_labels}};
  for (const auto& [name, array] : inputs) {
    shoal::Status s = shoal::ReadIdx(source + "/" + name, array);
    if (!s.ok()) return Fail(s);
  }
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Fail(shoal::Status::IOError("cannot create '" + out_dir + "': " + ec.message()));

  shoal::Manifest manifest;
  shoal::Status s = shoal::WriteShards(spec, &manifest);
  if (!s.ok()) return Fail(s);

  nlohmann::ordered_json summary;
  summary["out"] = out_dir;
  summary["dataset"] = dataset;
  summary["shards"] = manifest.train.size();
  summary["records_per_shard"] = nlohmann::json::array();
  for (const auto& shard : manifest.train) summary["records_per_shard"].push_back(shard.records);
  summary["test_records"] = manifest.test.records;
  summary["seed"] = seed;
  summary["commit"] = shoal::BuildCommit();
  std::cout << summary.dump() << "\n" << std::flush;
  if (!std::cout) return Fail(shoal::Status::IOError("cannot write to stdout"));
  return 0;
}

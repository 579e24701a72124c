// The training loader's throughput on a shard directory of images: the
// batches a second BatchLoader delivers on THREADS threads with ImageNet's
// usual training transform (a random resized crop to SIZE, a flip half the
// time, the manifest's per-channel normalisation), as
// bench/peers/torch_loader.py measures PyTorch's DataLoader. After 5 warm-up
// batches, BATCHES batches are timed. Prints one JSON line.
//   loader_speed SHARD_DIR [THREADS] [BATCH] [SIZE] [BATCHES]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "config/job.h"
#include "data/shard.h"
#include "train/batch_loader.h"
#include "train/evaluate.h"

using namespace shoal;

namespace {

constexpr int kWarmup = 5;

int Fail(const Status& why) {
  std::fprintf(stderr, "loader_speed: %s\n", why.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: loader_speed SHARD_DIR [THREADS] [BATCH] [SIZE] [BATCHES]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int threads = bench::IntArg(argc, argv, 2, "THREADS", 1, 1, 1024);
  const int batch = bench::IntArg(argc, argv, 3, "BATCH", 64, 1, 65536);
  const int size = bench::IntArg(argc, argv, 4, "SIZE", 224, 1, 65536);
  const int batches = bench::IntArg(argc, argv, 5, "BATCHES", 50, 1, 1000000);

  Manifest manifest;
  if (Status s = LoadManifest(dir, &manifest); !s.ok()) return Fail(s);
  JobConfig job;
  job.data.augment.resized_crop = size;
  job.data.augment.mirror = true;
  job.data.augment.normalize = true;
  job.data.augment.resize = size * 8 / 7;  // 256 for 224, as ImageNet's evaluation resizes
  job.data.augment.center_crop = size;
  InputFeeds feeds;
  if (Status s = MakeInputFeeds(job, manifest, &feeds); !s.ok()) return Fail(s);
  std::vector<std::unique_ptr<ShardReader>> shards;
  for (const ShardInfo& info : manifest.train) {
    shards.push_back(std::make_unique<ShardReader>());
    if (Status s = shards.back()->Open(dir, info, manifest); !s.ok()) return Fail(s);
  }
  LoaderOptions options;
  options.batch = batch;
  options.seed = 1;
  options.threads = threads;
  options.depth = threads + 2;
  options.dealt_shards = manifest.train.size();
  BatchLoader loader(std::move(shards), feeds.Training(), options);

  Batch b;
  for (int i = 0; i < kWarmup; ++i)
    if (Status s = loader.Next(&b); !s.ok()) return Fail(s);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < batches; ++i)
    if (Status s = loader.Next(&b); !s.ok()) return Fail(s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const nlohmann::json line = {{"images_per_s", batches * batch / seconds},
                               {"seconds", seconds},
                               {"batches", batches},
                               {"batch", batch},
                               {"size", size},
                               {"threads", threads}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}

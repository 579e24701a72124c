// Shards images (data/image_sources.h) into a shard directory (data/shard.h):
// records read in a seeded shuffled order on several threads, decoded,
// resized and cropped, stored as raw pixels or JPEG, and dealt to the shards
// like cards, in that order whatever the threads; memory bounded by the
// records in flight, not by the input.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/image_sources.h"
#include "data/shard.h"

namespace shoal {

struct ImageShardOptions {
  std::string out_dir;  // created if missing
  std::string dataset = "images";
  int shards = 1;
  uint64_t seed = 1;
  int threads = 1;
  int resize = 0;       // the shorter side scaled to this (antialiased); 0: kept
  int center_crop = 0;  // the central square of this side; 0: none
  StoredForm store = StoredForm::kRaw;
  int quality = 90;  // --store jpeg
  int channels = 0;  // 1 or 3; 0: the first record's
  // Without a test source: this share of the records (the shuffled order's
  // last) is the test set.
  double test_fraction = 0.1;
  double val_fraction = 0.0;  // then this share of the rest is held out as val.shard
  bool strict = false;        // a record that cannot be read stops the run (else it is skipped)
};

// How far sharding is, for a progress line or record.
struct ShardProgress {
  uint64_t done = 0, total = 0, skipped = 0;
  double seconds = 0;
};

struct ShardReport {
  uint64_t train = 0, val = 0, test = 0;  // records written
  uint64_t skipped = 0;
  std::vector<std::string> first_skipped;  // the first few, with why
  double seconds = 0;
  uint64_t bytes = 0;  // of the shard files
};

// Shards `train` (and `test`, or a share of `train` where it is null) into
// options.out_dir. `progress` is called from the calling thread about once a
// second. InvalidArgument for options that do not fit the images (raw
// records of different sizes, say), Corruption for a record that cannot be
// read with `strict`, IOError for a failed write; on failure nothing is left
// of what this call wrote.
Status ShardImages(const RecordSource& train, const RecordSource* test, const ImageShardOptions& options,
                   const std::function<void(const ShardProgress&)>& progress, Manifest* manifest,
                   ShardReport* report);

}  // namespace shoal

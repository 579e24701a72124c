// Writes a shard directory (format in data/shard.h) from idx arrays: the
// train set shuffled and dealt to N shards (or cut in N contiguous stretches),
// the test set kept in order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/idx.h"
#include "data/shard.h"

namespace shoal {

struct ShardSpec {
  std::string dataset;          // recorded in the manifest, e.g. "fashion-mnist"
  IdxArray train_images;        // [n, rows, cols] images, or [n, symbols] a text's windows
  IdxArray train_labels;        // [n]
  IdxArray test_images;         // [m, rows, cols]
  IdxArray test_labels;         // [m]
  std::vector<int> vocabulary;  // a text dataset's symbols (Manifest::vocabulary); empty for images
  std::string out_dir;          // must exist
  int shards = 1;               // >= 1 and <= n
  uint64_t seed = 1;            // same seed, same files
  // Not shuffled: shard k holds the k-th of N equal contiguous stretches of
  // the train records in their order (a text's windows as the corpus runs;
  // the last n mod N left out), for training that carries a recurrent state
  // from batch to batch.
  bool contiguous = false;
  // This share of the train records (the shuffled order's last, or a text's
  // last stretch before the test set) is held out as val.shard.
  double val_fraction = 0.0;
  std::vector<std::string> class_names;  // label i's name, for the manifest; may be empty
};

// Keeps the first `limit` records of an idx pair (records and labels).
void LimitRecords(IdxArray* records, IdxArray* labels, uint64_t limit);

// The order the train records are dealt in: a Fisher–Yates shuffle of 0..n-1
// driven by mt19937_64(seed). Written out (not std::shuffle, whose algorithm
// is up to the standard library) so every build deals the same records.
std::vector<uint64_t> ShuffledOrder(uint64_t n, uint64_t seed);

// Writes out_dir/train-NNNNN.shard × shards, test.shard (and val.shard),
// then manifest.json last, each atomically, so a directory with a manifest
// is complete. InvalidArgument for arrays that do not fit together, IOError
// for a failed write. *manifest is unchanged on error; shard files finished
// before the failure stay in out_dir, with no manifest naming them.
Status WriteShards(const ShardSpec& spec, Manifest* manifest);

}  // namespace shoal

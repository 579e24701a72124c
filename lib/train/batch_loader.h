// Loads training batches ahead of the trainer in a background thread, so
// reading and checking records overlaps computation.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "data/shard.h"

namespace shoal {

struct Batch {
  int size = 0;
  std::vector<float> pixels;  // size × record floats
  std::vector<int32_t> labels;
  bool stream_start = false;  // in stream order: the first batch of a pass over the streams
};

class BatchLoader {
 public:
  // Reads the shards one after the other as one sequence of records,
  // `batch` at a time, keeping `depth` batches ready. The first pass takes
  // its first `first_pass_batches` whole batches of records as dl-shard dealt
  // them (at most as many as it has), in an order drawn from
  // `first_pass_seed`, then the rest in order: with the same seed and the
  // job's count of whole batches (its records ÷ (W·B)), W workers × B records
  // step through the records of one worker × W·B, batch for batch, whatever
  // one worker's shard holds beyond the others'. Every later pass takes the records in a
  // new order drawn from `seed` and the pass number. `first_record` is where
  // in that sequence (over all passes) to begin.
  // `streams`: none of that shuffling. The records are `batch` streams, each
  // shard holding an equal number of them (batch ÷ shards, which must divide)
  // in stretches of L records (the shortest shard's ÷ that), and batch t of a
  // pass holds record t of every stream: row i of a batch continues row i of
  // the one before, so a recurrent layer carries its state between them. Each
  // pass begins again at the streams' start.
  BatchLoader(std::vector<std::unique_ptr<ShardReader>> shards, int batch, uint64_t seed,
              uint64_t first_record = 0, int depth = 4, uint64_t first_pass_seed = 0, bool streams = false,
              uint64_t first_pass_batches = UINT64_MAX);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  uint64_t records() const { return total_; }
  // The next batch; a bad record's error comes through here.
  Status Next(Batch* out);

 private:
  void Produce();
  Status ReadBatch(Batch* batch);
  Status ReadStreams(Batch* batch);

  std::vector<std::unique_ptr<ShardReader>> shards_;
  int batch_;
  bool streams_;
  size_t depth_;
  uint64_t total_ = 0;
  uint64_t seed_;
  uint64_t cursor_ = 0;          // records handed out so far, over all passes
  std::vector<uint64_t> order_;  // the order of pass order_pass_
  uint64_t order_pass_ = 0;
  std::vector<uint64_t> first_batches_;  // the first pass's order of whole batches
  size_t record_floats_ = 0;

  Mutex mu_;
  CondVar cv_{&mu_};
  std::deque<Batch> ready_ GUARDED_BY(mu_);
  Status error_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// Reads every record of one shard in batches of at most `batch` (evaluation).
class ShardScanner {
 public:
  ShardScanner(ShardReader* reader, int batch) : reader_(reader), batch_(batch) {}
  // Fills `out` with the next records; sets out->size to 0 at the end.
  Status Next(Batch* out);

 private:
  ShardReader* reader_;
  int batch_;
  uint64_t cursor_ = 0;
};

}  // namespace shoal

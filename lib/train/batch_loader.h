// Loads training batches ahead of the trainer on threads of its own, so that
// reading, decoding and augmenting records overlaps computation.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "data/augment.h"
#include "data/shard.h"

namespace shoal {

struct Batch {
  int size = 0;
  std::vector<float> pixels;  // size × record floats
  std::vector<int32_t> labels;
  bool stream_start = false;  // in stream order: the first batch of a pass over the streams
  Status status;              // a record that could not be read
};

// How a record becomes the net's floats: an image through an Augmenter
// (decoded, cropped, normalised), a text's symbol ids as they are.
class RecordFeed {
 public:
  // `augment` null: the records are read by ShardReader::Read (a text, or
  // raw pixels as they are stored).
  RecordFeed(const Augmenter* augment, size_t floats) : augment_(augment), floats_(floats) {}
  size_t floats() const { return floats_; }
  // Record `index` of `reader`, known as `key`, in pass `pass`, into `out`.
  // Fails as ShardReader::ReadRecord and Augmenter::Apply do.
  Status Fill(const ShardReader& reader, uint64_t index, uint64_t key, uint64_t pass, float* out,
              int32_t* label) const;

 private:
  const Augmenter* augment_;
  size_t floats_;
};

// A record's key for its draws: its place in the order dl-shard dealt the
// records in (record `index` of shard `shard` of `shards` was dealt i =
// index · shards + shard), which is the same whatever the number of shards.
inline uint64_t RecordKey(uint64_t shard, uint64_t index, uint64_t shards) { return index * shards + shard; }

struct LoaderOptions {
  int batch = 1;
  // Every pass after the first takes the records in a new order drawn from
  // this and the pass number.
  uint64_t seed = 0;
  // Where in the sequence of records (over all passes) to begin.
  uint64_t first_record = 0;
  // The first pass takes its first `first_pass_batches` whole batches of
  // records as dl-shard dealt them, in an order drawn from
  // `first_pass_seed`, then the rest in order: with the same seed and the
  // job's count of whole batches (its records ÷ (W·B)), W workers × B records
  // step through the records of one worker × W·B, batch for batch.
  uint64_t first_pass_seed = 0;
  uint64_t first_pass_batches = UINT64_MAX;
  // None of that shuffling: the records are `batch` streams, each shard
  // holding an equal number of them (batch ÷ shards, which must divide) in
  // stretches of L records (the shortest shard's ÷ that), and batch t of a
  // pass holds record t of every stream: row i of a batch continues row i
  // of the one before, so a recurrent layer carries its state between them.
  // Each pass begins again at the streams' start.
  bool streams = false;
  int depth = 4;                        // batches kept ready ahead
  int threads = 1;                      // each fills whole batches
  std::vector<uint64_t> shard_numbers;  // each shard's number in the manifest (the records' keys)
  uint64_t dealt_shards = 1;            // how many shards the manifest has
};

// A ring of batches that loader threads fill ahead of the trainer.
class BatchLoader {
 public:
  // Reads the shards one after the other as one sequence of records.
  BatchLoader(std::vector<std::unique_ptr<ShardReader>> shards, RecordFeed feed,
              const LoaderOptions& options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  uint64_t records() const { return total_; }
  // The next batch, in place of what `out` held: its buffers are kept for a
  // later batch. A bad record's error (its shard and index named) comes
  // through here, and again for every later call. The errors are Fill's, or
  // InvalidArgument for shards of no records or streams they cannot hold;
  // *out then holds the failed batch, part-filled, and later calls leave it alone.
  Status Next(Batch* out) EXCLUDES(mu_);

 private:
  // Where record `cursor` of the sequence is: its shard, its index there, its pass.
  void Locate(uint64_t cursor, size_t* shard, uint64_t* index, uint64_t* pass) EXCLUDES(mu_);
  Status Fill(uint64_t n, Batch* b) EXCLUDES(mu_);
  Status FillStreams(uint64_t n, Batch* b) const;
  void Run() EXCLUDES(mu_);

  std::vector<std::unique_ptr<ShardReader>> shards_;
  const RecordFeed feed_;
  const LoaderOptions options_;
  uint64_t total_ = 0;
  std::vector<uint64_t> first_batches_;  // the first pass's order of whole batches
  size_t window_ = 1;                    // batches in flight and ready

  Mutex mu_;
  CondVar changed_{&mu_};
  uint64_t next_ GUARDED_BY(mu_) = 0;   // the next batch to fill
  uint64_t taken_ GUARDED_BY(mu_) = 0;  // batches handed out
  std::vector<Batch> ring_ GUARDED_BY(mu_);
  std::vector<bool> ready_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  Status failed_ GUARDED_BY(mu_);            // the first batch that failed: every later Next says so too
  uint64_t order_pass_ GUARDED_BY(mu_) = 0;  // the pass `order_` is of
  std::shared_ptr<const std::vector<uint64_t>> order_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

// Reads every record of one shard in batches of at most `batch` (evaluation).
class ShardScanner {
 public:
  ShardScanner(const ShardReader* reader, int batch, RecordFeed feed)
      : reader_(reader), batch_(batch), feed_(feed) {}
  // Fills `out` with the next records; sets out->size to 0 at the end.
  // Returns RecordFeed::Fill's errors; *out is part-filled then, and the next
  // call reads the same records again.
  Status Next(Batch* out);

 private:
  const ShardReader* reader_;
  int batch_;
  RecordFeed feed_;
  uint64_t cursor_ = 0;
};

}  // namespace shoal

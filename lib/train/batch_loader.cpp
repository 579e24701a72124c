#include "train/batch_loader.h"

#include <algorithm>

#include "data/image.h"
#include "data/shard_writer.h"

namespace shoal {

Status RecordFeed::Fill(const ShardReader& reader, uint64_t index, uint64_t key, uint64_t pass, float* out,
                        int32_t* label) const {
  if (!augment_) return reader.Read(index, out, label);
  thread_local std::vector<uint8_t> stored;
  SHOAL_RETURN_IF_ERROR(reader.ReadRecord(index, &stored, label));
  return augment_->Apply(stored, key, pass, out)
      .Within("'" + reader.path() + "': record " + std::to_string(index));
}

BatchLoader::BatchLoader(std::vector<std::unique_ptr<ShardReader>> shards, RecordFeed feed,
                         const LoaderOptions& options)
    : shards_(std::move(shards)), feed_(feed), options_(options) {
  for (const auto& s : shards_) total_ += s->records();
  const uint64_t batch = static_cast<uint64_t>(std::max(options_.batch, 1));
  first_batches_ = ShuffledOrder(std::min<uint64_t>(total_ / batch, options_.first_pass_batches),
                                 options_.first_pass_seed * 1000003 + 17);
  const int threads = std::max(options_.threads, 1);
  window_ = static_cast<size_t>(std::max(options_.depth, threads + 1));
  MutexLock lock(&mu_);
  ring_.resize(window_);
  ready_.assign(window_, false);
  for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { Run(); });
}

BatchLoader::~BatchLoader() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  changed_.SignalAll();
  for (std::thread& t : threads_) t.join();
}

void BatchLoader::Locate(uint64_t cursor, size_t* shard, uint64_t* index, uint64_t* pass) {
  const uint64_t batch = static_cast<uint64_t>(options_.batch);
  *pass = cursor / total_;
  uint64_t at = cursor % total_;
  if (*pass > 0) {
    std::shared_ptr<const std::vector<uint64_t>> order;
    {
      MutexLock lock(&mu_);
      if (!order_ || order_pass_ != *pass) {
        order_ = std::make_shared<const std::vector<uint64_t>>(
            ShuffledOrder(total_, options_.seed * 1000003 + *pass));
        order_pass_ = *pass;
      }
      order = order_;
    }
    at = (*order)[at];
  } else if (at / batch < first_batches_.size()) {
    at = first_batches_[at / batch] * batch + at % batch;
  }
  *shard = 0;
  while (at >= shards_[*shard]->records()) at -= shards_[(*shard)++]->records();
  *index = at;
}

Status BatchLoader::Fill(uint64_t n, Batch* b) {
  b->size = options_.batch;
  b->stream_start = false;
  b->pixels.resize(static_cast<size_t>(options_.batch) * feed_.floats());
  b->labels.resize(options_.batch);
  if (total_ == 0) return Status::InvalidArgument("the shards hold no records");
  if (options_.streams) return FillStreams(n, b);
  const uint64_t first = options_.first_record + n * static_cast<uint64_t>(options_.batch);
  for (int i = 0; i < options_.batch; ++i) {
    size_t shard = 0;
    uint64_t index = 0, pass = 0;
    Locate(first + static_cast<uint64_t>(i), &shard, &index, &pass);
    const uint64_t number = shard < options_.shard_numbers.size() ? options_.shard_numbers[shard] : shard;
    SHOAL_RETURN_IF_ERROR(feed_.Fill(*shards_[shard], index, RecordKey(number, index, options_.dealt_shards),
                                     pass, b->pixels.data() + static_cast<size_t>(i) * feed_.floats(),
                                     &b->labels[i]));
  }
  return Status::Ok();
}

Status BatchLoader::FillStreams(uint64_t n, Batch* b) const {
  const uint64_t shards = shards_.size(), batch = static_cast<uint64_t>(options_.batch);
  if (batch % shards != 0)
    return Status::InvalidArgument("a batch of " + std::to_string(batch) +
                                   " streams does not divide over the " + std::to_string(shards) +
                                   " shards this worker reads");
  const uint64_t per_shard = batch / shards;
  // Each stream's records; a shard's tail past per_shard × length is never read.
  uint64_t length = UINT64_MAX;
  for (const auto& s : shards_) length = std::min(length, s->records() / per_shard);
  if (length == 0)
    return Status::InvalidArgument("a shard holds fewer records than the " + std::to_string(per_shard) +
                                   " streams it must hold");
  const uint64_t cursor = options_.first_record + n * batch;
  const uint64_t t = (cursor / batch) % length;
  b->stream_start = t == 0;
  for (uint64_t i = 0; i < batch; ++i) {
    const uint64_t shard = i / per_shard, index = (i % per_shard) * length + t;
    SHOAL_RETURN_IF_ERROR(feed_.Fill(*shards_[shard], index, RecordKey(shard, index, shards),
                                     cursor / batch / length, b->pixels.data() + i * feed_.floats(),
                                     &b->labels[i]));
  }
  return Status::Ok();
}

void BatchLoader::Run() {
  UseOneResamplerThread();
  Batch b;
  for (;;) {
    uint64_t n;
    {
      MutexLock lock(&mu_);
      while (!stop_ && next_ >= taken_ + window_) changed_.Wait();
      if (stop_) return;
      n = next_++;
      // The slot's buffers: those of a batch the trainer has handed back.
      b = std::move(ring_[n % window_]);
    }
    b.status = Fill(n, &b);
    MutexLock lock(&mu_);
    ring_[n % window_] = std::move(b);
    ready_[n % window_] = true;
    changed_.SignalAll();
  }
}

Status BatchLoader::Next(Batch* out) {
  MutexLock lock(&mu_);
  if (!failed_.ok()) return failed_;
  const size_t slot = taken_ % window_;
  while (!ready_[slot]) changed_.Wait();
  // The caller's last batch goes to the slot, whose buffers the next fill
  // reuses: a batch's floats are not allocated and zeroed again each time.
  std::swap(*out, ring_[slot]);
  ready_[slot] = false;
  ++taken_;
  changed_.SignalAll();
  failed_ = out->status;
  return out->status;
}

Status ShardScanner::Next(Batch* out) {
  const int n = static_cast<int>(std::min<uint64_t>(batch_, reader_->records() - cursor_));
  out->size = n;
  out->pixels.resize(static_cast<size_t>(n) * feed_.floats());
  out->labels.resize(n);
  for (int i = 0; i < n; ++i)
    SHOAL_RETURN_IF_ERROR(feed_.Fill(*reader_, cursor_ + i, cursor_ + i, 0,
                                     out->pixels.data() + static_cast<size_t>(i) * feed_.floats(),
                                     &out->labels[i]));
  cursor_ += n;
  return Status::Ok();
}

}  // namespace shoal

#include "train/batch_loader.h"

#include <algorithm>

#include "data/shard_writer.h"

namespace shoal {
namespace {

Status ReadRecords(ShardReader* reader, uint64_t first, int count, size_t record_floats, Batch* out, int at) {
  for (int i = 0; i < count; ++i)
    SHOAL_RETURN_IF_ERROR(
        reader->Read(first + i, out->pixels.data() + (at + i) * record_floats, &out->labels[at + i]));
  return Status::Ok();
}

}  // namespace

BatchLoader::BatchLoader(std::vector<std::unique_ptr<ShardReader>> shards, int batch, uint64_t seed,
                         uint64_t first_record, int depth, uint64_t first_pass_seed, bool streams,
                         uint64_t first_pass_batches)
    : shards_(std::move(shards)),
      batch_(batch),
      streams_(streams),
      depth_(std::max(depth, 1)),
      seed_(seed),
      cursor_(first_record) {
  for (const auto& s : shards_) total_ += s->records();
  first_batches_ =
      ShuffledOrder(std::min<uint64_t>(total_ / batch_, first_pass_batches), first_pass_seed * 1000003 + 17);
  record_floats_ = shards_.empty() ? 0 : NumElements(shards_[0]->record_shape());
  thread_ = std::thread([this] { Produce(); });
}

BatchLoader::~BatchLoader() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  thread_.join();
}

Status BatchLoader::ReadBatch(Batch* b) {
  b->size = batch_;
  b->pixels.resize(static_cast<size_t>(batch_) * record_floats_);
  b->labels.resize(batch_);
  if (streams_) return ReadStreams(b);
  for (int i = 0; i < batch_; ++i, ++cursor_) {
    uint64_t pass = cursor_ / total_, at = cursor_ % total_;
    if (pass > 0 && pass != order_pass_) {
      order_ = ShuffledOrder(total_, seed_ * 1000003 + pass);
      order_pass_ = pass;
    }
    if (pass > 0)
      at = order_[at];
    else if (at / batch_ < first_batches_.size())
      at = first_batches_[at / batch_] * batch_ + at % batch_;
    size_t shard = 0;
    while (at >= shards_[shard]->records()) at -= shards_[shard++]->records();
    SHOAL_RETURN_IF_ERROR(ReadRecords(shards_[shard].get(), at, 1, record_floats_, b, i));
  }
  return Status::Ok();
}

Status BatchLoader::ReadStreams(Batch* b) {
  const uint64_t shards = shards_.size();
  if (batch_ % shards != 0)
    return Status::InvalidArgument("a batch of " + std::to_string(batch_) +
                                   " streams does not divide over the " + std::to_string(shards) +
                                   " shards this worker reads");
  const uint64_t per_shard = batch_ / shards;
  uint64_t length =
      UINT64_MAX;  // each stream's records; a shard's tail past per_shard × length is never read
  for (const auto& s : shards_) length = std::min(length, s->records() / per_shard);
  if (length == 0)
    return Status::InvalidArgument("a shard holds fewer records than the " + std::to_string(per_shard) +
                                   " streams it must hold");
  const uint64_t t = (cursor_ / batch_) % length;
  b->stream_start = t == 0;
  for (int i = 0; i < batch_; ++i, ++cursor_)
    SHOAL_RETURN_IF_ERROR(
        ReadRecords(shards_[i / per_shard].get(), (i % per_shard) * length + t, 1, record_floats_, b, i));
  return Status::Ok();
}

void BatchLoader::Produce() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      while (!stop_ && ready_.size() >= depth_) cv_.Wait();
      if (stop_) return;
    }
    Batch b;
    Status s = total_ == 0 ? Status::InvalidArgument("the shards hold no records") : ReadBatch(&b);
    MutexLock lock(&mu_);
    if (!s.ok()) {
      error_ = s;
      cv_.SignalAll();
      return;
    }
    ready_.push_back(std::move(b));
    cv_.SignalAll();
  }
}

Status BatchLoader::Next(Batch* out) {
  MutexLock lock(&mu_);
  while (ready_.empty() && error_.ok()) cv_.Wait();
  if (ready_.empty()) return error_;
  *out = std::move(ready_.front());
  ready_.pop_front();
  cv_.SignalAll();
  return Status::Ok();
}

Status ShardScanner::Next(Batch* out) {
  const size_t record_floats = NumElements(reader_->record_shape());
  int n = static_cast<int>(std::min<uint64_t>(batch_, reader_->records() - cursor_));
  out->size = n;
  out->pixels.resize(n * record_floats);
  out->labels.resize(n);
  SHOAL_RETURN_IF_ERROR(ReadRecords(reader_, cursor_, n, record_floats, out, 0));
  cursor_ += n;
  return Status::Ok();
}

}  // namespace shoal

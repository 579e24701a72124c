#include "train/evaluate.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "ckpt/checkpoint_set.h"
#include "core/log.h"
#include "ops/blas.h"
#include "ops/onednn.h"

namespace shoal {

void FeedBatch(const Batch& batch, Net* net) {
  net->Allocate(batch.size);
  std::memcpy(net->data_layer().data().data(), batch.pixels.data(), 4 * batch.pixels.size());
  net->data_layer().labels() = batch.labels;
}

size_t InputFeeds::floats() const { return static_cast<size_t>(NumElements(shape)); }

Status MakeInputFeeds(const JobConfig& job, const Manifest& m, InputFeeds* out) {
  out->train.reset();
  out->eval.reset();
  out->shape = m.record_shape;
  const bool images = m.vocabulary.empty() && m.record_shape.size() == 3;
  if (!images) {
    if (job.data.augment.any())
      return Status::InvalidArgument(
          "the job's data section augments images, and these records are a text's");
    return Status::Ok();
  }
  out->train = std::make_unique<Augmenter>();
  out->eval = std::make_unique<Augmenter>();
  const uint64_t seed = static_cast<uint64_t>(job.train.seed);
  SHOAL_RETURN_IF_ERROR(
      Augmenter::Make(job.data.augment, m, /*training=*/true, seed, out->train.get()).Within(job.source));
  SHOAL_RETURN_IF_ERROR(
      Augmenter::Make(job.data.augment, m, /*training=*/false, seed, out->eval.get()).Within(job.source));
  out->shape = out->train->output_shape();
  return Status::Ok();
}

Status CheckShardsFitNet(const Shape& input, const Manifest& m, const std::string& dir, Net* net) {
  const Shape& want = net->data_layer().out_shape();
  if (input != want)
    return Status::InvalidArgument("'" + dir + "/manifest.json': records become " + ShapeToString(input) +
                                   " but data layer '" + net->data_layer().name() + "' expects " +
                                   ShapeToString(want));
  const int classes = net->loss_layer().classes();
  if (classes > 0 && m.classes > classes)
    return Status::InvalidArgument("'" + dir + "/manifest.json': " + std::to_string(m.classes) +
                                   " classes but the loss layer '" + net->loss_layer().name() + "' has " +
                                   std::to_string(classes) + " outputs");
  return Status::Ok();
}

namespace {

// The streams a net that carries state is evaluated over: the test shard
// (kept in its order) cut into this many contiguous stretches, read a record
// of each at a time, as training reads its shards.
constexpr uint64_t kEvalStreams = 32;

// Evaluation batches hold up to kEvalRecords records, fewer where their
// features and feature gradients would pass kEvalBytes (a deep convnet's).
constexpr int kEvalRecords = 500;
constexpr size_t kEvalBytes = size_t{128} << 20;

int EvalBatch(const Net& net) {
  size_t floats = 0;
  for (const auto& layer : net.layers()) floats += layer->feature_size();
  const size_t fits = kEvalBytes / std::max<size_t>(1, 2 * sizeof(float) * floats);
  return static_cast<int>(std::clamp<size_t>(fits, 1, kEvalRecords));
}

Status NextStreamBatch(const ShardReader* test, uint64_t step, Batch* b) {
  const uint64_t streams = std::min<uint64_t>(kEvalStreams, test->records());
  const uint64_t length = streams == 0 ? 0 : test->records() / streams;
  b->size = step < length ? static_cast<int>(streams) : 0;
  const size_t floats = NumElements(test->record_shape());
  b->pixels.resize(b->size * floats);
  b->labels.resize(b->size);
  for (int i = 0; i < b->size; ++i)
    SHOAL_RETURN_IF_ERROR(test->Read(i * length + step, b->pixels.data() + i * floats, &b->labels[i]));
  return Status::Ok();
}

}  // namespace

Status EvaluateOnShard(Net* net, const ShardReader* test, const RecordFeed& feed, int restore_batch,
                       EvalResult* result) {
  ShardScanner scanner(test, EvalBatch(*net), feed);
  const bool streams = net->CarriesState();  // then the test records are read as streams, the state carried
  net->ResetState();
  long long correct = 0, seen = 0;
  double loss_sum = 0.0;
  Batch b;  // its buffers refilled batch after batch
  for (uint64_t step = 0;; ++step) {
    SHOAL_RETURN_IF_ERROR(streams ? NextStreamBatch(test, step, &b) : scanner.Next(&b));
    if (b.size == 0) break;
    FeedBatch(b, net);
    net->Forward(Phase::kTest);
    correct += net->loss_layer().correct();
    loss_sum += static_cast<double>(net->loss_layer().loss()) * b.size;
    seen += b.size;
  }
  net->ResetState();
  if (restore_batch > 0) net->Allocate(restore_batch);
  if (seen == 0) return Status::InvalidArgument("'" + test->path() + "' has no records");
  const double predictions = static_cast<double>(seen) * net->loss_layer().predictions_per_record();
  *result = {net->loss_layer().classes() > 0, correct / predictions, loss_sum / seen, seen};
  return Status::Ok();
}

nlohmann::json EvalResult::Metric(const std::string& set) const {
  nlohmann::json metric = {{set + "_loss", loss}};
  if (classifies) metric[set + "_accuracy"] = accuracy;
  return metric;
}

Status FillParamsFromCheckpoint(const Checkpoint& merged, const std::string& source,
                                const std::vector<Param*>& params) {
  std::map<std::string, const CheckpointTensor*> values;
  for (const auto& t : merged.tensors)
    if (t.role == "value") values[t.param] = &t;
  for (Param* p : params) {
    auto it = values.find(p->name);
    if (it == values.end())
      return Status::InvalidArgument("'" + source + "' has no parameter '" + p->name +
                                     "' (the plan's net has it, " + ShapeToString(p->shape) + ")");
    const CheckpointTensor& t = *it->second;
    if (t.shape != p->shape)
      return Status::InvalidArgument("'" + source + "': parameter '" + p->name + "' is " +
                                     ShapeToString(t.shape) + ", the plan's net has " +
                                     ShapeToString(p->shape));
    if (t.offset != 0 || t.data.size() != p->value.size())
      return Status::InvalidArgument("'" + source + "': parameter '" + p->name +
                                     "' is a slice, not the whole parameter (merge the servers' files)");
    std::memcpy(p->value.data(), t.data.data(), 4 * t.data.size());
    values.erase(it);
  }
  if (!values.empty())
    return Status::InvalidArgument("'" + source + "' has parameter '" + values.begin()->first +
                                   "', which the plan's net lacks (a checkpoint of another model?)");
  return Status::Ok();
}

Status OpenCheckpointNet(const Plan& plan, const std::vector<std::string>& checkpoint, int64_t step,
                         const std::string& shard_dir, int threads, CheckpointNet* out) {
  out->source = checkpoint.size() == 1 ? checkpoint[0] : checkpoint.front() + " ...";
  Checkpoint merged;
  SHOAL_RETURN_IF_ERROR(LoadModel(checkpoint, step, &merged, &out->files));
  out->step = merged.step;
  SetComputeThreads(threads);
  // Evaluating is no training: a bf16 job's checkpoint evaluates in fp32
  // where this CPU has no bfloat16 kernels, saying so.
  out->compute = plan.job.train.compute;
  if (out->compute == Precision::kBf16 && !Bf16Kernels()) {
    Log("the job computes in bf16, for which oneDNN here ('" + OneDnnDescription() +
        "') has no kernels: evaluating in fp32");
    out->compute = Precision::kFp32;
  }
  SHOAL_RETURN_IF_ERROR(SetComputePrecision(out->compute));
  SHOAL_RETURN_IF_ERROR(Net::Build(plan.job, &out->net));
  SHOAL_RETURN_IF_ERROR(FillParamsFromCheckpoint(merged, out->source, out->net->params()));
  out->shard_dir = shard_dir.empty() ? plan.job.data.shards : shard_dir;
  if (out->shard_dir.empty())
    return Status::InvalidArgument("no shard directory: set data.shards in the job or pass --shards");
  SHOAL_RETURN_IF_ERROR(LoadManifest(out->shard_dir, &out->manifest));
  SHOAL_RETURN_IF_ERROR(MakeInputFeeds(plan.job, out->manifest, &out->feeds));
  return CheckShardsFitNet(out->feeds.shape, out->manifest, out->shard_dir, out->net.get());
}

Status EvaluateCheckpoint(const Plan& plan, const EvalOptions& options, nlohmann::json* record) {
  CheckpointNet c;
  SHOAL_RETURN_IF_ERROR(
      OpenCheckpointNet(plan, options.checkpoint, options.step, options.shard_dir, options.threads, &c));
  ShardReader test;
  SHOAL_RETURN_IF_ERROR(test.Open(c.shard_dir, c.manifest.test, c.manifest));
  EvalResult eval;
  SHOAL_RETURN_IF_ERROR(EvaluateOnShard(c.net.get(), &test, c.feeds.Evaluation(), 0, &eval));
  *record = {{"event", "eval"}};
  record->update(eval.Metric());
  record->update({{"records", eval.records},
                  {"step", c.step},
                  {"checkpoint", c.source},
                  {"files", c.files},
                  {"compute", c.compute}});
  return Status::Ok();
}

}  // namespace shoal

#include "config/job.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>

#include "config/fields.h"
#include "core/file_util.h"
#include "core/text.h"
#include "data/datasets.h"
#include "data/image.h"

namespace shoal {
namespace {

Status ParseLayer(const Fields& f, LayerConfig* layer) {
  if (!f.node().is_object()) return Status::InvalidArgument(f.Where() + ": a layer is a mapping");
  SHOAL_RETURN_IF_ERROR(f.String("name", "", &layer->name));
  if (layer->name.empty()) return f.Error("missing field 'name'");
  if (!IsPlainName(layer->name, kMaxLayerNameBytes))
    return f.FieldError("name", Quoted(layer->name) + " must be 1 to " + std::to_string(kMaxLayerNameBytes) +
                                    " of " + kPlainNameChars +
                                    " (it names the layer's parameters in checkpoints and exported files)");
  layer->fields = f.node();
  return Status::Ok();
}

// The fields every layer has; the rest are its type's (Net::Build reads them).
Status ParseCommonLayerFields(const Fields& named, LayerConfig* layer) {
  SHOAL_RETURN_IF_ERROR(named.String("type", "", &layer->type));
  if (layer->type.empty()) return named.Error("missing field 'type'");
  SHOAL_RETURN_IF_ERROR(named.StringList("srclayers", &layer->srclayers));
  SHOAL_RETURN_IF_ERROR(named.Int("partition_dim", 0, &layer->partition_dim, -1, 1));
  SHOAL_RETURN_IF_ERROR(named.String("location", "", &layer->location));
  return Status::Ok();
}

Status ParseModel(const Fields& top, JobConfig* job) {
  if (!top.Has("model")) return top.Error("missing section 'model'");
  std::unique_ptr<Fields> f;
  SHOAL_RETURN_IF_ERROR(top.Section("model", "section 'model'", &f));
  if (!f->Has("layers")) return f->Error("missing field 'layers'");
  SHOAL_RETURN_IF_ERROR(f->CheckNoUnknown());
  const nlohmann::json* layers = nullptr;
  if (!f->List("layers", &layers).ok() || layers->empty())
    return f->FieldError("layers", "must be a non-empty list of layers");
  std::set<std::string> names;
  nlohmann::json resolved = nlohmann::json::array();
  for (size_t i = 0; i < layers->size(); ++i) {
    const Fields item = f->Item("layers", i, "layer");
    LayerConfig layer;
    SHOAL_RETURN_IF_ERROR(ParseLayer(item, &layer));
    const Fields named = f->Item("layers", i, "layer '" + layer.name + "'");
    SHOAL_RETURN_IF_ERROR(ParseCommonLayerFields(named, &layer));
    layer.pointer = "/model/layers/" + std::to_string(i);
    if (!names.insert(layer.name).second)
      return Status::InvalidArgument(item.Where() + ": layer name '" + layer.name + "' is used twice");
    resolved.push_back(layer.fields);
    job->layers.push_back(std::move(layer));
  }
  job->resolved["model"] = {{"layers", resolved}};
  return Status::Ok();
}

Status ParseSchedule(const Fields& f, LrSchedule* s) {
  SHOAL_RETURN_IF_ERROR(f.Choice("kind", s->kind, &s->kind));
  // An exponential decay by gamma per update unless told otherwise.
  SHOAL_RETURN_IF_ERROR(f.Int("every", s->kind == LrDecay::kExponential ? 1 : s->every, &s->every, 0));
  SHOAL_RETURN_IF_ERROR(f.Float("gamma", s->gamma, &s->gamma, 0.0, 1.0));
  SHOAL_RETURN_IF_ERROR(f.Int("warmup_steps", s->warmup_steps, &s->warmup_steps, 0));
  if (s->kind != LrDecay::kConstant && s->every < 1)
    return f.FieldError("every", std::string("must be at least 1 with kind '") + Name(s->kind) + "'");
  return f.CheckNoUnknown();
}

// Below 1, as PyTorch requires: beta 1 would never let a gradient in.
Status Beta(const Fields& f, const std::string& key, double default_value, double* out) {
  SHOAL_RETURN_IF_ERROR(f.Float(key, default_value, out, 0.0, 1.0));
  if (*out >= 1.0) return f.FieldError(key, "must be below 1, got " + std::to_string(*out));
  return Status::Ok();
}

// The fields of the updaters beyond momentum (read whatever the updater, so
// that --set train.updater=... works on a file written for another one).
Status UpdaterHyperParameters(const Fields& f, TrainConfig* t) {
  SHOAL_RETURN_IF_ERROR(Beta(f, "beta1", t->beta1, &t->beta1));
  SHOAL_RETURN_IF_ERROR(Beta(f, "beta2", t->beta2, &t->beta2));
  SHOAL_RETURN_IF_ERROR(f.Float("rmsprop_alpha", t->rmsprop_alpha, &t->rmsprop_alpha, 0.0, 1.0));
  SHOAL_RETURN_IF_ERROR(
      f.Float("epsilon", t->updater == UpdateRule::kAdagrad ? 1e-10 : 1e-8, &t->epsilon, 0.0, 1.0));
  // Above 0: an element whose gradients were all 0 so far would divide 0 by 0.
  if (t->epsilon <= 0.0) return f.FieldError("epsilon", "must be greater than 0");
  if (t->updater == UpdateRule::kNesterov && t->momentum <= 0.0)
    return f.FieldError("momentum", "must be greater than 0 for updater 'nesterov'");
  return Status::Ok();
}

// train.device: "cpu", "cuda" or "cuda:N" (N of one or two digits).
Status ParseDevice(const Fields& f, TrainConfig* t) {
  SHOAL_RETURN_IF_ERROR(f.String("device", t->device, &t->device));
  const std::string digits = t->device.rfind("cuda:", 0) == 0 ? t->device.substr(5) : "";
  const bool numbered =
      !digits.empty() && digits.size() <= 2 &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (t->device != "cpu" && t->device != "cuda" && !numbered)
    return f.FieldError("device",
                        "is '" + t->device + "'; expected cpu, cuda or cuda:N (a GPU's number, 0 to 99)");
  t->cuda = t->device != "cpu";
  t->gpu = numbered ? std::stoi(digits) : -1;
  return Status::Ok();
}

Status ParseTrain(const Fields& f, TrainConfig* t) {
  SHOAL_RETURN_IF_ERROR(f.Choice("algorithm", t->algorithm, &t->algorithm));
  SHOAL_RETURN_IF_ERROR(f.Int("batch_size", t->batch_size, &t->batch_size, 1, 1 << 20));
  SHOAL_RETURN_IF_ERROR(f.Int("steps", t->steps, &t->steps, 0));
  SHOAL_RETURN_IF_ERROR(f.Float("epochs", t->epochs, &t->epochs, 0.0, 1e6));
  SHOAL_RETURN_IF_ERROR(f.Choice("updater", t->updater, &t->updater));
  SHOAL_RETURN_IF_ERROR(f.Float("learning_rate", t->learning_rate, &t->learning_rate, 0.0, 1e3));
  if (f.Has("lr_schedule")) {
    std::unique_ptr<Fields> schedule;
    SHOAL_RETURN_IF_ERROR(f.Section("lr_schedule", "section 'train.lr_schedule'", &schedule));
    SHOAL_RETURN_IF_ERROR(ParseSchedule(*schedule, &t->lr_schedule));
    f.Keep("lr_schedule", schedule->resolved());
  } else {
    f.Keep("lr_schedule", {{"kind", Name(t->lr_schedule.kind)},
                           {"every", t->lr_schedule.every},
                           {"gamma", t->lr_schedule.gamma},
                           {"warmup_steps", t->lr_schedule.warmup_steps}});
  }
  SHOAL_RETURN_IF_ERROR(f.Bool("scale_lr_with_workers", t->scale_lr_with_workers, &t->scale_lr_with_workers));
  SHOAL_RETURN_IF_ERROR(f.Float("momentum", t->momentum, &t->momentum, 0.0, 1.0));
  SHOAL_RETURN_IF_ERROR(f.Float("weight_decay", t->weight_decay, &t->weight_decay, 0.0, 1.0));
  SHOAL_RETURN_IF_ERROR(UpdaterHyperParameters(f, t));
  SHOAL_RETURN_IF_ERROR(f.Int("eval_every", t->eval_every, &t->eval_every, -1));
  SHOAL_RETURN_IF_ERROR(f.Choice("eval_on", t->eval_on, &t->eval_on));
  SHOAL_RETURN_IF_ERROR(f.Int("checkpoint_every", t->checkpoint_every, &t->checkpoint_every, 0));
  SHOAL_RETURN_IF_ERROR(
      f.Float("checkpoint_seconds", t->checkpoint_seconds, &t->checkpoint_seconds, 0.0, 1e9));
  SHOAL_RETURN_IF_ERROR(f.Int("checkpoint_failures", t->checkpoint_failures, &t->checkpoint_failures, 1));
  SHOAL_RETURN_IF_ERROR(
      f.Float("checkpoint_timeout_s", t->checkpoint_timeout_s, &t->checkpoint_timeout_s, 1.0, 1e9));
  SHOAL_RETURN_IF_ERROR(f.Int("display_every", t->display_every, &t->display_every, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("seed", t->seed, &t->seed, 0));
  SHOAL_RETURN_IF_ERROR(f.Float("clip_norm", t->clip_norm, &t->clip_norm, 0.0, 1e9));
  const bool overlap_written = f.Has("overlap");
  SHOAL_RETURN_IF_ERROR(f.Bool("overlap", t->overlap, &t->overlap));
  if (t->clip_norm > 0.0) {
    if (overlap_written && t->overlap)
      return f.FieldError("overlap",
                          "must be false with clip_norm: a gradient's norm is known only when the "
                          "whole backward pass is done, and overlap sends each layer's before that");
    t->overlap = false;
    f.Keep("overlap", false);
  }
  SHOAL_RETURN_IF_ERROR(f.Float("device_memory_mb", t->device_memory_mb, &t->device_memory_mb, 0.0, 1 << 24));
  SHOAL_RETURN_IF_ERROR(ParseDevice(f, t));
  SHOAL_RETURN_IF_ERROR(f.Choice("compute", t->compute, &t->compute));
  if (t->compute == Precision::kBf16 && t->cuda)
    return f.FieldError("compute", "is bf16, which runs on the CPU's oneDNN kernels; a GPU (train.device '" +
                                       t->device + "') computes in fp32: set compute: fp32 or device: cpu");
  SHOAL_RETURN_IF_ERROR(f.Bool("divergence_check", t->divergence_check, &t->divergence_check));
  SHOAL_RETURN_IF_ERROR(
      f.Int("overlap_bucket_floats", t->overlap_bucket_floats, &t->overlap_bucket_floats, 0));
  if (t->steps == 0 && t->epochs <= 0.0) return f.Error("set 'steps' or 'epochs'");
  if (t->updater == UpdateRule::kSgd) t->momentum = 0.0;
  return f.CheckNoUnknown();
}

// Strictly between 0 and 1 (Fields::Float's bounds are inclusive).
Status OpenUnitInterval(const Fields& f, const std::string& key, double default_value, double* out) {
  SHOAL_RETURN_IF_ERROR(f.Float(key, default_value, out, 0.0, 1.0));
  if (*out <= 0.0 || *out >= 1.0)
    return f.FieldError(key, "must be strictly between 0 and 1, got " + std::to_string(*out));
  return Status::Ok();
}

// consistency and the fields of each model. A model's field under another
// model is refused, not ignored: a slack or a period written in the job but
// never used would mislead whoever reads it.
Status ParseConsistency(const Fields& f, ClusterConfig* c) {
  SHOAL_RETURN_IF_ERROR(f.Choice("consistency", c->consistency, &c->consistency));
  const bool ssp = c->consistency == ConsistencyModel::kSsp;
  const bool easgd = c->consistency == ConsistencyModel::kEasgd;
  auto only_with = [&](const std::string& key, bool applies, const std::string& with) {
    if (applies || !f.Has(key)) return Status::Ok();
    return f.FieldError(
        key, "applies only with " + with + ", not with consistency '" + Name(c->consistency) + "'");
  };
  SHOAL_RETURN_IF_ERROR(only_with("staleness", ssp, "consistency 'ssp'"));
  for (const char* key : {"easgd_tau", "easgd_alpha", "easgd_adaptive", "easgd_loss_threshold"})
    SHOAL_RETURN_IF_ERROR(only_with(key, easgd, "consistency 'easgd'"));
  if (ssp) {
    if (!f.Has("staleness"))
      return f.Error(
          "consistency 'ssp' needs field 'staleness' (the slack s >= 0: a worker about to train "
          "step t sees every update of steps up to t-1-s)");
    SHOAL_RETURN_IF_ERROR(f.Int("staleness", 0, &c->staleness, 0));
  }
  if (!easgd) return Status::Ok();
  SHOAL_RETURN_IF_ERROR(OpenUnitInterval(f, "easgd_alpha", c->easgd_alpha, &c->easgd_alpha));
  SHOAL_RETURN_IF_ERROR(f.Bool("easgd_adaptive", c->easgd_adaptive, &c->easgd_adaptive));
  if (!c->easgd_adaptive) {
    SHOAL_RETURN_IF_ERROR(only_with("easgd_loss_threshold", false, "easgd_adaptive: true"));
    return f.Int("easgd_tau", c->easgd_tau, &c->easgd_tau, 1);
  }
  // DeepSpark's Algorithm 1 takes a period among its inputs but its loop
  // never reads it: the accumulated loss alone decides.
  if (f.Has("easgd_tau"))
    return f.FieldError("easgd_tau",
                        "is not used with easgd_adaptive: true (a worker exchanges when its "
                        "loss summed since the last exchange passes easgd_loss_threshold)");
  if (!f.Has("easgd_loss_threshold"))
    return f.Error(
        "easgd_adaptive: true needs field 'easgd_loss_threshold' (DeepSpark's L_cut: a worker "
        "exchanges when its loss summed since the last exchange passes it)");
  SHOAL_RETURN_IF_ERROR(f.Float("easgd_loss_threshold", 0.0, &c->easgd_loss_threshold, 0.0, 1e9));
  if (c->easgd_loss_threshold <= 0.0) return f.FieldError("easgd_loss_threshold", "must be greater than 0");
  return Status::Ok();
}

Status ParseCluster(const Fields& f, ClusterConfig* c) {
  // At most 2^16 workers and 2^14 servers: each listens on a port of its own.
  SHOAL_RETURN_IF_ERROR(f.Int("nworker_groups", c->nworker_groups, &c->nworker_groups, 1, 1 << 16));
  SHOAL_RETURN_IF_ERROR(
      f.Int("nworkers_per_group", c->nworkers_per_group, &c->nworkers_per_group, 1, 1 << 16));
  SHOAL_RETURN_IF_ERROR(f.Int("nserver_groups", c->nserver_groups, &c->nserver_groups, 1, 1 << 14));
  SHOAL_RETURN_IF_ERROR(
      f.Int("nservers_per_group", c->nservers_per_group, &c->nservers_per_group, 1, 1 << 14));
  if (static_cast<int64_t>(c->nworker_groups) * c->nworkers_per_group > (1 << 16))
    return f.Error("more than 65536 workers (nworker_groups × nworkers_per_group)");
  if (static_cast<int64_t>(c->nserver_groups) * c->nservers_per_group > (1 << 14))
    return f.Error("more than 16384 servers (nserver_groups × nservers_per_group)");
  SHOAL_RETURN_IF_ERROR(ParseConsistency(f, c));
  SHOAL_RETURN_IF_ERROR(f.Int("slice_floats", c->slice_floats, &c->slice_floats, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("timeout_ms", c->timeout_ms, &c->timeout_ms, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("lease_ms", c->lease_ms, &c->lease_ms, 100));
  SHOAL_RETURN_IF_ERROR(f.String("tls_dir", c->tls_dir, &c->tls_dir));
  if (c->tls_dir.size() > 4096) return f.FieldError("tls_dir", "is longer than 4096 bytes");
  SHOAL_RETURN_IF_ERROR(f.Choice("wire", c->wire, &c->wire));
  SHOAL_RETURN_IF_ERROR(
      f.Bool("server_worker_separate", c->server_worker_separate, &c->server_worker_separate));
  SHOAL_RETURN_IF_ERROR(f.Int("sync_freq", c->sync_freq, &c->sync_freq, 0));
  SHOAL_RETURN_IF_ERROR(f.Choice("sync_topology", c->sync_topology, &c->sync_topology));
  if (!c->server_worker_separate && c->servers() != c->workers())
    return f.FieldError("server_worker_separate",
                        "is false: every worker has its server, so " + std::to_string(c->workers()) +
                            " servers are needed, not " + std::to_string(c->servers()));
  if (c->nserver_groups > 1) {
    // Distributed Hogwild: each server group serves its worker groups on its own.
    if (c->consistency != ConsistencyModel::kAsync)
      return f.FieldError("nserver_groups",
                          "must be 1 unless consistency is 'async' (server groups update on "
                          "their own, each from its worker groups)");
    if (c->nworker_groups % c->nserver_groups != 0)
      return f.FieldError("nserver_groups",
                          "must divide nworker_groups (" + std::to_string(c->nworker_groups) +
                              "): each server group serves the same number of worker groups");
    if (c->sync_freq < 1)
      return f.FieldError("sync_freq",
                          "must be at least 1 with several server groups (updates between syncs)");
  }
  if (c->consistency == ConsistencyModel::kBsp && c->nworker_groups != 1)
    return f.FieldError("nworker_groups",
                        "must be 1 with consistency 'bsp' (groups run "
                        "asynchronously to each other: use 'async', 'ssp' or 'easgd')");
  return f.CheckNoUnknown();
}

// data.random_crop: {size, pad}; data.random_resized_crop: {size, scale: [lo, hi], ratio: [lo, hi]}.
Status ParseCrops(const Fields& f, AugmentConfig* a) {
  if (f.Has("random_crop")) {
    std::unique_ptr<Fields> c;
    SHOAL_RETURN_IF_ERROR(f.Section("random_crop", "data.random_crop", &c));
    SHOAL_RETURN_IF_ERROR(c->RequiredInt("size", &a->random_crop, 1, kMaxImageSide));
    SHOAL_RETURN_IF_ERROR(c->Int("pad", 0, &a->crop_pad, 0, 1024));
    SHOAL_RETURN_IF_ERROR(c->CheckNoUnknown());
    f.Keep("random_crop", c->resolved());
  }
  if (f.Has("random_resized_crop")) {
    std::unique_ptr<Fields> c;
    SHOAL_RETURN_IF_ERROR(f.Section("random_resized_crop", "data.random_resized_crop", &c));
    SHOAL_RETURN_IF_ERROR(c->RequiredInt("size", &a->resized_crop, 1, kMaxImageSide));
    std::vector<double> scale, ratio;
    SHOAL_RETURN_IF_ERROR(c->FloatList("scale", &scale, 1e-6, 1.0, 2, 2));
    SHOAL_RETURN_IF_ERROR(c->FloatList("ratio", &ratio, 1e-3, 1e3, 2, 2));
    if (!scale.empty()) a->scale_min = scale[0], a->scale_max = scale[1];
    if (!ratio.empty()) a->ratio_min = ratio[0], a->ratio_max = ratio[1];
    if (a->scale_min > a->scale_max || a->ratio_min > a->ratio_max)
      return c->Error("scale and ratio are [low, high] ranges");
    SHOAL_RETURN_IF_ERROR(c->CheckNoUnknown());
    f.Keep("random_resized_crop", c->resolved());
  }
  if (a->random_crop > 0 && a->resized_crop > 0)
    return f.Error("random_crop and random_resized_crop are two ways to crop: give one");
  return Status::Ok();
}

// data.normalize: true (the manifest's mean and std), false, or {mean: [...], std: [...]}.
Status ParseNormalize(const Fields& f, AugmentConfig* a) {
  if (!f.Has("normalize")) return Status::Ok();
  if (!f.node().at("normalize").is_object()) return f.Bool("normalize", false, &a->normalize);
  std::unique_ptr<Fields> n;
  SHOAL_RETURN_IF_ERROR(f.Section("normalize", "data.normalize (true, false, or {mean, std})", &n));
  SHOAL_RETURN_IF_ERROR(n->FloatList("mean", &a->mean, 0.0, 1.0, 1, 3));
  SHOAL_RETURN_IF_ERROR(n->FloatList("std", &a->std, 1e-6, 1.0, 1, 3));
  if (a->mean.empty() || a->mean.size() != a->std.size())
    return n->Error("give a mean and a std for each channel, as many of one as of the other");
  a->normalize = true;
  SHOAL_RETURN_IF_ERROR(n->CheckNoUnknown());
  f.Keep("normalize", n->resolved());
  return Status::Ok();
}

Status ParseData(const Fields& f, DataConfig* d) {
  SHOAL_RETURN_IF_ERROR(f.Choice("dataset", d->dataset, DatasetNames(), &d->dataset));
  SHOAL_RETURN_IF_ERROR(f.String("shards", "", &d->shards));
  SHOAL_RETURN_IF_ERROR(f.Int("shard_seed", d->shard_seed, &d->shard_seed, 0));
  AugmentConfig& a = d->augment;
  SHOAL_RETURN_IF_ERROR(ParseCrops(f, &a));
  SHOAL_RETURN_IF_ERROR(f.Bool("mirror", false, &a.mirror));
  SHOAL_RETURN_IF_ERROR(f.Int("resize", 0, &a.resize, 0, kMaxImageSide));
  SHOAL_RETURN_IF_ERROR(f.Int("center_crop", 0, &a.center_crop, 0, kMaxImageSide));
  SHOAL_RETURN_IF_ERROR(ParseNormalize(f, &a));
  SHOAL_RETURN_IF_ERROR(f.Int("loader_threads", 0, &d->loader_threads, 0, 256));
  return f.CheckNoUnknown();
}

// A section of the job: its fields read by `parse`, its resolved mapping
// kept, defaults and all, whether the file has it or not.
template <typename Config>
Status ParseSection(const Fields& top, const std::string& key, Status (*parse)(const Fields&, Config*),
                    Config* config, JobConfig* job) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  std::unique_ptr<Fields> f;
  if (top.Has(key))
    SHOAL_RETURN_IF_ERROR(top.Section(key, "section '" + key + "'", &f));
  else
    f = std::make_unique<Fields>(kEmpty, job->origin, "/" + key, "section '" + key + "'");
  SHOAL_RETURN_IF_ERROR(parse(*f, config));
  job->resolved[key] = f->resolved();
  return Status::Ok();
}

}  // namespace

bool ExchangesByLayer(const JobConfig& job) {
  return job.train.overlap && TraitsOf(job.cluster.consistency).takes_gradients;
}

Status ParseJob(const Document& doc, JobConfig* job) {
  *job = JobConfig();
  job->source = doc.origin->source();
  job->origin = doc.origin;
  if (!doc.root.is_object())
    return Status::InvalidArgument(job->source +
                                   ": a job file is a mapping with sections "
                                   "'model', 'train', 'cluster' and 'data'");
  job->resolved = nlohmann::json::object();
  Fields top(doc.root, doc.origin, "", "job");
  SHOAL_RETURN_IF_ERROR(top.String("name", "job", &job->name));
  job->resolved["name"] = job->name;
  SHOAL_RETURN_IF_ERROR(ParseModel(top, job));
  SHOAL_RETURN_IF_ERROR(ParseSection(top, "train", ParseTrain, &job->train, job));
  SHOAL_RETURN_IF_ERROR(ParseSection(top, "cluster", ParseCluster, &job->cluster, job));
  SHOAL_RETURN_IF_ERROR(ParseSection(top, "data", ParseData, &job->data, job));
  return top.CheckNoUnknown();
}

Status ParseJob(const std::string& text, const std::string& source, JobConfig* job) {
  Document doc;
  SHOAL_RETURN_IF_ERROR(ParseYaml(text, source, &doc));
  return ParseJob(doc, job);
}

Status LoadJobFile(const std::string& path, const std::vector<std::string>& overrides, JobConfig* job) {
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadFile(path, &text, kMaxYamlBytes));
  Document doc;
  SHOAL_RETURN_IF_ERROR(ParseYaml(text, path == "-" ? "<stdin>" : path, &doc));
  for (const auto& o : overrides) SHOAL_RETURN_IF_ERROR(ApplyOverride(o, &doc));
  return ParseJob(doc, job);
}

}  // namespace shoal

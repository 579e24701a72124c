#include "config/job.h"

#include <iterator>
#include <set>
#include <sstream>

#include "config/fields.h"
#include "core/file_util.h"

namespace shoal {
namespace {

Status Parse(const std::string& text, const std::string& source, YAML::Node* root) {
  try {
    *root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) + ": malformed YAML: " + e.msg);
  }
  if (!root->IsMap())
    return Status::InvalidArgument(source + ": a job file is a mapping with sections "
                                            "'model', 'train', 'cluster' and 'data'");
  return Status::Ok();
}

// yaml-cpp throws on a key lookup in a scalar: refuse "train: 5" before asking.
Status CheckMapping(const YAML::Node& node, const std::string& source, const std::string& what) {
  if (node.IsMap()) return Status::Ok();
  return Status::InvalidArgument(NodeWhere(source, node) + ": " + what + " must be a mapping");
}

Status ParseLayer(const YAML::Node& node, const std::string& source, LayerConfig* layer) {
  if (!node.IsMap()) return Status::InvalidArgument(NodeWhere(source, node) + ": a layer is a mapping");
  Fields f(node, source, "layer");
  SHOAL_RETURN_IF_ERROR(f.String("name", "", &layer->name));
  if (layer->name.empty()) return f.Error("missing field 'name'");
  Fields named(node, source, "layer '" + layer->name + "'");
  SHOAL_RETURN_IF_ERROR(named.String("type", "", &layer->type));
  if (layer->type.empty()) return named.Error("missing field 'type'");
  SHOAL_RETURN_IF_ERROR(named.StringList("srclayers", &layer->srclayers));
  SHOAL_RETURN_IF_ERROR(named.Int("partition_dim", 0, &layer->partition_dim, -1));
  if (layer->partition_dim > 1)
    return named.FieldError("partition_dim", "must be -1 (none), 0 (batch) or 1 (feature)");
  SHOAL_RETURN_IF_ERROR(named.String("location", "", &layer->location));
  layer->node = node;
  return Status::Ok();
}

Status ParseModel(const Fields& top, const YAML::Node& root, JobConfig* job) {
  if (!top.Has("model")) return top.Error("missing section 'model'");
  YAML::Node model = root["model"];
  SHOAL_RETURN_IF_ERROR(CheckMapping(model, job->source, "section 'model'"));
  Fields f(model, job->source, "section 'model'");
  if (!f.Has("layers")) return f.Error("missing field 'layers'");
  SHOAL_RETURN_IF_ERROR(f.CheckNoUnknown());
  YAML::Node layers = model["layers"];
  if (!layers.IsSequence() || layers.size() == 0)
    return f.FieldError("layers", "must be a non-empty list of layers");
  std::set<std::string> names;
  for (const auto& node : layers) {
    LayerConfig layer;
    SHOAL_RETURN_IF_ERROR(ParseLayer(node, job->source, &layer));
    if (!names.insert(layer.name).second)
      return Status::InvalidArgument(NodeWhere(job->source, node) + ": layer name '" +
                                     layer.name + "' is used twice");
    job->layers.push_back(std::move(layer));
  }
  return Status::Ok();
}

Status ParseSchedule(const YAML::Node& node, const std::string& source, LrSchedule* s) {
  SHOAL_RETURN_IF_ERROR(CheckMapping(node, source, "section 'train.lr_schedule'"));
  Fields f(node, source, "section 'train.lr_schedule'");
  SHOAL_RETURN_IF_ERROR(f.Choice("kind", s->kind, {"constant", "step", "exponential"}, &s->kind));
  // An exponential decay by gamma per update unless told otherwise.
  SHOAL_RETURN_IF_ERROR(f.Int("every", s->kind == "exponential" ? 1 : s->every, &s->every, 0));
  SHOAL_RETURN_IF_ERROR(f.Float("gamma", s->gamma, &s->gamma, 0.0, 1.0));
  SHOAL_RETURN_IF_ERROR(f.Int("warmup_steps", s->warmup_steps, &s->warmup_steps, 0));
  if (s->kind != "constant" && s->every < 1)
    return f.FieldError("every", "must be at least 1 with kind '" + s->kind + "'");
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
  SHOAL_RETURN_IF_ERROR(f.Float("epsilon", t->updater == "adagrad" ? 1e-10 : 1e-8, &t->epsilon, 0.0, 1.0));
  // Above 0: an element whose gradients were all 0 so far would divide 0 by 0.
  if (t->epsilon <= 0.0) return f.FieldError("epsilon", "must be greater than 0");
  if (t->updater == "nesterov" && t->momentum <= 0.0)
    return f.FieldError("momentum", "must be greater than 0 for updater 'nesterov'");
  return Status::Ok();
}

Status ParseTrain(const YAML::Node& node, const std::string& source, TrainConfig* t) {
  SHOAL_RETURN_IF_ERROR(CheckMapping(node, source, "section 'train'"));
  Fields f(node, source, "section 'train'");
  std::string algorithm;
  SHOAL_RETURN_IF_ERROR(f.Choice("algorithm", "bp", {"bp"}, &algorithm));
  SHOAL_RETURN_IF_ERROR(f.Int("batch_size", t->batch_size, &t->batch_size, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("steps", t->steps, &t->steps, 0));
  SHOAL_RETURN_IF_ERROR(f.Float("epochs", t->epochs, &t->epochs, 0.0, 1e6));
  SHOAL_RETURN_IF_ERROR(f.Choice("updater", t->updater, {std::begin(kUpdaterNames), std::end(kUpdaterNames)},
                                 &t->updater));
  SHOAL_RETURN_IF_ERROR(f.Float("learning_rate", t->learning_rate, &t->learning_rate, 0.0, 1e3));
  if (f.Has("lr_schedule")) SHOAL_RETURN_IF_ERROR(ParseSchedule(node["lr_schedule"], source, &t->lr_schedule));
  SHOAL_RETURN_IF_ERROR(f.Bool("scale_lr_with_workers", t->scale_lr_with_workers, &t->scale_lr_with_workers));
  SHOAL_RETURN_IF_ERROR(f.Float("momentum", t->momentum, &t->momentum, 0.0, 1.0));
  SHOAL_RETURN_IF_ERROR(f.Float("weight_decay", t->weight_decay, &t->weight_decay, 0.0, 1.0));
  SHOAL_RETURN_IF_ERROR(UpdaterHyperParameters(f, t));
  SHOAL_RETURN_IF_ERROR(f.Int("eval_every", t->eval_every, &t->eval_every, 0));
  SHOAL_RETURN_IF_ERROR(f.Int("checkpoint_every", t->checkpoint_every, &t->checkpoint_every, 0));
  SHOAL_RETURN_IF_ERROR(f.Int("display_every", t->display_every, &t->display_every, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("seed", t->seed, &t->seed, 0));
  SHOAL_RETURN_IF_ERROR(f.Bool("overlap", t->overlap, &t->overlap));
  SHOAL_RETURN_IF_ERROR(f.Int("overlap_bucket_floats", t->overlap_bucket_floats, &t->overlap_bucket_floats, 0));
  if (t->steps == 0 && t->epochs <= 0.0) return f.Error("set 'steps' or 'epochs'");
  if (t->updater == "sgd") t->momentum = 0.0;
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
  SHOAL_RETURN_IF_ERROR(f.Choice("consistency", c->consistency, {"bsp", "async", "ssp", "easgd"}, &c->consistency));
  const bool ssp = c->consistency == "ssp", easgd = c->consistency == "easgd";
  auto only_with = [&](const std::string& key, bool applies, const std::string& with) {
    if (applies || !f.Has(key)) return Status::Ok();
    return f.FieldError(key, "applies only with " + with + ", not with consistency '" + c->consistency + "'");
  };
  SHOAL_RETURN_IF_ERROR(only_with("staleness", ssp, "consistency 'ssp'"));
  for (const char* key : {"easgd_tau", "easgd_alpha", "easgd_adaptive", "easgd_loss_threshold"})
    SHOAL_RETURN_IF_ERROR(only_with(key, easgd, "consistency 'easgd'"));
  if (ssp) {
    if (!f.Has("staleness"))
      return f.Error("consistency 'ssp' needs field 'staleness' (the slack s >= 0: a worker about to train "
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
    return f.FieldError("easgd_tau", "is not used with easgd_adaptive: true (a worker exchanges when its "
                                     "loss summed since the last exchange passes easgd_loss_threshold)");
  if (!f.Has("easgd_loss_threshold"))
    return f.Error("easgd_adaptive: true needs field 'easgd_loss_threshold' (DeepSpark's L_cut: a worker "
                   "exchanges when its loss summed since the last exchange passes it)");
  SHOAL_RETURN_IF_ERROR(f.Float("easgd_loss_threshold", 0.0, &c->easgd_loss_threshold, 0.0, 1e9));
  if (c->easgd_loss_threshold <= 0.0) return f.FieldError("easgd_loss_threshold", "must be greater than 0");
  return Status::Ok();
}

Status ParseCluster(const YAML::Node& node, const std::string& source, ClusterConfig* c) {
  SHOAL_RETURN_IF_ERROR(CheckMapping(node, source, "section 'cluster'"));
  Fields f(node, source, "section 'cluster'");
  SHOAL_RETURN_IF_ERROR(f.Int("nworker_groups", c->nworker_groups, &c->nworker_groups, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("nworkers_per_group", c->nworkers_per_group, &c->nworkers_per_group, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("nserver_groups", c->nserver_groups, &c->nserver_groups, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("nservers_per_group", c->nservers_per_group, &c->nservers_per_group, 1));
  SHOAL_RETURN_IF_ERROR(ParseConsistency(f, c));
  SHOAL_RETURN_IF_ERROR(f.Int("slice_floats", c->slice_floats, &c->slice_floats, 1));
  SHOAL_RETURN_IF_ERROR(f.Int("timeout_ms", c->timeout_ms, &c->timeout_ms, 1));
  SHOAL_RETURN_IF_ERROR(f.String("tls_dir", c->tls_dir, &c->tls_dir));
  SHOAL_RETURN_IF_ERROR(f.Choice("wire", c->wire, {"fp32", "fp16"}, &c->wire));
  SHOAL_RETURN_IF_ERROR(f.Bool("server_worker_separate", c->server_worker_separate, &c->server_worker_separate));
  SHOAL_RETURN_IF_ERROR(f.Int("sync_freq", c->sync_freq, &c->sync_freq, 0));
  SHOAL_RETURN_IF_ERROR(f.Choice("sync_topology", c->sync_topology, {"all", "ring"}, &c->sync_topology));
  if (!c->server_worker_separate && c->servers() != c->workers())
    return f.FieldError("server_worker_separate", "is false: every worker has its server, so " +
                                                      std::to_string(c->workers()) + " servers are needed, not " +
                                                      std::to_string(c->servers()));
  if (c->nserver_groups > 1) {
    // Distributed Hogwild: each server group serves its worker groups on its own.
    if (c->consistency != "async")
      return f.FieldError("nserver_groups", "must be 1 unless consistency is 'async' (server groups update on "
                                            "their own, each from its worker groups)");
    if (c->nworker_groups % c->nserver_groups != 0)
      return f.FieldError("nserver_groups", "must divide nworker_groups (" + std::to_string(c->nworker_groups) +
                                                "): each server group serves the same number of worker groups");
    if (c->sync_freq < 1)
      return f.FieldError("sync_freq", "must be at least 1 with several server groups (updates between syncs)");
  }
  if (c->consistency == "bsp" && c->nworker_groups != 1)
    return f.FieldError("nworker_groups", "must be 1 with consistency 'bsp' (groups run "
                                          "asynchronously to each other: use 'async', 'ssp' or 'easgd')");
  return f.CheckNoUnknown();
}

Status ParseData(const YAML::Node& node, const std::string& source, DataConfig* d) {
  SHOAL_RETURN_IF_ERROR(CheckMapping(node, source, "section 'data'"));
  Fields f(node, source, "section 'data'");
  SHOAL_RETURN_IF_ERROR(f.Choice("dataset", d->dataset, {"fashion-mnist", "mnist"}, &d->dataset));
  SHOAL_RETURN_IF_ERROR(f.String("shards", "", &d->shards));
  return f.CheckNoUnknown();
}

// Sets root[a][b]... = value for "a.b=value", creating mappings on the way.
Status ApplyOverride(YAML::Node root, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    return Status::InvalidArgument("override '" + assignment + "' is not of the form section.field=value");
  std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  std::vector<std::string> keys;
  std::stringstream ss(path);
  for (std::string key; std::getline(ss, key, '.');) {
    if (key.empty()) return Status::InvalidArgument("override '" + assignment + "' has an empty field name");
    keys.push_back(key);
  }
  // yaml-cpp nodes are handles: walk with fresh handles (assignment would rebind).
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node next = chain.back()[keys[i]];
    if (next.IsDefined() && !next.IsMap())
      return Status::InvalidArgument("override '" + assignment + "': '" + keys[i] + "' is not a section");
    chain.push_back(next);
  }
  chain.back()[keys.back()] = YAML::Load(value);
  return Status::Ok();
}

Status ParseRoot(YAML::Node root, JobConfig* job) {
  Fields top(root, job->source, "job");
  SHOAL_RETURN_IF_ERROR(top.String("name", "job", &job->name));
  SHOAL_RETURN_IF_ERROR(ParseModel(top, root, job));
  if (top.Has("train")) SHOAL_RETURN_IF_ERROR(ParseTrain(root["train"], job->source, &job->train));
  if (top.Has("cluster")) SHOAL_RETURN_IF_ERROR(ParseCluster(root["cluster"], job->source, &job->cluster));
  if (top.Has("data")) SHOAL_RETURN_IF_ERROR(ParseData(root["data"], job->source, &job->data));
  SHOAL_RETURN_IF_ERROR(top.CheckNoUnknown());
  YAML::Emitter out;
  out << root;
  job->yaml_text = std::string(out.c_str()) + "\n";
  return Status::Ok();
}

}  // namespace

Status ParseJob(const std::string& text, const std::string& source, JobConfig* job) {
  *job = JobConfig();
  job->source = source;
  YAML::Node root;
  SHOAL_RETURN_IF_ERROR(Parse(text, source, &root));
  return ParseRoot(root, job);
}

Status LoadJobFile(const std::string& path, const std::vector<std::string>& overrides,
                   JobConfig* job) {
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadFile(path, &text));
  *job = JobConfig();
  job->source = path;
  YAML::Node root;
  SHOAL_RETURN_IF_ERROR(Parse(text, path, &root));
  for (const auto& o : overrides) SHOAL_RETURN_IF_ERROR(ApplyOverride(root, o));
  return ParseRoot(root, job);
}

}  // namespace shoal

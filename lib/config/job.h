// The job file: what a user writes to describe a run (see configs/ and docs/job-file.md).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/choices.h"
#include "config/document.h"
#include "core/status.h"
#include "data/augment.h"

namespace shoal {

struct LayerConfig {
  std::string name;
  std::string type;
  std::vector<std::string> srclayers;
  int partition_dim = 0;  // 0 batch (data parallel), 1 feature (model parallel), -1 none
  std::string location;   // optional placement override
  nlohmann::json fields;  // the whole mapping: type-specific fields are read by the layer
  std::string pointer;    // where the mapping is in the job's document (for messages)
};

// The learning rate over updates t = 0, 1, ... (lib/ps/lr_schedule.h has the
// formulas): constant; step: × gamma every `every` updates; exponential:
// × gamma^(t / every); each after a linear warm-up over `warmup_steps`.
struct LrSchedule {
  LrDecay kind = LrDecay::kConstant;
  int every = 0;  // step: required; exponential: 1 when left out
  double gamma = 0.1;
  int warmup_steps = 0;  // 0: none
};

// The fewest steps between the evaluations train.eval_every's default asks for.
constexpr int kDefaultEvalSpacing = 100;

struct TrainConfig {
  Algorithm algorithm = Algorithm::kBp;  // cd: contrastive divergence, for an rbm loss layer
  int batch_size = 64;                   // records per worker per step
  int steps = 0;                         // 0: derive from epochs
  double epochs = 1.0;
  UpdateRule updater = UpdateRule::kMomentum;
  double learning_rate = 0.05;
  LrSchedule lr_schedule;
  bool scale_lr_with_workers = false;  // learning_rate × workers (Goyal et al.'s linear scaling rule)
  double momentum = 0.9;               // momentum, nesterov
  double weight_decay = 0.0;
  double beta1 = 0.9;           // adam
  double beta2 = 0.999;         // adam
  double rmsprop_alpha = 0.99;  // rmsprop: the decay of its average of squared gradients
  double epsilon = 1e-8;        // adagrad, rmsprop, adam; ParseJob's default is 1e-10 for adagrad (PyTorch's)
  // Steps between evaluations; 0: only at the end; -1 (left out): a fifth
  // of the run, at least kDefaultEvalSpacing steps apart.
  int eval_every = -1;
  // What worker 0 evaluates on during training: the held-out validation set
  // where the shards have one (dl-shard --val-fraction), or the test set.
  EvalSet eval_on = EvalSet::kVal;
  int checkpoint_every = 0;  // steps (the servers' versions) between checkpoints; 0: see checkpoint_seconds
  // With checkpoint_every 0: worker 0 asks the servers for a checkpoint set
  // after this many seconds of training, or a tenth of the run's steps,
  // whichever comes first (docs/job-file.md); 0: only at the end.
  double checkpoint_seconds = 600;
  // Failed checkpoint writes in a row after which a server stops the run.
  int checkpoint_failures = 3;
  // Seconds a checkpoint write may take before its server counts the disk as
  // stuck and stops the run.
  double checkpoint_timeout_s = 600;
  int display_every = 50;  // steps between progress records
  int seed = 1;
  // Each layer's gradients go to the servers as soon as backprop has them and
  // its next values are collected just before its forward pass (SINGA §5.3);
  // false: one exchange after the whole backward pass. Same results either way.
  bool overlap = true;
  // A run whose loss stays at a uniform guess's (ln of the classes) for 3
  // displays and 150 steps is not learning: the workers stop it (exit 1).
  bool divergence_check = true;
  // With overlap, a request gathers layers from the top down until it holds
  // this many values (lib/plan/lanes.h); 0: one request per layer. 1 MiB of
  // fp32, PyTorch DDP's first bucket: fewer, larger messages where layers are small.
  int overlap_bucket_floats = 1 << 18;
  // Above 0: each worker scales its step's gradient down to this global L2
  // norm when it is longer (PyTorch's clip_grad_norm_), before it leaves;
  // the norm needs the whole backward pass, so overlap is off with it.
  double clip_norm = 0.0;
  // Above 0: each worker runs its training passes on a device of this many
  // MiB under GeePS's memory manager (lib/device/): what does not fit lives
  // in host memory and is swapped in through a double-buffered access pool.
  // On a CPU machine the device is host memory held to the budget.
  double device_memory_mb = 0.0;
  // Where a worker's training passes compute: "cpu", or a GPU (its layers
  // on cuBLAS and cuDNN, lib/ops/gpu_ops.h, their data in its memory under
  // the same manager): "cuda:N" puts every worker on GPU N, "cuda" worker w
  // on GPU w mod the GPUs its machine has.
  std::string device = "cpu";
  bool cuda = false;
  int gpu = -1;  // cuda:N's N; -1 otherwise
  // The precision of the products and convolutions on the CPU (ops/blas.h):
  // bf16 needs the CPU's AVX512_BF16 instructions, and a worker refuses it
  // where they are missing. The servers keep fp32 either way.
  Precision compute = Precision::kFp32;
};

struct ClusterConfig {
  int nworker_groups = 1;
  int nworkers_per_group = 1;
  int nserver_groups = 1;
  int nservers_per_group = 1;
  ConsistencyModel consistency = ConsistencyModel::kBsp;  // docs/job-file.md
  int staleness = 0;                                      // ssp: the slack s (required with ssp)
  int easgd_tau = 1;         // easgd: steps between a worker's exchanges with the centre
  double easgd_alpha = 0.1;  // easgd: the moving rate, in (0, 1)
  bool easgd_adaptive =
      false;  // easgd: exchange by accumulated loss (DeepSpark's Algorithm 1), not every tau
  double easgd_loss_threshold = 0;  // easgd_adaptive: Algorithm 1's L_cut (required with it)
  // SINGA's topology (journal paper §5.2): false puts server i with worker i
  // (AllReduce: one server per worker, each owning 1/N of every parameter).
  bool server_worker_separate = true;
  int sync_freq = 0;  // several server groups: updates between syncs with the neighbours
  SyncTopology sync_topology = SyncTopology::kAll;  // which server groups sync
  int slice_floats = 1 << 20;                       // parameters larger than this are cut into slices
  int timeout_ms = 60000;                           // every wait for a peer gives up after this long
  int lease_ms = 5000;  // a server whose workers have all been gone this long stops
  std::string tls_dir;  // certificates from scripts/make-certs.sh: TLS with mutual authentication
  ValueEncoding wire = ValueEncoding::kF32;  // how gradients and values travel (servers keep fp32)

  int workers() const { return nworker_groups * nworkers_per_group; }
  int servers() const { return nserver_groups * nservers_per_group; }
};

struct DataConfig {
  std::string dataset = "fashion-mnist";  // what dl-shard reads when the shards are missing
  std::string shards;                     // directory written by dl-shard
  int shard_seed = 1;                     // dl-shard's --seed when train-local deals the shards
  AugmentConfig augment;                  // what the loader does to image records
  int loader_threads = 0;                 // 0: the cores the compute threads leave, at least 1
};

struct JobConfig {
  std::string source;              // where it was read from, for messages
  std::shared_ptr<Origin> origin;  // where each of its values came from
  // The sections as read, typed, with every default filled in (the layers
  // as written: lib/graph/net.h resolves their fields); plans embed it.
  nlohmann::json resolved;
  std::string name;
  std::vector<LayerConfig> layers;
  TrainConfig train;
  ClusterConfig cluster;
  DataConfig data;
};

// Whether a worker sends each layer's gradients as backprop produces them and
// collects its next values just before its forward pass (train.overlap), as
// lib/train/param_table.h runs it and the planner prices it: not under a
// consistency model whose workers exchange values instead of gradients.
bool ExchangesByLayer(const JobConfig& job);

// Validates a job read as a document: from a YAML file (lib/config/document.h)
// or from the JSON a plan carries. InvalidArgument naming the place and the
// field; *job is part-filled then.
Status ParseJob(const Document& doc, JobConfig* job);
// The same from YAML text; `source` names the text in messages. Also
// returns ParseYaml's errors.
Status ParseJob(const std::string& text, const std::string& source, JobConfig* job);

// Reads a job file ("-": standard input) and applies "section.field=value"
// overrides before validating. Returns the errors of ReadFile, ParseYaml,
// ApplyOverride and ParseJob; *job is touched only by ParseJob.
Status LoadJobFile(const std::string& path, const std::vector<std::string>& overrides, JobConfig* job);

}  // namespace shoal

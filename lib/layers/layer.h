// The layer abstraction (SINGA §4.1, Caffe's layers): a layer is set up from
// its job-file fields and its source layers, computes its feature from theirs,
// computes the gradients of its sources and its parameters from its own, and
// states its cost facts (parameters, feature size, FLOPs) for the planner.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "config/fields.h"
#include "core/status.h"
#include "ops/grad_write.h"
#include "tensor/tensor.h"

namespace shoal {

class GroupSum;

enum class Phase { kTrain, kTest };

// How a layer's feature depends on one source's feature: what the planner
// charges when the layer is partitioned by features (model parallelism).
enum class Dependency {
  kFull,         // every output depends on the whole source vector (fully connected, convolution)
  kElementwise,  // output i depends on source position i only, or on its channel (relu, pooling)
  kNone,         // only the source's labels, not its feature (softmax_loss's data source)
};

// How the server initialises a parameter (it owns the values; see lib/ps).
struct ParamInit {
  enum class Kind { kUniform, kConstant, kCheckpoint };
  ParamInit() = default;
  ParamInit(Kind kind, float value) : kind(kind), value(value) {}

  Kind kind = Kind::kUniform;
  float value = 0.0f;  // uniform bound, or the constant
  // kCheckpoint (a layer's init_from): parameter `param` of `checkpoint`
  // (a file, one step's server files, or a checkpoint directory), transposed
  // where asked (a decoder's weights from an encoder's).
  std::string checkpoint;
  std::string param;
  bool transpose = false;
};

// What a training pass's random draws are keyed by. A record's draws (the
// RBM's, lib/ops/rbm.h) take train.seed, the step and the record's values,
// never which worker computes the record or where in its batch it sits, so
// BSP over W workers samples as one worker does. The draws that are not a
// record's (dropout's, StreamKey) take the worker too.
struct DrawKey {
  uint64_t seed = 0;
  uint64_t step = 0;
  uint64_t worker = 0;  // keys only the draws that are not a record's (StreamKey)
};

// What a parameter's "gradient" is and how the updater takes it.
enum class ParamRole {
  kTrained,  // a gradient, taken by the job's updater
  // A running average the layer keeps (batch norm's statistics): the
  // gradient is the step's change, old − new, which the updater subtracts
  // at rate 1 with no decay; over W workers, their new averages' mean.
  kRunningAverage,
};

struct Param {
  std::string name;  // "<layer>.weight", "<layer>.bias"
  Shape shape;
  ParamInit init;
  float lr_mult = 1.0f;  // its learning rate is train.learning_rate × this (a layer's lr_mult; 0 freezes it)
  Tensor value;
  Tensor grad;
  ParamRole role = ParamRole::kTrained;
};

// A layer's state carried from one pass to the next (Layer::carried_state).
struct CarriedState {
  std::vector<float>* floats = nullptr;
  size_t floats_per_row = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;

  // Reads type-specific fields and sets the per-record output shape from the
  // sources' shapes. Errors name the layer, the field and where it is.
  virtual Status Setup(const Fields& fields, const std::vector<const Layer*>& srcs) = 0;
  // Computes data() from the sources' data(); data() is already shaped [batch, out_shape].
  virtual void Forward(Phase phase, const std::vector<Layer*>& srcs) = 0;
  // Adds the gradient of each source that wants one to its grad() (or sets
  // it: SourceGradWrite), and sets the parameters' grad, from this layer's grad().
  virtual void Backward(const std::vector<Layer*>& srcs) = 0;
  // Whether Backward can set, rather than add into, every value of a
  // source's gradient. A source feeding this layer alone then needs no
  // clearing before the backward pass (PlanGradWrites).
  virtual bool CanSetSourceGrads() const { return false; }
  // Forward multiply-adds ×2 per record; backward is counted as twice forward.
  virtual double ForwardFlopsPerRecord() const { return 0.0; }
  virtual double BackwardFlopsPerRecord() const { return 2.0 * ForwardFlopsPerRecord(); }
  // How those FLOPs are shaped, for the planner's rate at a batch (a device
  // runs products of few rows poorly: lib/plan/cluster_profile.h). A record
  // gives its products RowsPerRecord rows (a sequence's steps), except the
  // ChainedFlopsPerRecord of a recurrence, whose products run one step after
  // another over one row a record.
  virtual double RowsPerRecord() const { return 1.0; }
  // The length of the sums its products make per output (a convolution's
  // channels × kernel², or its channels on Winograd's kernel, whose products
  // are per tile point): short sums run below a device's rate. 0: not priced by it.
  virtual double ProductInner(bool winograd) const { return 0.0; }
  virtual double ChainedFlopsPerRecord() const { return 0.0; }
  // The fewest units (filters) a part of this layer keeps for Winograd's
  // kernel to compute it on a CPU (ops/winograd_convolution.h), whose FLOPs
  // then run faster than counted; 0: it never does.
  virtual int WinogradFromUnits() const { return 0; }
  // How this layer's feature depends on source `src`'s; full unless a layer says less.
  virtual Dependency SourceDependency(size_t src) const { return Dependency::kFull; }
  // Whether num_output can be cut into ranges of units computed by different
  // workers (model parallelism: a fully connected layer's columns, a convolution's filters).
  virtual bool SplitsOutputs() const { return false; }
  // Whether both passes run on a GPU when the worker's tensors are there
  // (train.device: cuda): every op they call has a GPU form (ops/gpu_ops.h)
  // and nothing else in them reads or writes a feature on the host.
  virtual bool RunsOnGpu() const { return false; }
  // What the layer exchanges in a training step when it sums over its
  // group's workers (set_group_sum): rounds of sending to every peer (and
  // how many of them the backward pass makes), and the floats sent to each
  // peer over them all.
  struct GroupExchange {
    int rounds = 0, backward_rounds = 0;
    double floats = 0.0;
  };
  virtual GroupExchange GroupExchangePerStep() const { return {}; }
  // Whether gradients flow into this layer (not into data, say).
  virtual bool WantsGrad() const { return true; }
  // Whether the layer can compute the ReLU of its feature in its own passes
  // (set_fused_relu).
  virtual bool FusesRelu() const { return false; }
  // A ReLU layer whose one source is this layer, and its only consumer, done
  // in this layer's passes: Forward writes the ReLU's feature in place of its
  // own, Backward reads the ReLU's gradient in place of its own, and the
  // ReLU's own passes are not run. The net decides (PartitionedNet, on host
  // memory); null, the default: each runs its own.
  void set_fused_relu(Layer* relu) { fused_relu_ = relu; }
  // Whether the layer can compute the ReLU of its one source's feature in its
  // own passes (set_relu_source).
  virtual bool FusesSourceRelu() const { return false; }
  // The layer's one source is a ReLU layer whose only consumer it is, done in
  // this layer's passes: the net passes the ReLU's own source in its place,
  // Forward computes the ReLU of what it reads, Backward sets that source's
  // gradient as the ReLU would have, and the ReLU's passes are not run (its
  // feature and gradient stay unwritten). The net decides (PartitionedNet, on
  // host memory, where both gradients are set rather than added into); off,
  // the default: each runs its own.
  void set_relu_source(bool on) { relu_source_ = on; }
  // Whether the layer works on each worker's own records only (the data
  // layer reads them, the loss their labels): data parallel, whatever the plan.
  virtual bool ReadsRecords() const { return false; }
  // The state a pass starts from where the previous one left it (a recurrent
  // layer's hidden state carried from batch to batch: row i of a batch
  // continues row i of the one before); floats null where the layer carries
  // none. Empty: zeros; else floats_per_row for each row of the batch.
  virtual CarriedState carried_state() { return {}; }
  bool CarriesState() { return carried_state().floats != nullptr; }
  // Forgets it (a new stream, a new epoch): the next pass starts from zeros.
  void ResetState() {
    if (CarriedState s = carried_state(); s.floats) s.floats->clear();
  }

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  const Shape& out_shape() const { return out_shape_; }
  size_t feature_size() const { return NumElements(out_shape_); }
  Tensor& data() { return data_; }
  const Tensor& data() const { return data_; }
  Tensor& grad() { return grad_; }
  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }
  size_t param_count() const;

  // The key of the next training pass's draws (the runtime sets it each step).
  void set_draw_key(DrawKey key) { draw_key_ = key; }
  // The key of this pass's draws that are not a record's (dropout's): the
  // step's, the worker's and this layer's own, so that a restarted worker
  // draws them again alike.
  uint64_t StreamKey() const;
  // Where the layer sums over the other workers of its group, each holding
  // its own records (lib/comm/group_sum.h); null: its batch is all there is.
  void set_group_sum(GroupSum* sum) { group_sum_ = sum; }
  // How Backward writes each source's gradient (the net decides: PlanGradWrites).
  void set_source_grad_writes(std::vector<GradWrite> writes) { source_grad_writes_ = std::move(writes); }

  void Init(std::string name, std::string type) {
    name_ = std::move(name);
    type_ = std::move(type);
  }
  // Gives every parameter its values and gradients (Setup only says their
  // shapes: a net that is only planned never allocates them, and a layer's
  // sizes are checked before anything is).
  void AllocateParams();
  // Shapes data() and grad() for a batch of `batch` records.
  void Allocate(int batch);

 protected:
  Param& AddParam(const std::string& suffix, Shape shape, ParamInit init);
  // kAdd unless the net said this layer sets source `src`'s gradient.
  GradWrite SourceGradWrite(size_t src) const {
    return src < source_grad_writes_.size() ? source_grad_writes_[src] : GradWrite::kAdd;
  }

  Shape out_shape_;
  Tensor data_;
  Tensor grad_;
  std::vector<Param> params_;
  DrawKey draw_key_;
  GroupSum* group_sum_ = nullptr;
  Layer* fused_relu_ = nullptr;
  bool relu_source_ = false;

 private:
  std::string name_;
  std::string type_;
  std::vector<GradWrite> source_grad_writes_;
};

// For a net's layers and each one's sources: a source with exactly one
// consumer that CanSetSourceGrads has its gradient set by that consumer;
// every other has it added into by each consumer. Tells each layer how it
// writes its sources' gradients, and returns the layers whose gradients a
// backward pass must clear first (those wanting one and not set).
std::vector<Layer*> PlanGradWrites(const std::vector<Layer*>& layers,
                                   const std::vector<std::vector<Layer*>>& srcs);

// The bounds of the fields that size a layer (docs/job-file.md): generous for
// any net in use, finite so that no job dl-plan accepts asks for memory beyond
// reason; Net::Build bounds each parameter and feature too (lib/graph/net.h).
inline constexpr int kMaxUnits = 1 << 24;    // a fully connected layer's num_output
inline constexpr int kMaxFilters = 1 << 16;  // a convolution's num_output
inline constexpr int kMaxWindow = 1024;      // kernel, stride, pad
inline constexpr int kMaxDataDim = 1 << 16;  // each dim of a data layer's shape (at most 4)

// For layers over images: exactly one source, shaped [channels, height, width].
Status RequireImageSource(const Fields& fields, const std::vector<const Layer*>& srcs);

// The explicit table of layer types (lib/layers/registry.cpp).
std::unique_ptr<Layer> CreateLayer(const std::string& type);
const std::vector<std::string>& LayerTypes();

}  // namespace shoal

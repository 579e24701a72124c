#include "net/partitioned_net.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "graph/net.h"
#include "plan/partition.h"

namespace shoal {
namespace {

// Stands in for a source on another rank when a layer is set up there only
// to learn its shape.
class ShapeOnlyLayer : public Layer {
 public:
  ShapeOnlyLayer(const std::string& name, Shape shape) {
    Init(name, "shape");
    out_shape_ = std::move(shape);
  }
  Status Setup(const Fields&, const std::vector<const Layer*>&) override { return Status::Ok(); }
  void Forward(Phase, const std::vector<Layer*>&) override {}
  void Backward(const std::vector<Layer*>&) override {}
};

// How layer `consumer` (partitioned as `plan_layer`) needs a source held as `held`.
Placement Needed(const LayerPlan& plan_layer, Dependency dep, const Placement& held,
                 const Shape& source_shape, int group_size) {
  Placement p;
  if (dep == Dependency::kNone) return held;  // labels only: read where they are
  if (plan_layer.partition_dim == 0) return p;
  if (plan_layer.partition_dim == -1) {
    p.kind = Placement::Kind::kOne;
    p.rank = plan_layer.location;
    return p;
  }
  if (dep == Dependency::kFull) {
    p.kind = Placement::Kind::kReplicated;
    return p;
  }
  return held.kind == Placement::Kind::kColumns ? held : SplitColumns(source_shape, group_size);
}

}  // namespace

namespace {

// Workers first .. first + m - 1 as one group, `worker` among them.
GroupPeers PeersOf(const Plan& plan, int first, int m, int worker, int timeout_ms) {
  GroupPeers peers;
  peers.rank = worker - first;
  peers.first_worker = first;
  for (int r = 0; r < m; ++r) peers.endpoints.push_back(plan.workers.at(first + r).endpoint);
  peers.plan_hash = plan.hash_value();
  peers.timeout_ms = timeout_ms;
  peers.tls_dir = plan.job.cluster.tls_dir;
  for (const auto& layer : plan.layers)
    peers.max_block_floats =
        std::max<size_t>(peers.max_block_floats, layer.feature_size * plan.job.train.batch_size * m);
  return peers;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Both passes' operations of one node for `batch` records per worker; none for a connection.
double NodeFlops(const Layer& layer, bool connection, const Placement& placement, int rank, int group_size,
                 int batch) {
  if (connection) return 0.0;
  const size_t records = BlockAt(placement, rank, group_size, batch, 1).records.size();
  return records * (layer.ForwardFlopsPerRecord() + layer.BackwardFlopsPerRecord());
}

}  // namespace

GroupPeers GroupPeersOf(const Plan& plan, int worker, int timeout_ms) {
  return PeersOf(plan, worker - plan.workers.at(worker).rank, GroupSize(plan), worker, timeout_ms);
}

GroupPeers AllWorkersOf(const Plan& plan, int worker, int timeout_ms) {
  return PeersOf(plan, 0, static_cast<int>(plan.workers.size()), worker, timeout_ms);
}

// What Build keeps while it goes through the net's layers in order.
struct PartitionedNet::Building {
  const Plan& plan;
  const Net& whole;
  GroupChannel* channel;
  std::map<std::string, size_t> index;               // layer name -> position in the net
  std::map<std::string, const LayerConfig*> config;  // layer name -> its job entry
  std::vector<Placement> held;                       // per layer: how its feature is spread over the group
  std::vector<Layer*> local;                         // per layer: this rank's, if it holds one
  int connections = 0;
};

Status PartitionedNet::Build(const Plan& plan, int worker, GroupChannel* channel,
                             std::unique_ptr<PartitionedNet>* out) {
  std::unique_ptr<Net> whole;
  SHOAL_RETURN_IF_ERROR(Net::Build(plan.job, &whole, /*allocate_params=*/false));
  auto net = std::unique_ptr<PartitionedNet>(new PartitionedNet());
  net->group_size_ = GroupSize(plan);
  net->rank_ = plan.workers.at(worker).rank;
  net->draw_seed_ = static_cast<uint64_t>(plan.job.train.seed);
  net->worker_ = static_cast<uint64_t>(worker);
  if (net->group_size_ > 1 && !channel)
    return Status::InvalidArgument("a group of " + std::to_string(net->group_size_) + " needs a channel");
  if (channel) net->group_sum_ = std::make_unique<GroupSum>(channel);
  const size_t n = whole->layers().size();
  if (plan.layers.size() != n) return Status::InvalidArgument("the plan's layers do not match its job's net");
  Building b{plan, *whole, channel, {}, {}, std::vector<Placement>(n), std::vector<Layer*>(n, nullptr)};
  for (size_t i = 0; i < n; ++i) b.index[whole->layers()[i]->name()] = i;
  for (const auto& c : plan.job.layers) b.config[c.name] = &c;
  for (size_t i = 0; i < n; ++i) SHOAL_RETURN_IF_ERROR(net->AddLayer(b, i));
  if (!net->data_ || !net->loss_)
    return Status::InvalidArgument("the plan places the data or the loss layer off worker " +
                                   std::to_string(worker) + " (both are partitioned by records)");
  std::vector<Layer*> layers;
  std::vector<std::vector<Layer*>> srcs;
  for (Node& node : net->nodes_) {
    layers.push_back(node.layer.get());
    srcs.push_back(node.srcs);
  }
  net->cleared_ = PlanGradWrites(layers, srcs);
  net->FuseRelus(true);
  *out = std::move(net);
  return Status::Ok();
}

std::vector<std::string> PartitionedNet::FusedLayers() const {
  std::vector<std::string> names;
  for (const Node& node : nodes_)
    if (node.fused) names.push_back(node.layer->name());
  return names;
}

void PartitionedNet::FuseRelus(bool on) {
  for (Node& node : nodes_) {
    node.fused = false;
    node.pass_srcs = node.srcs;
    node.layer->set_fused_relu(nullptr);
    node.layer->set_relu_source(false);
  }
  if (!on) return;
  auto consumers = [&](const Layer* layer) {
    size_t n = 0;
    for (const Node& other : nodes_)
      n += static_cast<size_t>(std::count(other.srcs.begin(), other.srcs.end(), layer));
    return n;
  };
  auto relu = [](const Node& node) {
    return !node.connection && node.layer->type() == "relu" && node.srcs.size() == 1;
  };
  // Into the source: the ReLU's feature is written, its source's is not.
  for (Node& node : nodes_) {
    if (!relu(node) || !node.srcs[0]->FusesRelu() || consumers(node.srcs[0]) != 1) continue;
    node.srcs[0]->set_fused_relu(node.layer.get());
    node.fused = true;
  }
  // Into the consumer: the ReLU's source is written, the ReLU's feature is
  // not. Each gradient on the way has one consumer, so both are set.
  for (Node& consumer : nodes_) {
    if (consumer.connection || consumer.srcs.size() != 1 || !consumer.layer->FusesSourceRelu()) continue;
    auto src = std::find_if(nodes_.begin(), nodes_.end(),
                            [&](const Node& node) { return node.layer.get() == consumer.srcs[0]; });
    if (src == nodes_.end() || src->fused || !relu(*src) || consumers(src->layer.get()) != 1 ||
        consumers(src->srcs[0]) != 1)
      continue;
    consumer.pass_srcs = src->srcs;
    consumer.layer->set_relu_source(true);
    src->fused = true;
  }
}

nlohmann::json PartitionedNet::FieldsForRank(const Building& b, size_t i, int r) const {
  const Layer& layer = *b.whole.layers()[i];
  nlohmann::json fields = b.config.at(layer.name())->fields;
  // Model parallel: each rank computes a range of the outputs.
  if (b.plan.layers[i].partition_dim == 1 && layer.SplitsOutputs())
    fields["num_output"] = static_cast<int>(SplitRange(layer.out_shape()[0], group_size_, r).size());
  return fields;
}

Status PartitionedNet::Place(const Building& b, size_t i, const std::vector<Placement>& needs,
                             Placement* held) const {
  const LayerPlan& lp = b.plan.layers[i];
  *held = Placement();
  if (group_size_ == 1 || lp.partition_dim == 0) return Status::Ok();
  if (lp.partition_dim == -1) {
    held->kind = Placement::Kind::kOne;
    held->rank = lp.location;
    return Status::Ok();
  }
  // Set the layer up as every rank would to learn which floats each holds.
  const Layer& layer = *b.whole.layers()[i];
  const auto& sources = b.whole.sources(i);
  std::vector<Shape> shapes;
  for (int r = 0; r < group_size_; ++r) {
    std::vector<std::unique_ptr<Layer>> stand_ins;
    std::vector<const Layer*> srcs;
    for (size_t k = 0; k < sources.size(); ++k) {
      stand_ins.push_back(std::make_unique<ShapeOnlyLayer>(sources[k]->name(),
                                                           ShapeAt(needs[k], r, sources[k]->out_shape())));
      srcs.push_back(stand_ins.back().get());
    }
    std::unique_ptr<Layer> probe;
    const nlohmann::json fields = FieldsForRank(b, i, r);
    SHOAL_RETURN_IF_ERROR(BuildLayer(b.plan.job, *b.config.at(layer.name()), fields, srcs, false, &probe));
    shapes.push_back(probe->out_shape());
  }
  *held = ColumnsOf(shapes);
  return Status::Ok();
}

std::vector<Layer*> PartitionedNet::Connect(Building& b, size_t i, const std::vector<Placement>& needs) {
  const Layer& layer = *b.whole.layers()[i];
  const auto& sources = b.whole.sources(i);
  std::vector<Layer*> srcs;
  for (size_t k = 0; k < sources.size(); ++k) {
    const size_t s = b.index.at(sources[k]->name());
    if (needs[k] == b.held[s]) {
      srcs.push_back(b.local[s]);
      continue;
    }
    auto connection = std::make_unique<ConnectionLayer>(b.channel, b.connections++, sources[k]->name(),
                                                        layer.name(), b.held[s], needs[k],
                                                        sources[k]->out_shape(), sources[k]->WantsGrad());
    Node node;
    node.connection = connection.get();
    node.placement = needs[k];
    if (b.local[s]) node.srcs.push_back(b.local[s]);
    srcs.push_back(connection.get());
    node.layer = std::move(connection);
    nodes_.push_back(std::move(node));
  }
  return srcs;
}

Status PartitionedNet::AddLayer(Building& b, size_t i) {
  const Layer& layer = *b.whole.layers()[i];
  const LayerPlan& lp = b.plan.layers[i];
  const auto& sources = b.whole.sources(i);
  const bool elementwise_follower =
      sources.size() == 1 && layer.SourceDependency(0) == Dependency::kElementwise;
  if (lp.name != layer.name() || (lp.partition_dim == 1 && !layer.SplitsOutputs() && !elementwise_follower))
    return Status::InvalidArgument("layer '" + lp.name + "' (" + lp.type +
                                   ") cannot split its features over the workers of a group");
  // How each source must be placed for this layer; in a group of one, everything is its rows.
  std::vector<Placement> needs;
  for (size_t k = 0; k < sources.size(); ++k) {
    const size_t s = b.index.at(sources[k]->name());
    needs.push_back(group_size_ == 1 ? Placement()
                                     : Needed(lp, layer.SourceDependency(k), b.held[s],
                                              sources[k]->out_shape(), group_size_));
  }
  SHOAL_RETURN_IF_ERROR(Place(b, i, needs, &b.held[i]));
  // This rank's part: a connection wherever a source is not placed as
  // needed (every rank runs it), then the layer if this rank holds it.
  std::vector<Layer*> srcs = Connect(b, i, needs);
  if (b.held[i].kind == Placement::Kind::kOne && b.held[i].rank != rank_) return Status::Ok();
  std::vector<const Layer*> const_srcs(srcs.begin(), srcs.end());
  Node node;
  const nlohmann::json fields = FieldsForRank(b, i, rank_);
  SHOAL_RETURN_IF_ERROR(
      BuildLayer(b.plan.job, *b.config.at(layer.name()), fields, const_srcs, true, &node.layer));
  node.srcs = srcs;
  node.placement = b.held[i];
  // Each rank holds its own records: a layer whose statistics span the
  // group's batch sums over the group.
  if (group_sum_ && node.placement.kind == Placement::Kind::kRows)
    node.layer->set_group_sum(group_sum_.get());
  b.local[i] = node.layer.get();
  if (auto* d = dynamic_cast<DataLayer*>(b.local[i])) data_ = d;
  if (auto* l = dynamic_cast<LossLayer*>(b.local[i])) loss_ = l;
  nodes_.push_back(std::move(node));
  return Status::Ok();
}

void PartitionedNet::Allocate(int batch) {
  for (auto& node : nodes_) {
    node.layer->Allocate(
        static_cast<int>(BlockAt(node.placement, rank_, group_size_, batch, 1).records.size()));
    if (node.connection) node.connection->set_batch(batch);
  }
  data_->labels().resize(batch);
}

double PartitionedNet::TrainingFlops(int batch) const {
  double flops = 0.0;
  for (const auto& node : nodes_)
    flops += NodeFlops(*node.layer, node.connection != nullptr, node.placement, rank_, group_size_, batch);
  return flops;
}

std::vector<PartitionedNet::LayerTime> PartitionedNet::LayerTimes(int batch) const {
  std::vector<LayerTime> times;
  for (const auto& node : nodes_)
    times.push_back(
        {node.layer->name(), node.connection ? "connection" : node.layer->type(), node.forward_s,
         node.backward_s,
         NodeFlops(*node.layer, node.connection != nullptr, node.placement, rank_, group_size_, batch)});
  return times;
}

Status PartitionedNet::Forward(Phase phase, uint64_t step, LayerHooks* hooks) {
  // Evaluation runs on the host, on the parameters' home values.
  StepMemory* memory = phase == Phase::kTrain ? memory_ : nullptr;
  ScopedGpuOps on(memory ? gpu_ : nullptr);
  if (group_sum_ && phase == Phase::kTrain) group_sum_->BeginStep(step);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    if (node.connection) node.connection->set_step(step);
    node.layer->set_draw_key({draw_seed_, step, worker_});
    if (hooks) SHOAL_RETURN_IF_ERROR(hooks->BeforeForward(*node.layer));
    if (memory) SHOAL_RETURN_IF_ERROR(memory->Before(i));
    const auto start = std::chrono::steady_clock::now();
    if (!node.fused) node.layer->Forward(phase, node.pass_srcs);
    if (phase == Phase::kTrain) node.forward_s += SecondsSince(start);
    if (memory && gpu_) SHOAL_RETURN_IF_ERROR(gpu_->TakeStatus().Within(node.layer->name() + " forward"));
    if (memory) SHOAL_RETURN_IF_ERROR(memory->After(i));
    if (node.connection) SHOAL_RETURN_IF_ERROR(node.connection->status());
    if (group_sum_) SHOAL_RETURN_IF_ERROR(group_sum_->status());
  }
  return Status::Ok();
}

Status PartitionedNet::Backward(uint64_t step, LayerHooks* hooks) {
  // As Net::Backward: the gradients summed into are cleared first (on device
  // memory the manager zeroes each one at its first use).
  if (!memory_)
    for (Layer* layer : cleared_) layer->grad().Fill(0.0f);
  ScopedGpuOps on(memory_ ? gpu_ : nullptr);
  for (size_t i = nodes_.size(); i-- > 0;) {
    Node& node = nodes_[i];
    const size_t op = 2 * nodes_.size() - 1 - i;  // TrainingStepOps: backward passes follow the forward ones
    if (node.connection) node.connection->set_step(step);
    if (memory_) SHOAL_RETURN_IF_ERROR(memory_->Before(op));
    const auto start = std::chrono::steady_clock::now();
    if (!node.fused) node.layer->Backward(node.pass_srcs);
    node.backward_s += SecondsSince(start);
    if (memory_ && gpu_) SHOAL_RETURN_IF_ERROR(gpu_->TakeStatus().Within(node.layer->name() + " backward"));
    if (memory_) SHOAL_RETURN_IF_ERROR(memory_->After(op));
    if (node.connection) SHOAL_RETURN_IF_ERROR(node.connection->status());
    if (group_sum_) SHOAL_RETURN_IF_ERROR(group_sum_->status());
    if (hooks) SHOAL_RETURN_IF_ERROR(hooks->AfterBackward(*node.layer, step));
  }
  if (memory_) SHOAL_RETURN_IF_ERROR(memory_->EndStep());
  return Status::Ok();
}

StepOps PartitionedNet::TrainingStepOps() {
  using Lifetime = StepBuffer::Lifetime;
  StepOps ops;
  // The data layer's passes do nothing: the worker fills its feature before the step.
  auto is_data = [&](Layer* l) { return l == data_; };
  auto data = [&](Layer* l) {
    return ops.AddBuffer(l->name() + ".data", is_data(l) ? Lifetime::kInput : Lifetime::kStep, false,
                         &l->data());
  };
  auto grad = [&](Layer* l) {
    return ops.AddBuffer(l->name() + ".grad", Lifetime::kGradient, false, &l->grad());
  };
  auto value = [&](Param& p) { return ops.AddBuffer(p.name, Lifetime::kInput, true, &p.value); };
  auto param_grad = [&](Param& p) {
    return ops.AddBuffer(p.name + ".grad", Lifetime::kOutput, true, &p.grad);
  };
  // A layer's forward pass reads its sources' features and its parameters
  // and sets its feature.
  for (Node& node : nodes_) {
    ops.ops.push_back({node.layer->name() + " forward", {}});
    const size_t op = ops.ops.size() - 1;
    if (is_data(node.layer.get())) continue;
    for (Layer* src : node.srcs) ops.Use(op, data(src), true, false);
    for (Param& p : node.layer->params()) ops.Use(op, value(p), true, false);
    ops.Use(op, data(node.layer.get()), false, true);
  }
  // Its backward pass may read all of that and its feature's gradient; it
  // adds into its sources' gradients and sets its parameters'.
  for (size_t i = nodes_.size(); i-- > 0;) {
    Node& node = nodes_[i];
    Layer* layer = node.layer.get();
    ops.ops.push_back({layer->name() + " backward", {}});
    const size_t op = ops.ops.size() - 1;
    if (is_data(layer)) continue;
    for (Layer* src : node.srcs) ops.Use(op, data(src), true, false);
    for (Param& p : layer->params()) ops.Use(op, value(p), true, false);
    ops.Use(op, data(layer), true, false);
    if (layer->WantsGrad()) ops.Use(op, grad(layer), true, false);
    for (Layer* src : node.srcs)
      if (src->WantsGrad()) ops.Use(op, grad(src), true, true);
    for (Param& p : layer->params()) ops.Use(op, param_grad(p), false, true);
  }
  return ops;
}

std::string PartitionedNet::LayerOffGpu() const {
  for (const auto& node : nodes_)
    if (!node.layer->RunsOnGpu()) {
      const std::string what = node.connection ? "a connection between workers" : node.layer->type();
      return "layer '" + node.layer->name() + "' (" + what + ")";
    }
  return "";
}

bool PartitionedNet::HasLayerType(const std::string& type) const {
  for (const auto& node : nodes_)
    if (node.layer->type() == type) return true;
  return false;
}

std::string PartitionedNet::StateCarrier() const {
  for (const auto& node : nodes_)
    if (node.layer->CarriesState()) return node.layer->name();
  return "";
}

void PartitionedNet::ResetState() {
  for (auto& node : nodes_) node.layer->ResetState();
}

std::vector<CarriedState> PartitionedNet::CarriedStates() {
  std::vector<CarriedState> states;
  for (auto& node : nodes_)
    if (CarriedState s = node.layer->carried_state(); s.floats) states.push_back(s);
  return states;
}

std::vector<Param*> PartitionedNet::params() {
  std::vector<Param*> all;
  for (auto& node : nodes_)
    for (auto& p : node.layer->params()) all.push_back(&p);
  return all;
}

uint64_t PartitionedNet::feature_bytes_in() const {
  uint64_t n = 0;
  for (const auto& node : nodes_)
    if (node.connection) n += node.connection->bytes_in();
  return n;
}

uint64_t PartitionedNet::feature_bytes_out() const {
  uint64_t n = 0;
  for (const auto& node : nodes_)
    if (node.connection) n += node.connection->bytes_out();
  return n;
}

std::vector<std::string> PartitionedNet::DescribeConnections() const {
  std::vector<std::string> lines;
  for (const auto& node : nodes_)
    if (node.connection) lines.push_back(node.connection->Describe());
  return lines;
}

}  // namespace shoal

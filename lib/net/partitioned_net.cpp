#include "net/partitioned_net.h"

#include <algorithm>
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
    Init(name, "shape", false);
    out_shape_ = std::move(shape);
  }
  Status Setup(const Fields&, const std::vector<const Layer*>&) override { return Status::Ok(); }
  void Forward(Phase, const std::vector<Layer*>&) override {}
  void Backward(const std::vector<Layer*>&) override {}
};

// How layer `consumer` (partitioned as `plan_layer`) needs a source held as `held`.
Placement Needed(const LayerPlan& plan_layer, Dependency dep, const Placement& held, const Shape& source_shape,
                 int group_size) {
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

GroupPeers GroupPeersOf(const Plan& plan, int worker, int timeout_ms) {
  GroupPeers peers;
  const int m = GroupSize(plan);
  peers.rank = plan.workers.at(worker).rank;
  peers.first_worker = worker - peers.rank;
  for (int r = 0; r < m; ++r) peers.endpoints.push_back(plan.workers.at(peers.first_worker + r).endpoint);
  peers.plan_hash = plan.hash_value();
  peers.timeout_ms = timeout_ms;
  peers.tls_dir = plan.job.cluster.tls_dir;
  for (const auto& layer : plan.layers)
    peers.max_block_floats = std::max<size_t>(peers.max_block_floats,
                                              layer.feature_size * plan.job.train.batch_size * m);
  return peers;
}

Status PartitionedNet::Build(const Plan& plan, int worker, GroupChannel* channel,
                             std::unique_ptr<PartitionedNet>* out) {
  const JobConfig& job = plan.job;
  std::unique_ptr<Net> whole;
  SHOAL_RETURN_IF_ERROR(Net::Build(job, &whole, /*allocate_params=*/false));
  auto net = std::unique_ptr<PartitionedNet>(new PartitionedNet());
  const int m = GroupSize(plan);
  const int rank = plan.workers.at(worker).rank;
  net->group_size_ = m;
  net->rank_ = rank;
  if (m > 1 && !channel) return Status::InvalidArgument("a group of " + std::to_string(m) + " needs a channel");
  const size_t n = whole->layers().size();
  if (plan.layers.size() != n) return Status::InvalidArgument("the plan's layers do not match its job's net");
  std::map<std::string, size_t> index;
  std::map<std::string, const LayerConfig*> config;
  for (size_t i = 0; i < n; ++i) index[whole->layers()[i]->name()] = i;
  for (const auto& c : job.layers) config[c.name] = &c;

  std::vector<Placement> held(n);
  std::vector<Layer*> local(n, nullptr);  // this rank's layer, if it holds one
  int connections = 0;
  for (size_t i = 0; i < n; ++i) {
    const Layer& layer = *whole->layers()[i];
    const LayerPlan& lp = plan.layers[i];
    const LayerConfig& cfg = *config.at(layer.name());
    const auto& sources = whole->sources(i);
    const bool elementwise_follower =
        sources.size() == 1 && layer.SourceDependency(0) == Dependency::kElementwise;
    if (lp.name != layer.name() || (lp.partition_dim == 1 && !layer.SplitsOutputs() && !elementwise_follower))
      return Status::InvalidArgument("layer '" + lp.name + "' (" + lp.type +
                                     ") cannot split its features over the workers of a group");

    // How each source must be placed for this layer; in a group of one, everything is its rows.
    std::vector<Placement> needs;
    for (size_t k = 0; k < sources.size(); ++k) {
      const size_t s = index.at(sources[k]->name());
      needs.push_back(m == 1 ? Placement() : Needed(lp, layer.SourceDependency(k), held[s], sources[k]->out_shape(), m));
    }
    // Model parallel: each rank computes a range of the outputs; set the
    // layer up as every rank would to learn which floats each holds.
    auto node_for_rank = [&](int r) {
      nlohmann::json fields = cfg.fields;
      if (lp.partition_dim == 1 && layer.SplitsOutputs())
        fields["num_output"] = static_cast<int>(SplitRange(layer.out_shape()[0], m, r).size());
      return fields;
    };
    if (m == 1 || lp.partition_dim == 0) {
      held[i] = Placement();
    } else if (lp.partition_dim == -1) {
      held[i].kind = Placement::Kind::kOne;
      held[i].rank = lp.location;
    } else {
      std::vector<Shape> shapes;
      for (int r = 0; r < m; ++r) {
        std::vector<std::unique_ptr<Layer>> stand_ins;
        std::vector<const Layer*> srcs;
        for (size_t k = 0; k < sources.size(); ++k) {
          stand_ins.push_back(std::make_unique<ShapeOnlyLayer>(
              sources[k]->name(), ShapeAt(needs[k], r, sources[k]->out_shape())));
          srcs.push_back(stand_ins.back().get());
        }
        std::unique_ptr<Layer> probe;
        const nlohmann::json fields = node_for_rank(r);
        SHOAL_RETURN_IF_ERROR(BuildLayer(job, cfg, fields, srcs, false, &probe));
        shapes.push_back(probe->out_shape());
      }
      held[i] = ColumnsOf(shapes);
    }

    // This rank's part: a connection wherever a source is not placed as
    // needed (every rank runs it), then the layer if this rank holds it.
    std::vector<Layer*> srcs;
    for (size_t k = 0; k < sources.size(); ++k) {
      const size_t s = index.at(sources[k]->name());
      if (needs[k] == held[s]) {
        srcs.push_back(local[s]);
        continue;
      }
      auto connection = std::make_unique<ConnectionLayer>(channel, connections++, sources[k]->name(), layer.name(),
                                                          held[s], needs[k], sources[k]->out_shape(),
                                                          sources[k]->WantsGrad());
      Node node;
      node.connection = connection.get();
      node.placement = needs[k];
      if (local[s]) node.srcs.push_back(local[s]);
      srcs.push_back(connection.get());
      node.layer = std::move(connection);
      net->nodes_.push_back(std::move(node));
    }
    if (held[i].kind == Placement::Kind::kOne && held[i].rank != rank) continue;
    std::vector<const Layer*> const_srcs(srcs.begin(), srcs.end());
    Node node;
    const nlohmann::json fields = node_for_rank(rank);
    SHOAL_RETURN_IF_ERROR(BuildLayer(job, cfg, fields, const_srcs, true, &node.layer));
    node.srcs = srcs;
    node.placement = held[i];
    local[i] = node.layer.get();
    if (auto* d = dynamic_cast<DataLayer*>(local[i])) net->data_ = d;
    if (auto* l = dynamic_cast<SoftmaxLossLayer*>(local[i])) net->loss_ = l;
    net->nodes_.push_back(std::move(node));
  }
  if (!net->data_ || !net->loss_)
    return Status::InvalidArgument("the plan places the data or the loss layer off worker " + std::to_string(worker) +
                                   " (both are partitioned by records)");
  *out = std::move(net);
  return Status::Ok();
}

void PartitionedNet::Allocate(int batch) {
  for (auto& node : nodes_) {
    node.layer->Allocate(static_cast<int>(BlockAt(node.placement, rank_, group_size_, batch, 1).records.size()));
    if (node.connection) node.connection->set_batch(batch);
  }
  data_->labels().resize(batch);
}

Status PartitionedNet::Forward(Phase phase, uint64_t step, LayerHooks* hooks) {
  for (auto& node : nodes_) {
    if (node.connection) node.connection->set_step(step);
    if (hooks) SHOAL_RETURN_IF_ERROR(hooks->BeforeForward(*node.layer));
    node.layer->Forward(phase, node.srcs);
    if (node.connection) SHOAL_RETURN_IF_ERROR(node.connection->status());
  }
  return Status::Ok();
}

Status PartitionedNet::Backward(uint64_t step, LayerHooks* hooks) {
  // As Net::Backward: source gradients are summed into, so cleared first.
  for (auto& node : nodes_)
    if (node.layer->WantsGrad()) node.layer->grad().Fill(0.0f);
  for (size_t i = nodes_.size(); i-- > 0;) {
    Node& node = nodes_[i];
    if (node.connection) node.connection->set_step(step);
    node.layer->Backward(node.srcs);
    if (node.connection) SHOAL_RETURN_IF_ERROR(node.connection->status());
    if (hooks) SHOAL_RETURN_IF_ERROR(hooks->AfterBackward(*node.layer, step));
  }
  return Status::Ok();
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

// plan.json: what every long-running process of a run reads (schemas/plan.schema.json).
// It embeds the job (after overrides), so the plan alone describes the run,
// and carries a content hash that every message repeats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/job.h"
#include "layers/layer.h"

namespace shoal {

struct LayerPlan {
  std::string name;
  std::string type;
  int partition_dim = 0;
  size_t params = 0;        // parameter count
  size_t feature_size = 0;  // floats per record
  double forward_flops = 0; // per record
};

// A contiguous piece of one parameter, held by one server under `key`.
struct SlicePlan {
  uint32_t key = 0;
  std::string param;
  size_t offset = 0;  // floats into the parameter
  size_t count = 0;
  int server = 0;
};

struct ParamPlan {
  std::string name;
  Shape shape;
  ParamInit init;
  std::vector<uint32_t> slices;  // keys, in offset order
};

struct WorkerPlan {
  int id = 0;  // global
  int group = 0;
  int rank = 0;
};

struct ServerPlan {
  int id = 0;
  std::string endpoint;
};

struct Plan {
  std::string hash;  // hex FNV-1a of the content; recomputed and checked on load
  std::string strategy = "data";  // how the partitioning was chosen: optimal | data | model
  nlohmann::json planner;         // the planner's cost report (lib/plan/planner.h); null: none
  JobConfig job;
  std::vector<LayerPlan> layers;
  std::vector<ParamPlan> params;
  std::vector<SlicePlan> slices;  // indexed by key
  std::vector<WorkerPlan> workers;
  std::vector<ServerPlan> servers;

  uint64_t hash_value() const;
  const ParamPlan* FindParam(const std::string& name) const;
};

struct PlanOptions {
  std::vector<std::string> endpoints;  // one per server; empty: tcp://127.0.0.1:base_port+i
  int base_port = 5555;
};

// The data-parallel plan: every layer on partition_dim 0, parameters cut into
// slices of at most cluster.slice_floats, dealt to servers in turn.
// (The cost-based hybrid search replaces the partitioning step here.)
Status MakeDataParallelPlan(const JobConfig& job, const PlanOptions& options, Plan* plan);

// Records the planner's result: each layer's partition_dim (in layer order),
// the strategy and the cost report; recomputes the hash.
Status ApplyPartition(const std::vector<int>& partition_dims, const std::string& strategy,
                      const nlohmann::json& report, Plan* plan);

nlohmann::json PlanToJson(const Plan& plan);
Status PlanFromJson(const nlohmann::json& json, const std::string& source, Plan* plan);
Status LoadPlan(const std::string& path, Plan* plan);

}  // namespace shoal

// plan.json: what every long-running process of a run reads (schemas/plan.schema.json).
// It embeds the job (after overrides, typed, every default filled in), so the
// plan alone describes the run and only dl-plan reads YAML, and carries a
// content hash that every message repeats. MakePlan builds plans
// (lib/plan/plan.cpp); lib/plan/plan_json.cpp writes, reads and checks them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/job.h"
#include "layers/layer.h"

namespace shoal {

class Net;

struct LayerPlan {
  std::string name;
  std::string type;
  int partition_dim = 0;     // 0 batch, 1 features, -1 none (lib/plan/partition.h)
  int location = 0;          // partition_dim -1: the rank of each group that holds the layer
  size_t params = 0;         // parameter count
  size_t feature_size = 0;   // floats per record
  double forward_flops = 0;  // per record
};

// A contiguous piece of one parameter, held by one server under `key`.
struct SlicePlan {
  uint32_t key = 0;
  std::string param;
  size_t offset = 0;  // floats into the parameter
  size_t count = 0;
  int server = 0;
  size_t param_index = 0;  // its parameter's index in Plan::params (IndexPlan; not in plan.json)
};

struct ParamPlan {
  std::string name;
  Shape shape;
  ParamInit init;
  std::vector<uint32_t> slices;  // keys, in offset order
  float lr_mult = 1.0f;          // Param::lr_mult
  ParamRole role = ParamRole::kTrained;
  bool frozen() const {
    return lr_mult == 0.0f;
  }                  // never updated, so never exchanged (lib/train/param_table.h)
  size_t layer = 0;  // its layer's index in Plan::layers (IndexPlan; not in plan.json)
};

struct WorkerPlan {
  int id = 0;  // global
  int group = 0;
  int rank = 0;
  std::string endpoint;  // where its group's peers send it features; may be empty in groups of one
};

struct ServerPlan {
  int id = 0;
  std::string endpoint;
};

struct Plan {
  std::string hash;                     // hex FNV-1a of the content; recomputed and checked on load
  Strategy strategy = Strategy::kData;  // how the partitioning was chosen
  std::string commit;                   // of the build that wrote it
  nlohmann::json planner;               // the planner's cost report (lib/plan/planner.h); null: none
  JobConfig job;
  std::vector<LayerPlan> layers;
  std::vector<ParamPlan> params;
  std::vector<SlicePlan> slices;  // indexed by key
  std::vector<WorkerPlan> workers;
  std::vector<ServerPlan> servers;
  int group_size = 1;  // M: the workers of a group (IndexPlan; not in plan.json)

  uint64_t hash_value() const;
  const ParamPlan* FindParam(const std::string& name) const;
};

struct PlanOptions {
  std::vector<std::string> endpoints;  // one per server; empty: tcp://127.0.0.1:base_port+i
  std::vector<std::string>
      worker_endpoints;  // one per worker (groups of M > 1); empty: the ports after the servers'
  int base_port = 5555;
};

// How the layers are spread over the workers: the planner's result.
struct Partition {
  int group_size = 1;          // M; the job's workers form groups of M
  std::vector<int> dims;       // per layer, in the net's order: 0, 1 or -1; empty: all 0
  std::vector<int> locations;  // per layer: the rank holding an unpartitioned layer
  Strategy strategy = Strategy::kData;
  nlohmann::json report;  // the planner's cost report; null: none
};

// The most memory a plan may ask of one process (a worker's parameters and
// features, a server's slices); MakePlan refuses a job that needs more.
inline constexpr double kMaxProcessBytes = 64.0 * (1u << 30);

// What a process of the plan will hold, against kMaxProcessBytes: a job
// that cannot run is refused when it is planned (and loaded), not by a
// server's or a worker's failed allocation. InvalidArgument naming the rank or server.
Status CheckPlanMemory(const Plan& plan);

// The most slices a plan may cut its parameters into (cluster.slice_floats
// sets their size): more would make a plan larger than its readers take.
inline constexpr size_t kMaxPlanSlices = size_t{1} << 20;

// The plan for a partition: parameters cut into slices of at most
// cluster.slice_floats (and where a partitioned layer's ranks divide them),
// each server holding 1/S of every range; the workers in groups with their
// endpoints. Fails, naming the setting, where the slices would be more than
// kMaxPlanSlices. Every refusal is InvalidArgument; also the errors of
// Net::Build and of reading an init_from checkpoint. *plan is part-filled then.
Status MakePlan(const JobConfig& job, const PlanOptions& options, const Partition& partition, Plan* plan);
// Every layer on partition_dim 0, in groups of one.
Status MakeDataParallelPlan(const JobConfig& job, const PlanOptions& options, Plan* plan);

// Whether `workers` workers in groups of `group_size`, training `net`,
// exchange with each other inside every step: groups of more than one, or
// a layer that sums over every worker's batch (sync: true). Then no worker
// can rejoin a step its peers are in, and a supervisor restarts them all
// from a checkpoint set when one dies.
bool ExchangeInStep(int group_size, int workers, const Net& net);
// The same for a plan. Fails only where the plan's net does not build
// (LoadPlan has built it): Net::Build's errors, with *exchange untouched.
Status WorkersExchange(const Plan& plan, bool* exchange);

// Fills what a plan derives from its content, so that lookups are by index
// (a plan of a million slices is written and read in linear time): each
// parameter's layer, each slice's parameter, the group size. Fails naming a
// parameter of no layer or a slice of no parameter (InvalidArgument); the
// indices before it are set then.
Status IndexPlan(Plan* plan);

// Gives the plan's servers, and its workers where they need one (`grouped`:
// groups of more than one) or endpoints are given, their endpoints; the
// caller rehashes. A plan made for other ports or hosts is moved by it.
// InvalidArgument for an endpoint given that EndpointProblem refuses, counts
// that do not match, or ports past 65535; the servers may be placed then.
Status PlaceEndpoints(const PlanOptions& options, bool grouped, Plan* plan);
// Why `endpoint` is no address a peer could dial, as a clause ("its port is
// not 1 to 65535"), or "": transport://address of at most 512 bytes of
// UTF-8, and for TCP a host (an IPv6 address in brackets) and a port 1 to 65535.
std::string EndpointProblem(const std::string& endpoint);
// The hash a plan's content has (what Plan::hash records).
std::string PlanContentHash(const Plan& plan);
nlohmann::json PlanToJson(const Plan& plan);
// The plan's file as dl-plan writes it; refused, saying so, when it is
// larger than LoadPlan reads (InvalidArgument; *text holds the text all the same).
Status PlanText(const Plan& plan, std::string* text);
// Reads a plan and checks it whole before anyone acts on it: the hash, the
// job, the net it builds, every parameter, slice, worker and server.
// Corruption where the hash does not match; InvalidArgument for a plan
// malformed or inconsistent; Net::Build's errors. *plan is part-filled then.
Status PlanFromJson(const nlohmann::json& json, const std::string& source, Plan* plan);
// The same from a file: also the errors of ReadFile and ParseJson, with *plan untouched.
Status LoadPlan(const std::string& path, Plan* plan);

}  // namespace shoal

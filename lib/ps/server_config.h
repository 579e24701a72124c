// What one parameter server needs to know of its plan, worked out once at
// start-up: who it is, whom it serves, how it updates, and the layout of its
// part of the table. The server keeps this, not the plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/message.h"
#include "comm/tls.h"
#include "layers/layer.h"
#include "plan/plan.h"
#include "ps/updater.h"

namespace shoal {

// One slice this server holds.
struct SliceSpec {
  uint32_t key = 0;
  std::string param;  // the parameter it is a piece of
  std::string name;   // in checkpoints: the parameter, "[offset]" added when it is cut into several slices
  size_t offset = 0, count = 0;
  Shape shape;  // the whole parameter's
  ParamInit init;
  float lr_mult = 1.0f;
  ParamRole role = ParamRole::kTrained;
  // lr_mult 0: no update ever changes it, so no worker sends its gradients
  // and it belongs to no layer here (layers are the unit of updates and
  // versions); a worker reads it once, as it joins.
  bool frozen() const { return lr_mult == 0.0f; }
};

// One layer's slices on this server: the unit of an update and of versions
// (a frozen layer's slices are in none).
struct LayerSpec {
  std::string name;
  std::vector<uint32_t> keys;               // increasing
  std::vector<std::vector<uint32_t>> held;  // per worker: its keys of this layer here, increasing
  int holders = 0;                          // workers holding some of it here
};

struct ServerConfig {
  int id = 0;
  int group = 0;  // its server group (distributed Hogwild: several)
  std::string endpoint;
  TlsIdentity tls;
  std::string tls_dir;
  std::string plan_hash;  // as the plan writes it
  uint64_t plan_hash_value = 0;

  int workers = 0;                       // of the plan
  std::vector<int> worker_server_group;  // per worker: the server group that serves it
  std::vector<bool> serves;              // per worker: in this server's group
  int served = 0;                        // how many it serves
  ConsistencyModel consistency = ConsistencyModel::kBsp;
  uint64_t staleness = 0;    // ssp
  double easgd_alpha = 0.1;  // easgd
  UpdaterConfig updater;
  ValueEncoding wire = ValueEncoding::kF32;  // how workers' slices travel
  int timeout_ms = 0;
  int lease_ms = 0;           // no worker connected for this long: the server stops
  int checkpoint_every = 0;   // updates between checkpoints; 0: at the end only
  uint64_t steps = 0;         // the job's train.steps; 0: from its epochs (which a server cannot count)
  int seed = 1;               // initial values (lib/ps/param_init.h)
  int servers = 0;            // of the plan, every group's
  int servers_per_group = 1;  // what a checkpoint records as the run's servers

  std::vector<SliceSpec> slices;     // by increasing key
  std::vector<LayerSpec> layers;     // in the net's order
  std::vector<int> holders_per_key;  // per key of the plan: how many workers hold it
  std::vector<std::vector<uint32_t>>
      held;  // per worker: its keys on this server, increasing (a join's answer)
  std::vector<std::vector<uint32_t>> exchanged;  // per worker: its keys here less the frozen (every update's)
  size_t max_request_bytes = 0;                  // the largest request a peer can legitimately send

  // Distributed Hogwild: the servers of other groups this one syncs with.
  int sync_freq = 0;
  std::vector<int> sync_neighbours;
  std::vector<std::string> sync_endpoints;  // theirs, in the same order
  size_t keys_per_group = 0;                // a neighbour's copy of key k is k + (its group − ours) × this
};

// Works out what server `id` needs of `plan` into *config. Returns
// InvalidArgument when `id` is not one of the plan's servers; *config is
// unchanged then.
Status MakeServerConfig(const Plan& plan, int id, ServerConfig* config);

}  // namespace shoal

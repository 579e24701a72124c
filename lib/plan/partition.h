// What each worker of a hybrid plan holds (SINGA §5.3). Within a group of M
// workers, a layer partitioned on the batch (partition_dim 0) is held whole by
// every rank, each computing its own records; on the features (1) each rank
// holds a range of the layer's output units (a fully connected layer's
// columns, a convolution's filters) and computes them for all the group's
// records; an unpartitioned layer (-1) is held whole by the rank `location`.
// A parameter follows its layer: its first dimension is the output units.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace shoal {

struct Range {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
  bool empty() const { return end == begin; }
};

// The balanced split of `units` into `parts`: the `index`-th range.
Range SplitRange(size_t units, int parts, int index);

// M: the workers of a group (every group has the same size).
int GroupSize(const Plan& plan);

// The layer a parameter belongs to ("<layer>.<name>").
const LayerPlan& LayerOfParam(const Plan& plan, const ParamPlan& param);

// The rows (first-dimension indices) of `param` that rank `rank` holds; empty
// when it holds none. In floats: rows × the floats of one row.
Range HeldRows(const Plan& plan, const ParamPlan& param, int rank);
Range HeldFloats(const Plan& plan, const ParamPlan& param, int rank);

// Several server groups (distributed Hogwild): worker group g is served by
// server group g mod nserver_groups, each holding a whole copy of the table.
int ServerGroupOf(const Plan& plan, int worker);
int ServerGroupOfServer(const Plan& plan, int server);
// The servers a worker talks to: its server group's, in id order.
std::vector<int> ServersOf(const Plan& plan, int worker);

// Servers bound to their workers (cluster.server_worker_separate: false, the
// AllReduce placement) live in their workers' processes: server w in worker
// w's. The server worker `worker` hosts; -1 where servers run on their own.
int ServerInWorker(const Plan& plan, int worker);
// Where the process hosting `server` reaches it itself: NNG's inproc
// transport hands a message over without a socket or a copy.
std::string InProcessEndpoint(int server);

// The keys worker `worker` pushes and receives, in increasing order.
std::vector<uint32_t> KeysHeldBy(const Plan& plan, int worker);

// Per key: how many workers hold it (N for a data-parallel layer's, the
// number of groups for a partitioned or placed layer's).
std::vector<int> HoldersPerKey(const Plan& plan);

}  // namespace shoal

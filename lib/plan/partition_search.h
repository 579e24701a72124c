// The exact search: a pairwise cost model over a layer graph (a node's cost
// depends on its own choice, an edge's on the choices at both ends), minimised
// by dynamic programming in topological order over the frontier (the decided
// layers that still have undecided consumers). A chain keeps 3 states; a block
// of w parallel branches keeps 3^w. SINGA's Algorithm 2 enumerates 3^L (2^L).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace shoal {

// Per layer: partition the batch (data parallelism), the features (model
// parallelism), or nothing (the whole layer on one worker of the group).
enum class Choice : int { kData = 0, kModel = 1, kNone = 2 };
constexpr int kChoices = 3;
const char* ChoiceName(Choice c);
int PartitionDim(Choice c);  // 0, 1, -1 as in the job file

struct CostGraph {
  struct Edge {
    int src = 0, dst = 0;                                       // src < dst: nodes are in topological order
    std::array<std::array<double, kChoices>, kChoices> cost{};  // [src choice][dst choice]
  };
  std::vector<std::array<double, kChoices>> node_cost;  // [node][choice]
  std::vector<uint8_t> allowed;                         // [node]: bit c set if choice c may be taken
  std::vector<Edge> edges;

  int size() const { return static_cast<int>(node_cost.size()); }
  int AddNode(std::array<double, kChoices> cost, uint8_t allowed_mask = 0b111);
  double Evaluate(const std::vector<Choice>& choices) const;
};

struct SearchResult {
  std::vector<Choice> choices;
  double cost = 0.0;
  size_t max_states = 0;  // the widest frontier's state count (3^width)
};

// The widest frontier the search accepts: 3^10 = 59049 states per layer.
constexpr int kMaxFrontier = 10;

// The exact minimum over every allowed assignment. Refuses a graph whose
// frontier would exceed kMaxFrontier layers, and a graph with no allowed assignment.
// Each refusal, and an edge out of topological order, is InvalidArgument; *result is untouched then.
Status SearchPartition(const CostGraph& graph, SearchResult* result);

}  // namespace shoal

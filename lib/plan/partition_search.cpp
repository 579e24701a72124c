#include "plan/partition_search.h"

#include <algorithm>
#include <limits>
#include <string>

namespace shoal {

const char* ChoiceName(Choice c) {
  switch (c) {
    case Choice::kData:
      return "data";
    case Choice::kModel:
      return "model";
    case Choice::kNone:
      return "none";
  }
  return "?";
}

int PartitionDim(Choice c) { return c == Choice::kData ? 0 : c == Choice::kModel ? 1 : -1; }

int CostGraph::AddNode(std::array<double, kChoices> cost, uint8_t allowed_mask) {
  node_cost.push_back(cost);
  allowed.push_back(allowed_mask);
  return size() - 1;
}

double CostGraph::Evaluate(const std::vector<Choice>& choices) const {
  double total = 0.0;
  for (int i = 0; i < size(); ++i) total += node_cost[i][static_cast<int>(choices[i])];
  for (const auto& e : edges)
    total += e.cost[static_cast<int>(choices[e.src])][static_cast<int>(choices[e.dst])];
  return total;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One step of the table: for each state of the frontier after node i, the
// best state before it and node i's choice.
struct Step {
  std::vector<uint32_t> prev;
  std::vector<uint8_t> choice;
};

uint32_t Pow3(size_t n) {
  uint32_t p = 1;
  while (n--) p *= kChoices;
  return p;
}

}  // namespace

Status SearchPartition(const CostGraph& g, SearchResult* result) {
  const int n = g.size();
  std::vector<int> last_use(n, -1);  // the last consumer of each node
  std::vector<std::vector<const CostGraph::Edge*>> into(n);
  for (const auto& e : g.edges) {
    if (e.src < 0 || e.src >= e.dst || e.dst >= n)
      return Status::InvalidArgument("edge " + std::to_string(e.src) + " -> " + std::to_string(e.dst) +
                                     " is not in topological order");
    last_use[e.src] = std::max(last_use[e.src], e.dst);
    into[e.dst].push_back(&e);
  }
  std::vector<int> frontier;  // node ids; a state's digit k is frontier[k]'s choice
  std::vector<double> best{0.0};
  std::vector<Step> steps(n);
  size_t max_states = 1;
  for (int i = 0; i < n; ++i) {
    std::vector<int> next;
    for (int v : frontier)
      if (last_use[v] > i) next.push_back(v);
    if (last_use[i] > i) next.push_back(i);
    if (static_cast<int>(next.size()) > kMaxFrontier)
      return Status::InvalidArgument(
          "the layer graph is too wide to plan exactly: " + std::to_string(next.size()) +
          " layers would be open at once (at most " + std::to_string(kMaxFrontier) + ")");
    // Where each source of i, and each member of the next frontier, sits in the current one.
    auto position = [&](int v) {
      return static_cast<int>(std::find(frontier.begin(), frontier.end(), v) - frontier.begin());
    };
    std::vector<std::pair<const CostGraph::Edge*, uint32_t>> sources;  // edge, digit weight
    for (const auto* e : into[i]) sources.push_back({e, Pow3(position(e->src))});
    std::vector<uint32_t> keep_weight;  // digit weight in the current state of next[k] (0 for i)
    for (int v : next) keep_weight.push_back(v == i ? 0 : Pow3(position(v)));

    const uint32_t next_states = Pow3(next.size());
    std::vector<double> next_best(next_states, kInf);
    Step& step = steps[i];
    step.prev.assign(next_states, 0);
    step.choice.assign(next_states, 0);
    for (uint32_t state = 0; state < best.size(); ++state) {
      if (best[state] == kInf) continue;
      for (int c = 0; c < kChoices; ++c) {
        if (!(g.allowed[i] >> c & 1)) continue;
        double cost = best[state] + g.node_cost[i][c];
        for (const auto& [e, w] : sources) cost += e->cost[state / w % kChoices][c];
        uint32_t code = 0, weight = 1;
        for (size_t k = 0; k < next.size(); ++k, weight *= kChoices)
          code += weight * (next[k] == i ? c : state / keep_weight[k] % kChoices);
        if (cost < next_best[code]) {
          next_best[code] = cost;
          step.prev[code] = state;
          step.choice[code] = static_cast<uint8_t>(c);
        }
      }
    }
    frontier = std::move(next);
    best = std::move(next_best);
    max_states = std::max<size_t>(max_states, best.size());
  }
  // Every frontier closes at the sinks, so one state remains.
  if (best.size() != 1 || best[0] == kInf)
    return Status::InvalidArgument("no assignment of partitionings satisfies every constraint");
  result->cost = best[0];
  result->max_states = max_states;
  result->choices.assign(n, Choice::kData);
  uint32_t code = 0;
  for (int i = n; i-- > 0;) {
    result->choices[i] = static_cast<Choice>(steps[i].choice[code]);
    code = steps[i].prev[code];
  }
  return Status::Ok();
}

}  // namespace shoal

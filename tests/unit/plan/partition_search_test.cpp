// Tests for lib/plan/partition_search: the frontier dynamic programme equals
// brute-force enumeration (SINGA's Algorithm 2) on random chains and DAGs with
// branches, through the bare search and through the cost model.
#include "plan/partition_search.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "plan/cost_model.h"

namespace shoal {
namespace {

// Every allowed assignment, the slow way.
double BruteForce(const CostGraph& g, std::vector<Choice>* best_choices) {
  const int n = g.size();
  std::vector<Choice> c(n, Choice::kData);
  double best = INFINITY;
  long total = 1;
  for (int i = 0; i < n; ++i) total *= kChoices;
  for (long code = 0; code < total; ++code) {
    long rest = code;
    bool ok = true;
    for (int i = 0; i < n; ++i, rest /= kChoices) {
      c[i] = static_cast<Choice>(rest % kChoices);
      ok &= (g.allowed[i] >> (rest % kChoices) & 1) != 0;
    }
    if (!ok) continue;
    double cost = g.Evaluate(c);
    if (cost < best) {
      best = cost;
      *best_choices = c;
    }
  }
  return best;
}

// A random DAG in topological order: each node takes 1-3 sources among the
// earlier ones, so chains, forks, joins and inception-like blocks all occur.
std::vector<std::vector<int>> RandomSources(std::mt19937* rng, int n) {
  std::vector<std::vector<int>> srcs(n);
  for (int i = 1; i < n; ++i) {
    int k = std::uniform_int_distribution<int>(1, std::min(i, 3))(*rng);
    for (int j = 0; j < k; ++j) {
      // Mostly near neighbours (chains), sometimes far back (skips, branches).
      int back = std::uniform_int_distribution<int>(0, 9)(*rng) < 7
                     ? 1 + std::uniform_int_distribution<int>(0, std::min(i, 2) - 1)(*rng)
                     : std::uniform_int_distribution<int>(1, i)(*rng);
      srcs[i].push_back(i - back);
    }
  }
  return srcs;
}

TEST_CASE("the frontier search equals brute force on 400 random graphs") {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  int branched = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 9)(rng);
    CostGraph g;
    for (int i = 0; i < n; ++i) {
      uint8_t mask = static_cast<uint8_t>(std::uniform_int_distribution<int>(1, 7)(rng));
      if (trial % 3) mask = 7;
      g.AddNode({cost(rng), cost(rng), cost(rng)}, mask);
    }
    auto srcs = RandomSources(&rng, n);
    for (int i = 0; i < n; ++i) {
      branched += srcs[i].size() > 1;
      for (int s : srcs[i]) {
        CostGraph::Edge e;
        e.src = s;
        e.dst = i;
        for (auto& row : e.cost)
          for (auto& x : row) x = cost(rng);
        g.edges.push_back(e);
      }
    }
    std::vector<Choice> expected;
    const double brute = BruteForce(g, &expected);
    SearchResult result;
    Status s = SearchPartition(g, &result);
    INFO("trial " << trial << ", " << n << " nodes: " << s.ToString());
    REQUIRE(s.ok());
    CHECK(result.cost == doctest::Approx(brute).epsilon(1e-12));
    CHECK(g.Evaluate(result.choices) == doctest::Approx(brute).epsilon(1e-12));
    for (int i = 0; i < n; ++i) CHECK((g.allowed[i] >> static_cast<int>(result.choices[i]) & 1) == 1);
  }
  CHECK(branched > 100);  // the generator did make joins
}

TEST_CASE("through the cost model, the search equals brute force on 200 random nets") {
  std::mt19937 rng(7);
  const Dependency deps[] = {Dependency::kFull, Dependency::kElementwise, Dependency::kNone};
  ClusterProfile profile;
  profile.bandwidth_gbps = 1.0;
  profile.latency_us = 50.0;
  profile.gflops_per_worker = 5.0;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = std::uniform_int_distribution<int>(2, 8)(rng);
    auto srcs = RandomSources(&rng, n);
    std::vector<LayerFacts> layers(n);
    std::vector<uint8_t> allowed(n, 0b111);
    std::vector<int> ranks(n, 0);
    for (int i = 0; i < n; ++i) {
      LayerFacts& l = layers[i];
      l.name = "l" + std::to_string(i);
      l.params = i == 0 ? 0.0 : std::pow(10.0, std::uniform_real_distribution<double>(0, 7)(rng));
      l.feature = std::pow(10.0, std::uniform_real_distribution<double>(1, 5)(rng));
      l.flops = std::pow(10.0, std::uniform_real_distribution<double>(3, 9)(rng));
      l.is_input = i == 0;
      l.wants_grad = i != 0;
      l.srcs = srcs[i];
      for (size_t k = 0; k < srcs[i].size(); ++k)
        l.deps.push_back(deps[std::uniform_int_distribution<int>(0, 2)(rng)]);
      if (i == 0) allowed[i] = 0b001;
      if (i > 0 && trial % 4 == 0) ranks[i] = std::uniform_int_distribution<int>(0, 1)(rng);
    }
    Grouping g;
    g.workers = 8;
    g.group_size = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
    g.batch = 256;
    g.servers = std::uniform_int_distribution<int>(0, 3)(rng);
    CostGraph graph = BuildCostGraph(layers, allowed, ranks, g, profile);
    std::vector<Choice> expected;
    const double brute = BruteForce(graph, &expected);
    SearchResult result;
    REQUIRE(SearchPartition(graph, &result).ok());
    INFO("trial " << trial);
    CHECK(result.cost == doctest::Approx(brute).epsilon(1e-12));
    // The graph's costs are the breakdown's: the reported seconds are what was minimised.
    double seconds = 0.0;
    for (const auto& c : CostBreakdown(layers, result.choices, ranks, g, profile)) seconds += c.seconds();
    CHECK(seconds == doctest::Approx(brute).epsilon(1e-9));
  }
}

TEST_CASE("a chain keeps 3 states and a block of 4 branches 3^4") {
  CostGraph chain;
  for (int i = 0; i < 50; ++i) {
    chain.AddNode({1, 2, 3});
    if (i > 0) chain.edges.push_back({i - 1, i, {}});
  }
  SearchResult r;
  REQUIRE(SearchPartition(chain, &r).ok());
  CHECK(r.max_states == 3);
  CHECK(r.cost == 50.0);
  CostGraph block;  // a source, 4 branches, a join
  block.AddNode({0, 0, 0});
  for (int b = 1; b <= 4; ++b) {
    block.AddNode({0, 0, 0});
    block.edges.push_back({0, b, {}});
  }
  block.AddNode({0, 0, 0});
  for (int b = 1; b <= 4; ++b) block.edges.push_back({b, 5, {}});
  REQUIRE(SearchPartition(block, &r).ok());
  CHECK(r.max_states == 81);
}

TEST_CASE("a graph wider than the bound is refused, not searched for ever") {
  CostGraph wide;
  const int width = kMaxFrontier + 2;
  for (int i = 0; i <= width; ++i) wide.AddNode({1, 1, 1});
  for (int i = 0; i < width; ++i) wide.edges.push_back({i, width, {}});
  SearchResult r;
  Status s = SearchPartition(wide, &r);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message().find("too wide to plan exactly") != std::string::npos);
}

TEST_CASE("a graph whose constraints allow nothing is refused") {
  CostGraph g;
  g.AddNode({1, 1, 1}, 0);
  SearchResult r;
  CHECK(!SearchPartition(g, &r).ok());
}

}  // namespace
}  // namespace shoal

// Tests for lib/plan/planner, cost_model and cluster_profile: the shipped
// models plan as SINGA §5.4.1 and Krizhevsky's "one weird trick" say, the
// costs of a uniform net follow SINGA's closed forms, and bad input is refused.
#include "plan/planner.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "config/job.h"
#include "plan/cluster_profile.h"
#include "plan/partition.h"
#include "test_util.h"

namespace shoal {
namespace {

std::string Source(const std::string& path) { return std::string(SHOAL_SOURCE_DIR) + "/" + path; }

ClusterProfile LoadProfile(const std::string& path) {
  ClusterProfile p;
  Status s = LoadClusterProfile(Source(path), &p);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return p;
}

JobConfig LoadJob(const std::string& job_path, const std::vector<std::string>& sets = {}) {
  JobConfig job;
  Status s = LoadJobFile(Source(job_path), sets, &job);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return job;
}

// The Fashion-MNIST MLP on 8 workers of 8 records, one server.
JobConfig EightWorkerMlp() {
  return LoadJob("configs/fashion-mlp.yaml", {"cluster.nworkers_per_group=8", "train.batch_size=8"});
}

PartitionReport Plan(const std::string& job_path, const PlannerOptions& options,
                     const std::vector<std::string>& sets = {}) {
  const JobConfig job = LoadJob(job_path, sets);
  PartitionReport r;
  Status s = PlanJob(job, options, &r);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return r;
}

// A layer field as if the job file said it (--set cannot index the layer list).
struct LayerEdit {
  int layer;
  std::string key, value;
};

void Edit(JobConfig* job, const LayerEdit& e) {
  LayerConfig& l = job->layers[e.layer];
  l.fields[e.key] = e.value;
  if (e.key == "partition_dim") l.partition_dim = std::stoi(e.value);
  if (e.key == "location") l.location = e.value;
}

Status PlanError(const std::string& job_path, const PlannerOptions& options,
                 const std::vector<LayerEdit>& edits) {
  JobConfig job = LoadJob(job_path);
  for (const auto& e : edits) Edit(&job, e);
  PartitionReport r;
  return PlanJob(job, options, &r);
}

TEST_CASE(
    "AlexNet on 8 workers at 1 Gbit/s: convolutions data parallel, fully connected not (one weird trick)") {
  PlannerOptions o;
  o.profile = LoadProfile("configs/clusters/1gbe-8node.yaml");
  o.workers = 8;
  PartitionReport r = Plan("configs/models/alexnet.yaml", o);
  size_t params = 0;
  int convs = 0, fcs = 0;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerFacts& l = r.layers[i];
    params += static_cast<size_t>(l.params);
    INFO("layer '" << l.name << "' chose " << ChoiceName(r.choices[i]));
    if (l.type == "convolution" || l.type == "pooling") {
      CHECK(r.choices[i] == Choice::kData);
      ++convs;
    }
    if (l.type == "fully_connected") {
      CHECK(r.choices[i] != Choice::kData);
      ++fcs;
    }
  }
  CHECK(convs == 8);
  CHECK(fcs == 3);
  CHECK(params > 60000000);
  CHECK(params < 63000000);
  // The hybrid beats both pure strategies; the step as run lies between
  // everything hidden but features and compute, and nothing hidden.
  CHECK(r.chosen.seconds < r.all_data.seconds);
  CHECK(r.chosen.seconds < r.all_model.seconds);
  double hidden = 0.0, serial = 0.0;
  for (const auto& c : r.costs) {
    hidden += c.compute_s + c.feature_s;
    serial += c.compute_s + c.feature_s + c.param_s;
  }
  CHECK(r.chosen.seconds > hidden);
  CHECK(r.chosen.seconds < serial);
  CHECK(r.chosen.seconds == doctest::Approx(r.optimum.seconds));
  // The servers it chooses live inside the node budget.
  CHECK(r.grouping.servers >= 1);
  CHECK(r.grouping.servers <= o.profile.nodes);
}

TEST_CASE(
    "the Fashion-MNIST MLP on a fast link with a server per worker is all data parallel from 4 workers") {
  PlannerOptions o;
  o.profile = LoadProfile("configs/clusters/100gbe-64node.yaml");
  for (int workers : {4, 8}) {
    o.workers = workers;
    o.servers = workers;
    PartitionReport r = Plan("configs/fashion-mlp.yaml", o);
    INFO(workers << " workers");
    for (size_t i = 0; i < r.layers.size(); ++i) CHECK(r.choices[i] == Choice::kData);
    CHECK(r.chosen.seconds == doctest::Approx(r.all_data.seconds));
  }
}

TEST_CASE("the optimal plan is never slower, as priced, than a plan the report shows beside it") {
  const char* jobs[] = {"configs/fashion-mlp.yaml",    "configs/fashion-cnn.yaml",
                        "configs/models/alexnet.yaml", "configs/models/fc-heavy.yaml",
                        "configs/models/vgg16.yaml",   "configs/models/googlenet.yaml"};
  const char* profiles[] = {"configs/clusters/100gbe-64node.yaml", "configs/clusters/1gbe-8node.yaml"};
  for (const char* job : jobs)
    for (const char* profile : profiles)
      for (const char* overlap : {"train.overlap=true", "train.overlap=false"})
        for (int workers : {2, 4, 8}) {
          PlannerOptions o;
          o.profile = LoadProfile(profile);
          o.workers = workers;
          JobConfig j = LoadJob(job, {overlap});
          PartitionReport r;
          Status s = PlanJob(j, o, &r);
          if (!s.ok()) continue;  // a job these workers cannot split (a batch they do not divide)
          INFO(job << " on " << profile << ", " << overlap << ", " << workers << " workers");
          CHECK(r.chosen.seconds <= r.all_data.seconds * (1 + 1e-9));
          CHECK(r.chosen.seconds <= r.all_model.seconds * (1 + 1e-9));
          for (const PlanTotals& t : r.by_group_size) CHECK(r.chosen.seconds <= t.seconds * (1 + 1e-9));
          CHECK(r.optimum.seconds <= r.chosen.seconds * (1 + 1e-9));
        }
}

TEST_CASE(
    "the prediction is of the servers the plan runs; --servers and --exchange write theirs into the job") {
  const JobConfig job = EightWorkerMlp();
  PlannerOptions o;
  o.profile = LoadProfile("configs/clusters/1gbe-8node.yaml");
  o.strategy = Strategy::kData;
  PartitionReport one, eight, allreduce, chosen;
  shoal::Plan plan;
  REQUIRE(PlanJob(job, o, &one).ok());  // the job's one server takes every worker's gradients
  CHECK(one.grouping.servers == 1);
  CHECK(one.advised_servers > 1);
  o.servers = 8;
  REQUIRE(BuildPlan(job, o, PlanOptions(), &eight, &plan).ok());
  CHECK(plan.servers.size() == 8);
  CHECK(eight.chosen.seconds < one.chosen.seconds);
  o.servers = 0;
  o.exchange = Exchange::kAllReduce;
  REQUIRE(BuildPlan(job, o, PlanOptions(), &allreduce, &plan).ok());
  CHECK_FALSE(plan.job.cluster.server_worker_separate);
  CHECK(plan.servers.size() == 8);
  CHECK(allreduce.chosen.seconds < eight.chosen.seconds);  // 7/8 of each worker's traffic, not all of it
  // Auto: servers of their own, as many as keep up (advised), against AllReduce.
  o.exchange = Exchange::kAuto;
  REQUIRE(BuildPlan(job, o, PlanOptions(), &chosen, &plan).ok());
  REQUIRE(chosen.exchanges.size() == 2);
  CHECK(chosen.exchanges[0].first == "servers");
  CHECK(chosen.exchanges[0].second == doctest::Approx(eight.chosen.seconds));  // 8 advised
  CHECK(chosen.exchanges[1].second == doctest::Approx(allreduce.chosen.seconds));
  CHECK_FALSE(plan.job.cluster.server_worker_separate);
  // --workers on an AllReduce job keeps a server with every worker.
  JobConfig bound;
  REQUIRE(WithExchange(job, true, &bound).ok());
  o.exchange = Exchange::kJob;
  o.workers = 4;
  REQUIRE(BuildPlan(bound, o, PlanOptions(), &chosen, &plan).ok());
  CHECK(plan.servers.size() == 4);
  CHECK(plan.workers.size() == 4);
  o.workers = 0;
  o.servers = 4;
  o.exchange = Exchange::kAllReduce;
  CHECK(Contains(BuildPlan(job, o, PlanOptions(), &chosen, &plan).message(), "--servers 4 with AllReduce"));
}

TEST_CASE(
    "advised servers: the fewest whose step is within 1% of one a node's, the servers' own work counted") {
  const JobConfig job = EightWorkerMlp();
  PlannerOptions o;
  o.profile = LoadProfile("configs/clusters/1gbe-8node.yaml");
  o.profile.server_gbps = 10;  // servers on faster links than the workers': fewer keep up
  o.strategy = Strategy::kData;
  auto advice_and_steps = [&](const ClusterProfile& profile, int* advised, std::vector<double>* seconds) {
    PlannerOptions with = o;
    with.profile = profile;
    PartitionReport r;
    REQUIRE(PlanJob(job, with, &r).ok());
    *advised = r.advised_servers;
    seconds->clear();
    for (int servers = 1; servers <= 8; ++servers) {
      shoal::Plan plan;
      with.servers = servers;
      REQUIRE(BuildPlan(job, with, PlanOptions(), &r, &plan).ok());
      seconds->push_back(r.chosen.seconds);
    }
  };
  int advised = 0;
  std::vector<double> seconds;
  advice_and_steps(o.profile, &advised, &seconds);
  INFO("advised " << advised);
  REQUIRE(advised >= 1);
  REQUIRE(advised < 8);
  CHECK(seconds[advised - 1] <= seconds[7] * 1.01);
  if (advised > 1) CHECK(seconds[advised - 2] > seconds[7] * 1.01);
  // The servers' own work counted (memory at 10 GB/s, about what calibrate
  // measures here): their updates, not the links, ask for more of them.
  ClusterProfile slow = o.profile;
  slow.server_memory_gb_per_s = 10;
  int advised_slow = 0;
  advice_and_steps(slow, &advised_slow, &seconds);
  INFO("advised with slow servers " << advised_slow);
  REQUIRE(advised_slow > advised);
  CHECK(seconds[advised_slow - 1] <= seconds[7] * 1.01);
  CHECK(seconds[advised_slow - 2] > seconds[7] * 1.01);
}

TEST_CASE("cluster.wire: fp16 halves the predicted parameter bytes and leaves the feature bytes") {
  PlannerOptions o;
  o.profile = LoadProfile("configs/clusters/1gbe-8node.yaml");
  o.workers = 2;
  o.servers = 1;
  o.strategy = Strategy::kModel;  // some feature traffic to leave alone
  PartitionReport fp32 = Plan("configs/fashion-mlp.yaml", o);
  PartitionReport fp16 = Plan("configs/fashion-mlp.yaml", o, {"cluster.wire=fp16"});
  REQUIRE(fp32.costs.size() == fp16.costs.size());
  double params = 0.0, features = 0.0;
  for (size_t i = 0; i < fp32.costs.size(); ++i) {
    INFO("layer " << fp32.layers[i].name);
    CHECK(fp16.costs[i].param_bytes_out == doctest::Approx(fp32.costs[i].param_bytes_out / 2));
    CHECK(fp16.costs[i].param_bytes_in == doctest::Approx(fp32.costs[i].param_bytes_in / 2));
    CHECK(fp16.costs[i].feature_bytes_in == doctest::Approx(fp32.costs[i].feature_bytes_in));
    CHECK(fp16.costs[i].param_floats_total == doctest::Approx(fp32.costs[i].param_floats_total));
    params += fp32.costs[i].param_bytes_out;
    features += fp32.costs[i].feature_bytes_in;
  }
  CHECK(params > 0.0);
  CHECK(features > 0.0);
}

TEST_CASE("train.overlap and EASGD's period change the predicted step as the workers run it") {
  PlannerOptions o;
  o.profile = LoadProfile("configs/clusters/1gbe-8node.yaml");
  o.workers = 4;
  o.servers = 1;
  o.strategy = Strategy::kData;
  const PartitionReport on = Plan("configs/fashion-cnn.yaml", o);
  const PartitionReport off = Plan("configs/fashion-cnn.yaml", o, {"train.overlap=false"});
  // Off: every layer's compute, then the parameter traffic in one message a
  // direction (one latency each); on: lanes hide behind backprop
  // (StepSeconds), all but the bottom one's.
  double serial = 0.0, compute = 0.0, lowest = 0.0, latency = 0.0;
  for (const LayerCost& c : on.costs) {
    serial += c.compute_s + c.param_s - 2.0 * c.param_latency_s + c.feature_s;
    compute += c.compute_s + c.feature_s;
    latency = std::max(latency, c.param_latency_s);
    if (lowest == 0.0) lowest = c.param_s;  // the lowest layer with parameters: in the last lane
  }
  CHECK(latency > 0.0);
  serial += 2.0 * latency;
  CHECK(off.chosen.seconds == doctest::Approx(serial));
  CHECK(on.chosen.seconds < off.chosen.seconds);
  // One lane for the whole net leaves when backprop ends: nothing hides.
  const PartitionReport one_lane =
      Plan("configs/fashion-cnn.yaml", o, {"train.overlap_bucket_floats=1000000000"});
  CHECK(one_lane.chosen.seconds == doctest::Approx(serial));
  CHECK(on.chosen.seconds >= compute + lowest);
  // EASGD exchanges every easgd_tau steps and never overlaps (lib/train/param_table.cpp).
  const PartitionReport easgd = Plan("configs/fashion-cnn.yaml", o,
                                     {"cluster.consistency=easgd", "cluster.nworker_groups=2",
                                      "cluster.nworkers_per_group=1", "cluster.easgd_tau=4"});
  REQUIRE(easgd.costs.size() == on.costs.size());
  double easgd_serial = 2.0 * latency / 4;
  for (size_t i = 0; i < on.costs.size(); ++i) {
    INFO("layer " << on.layers[i].name);
    const LayerCost& c = easgd.costs[i];
    CHECK(c.param_bytes_out == doctest::Approx(on.costs[i].param_bytes_out / 4));
    CHECK(c.param_s == doctest::Approx(on.costs[i].param_s / 4));
    easgd_serial += c.compute_s + c.param_s - 2.0 * c.param_latency_s + c.feature_s;
  }
  CHECK(easgd.chosen.seconds == doctest::Approx(easgd_serial));
}

// A uniform chain: data [d] -> L fully connected layers of d outputs -> loss.
std::vector<LayerFacts> UniformChain(int layers, double d) {
  std::vector<LayerFacts> v;
  LayerFacts data;
  data.name = "data";
  data.feature = d;
  data.is_input = true;
  data.wants_grad = false;
  v.push_back(data);
  for (int i = 1; i <= layers + 1; ++i) {
    LayerFacts l;
    l.name = i <= layers ? "fc" + std::to_string(i) : "loss";
    l.params = i <= layers ? d * d : 0.0;
    l.feature = d;
    l.srcs = {i - 1};
    l.deps = {Dependency::kFull};
    v.push_back(l);
  }
  return v;
}

TEST_CASE("a uniform net's traffic follows SINGA's closed forms: C_d = 2PN, C_m = 2DNB, M* = sqrt(PN/DB)") {
  const int L = 4, N = 64, B = 128;
  const double d = 256;
  std::vector<LayerFacts> net = UniformChain(L, d);
  const double P = L * d * d;
  ClusterProfile p;
  p.latency_us = 0.0;
  p.gflops_per_worker = 1e12;  // compute ~0: only traffic counts
  std::vector<int> ranks(net.size(), 0);
  std::vector<Choice> data(net.size(), Choice::kData), model(net.size(), Choice::kModel);
  model[0] = Choice::kData;  // the input is read by records
  Grouping g;
  g.workers = N;
  g.batch = B;

  // Data parallelism: every worker fetches and pushes every parameter.
  g.group_size = 1;
  PlanTotals cd = EvaluateChoices(net, data, ranks, g, p);
  CHECK(cd.cost.param_floats_total == doctest::Approx(2 * P * N));
  CHECK(cd.cost.feature_floats_total == 0.0);

  // Model parallelism in one group: feature traffic, and each parameter once
  // to the servers and back (they hold every parameter, even a single replica's).
  // SINGA counts each worker fetching the whole source vector (2DNB); shoal
  // counts the (N-1)/N of it that lives elsewhere. D sums the sources' feature
  // sizes; the input's gradient is not sent (it wants none), so it counts once.
  const double D = L * d + d / 2;
  g.group_size = N;
  PlanTotals cm = EvaluateChoices(net, model, ranks, g, p);
  CHECK(cm.cost.param_floats_total == doctest::Approx(2 * P));
  CHECK(cm.cost.feature_floats_total == doctest::Approx(2 * D * N * B * (N - 1.0) / N));

  // Hybrid: groups of M, model parallel inside, data parallel across:
  // C_h = 2PN/M + 2DB(M-1), minimised near M* = sqrt(PN/(DB)).
  double best = INFINITY;
  int best_m = 0;
  for (int m = 1; m < N; m *= 2) {
    g.group_size = m;
    PlanTotals ch = EvaluateChoices(net, model, ranks, g, p);
    INFO("M = " << m);
    if (m > 1) CHECK(ch.cost.param_floats_total == doctest::Approx(2 * P * N / m));
    CHECK(ch.cost.feature_floats_total == doctest::Approx(2 * D * B * (m - 1.0)));
    if (ch.seconds < best) best = ch.seconds, best_m = m;
  }
  const double m_star = std::sqrt(P * N / (D * B));
  INFO("M* = " << m_star << ", chosen " << best_m);
  CHECK(best_m >= m_star / 2);
  CHECK(best_m <= m_star * 2);
  CHECK(best_m > 1);
}

TEST_CASE("user overrides are honoured and the free optimum is reported beside them") {
  PlannerOptions o;
  o.profile = LoadProfile("configs/clusters/1gbe-8node.yaml");
  PartitionReport r = Plan("configs/models/alexnet.yaml", o);
  JobConfig job = LoadJob("configs/models/alexnet.yaml");
  REQUIRE(job.layers[14].name == "fc6");
  Edit(&job, {14, "partition_dim", "0"});  // fc6 data parallel, against the optimum
  Edit(&job, {1, "location", "3"});        // conv1 on worker 3 alone
  PartitionReport forced;
  Status s = PlanJob(job, o, &forced);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(forced.has_overrides);
  CHECK(forced.choices[14] == Choice::kData);
  CHECK(forced.choices[1] == Choice::kNone);
  CHECK(forced.ranks[1] == 3);
  CHECK(forced.chosen.seconds > forced.optimum.seconds);
  CHECK(forced.optimum.seconds == doctest::Approx(r.chosen.seconds));
}

TEST_CASE("bad input is refused with a message naming what and where") {
  PlannerOptions o;
  SUBCASE("a profile with zero or negative bandwidth") {
    ClusterProfile p;
    Status s = ParseClusterProfile("name: x\nbandwidth_gbps: 0\nlatency_us: 1\ngflops_per_worker: 1\n",
                                   "c.yaml", &p);
    CHECK(s.IsInvalidArgument());
    CHECK(Contains(s.message(), "c.yaml:2:"));
    CHECK(Contains(s.message(), "'bandwidth_gbps'"));
    CHECK(Contains(s.message(), "must be positive (1e-6 to 1e9), got 0"));
    s = ParseClusterProfile("bandwidth_gbps: -1\nlatency_us: 1\ngflops_per_worker: 1\n", "c.yaml", &p);
    CHECK(Contains(s.message(), "must be positive (1e-6 to 1e9), got -1"));
    s = ParseClusterProfile("bandwidth_gbps: 1\nlatency_us: 1\n", "c.yaml", &p);
    CHECK(Contains(s.message(), "missing field 'gflops_per_worker'"));
    s = ParseClusterProfile("bandwidth_gbps: 1\nlatency_us: 1\ngflops_per_worker: 1\nbandwith: 3\n", "c.yaml",
                            &p);
    CHECK(Contains(s.message(), "bandwith"));
  }
  SUBCASE("more workers than records in a batch") {
    o.workers = 65;  // fashion-mlp: 2 workers x 32 records
    Status s = PlanError("configs/fashion-mlp.yaml", o, {});
    CHECK(s.IsInvalidArgument());
    CHECK(Contains(s.message(), "65 workers but a step's mini-batch has 64 records"));
  }
  SUBCASE("more workers than the profile has nodes") {
    o.profile.nodes = 4;
    o.workers = 16;
    o.profile.workers_per_node = 2;
    CHECK(Contains(PlanError("configs/fashion-mlp.yaml", o, {}).message(),
                   "16 workers need 8 nodes of 2, but the cluster profile 'loopback' has 4"));
    o.workers = 8;
    CHECK(PlanError("configs/fashion-mlp.yaml", o, {}).ok());
  }
  SUBCASE("overrides that cannot be honoured") {
    Status s = PlanError("configs/fashion-mlp.yaml", o, {{0, "partition_dim", "1"}});
    CHECK(Contains(s.message(), "layer 'data': partition_dim 1 cannot be honoured"));
    s = PlanError("configs/fashion-mlp.yaml", o, {{1, "location", "5"}});
    CHECK(Contains(s.message(), "layer 'fc1': location 5 cannot be honoured: a group of 2 workers"));
    s = PlanError("configs/fashion-mlp.yaml", o, {{1, "location", "w1"}});
    CHECK(Contains(s.message(), "field 'location'"));
    s = PlanError("configs/fashion-mlp.yaml", o, {{1, "location", "1"}, {1, "partition_dim", "1"}});
    CHECK(Contains(s.message(), "cannot be honoured with partition_dim 1"));
    o.strategy = Strategy::kData;
    s = PlanError("configs/fashion-mlp.yaml", o, {{3, "partition_dim", "1"}});
    CHECK(Contains(s.message(), "layer 'fc2': partition_dim 1 cannot be honoured with --strategy data"));
  }
}

TEST_CASE("--strategy data and model fix every layer; the shipped profiles and models load") {
  PlannerOptions o;
  o.profile = LoadProfile("configs/clusters/1gbe-8node.yaml");
  o.strategy = Strategy::kData;
  PartitionReport r = Plan("configs/models/alexnet.yaml", o);
  for (Choice c : r.choices) CHECK(c == Choice::kData);
  CHECK(r.grouping.group_size == 1);
  o.strategy = Strategy::kModel;
  r = Plan("configs/models/alexnet.yaml", o);
  // Every layer that can split its features does; the loss stays with its records.
  for (size_t i = 1; i + 1 < r.choices.size(); ++i) CHECK(r.choices[i] == Choice::kModel);
  CHECK(r.choices.back() == Choice::kData);
  CHECK(r.grouping.group_size == 8);
  o.strategy = Strategy::kOptimal;
  for (const char* model :
       {"configs/models/vgg16.yaml", "configs/models/googlenet-style.yaml", "configs/models/char-rnn.yaml"}) {
    INFO(model);
    r = Plan(model, o);
    CHECK(r.chosen.seconds <= r.all_data.seconds * (1 + 1e-9));
    CHECK(r.chosen.seconds <= r.all_model.seconds * (1 + 1e-9));
  }
  CHECK(r.max_states >= 3);
}

TEST_CASE("--workers N writes a plan of N workers sharing the job's step, in the job's worker groups") {
  JobConfig job = LoadJob("configs/models/alexnet.yaml");  // 8 workers x 32
  PlannerOptions o;
  o.workers = 16;
  for (Strategy strategy : {Strategy::kOptimal, Strategy::kData, Strategy::kModel}) {
    o.strategy = strategy;
    PartitionReport r;
    shoal::Plan plan;
    Status s = BuildPlan(job, o, PlanOptions(), &r, &plan);
    INFO(Name(strategy) << ": " << s.ToString());
    REQUIRE(s.ok());
    CHECK(plan.workers.size() == 16);
    CHECK(plan.job.train.batch_size == 16);
    CHECK(plan.job.resolved["train"]["batch_size"] == 16);
    CHECK(plan.job.cluster.workers() == 16);
    CHECK(r.grouping.workers == 16);
    CHECK(GroupSize(plan) == r.grouping.group_size);
    if (strategy == Strategy::kModel) CHECK(r.grouping.group_size == 16);
  }
  // Groups that run asynchronously bound the planned group: M divides each.
  job.cluster.consistency = ConsistencyModel::kAsync;
  job.cluster.nworker_groups = 4;
  job.cluster.nworkers_per_group = 2;
  o.workers = 0;
  o.strategy = Strategy::kModel;
  PartitionReport r;
  REQUIRE(PlanJob(job, o, &r).ok());
  CHECK(r.grouping.group_size == 2);
  CHECK(r.all_model.group_size == 2);
  o.strategy = Strategy::kOptimal;
  o.workers = 16;
  REQUIRE(PlanJob(job, o, &r).ok());
  for (const PlanTotals& t : r.by_group_size) CHECK(4 % t.group_size == 0);  // 16 workers in 4 groups of 4
  o.group_size = 8;
  Status s = PlanJob(job, o, &r);
  CHECK(Contains(s.message(),
                 "groups of 8 do not divide the job's groups of 4 workers (cluster.nworkers_per_group)"));
  o.group_size = 0;
  o.workers = 6;
  s = PlanJob(job, o, &r);
  CHECK(Contains(s.message(),
                 "a step's 256 records (train.batch_size x 8 workers) do not divide over 6 workers"));
  o.workers = 12;
  job.cluster.nworker_groups = 5;
  job.cluster.nworkers_per_group = 1;
  job.train.batch_size = 12;  // a step of 60 records
  s = PlanJob(job, o, &r);
  CHECK(Contains(s.message(),
                 "12 workers do not make the job's 5 worker groups (cluster.nworker_groups) of equal size"));
}

TEST_CASE("a synced batch norm keeps the search to groups of one, and all-model is shown as unable to run") {
  JobConfig job = LoadJob("configs/resnet20.yaml", {"cluster.nworkers_per_group=4"});
  REQUIRE(job.layers[2].name == "bn1");
  Edit(&job, {2, "sync", "true"});
  PlannerOptions o;
  PartitionReport r;
  REQUIRE(PlanJob(job, o, &r).ok());
  CHECK(r.syncing == "bn1");
  CHECK(r.grouping.group_size == 1);
  for (const PlanTotals& t : r.by_group_size) CHECK(t.group_size == 1);
  CHECK(r.all_model.group_size == 4);  // priced all the same
  CHECK(Contains(ExplainReport(r),
                 "all model parallel       cannot run: layer 'bn1' sums over every "
                 "worker's batch (sync: true), which needs groups of one"));
  CHECK(ReportToJson(r)["totals"]["all_model"]["runs"] == false);
  Edit(&job, {2, "sync", "false"});
  REQUIRE(PlanJob(job, o, &r).ok());
  CHECK(r.syncing.empty());
  CHECK_FALSE(ReportToJson(r)["totals"]["all_model"].contains("runs"));
}

}  // namespace
}  // namespace shoal

// Tests for lib/layers/batch_norm_layer.cpp (its values against PyTorch's are
// in torch_reference_test.cpp), and for its synchronised form over a group's
// channels (lib/comm/group_sum.h).
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "comm/group_sum.h"
#include "gradient_check.h"

namespace shoal {
namespace {

// Gradients of Σ r·y by the input, the scale and the shift; the running
// averages' "gradients" are their change, checked on their own below.
void CheckBatchNorm(const Shape& in_shape, int batch) {
  InputLayer input(in_shape);
  auto layer = SetUpLayer("batch_norm", "{}", {&input});
  REQUIRE(layer->params().size() == 4);
  input.Allocate(batch);
  layer->Allocate(batch);
  FillDistinct(&input.data(), 7);
  FillUniform(&layer->params()[0].value, 100, 1.5f);
  FillUniform(&layer->params()[1].value, 101, 0.5f);
  CheckSumObjective(layer.get(), {&input}, {&layer->params()[0], &layer->params()[1]});
}

TEST_CASE("batch norm gradients match central differences, per channel and per feature") {
  CheckBatchNorm({3, 2, 2}, 3);
  CheckBatchNorm({5}, 4);
}

TEST_CASE("batch norm's running averages move toward the batch's statistics; evaluation uses them") {
  InputLayer input({1, 1, 2});
  auto layer = SetUpLayer("batch_norm", "{momentum: 0.25, eps: 0.0001}", {&input});
  input.Allocate(2);
  layer->Allocate(2);
  const float x[] = {1.0f, 2.0f, 3.0f, 6.0f};  // mean 3, biased variance 3.5, unbiased 14/3
  std::copy(x, x + 4, input.data().data());
  auto& p = layer->params();
  CHECK(p[2].role == ParamRole::kRunningAverage);
  CHECK(p[3].role == ParamRole::kRunningAverage);
  CHECK(p[0].role == ParamRole::kTrained);
  p[0].value.Fill(1.0f), p[1].value.Fill(0.0f), p[2].value.Fill(1.0f), p[3].value.Fill(2.0f);
  std::vector<Layer*> srcs{&input};
  layer->Forward(Phase::kTrain, srcs);
  CHECK(layer->data()[0] == doctest::Approx(-2.0 / std::sqrt(3.5001)));
  layer->grad().Fill(0.0f);
  input.grad().Fill(0.0f);
  layer->Backward(srcs);
  // old − new = momentum · (old − batch)
  CHECK(p[2].grad[0] == doctest::Approx(0.25 * (1.0 - 3.0)));
  CHECK(p[3].grad[0] == doctest::Approx(0.25 * (2.0 - 14.0 / 3.0)));
  layer->Forward(Phase::kTest, srcs);
  CHECK(layer->data()[3] == doctest::Approx((6.0 - 1.0) / std::sqrt(2.0001)));
}

// Batch norm then ReLU, run apart or with the ReLU fused into the batch
// norm's passes (Layer::set_fused_relu); the ReLU's feature and the
// gradients it leads to.
struct BatchNormRelu {
  InputLayer input;
  std::unique_ptr<Layer> norm, relu;
  BatchNormRelu(const Shape& shape, int batch, bool fused) : input(shape) {
    norm = SetUpLayer("batch_norm", "{}", {&input});
    relu = SetUpLayer("relu", "{}", {norm.get()});
    input.Allocate(batch);
    norm->Allocate(batch);
    relu->Allocate(batch);
    FillDistinct(&input.data(), 5);
    FillUniform(&norm->params()[0].value, 102, 1.5f);
    FillUniform(&norm->params()[1].value, 103, 0.8f);  // shifts of both signs: part of each channel is cut
    if (fused) norm->set_fused_relu(relu.get());
    fused_ = fused;
  }
  void Forward(Phase phase) {
    norm->Forward(phase, {&input});
    if (!fused_) relu->Forward(phase, {norm.get()});
  }
  void Backward(uint32_t seed) {
    FillUniform(&relu->grad(), seed, 1.0f);
    input.grad().Fill(0.0f);
    norm->grad().Fill(0.0f);
    if (!fused_) relu->Backward({norm.get()});
    norm->Backward({&input});
  }
  bool fused_;
};

TEST_CASE("a ReLU fused into batch norm computes every value as the two layers do apart") {
  // A plane of 15 values: the kernels' vector loops and their tails.
  for (const Shape& shape : {Shape{4, 3, 5}, Shape{9}}) {
    BatchNormRelu apart(shape, 6, false), fused(shape, 6, true);
    apart.Forward(Phase::kTrain);
    fused.Forward(Phase::kTrain);
    CHECK(SameBits(apart.relu->data(), fused.relu->data()));
    int zeros = 0;
    for (size_t i = 0; i < fused.relu->data().size(); ++i) zeros += fused.relu->data()[i] == 0.0f;
    CHECK(zeros > 0);
    CHECK(zeros < static_cast<int>(fused.relu->data().size()));
    apart.Backward(7);
    fused.Backward(7);
    CHECK(SameBits(apart.input.grad(), fused.input.grad()));
    for (size_t k = 0; k < apart.norm->params().size(); ++k) {
      INFO("parameter " << apart.norm->params()[k].name);
      CHECK(SameBits(apart.norm->params()[k].grad, fused.norm->params()[k].grad));
    }
    apart.Forward(Phase::kTest);
    fused.Forward(Phase::kTest);
    CHECK(SameBits(apart.relu->data(), fused.relu->data()));
  }
}

// A group of `m` workers' channels over inproc://, each rank's sum over them.
struct SyncGroup {
  std::vector<std::unique_ptr<GroupChannel>> channels;
  std::vector<std::unique_ptr<GroupSum>> sums;
  SyncGroup(int m, int timeout_ms) {
    static std::atomic<int> next{0};
    GroupPeers peers;
    const std::string base = "inproc://sync-batch-norm-" + std::to_string(next++);
    for (int r = 0; r < m; ++r) peers.endpoints.push_back(base + "-" + std::to_string(r));
    peers.timeout_ms = timeout_ms;
    peers.max_block_floats = 1024;
    for (int r = 0; r < m; ++r) {
      peers.rank = r;
      channels.push_back(std::make_unique<GroupChannel>());
      const Status s = channels.back()->Open(peers);
      INFO(s.ToString());
      REQUIRE(s.ok());
      sums.push_back(std::make_unique<GroupSum>(channels.back().get()));
    }
  }
};

// Values of the layers' parameters (scale, shift, running averages) as the
// servers would give every worker.
void SetParams(Layer* layer) {
  auto& p = layer->params();
  FillUniform(&p[0].value, 100, 1.5f);
  FillUniform(&p[1].value, 101, 0.5f);
  FillUniform(&p[2].value, 102, 0.5f);
  p[3].value.Fill(2.0f);
}

TEST_CASE("synchronised batch norm over a group of 3 equals one layer over the group's batch") {
  const Shape shape{3, 2, 2};
  const int m = 3, batch = 2;
  const size_t record = NumElements(shape), rows = record * batch;
  // One layer over all m · batch records.
  InputLayer whole_input(shape);
  auto whole = SetUpLayer("batch_norm", "{sync: true}", {&whole_input});
  whole_input.Allocate(m * batch);
  whole->Allocate(m * batch);
  FillUniform(&whole_input.data(), 7, 2.0f);
  for (size_t i = 0; i < whole_input.data().size(); ++i) whole_input.data()[i] += 1.0f;  // a mean far from 0
  SetParams(whole.get());
  FillUniform(&whole->grad(), 8, 1.0f);
  std::vector<Layer*> whole_srcs{&whole_input};
  whole->Forward(Phase::kTrain, whole_srcs);
  whole_input.grad().Fill(0.0f);
  whole->Backward(whole_srcs);

  // The same records dealt to m workers, each its own batch, with and without the group.
  for (const bool synchronised : {true, false}) {
    CAPTURE(synchronised);
    SyncGroup group(m, 5000);
    std::vector<std::unique_ptr<InputLayer>> inputs;
    std::vector<std::unique_ptr<Layer>> layers;
    for (int r = 0; r < m; ++r) {
      inputs.push_back(std::make_unique<InputLayer>(shape));
      layers.push_back(SetUpLayer("batch_norm", "{sync: true}", {inputs.back().get()}));
      inputs[r]->Allocate(batch);
      layers[r]->Allocate(batch);
      std::copy_n(whole_input.data().data() + r * rows, rows, inputs[r]->data().data());
      std::copy_n(whole->grad().data() + r * rows, rows, layers[r]->grad().data());
      SetParams(layers[r].get());
      if (synchronised) layers[r]->set_group_sum(group.sums[r].get());
    }
    std::vector<std::thread> threads;
    for (int r = 0; r < m; ++r)
      threads.emplace_back([&, r] {
        group.sums[r]->BeginStep(4);
        std::vector<Layer*> srcs{inputs[r].get()};
        layers[r]->Forward(Phase::kTrain, srcs);
        inputs[r]->grad().Fill(0.0f);
        layers[r]->Backward(srcs);
      });
    for (auto& t : threads) t.join();
    double out_diff = 0.0, grad_diff = 0.0, stats_diff = 0.0, scale_grad_diff = 0.0;
    for (int r = 0; r < m; ++r) {
      INFO(group.sums[r]->status().ToString());
      REQUIRE(group.sums[r]->status().ok());
      for (size_t i = 0; i < rows; ++i) {
        out_diff = std::max<double>(out_diff, std::abs(layers[r]->data()[i] - whole->data()[r * rows + i]));
        grad_diff =
            std::max<double>(grad_diff, std::abs(inputs[r]->grad()[i] - whole_input.grad()[r * rows + i]));
      }
      // Every worker's running averages move as the one layer's do.
      for (int k : {2, 3})
        for (int c = 0; c < shape[0]; ++c)
          stats_diff = std::max<double>(
              stats_diff, std::abs(layers[r]->params()[k].grad[c] - whole->params()[k].grad[c]));
    }
    // Synchronised, the scale's and shift's gradients are each worker's
    // share: they add up to the one layer's.
    for (int k : {0, 1})
      for (int c = 0; c < shape[0]; ++c) {
        double sum = 0.0;
        for (int r = 0; r < m; ++r) sum += layers[r]->params()[k].grad[c];
        scale_grad_diff = std::max(scale_grad_diff, std::abs(sum - whole->params()[k].grad[c]));
      }
    if (synchronised) {
      CHECK(scale_grad_diff < 1e-5);
      CHECK(out_diff < 1e-5);
      CHECK(grad_diff < 1e-5);
      CHECK(stats_diff < 1e-6);
    } else {  // per-worker statistics: the same records normalise otherwise
      CHECK(out_diff > 1e-2);
      CHECK(grad_diff > 1e-3);
      CHECK(stats_diff > 1e-3);
      CHECK(scale_grad_diff > 1e-3);
    }
  }
}

TEST_CASE("synchronised batch norm gives up on a silent peer, naming the layer and the step") {
  SyncGroup group(2, 200);
  InputLayer input({2});
  auto layer = SetUpLayer("batch_norm", "{sync: true}", {&input});
  input.Allocate(3);
  layer->Allocate(3);
  FillUniform(&input.data(), 7, 1.0f);
  layer->set_group_sum(group.sums[0].get());
  group.sums[0]->BeginStep(9);
  std::vector<Layer*> srcs{&input};
  layer->Forward(Phase::kTrain, srcs);  // rank 1 never takes part
  const std::string error = group.sums[0]->status().ToString();
  CHECK(error.find("waited 200 ms for statistics of layer 'under_test' (step 9) from worker 1") !=
        std::string::npos);
  // The rest of the step does nothing more: its backward pass waits for nobody.
  layer->Backward(srcs);
  CHECK(group.sums[0]->status().ToString() == error);
}

TEST_CASE("batch norm refuses a sequence source") {
  InputLayer input({4, 3});
  auto layer = CreateLayer("batch_norm");
  layer->Init("bn", "batch_norm");
  YamlFields f("{}", "layer 'bn'");
  const Status s = layer->Setup(*f, {&input});
  CHECK(s.ToString().find("batch norm takes a vector or an image [C, H, W]") != std::string::npos);
}

}  // namespace
}  // namespace shoal

// Tests for lib/ps/updater: every rule against torch.optim, step by step, and
// the state each rule declares.
//
// The reference values were computed once with PyTorch (torch 1.13, float32)
// by tests/unit/ps/updater_reference.py under /usr/bin/python3 and pasted here:
// the same 4 values and 3 gradients, lr 0.1, weight_decay 0.01, PyTorch's
// default hyper-parameters unless a case says otherwise. Ours must agree to
// 1e-6 relative (an exact 0 stays exactly 0).
#include "ps/updater.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace shoal {
namespace {

constexpr size_t kN = 4;
const std::vector<float> kW0 = {0.5f, -1.5f, 2.0f, 0.0f};
// The last element's gradient is 0 for two steps, at value 0: 0 / (0 + eps).
const float kGrads[3][kN] = {
    {0.1f, -0.2f, 0.3f, 0.0f}, {-0.4f, 0.5f, 0.25f, 0.0f}, {0.2f, 0.2f, -0.6f, 0.05f}};

struct Reference {
  float values[3][kN];                              // after each step
  std::map<std::string, std::vector<float>> state;  // after the last, by our state name
};

TrainConfig Train(const std::string& updater) {
  TrainConfig t;
  REQUIRE(ParseName(updater, &t.updater));
  t.learning_rate = 0.1;
  t.weight_decay = 0.01;
  t.momentum = 0.9;
  t.epsilon = updater == "adagrad" ? 1e-10 : 1e-8;  // as ParseJob defaults it
  return t;
}

void CheckClose(const std::vector<float>& got, const float* want) {
  for (size_t i = 0; i < kN; ++i) {
    INFO("element " << i << ": got " << got[i] << ", PyTorch " << want[i]);
    CHECK(std::fabs(static_cast<double>(got[i]) - want[i]) <= 1e-6 * std::fabs(want[i]));
  }
}

// Three updates (versions 0 → 3) from fresh state, checked after each.
void CheckAgainstTorch(const TrainConfig& train, const Reference& ref) {
  const UpdaterConfig c = UpdaterFromTrain(train, 1);
  CHECK(c.rule == train.updater);
  std::vector<float> w = kW0;
  UpdaterState state = NewUpdaterState(c, kN);
  for (uint64_t step = 0; step < 3; ++step) {
    INFO("after update " << step << " (version " << step + 1 << ")");
    ApplyUpdate(c, step, kN, kGrads[step], w.data(), &state);
    CheckClose(w, ref.values[step]);
  }
  const std::vector<std::string>& names = UpdaterStateNames(c.rule);
  REQUIRE(names.size() == ref.state.size());
  REQUIRE(state.size() == names.size());
  for (size_t k = 0; k < names.size(); ++k) {
    INFO("state '" << names[k] << "'");
    REQUIRE(ref.state.count(names[k]) == 1);
    CheckClose(state[k], ref.state.at(names[k]).data());
  }
}

TEST_CASE("sgd matches torch.optim.SGD and keeps no state") {
  CheckAgainstTorch(Train("sgd"), {{{0.489499986f, -1.47850001f, 1.96800005f, 0.0f},
                                    {0.529010475f, -1.52702153f, 1.94103205f, 0.0f},
                                    {0.508481443f, -1.54549456f, 1.99909103f, -0.00500000035f}},
                                   {}});
}

TEST_CASE("momentum matches torch.optim.SGD(momentum=0.9); its state is 'velocity'") {
  CheckAgainstTorch(Train("momentum"),
                    {{{0.489499986f, -1.47850001f, 1.96800005f, 0.0f},
                      {0.519560516f, -1.50767148f, 1.91223204f, 0.0f},
                      {0.52609539f, -1.55241811f, 1.92012858f, -0.00500000035f}},
                     {{"velocity", {-0.0653488934f, 0.44746682f, -0.0789657235f, 0.0500000007f}}}});
}

TEST_CASE("nesterov matches torch.optim.SGD(momentum=0.9, nesterov=True); its state is 'velocity'") {
  CheckAgainstTorch(Train("nesterov"),
                    {{{0.480049998f, -1.45914996f, 1.93920004f, 0.0f},
                      {0.546632886f, -1.53396261f, 1.86209559f, 0.0f},
                      {0.531950951f, -1.59269261f, 1.92740881f, -0.00949999969f}},
                     {{"velocity", {-0.0651632249f, 0.44737801f, -0.0797262788f, 0.0500000007f}}}});
}

TEST_CASE("adagrad matches torch.optim.Adagrad(eps=1e-10); its state is 'sum_sq'") {
  CheckAgainstTorch(Train("adagrad"),
                    {{{0.400000006f, -1.39999998f, 1.89999998f, 0.0f},
                      {0.496659875f, -1.49145079f, 1.83565271f, 0.0f},
                      {0.451916754f, -1.52434075f, 1.9168551f, -0.100000009f}},
                     {{"sum_sq", {0.209852308f, 0.31667763f, 0.513070226f, 0.00250000018f}}}});
}

TEST_CASE("rmsprop matches torch.optim.RMSprop(alpha=0.99, eps=1e-8); its state is 'square_avg'") {
  CheckAgainstTorch(Train("rmsprop"),
                    {{{-0.499999106f, -0.500000417f, 1.00000036f, 0.0f},
                      {0.468302488f, -1.41794622f, 0.367500126f, 0.0f},
                      {0.0269595981f, -1.74520397f, 1.19216585f, -0.999998152f}},
                     {{"square_avg", {0.00215085503f, 0.0032240916f, 0.00522889756f, 2.50000012e-05f}}}});
}

TEST_CASE("rmsprop uses rmsprop_alpha and epsilon: torch.optim.RMSprop(alpha=0.9, eps=1e-3)") {
  TrainConfig t = Train("rmsprop");
  t.rmsprop_alpha = 0.9;
  t.epsilon = 1e-3;
  CheckAgainstTorch(t, {{{0.193017602f, -1.18835592f, 1.68686664f, 0.0f},
                         {0.497440487f, -1.47840035f, 1.47970223f, 0.0f},
                         {0.351161063f, -1.5872432f, 1.74301386f, -0.297417432f}},
                        {{"square_avg", {0.0193558391f, 0.028617911f, 0.0489503555f, 0.000250000012f}}}});
}

TEST_CASE(
    "adam matches torch.optim.Adam, bias-corrected by the version it makes; its state is 'exp_avg', "
    "'exp_avg_sq'") {
  CheckAgainstTorch(Train("adam"),
                    {{{0.400000006f, -1.39999998f, 1.89999998f, 0.0f},
                      {0.45476529f, -1.44096053f, 1.8008225f, 0.0f},
                      {0.464088649f, -1.49192345f, 1.80801797f, -0.0638813451f}},
                     {{"exp_avg", {-0.0066802334f, 0.044884041f, -0.00806918181f, 0.00500000035f}},
                      {"exp_avg_sq", {0.000209501915f, 0.000316536229f, 0.000513198436f, 2.50000016e-06f}}}});
}

TEST_CASE("adam uses beta1, beta2 and epsilon: torch.optim.Adam(betas=(0.8, 0.99), eps=1e-3)") {
  TrainConfig t = Train("adam");
  t.beta1 = 0.8;
  t.beta2 = 0.99;
  t.epsilon = 1e-3;
  CheckAgainstTorch(t, {{{0.400943398f, -1.40046299f, 1.90031147f, 0.0f},
                         {0.460441828f, -1.44668365f, 1.80193293f, 0.0f},
                         {0.467384368f, -1.5016017f, 1.81790352f, -0.0682776719f}},
                        {{"exp_avg", {-0.00899761077f, 0.0873458982f, -0.0323956385f, 0.0100000007f}},
                         {"exp_avg_sq", {0.00207909034f, 0.00313557265f, 0.00510702841f, 2.50000012e-05f}}}});
}

TEST_CASE("every name a job may give is a rule of that name, with fresh zero state of its own size") {
  for (const auto& named : kUpdateRules) {
    const UpdateRule rule = named.value;
    const char* name = named.name;
    INFO(name);
    TrainConfig t;
    t.updater = rule;
    UpdaterConfig c = UpdaterFromTrain(t, 1);
    CHECK(c.rule == rule);
    UpdaterState s = NewUpdaterState(c, 5);
    CHECK(s.size() == UpdaterStateNames(c.rule).size());
    for (const auto& buffer : s) CHECK(buffer == std::vector<float>(5, 0.0f));
  }
  CHECK(UpdaterStateNames(UpdateRule::kSgd).empty());
  CHECK(UpdaterStateNames(UpdateRule::kAdam) == std::vector<std::string>{"exp_avg", "exp_avg_sq"});
}

TEST_CASE("adam's bias correction counts the version an update makes, not the updates it has seen") {
  // Fresh state at version 0 (k = 1): m/(1 − 0.9) = g and √(u/(1 − 0.999)) = |g|,
  // so the value moves by lr exactly. The same first update at version 1000
  // (k = 1001, as for a server resumed without state) is corrected by
  // 1 − 0.9^1001 ≈ 1 and 1 − 0.999^1001 ≈ 0.6326 instead.
  TrainConfig t = Train("adam");
  t.weight_decay = 0.0;
  const UpdaterConfig c = UpdaterFromTrain(t, 1);
  const float g = 0.5f;
  float early = 1.0f, late = 1.0f;
  UpdaterState a = NewUpdaterState(c, 1), b = NewUpdaterState(c, 1);
  ApplyUpdate(c, 0, 1, &g, &early, &a);
  ApplyUpdate(c, 1000, 1, &g, &late, &b);
  CHECK(early == doctest::Approx(1.0f - 0.1f));
  const double m = 0.1 * 0.5, u = 0.001 * 0.25;
  const double moved = 0.1 / (1.0 - std::pow(0.9, 1001.0)) * m /
                       (std::sqrt(u) / std::sqrt(1.0 - std::pow(0.999, 1001.0)) + 1e-8);
  CHECK(late == doctest::Approx(1.0 - moved).epsilon(1e-6));
  CHECK(1.0 - late > 0.25);  // ≈ 0.2515: not the 0.1 of a first step
}

TEST_CASE("scale_lr_with_workers multiplies the learning rate by the workers one update averages") {
  TrainConfig t = Train("momentum");
  CHECK(UpdaterFromTrain(t, 8).learning_rate == doctest::Approx(0.1));
  t.scale_lr_with_workers = true;
  CHECK(UpdaterFromTrain(t, 8).learning_rate == doctest::Approx(0.8));
  CHECK(UpdaterFromTrain(t, 1).learning_rate == doctest::Approx(0.1));
  CHECK(LearningRateAt(UpdaterFromTrain(t, 8), 0) == doctest::Approx(0.8f));
}

TEST_CASE("momentum by hand: v = 0.9·v + g + wd·w; w −= lr·v (PyTorch's SGD rule)") {
  UpdaterConfig c;
  c.learning_rate = 0.1;
  c.momentum = 0.9;
  c.weight_decay = 0.01;
  float w = 1.0f;
  UpdaterState v = NewUpdaterState(c, 1);
  const float g = 0.5f;
  ApplyUpdate(c, 0, 1, &g, &w, &v);
  // v = 0.5 + 0.01·1 = 0.51; w = 1 − 0.1·0.51
  CHECK(v[0][0] == doctest::Approx(0.51f));
  CHECK(w == doctest::Approx(0.949f));
  ApplyUpdate(c, 1, 1, &g, &w, &v);
  const float v2 = 0.9f * 0.51f + 0.5f + 0.01f * 0.949f;
  CHECK(v[0][0] == doctest::Approx(v2));
  CHECK(w == doctest::Approx(0.949f - 0.1f * v2));
}

// The bits of a float vector, so that −0 and +0 differ.
std::vector<uint32_t> Bits(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), 4 * v.size());
  return bits;
}

TEST_CASE("a sum's last gradient read from its message updates exactly as one added to the sum first") {
  // Zeros of both signs where the sum's rounding could show (0 + −0 is +0),
  // with and without weight decay (0 · −w is −0).
  const std::vector<float> w0 = {0.5f, -0.0f, 0.0f, -1.5f, 2.0f, -0.0f, 3e-8f, -7.0f, 1.0f};
  const std::vector<float> first = {0.1f, 0.0f, -0.0f, 0.3f, -0.0f, 0.25f, 1e-3f, -2.0f, 0.0f};
  const std::vector<float> last = {-0.0f, -0.0f, -0.0f, 0.5f, -0.25f, 0.0f, -1e-3f, 1.0f, -0.0f};
  std::vector<unsigned char> message(1 + 4 * last.size());  // one byte in: the values unaligned
  std::memcpy(message.data() + 1, last.data(), 4 * last.size());
  const size_t n = w0.size();
  for (const auto& named : kUpdateRules)
    for (double decay : {0.0, 0.01})
      for (bool alone : {true, false}) {  // the last gradient the only one, or after another
        const char* name = named.name;
        INFO(name << " weight_decay " << decay << (alone ? " alone" : " after another"));
        TrainConfig t = Train(name);
        t.weight_decay = decay;
        const UpdaterConfig c = UpdaterFromTrain(t, 2);
        std::vector<float> w_added = w0, w_read = w0, sum_added(n, 0.0f), sum_read(n, 0.0f);
        UpdaterState s_added = NewUpdaterState(c, n), s_read = NewUpdaterState(c, n);
        for (uint64_t step = 0; step < 3; ++step) {
          if (!alone)
            for (size_t i = 0; i < n; ++i) sum_added[i] += first[i], sum_read[i] += first[i];
          for (size_t i = 0; i < n; ++i) sum_added[i] += last[i];
          ApplySumUpdate(c, step, n, GradientSum{sum_added.data(), false, nullptr, 0.5f}, w_added.data(),
                         w_added.data(), &s_added);
          ApplySumUpdate(c, step, n, GradientSum{sum_read.data(), alone, message.data() + 1, 0.5f},
                         w_read.data(), w_read.data(), &s_read);
          CHECK(Bits(w_read) == Bits(w_added));
          for (size_t k = 0; k < s_added.size(); ++k) CHECK(Bits(s_read[k]) == Bits(s_added[k]));
          CHECK(Bits(sum_read) == Bits(std::vector<float>(n, 0.0f)));
          CHECK(Bits(sum_added) == Bits(std::vector<float>(n, 0.0f)));
        }
      }
}

TEST_CASE(
    "an update that also writes its values over the gradient it reads leaves the same bits in both places") {
  const std::vector<float> w0 = {0.5f, -0.0f, 0.0f, -1.5f, 2.0f, -0.0f, 3e-8f, -7.0f, 1.0f};
  const std::vector<float> last = {-0.0f, -0.0f, -0.0f, 0.5f, -0.25f, 0.0f, -1e-3f, 1.0f, -0.0f};
  const size_t n = w0.size();
  for (const auto& named : kUpdateRules)
    for (bool alone : {true, false}) {
      const char* name = named.name;
      INFO(name << (alone ? " alone" : " after another"));
      TrainConfig t = Train(name);
      t.weight_decay = 0.01;
      const UpdaterConfig c = UpdaterFromTrain(t, 2);
      std::vector<float> w_plain = w0, w_into = w0, sum_plain(n, 0.0f), sum_into(n, 0.0f);
      UpdaterState s_plain = NewUpdaterState(c, n), s_into = NewUpdaterState(c, n);
      for (uint64_t step = 0; step < 3; ++step) {
        if (!alone)
          for (size_t i = 0; i < n; ++i) sum_plain[i] = sum_into[i] = 0.125f * static_cast<float>(i);
        // A request's gradient, one byte in (unaligned), written over by the update.
        std::vector<unsigned char> plain(1 + 4 * n), into(1 + 4 * n);
        std::memcpy(plain.data() + 1, last.data(), 4 * n);
        std::memcpy(into.data() + 1, last.data(), 4 * n);
        ApplySumUpdate(c, step, n, GradientSum{sum_plain.data(), alone, plain.data() + 1, 0.5f},
                       w_plain.data(), w_plain.data(), &s_plain);
        ApplySumUpdate(c, step, n, GradientSum{sum_into.data(), alone, into.data() + 1, 0.5f}, w_into.data(),
                       w_into.data(), &s_into, into.data() + 1);
        CHECK(Bits(w_into) == Bits(w_plain));
        std::vector<float> written(n);
        std::memcpy(written.data(), into.data() + 1, 4 * n);
        CHECK(Bits(written) == Bits(w_plain));
        for (size_t k = 0; k < s_plain.size(); ++k) CHECK(Bits(s_into[k]) == Bits(s_plain[k]));
      }
    }
}

}  // namespace
}  // namespace shoal

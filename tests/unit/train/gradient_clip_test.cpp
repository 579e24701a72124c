// Tests for lib/train/gradient_clip.cpp, and train.clip_norm's parsing.
#include "train/gradient_clip.h"

#include <doctest/doctest.h>

#include <cmath>

#include "config/job.h"
#include "test_util.h"

namespace shoal {
namespace {

TEST_CASE("ClipGradientNorm scales the joint gradient to the bound only when it is longer") {
  Param a, b;
  a.grad = Tensor({2});
  b.grad = Tensor({1});
  a.grad[0] = 3.0f, a.grad[1] = 0.0f, b.grad[0] = 4.0f;  // norm 5
  std::vector<Param*> params{&a, &b};
  CHECK(ClipGradientNorm(params, 10.0) == doctest::Approx(5.0));
  CHECK(a.grad[0] == 3.0f);  // shorter than the bound: untouched
  CHECK(ClipGradientNorm(params, 1.0) == doctest::Approx(5.0));
  CHECK(a.grad[0] == doctest::Approx(0.6));
  CHECK(b.grad[0] == doctest::Approx(0.8));
  CHECK(ClipGradientNorm(params, 1.0) == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("train.clip_norm turns overlap off, and refuses overlap written true beside it") {
  const std::string model =
      "model:\n  layers:\n    - {name: data, type: data, shape: [2]}\n"
      "    - {name: fc, type: fully_connected, srclayers: data, num_output: 2}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n";
  JobConfig job;
  REQUIRE(ParseJob(model + "train: {clip_norm: 5}\n", "job.yaml", &job).ok());
  CHECK(job.train.clip_norm == 5.0);
  CHECK(!job.train.overlap);
  CHECK(job.resolved["train"]["overlap"] == false);
  Status s = ParseJob(model + "train: {clip_norm: 5, overlap: true}\n", "job.yaml", &job);
  CHECK(Contains(s.message(), "overlap"));
  CHECK(Contains(s.message(), "must be false with clip_norm"));
  REQUIRE(ParseJob(model, "job.yaml", &job).ok());
  CHECK(job.train.overlap);
}

}  // namespace
}  // namespace shoal

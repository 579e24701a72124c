// Tests for lib/graph/param_fields.cpp: init_from in its three forms, its
// errors, the values it loads (transposed where asked), and lr_mult.
#include "graph/param_fields.h"

#include <doctest/doctest.h>

#include "ckpt/checkpoint.h"
#include "config/job.h"
#include "graph/net.h"
#include "test_util.h"

namespace shoal {
namespace {

// A merged checkpoint of one 2×3 weight and a 2-float bias of layer "enc",
// and a 3-float "enc.visible_bias".
std::string WriteSource(const TempDir& dir) {
  Checkpoint c;
  c.plan_hash = "0123456789abcdef";
  c.server = -1;
  c.servers = 1;
  c.tensors.push_back({"enc.weight", "enc.weight", "value", 0, 0, {2, 3}, {1, 2, 3, 4, 5, 6}});
  c.tensors.push_back({"enc.bias", "enc.bias", "value", 1, 0, {2}, {7, 8}});
  c.tensors.push_back({"enc.visible_bias", "enc.visible_bias", "value", 2, 0, {3}, {9, 10, 11}});
  const std::string path = dir.path + "/source.ckpt";
  REQUIRE(WriteCheckpoint(path, c).ok());
  return path;
}

Status Build(const std::string& layer, std::unique_ptr<Net>* net) {
  const std::string text = "model:\n  layers:\n    - {name: data, type: data, shape: [3]}\n    - " + layer +
                           "\n    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n";
  JobConfig job;
  Status s = ParseJob(text, "job.yaml", &job);
  if (!s.ok()) return s;
  return Net::Build(job, net);
}

std::vector<float> Load(const Param& p) {
  std::vector<float> values;
  Status s = LoadInitFrom(p.name, p.shape, p.init, &values);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return values;
}

TEST_CASE("init_from PATH:LAYER takes each parameter of the same suffix; lr_mult applies to them all") {
  TempDir dir;
  const std::string path = WriteSource(dir);
  std::unique_ptr<Net> net;
  REQUIRE(Build("{name: fc, type: fully_connected, srclayers: data, num_output: 2, init_from: '" + path +
                    ":enc', lr_mult: 0}",
                &net)
              .ok());
  const auto params = net->params();
  REQUIRE(params.size() == 2);
  CHECK(params[0]->init.kind == ParamInit::Kind::kCheckpoint);
  CHECK(params[0]->init.param == "enc.weight");
  CHECK(params[1]->init.param == "enc.bias");
  CHECK(params[0]->lr_mult == 0.0f);
  CHECK(Load(*params[0]) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(Load(*params[1]) == std::vector<float>{7, 8});
  CHECK(CheckInitFrom(*params[0]).ok());
}

TEST_CASE("init_from per parameter: ^T transposes a 2-D one (a decoder from an encoder)") {
  TempDir dir;
  const std::string path = WriteSource(dir);
  std::unique_ptr<Net> net;
  // A layer of 3 outputs over a 2-vector: weight [3, 2], the encoder's transposed.
  const std::string text =
      "model:\n  layers:\n    - {name: data, type: data, shape: [2]}\n"
      "    - {name: fc, type: fully_connected, srclayers: data, num_output: 3, init_from: {weight: '" +
      path + ":enc.weight^T', bias: '" + path +
      ":enc.visible_bias'}}\n"
      "    - {name: loss, type: softmax_loss, srclayers: [fc, data]}\n";
  JobConfig job;
  REQUIRE(ParseJob(text, "job.yaml", &job).ok());
  REQUIRE(Net::Build(job, &net).ok());
  const auto params = net->params();
  CHECK(params[0]->init.transpose);
  CHECK(Load(*params[0]) == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(Load(*params[1]) == std::vector<float>{9, 10, 11});
  CHECK(params[0]->lr_mult == 1.0f);
}

TEST_CASE("init_from's errors name the layer, the field and what is wrong") {
  TempDir dir;
  const std::string path = WriteSource(dir);
  std::unique_ptr<Net> net;
  Status s = Build("{name: fc, type: fully_connected, srclayers: data, num_output: 2, init_from: {kernel: '" +
                       path + ":enc.weight'}}",
                   &net);
  CHECK(s.message().find("init_from") != std::string::npos);
  CHECK(s.message().find("names parameter 'kernel'; the layer has weight, bias") != std::string::npos);
  s = Build("{name: fc, type: fully_connected, srclayers: data, num_output: 2, init_from: {weight: '" + path +
                "'}}",
            &net);
  CHECK(s.message().find("'weight' must be PATH:PARAM") != std::string::npos);
  s = Build("{name: fc, type: fully_connected, srclayers: data, num_output: 2, init_from: [1]}", &net);
  CHECK(s.message().find("must be a checkpoint (PATH or PATH:LAYER)") != std::string::npos);
  s = Build("{name: fc, type: fully_connected, srclayers: data, num_output: 2, lr_mult: -1}", &net);
  CHECK(s.message().find("lr_mult") != std::string::npos);
  s = Build("{name: fc, type: relu, srclayers: data, lr_mult: 0}", &net);
  CHECK(s.message().find("lr_mult") != std::string::npos);
  CHECK(s.message().find("is set but the layer has no parameters") != std::string::npos);

  // Built, but its checkpoint does not fit: dl-plan's check says why.
  REQUIRE(Build("{name: fc, type: fully_connected, srclayers: data, num_output: 3, init_from: '" + path +
                    ":enc'}",
                &net)
              .ok());
  s = CheckInitFrom(*net->params()[0]);
  CHECK(s.message().find("parameter 'fc.weight' (init_from '" + path +
                         "'): 'enc.weight' is [2,3], the layer's is [3,3]") != std::string::npos);
  REQUIRE(Build("{name: fc, type: fully_connected, srclayers: data, num_output: 2, init_from: '" + path +
                    ":dec'}",
                &net)
              .ok());
  s = CheckInitFrom(*net->params()[0]);
  CHECK(s.message().find("the checkpoint has no parameter 'dec.weight' (it has 'enc.weight', 'enc.bias', "
                         "'enc.visible_bias')") != std::string::npos);
  REQUIRE(Build("{name: fc, type: fully_connected, srclayers: data, num_output: 2, init_from: '" + dir.path +
                    "/none.ckpt:enc'}",
                &net)
              .ok());
  CHECK(!CheckInitFrom(*net->params()[0]).ok());
}

}  // namespace
}  // namespace shoal

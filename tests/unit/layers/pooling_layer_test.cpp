// Tests for lib/layers/pooling_layer.cpp.
#include <doctest/doctest.h>

#include "gradient_check.h"

namespace shoal {
namespace {

TEST_CASE("max pooling gradients go to each window's winner (non-overlapping windows)") {
  CheckOneInputLayer("pooling", "{kernel: 2}", {2, 4, 4}, 2);
}

TEST_CASE("max pooling gradients accumulate where overlapping windows share a winner") {
  CheckOneInputLayer("pooling", "{kernel: 3, stride: 1}", {1, 5, 5}, 2);
}

TEST_CASE("max pooling with padding and ceil_mode: a window that runs past the input keeps what it covers") {
  CheckOneInputLayer("pooling", "{kernel: 3, stride: 2, pad: 1, ceil_mode: true}", {2, 6, 6}, 2);
}

TEST_CASE("average pooling spreads each window's gradient over it, padded and past the input") {
  CheckOneInputLayer("pooling", "{pool: avg, kernel: 2}", {2, 4, 4}, 2);
  CheckOneInputLayer("pooling", "{pool: avg, kernel: 3, stride: 2, pad: 1, ceil_mode: true}", {2, 6, 7}, 2);
  CheckOneInputLayer("pooling", "{pool: avg, global: true}", {3, 4, 5}, 2);
}

TEST_CASE("pooling shapes: ceil_mode rounds up unless the last window would start in the padding") {
  struct Case {
    const char* fields;
    Shape in, out;
  } cases[] = {
      {"{kernel: 3, stride: 2}", {1, 8, 8}, {1, 3, 3}},
      {"{kernel: 3, stride: 2, ceil_mode: true}", {1, 8, 8}, {1, 4, 4}},
      {"{kernel: 3, stride: 2, pad: 1, ceil_mode: true}", {1, 7, 7}, {1, 4, 4}},
      // GoogLeNet's pool1: 112 → 56 with Caffe's rounding.
      {"{kernel: 3, stride: 2, ceil_mode: true}", {64, 112, 112}, {64, 56, 56}},
      // (6 + 2 − 2) / 2 + 1 = 4 rounded up, less the window starting at 6 = 6 + pad.
      {"{kernel: 2, stride: 2, pad: 1, ceil_mode: true}", {1, 6, 6}, {1, 4, 4}},
      {"{pool: avg, global: true}", {5, 7, 3}, {5, 1, 1}},
  };
  for (const Case& c : cases) {
    INFO(c.fields << " over " << ShapeToString(c.in));
    InputLayer input(c.in);
    auto layer = SetUpLayer("pooling", c.fields, {&input});
    CHECK(layer->out_shape() == c.out);
  }
}

TEST_CASE("pooling refuses a pad over half the window and fields beside global") {
  InputLayer input({1, 8, 8});
  for (const auto& [written, error] :
       {std::pair<const char*, const char*>{"{kernel: 3, pad: 2}", "'pad'"},
        {"{pool: avg, global: true, kernel: 2}", "'kernel' does not go with global: true"},
        {"{pool: mean, kernel: 2}", "'pool'"}}) {
    const char* fields = written;  // INFO's lambda captures variables, not bindings (clang 14)
    auto layer = CreateLayer("pooling");
    layer->Init("p", "pooling");
    YamlFields f(fields, "layer 'p'");
    const Status s = layer->Setup(*f, {&input});
    INFO(fields << ": " << s.ToString());
    CHECK(s.ToString().find(error) != std::string::npos);
  }
}

}  // namespace
}  // namespace shoal

// Tests for lib/config/fields: typed, located reads of one mapping, and the
// resolved mapping they leave behind.
#include "config/fields.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace shoal {
namespace {

TEST_CASE("integers: whole numbers in range, 1e3 included; others refused naming the field and the value") {
  YamlFields y("{a: 5, b: 1e3, c: 2.5, d: many, e: 1e12, f: -1}", "section 'x'");
  int v = 0;
  CHECK(y->Int("a", 0, &v).ok());
  CHECK(v == 5);
  CHECK(y->Int("b", 0, &v).ok());
  CHECK(v == 1000);
  CHECK(y->Int("missing", 7, &v).ok());
  CHECK(v == 7);
  CHECK(y->Int("c", 0, &v).message() ==
        "test.yaml:1:19: section 'x': field 'c' must be an integer, got '2.5'");
  CHECK(Contains(y->Int("d", 0, &v).message(), "field 'd' must be an integer, got 'many'"));
  CHECK(Contains(y->Int("e", 0, &v).message(), "field 'e' must be at most 2147483647, got 1e12"));
  CHECK(Contains(y->Int("f", 0, &v).message(), "field 'f' must be at least 0, got -1"));
  CHECK(Contains(y->Int("a", 0, &v, 0, 4).message(), "field 'a' must be at most 4, got 5"));
  CHECK(Contains(y->RequiredInt("gone", &v).message(), "section 'x': missing field 'gone'"));
}

TEST_CASE("numbers, strings, booleans and lists are read as YAML writes them") {
  YamlFields y(
      "{f: 0.25, s: hello, n: 12, t: yes, u: false, l: [1, 2], r: [0.3, 1.0], names: [a, b], one: x, w: [1, "
      "x]}",
      "m");
  double f = 0;
  CHECK(y->Float("f", 0, &f, 0, 1).ok());
  CHECK(f == 0.25);
  CHECK(Contains(y->Float("f", 0, &f, 0.5, 1).message(), "must be in [0.500000, 1.000000], got 0.250000"));
  CHECK(Contains(y->Float("s", 0, &f, 0, 1).message(), "field 's' must be a number"));
  std::string s;
  CHECK(y->String("n", "", &s).ok());
  CHECK(s == "12");  // a name may look like a number
  bool b = false;
  CHECK(y->Bool("t", false, &b).ok());
  CHECK(b);
  CHECK(y->Bool("u", true, &b).ok());
  CHECK(!b);
  CHECK(Contains(y->Bool("s", false, &b).message(), "field 's' must be true or false"));
  std::vector<int> ints;
  CHECK(y->IntList("l", &ints).ok());
  CHECK(ints == std::vector<int>{1, 2});
  CHECK(Contains(y->IntList("w", &ints).message(), "field 'w' must be a list of integers"));
  CHECK(Contains(y->IntList("l", &ints, 0, 10, 1).message(), "field 'l' has 2 items, at most 1"));
  std::vector<double> floats;
  CHECK(y->FloatList("r", &floats, 0, 1, 2, 2).ok());
  CHECK(floats == std::vector<double>{0.3, 1.0});
  CHECK(Contains(y->IntList("r", &ints).message(), "field 'r' must be a list of integers"));
  CHECK(
      Contains(y->FloatList("r", &floats, 0, 0.5, 2, 2).message(), "field 'r' holds 1.0, outside [0, 0.5]"));
  CHECK(Contains(y->FloatList("r", &floats, 0, 1, 3, 3).message(), "field 'r' has 2 items, it takes 3"));
  CHECK(Contains(y->FloatList("w", &floats, 0, 1, 1, 3).message(), "field 'w' must be a list of numbers"));
  std::vector<std::string> names;
  CHECK(y->StringList("names", &names).ok());
  CHECK(names == std::vector<std::string>{"a", "b"});
  CHECK(y->StringList("one", &names).ok());
  CHECK(names == std::vector<std::string>{"x"});
  CHECK(Contains(y->Choice("s", "", {"hi", "ho"}, &s).message(),
                 "field 's' is 'hello', expected one of: hi, ho"));
}

TEST_CASE("a field nobody asked for is unknown; the resolved mapping holds what was read, defaults too") {
  YamlFields y("{a: 3, typo: 1}", "section 'train'");
  int v = 0;
  REQUIRE(y->Int("a", 0, &v).ok());
  REQUIRE(y->Int("b", 9, &v).ok());
  CHECK(y->CheckNoUnknown().message() == "test.yaml:1:8: section 'train': unknown field 'typo'");
  CHECK(y->resolved() == nlohmann::json{{"a", 3}, {"b", 9}});
}

TEST_CASE("a section must be a mapping; its fields are placed under it") {
  YamlFields y("{train: {steps: x}, cluster: 5}", "job");
  std::unique_ptr<Fields> train, cluster;
  REQUIRE(y->Section("train", "section 'train'", &train).ok());
  int steps = 0;
  CHECK(train->Int("steps", 0, &steps).message() ==
        "test.yaml:1:17: section 'train': field 'steps' must be an integer, got 'x'");
  CHECK(y->Section("cluster", "section 'cluster'", &cluster).message() ==
        "test.yaml:1:30: section 'cluster' must be a mapping");
}

TEST_CASE("typed JSON reads the same (a plan's job)") {
  const nlohmann::json node = {{"a", 4}, {"f", 0.5}, {"t", true}, {"s", "x"}};
  Fields f(node, std::make_shared<Origin>("plan.json (job)"), "/train", "section 'train'");
  int a = 0;
  double x = 0;
  bool t = false;
  CHECK(f.Int("a", 0, &a).ok());
  CHECK(a == 4);
  CHECK(f.Float("f", 0, &x, 0, 1).ok());
  CHECK(f.Bool("t", false, &t).ok());
  CHECK(t);
  CHECK(f.Int("s", 0, &a).message() ==
        "plan.json (job) at /train/s: section 'train': field 's' must be an integer, got 'x'");
}

}  // namespace
}  // namespace shoal

// Tests for lib/config/document: the one reader of YAML, a boundary for
// untrusted bytes — every fault is a Status naming file:line:column, never a
// throw, a crash or an allocation the input did not pay for.
#include "config/document.h"

#include <doctest/doctest.h>

#include <string>

#include "test_util.h"

namespace shoal {
namespace {

Status Parse(const std::string& text, Document* doc) { return ParseYaml(text, "t.yaml", doc); }

TEST_CASE("YAML becomes a JSON tree of text, lists and mappings, each value placed at file:line:column") {
  Document doc;
  REQUIRE(Parse("a: 1\nb:\n  - x\n  - {c: 2.5, d: ~}\ne: 'quoted: yes'\n", &doc).ok());
  CHECK(doc.root["a"] == "1");  // scalars stay text; Fields types them
  CHECK(doc.root["b"][0] == "x");
  CHECK(doc.root["b"][1]["c"] == "2.5");
  CHECK(doc.root["b"][1]["d"].is_null());
  CHECK(doc.root["e"] == "quoted: yes");
  CHECK(doc.origin->Where("/a") == "t.yaml:1:4");
  CHECK(doc.origin->Where("/a", true) == "t.yaml:1:1");
  CHECK(doc.origin->Where("/b/1/c") == "t.yaml:4:9");
  CHECK(doc.origin->source() == "t.yaml");
}

TEST_CASE("malformed YAML is refused with the parser's place and word") {
  Document doc;
  Status s = Parse("a: [1, 2\n", &doc);
  CHECK(s.IsInvalidArgument());
  CHECK(Contains(s.message(), "t.yaml:"));
  CHECK(Contains(s.message(), "malformed YAML"));
}

TEST_CASE("a second document or a stray token is refused, not read forever (yaml-cpp 0.7's issue 1040)") {
  Document doc;
  for (std::string text : {",", "a: 1\n---\nb: 2\n"}) {
    Status s = Parse(text, &doc);
    INFO(text);
    CHECK(s.IsInvalidArgument());
    CHECK(Contains(s.message(), "t.yaml:"));
    CHECK(Contains(s.message(), "this must be one document"));
  }
  CHECK(Contains(Parse("a: 1\n,\n", &doc).message(), "malformed YAML"));
  CHECK(Contains(ApplyOverride("cluster=,", &doc).message(), "--set 'cluster=,':1:1: malformed YAML"));
}

TEST_CASE("a key given twice, anchors and aliases, and a key that is not a name are refused") {
  Document doc;
  Status s = Parse("a: 1\nb: 2\na: 3\n", &doc);
  CHECK(s.message() == "t.yaml:3:1: key 'a' appears twice in this mapping");
  s = Parse("a: &x 1\nb: *x\n", &doc);
  CHECK(Contains(s.message(), "anchors and aliases are not supported"));
  s = Parse("? [1, 2]\n: 3\n", &doc);
  CHECK(Contains(s.message(), "a key must be a plain name"));
}

TEST_CASE("bytes that are not UTF-8 are refused, quoted as escapes") {
  Document doc;
  Status s = Parse(std::string("name: bad\xff\xfe\n"), &doc);
  CHECK(Contains(s.message(), "t.yaml:1:7: not valid UTF-8: 'bad\\xFF\\xFE'"));
}

TEST_CASE("the text, the values, the nesting and each value are bounded before anything is built") {
  Document doc;
  std::string deep(kMaxYamlDepth + 1, '[');
  deep += std::string(kMaxYamlDepth + 1, ']');
  Status s = Parse(deep, &doc);
  CHECK(!s.ok());
  std::string many = "[";
  for (size_t i = 0; i <= kMaxYamlNodes; ++i) many += "1,";
  many += "1]";
  s = Parse(many, &doc);
  CHECK(Contains(s.message(), "more than " + std::to_string(kMaxYamlNodes) + " values"));
  s = Parse("a: " + std::string(kMaxScalarBytes + 1, 'x') + "\n", &doc);
  CHECK(Contains(s.message(), "bytes (at most " + std::to_string(kMaxScalarBytes) + ")"));
  s = Parse(std::string(kMaxYamlBytes + 1, ' '), &doc);
  CHECK(Contains(s.message(), "a YAML file here is at most"));
  s = Parse("a: 1\n---\nb: 2\n", &doc);
  CHECK(Contains(s.message(), "a second document"));
}

TEST_CASE("an override sets a value by its dotted path, creating sections, and is named in messages") {
  Document doc;
  REQUIRE(Parse("train: {steps: 2}\n", &doc).ok());
  REQUIRE(ApplyOverride("train.steps=7", &doc).ok());
  REQUIRE(ApplyOverride("data.shards=runs/x", &doc).ok());
  REQUIRE(ApplyOverride("cluster.sizes=[1, 2]", &doc).ok());
  CHECK(doc.root["train"]["steps"] == "7");
  CHECK(doc.root["data"]["shards"] == "runs/x");
  CHECK(doc.root["cluster"]["sizes"][1] == "2");
  CHECK(doc.origin->Where("/train/steps") == "--set 'train.steps=7'");
  CHECK(doc.origin->Where("/cluster/sizes/1") == "--set 'cluster.sizes=[1, 2]'");
  // A section the override made is its too (an unknown one is then refused naming the override, not the
  // file).
  CHECK(doc.origin->Where("/data", true) == "--set 'data.shards=runs/x'");
  CHECK(doc.origin->Where("/cluster") == "--set 'cluster.sizes=[1, 2]'");
  CHECK(doc.origin->Where("/train", true) != "--set 'train.steps=7'");  // the file's section, only changed
}

TEST_CASE("bad overrides are refused naming them, never thrown") {
  Document doc;
  REQUIRE(Parse("train: {steps: 2}\nname: x\n", &doc).ok());
  CHECK(ApplyOverride("nonsense", &doc).message() ==
        "override 'nonsense' is not of the form section.field=value");
  CHECK(Contains(ApplyOverride("a..b=1", &doc).message(), "has an empty field name"));
  CHECK(Contains(ApplyOverride("a.=1", &doc).message(), "has an empty field name"));
  CHECK(Contains(ApplyOverride("name.x=3", &doc).message(), "'name' is not a section"));
  Status s = ApplyOverride("train.batch_size=[", &doc);
  CHECK(Contains(s.message(), "--set 'train.batch_size=['"));
  CHECK(Contains(s.message(), "malformed YAML"));
}

TEST_CASE("a JSON document has no lines: its values are named by pointer") {
  Document doc = JsonDocument(nlohmann::json{{"a", 1}}, "plan.json (job)");
  CHECK(doc.origin->Where("/a") == "plan.json (job) at /a");
  CHECK(doc.origin->Where("") == "plan.json (job)");
}

}  // namespace
}  // namespace shoal

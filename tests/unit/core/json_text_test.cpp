// Tests for lib/core/json_text: JSON from outside, bounded before it is parsed.
#include "core/json_text.h"

#include <doctest/doctest.h>

#include <string>

#include "test_util.h"

namespace shoal {
namespace {

TEST_CASE("ParseJson refuses text larger than allowed, nested too deep, or too dense in arrays and objects") {
  nlohmann::json j;
  CHECK(ParseJson(R"({"a": [1, 2, {"b": null}]})", "x.json", &j).ok());
  CHECK(j["a"][2]["b"].is_null());
  CHECK(ParseJson(std::string(100, ' ') + "1", "x.json", &j, 50).message() ==
        "x.json: 101 bytes of JSON, at most 50 here");
  CHECK(ParseJson(std::string(65, '[') + std::string(65, ']'), "x.json", &j).message() ==
        "x.json: JSON nested deeper than 64 levels");
  // "[]," 100000 times: a tree ~20 times the text's size, refused before it is built.
  std::string dense = "[";
  for (int i = 0; i < 100000; ++i) dense += i ? ",[]" : "[]";
  dense += "]";
  CHECK(Contains(ParseJson(dense, "x.json", &j).message(),
                 "x.json: 100001 JSON arrays and objects in 300001 bytes, more than one per 16 bytes"));
  // Brackets inside strings are text, not containers; a small document may be as dense as it likes.
  CHECK(ParseJson("[\"" + std::string(100000, '[') + "\"]", "x.json", &j).ok());
  CHECK(ParseJson("[[],[],{},[[]]]", "x.json", &j).ok());
  CHECK(ParseJson("[1, 2", "x.json", &j).message().rfind("x.json: not valid JSON at byte ", 0) == 0);
}

}  // namespace
}  // namespace shoal

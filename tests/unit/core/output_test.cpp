// Tests for lib/core/output: records as JSON lines with the commit, tables
// and a live line for a person, and writes that fail are reported.
#include "core/output.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "core/build_info.h"
#include "test_util.h"

namespace shoal {
namespace {

std::string Read(std::FILE* f) {
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  return text;
}

TEST_CASE("records are JSON lines carrying the build's commit, and go to the copy too") {
  std::FILE* out = std::tmpfile();
  std::FILE* copy = std::tmpfile();
  Output o(false, out);
  o.CopyTo(copy);
  o.Record({{"event", "done"}, {"steps", 3}});
  o.Live({{"event", "step"}, {"step", 1}}, "step 1");
  REQUIRE(o.status().ok());
  const std::string text = Read(out);
  const auto first = nlohmann::json::parse(text.substr(0, text.find('\n')));
  CHECK(first["event"] == "done");
  CHECK(first["commit"] == BuildCommit());
  CHECK(Read(copy) == text);  // the metrics file gets the same lines
  std::fclose(out);
  std::fclose(copy);
}

TEST_CASE("a result is indented JSON with the commit in every record, or a table for a person") {
  std::FILE* out = std::tmpfile();
  Output json(false, out);
  json.Result(nlohmann::json::array({{{"path", "a"}, {"step", 1}}, {{"path", "b"}, {"step", 2}}}));
  const auto back = nlohmann::json::parse(Read(out));
  CHECK(back[1]["commit"] == BuildCommit());
  std::fclose(out);
  out = std::tmpfile();
  Output table(true, out);
  table.Result(nlohmann::json::array({{{"path", "a"}, {"step", 1}}, {{"path", "bb"}, {"step", 20}}}));
  CHECK(Read(out) == "path  step\na     1\nbb    20\n");
  std::fclose(out);
}

TEST_CASE("for a person a live line is rewritten in place and a record ends it") {
  std::FILE* out = std::tmpfile();
  Output o(true, out);
  o.Live({{"step", 1}}, "step 1");
  o.Live({{"step", 2}}, "step 2");
  o.Record({{"event", "done"}, {"loss", 0.125}});
  CHECK(Read(out) == "\r\033[Kstep 1\r\033[Kstep 2\ndone  loss 0.125\n");
  std::fclose(out);
}

TEST_CASE("a write that fails makes the status an I/O error") {
  std::FILE* full = std::fopen("/dev/full", "w");
  REQUIRE(full != nullptr);
  Output o(false, full);
  o.Record({{"event", "done"}});
  CHECK(o.status().IsIOError());
  CHECK(Contains(o.status().message(), "cannot write to standard output"));
  std::fclose(full);
}

}  // namespace
}  // namespace shoal

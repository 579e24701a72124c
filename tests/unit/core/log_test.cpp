// Tests for lib/core/log: lines on stderr named by the tool, and a flood of
// them cut down to a few with a count of the rest.
#include "core/log.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "test_util.h"

namespace shoal {
namespace {

// What `write` logs to stderr, captured through a temporary file.
template <typename Write>
std::string Captured(Write write) {
  std::fflush(stderr);
  TempDir dir;
  const std::string path = dir.path + "/stderr";
  const int saved = dup(STDERR_FILENO);
  REQUIRE(std::freopen(path.c_str(), "w", stderr) != nullptr);
  write();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::FILE* f = std::fopen(path.c_str(), "r");
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}

TEST_CASE("a log line is the tool's name, the message and a newline") {
  SetLogName("dl-test");
  CHECK(Captured([] { Log("server 0 serving"); }) == "dl-test: server 0 serving\n");
  SetLogName("shoal");
}

// The time a rate-limited log under test sees: moved by the test alone.
std::chrono::steady_clock::time_point test_now{};
std::chrono::steady_clock::time_point TestNow() { return test_now; }

TEST_CASE("a rate-limited log keeps its burst, then one a interval, counting what it left out") {
  RateLimitedLog log(3, std::chrono::milliseconds(200), TestNow);
  const std::string first = Captured([&] {
    for (int i = 0; i < 100; ++i) {
      log.Log("refused " + std::to_string(i));
      test_now += std::chrono::milliseconds(1);
    }
  });
  CHECK(Contains(first, "refused 0\n"));
  CHECK(Contains(first, "refused 2\n"));
  CHECK(!Contains(first, "refused 3\n"));
  CHECK(log.suppressed() == 97);
  test_now += std::chrono::milliseconds(102);  // at 202 ms: the interval since the burst's last line (at 2)
  const std::string later = Captured([&] { log.Log("refused again"); });
  CHECK(later == "shoal: refused again (and 97 more like it left out)\n");
  test_now += std::chrono::milliseconds(199);
  CHECK(Captured([&] { log.Log("refused once more"); }).empty());
  test_now += std::chrono::milliseconds(1);
  CHECK(Captured([&] { log.Log("refused at last"); }) ==
        "shoal: refused at last (and 1 more like it left out)\n");
  CHECK(log.suppressed() == 98);
}

TEST_CASE("a burst shorter than the interval is counted when the log is flushed, once") {
  RateLimitedLog log(2, std::chrono::seconds(60));
  Captured([&] {
    for (int i = 0; i < 50; ++i) log.Log("refused " + std::to_string(i));
  });
  CHECK(Captured([&] { log.Flush(); }) == "shoal: (and 48 more like it left out)\n");
  CHECK(Captured([&] { log.Flush(); }).empty());
  CHECK(log.suppressed() == 48);
}

}  // namespace
}  // namespace shoal

// The worker's output: JSON lines on stdout for scripts, or a live line when
// a person watches a terminal. Every record carries the build's commit.
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

namespace shoal {

class Progress {
 public:
  // `metrics`, when open, also gets every record as a JSON line.
  Progress(bool live, std::FILE* metrics = nullptr) : live_(live), metrics_(metrics) {}
  // A step record: rewritten in place on a terminal.
  void Step(const nlohmann::json& record);
  // A record that stays (evaluation, the end).
  void Event(const nlohmann::json& record);
  // Whether every write so far reached stdout.
  bool ok() const { return ok_; }

 private:
  void Write(const std::string& text);
  void Record(const nlohmann::json& record);
  bool live_;
  std::FILE* metrics_;
  bool line_open_ = false;
  bool ok_ = true;
};

}  // namespace shoal

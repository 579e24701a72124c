#include "train/progress.h"

#include "core/build_info.h"

namespace shoal {
namespace {

std::string JsonLine(const nlohmann::json& r) {
  nlohmann::json out = r;
  out["commit"] = BuildCommit();
  return out.dump() + "\n";
}

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

void Progress::Write(const std::string& text) {
  if (std::fputs(text.c_str(), stdout) < 0 || std::fflush(stdout) != 0) ok_ = false;
}

void Progress::Record(const nlohmann::json& r) {
  if (!metrics_) return;
  if (std::fputs(JsonLine(r).c_str(), metrics_) < 0 || std::fflush(metrics_) != 0) ok_ = false;
}

void Progress::Step(const nlohmann::json& r) {
  Record(r);
  if (!live_) {
    Write(JsonLine(r));
    return;
  }
  char line[256];
  std::snprintf(line, sizeof line, "\r\033[Kworker %d  step %lld/%lld  loss %.4f  %.0f records/s  %.1fs",
                r.value("worker", 0), r.value("step", 0LL), r.value("steps", 0LL), r.value("loss", 0.0),
                r.value("records_per_s", 0.0), r.value("elapsed_s", 0.0));
  Write(line);
  line_open_ = true;
}

void Progress::Event(const nlohmann::json& r) {
  Record(r);
  if (!live_) {
    Write(JsonLine(r));
    return;
  }
  if (line_open_) Write("\n");
  line_open_ = false;
  // For a person: "done  steps 120  test_accuracy 0.8612  ..." on one line.
  std::string line = r.value("event", "event");
  for (const auto& [key, value] : r.items()) {
    if (key == "event") continue;
    line += "  " + key + " " + (value.is_number_float() ? FormatNumber(value.get<double>()) : value.dump());
  }
  Write(line + "\n");
}

}  // namespace shoal

#include "train/progress.h"

#include "core/build_info.h"

namespace shoal {

void Progress::Write(const std::string& text) {
  if (std::fputs(text.c_str(), stdout) < 0 || std::fflush(stdout) != 0) ok_ = false;
}

void Progress::Record(const nlohmann::json& r) {
  if (!metrics_) return;
  nlohmann::json out = r;
  out["commit"] = BuildCommit();
  if (std::fputs((out.dump() + "\n").c_str(), metrics_) < 0 || std::fflush(metrics_) != 0) ok_ = false;
}

void Progress::Step(const nlohmann::json& r) {
  Record(r);
  if (!live_) {
    nlohmann::json out = r;
    out["commit"] = BuildCommit();
    Write(out.dump() + "\n");
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
  nlohmann::json out = r;
  out["commit"] = BuildCommit();
  if (!live_) {
    Write(out.dump() + "\n");
    return;
  }
  if (line_open_) Write("\n");
  line_open_ = false;
  Write(out.dump(2) + "\n");
}

}  // namespace shoal

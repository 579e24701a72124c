// dl-top: a live view of a running job, from its servers' own stats: each
// server's version, steps and bytes per second, parked reads and SSP
// waits, the last checkpoint, every worker's step and the slowest one's lag.
// Refreshed every --interval on a terminal; --json prints one JSON object
// per frame (lib/ps/stats_poller.h says what it holds), --once one frame.
// It asks each server once per frame, as any tool may: a stats request is
// answered from counters under the server's lock, and changes nothing.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "core/exit_codes.h"
#include "core/output.h"
#include "plan/plan.h"
#include "ps/stats_poller.h"
#include "tool_main.h"

namespace {

using namespace shoal;

std::string Cell(const nlohmann::json& v, int precision = 0) {
  if (v.is_null()) return "-";
  if (v.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v.get<double>());
    return buf;
  }
  return v.dump();
}

// Bytes per second, as a person reads them.
std::string Rate(const nlohmann::json& v) {
  if (!v.is_number()) return "-";
  double x = v.get<double>();
  const char* units[] = {"B/s", "KB/s", "MB/s", "GB/s"};
  int u = 0;
  while (x >= 1000 && u < 3) x /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", x, units[u]);
  return buf;
}

std::string Render(const nlohmann::json& view) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "plan %s  %s  version %s  %s steps/s  in %s  out %s  last checkpoint %s\n",
                view["plan"].get<std::string>().c_str(), view["consistency"].get<std::string>().c_str(),
                Cell(view["version"]).c_str(), Cell(view["steps_per_s"], 1).c_str(),
                Rate(view["bytes_in_per_s"]).c_str(), Rate(view["bytes_out_per_s"]).c_str(),
                Cell(view["last_checkpoint_step"]).c_str());
  out += line;
  std::snprintf(line, sizeof line, "%-6s %-26s %8s %9s %11s %11s %6s %9s %7s %5s\n", "server", "endpoint",
                "version", "steps/s", "in", "out", "parked", "ssp_waits", "ckpt", "done");
  out += line;
  for (const auto& s : view["servers"]) {
    if (!s["reachable"].get<bool>()) {
      out += std::to_string(s["server"].get<int>()) + "      " + s["endpoint"].get<std::string>() + "  " +
             s["error"].get<std::string>() + "\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%-6d %-26s %8s %9s %11s %11s %6s %9s %7s %5s\n", s["server"].get<int>(),
                  s["endpoint"].get<std::string>().c_str(), Cell(s["version"]).c_str(),
                  Cell(s["steps_per_s"], 1).c_str(), Rate(s["bytes_in_per_s"]).c_str(),
                  Rate(s["bytes_out_per_s"]).c_str(), Cell(s["parked"]).c_str(), Cell(s["ssp_waits"]).c_str(),
                  Cell(s["last_checkpoint_step"]).c_str(), Cell(s["workers_done"]).c_str());
    out += line;
  }
  out += "worker steps:";
  for (const auto& step : view["worker_steps"]) out += " " + step.dump();
  if (!view["slowest_worker"].is_null())
    out +=
        "   slowest: worker " + view["slowest_worker"].dump() + ", " + view["lag"].dump() + " steps behind";
  return out + "\n";
}

int Main(int argc, char** argv) {
  SetLogName("dl-top");
  CLI::App app{"dl-top: a live view of a running job's servers and workers"};
  std::string plan_path;
  bool once = false, json = false;
  double interval = 1.0;
  int timeout_ms = 2000;
  app.add_option("plan", plan_path, "the job's plan.json (- reads standard input)")->required();
  app.add_flag("--once", once, "print one frame (rates over one interval) and exit");
  app.add_flag("--json", json, "one JSON object per frame instead of a table");
  app.add_option("--interval", interval, "seconds between frames")->check(CLI::Range(0.05, 3600.0));
  app.add_option("--timeout-ms", timeout_ms, "how long a server may take to answer")->check(Positive());
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);

  Plan plan;
  Status s = LoadPlan(plan_path, &plan);
  StatsPoller poller;
  if (s.ok()) s = poller.Open(plan, timeout_ms);
  if (!s.ok()) return ReportFailure(s);
  const bool clear = !json && isatty(STDOUT_FILENO);
  JobSample before = poller.Poll();
  bool ever_answered = false;
  while (true) {
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    JobSample now = poller.Poll();
    const nlohmann::json view = JobView(plan, before, now);
    if (view["reachable"] == 0) {
      // Every server silent: the job has ended, or never ran where the plan says.
      if (ever_answered) {
        Log("no server of plan " + plan.hash + " answers any more: the job has ended");
        return kExitOk;
      }
      return ReportFailure(Status::Unavailable(
          "no server of plan " + plan.hash + " answered: " + view["servers"][0]["error"].get<std::string>()));
    }
    ever_answered = true;
    const std::string frame = json ? view.dump() + "\n" : Render(view);
    std::fputs(clear ? ("\033[H\033[2J" + frame).c_str() : frame.c_str(), stdout);
    if (!json && !clear) std::fputs("\n", stdout);
    if (std::fflush(stdout) != 0) return ReportFailure(Status::IOError("cannot write to standard output"));
    if (once) return kExitOk;
    before = std::move(now);
  }
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }

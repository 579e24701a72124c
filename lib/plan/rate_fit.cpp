#include "plan/rate_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "plan/cost_model.h"
#include "plan/plan.h"
#include "plan/planner.h"

namespace shoal {
namespace {

using nlohmann::json;

// What one worker's "done" record says of its steps.
struct WorkerTimes {
  std::map<std::string, double> layer_s;  // per layer: forward and backward seconds a step
  double step_s = 0.0;                    // its median step
  int threads = 0;                        // its compute threads
};

Status FiniteNumber(const json& j, const char* key, const std::string& where, double* out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0.0)
    return Status::InvalidArgument(where + ": '" + key + "' is " + (it == j.end() ? "missing" : it->dump()) +
                                   ", not a finite number of zero or more");
  *out = it->get<double>();
  return Status::Ok();
}

// The last "done" record of a worker's records file, line by line: a
// record's line is read whole, and no more than one line is held at a time.
Status ReadDone(const std::string& path, json* done, std::string* where) {
  std::ifstream in(path);
  if (!in) return Status::IOError("cannot read '" + path + "'");
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.find("\"done\"") == std::string::npos) continue;
    json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object())
      return Status::InvalidArgument(path + ":" + std::to_string(number) + ": not a JSON record");
    const auto event = record.find("event");
    if (event == record.end() || *event != "done") continue;
    *done = std::move(record);
    *where = path + ":" + std::to_string(number);
  }
  if (in.bad()) return Status::IOError("cannot read '" + path + "'");
  if (done->is_null())
    return Status::InvalidArgument(path + ": no \"done\" record: the worker never finished");
  return Status::Ok();
}

Status ReadWorker(const std::string& path, WorkerTimes* times) {
  json done;
  std::string where;
  SHOAL_RETURN_IF_ERROR(ReadDone(path, &done, &where));
  double steps = 0.0, ms = 0.0, threads = 0.0;
  SHOAL_RETURN_IF_ERROR(FiniteNumber(done, "layer_steps", where, &steps));
  SHOAL_RETURN_IF_ERROR(FiniteNumber(done, "ms_per_step_median", where, &ms));
  const auto kernels = done.find("kernels");
  if (kernels == done.end() || !kernels->is_object())
    return Status::InvalidArgument(where + ": no 'kernels' (a record of a build before layer timing)");
  SHOAL_RETURN_IF_ERROR(FiniteNumber(*kernels, "compute_threads", where + ": kernels", &threads));
  const auto layers = done.find("layers");
  if (steps < 1.0 || layers == done.end() || !layers->is_array())
    return Status::InvalidArgument(where + ": no timed steps with their 'layers'");
  times->step_s = ms / 1000.0;
  times->threads = static_cast<int>(threads);
  for (const json& layer : *layers) {
    const auto name = layer.is_object() ? layer.find("layer") : layer.end();
    if (!layer.is_object() || name == layer.end() || !name->is_string())
      return Status::InvalidArgument(where +
                                     ": a layer's record without its name: " + layer.dump().substr(0, 80));
    double forward = 0.0, backward = 0.0;
    const std::string named = where + ": layer '" + name->get<std::string>() + "'";
    SHOAL_RETURN_IF_ERROR(FiniteNumber(layer, "forward_s", named, &forward));
    SHOAL_RETURN_IF_ERROR(FiniteNumber(layer, "backward_s", named, &backward));
    times->layer_s[name->get<std::string>()] = (forward + backward) / steps;
  }
  return Status::Ok();
}

// Every worker's times in a run directory (worker-N.jsonl), by N.
Status ReadWorkers(const std::string& dir, std::vector<WorkerTimes>* workers) {
  static const std::regex kRecords(R"(worker-[0-9]+\.jsonl)");
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (std::regex_match(entry.path().filename().string(), kRecords)) paths.push_back(entry.path().string());
  if (ec) return Status::IOError("cannot list '" + dir + "': " + ec.message());
  if (paths.empty())
    return Status::InvalidArgument("'" + dir + "' holds no worker's records (worker-N.jsonl)");
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    workers->emplace_back();
    SHOAL_RETURN_IF_ERROR(ReadWorker(path, &workers->back()));
  }
  return Status::Ok();
}

// A profile in which every layer type computes at 1 GFLOP/s, the batch's
// and Winograd's effects kept, no straggler: a layer's seconds there are
// its operations in GFLOP as the cost model weighs them.
ClusterProfile UnitRates(const ClusterProfile& measured) {
  ClusterProfile unit = measured;
  unit.gflops_per_worker = 1.0;
  unit.layer_gflops.clear();
  unit.compute_cv = 0.0;
  return unit;
}

// The data-parallel plan of a run's job, as the cost model prices it under `profile`.
Status PlanRun(const Plan& plan, const ClusterProfile& profile, PartitionReport* report) {
  PlannerOptions options;
  options.strategy = Strategy::kData;
  options.profile = profile;
  return PlanJob(plan.job, options, report);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

Status FitLayerRates(const std::vector<std::string>& run_dirs, ClusterProfile* profile, RateFit* fit) {
  *fit = RateFit();
  // The layers Winograd's kernel takes are weighed apart (the same operations
  // at a speedup of 1): the rate is fitted to the others, the speedup to them.
  ClusterProfile plain = UnitRates(*profile), faster = plain;
  plain.winograd_speedup = 1.0;
  faster.winograd_speedup = 2.0;
  struct Sums {
    double weighed = 0.0, measured = 0.0;  // in GFLOP at 1 GFLOP/s, and seconds
  };
  struct TypeSums {
    Sums direct, winograd;
    int layers = 0;
  };
  std::map<std::string, TypeSums> by_type;
  std::vector<Plan> plans(run_dirs.size());
  for (size_t r = 0; r < run_dirs.size(); ++r) {
    const std::string& dir = run_dirs[r];
    Plan& plan = plans[r];
    SHOAL_RETURN_IF_ERROR(LoadPlan(dir + "/plan.json", &plan));
    if (plan.group_size > 1)
      return Status::InvalidArgument("'" + dir + "': its plan has groups of " +
                                     std::to_string(plan.group_size) +
                                     " workers, whose layer times include waits for each other: fit to "
                                     "runs of groups of one");
    std::vector<WorkerTimes> workers;
    SHOAL_RETURN_IF_ERROR(ReadWorkers(dir, &workers));
    std::vector<double> steps;
    for (const WorkerTimes& w : workers) {
      if (fit->compute_threads == 0) fit->compute_threads = w.threads;
      if (w.threads != fit->compute_threads)
        return Status::InvalidArgument("'" + dir + "': workers of " + std::to_string(w.threads) + " and " +
                                       std::to_string(fit->compute_threads) +
                                       " compute threads; a profile describes one kind of worker");
      steps.push_back(w.step_s);
    }
    fit->runs.push_back({dir, Median(steps), 0.0});
    PartitionReport report;
    SHOAL_RETURN_IF_ERROR(PlanRun(plan, plain, &report).Within("'" + dir + "/plan.json'"));
    for (size_t l = 0; l < report.layers.size(); ++l) {
      const LayerFacts& layer = report.layers[l];
      const double weighed = NodeCost(layer, report.choices[l], report.grouping, plain).compute_s;
      if (weighed <= 0.0) continue;  // no operations: nothing to fit
      double measured = 0.0;
      for (const WorkerTimes& w : workers) {
        const auto it = w.layer_s.find(layer.name);
        if (it == w.layer_s.end())
          return Status::InvalidArgument("'" + dir + "': a worker's record has no layer '" + layer.name +
                                         "': the records are not of this plan's run");
        measured += it->second / workers.size();
      }
      const bool winograd = NodeCost(layer, report.choices[l], report.grouping, faster).compute_s < weighed;
      TypeSums& sums = by_type[layer.type];
      Sums& kind = winograd ? sums.winograd : sums.direct;
      kind.weighed += weighed;
      kind.measured += measured;
      ++sums.layers;
    }
  }
  for (const auto& [type, sums] : by_type) {
    const Sums& direct = sums.direct;
    const Sums& winograd = sums.winograd;
    double rate = 0.0;
    if (direct.measured > 0.0) {
      rate = direct.weighed / direct.measured;
      if (winograd.measured > 0.0)
        profile->winograd_speedup = std::clamp(winograd.weighed / winograd.measured / rate, 0.01, 100.0);
    } else if (winograd.measured > 0.0) {  // only Winograd's layers: the speedup stays as measured
      rate = winograd.weighed / winograd.measured / profile->winograd_speedup;
    } else {
      continue;  // too fast for the clock: the rate stays as measured
    }
    profile->layer_gflops[type] = rate;
    fit->types.push_back({type, rate, sums.layers, direct.measured + winograd.measured});
  }
  fit->winograd_speedup = profile->winograd_speedup;
  for (size_t r = 0; r < plans.size(); ++r) {
    PartitionReport report;
    SHOAL_RETURN_IF_ERROR(PlanRun(plans[r], *profile, &report));
    fit->runs[r].predicted_step_s = report.chosen.seconds;
  }
  return Status::Ok();
}

std::string DescribeFit(const RateFit& fit) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "layer rates fitted to %zu run%s (workers of %d compute thread%s):\n",
                fit.runs.size(), fit.runs.size() == 1 ? "" : "s", fit.compute_threads,
                fit.compute_threads == 1 ? "" : "s");
  out += line;
  for (const RateFit::TypeRate& t : fit.types) {
    std::snprintf(line, sizeof line, "  %-18s %9.2f GFLOP/s  (%d layers, %.2f ms a step)\n", t.type.c_str(),
                  t.gflops, t.layers, t.seconds * 1e3);
    out += line;
  }
  std::snprintf(line, sizeof line, "  Winograd's convolutions %.2f times the rate of the others\n",
                fit.winograd_speedup);
  out += line;
  out += "each run's step under the fitted profile, predicted against measured:\n";
  for (const RateFit::RunCheck& r : fit.runs) {
    const double off = r.measured_step_s > 0.0 ? r.predicted_step_s / r.measured_step_s - 1.0 : 0.0;
    std::snprintf(line, sizeof line, "  %s: %.2f ms against %.2f ms (%+.1f%%)\n", r.run.c_str(),
                  r.predicted_step_s * 1e3, r.measured_step_s * 1e3, off * 100.0);
    out += line;
  }
  return out;
}

}  // namespace shoal

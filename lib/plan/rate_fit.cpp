#include "plan/rate_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "core/json_text.h"
#include "core/median.h"
#include "plan/calibrate.h"
#include "plan/cost_model.h"
#include "plan/planner.h"

namespace shoal {
namespace {

using nlohmann::json;

// A records file's line: a done record of a net of thousands of layers is a
// small fraction of it.
constexpr size_t kMaxLine = 16u << 20;
constexpr double kMaxSeconds = 1e9;  // a time no run takes: a record beyond it is not a run's
constexpr int kMaxThreads = 1 << 16;
// What a profile's layer_gflops holds (ParseClusterProfile).
constexpr double kLowestRate = 1e-6, kHighestRate = 1e9;

// Text from a record, short enough for a message.
std::string Clip(const std::string& text) {
  constexpr size_t kShown = 60;
  return text.size() <= kShown ? text : text.substr(0, kShown) + "...";
}

Status Number(const json& j, const char* key, const std::string& where, double max, double* out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !(it->get<double>() >= 0.0 && it->get<double>() <= max))
    return Status::InvalidArgument(where + ": '" + key + "' is " +
                                   (it == j.end() ? "missing" : Clip(it->dump())) +
                                   ", not a number from 0 to " + Clip(json(max).dump()));
  *out = it->get<double>();
  return Status::Ok();
}

Status Count(const json& j, const char* key, const std::string& where, int64_t max, int64_t* out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > max)
    return Status::InvalidArgument(where + ": '" + key + "' is " +
                                   (it == j.end() ? "missing" : Clip(it->dump())) +
                                   ", not a count from 1 to " + std::to_string(max));
  *out = it->get<int64_t>();
  return Status::Ok();
}

// Keeps the last "done" record of a worker's records file, and where it is.
// Only lines naming "done" are parsed; no line longer than kMaxLine is held.
Status ReadDone(const std::string& path, json* done, std::string* where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot read '" + path + "': " + std::strerror(errno));
  std::string line;
  size_t number = 1;
  auto take = [&]() -> Status {
    const std::string at = path + ":" + std::to_string(number++);
    if (line.find("\"done\"") == std::string::npos) return Status::Ok();
    json record;
    SHOAL_RETURN_IF_ERROR(ParseJson(line, at, &record, kMaxLine));
    if (!record.is_object()) return Status::InvalidArgument(at + ": not a JSON object");
    const auto event = record.find("event");
    if (event != record.end() && *event == "done") {
      *done = std::move(record);
      *where = at;
    }
    return Status::Ok();
  };
  std::vector<char> piece(1 << 20);
  while (in.read(piece.data(), static_cast<std::streamsize>(piece.size())) || in.gcount() > 0) {
    const char* p = piece.data();
    const char* end = p + in.gcount();
    while (p < end) {
      const char* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      const char* stop = newline != nullptr ? newline : end;
      if (line.size() + static_cast<size_t>(stop - p) > kMaxLine)
        return Status::InvalidArgument(path + ":" + std::to_string(number) + ": a line longer than " +
                                       std::to_string(kMaxLine) + " bytes: not a worker's record");
      line.append(p, stop);
      if (newline == nullptr) break;
      SHOAL_RETURN_IF_ERROR(take());
      line.clear();
      p = newline + 1;
    }
  }
  if (in.bad()) return Status::IOError("cannot read '" + path + "'");
  if (!line.empty()) SHOAL_RETURN_IF_ERROR(take());
  if (done->is_null())
    return Status::InvalidArgument(path + ": no \"done\" record: the worker never finished");
  return Status::Ok();
}

Status ReadWorker(const std::string& path, FitRun::Worker* worker) {
  json done;
  std::string where;
  SHOAL_RETURN_IF_ERROR(ReadDone(path, &done, &where));
  int64_t steps = 0, threads = 0;
  double ms = 0.0;
  SHOAL_RETURN_IF_ERROR(Count(done, "layer_steps", where, int64_t{1} << 53, &steps));
  SHOAL_RETURN_IF_ERROR(Number(done, "ms_per_step_median", where, kMaxSeconds * 1e3, &ms));
  const auto kernels = done.find("kernels");
  if (kernels == done.end() || !kernels->is_object())
    return Status::InvalidArgument(where + ": no 'kernels': not a done record of this build's workers");
  SHOAL_RETURN_IF_ERROR(Count(*kernels, "compute_threads", where + ": kernels", kMaxThreads, &threads));
  const auto layers = done.find("layers");
  if (layers == done.end() || !layers->is_array())
    return Status::InvalidArgument(where + ": no 'layers' list of the layers' times");
  worker->step_s = ms / 1e3;
  worker->threads = static_cast<int>(threads);
  const auto sent = done.find("updates_sent");  // absent where the worker ran --standalone
  worker->exchanged = sent != done.end() && sent->is_number_unsigned() && sent->get<uint64_t>() > 0;
  for (const json& layer : *layers) {
    const auto name = layer.is_object() ? layer.find("layer") : layer.end();
    if (!layer.is_object() || name == layer.end() || !name->is_string())
      return Status::InvalidArgument(where + ": a layer's record without its name: " + Clip(layer.dump()));
    double forward = 0.0, backward = 0.0;
    const std::string named = where + ": layer '" + Clip(name->get<std::string>()) + "'";
    SHOAL_RETURN_IF_ERROR(Number(layer, "forward_s", named, kMaxSeconds, &forward));
    SHOAL_RETURN_IF_ERROR(Number(layer, "backward_s", named, kMaxSeconds, &backward));
    worker->layer_s[name->get<std::string>()] = (forward + backward) / static_cast<double>(steps);
  }
  return Status::Ok();
}

// A profile in which every layer type computes at 1 GFLOP/s, the batch's
// effect kept, no straggler: a layer's seconds there are its operations in
// GFLOP as the cost model weighs them, short sums at `half_rate_inner`.
ClusterProfile UnitRates(const ClusterProfile& measured, double winograd_speedup, double half_rate_inner) {
  ClusterProfile unit = measured;
  unit.gflops_per_worker = 1.0;
  unit.layer_gflops.clear();
  unit.compute_cv = 0.0;
  unit.winograd_speedup = winograd_speedup;
  unit.half_rate_inner = half_rate_inner;
  return unit;
}

// A layer of a run, as planned, and the seconds its workers measured a step.
struct TimedLayer {
  LayerFacts layer;
  Choice choice;
  Grouping grouping;
  double measured = 0.0;
  bool winograd = false;  // priced on Winograd's kernel
};

// What `profile`'s winograd_speedup says at half_rate_inner `h`. The ratio
// of the two kernels' rates on the calibration's convolution stays as it
// was measured, whatever h: the speedup is that ratio over their factors
// K/(K + h) there.
double SpeedupAt(const ClusterProfile& profile, double h) {
  const ConvGeometry& g = kCalibrationConvolution;
  const double direct = g.col_rows(), winograd = g.channels, from = profile.half_rate_inner;
  return std::clamp(profile.winograd_speedup * ShortSumShare(winograd, from) / ShortSumShare(direct, from) *
                        ShortSumShare(direct, h) / ShortSumShare(winograd, h),
                    kLowestWinogradSpeedup, kHighestWinogradSpeedup);
}

// A layer type's rate fitted to its timed layers under half_rate_inner `h`:
// the direct kernel's layers give the rate, Winograd's its speedup.
struct TypeFit {
  double weighed = 0.0, measured = 0.0;                    // the direct kernel's: GFLOP at 1 GFLOP/s, seconds
  double winograd_weighed = 0.0, winograd_measured = 0.0;  // Winograd's
  int layers = 0;
  double rate = 0.0;     // GFLOP/s; 0: no layer took measurable time
  double speedup = NAN;  // Winograd's, where both kernels ran (within what a profile holds)
  double misfit = 0.0;   // the layers' measured seconds times the square of log(predicted / measured)
};

TypeFit FitType(const std::vector<TimedLayer>& timed, const std::string& type, const ClusterProfile& profile,
                double h) {
  const ClusterProfile unit = UnitRates(profile, 1.0, h);
  TypeFit fit;
  std::vector<std::pair<const TimedLayer*, double>> weighed;
  for (const TimedLayer& t : timed) {
    if (t.layer.type != type) continue;
    const double w = NodeCost(t.layer, t.choice, t.grouping, unit).compute_s;
    weighed.emplace_back(&t, w);
    (t.winograd ? fit.winograd_weighed : fit.weighed) += w;
    (t.winograd ? fit.winograd_measured : fit.measured) += t.measured;
    ++fit.layers;
  }
  const double measured_speedup = SpeedupAt(profile, h);
  if (fit.measured > 0.0) {
    fit.rate = fit.weighed / fit.measured;
    if (fit.winograd_measured > 0.0)
      fit.speedup = std::clamp(fit.winograd_weighed / fit.winograd_measured / fit.rate,
                               kLowestWinogradSpeedup, kHighestWinogradSpeedup);
  } else if (fit.winograd_measured > 0.0) {  // only Winograd's layers: the speedup stays as measured
    fit.rate = fit.winograd_weighed / fit.winograd_measured / measured_speedup;
  }
  if (!(fit.rate > 0.0)) return fit;
  const double speedup = std::isfinite(fit.speedup) ? fit.speedup : measured_speedup;
  for (const auto& [t, w] : weighed)
    if (t->measured > 0.0 && w > 0.0)
      fit.misfit +=
          t->measured * std::pow(std::log(w / fit.rate / (t->winograd ? speedup : 1.0) / t->measured), 2);
  return fit;
}

// The half_rate_inner at which the timed layers with inner lengths fit their
// types' rates best: 0 unless some other is clearly better (their lengths may
// be too alike to say); the profile's where no layer has one.
double FitHalfRateInner(const std::vector<TimedLayer>& timed, const ClusterProfile& profile) {
  std::set<std::string> types;
  double seconds = 0.0;
  for (const TimedLayer& t : timed)
    if (t.layer.inner > 0.0) types.insert(t.layer.type), seconds += t.measured;
  if (types.empty()) return profile.half_rate_inner;  // nothing here says anything of it
  auto misfit = [&](double h) {
    double sum = 0.0;
    for (const std::string& type : types) sum += FitType(timed, type, profile, h).misfit;
    return sum;
  };
  const double none = misfit(0.0);
  double best = 0.0, best_misfit = none;
  for (int i = 0; i <= 64; ++i) {  // 1 to 65536, four points an octave
    const double h = std::exp2(i / 4.0), m = misfit(h);
    if (m < best_misfit) best = h, best_misfit = m;
  }
  // Better by 1%, and by more than rounding where h = 0 fits all but exactly.
  return best_misfit < 0.99 * none - 1e-9 * seconds ? best : 0.0;
}

// The data-parallel plan of a run's job, as the cost model prices it under `profile`.
Status PlanRun(const FitRun& run, const ClusterProfile& profile, PartitionReport* report) {
  PlannerOptions options;
  options.strategy = Strategy::kData;
  options.profile = profile;
  return PlanJob(run.plan.job, options, report).Within("'" + run.dir + "/plan.json'");
}

// Whether `endpoint` is on this machine: loopback TCP, or IPC.
bool OnLoopback(const std::string& endpoint) {
  for (const char* prefix : {"ipc://", "inproc://", "tcp://127.", "tcp://localhost:", "tcp://[::1]:"})
    if (endpoint.rfind(prefix, 0) == 0) return true;
  return false;
}

// Whether every worker of `run` exchanged with servers on this machine.
bool ExchangedOnLoopback(const FitRun& run) {
  for (const FitRun::Worker& w : run.workers)
    if (!w.exchanged) return false;
  for (const ServerPlan& server : run.plan.servers)
    if (!OnLoopback(server.endpoint)) return false;
  return true;
}

// A run's plan as priced, and its measured step.
struct Priced {
  PartitionReport report;
  double measured_s = 0.0;
};

// `profile` with its links at `gbps`; a server's own link, where set, in proportion.
ClusterProfile AtBandwidth(const ClusterProfile& profile, double gbps) {
  ClusterProfile p = profile;
  p.bandwidth_gbps = gbps;
  if (profile.server_gbps > 0.0) p.server_gbps = profile.server_gbps * gbps / profile.bandwidth_gbps;
  return p;
}

// The runs' predicted steps under `profile`.
std::vector<double> PredictedSteps(const std::vector<Priced>& runs, const ClusterProfile& profile) {
  std::vector<double> steps;
  for (const Priced& run : runs)
    steps.push_back(
        EvaluateChoices(run.report.layers, run.report.choices, run.report.ranks, run.report.grouping, profile)
            .seconds);
  return steps;
}

// Fits `profile`'s bandwidth to `runs` (FitLayerRates). A scan of the range
// finds the best of its points; a golden-section search refines it between
// that point's neighbours.
RateFit::Network FitBandwidth(const std::vector<Priced>& runs, ClusterProfile* profile) {
  if (runs.empty()) return RateFit::Network::kNoExchange;
  constexpr int kPoints = 121;
  constexpr double kSlowest = 0.01, kFastest = 1e4;  // Gbit/s
  const std::vector<double> slowest = PredictedSteps(runs, AtBandwidth(*profile, kSlowest)),
                            fastest = PredictedSteps(runs, AtBandwidth(*profile, kFastest));
  bool matters = false;
  for (size_t r = 0; r < runs.size(); ++r) matters |= slowest[r] > fastest[r] * 1.02;
  if (!matters) return RateFit::Network::kNoEffect;
  auto misfit = [&](double log_gbps) {
    const std::vector<double> steps = PredictedSteps(runs, AtBandwidth(*profile, std::exp(log_gbps)));
    double sum = 0.0;
    for (size_t r = 0; r < runs.size(); ++r) sum += std::pow(std::log(steps[r] / runs[r].measured_s), 2);
    return sum;
  };
  const double lo = std::log(kSlowest), hi = std::log(kFastest), pitch = (hi - lo) / (kPoints - 1);
  int best = 0;
  double best_misfit = misfit(lo);
  for (int i = 1; i < kPoints; ++i) {
    const double m = misfit(lo + i * pitch);
    if (m < best_misfit) best = i, best_misfit = m;
  }
  const bool at_end = best == 0 || best == kPoints - 1;
  double a = lo + best * pitch, b = a;
  if (!at_end) {
    a -= pitch, b += pitch;
    const double golden = (std::sqrt(5.0) - 1) / 2;
    for (int i = 0; i < 40; ++i) {
      const double c = b - golden * (b - a), d = a + golden * (b - a);
      if (misfit(c) < misfit(d))
        b = d;
      else
        a = c;
    }
  }
  *profile = AtBandwidth(*profile, std::exp((a + b) / 2));
  return at_end ? RateFit::Network::kFittedAtEnd : RateFit::Network::kFitted;
}

}  // namespace

Status ReadFitRun(const std::string& dir, FitRun* run) {
  *run = FitRun();
  run->dir = dir;
  SHOAL_RETURN_IF_ERROR(LoadPlan(dir + "/plan.json", &run->plan));
  bool exchange = false;
  SHOAL_RETURN_IF_ERROR(WorkersExchange(run->plan, &exchange));
  if (exchange)
    return Status::InvalidArgument("'" + dir +
                                   "': its workers exchange inside each step (groups of more than one, or "
                                   "synchronised batch norm), so a layer's time holds waits for the others: "
                                   "fit to runs whose workers compute alone");
  if (run->plan.job.train.device != "cpu")
    return Status::InvalidArgument("'" + dir + "': its workers trained on '" + run->plan.job.train.device +
                                   "', where a layer's time is what the host took to issue it");
  static const std::regex kRecords(R"(worker-[0-9]+\.jsonl)");
  std::vector<std::string> paths;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (std::regex_match(it->path().filename().string(), kRecords)) paths.push_back(it->path().string());
  if (ec) return Status::IOError("cannot list '" + dir + "': " + ec.message());
  if (paths.empty())
    return Status::InvalidArgument("'" + dir + "' holds no worker's records (worker-N.jsonl)");
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    run->workers.emplace_back();
    SHOAL_RETURN_IF_ERROR(ReadWorker(path, &run->workers.back()));
    if (run->workers.back().threads != run->workers.front().threads)
      return Status::InvalidArgument("'" + dir + "': workers of " +
                                     std::to_string(run->workers.front().threads) + " and " +
                                     std::to_string(run->workers.back().threads) + " compute threads");
  }
  return Status::Ok();
}

Status FitLayerRates(const std::vector<FitRun>& runs, bool fit_bandwidth, ClusterProfile* profile,
                     RateFit* fit) {
  *fit = RateFit();
  // The layers Winograd's kernel takes are weighed apart (the same operations
  // at a speedup of 1): the rate is fitted to the others, the speedup to them.
  const ClusterProfile plain = UnitRates(*profile, 1.0, 0.0), faster = UnitRates(*profile, 2.0, 0.0);
  std::vector<TimedLayer> timed;
  for (const FitRun& run : runs) {
    const int threads = run.workers.front().threads;
    if (fit->compute_threads == 0) fit->compute_threads = threads;
    if (threads != fit->compute_threads)
      return Status::InvalidArgument(
          "'" + run.dir + "': workers of " + std::to_string(threads) + " compute threads, another run's of " +
          std::to_string(fit->compute_threads) + ": a profile describes one kind of worker");
    std::vector<double> steps;
    for (const FitRun::Worker& w : run.workers) steps.push_back(w.step_s);
    fit->runs.push_back({run.dir, Median(steps), 0.0});
    PartitionReport report;
    SHOAL_RETURN_IF_ERROR(PlanRun(run, plain, &report));
    for (size_t l = 0; l < report.layers.size(); ++l) {
      const LayerFacts& layer = report.layers[l];
      const double weighed = NodeCost(layer, report.choices[l], report.grouping, plain).compute_s;
      if (weighed <= 0.0) continue;  // no operations: nothing to fit
      double measured = 0.0;
      for (const FitRun::Worker& w : run.workers) {
        const auto it = w.layer_s.find(layer.name);
        if (it == w.layer_s.end())
          return Status::InvalidArgument("'" + run.dir + "': a worker's record has no layer '" + layer.name +
                                         "': the records are not of this plan's run");
        measured += it->second / static_cast<double>(run.workers.size());
      }
      const bool winograd = NodeCost(layer, report.choices[l], report.grouping, faster).compute_s < weighed;
      timed.push_back({layer, report.choices[l], report.grouping, measured, winograd});
    }
  }
  const double h = FitHalfRateInner(timed, *profile);
  profile->winograd_speedup = SpeedupAt(*profile, h);
  profile->half_rate_inner = h;
  std::set<std::string> types;
  for (const TimedLayer& t : timed) types.insert(t.layer.type);
  // Only convolutions run on Winograd's kernel: the one speedup is theirs.
  for (const std::string& type : types) {
    const TypeFit t = FitType(timed, type, *profile, profile->half_rate_inner);
    if (t.rate == 0.0) continue;  // too fast for the clock: the rate stays as measured
    if (std::isfinite(t.speedup)) profile->winograd_speedup = t.speedup;
    if (!(t.rate >= kLowestRate && t.rate <= kHighestRate))
      return Status::InvalidArgument(
          "the runs' " + type + " layers fit a rate of " + Clip(json(t.rate).dump()) +
          " GFLOP/s, outside what a profile holds (1e-6 to 1e9): are their times real?");
    profile->layer_gflops[type] = t.rate;
    fit->types.push_back({type, t.rate, t.layers, t.measured + t.winograd_measured});
  }
  if (fit->types.empty())
    return Status::InvalidArgument(
        "nothing to fit: no layer of the runs has both operations and a measured time");
  fit->winograd_speedup = profile->winograd_speedup;
  fit->half_rate_inner = profile->half_rate_inner;
  fit->measured_gbps = profile->bandwidth_gbps;
  std::vector<Priced> priced(runs.size()), exchanged;
  for (size_t r = 0; r < runs.size(); ++r) {
    SHOAL_RETURN_IF_ERROR(PlanRun(runs[r], *profile, &priced[r].report));
    priced[r].measured_s = fit->runs[r].measured_step_s;
    if (ExchangedOnLoopback(runs[r]) && priced[r].measured_s > 0.0) exchanged.push_back(priced[r]);
  }
  fit->network = fit_bandwidth ? FitBandwidth(exchanged, profile) : RateFit::Network::kNotAsked;
  fit->fitted_gbps = profile->bandwidth_gbps;
  const std::vector<double> steps = PredictedSteps(priced, *profile);
  for (size_t r = 0; r < runs.size(); ++r) fit->runs[r].predicted_step_s = steps[r];
  return Status::Ok();
}

std::string DescribeFit(const RateFit& fit) {
  char line[256];
  std::snprintf(line, sizeof line, "layer rates fitted to %zu run%s (workers of %d compute thread%s):\n",
                fit.runs.size(), fit.runs.size() == 1 ? "" : "s", fit.compute_threads,
                fit.compute_threads == 1 ? "" : "s");
  std::string out = line;
  for (const RateFit::TypeRate& t : fit.types) {
    std::snprintf(line, sizeof line, "  %-18s %9.2f GFLOP/s  (%d layers, %.2f ms a step)\n", t.type.c_str(),
                  t.gflops, t.layers, t.seconds * 1e3);
    out += line;
  }
  std::snprintf(line, sizeof line, "  Winograd's convolutions %.2f times the rate of the others\n",
                fit.winograd_speedup);
  out += line;
  if (fit.half_rate_inner > 0.0) {
    std::snprintf(line, sizeof line, "  products of sums K long at K/(K + %.1f) of their type's rate\n",
                  fit.half_rate_inner);
    out += line;
  }
  switch (fit.network) {
    case RateFit::Network::kFitted:
      std::snprintf(line, sizeof line,
                    "  the loopback bandwidth %.2f Gbit/s, fitted to the runs' steps (measured %.2f)\n",
                    fit.fitted_gbps, fit.measured_gbps);
      break;
    case RateFit::Network::kFittedAtEnd:
      std::snprintf(
          line, sizeof line,
          "  the loopback bandwidth %.2f Gbit/s, the end of the range searched (measured %.2f): %s\n",
          fit.fitted_gbps, fit.measured_gbps,
          fit.fitted_gbps > fit.measured_gbps ? "the runs' layers alone take their steps"
                                              : "no bandwidth explains steps this long");
      break;
    case RateFit::Network::kNotAsked:
      std::snprintf(line, sizeof line, "  the bandwidth as measured between machines, %.2f Gbit/s\n",
                    fit.measured_gbps);
      break;
    case RateFit::Network::kNoExchange:
      std::snprintf(line, sizeof line,
                    "  the bandwidth as measured, %.2f Gbit/s: no run exchanged with servers on loopback\n",
                    fit.measured_gbps);
      break;
    case RateFit::Network::kNoEffect:
      std::snprintf(line, sizeof line,
                    "  the bandwidth as measured, %.2f Gbit/s: no run's step depends on it\n",
                    fit.measured_gbps);
      break;
  }
  out += line;
  out += "each run's step under the fitted profile, predicted against measured:";
  for (const RateFit::RunCheck& r : fit.runs) {
    const double off = r.measured_step_s > 0.0 ? r.predicted_step_s / r.measured_step_s - 1.0 : 0.0;
    std::snprintf(line, sizeof line, ": %.2f ms against %.2f ms (%+.1f%%)", r.predicted_step_s * 1e3,
                  r.measured_step_s * 1e3, off * 100.0);
    out += "\n  " + r.run + line;
  }
  return out;
}

}  // namespace shoal

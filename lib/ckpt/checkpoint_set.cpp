#include "ckpt/checkpoint_set.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/file_util.h"
#include "core/json_fields.h"

namespace shoal {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

bool ParseName(const std::string& name, int* server, unsigned long long* step) {
  char tail[8] = {0};
  return std::sscanf(name.c_str(), "server-%d-step-%llu%7s", server, step, tail) == 3 &&
         std::string(tail) == ".ckpt" && *server >= 0 &&
         static_cast<uint64_t>(*server) < kMaxCheckpointServers;
}

// "0, 1, 5", the first 20 only: a message stays a line.
std::string Join(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < 20; ++i) out += (out.empty() ? "" : ", ") + std::to_string(ids[i]);
  if (ids.size() > 20) out += " and " + std::to_string(ids.size() - 20) + " more";
  return out;
}

CheckpointInfo ReadInfo(const std::string& path, int server, uint64_t step) {
  CheckpointInfo info;
  info.path = path;
  info.server = server;
  info.step = step;
  std::error_code ec;
  info.bytes = fs::file_size(path, ec);
  json h;
  Status s = ReadCheckpointHeader(path, &h);
  if (!s.ok()) {
    info.error = s.message();
    return info;
  }
  const JsonFields f(path);
  int64_t id = 0;
  uint64_t servers = 0;
  s = f.Int(h, "", "server", -1, kMaxCheckpointServers - 1, &id);
  if (s.ok()) s = f.Unsigned(h, "", "step", UINT64_MAX, &info.step);
  if (s.ok()) s = f.Unsigned(h, "", "updates", UINT64_MAX, &info.updates);
  if (s.ok() && h.contains("servers")) s = f.Unsigned(h, "", "servers", kMaxCheckpointServers, &servers);
  if (s.ok()) s = f.String(h, "", "plan_hash", &info.plan_hash, 64);
  info.server = static_cast<int>(id);
  info.servers = static_cast<int>(servers);
  info.metric = h.value("metric", json());
  if (!s.ok()) info.error = s.message();
  if (info.error.empty() && (info.server != server || info.step != step))
    info.error = "'" + path + "': header says server " + std::to_string(info.server) + ", step " +
                 std::to_string(info.step) + ", not what the name says";
  return info;
}

}  // namespace

std::string StepSet::WhyIncomplete() const {
  std::vector<std::string> why = problems;
  if (!missing.empty())
    why.push_back("missing server" + std::string(missing.size() > 1 ? "s " : " ") + Join(missing));
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

Status ScanCheckpointDir(const std::string& dir, CheckpointDir* out) {
  *out = CheckpointDir();
  out->dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::InvalidArgument("'" + dir + "' is not a directory");
  std::map<uint64_t, StepSet> steps;
  std::set<int> ids;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    int server;
    unsigned long long step;
    const std::string name = entry.path().filename().string();
    if (IsUnfinishedCheckpoint(name)) out->temporary.push_back(entry.path().string());
    if (!ParseName(name, &server, &step)) continue;
    CheckpointInfo info = ReadInfo(entry.path().string(), server, step);
    ids.insert(server);
    out->servers = std::max(out->servers, info.servers);
    StepSet& set = steps[step];
    set.step = step;
    if (!info.error.empty())
      set.problems.push_back(info.error);
    else if (set.metric.is_null())
      set.metric = info.metric;
    set.files.push_back(std::move(info));
  }
  if (ec) return Status::IOError("cannot list '" + dir + "': " + ec.message());
  std::sort(out->temporary.begin(), out->temporary.end());
  out->servers_known = out->servers > 0;
  if (!out->servers_known) out->servers = ids.empty() ? 0 : *ids.rbegin() + 1;
  for (auto& [step, set] : steps) {
    std::sort(set.files.begin(), set.files.end(),
              [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.server < b.server; });
    std::set<std::string> plans;
    std::set<int> have;
    for (const auto& f : set.files) {
      if (f.error.empty()) plans.insert(f.plan_hash);
      have.insert(f.server);
    }
    if (plans.size() > 1)
      set.problems.push_back("files of " + std::to_string(plans.size()) + " different plans");
    for (int id = 0; id < out->servers; ++id)
      if (!have.count(id)) set.missing.push_back(id);
    out->steps.push_back(std::move(set));
  }
  return Status::Ok();
}

json CheckpointDirToJson(const CheckpointDir& scan) {
  json checkpoints = json::array(), steps = json::array();
  for (const auto& set : scan.steps) {
    json servers = json::array();
    for (const auto& f : set.files) {
      json c = {{"path", f.path},       {"server", f.server}, {"step", f.step},
                {"updates", f.updates}, {"metric", f.metric}, {"bytes", f.bytes}};
      if (!f.error.empty()) c["error"] = f.error;
      checkpoints.push_back(c);
      servers.push_back(f.server);
    }
    json s = {{"step", set.step}, {"servers", servers}, {"complete", set.complete()}, {"metric", set.metric}};
    if (!set.complete()) s["why"] = set.WhyIncomplete();
    steps.push_back(s);
  }
  return {{"dir", scan.dir},
          {"servers", scan.servers},
          {"servers_known", scan.servers_known},
          {"checkpoints", checkpoints},
          {"steps", steps},
          {"temporary", scan.temporary}};
}

Status ResolveCheckpointSet(const std::vector<std::string>& paths, int64_t step,
                            std::vector<std::string>* files) {
  files->clear();
  if (paths.empty()) return Status::InvalidArgument("no checkpoint named");
  std::error_code ec;
  if (paths.size() == 1 && fs::is_directory(paths[0], ec)) {
    CheckpointDir scan;
    SHOAL_RETURN_IF_ERROR(ScanCheckpointDir(paths[0], &scan));
    if (scan.steps.empty()) return Status::InvalidArgument("no checkpoint in '" + paths[0] + "'");
    const StepSet* chosen = nullptr;
    for (auto it = scan.steps.rbegin(); it != scan.steps.rend(); ++it) {
      if (step >= 0 && it->step != static_cast<uint64_t>(step)) continue;
      if (step >= 0 && !it->complete())
        return Status::InvalidArgument("'" + paths[0] + "': step " + std::to_string(step) +
                                       " is not complete: " + it->WhyIncomplete());
      if (it->complete()) {
        chosen = &*it;
        break;
      }
    }
    if (!chosen && step >= 0)
      return Status::InvalidArgument("'" + paths[0] + "' has no checkpoint at step " + std::to_string(step));
    if (!chosen) {
      const StepSet& newest = scan.steps.back();
      return Status::InvalidArgument("'" + paths[0] +
                                     "' has no complete set of server checkpoints (newest, step " +
                                     std::to_string(newest.step) + ": " + newest.WhyIncomplete() + ")");
    }
    for (const auto& f : chosen->files) files->push_back(f.path);
    return Status::Ok();
  }
  for (const auto& p : paths) {
    if (fs::is_directory(p, ec))
      return Status::InvalidArgument("'" + p + "' is a directory: name one directory, or checkpoint files");
    files->push_back(p);
  }
  return Status::Ok();
}

namespace {

// The parts must be one step of one plan, each server once, none missing;
// `servers` gets the plan's count.
Status CheckOneSet(const std::vector<std::string>& files, const std::vector<Checkpoint>& parts,
                   int* servers) {
  const Checkpoint& first = parts[0];
  std::map<int, std::string> by_server;
  *servers = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Checkpoint& c = parts[i];
    if (c.server < 0)
      return Status::InvalidArgument("'" + files[i] +
                                     "' is a merged checkpoint: it cannot be merged with others");
    if (c.plan_hash != first.plan_hash)
      return Status::InvalidArgument("'" + files[i] + "' is of plan " + c.plan_hash + ", '" + files[0] +
                                     "' of plan " + first.plan_hash);
    if (c.step != first.step)
      return Status::InvalidArgument("'" + files[i] + "' is at step " + std::to_string(c.step) + ", '" +
                                     files[0] + "' at step " + std::to_string(first.step));
    auto [it, fresh] = by_server.emplace(c.server, files[i]);
    if (!fresh)
      return Status::InvalidArgument("server " + std::to_string(c.server) + " twice: '" + it->second +
                                     "' and '" + files[i] + "'");
    *servers = std::max(*servers, c.servers);
  }
  std::vector<int> missing;
  for (int id = 0; id < *servers; ++id)
    if (!by_server.count(id)) missing.push_back(id);
  if (!missing.empty())
    return Status::InvalidArgument("step " + std::to_string(first.step) + " is incomplete: missing server" +
                                   (missing.size() > 1 ? "s " : " ") + Join(missing) + " (of " +
                                   std::to_string(*servers) + ")");
  return Status::Ok();
}

// A whole tensor, (param, role), and the slices of it the files hold.
struct Whole {
  const CheckpointTensor* first = nullptr;
  uint64_t size = 0;
  uint32_t key = UINT32_MAX;
  std::vector<const CheckpointTensor*> pieces;
};
using Wholes = std::map<std::pair<std::string, std::string>, Whole>;

// Groups the parts' tensors by (param, role); Corruption where one
// parameter has two shapes.
Status GatherWholes(const std::vector<std::string>& files, const std::vector<Checkpoint>& parts,
                    Wholes* wholes) {
  for (size_t i = 0; i < parts.size(); ++i) {
    for (const auto& t : parts[i].tensors) {
      Whole& w = (*wholes)[{t.param, t.role}];
      if (!w.first) {
        w.first = &t;
        w.size = 1;
        for (int d : t.shape) w.size *= static_cast<uint64_t>(d);  // ReadCheckpoint bounds them
      } else if (w.first->shape != t.shape) {
        return Status::Corruption("'" + files[i] + "': tensor '" + t.name + "': parameter '" + t.param +
                                  "' has another shape in another file");
      }
      w.key = std::min(w.key, t.key);
      w.pieces.push_back(&t);
    }
  }
  return Status::Ok();
}

// The pieces must cover each whole exactly once before a float of it is
// allocated: a whole is paid for by the pieces' own data.
Status CheckCoverage(Wholes* wholes) {
  for (auto& [id, w] : *wholes) {
    std::sort(w.pieces.begin(), w.pieces.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    const std::string what = "parameter '" + id.first + "' (" + id.second + ")";
    uint64_t covered = 0;
    for (const CheckpointTensor* t : w.pieces) {
      if (t->offset > covered)
        return Status::InvalidArgument(what + ": floats " + std::to_string(covered) + ".." +
                                       std::to_string(t->offset) +
                                       " are in none of the files (a server missing?)");
      if (t->offset < covered)
        return Status::Corruption(what + ": floats " + std::to_string(t->offset) + ".." +
                                  std::to_string(covered) + " are in more than one slice");
      covered = t->offset + t->data.size();
    }
    if (covered < w.size)
      return Status::InvalidArgument(what + ": floats " + std::to_string(covered) + ".." +
                                     std::to_string(w.size) +
                                     " are in none of the files (a server missing?)");
  }
  return Status::Ok();
}

// The whole tensors, in the plan's order (slice keys follow it), each value before its state.
std::vector<CheckpointTensor> Assemble(const Wholes& wholes) {
  std::vector<CheckpointTensor> out;
  for (const auto& [id, w] : wholes) {
    CheckpointTensor whole{id.second == "value" ? id.first : id.first + "@" + id.second,
                           id.first,
                           id.second,
                           w.key,
                           0,
                           w.first->shape,
                           std::vector<float>(w.size)};
    for (const CheckpointTensor* t : w.pieces)
      std::copy(t->data.begin(), t->data.end(), whole.data.begin() + t->offset);
    out.push_back(std::move(whole));
  }
  std::stable_sort(out.begin(), out.end(), [](const CheckpointTensor& a, const CheckpointTensor& b) {
    return a.key != b.key ? a.key < b.key : a.role == "value" && b.role != "value";
  });
  return out;
}

}  // namespace

Status MergeCheckpoints(const std::vector<std::string>& files, Checkpoint* merged) {
  if (files.empty()) return Status::InvalidArgument("no checkpoint files to merge");
  std::vector<Checkpoint> parts(files.size());
  for (size_t i = 0; i < files.size(); ++i) SHOAL_RETURN_IF_ERROR(ReadCheckpoint(files[i], &parts[i]));
  if (parts.size() == 1 && parts[0].server == -1) {
    *merged = std::move(parts[0]);
    return Status::Ok();
  }
  int servers = 0;
  SHOAL_RETURN_IF_ERROR(CheckOneSet(files, parts, &servers));
  Wholes wholes;
  SHOAL_RETURN_IF_ERROR(GatherWholes(files, parts, &wholes));
  SHOAL_RETURN_IF_ERROR(CheckCoverage(&wholes));
  *merged = Checkpoint();
  merged->plan_hash = parts[0].plan_hash;
  merged->server = -1;
  merged->servers = servers;
  merged->step = parts[0].step;
  for (const auto& c : parts) {
    merged->updates = std::max(merged->updates, c.updates);
    if (merged->metric.is_null()) merged->metric = c.metric;
  }
  merged->tensors = Assemble(wholes);
  return Status::Ok();
}

Status LoadModel(const std::vector<std::string>& paths, int64_t step, Checkpoint* merged,
                 std::vector<std::string>* files) {
  SHOAL_RETURN_IF_ERROR(ResolveCheckpointSet(paths, step, files));
  SHOAL_RETURN_IF_ERROR(MergeCheckpoints(*files, merged));
  if (step >= 0 && merged->step != static_cast<uint64_t>(step))
    return Status::InvalidArgument("'" + files->front() + "' is at step " + std::to_string(merged->step) +
                                   ", not " + std::to_string(step));
  return Status::Ok();
}

Status BestStep(const CheckpointDir& scan, const StepSet** best) {
  *best = nullptr;
  double best_score = 0.0;
  for (const auto& set : scan.steps) {  // oldest first: ">=" makes ties go to the newest
    if (!set.complete() || !set.metric.is_object()) continue;
    // A classifier's accuracy; a model without classes records its loss only.
    auto it = set.metric.find("test_accuracy");
    const bool accuracy = it != set.metric.end();
    if (!accuracy) it = set.metric.find("test_loss");
    if (it == set.metric.end() || !it->is_number()) continue;
    const double score = accuracy ? it->get<double>() : -it->get<double>();
    if (!*best || score >= best_score) {
      *best = &set;
      best_score = score;
    }
  }
  if (!*best)
    return Status::InvalidArgument(
        "no complete set of checkpoints in '" + scan.dir +
        "' records a metric (test_accuracy, or test_loss): the workers did not evaluate "
        "(train.eval_every) before those checkpoints");
  return Status::Ok();
}

Status PrepareResume(const std::string& dir, const std::string& resume_dir, int64_t step,
                     ResumeChoice* choice) {
  *choice = ResumeChoice();
  std::error_code ec;
  if (fs::exists(resume_dir, ec) && fs::equivalent(dir, resume_dir, ec))
    return Status::InvalidArgument("the resume directory '" + resume_dir +
                                   "' is the checkpoint directory itself");
  CheckpointDir scan;
  SHOAL_RETURN_IF_ERROR(ScanCheckpointDir(dir, &scan));
  if (scan.steps.empty()) return Status::InvalidArgument("no checkpoint in '" + dir + "'");
  for (auto it = scan.steps.rbegin(); it != scan.steps.rend(); ++it) {
    if (step >= 0 && it->step != static_cast<uint64_t>(step)) continue;
    if (!it->complete()) {
      choice->skipped.push_back({{"step", it->step}, {"reason", it->WhyIncomplete()}});
      continue;
    }
    // Verify every file of the set in full; keep the bytes we verified.
    std::vector<std::string> contents;
    std::string bad_path, bad_reason;
    for (const auto& f : it->files) {
      Checkpoint ckpt;
      Status s = ReadCheckpoint(f.path, &ckpt);
      std::string bytes;
      if (s.ok()) s = ReadFile(f.path, &bytes);
      if (!s.ok()) {
        bad_path = f.path;
        bad_reason = s.message();
        break;
      }
      contents.push_back(std::move(bytes));
    }
    if (!bad_path.empty()) {
      choice->skipped.push_back({{"step", it->step}, {"path", bad_path}, {"reason", bad_reason}});
      continue;
    }
    fs::create_directories(resume_dir, ec);
    if (ec) return Status::IOError("cannot create '" + resume_dir + "': " + ec.message());
    for (size_t i = 0; i < it->files.size(); ++i) {
      std::string out = CheckpointPath(resume_dir, it->files[i].server, it->step);
      SHOAL_RETURN_IF_ERROR(WriteFileAtomic(out, contents[i]));
      choice->files.push_back(out);
    }
    // Exactly one file per server: drop other steps' checkpoints left from before.
    for (const auto& entry : fs::directory_iterator(resume_dir, ec)) {
      int server;
      unsigned long long s;
      if (ParseName(entry.path().filename().string(), &server, &s) && s != it->step)
        fs::remove(entry.path(), ec);
    }
    choice->step = it->step;
    return Status::Ok();
  }
  if (step >= 0 && choice->skipped.empty())
    return Status::InvalidArgument("'" + dir + "' has no checkpoint at step " + std::to_string(step));
  std::string why;
  for (const auto& s : choice->skipped) {
    why += (why.empty() ? "" : "; ") + std::string("step ") + std::to_string(s["step"].get<uint64_t>()) +
           ": " + s["reason"].get<std::string>();
  }
  return Status::Corruption("'" + dir + "' has no step at which every server's checkpoint verifies (" + why +
                            ")");
}

}  // namespace shoal

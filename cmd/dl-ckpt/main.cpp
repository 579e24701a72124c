// dl-ckpt: look into the checkpoints a run wrote. Output is JSON.
#include "parse_command_line.h"
#include <filesystem>

#include "ckpt/checkpoint.h"
#include "ckpt/compare.h"
#include "core/exit_codes.h"

namespace {

using namespace shoal;

// A path names a checkpoint file, or a directory: its newest checkpoint per server.
Status Resolve(const std::string& path, std::vector<std::string>* files) {
  if (!std::filesystem::is_directory(path)) {
    files->push_back(path);
    return Status::Ok();
  }
  std::vector<std::string> latest = LatestCheckpoints(path);
  if (latest.empty()) return Status::InvalidArgument("no checkpoint in '" + path + "'");
  files->insert(files->end(), latest.begin(), latest.end());
  return Status::Ok();
}

int Print(const nlohmann::json& j) {
  if (std::printf("%s\n", j.dump(2).c_str()) < 0 || std::fflush(stdout) != 0)
    return ReportFailure("dl-ckpt", Status::IOError("cannot write to standard output"));
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dl-ckpt: inspect, verify and compare checkpoints"};
  app.require_subcommand(1);
  std::vector<std::string> paths;
  std::string a, b;
  auto* inspect = app.add_subcommand("inspect", "tensors, shapes, norms, step (JSON)");
  inspect->add_option("paths", paths, "checkpoint files or directories")->required();
  auto* verify = app.add_subcommand("verify", "check every checksum; exit 1 naming the bad tensor");
  verify->add_option("paths", paths, "checkpoint files or directories")->required();
  auto* diff = app.add_subcommand("diff", "per-tensor max absolute and relative difference (JSON)");
  diff->add_option("a", a, "checkpoint file")->required();
  diff->add_option("b", b, "checkpoint file")->required();
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);

  if (*diff) {
    Checkpoint ca, cb;
    Status s = ReadCheckpoint(a, &ca);
    if (s.ok()) s = ReadCheckpoint(b, &cb);
    if (!s.ok()) return ReportFailure("dl-ckpt", s);
    return Print(DiffCheckpoints(ca, cb));
  }
  std::vector<std::string> files;
  for (const auto& p : paths) {
    Status s = Resolve(p, &files);
    if (!s.ok()) return ReportFailure("dl-ckpt", s);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : files) {
    Checkpoint ckpt;
    Status s = ReadCheckpoint(f, &ckpt);
    if (!s.ok()) return ReportFailure("dl-ckpt", s);
    if (*inspect) out.push_back(SummarizeCheckpoint(f, ckpt));
    else out.push_back({{"path", f}, {"ok", true}, {"step", ckpt.step}, {"tensors", ckpt.tensors.size()}});
  }
  return Print(out);
}

// dl-ckpt: look into and take out what a run's checkpoints hold.
// Output is JSON on stdout; a table when stdout is a terminal or with --table
// (--json forces JSON). Warnings and errors go to stderr.
#include <filesystem>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_set.h"
#include "ckpt/compare.h"
#include "ckpt/export.h"
#include "core/exit_codes.h"
#include "core/output.h"
#include "tool_main.h"

namespace {

using namespace shoal;

bool g_table = false;

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
  Output out(g_table);
  out.Result(j);
  return out.status().ok() ? kExitOk : ReportFailure(out.status());
}

int Fail(const Status& s) { return ReportFailure(s); }

int InspectOrVerify(const std::vector<std::string>& paths, bool inspect) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    Status s = Resolve(p, &files);
    if (!s.ok()) return Fail(s);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : files) {
    Checkpoint ckpt;
    Status s = ReadCheckpoint(f, &ckpt);
    if (!s.ok()) return Fail(s);
    if (inspect)
      out.push_back(SummarizeCheckpoint(f, ckpt));
    else
      out.push_back({{"path", f}, {"ok", true}, {"step", ckpt.step}, {"tensors", ckpt.tensors.size()}});
  }
  return Print(out);
}

int Main(int argc, char** argv) {
  SetLogName("dl-ckpt");
  CLI::App app{"dl-ckpt: inspect, verify, compare, merge and export checkpoints"};
  app.require_subcommand(1);
  app.fallthrough();
  bool table = false, json = false;
  app.add_flag("--table", table, "print a table for people (the default when stdout is a terminal)");
  app.add_flag("--json", json, "print JSON (the default when stdout is not a terminal)")->excludes("--table");
  std::vector<std::string> paths;
  std::string a, b, dir, out, format;
  int64_t step = -1;
  bool with_state = false;

  // What dl-ckpt writes is binary and written atomically: a file, never standard output.
  const CLI::Validator a_file(
      [](std::string& path) { return path == "-" ? "'-' (standard output) is not a path here" : ""; },
      "PATH");
  auto* ls =
      app.add_subcommand("ls", "every checkpoint in DIR: server, step, updates, metric, size; complete sets");
  ls->add_option("dir", dir, "checkpoint directory")->required();
  auto* inspect = app.add_subcommand("inspect", "tensors, shapes, norms, step, metric");
  inspect->add_option("paths", paths, "checkpoint files or directories")->required();
  auto* verify = app.add_subcommand("verify", "check every checksum; exit 1 naming the bad tensor and bytes");
  verify->add_option("paths", paths, "checkpoint files or directories")->required();
  auto* diff = app.add_subcommand("diff", "per-tensor max absolute and relative difference");
  diff->add_option("a", a, "checkpoint file")->required();
  diff->add_option("b", b, "checkpoint file")->required();
  auto* merge = app.add_subcommand("merge", "one step's server files into one file of whole parameters");
  merge->add_option("paths", paths, "a checkpoint directory, or one step's server files")->required();
  merge->add_option("-o,--out", out, "merged checkpoint to write")->required()->check(a_file);
  merge->add_option("--step", step, "this step (default: the newest every server has)")
      ->check(CLI::NonNegativeNumber);
  auto* exp =
      app.add_subcommand("export", "parameter values as .npz or .safetensors (float32, by parameter name)");
  exp->add_option("paths", paths, "a checkpoint directory, one step's server files, or a merged file")
      ->required();
  exp->add_option("-o,--out", out, "file to write (.npz or .safetensors)")->required()->check(a_file);
  exp->add_option("--format", format, "npz | safetensors (default: from the file name)")
      ->check(CLI::IsMember({"npz", "safetensors"}));
  exp->add_option("--step", step, "with a directory: this step (default: the newest complete)")
      ->check(CLI::NonNegativeNumber);
  // --with-velocity: its name from when momentum's velocity was the only state.
  exp->add_flag("--with-state,--with-velocity", with_state,
                "also the updater's state (\"<param>@velocity\", \"<param>@exp_avg\", ...)");
  auto* best = app.add_subcommand("best", "the complete set of checkpoints with the highest test accuracy");
  best->add_option("dir", dir, "checkpoint directory")->required();
  auto* resume = app.add_subcommand(
      "prepare-resume",
      "copy the newest step every server has a verified checkpoint of into a resume directory");
  resume->add_option("dir", dir, "checkpoint directory")->required();
  resume->add_option("-o,--out", out, "resume directory for dl-server --resume")->required()->check(a_file);
  resume->add_option("--step", step, "this step (default: the newest that verifies)")
      ->check(CLI::NonNegativeNumber);
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  g_table = table || (!json && StdoutIsTerminal());

  if (*inspect || *verify) return InspectOrVerify(paths, static_cast<bool>(*inspect));
  if (*diff) {
    Checkpoint ca, cb;
    Status s = ReadCheckpoint(a, &ca);
    if (s.ok()) s = ReadCheckpoint(b, &cb);
    return s.ok() ? Print(DiffCheckpoints(ca, cb)) : Fail(s);
  }
  if (*ls) {
    CheckpointDir scan;
    Status s = ScanCheckpointDir(dir, &scan);
    return s.ok() ? Print(CheckpointDirToJson(scan)) : Fail(s);
  }
  if (*merge || *exp) {
    Checkpoint merged;
    std::vector<std::string> files;
    Status s = LoadModel(paths, step, &merged, &files);
    nlohmann::json report;
    if (s.ok() && *merge) {
      s = WriteCheckpoint(out, merged);
      report = {{"path", out},
                {"step", merged.step},
                {"plan_hash", merged.plan_hash},
                {"tensors", merged.tensors.size()}};
    } else if (s.ok()) {
      ExportFormat f;
      s = ChooseExportFormat(format, out, &f);
      if (s.ok()) s = ExportCheckpoint(merged, out, f, with_state, &report);
    }
    if (!s.ok()) return Fail(s);
    report["from"] = files;
    return Print(report);
  }
  if (*best) {
    CheckpointDir scan;
    const StepSet* set = nullptr;
    Status s = ScanCheckpointDir(dir, &scan);
    if (s.ok()) s = BestStep(scan, &set);
    if (!s.ok()) return Fail(s);
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : set->files) files.push_back(f.path);
    return Print({{"step", set->step}, {"metric", set->metric}, {"files", files}});
  }
  ResumeChoice choice;
  Status s = PrepareResume(dir, out, step, &choice);
  for (const auto& k : choice.skipped)
    Log("warning: passing over step " + k["step"].dump() + ": " + k["reason"].get<std::string>());
  if (!s.ok()) return Fail(s);
  if (!choice.skipped.empty()) Log("falling back to step " + std::to_string(choice.step));
  return Print({{"step", choice.step}, {"files", choice.files}, {"skipped", choice.skipped}});
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }

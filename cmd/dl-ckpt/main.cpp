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

// verify DIR: every file of every step read whole. A step's set is complete
// (every server's file there and sound), incomplete (servers missing) or
// corrupt (a file that does not verify, or files of several plans); exit 1
// unless the newest set is complete.
int VerifyDir(const std::string& dir) {
  CheckpointDir scan;
  if (Status s = ScanCheckpointDir(dir, &scan); !s.ok()) return Fail(s);
  Status newest =
      scan.steps.empty() ? Status::InvalidArgument("no checkpoint in '" + dir + "'") : Status::Ok();
  nlohmann::json sets = nlohmann::json::array();
  for (auto set = scan.steps.rbegin(); set != scan.steps.rend(); ++set) {
    nlohmann::json files = nlohmann::json::array();
    Status bad;
    for (const CheckpointInfo& f : set->files) {
      Checkpoint ckpt;
      const Status s = ReadCheckpoint(f.path, &ckpt);
      files.push_back({{"path", f.path}, {"server", f.server}, {"ok", s.ok()}});
      if (!s.ok()) files.back()["error"] = s.message();
      if (!s.ok() && bad.ok()) bad = s;
    }
    const char* state = !bad.ok() || !set->problems.empty() ? "corrupt"
                        : set->missing.empty()              ? "complete"
                                                            : "incomplete";
    sets.push_back({{"step", set->step}, {"state", state}, {"files", files}});
    if (!set->missing.empty()) sets.back()["missing_servers"] = set->missing;
    if (!set->problems.empty()) sets.back()["problems"] = set->problems;
    if (set == scan.steps.rbegin() && std::string(state) != "complete")
      newest =
          Status::Corruption("the newest step, " + std::to_string(set->step) +
                             ", is not a complete set: " + (bad.ok() ? set->WhyIncomplete() : bad.message()));
  }
  const int printed =
      Print({{"dir", dir}, {"servers", scan.servers}, {"sets", sets}, {"temporary", scan.temporary}});
  return newest.ok() ? printed : Fail(newest);
}

// Everything the command line sets, and which subcommand it chose.
struct Flags {
  bool table = false, json = false;
  std::vector<std::string> paths;
  std::string a, b, dir, out, format;
  int64_t step = -1;
  bool with_state = false;
  CLI::App *ls, *inspect, *verify, *diff, *merge, *exp, *best, *resume;
};

void AddOptions(CLI::App& app, Flags* f) {
  app.require_subcommand(1);
  app.fallthrough();
  app.add_flag("--table", f->table, "print a table for people (the default when stdout is a terminal)");
  app.add_flag("--json", f->json, "print JSON (the default when stdout is not a terminal)")
      ->excludes("--table");
  // What dl-ckpt writes is binary and written atomically: a file, never standard output.
  const CLI::Validator a_file(
      [](std::string& path) { return path == "-" ? "'-' (standard output) is not a path here" : ""; },
      "PATH");
  f->ls =
      app.add_subcommand("ls", "every checkpoint in DIR: server, step, updates, metric, size; complete sets");
  f->ls->add_option("dir", f->dir, "checkpoint directory")->required();
  f->inspect = app.add_subcommand("inspect", "tensors, shapes, norms, step, metric");
  f->inspect->add_option("paths", f->paths, "checkpoint files or directories")->required();
  f->verify = app.add_subcommand("verify",
                                 "check every checksum; exit 1 naming the bad tensor and bytes (a directory: "
                                 "every step's set, exit 1 unless the newest is complete)");
  f->verify->add_option("paths", f->paths, "checkpoint files or directories")->required();
  f->diff = app.add_subcommand("diff", "per-tensor max absolute and relative difference");
  f->diff->add_option("a", f->a, "checkpoint file")->required();
  f->diff->add_option("b", f->b, "checkpoint file")->required();
  f->merge = app.add_subcommand("merge", "one step's server files into one file of whole parameters");
  f->merge->add_option("paths", f->paths, "a checkpoint directory, or one step's server files")->required();
  f->merge->add_option("-o,--out", f->out, "merged checkpoint to write")->required()->check(a_file);
  f->merge->add_option("--step", f->step, "this step (default: the newest every server has)")
      ->check(NotNegative());
  f->exp =
      app.add_subcommand("export", "parameter values as .npz or .safetensors (float32, by parameter name)");
  f->exp->add_option("paths", f->paths, "a checkpoint directory, one step's server files, or a merged file")
      ->required();
  f->exp->add_option("-o,--out", f->out, "file to write (.npz or .safetensors)")->required()->check(a_file);
  f->exp->add_option("--format", f->format, "npz | safetensors (default: from the file name)")
      ->check(CLI::IsMember({"npz", "safetensors"}));
  f->exp->add_option("--step", f->step, "with a directory: this step (default: the newest complete)")
      ->check(NotNegative());
  // --with-velocity: its name from when momentum's velocity was the only state.
  f->exp->add_flag("--with-state,--with-velocity", f->with_state,
                   "also the updater's state (\"<param>@velocity\", \"<param>@exp_avg\", ...)");
  f->best = app.add_subcommand("best", "the complete set of checkpoints with the highest test accuracy");
  f->best->add_option("dir", f->dir, "checkpoint directory")->required();
  f->resume = app.add_subcommand(
      "prepare-resume",
      "copy the newest step every server has a verified checkpoint of into a resume directory");
  f->resume->add_option("dir", f->dir, "checkpoint directory")->required();
  f->resume->add_option("-o,--out", f->out, "resume directory for dl-server --resume")
      ->required()
      ->check(a_file);
  f->resume->add_option("--step", f->step, "this step (default: the newest that verifies)")
      ->check(NotNegative());
}

int Diff(const Flags& f) {
  Checkpoint ca, cb;
  Status s = ReadCheckpoint(f.a, &ca);
  if (s.ok()) s = ReadCheckpoint(f.b, &cb);
  return s.ok() ? Print(DiffCheckpoints(ca, cb)) : Fail(s);
}

int List(const Flags& f) {
  CheckpointDir scan;
  Status s = ScanCheckpointDir(f.dir, &scan);
  return s.ok() ? Print(CheckpointDirToJson(scan)) : Fail(s);
}

// Where merge or export may write `out`: not over a file it read, and not
// into a directory of checkpoints it read (one given, or one holding a
// server file it read, for a .ckpt), where the file would join the sets that
// servers resume from and `verify` checks.
Status CheckOutput(const std::string& out, const std::vector<std::string>& paths,
                   const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path where = fs::absolute(out, ec).parent_path();
  auto same = [](const fs::path& a, const fs::path& b) {
    std::error_code e;
    return fs::equivalent(a, b, e);
  };
  for (const std::string& file : files)
    if (same(out, file))
      return Status::InvalidArgument("--out '" + out + "' is '" + file +
                                     "', which it reads: write elsewhere");
  for (const std::string& path : paths)
    if (fs::is_directory(path, ec) && same(where, path))
      return Status::InvalidArgument("--out '" + out + "' lies in the checkpoint directory '" + path +
                                     "': write elsewhere");
  if (fs::path(out).extension() == ".ckpt")
    for (const std::string& file : files)
      if (same(where, fs::absolute(file, ec).parent_path()))
        return Status::InvalidArgument("--out '" + out + "' lies beside the checkpoint '" + file +
                                       "', where it would join its sets: write elsewhere");
  return Status::Ok();
}

// merge, or export: one step's whole parameters, written as a checkpoint or in another format.
int MergeOrExport(const Flags& f, bool merge) {
  Checkpoint merged;
  std::vector<std::string> files;
  Status s = LoadModel(f.paths, f.step, &merged, &files);
  if (s.ok()) s = CheckOutput(f.out, f.paths, files);
  nlohmann::json report;
  if (s.ok() && merge) {
    s = WriteCheckpoint(f.out, merged);
    report = {{"path", f.out},
              {"step", merged.step},
              {"plan_hash", merged.plan_hash},
              {"tensors", merged.tensors.size()}};
  } else if (s.ok()) {
    ExportFormat format;
    s = ChooseExportFormat(f.format, f.out, &format);
    if (s.ok()) s = ExportCheckpoint(merged, f.out, format, f.with_state, &report);
  }
  if (!s.ok()) return Fail(s);
  report["from"] = files;
  return Print(report);
}

int Best(const Flags& f) {
  CheckpointDir scan;
  const StepSet* set = nullptr;
  Status s = ScanCheckpointDir(f.dir, &scan);
  if (s.ok()) s = BestStep(scan, &set);
  if (!s.ok()) return Fail(s);
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : set->files) files.push_back(file.path);
  return Print({{"step", set->step}, {"metric", set->metric}, {"files", files}});
}

int Resume(const Flags& f) {
  ResumeChoice choice;
  Status s = PrepareResume(f.dir, f.out, f.step, &choice);
  for (const auto& k : choice.skipped)
    Log("warning: passing over step " + k["step"].dump() + ": " + k["reason"].get<std::string>());
  if (!s.ok()) return Fail(s);
  if (!choice.skipped.empty()) Log("falling back to step " + std::to_string(choice.step));
  return Print({{"step", choice.step}, {"files", choice.files}, {"skipped", choice.skipped}});
}

int Main(int argc, char** argv) {
  SetLogName("dl-ckpt");
  CLI::App app{"dl-ckpt: inspect, verify, compare, merge and export checkpoints"};
  Flags f;
  AddOptions(app, &f);
  SHOAL_PARSE_COMMAND_LINE(app, argc, argv);
  g_table = f.table || (!f.json && StdoutIsTerminal());
  std::error_code ec;
  if (*f.verify && f.paths.size() == 1 && std::filesystem::is_directory(f.paths[0], ec))
    return VerifyDir(f.paths[0]);
  if (*f.inspect || *f.verify) return InspectOrVerify(f.paths, static_cast<bool>(*f.inspect));
  if (*f.diff) return Diff(f);
  if (*f.ls) return List(f);
  if (*f.merge || *f.exp) return MergeOrExport(f, static_cast<bool>(*f.merge));
  if (*f.best) return Best(f);
  return Resume(f);
}

}  // namespace

int main(int argc, char** argv) { return shoal::GuardedMain(Main, argc, argv); }

// The checkpoints a run wrote, taken as sets: every server writes its own
// slices at a step, so a model at step S is the set of all servers' files at
// S. Listing a directory, choosing a step (newest complete, best metric, the
// newest that verifies for a resume) and merging a set into whole parameters.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/status.h"

namespace shoal {

// One checkpoint file, as its header describes it (tensors not read).
struct CheckpointInfo {
  std::string path;
  int server = 0;
  uint64_t step = 0;
  uint64_t updates = 0;
  int servers = 0;  // servers in the plan; 0: unknown
  std::string plan_hash;
  nlohmann::json metric;  // null: none recorded
  uint64_t bytes = 0;
  std::string error;  // the header could not be read (server and step then come from the name)
};

// The files of one step, by server id.
struct StepSet {
  uint64_t step = 0;
  std::vector<CheckpointInfo> files;
  std::vector<int> missing;           // server ids without a file at this step
  std::vector<std::string> problems;  // unreadable headers, mixed plans
  nlohmann::json metric;              // the first recorded among the files; null: none
  bool complete() const { return missing.empty() && problems.empty() && !files.empty(); }
  // "missing server 1", "'f.ckpt': ..." — why the set is not complete.
  std::string WhyIncomplete() const;
};

struct CheckpointDir {
  std::string dir;
  int servers = 0;             // from the headers, else the distinct server ids seen
  bool servers_known = false;  // whether a header recorded the count
  std::vector<StepSet> steps;  // oldest first
  // Temporary files of writes that never finished ("<name>.ckpt.tmp.*").
  std::vector<std::string> temporary;
};

// Reads the header of every "server-<id>-step-<step>.ckpt" in `dir`. A file
// whose header is unreadable is listed (with its error), not fatal.
// Returns InvalidArgument when `dir` is not a directory and IOError when it
// cannot be listed; *out may hold part of the listing then.
Status ScanCheckpointDir(const std::string& dir, CheckpointDir* out);
nlohmann::json CheckpointDirToJson(const CheckpointDir& scan);

// What a user names as "a model": one directory (its newest complete step, or
// `step` when >= 0), or checkpoint files of one step (a set, or a merged file).
// Returns InvalidArgument when no paths are given, a directory has no
// complete set (at `step`), or a directory is named among files, and IOError
// for a directory that cannot be listed. Files named are not opened here.
// *files may be part-filled on error.
Status ResolveCheckpointSet(const std::vector<std::string>& paths, int64_t step,
                            std::vector<std::string>* files);

// Reads `files` (every checksum verified) and joins the servers' slices into
// whole parameters (value and the updater's state), server = -1. Refuses mixed plans or
// steps, a server twice, missing servers and uncovered parameter ranges.
// A single merged file is returned as it is. Returns ReadCheckpoint's
// error for a file, InvalidArgument for a set that does not make one model,
// and Corruption for a parameter with two shapes or a range in two slices.
// *merged is unchanged on error.
Status MergeCheckpoints(const std::vector<std::string>& files, Checkpoint* merged);

// ResolveCheckpointSet + MergeCheckpoints, and their errors. InvalidArgument
// when the files are at another step than `step`; *merged holds them then.
Status LoadModel(const std::vector<std::string>& paths, int64_t step, Checkpoint* merged,
                 std::vector<std::string>* files);

// The complete set with the highest metric test_accuracy, or for a model
// that does not classify the lowest test_loss (ties: the newest).
// InvalidArgument, *best null, when no complete set records either.
Status BestStep(const CheckpointDir& scan, const StepSet** best);

struct ResumeChoice {
  uint64_t step = 0;
  std::vector<std::string> files;                    // written into the resume directory
  nlohmann::json skipped = nlohmann::json::array();  // {step, path?, reason} passed over, newest first
};

// Picks the newest step (or `step` when >= 0) at which every server has a
// checkpoint that verifies, and copies those files into `resume_dir`
// (atomically, one per server, named CheckpointPath(resume_dir, id, step)),
// removing other checkpoints there. `dl-server --resume resume_dir` loads them.
// Returns InvalidArgument when `resume_dir` is `dir` or there is no
// checkpoint (at `step`), and Corruption, every step passed over in
// choice->skipped, when no set verifies. A directory that cannot be listed
// or made is IOError. A copy that fails returns its error, and `resume_dir`
// may then hold part of the set beside older files.
Status PrepareResume(const std::string& dir, const std::string& resume_dir, int64_t step,
                     ResumeChoice* choice);

}  // namespace shoal

// A server's checkpoints: a snapshot of its table taken under the server's
// lock (a copy in memory), then written and the old ones pruned on a thread
// of its own, so requests never wait on the disk; and the way back from a
// checkpoint (dl-server --resume). Files: lib/ckpt/checkpoint.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "ckpt/checkpoint.h"
#include "core/mutex.h"
#include "ps/table.h"

namespace shoal {

// The table as a checkpoint: every slice's value and updater state, the
// version, and per worker the step it resumes at. The values go into
// `reuse`'s tensors' buffers where they fit (Checkpointer::TakeSpare): one
// snapshot after another copies the table without fresh pages on the
// server's request path.
Checkpoint SnapshotTable(const ServerTable& table, uint64_t updates_received, const nlohmann::json& metric,
                         Checkpoint reuse = {});
// Puts a checkpoint of this server back into `table`: every slice's value
// and state exactly once, the versions and each worker's step. `path` names
// it in messages; `keeper` says what the table keeps of state.
Status RestoreTable(const Checkpoint& ckpt, const std::string& path, ServerTable* table);

// What became of the writes that failed.
struct CheckpointFailures {
  int in_a_row = 0;  // since the last write that succeeded
  uint64_t total = 0;
  Status last;           // the newest failure's reason
  bool gave_up = false;  // `in_a_row` reached the bound: no more are tried
};

class Checkpointer {
 public:
  // `dir` empty: no checkpoints. Keeps the `keep` newest by step of this
  // server's files of its plan, and its file of the newest step every server
  // has written (never touching another plan's files in `dir`). A write that
  // fails is tried again after a backoff, unless a newer snapshot replaces
  // it; after `failures_allowed` failures in a row it gives up, and writes
  // that last snapshot into `rescue_dir` instead (where another disk may
  // have room).
  Checkpointer(std::string dir, int server, int keep, int failures_allowed, std::string rescue_dir)
      : dir_(std::move(dir)),
        server_(server),
        keep_(keep),
        failures_allowed_(failures_allowed),
        rescue_dir_(std::move(rescue_dir)) {}
  ~Checkpointer() { Stop(); }
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  bool enabled() const { return !dir_.empty(); }
  // Creates the directory, removes this server's temporary files that a
  // killed write left, and starts the writing thread.
  Status Start();
  // Hands a snapshot to the thread; waits only while the one before it has
  // not been taken up yet (at most one waits, so memory stays bounded).
  // Ignored once the checkpointer has given up.
  void Write(Checkpoint snapshot);
  // The last snapshot written, to take the next one into; empty when none
  // is free. Holding it keeps one copy of the table between checkpoints
  // (none once the checkpointer has given up).
  Checkpoint TakeSpare();
  // Waits until every snapshot handed over is on disk or has failed (a
  // failed one may still be tried again); the first failure since the last
  // Flush.
  Status Flush();
  void Stop();
  // Checkpoints written so far, and the step of the newest (-1: none yet).
  uint64_t written() const;
  int64_t last_step() const;
  CheckpointFailures failures() const;

 private:
  void Loop();
  Status WriteAndPrune(const Checkpoint& ckpt);
  // Writes `ckpt` into rescue_dir_ and says where, or why not.
  void Rescue(const Checkpoint& ckpt);

  std::string dir_;
  int server_;
  int keep_;
  int failures_allowed_;
  std::string rescue_dir_;
  mutable Mutex mu_;
  CondVar changed_{&mu_};
  std::optional<Checkpoint> pending_ GUARDED_BY(mu_);
  Checkpoint spare_ GUARDED_BY(mu_);  // written; its buffers wait for the next snapshot
  bool writing_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t written_ GUARDED_BY(mu_) = 0;
  int64_t last_step_ GUARDED_BY(mu_) = -1;
  Status failure_ GUARDED_BY(mu_);  // the first since the last Flush
  CheckpointFailures failures_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace shoal

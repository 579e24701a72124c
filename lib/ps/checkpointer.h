// A server's checkpoints: a snapshot of its table taken under the server's
// lock (a copy in memory), then written and the old ones pruned on a thread
// of its own, so requests never wait on the disk; and the way back from a
// checkpoint (dl-server --resume). Files: lib/ckpt/checkpoint.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "ckpt/checkpoint.h"
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
// it in messages. Returns
// InvalidArgument naming `path` for another plan's or server's checkpoint,
// a version past the run's last, or tensors that do not match the slices.
// The table may then hold some of the checkpoint's values already.
Status RestoreTable(const Checkpoint& ckpt, const std::string& path, ServerTable* table);

// What became of the writes that failed.
struct CheckpointFailures {
  int in_a_row = 0;  // since the last write that succeeded
  uint64_t total = 0;
  Status last;           // the newest failure's reason
  bool gave_up = false;  // `in_a_row` reached the bound, or the disk is stuck: no more are tried
  bool stuck = false;    // a write has gone on past CheckpointDeadlines::write
};

// How long checkpoints may keep a server waiting on its disk.
struct CheckpointDeadlines {
  // A write still going this long after it started is stuck (the disk does
  // not answer): the checkpointer gives up at once, as no retry would end.
  std::chrono::milliseconds write = std::chrono::minutes(10);
  // The longest Write waits for the snapshot before it to be taken up, which
  // a server's request waits with it. Past it the snapshot is not written: a
  // failure, counted as a failed write is.
  std::chrono::milliseconds handover = std::chrono::seconds(30);
};

// Writes a server's checkpoints on a thread of its own and prunes the old ones.
class Checkpointer {
 public:
  // `dir` empty: no checkpoints. Keeps the `keep` newest by step of this
  // server's files of its plan, and its file of the newest step every server
  // has written (never touching another plan's files in `dir`). A write that
  // fails is tried again after a backoff, unless a newer snapshot replaces
  // it; after `failures_allowed` failures in a row it gives up, and writes
  // that last snapshot into `rescue_dir` instead (where another disk may
  // have room). A write stuck past `deadlines.write` gives up at once; each
  // snapshot handed over after it goes into `rescue_dir`. `write_file` is
  // how a snapshot reaches its file (tests: a disk that never answers).
  Checkpointer(std::string dir, int server, int keep, int failures_allowed, std::string rescue_dir,
               CheckpointDeadlines deadlines = {},
               std::function<Status(const std::string&, const Checkpoint&)> write_file = WriteCheckpoint);
  ~Checkpointer() { Stop(); }
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  bool enabled() const;
  // Creates the directory, removes this server's temporary files that a
  // killed write left, and starts the writing thread. Returns IOError
  // naming the directory when it cannot be created, and Ok at once when
  // checkpoints are off.
  Status Start();
  // Hands a snapshot to the thread; waits only while the one before it has
  // not been taken up yet (at most one waits, so memory stays bounded), and
  // at most CheckpointDeadlines::handover. Ignored once the checkpointer has
  // given up, except on a stuck disk: then written into `rescue_dir` here.
  void Write(Checkpoint snapshot);
  // The last snapshot written, to take the next one into; empty when none
  // is free. Holding it keeps one copy of the table between checkpoints
  // (none once the checkpointer has given up).
  Checkpoint TakeSpare();
  // Waits until every snapshot handed over is on disk, has failed (a failed
  // one may still be tried again) or is stuck; the first failure since the
  // last Flush, or the stuck write's.
  Status Flush();
  // Flushes and ends the writing thread. A thread stuck on the disk is left
  // to end with the process (it holds what it shares with this object).
  void Stop();
  // Checkpoints written so far, and the step of the newest (-1: none yet).
  uint64_t written() const;
  int64_t last_step() const;
  CheckpointFailures failures() const;

 private:
  struct State;  // what the writing thread shares with this object
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace shoal

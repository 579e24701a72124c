// A worker's carried state (a GRU's hidden state under carry_state: each
// row's last step, where the row's next batch begins) saved after every
// forward pass as the state the next step starts from. A worker restarted in
// the middle of a pass rejoins at the servers' step, which is the step it was
// in or the one after: with the state saved for that step it goes on exactly,
// and a kill leaves BSP's result bit for bit as without it.
//
// One file per step in the worker's state directory, "worker-W.step-S.state",
// written atomically but not synced (it survives the worker's crash, not the
// machine's): "SHOALCS1" | u64 plan hash | u64 step | u32 layers | per layer:
// u64 floats and the floats | u64 FNV-1a 64 of every byte before it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/layer.h"

namespace shoal {

// The files of one worker's carried state, one per step, in its state directory.
class CarriedStateFiles {
 public:
  // Keeps the files of the last two steps, and those of the last three steps
  // the servers checkpoint at (train.checkpoint_every; a whole run restarted
  // from a checkpoint starts at one).
  CarriedStateFiles(std::string dir, int worker, int checkpoint_every, uint64_t plan_hash);

  // Creates the directory. IOError naming it when it cannot be made.
  Status Open() const;
  // Saves `states` as those step `step` starts from, and drops files no longer kept.
  // Returns WriteFileAtomic's errors; a file that cannot be dropped is no error.
  Status Save(uint64_t step, const std::vector<CarriedState>& states) const;
  // Loads the states step `step` starts from; *found is false where no file
  // has them. A file that is not what this worker wrote is an error naming it:
  // Corruption, or ReadFile's errors. Layers before the bad one may be loaded then.
  Status Load(uint64_t step, int batch, const std::vector<CarriedState>& states, bool* found) const;

  std::string Path(uint64_t step) const;

 private:
  std::string dir_;
  int worker_;
  uint64_t checkpoint_every_;
  uint64_t plan_hash_;  // a state saved under another plan (a directory reused) is refused
};

}  // namespace shoal

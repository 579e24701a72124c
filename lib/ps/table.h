// One server's part of the parameter table: its slices (values, gradient
// sums, the updater's state), the layers they make and their versions, and
// per worker how far each layer has taken in its updates. It knows nothing
// of requests or of consistency: lib/ps/consistency.h decides when its
// gradients are applied and its reads answered; the server holds the lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comm/message.h"
#include "ps/server_config.h"
#include "ps/updater.h"

namespace shoal {

// One server's slices, layers and versions, and how far each worker's updates have come.
class ServerTable {
 public:
  struct Slice {
    const SliceSpec* spec;
    std::vector<float> value;
    std::vector<float> grad_sum;  // empty when the model takes no gradients (easgd's centre)
    UpdaterState state;           // the updater's buffers, named by state_names()
    UpdaterConfig updater;        // the job's, at the parameter's learning rate (lr_mult)
    bool sum_is_zero = true;      // nothing added since the last update: the sum need not be read
    // Where request `also_at_request` holds these values too (Apply wrote
    // them over its gradients): see AlsoAt.
    const unsigned char* also_at = nullptr;
    uint64_t also_at_request = 0;
  };
  struct Layer {
    const LayerSpec* spec;
    uint64_t version = 0;                // updates (easgd: exchanges) applied to it
    std::vector<uint64_t> updates_from;  // per worker: the step after its last update taken in
  };

  // Initial values from each parameter's rule and the job's seed; with
  // `takes_gradients` false, no gradient sums and no updater state.
  ServerTable(const ServerConfig& config, bool takes_gradients);
  // Whether every initial value was had (a checkpoint of init_from may not be).
  // On error it is the first parameter's failure, and that parameter's slices hold zeros.
  const Status& init_status() const { return init_status_; }

  const ServerConfig& config() const { return config_; }
  const std::vector<std::string>& state_names() const;
  std::map<uint32_t, Slice>& slices() { return slices_; }
  const std::map<uint32_t, Slice>& slices() const { return slices_; }
  Slice& slice(uint32_t key) { return slices_.at(key); }
  std::vector<Layer>& layers() { return layers_; }
  const std::vector<Layer>& layers() const { return layers_; }
  int LayerOf(uint32_t key) const { return layer_of_.at(key); }  // not of a frozen slice: it has none
  bool Frozen(uint32_t key) const { return slices_.at(key).spec->frozen(); }

  // The table's version: what the consistency model says it has reached
  // (lib/ps/consistency.h), one step at a time. Gets, joins and checkpoints see it.
  uint64_t version() const { return version_; }
  void Advance() { ++version_; }
  void set_version(uint64_t version) { version_ = version; }  // resuming from a checkpoint
  // The least version of `layers` (none: the table's).
  uint64_t VersionOf(const std::vector<int>& layers) const;
  // The least layer version (the table's version follows it).
  uint64_t SlowestLayer() const;
  // Which layer is past the table's version, and where; empty if none is.
  std::string LayerAhead() const;

  // Per worker exchanging nothing here (holding nothing, or only frozen slices): the step after its last
  // (empty) update.
  std::vector<uint64_t>& empty_steps() { return empty_steps_; }
  const std::vector<uint64_t>& empty_steps() const { return empty_steps_; }
  // The step `worker` trains next as far as this server knows (its clock):
  // the step after the last one whose every layer here was taken in.
  uint64_t NextStepOf(int worker) const;
  // Every worker's clock: what a checkpoint records and stats' steps_from reports.
  std::vector<uint64_t> NextSteps() const;
  // The same for `layers` only (none: the worker's empty updates).
  uint64_t NextStepOf(int worker, const std::vector<int>& layers) const;
  // Workers that said they are done (their last update is in).
  const std::vector<bool>& done() const { return done_; }
  int done_count() const { return done_count_; }
  // Whether this is news.
  bool MarkDone(int worker) {
    if (done_[worker]) return false;
    done_[worker] = true;
    ++done_count_;
    return true;
  }
  // The layers `worker` holds some of here, in the net's order.
  const std::vector<int>& LayersHeldBy(int worker) const { return held_layers_[worker]; }

  // Ok if a request's slices are this table's; InvalidArgument naming one that is not.
  Status CheckSlices(const MessageView& request) const;
  // Ok, with `layers` the layers it touches in key order, if an update
  // (exchange) fits this table and carries, for each layer it touches,
  // exactly the slices its sender holds of it here; InvalidArgument saying
  // what does not fit otherwise. *layers may be part-filled then.
  Status CheckHeldSlices(const MessageView& request, std::vector<int>* layers) const;
  // The entries of `request` that belong to layer `index`.
  std::vector<const EntryView*> EntriesOf(const MessageView& request, int index) const;

  // Adds gradients (fp32 whatever the wire carried) to their slices' sums.
  void AddGradients(const std::vector<const EntryView*>& entries);
  // Adds `n` floats to slice `key`'s sum.
  void AddToSum(uint32_t key, const float* grad, size_t n);
  // Applies a slice's sum × `scale` with the updater as the update that
  // makes version `version` + 1, and clears the sum. With `last`, the last
  // contributor's gradient (of this slice) is added to the sum first, read
  // from its message in the same pass, and, while ValuesIntoRequest is on,
  // the new values are written over it as they are made. With `before`, the
  // values as they were are kept there (the update writes the new ones into
  // it, and it and the slice's values change places: no copy).
  void Apply(Slice& slice, float scale, uint64_t version, std::vector<float>* before = nullptr,
             const EntryView* last = nullptr);
  // A request's handling begins, or its reply has gone (`on` false): while
  // on, Apply writes each new value over the fp32 gradient it came from too,
  // where the request's reply (an update-get's, encoded over the request)
  // carries it, saving the reply a copy. The server owns the request's bytes.
  void ValuesIntoRequest(bool on) {
    ++request_;
    into_request_ = on;
  }
  // Where the request being handled holds `slice`'s values too (fp32); null
  // if it does not (another request's bytes, or Apply has not written there).
  const unsigned char* AlsoAt(const Slice& slice) const {
    return slice.also_at_request == request_ ? slice.also_at : nullptr;
  }

 private:
  const ServerConfig& config_;
  bool takes_gradients_;
  uint64_t request_ = 1;  // ValuesIntoRequest's count: a slice's also_at is good while it is the slice's
  bool into_request_ = false;
  Status init_status_;
  std::map<uint32_t, Slice> slices_;
  std::vector<Layer> layers_;
  std::map<uint32_t, int> layer_of_;           // key -> index in layers_
  std::vector<std::vector<int>> held_layers_;  // per worker
  std::vector<uint64_t> empty_steps_;
  std::vector<bool> done_;
  int done_count_ = 0;
  uint64_t version_ = 0;
};

}  // namespace shoal

// A consistency model is how a server handles updates and reads (SINGA
// Algorithms 3-4, GeePS's vector clocks, DeepSpark's elastic averaging):
//  - bsp (lib/ps/bsp.h): a layer's step is summed until every worker holding
//    it has sent it, then applied once; a read of version v waits for it.
//  - async (lib/ps/async.h, Downpour): each update applied as it arrives;
//    reads answered at once.
//  - ssp (lib/ps/ssp.h, stale synchronous): applied as async; a read at clock
//    c waits until every worker's clock is at least c − staleness.
//  - easgd (lib/ps/easgd.h): no gradients; workers exchange their replicas'
//    values with the elastic centre the table holds.
// The server (lib/ps/server.h) validates requests, keeps the common
// bookkeeping (each layer's updates_from, repeats, empty updates) and parks
// reads until Ready; the model decides the rest. A new model is a file pair,
// a row in config/choices.h's kConsistencyModels (its name and traits) and
// one in kModels (lib/ps/consistency.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/message.h"
#include "ps/server_stats.h"
#include "ps/table.h"

namespace shoal {

// A read of the table: a get of version (clock) `at`, or the reply to an
// update-get, which reads the next version of the layers it updated.
struct Read {
  int worker = -1;          // answered with this worker's slices; -1 (a get): every slice
  uint64_t at = 0;          // bsp: the version it needs; ssp: the clock it reads at
  std::vector<int> layers;  // only these; none: every layer
};

// How one consistency model takes updates in and decides when reads are answered.
class Consistency {
 public:
  virtual ~Consistency() = default;
  // Ok if an update of `layers` at `step` from `worker` can be taken; else
  // InvalidArgument saying why not.
  virtual Status CheckUpdate(const ServerTable& table, int worker, uint64_t step,
                             const std::vector<int>& layers) const {
    return Status::Ok();
  }
  // Whether layer `index` has taken in `worker`'s step already (a worker
  // that rejoined after a crash repeats its step; the repeat is dropped).
  virtual bool Repeated(const ServerTable& table, int index, int worker, uint64_t step) const {
    return step < table.layers()[index].updates_from[worker];
  }
  // Takes in one worker's gradients of one layer's step (its updates_from is set already).
  virtual void TakeUpdate(ServerTable& table, int index, int worker, uint64_t step,
                          const std::vector<const EntryView*>& entries) = 0;
  // After an update's layers are taken in: applies what is complete, calling
  // `catch_up` whenever the table's version may have moved (it advances the
  // table to TableVersion, with what each new version brings: checkpoints, syncs).
  virtual void AfterUpdate(ServerTable& table, const std::function<void()>& catch_up) { catch_up(); }
  // The version the table has reached: its slowest layer's; on a server
  // without layers (every slice it holds frozen), the updates its workers
  // sent, each making a version as it would of a layer's.
  virtual uint64_t TableVersion(const ServerTable& table) const;

  // Ok if a read that cannot be answered now may wait; InvalidArgument for
  // one no worker could be waiting for, so far ahead it would hold its slot
  // for nothing.
  virtual Status CheckRead(const ServerTable& table, const Read& read) const { return Status::Ok(); }
  // Whether a read can be answered now, and what a read waiting or answered counts.
  virtual bool Ready(const ServerTable& table, const Read& read) const { return true; }
  virtual void OnPark(const Read& read) {}
  // What a read that cannot be answered now waits for, naming workers
  // ("layer 'fc' has step 7 from 2 of its 3 workers: not from worker 1"),
  // for the answer of a read that waited past its deadline; empty if unknown.
  virtual std::string Awaited(const ServerTable& table, const Read& read) const { return ""; }
  virtual void OnAnswer(const ServerTable& table, const Read& read) {}
  // The step a worker that (re)joins trains next.
  virtual uint64_t JoinStep(const ServerTable& table, int worker) const { return table.NextStepOf(worker); }
  // Slice `key`'s values as of step `step`, for a worker joining there, or
  // null if the model no longer has them. By default whatever the table holds.
  virtual const std::vector<float>* ValuesAt(const ServerTable& table, uint32_t key, uint64_t step) const {
    return &table.slices().at(key).value;
  }

  // easgd: takes the exchange `request` in, filling `diffs` with the
  // difference each of its slices' centre moved by (zeros for a repeat).
  // InvalidArgument when it does not fit the table; other models refuse
  // every exchange. *diffs and *repeated are unchanged on error.
  virtual Status Exchange(ServerTable& table, const MessageView& request,
                          std::vector<std::vector<float>>* diffs, bool* repeated);
};

// "worker 1", "workers 1, 3": for messages.
std::string WorkersNamed(const std::vector<int>& workers);

// The model config.consistency names; never null.
std::unique_ptr<Consistency> MakeConsistency(const ServerConfig& config, ServerStats* stats);

}  // namespace shoal

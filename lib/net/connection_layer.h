// The connection layers a plan implies, never written by the user (SINGA's
// bridge, concat and slice layers): where a layer needs its source's feature
// placed otherwise than the source holds it, this layer moves it within the
// group, forward, and moves the gradient back (summing where several ranks
// read the same floats). Every rank of the group runs every connection, and
// does its part: send what it holds that others need (queued, not waited
// for), keep its own part, receive the rest.
#pragma once

#include <string>
#include <vector>

#include "comm/group_channel.h"
#include "layers/layer.h"
#include "net/placement.h"

namespace shoal {

class ConnectionLayer : public Layer {
 public:
  // `index` numbers the connection within the net (the same on every rank);
  // `full_shape` is one record's whole feature; `source_wants_grad`: whether
  // gradients go back at all.
  ConnectionLayer(GroupChannel* channel, int index, const std::string& source, const std::string& consumer,
                  Placement held, Placement needed, const Shape& full_shape, bool source_wants_grad);

  Status Setup(const Fields&, const std::vector<const Layer*>&) override { return Status::Ok(); }
  // srcs: the source as this rank holds it; empty when it holds none of it.
  void Forward(Phase phase, const std::vector<Layer*>& srcs) override;
  void Backward(const std::vector<Layer*>& srcs) override;
  bool WantsGrad() const override { return source_wants_grad_; }

  void set_step(uint64_t step) { step_ = step; }
  void set_batch(int batch) { batch_ = batch; }
  // A failed exchange (a peer that never sent): checked after each pass.
  const Status& status() const { return status_; }
  const Placement& needed() const { return needed_; }
  // Payload bytes so far, as dl-plan predicts them: the feature received
  // (forward) and its gradient sent (backward).
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t bytes_out() const { return bytes_out_; }
  // "concat: fc1 (rows) -> fc2 (replicated)", for the worker's log.
  std::string Describe() const;

 private:
  Block HeldBy(int rank) const;
  Block NeededBy(int rank) const;

  GroupChannel* channel_;
  int index_, rank_, group_size_;
  std::string source_, consumer_;
  Placement held_, needed_;
  size_t floats_;
  bool source_wants_grad_;
  int batch_ = 0;
  uint64_t step_ = 0;
  Status status_;
  std::vector<float> packed_;
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
};

}  // namespace shoal

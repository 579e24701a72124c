// A net's last layer: it states the loss of the batch it last ran, and
// (a classifier) how many records it classified right. A net has exactly one.
#pragma once

#include "layers/layer.h"

namespace shoal {

class LossLayer : public Layer {
 public:
  // The batch's mean loss per record.
  float loss() const { return loss_; }
  // The classes a classifier tells apart; 0 for a loss that does not
  // classify (an RBM's reconstruction error): no accuracy, no uniform guess.
  virtual int classes() const { return 0; }
  // Predictions of the last batch that were right (a classifier's), and how
  // many it makes a record (a sequence's: one a step).
  int correct() const { return correct_; }
  virtual int predictions_per_record() const { return 1; }
  bool ReadsRecords() const override { return true; }

 protected:
  float loss_ = 0.0f;
  int correct_ = 0;
};

}  // namespace shoal

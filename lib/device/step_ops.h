// The operation sequence of one training step (GeePS §4.2, "operation
// sequence gathering"): every buffer the step's passes touch, and for each
// pass in order which buffers it reads and writes. The same sequence repeats
// every step, so it is gathered once, from the net's structure, without
// computing anything (GeePS's virtual iteration), and the memory manager
// plans placement and prefetching from it.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace shoal {

struct StepBuffer {
  // Where a buffer's values come from and go to, which says what moves.
  enum class Lifetime {
    kInput,     // set outside the step before it (parameter values, the batch): read from home at first use
    kOutput,    // read outside the step after the pass that writes it (parameter gradients): home right after
    kStep,      // made and used inside the step (features)
    kGradient,  // a feature's gradient: zero at its first use in a step, then as kStep
  };
  std::string name;  // "fc1.data", "fc1.grad", "fc1.weight", "fc1.weight.grad"
  Lifetime lifetime = Lifetime::kStep;
  bool param = false;  // parameter data (GeePS's parameter cache) or local data
  size_t bytes = 0;    // the most it holds (a full batch)
  Tensor* tensor = nullptr;
};

struct BufferUse {
  int buffer = 0;
  bool read = false;   // the pass reads the values it holds (an accumulating write reads too)
  bool write = false;  // the pass writes it
};

struct StepOp {
  std::string name;  // "fc1 forward"
  std::vector<BufferUse> uses;
};

struct StepOps {
  std::vector<StepBuffer> buffers;
  std::vector<StepOp> ops;
  // Device memory the passes take beside their buffers (a GPU's convolution
  // workspace): the plan leaves it free within the budget.
  size_t scratch_bytes = 0;

  // Adds a buffer (when `tensor` is new) and returns its index.
  int AddBuffer(const std::string& name, StepBuffer::Lifetime lifetime, bool param, Tensor* tensor);
  // Adds a use to op `op`, merged with one of the same buffer already there;
  // an empty buffer (a layer that holds no records here) is left out.
  void Use(size_t op, int buffer, bool read, bool write);
  // Every buffer's bytes: what the step would hold in device memory at once.
  size_t TotalBytes() const;

 private:
  std::unordered_map<const Tensor*, int> index_;
};

}  // namespace shoal

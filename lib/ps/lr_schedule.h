// The learning rate's schedule over updates: what the update that makes
// version t + 1 multiplies the base learning rate by (t counts from 0).
//   constant:     1
//   step:         gamma^floor(t / every)        (PyTorch's StepLR)
//   exponential:  gamma^(t / every), real t / every: a smooth decay by gamma
//                 over each `every` updates (every 1: PyTorch's ExponentialLR)
//   cosine:       (1 + cos(π·min(t, every) / every)) / 2   (PyTorch's
//                 CosineAnnealingLR, T_max = every, eta_min 0; from update
//                 `every` on it stays 0 where PyTorch's would rise again)
// times the warm-up, when warmup_steps = W > 0:
//   min(1, (t + 1) / W)                         (PyTorch's LinearLR with
//                 start_factor 1/W, end_factor 1, total_iters W − 1)
// so the first update takes lr/W and update W − 1 the full rate. The decay
// counts from update 0, not from the warm-up's end (PyTorch's ChainedScheduler).
#pragma once

#include <cstdint>

#include "config/job.h"

namespace shoal {

double ScheduleFactor(const LrSchedule& schedule, uint64_t t);

}  // namespace shoal

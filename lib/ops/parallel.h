// The ops' threads: ComputeThreads() threads (the caller's included, on
// OpenMP's) split a loop into contiguous, deterministic ranges. A build
// without OpenMP runs every loop on the calling thread.
#pragma once

#include <cstddef>
#include <functional>

namespace shoal {

// Below this many floats an elementwise loop or a pooling runs on the calling
// thread alone: waking the pool would cost more than it saves.
constexpr size_t kParallelMin = 1 << 15;

// Splits [0, n) into `tasks` contiguous ranges, range t being
// [n·t/tasks, n·(t+1)/tasks), and runs fn(t, begin, end) for each, task 0 on
// the calling thread; returns when all are done. tasks is
// min(ComputeThreads(), n, max_tasks); one task (or a call from inside a task)
// runs inline. Which range a task gets never depends on timing.
void ParallelFor(int n, const std::function<void(int task, int begin, int end)>& fn, int max_tasks = 1 << 30);

// How many tasks ParallelFor(n, ...) would use.
int ParallelTasks(int n, int max_tasks = 1 << 30);

}  // namespace shoal

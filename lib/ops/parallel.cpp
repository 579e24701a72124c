#include "ops/parallel.h"

#include <algorithm>

#include "ops/blas.h"

#if SHOAL_HAVE_OPENMP
#include <omp.h>
#endif

namespace shoal {
namespace {

thread_local bool in_task = false;

}  // namespace

int ParallelTasks(int n, int max_tasks) {
#if SHOAL_HAVE_OPENMP
  if (in_task) return 1;
  return std::max(1, std::min({ComputeThreads(), n, max_tasks}));
#else
  (void)n;
  (void)max_tasks;
  return 1;
#endif
}

// The tasks run on OpenMP's threads: the threads oneDNN's primitives run on
// (Debian's libdnnl is built on OpenMP), so that the loops here and a
// convolution on oneDNN share one set of threads. With a pool of our own
// beside OpenMP's, OpenMP's threads, spinning after a primitive for the
// next, took the cores our pool's threads wanted.
void ParallelFor(int n, const std::function<void(int, int, int)>& fn, int max_tasks) {
  if (n <= 0) return;
  const int tasks = ParallelTasks(n, max_tasks);
  auto range = [&](int t) {
    const int begin = static_cast<int>(static_cast<long long>(n) * t / tasks);
    const int end = static_cast<int>(static_cast<long long>(n) * (t + 1) / tasks);
    fn(t, begin, end);
  };
  const bool outer = in_task;
  in_task = true;
  if (tasks == 1) {
    range(0);
  } else {
#if SHOAL_HAVE_OPENMP
    // A team smaller than asked for (an OpenMP limit) runs several ranges a
    // thread: which range is task t never changes.
#pragma omp parallel num_threads(tasks)
    {
      in_task = true;
      for (int t = omp_get_thread_num(); t < tasks; t += omp_get_num_threads()) range(t);
      in_task = false;
    }
#endif
  }
  in_task = outer;
}

}  // namespace shoal

#include "ops/parallel.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ops/blas.h"

namespace shoal {
namespace {

thread_local bool in_task = false;

// Workers 1..size-1 wait for a new generation, run their task if it has one,
// and report back; the caller runs task 0.
class Pool {
 public:
  explicit Pool(int size) : size_(size) {
    for (int t = 1; t < size; ++t) workers_.emplace_back([this, t] { Loop(t); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return size_; }

  void Run(int tasks, const std::function<void(int)>& fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      tasks_ = tasks;
      pending_ = tasks - 1;
      ++generation_;
    }
    start_.notify_all();
    in_task = true;
    fn(0);
    in_task = false;
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void Loop(int t) {
    in_task = true;
    unsigned long seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (t >= tasks_) continue;
      const std::function<void(int)>* fn = fn_;
      lock.unlock();
      (*fn)(t);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  const int size_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int tasks_ = 0, pending_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
};

// Rebuilt when the thread count changes; used from one thread at a time
// (the worker's compute thread).
Pool* GetPool(int size) {
  static std::unique_ptr<Pool> pool;
  if (!pool || pool->size() != size) {
    pool.reset();
    pool = std::make_unique<Pool>(size);
  }
  return pool.get();
}

}  // namespace

int ParallelTasks(int n, int max_tasks) {
  if (in_task) return 1;
  return std::max(1, std::min({ComputeThreads(), n, max_tasks}));
}

void ParallelFor(int n, const std::function<void(int, int, int)>& fn, int max_tasks) {
  if (n <= 0) return;
  const int tasks = ParallelTasks(n, max_tasks);
  auto range = [&](int t) {
    const int begin = static_cast<int>(static_cast<long long>(n) * t / tasks);
    const int end = static_cast<int>(static_cast<long long>(n) * (t + 1) / tasks);
    fn(t, begin, end);
  };
  if (tasks == 1) {
    const bool outer = in_task;
    in_task = true;
    range(0);
    in_task = outer;
    return;
  }
  GetPool(ComputeThreads())->Run(tasks, range);
}

}  // namespace shoal

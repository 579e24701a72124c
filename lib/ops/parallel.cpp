#include "ops/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ops/blas.h"

namespace shoal {
namespace {

thread_local bool in_task = false;

// How long a thread spins for the next round (a worker) or for the others'
// tasks (the caller) before it sleeps on a condition variable. A futex sleep
// and wake-up per parallel loop made the MLP's step (batch 64) slower at 2
// threads than at 1 on this project's 2-core machine (0.9-1.2 ms against
// 0.75-0.85); spinning 20 µs brings it to ~0.7, while 50 µs made the CNN's
// step at 2 threads ~4% slower, the spin taking the core that oneDNN's
// OpenMP threads wanted.
constexpr auto kSpin = std::chrono::microseconds(20);

// Spins until done() or kSpin has passed; returns done().
template <typename Done>
bool SpinFor(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return done();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

// Workers 1..size-1 wait for a new generation, run their task if it has one,
// and report back; the caller runs task 0. Both sides spin briefly before
// they sleep on the mutex's condition variables.
class Pool {
 public:
  explicit Pool(int size) : size_(size) {
    for (int t = 1; t < size; ++t) workers_.emplace_back([this, t] { Loop(t); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
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
      pending_.store(tasks - 1);
      generation_.fetch_add(1);
    }
    start_.notify_all();
    in_task = true;
    fn(0);
    in_task = false;
    if (SpinFor([this] { return pending_.load() == 0; })) return;
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_.load() == 0; });
  }

 private:
  void Loop(int t) {
    in_task = true;
    unsigned long seen = 0;
    for (;;) {
      auto ready = [&] { return stop_.load() || generation_.load() != seen; };
      if (!SpinFor(ready)) {
        std::unique_lock<std::mutex> lock(mu_);
        start_.wait(lock, ready);
      }
      const std::function<void(int)>* fn;
      int tasks;
      {
        // One round's generation, function and task count together: a worker
        // left out of a round may look only once the next has begun.
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_.load()) return;
        seen = generation_.load();
        fn = fn_;
        tasks = tasks_;
      }
      if (t >= tasks) continue;
      (*fn)(t);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu_);  // the caller may be between its check and its sleep
        done_.notify_one();
      }
    }
  }

  const int size_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int tasks_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<unsigned long> generation_{0};
  std::atomic<bool> stop_{false};
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

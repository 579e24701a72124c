// A mutex, its scoped lock and a condition variable that clang's
// -Wthread-safety can check: data says which mutex guards it (GUARDED_BY),
// functions which mutex they need held (REQUIRES) or take (EXCLUDES). The
// fuzz build compiles with clang and the warning on (CMakeLists.txt).
// std::mutex carries no annotations in libstdc++, so lib/ uses these.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define SHOAL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SHOAL_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) SHOAL_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SHOAL_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) SHOAL_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) SHOAL_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) SHOAL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) SHOAL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) SHOAL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) SHOAL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) SHOAL_THREAD_ANNOTATION(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS SHOAL_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace shoal {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Tells the analysis that the caller holds this mutex (a callback run under it).
  void AssertHeld() ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Waits on `mu`, which the caller holds for every call. Callers loop on
// their condition: while (!ready) cv.Wait();
class CondVar {
 public:
  explicit CondVar(Mutex* mu) : mu_(mu) {}
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait() {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False when `deadline` passed first.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  Mutex* const mu_;
  std::condition_variable cv_;
};

}  // namespace shoal

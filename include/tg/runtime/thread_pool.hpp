#pragma once
// A fixed pool that runs one function over chunks of a range and waits for all of them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tg {

class ThreadPool {
public:
  explicit ThreadPool(int n) {
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
      ++generation_; // ends the workers' spinning
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return int(workers_.size()) + 1; }

  /// Calls f(begin, end) on `chunks` contiguous slices of [0, n); the caller runs one slice.
  void parallel_for(std::int64_t n, int chunks,
                    const std::function<void(std::int64_t, std::int64_t)>& f) {
    if (chunks <= 1 || workers_.empty()) {
      f(0, n);
      return;
    }
    std::lock_guard<std::mutex> serial(run_m_); // one parallel region at a time
    {
      std::lock_guard<std::mutex> g(m_);
      fn_ = &f;
      n_ = n;
      chunks_ = chunks;
      next_ = 1;
      pending_ = chunks - 1;
      ++generation_;
    }
    cv_.notify_all();
    run_chunk(0);
    while (true) { // help with remaining chunks, then wait
      int c;
      {
        std::lock_guard<std::mutex> g(m_);
        if (next_ >= chunks_) break;
        c = next_++;
      }
      run_chunk(c);
      finish_one();
    }
    spin_while([this] { return pending_.load() != 0; });
    std::unique_lock<std::mutex> g(m_);
    done_cv_.wait(g, [this] { return pending_ == 0; });
    fn_ = nullptr;
  }

private:
  /// Waits up to ~0.2 ms while `busy()` holds, before a caller blocks on a condition variable.
  /// A kernel's launches follow each other within microseconds, and a worker woken through the
  /// futex can take long enough that the caller has run the whole range alone (figures in
  /// docs/performance.md).
  template <class Busy> static void spin_while(Busy busy) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    for (int i = 1; busy(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return;
    }
  }
  void run_chunk(int c) {
    std::int64_t b = n_ * c / chunks_, e = n_ * (c + 1) / chunks_;
    if (b < e) (*fn_)(b, e);
  }
  void finish_one() {
    std::lock_guard<std::mutex> g(m_);
    if (--pending_ == 0) done_cv_.notify_all();
  }
  void work() {
    std::uint64_t seen = 0;
    while (true) {
      spin_while([&] { return generation_.load() == seen; });
      int c;
      {
        std::unique_lock<std::mutex> g(m_);
        cv_.wait(g, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        if (next_ >= chunks_) { // the others took every chunk of this generation
          seen = generation_;
          continue;
        }
        c = next_++;
        if (next_ >= chunks_) seen = generation_;
      }
      run_chunk(c);
      finish_one();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex m_, run_m_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(std::int64_t, std::int64_t)>* fn_ = nullptr;
  std::int64_t n_ = 0;
  int chunks_ = 0, next_ = 0;
  // written under m_; atomic so that the spinning can read them without taking it
  std::atomic<int> pending_{0};
  std::atomic<std::uint64_t> generation_{0};
  bool stop_ = false;
};

/// f(0) ... f(n-1) on at most as many threads as the machine has cores (compiler processes
/// included: each job may spawn one); results in order; the first exception is rethrown.
template <class F>
auto parallel_map(std::size_t n, F&& f) -> std::vector<decltype(f(std::size_t(0)))> {
  using R = decltype(f(std::size_t(0)));
  std::vector<R> out(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < n;) {
      try {
        out[i] = f(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < std::min(n, hw); ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

inline ThreadPool& thread_pool(int n) {
  static ThreadPool pool(n);
  return pool;
}

} // namespace tg

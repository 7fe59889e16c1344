// tools/study/parallel_for.hpp — the one thread pool of the commands that run many
// independent simulations (search, sweep).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

namespace ls::tools {

/// Calls fn(i, worker) for i in [0, n) on up to `threads` threads (the caller's own
/// included), worker ∈ [0, threads) naming the calling thread (for per-thread state).
/// fn must not throw (the callers catch per item) and writes only its own slot, so
/// the outcome is independent of the thread count and of the order items finish in.
template <class Fn>
void parallel_for(std::size_t n, int threads, Fn fn) {
  std::atomic<std::size_t> next{0};
  auto worker = [&](std::size_t w) {
    for (std::size_t i = next++; i < n; i = next++) fn(i, w);
  };
  const auto count = static_cast<std::size_t>(std::max(1, threads));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(count, n); ++t) {
    // The items are a shared queue: if the OS refuses a thread, fewer threads drain it
    // (rather than an exception that destroys joinable threads, which terminates).
    try {
      pool.emplace_back(worker, t);
    } catch (const std::system_error&) {
      break;
    }
  }
  worker(0);
  for (auto& t : pool) t.join();
}

}  // namespace ls::tools

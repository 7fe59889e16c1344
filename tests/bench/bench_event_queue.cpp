// tests/bench/bench_event_queue.cpp — EventQueue throughput.
//
// "Hold" model (Vaucher & Duval 1975, the classic future-event-list benchmark): the
// queue is pre-filled to a steady size N, then each iteration pops the earliest
// event and schedules one new event a random increment later, so the size stays N.
// One iteration = one event (one pop + one push); items_processed reports events/s.
// The increments come from a precomputed table so the RNG is not measured.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/event_queue.hpp"

using namespace ls::sim;

namespace {

// On a shared, noisy machine the minimum over repetitions is the most stable
// figure: run with --benchmark_repetitions=5.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

std::vector<std::int64_t> increments(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Exponential-ish spread over 1 ns .. ~10 us, with 4 classes of ties below.
  std::exponential_distribution<double> d(1.0 / 1e6);
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = 1000 + static_cast<std::int64_t>(d(rng));
  return v;
}

void BM_Hold(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto inc = increments(1 << 16, 1);
  EventQueue q;
  q.reserve(n + 1);
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i, ++k)
    q.push(ps(inc[k & 0xffff] * 8), static_cast<std::uint8_t>(k & 3), static_cast<std::uint32_t>(i));
  for (auto _ : state) {
    const Event e = q.pop();
    q.push(e.time + ps(inc[k & 0xffff]), static_cast<std::uint8_t>(k & 3), e.a, e.b);
    ++k;
  }
  benchmark::DoNotOptimize(q.size());
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("events/s = 1 pop + 1 push");
}
BENCHMARK(BM_Hold)->Arg(1'000)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->ComputeStatistics("min", min_of);

// Fill N then drain N: one item = one event pushed and popped.
void BM_FillDrain(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto inc = increments(n, 2);
  EventQueue q;
  q.reserve(n);
  for (auto _ : state) {
    std::int64_t t = 0;
    for (std::size_t i = 0; i < n; ++i) q.push(ps(t + inc[i] * 4), static_cast<std::uint8_t>(i & 3), static_cast<std::uint32_t>(i));
    while (!q.empty()) {
      const Event e = q.pop();
      t = e.time.ps();
      benchmark::DoNotOptimize(t);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(BM_FillDrain)->Arg(10'000)->Arg(100'000)->ComputeStatistics("min", min_of);

}  // namespace

BENCHMARK_MAIN();

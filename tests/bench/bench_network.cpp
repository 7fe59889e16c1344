// tests/bench/bench_network.cpp — FlowNetwork re-solving cost on a synthetic
// 1,024-GPU rail-optimised fabric.
//
// The fabric is built here (not from topology/) so the benchmark measures only
// the solver: 128 nodes x 8 GPUs. Per GPU: NVLink up/down to the node's NVSwitch
// (450 GB/s per direction, H100 NVLink4 900 GB/s bidirectional), PCIe GPU<->NIC
// (Gen5 x16, ~64 GB/s per direction), NIC<->rail leaf (400 Gb/s = 50 GB/s).
// Rail r of 32 nodes (a "pod") share one leaf; 4 pods x 8 rails = 32 leaves, each
// with one 50 GB/s up/down link to each of 32 spines (non-blocking, 32 down x 32 up).
// A cross-node route from (n1, g1) to (n2, g2) first crosses NVLink to the GPU on
// the destination's rail when g1 != g2 (NCCL PXN), then PCIe, NIC->leaf, and when
// the pods differ leaf->spine->leaf with an ECMP-hashed spine, leaf->NIC, PCIe.
//
// Measured: with A active flows (default 1,000, all long enough never to finish),
//   AddFlow:    start one flow + resolve();
//   RemoveFlow: finish one flow + resolve();
// the compensating operation (to keep A constant) runs with the timer paused.
// Counters: flows/links re-solved per resolve (the touched component's size).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/network.hpp"

using namespace ls::sim;

namespace {

struct Fabric {
  static constexpr int kNodes = 128, kGpus = 8, kPodNodes = 32, kPods = kNodes / kPodNodes, kSpines = 32;
  static constexpr int kLeaves = kPods * kGpus;
  std::vector<double> bw;
  // Index helpers into bw for each directed link class.
  LinkId nvl_up0, nvl_down0, pcie_up0, pcie_down0, nic_up0, nic_down0, leaf_up0, leaf_down0;

  Fabric() {
    auto block = [&](int n, double b) {
      const auto first = static_cast<LinkId>(bw.size());
      bw.insert(bw.end(), static_cast<std::size_t>(n), b);
      return first;
    };
    const int gpus = kNodes * kGpus;
    nvl_up0 = block(gpus, 450e9);
    nvl_down0 = block(gpus, 450e9);
    pcie_up0 = block(gpus, 64e9);
    pcie_down0 = block(gpus, 64e9);
    nic_up0 = block(gpus, 50e9);
    nic_down0 = block(gpus, 50e9);
    leaf_up0 = block(kLeaves * kSpines, 50e9);
    leaf_down0 = block(kLeaves * kSpines, 50e9);
  }
  static int gpu(int n, int g) { return n * kGpus + g; }
  static int leaf(int n, int g) { return (n / kPodNodes) * kGpus + g; }

  void route(int n1, int g1, int n2, int g2, std::uint64_t hash, std::vector<LinkId>& p) const {
    p.clear();
    auto at = [](LinkId base, int i) { return base + static_cast<LinkId>(i); };
    if (n1 == n2 || g1 != g2) {  // NVLink hop (whole route if intra-node, PXN otherwise)
      p.push_back(at(nvl_up0, gpu(n1, g1)));
      p.push_back(at(nvl_down0, gpu(n1, g2)));
      if (n1 == n2) return;
    }
    p.push_back(at(pcie_up0, gpu(n1, g2)));
    p.push_back(at(nic_up0, gpu(n1, g2)));
    const int l1 = leaf(n1, g2), l2 = leaf(n2, g2);
    if (l1 != l2) {
      const int s = static_cast<int>(hash % kSpines);
      p.push_back(at(leaf_up0, l1 * kSpines + s));
      p.push_back(at(leaf_down0, l2 * kSpines + s));
    }
    p.push_back(at(nic_down0, gpu(n2, g2)));
    p.push_back(at(pcie_down0, gpu(n2, g2)));
  }
};

struct Setup {
  Fabric fab;
  FlowNetwork net{fab.bw};
  std::mt19937_64 rng{42};
  std::vector<FlowId> live;
  std::vector<LinkId> path;
  std::vector<FlowId> changed;
  Time now;

  // intra: fraction (in %) of flows that stay inside a node.
  void add(int intra_pct) {
    const int n1 = static_cast<int>(rng() % Fabric::kNodes);
    const int g1 = static_cast<int>(rng() % Fabric::kGpus);
    int n2 = n1;
    if (static_cast<int>(rng() % 100) >= intra_pct)
      while (n2 == n1) n2 = static_cast<int>(rng() % Fabric::kNodes);
    int g2 = static_cast<int>(rng() % Fabric::kGpus);
    if (n2 == n1 && g2 == g1) g2 = (g1 + 1) % Fabric::kGpus;
    fab.route(n1, g1, n2, g2, rng(), path);
    live.push_back(net.start(now, path, 1e15));  // never finishes during the benchmark
  }
  void remove_random() {
    const std::size_t i = rng() % live.size();
    net.finish(now, live[i]);
    live[i] = live.back();
    live.pop_back();
  }
  void resolve() {
    changed.clear();
    net.resolve(now, changed);
  }
  Setup(int flows, int intra_pct) {
    for (int i = 0; i < flows; ++i) add(intra_pct);
    resolve();
  }
};

void report(benchmark::State& state, const Setup& s, double flows_sum, double links_sum, double changed_sum) {
  const double it = static_cast<double>(state.iterations());
  state.counters["solved_flows"] = flows_sum / it;
  state.counters["solved_links"] = links_sum / it;
  state.counters["changed"] = changed_sum / it;
  state.counters["active"] = static_cast<double>(s.net.active_flows());
}

void BM_AddFlow(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  double fl = 0, li = 0, ch = 0;
  for (auto _ : state) {
    s.now += us(1);
    s.add(static_cast<int>(state.range(1)));
    s.resolve();
    fl += static_cast<double>(s.net.last_resolve_flows());
    li += static_cast<double>(s.net.last_resolve_links());
    ch += static_cast<double>(s.changed.size());
    state.PauseTiming();
    s.remove_random();
    s.resolve();
    state.ResumeTiming();
  }
  report(state, s, fl, li, ch);
}

void BM_RemoveFlow(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  double fl = 0, li = 0, ch = 0;
  for (auto _ : state) {
    s.now += us(1);
    s.remove_random();
    s.resolve();
    fl += static_cast<double>(s.net.last_resolve_flows());
    li += static_cast<double>(s.net.last_resolve_links());
    ch += static_cast<double>(s.changed.size());
    state.PauseTiming();
    s.add(static_cast<int>(state.range(1)));
    s.resolve();
    state.ResumeTiming();
  }
  report(state, s, fl, li, ch);
}

// Both operations back to back, no paused timer (PauseTiming itself costs ~1 us
// of clock reads): half of this is the average of AddFlow and RemoveFlow.
void BM_AddRemovePair(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) {
    s.now += us(1);
    s.add(static_cast<int>(state.range(1)));
    s.resolve();
    s.remove_random();
    s.resolve();
  }
  state.SetItemsProcessed(2 * state.iterations());  // items/s = resolves/s
}

// On a shared, noisy machine the minimum over repetitions is the most stable
// figure: run with --benchmark_repetitions=5.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Args: {active flows, % intra-node flows}.
BENCHMARK(BM_AddFlow)->ArgNames({"flows", "intra%"})->Args({1000, 0})->Args({1000, 50})->Args({4000, 0})->Unit(benchmark::kMicrosecond)->ComputeStatistics("min", min_of);
BENCHMARK(BM_RemoveFlow)->ArgNames({"flows", "intra%"})->Args({1000, 0})->Args({1000, 50})->Args({4000, 0})->Unit(benchmark::kMicrosecond)->ComputeStatistics("min", min_of);
BENCHMARK(BM_AddRemovePair)->ArgNames({"flows", "intra%"})->Args({1000, 0})->Args({4000, 0})->Unit(benchmark::kMicrosecond)->ComputeStatistics("min", min_of);

}  // namespace

BENCHMARK_MAIN();

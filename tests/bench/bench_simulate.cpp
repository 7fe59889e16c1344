// tests/bench/bench_simulate.cpp — whole-step simulation at the sizes users run.
//
//   GPT-3 175B on 1,024 A100s, t8·p8·d16, m = 64 (Megatron-LM's layout, Narayanan et al. 2021)
//   Llama-3 405B on 16,384 H100s, t8·p16·d128, m = 16 (Llama 3 paper's 3D layout)
//   MT-NLG 530B on 2,520 A100s, t8·p35(v3)·d9, m = 280 (Smith et al. 2022, arXiv:2201.11990)
//
// Each runs with the symmetric fast path (simulation.symmetry: auto, the default;
// the 405B and 530B ones with placement [tp, pp, dp], one replica per leaf) and, as
// `_full`, with every rank simulated. tests/bench/scenarios/ holds the same scenarios
// as YAML for `layoutsim run`. Reported counters: events, events/s, simulated step
// time and the process's peak RSS. Targets on the 2-core CI machine: ≤ 2 s and
// ≤ 30 s wall per step, ≤ 8 GiB; with the fast path (issue 11) GPT-3 ≤ 0.15 s,
// 530B ≤ 1 s, 405B ≤ 0.5 s (README, Performance).
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include "workloads/hardware.hpp"
#include "workloads/model.hpp"
#include "workloads/simulate.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

Scenario gpt3_1024() {
  Scenario s;
  s.name = "gpt3-175b-1024";
  s.cluster.nodes = 128;
  s.cluster.gpus_per_node = 8;
  s.cluster.intra = {"nvswitch", 300e9, sim::us(1)};
  s.cluster.inter.kind = "infiniband";
  s.cluster.inter.bandwidth_Bps = 25e9;  // 200 Gb/s HDR per GPU
  s.cluster.inter.latency = sim::us(3);
  s.gpu = *gpu_preset("a100-80gb");
  s.model = *model_preset("gpt3-175b");
  s.layout.dp = 16;
  s.layout.tp = 8;
  s.layout.pp = 8;
  s.layout.microbatches = 64;
  s.layout.zero = 1;
  s.layout.sequence_parallel = true;
  s.layout.recompute = Recompute::selective;
  return s;
}

Scenario llama405_16k() {
  Scenario s;
  s.name = "llama3-405b-16384";
  s.cluster.nodes = 2048;
  s.cluster.gpus_per_node = 8;
  s.cluster.intra = {"nvswitch", 450e9, sim::us(1)};
  s.cluster.inter.kind = "infiniband";
  s.cluster.inter.bandwidth_Bps = 50e9;  // 400 Gb/s NDR per GPU
  s.cluster.inter.latency = sim::us(3);
  s.gpu = *gpu_preset("h100-sxm");
  s.model = *model_preset("llama3-405b");
  s.layout.dp = 128;
  s.layout.tp = 8;
  s.layout.pp = 16;
  s.layout.microbatches = 16;
  s.layout.zero = 1;
  s.layout.sequence_parallel = true;
  s.layout.recompute = Recompute::selective;
  // 126 layers on 16 stages: one fewer on the first and last stage (Llama 3 paper, §3.3.2).
  s.layout.stage_layers_mode = StageLayersMode::explicit_list;
  s.layout.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  s.layout.placement = {"tp", "pp", "dp"};
  return s;
}

Scenario mtnlg530_2520() {
  Scenario s;
  s.name = "mtnlg-530b-2520";
  s.cluster.nodes = 315;
  s.cluster.gpus_per_node = 8;
  s.cluster.intra = {"nvswitch", 300e9, sim::us(1)};
  s.cluster.inter.kind = "infiniband";
  s.cluster.inter.bandwidth_Bps = 25e9;  // 200 Gb/s HDR per GPU
  s.cluster.inter.latency = sim::us(3);
  s.cluster.inter.nodes_per_leaf = 35;   // one replica (t8·p35 = 35 nodes) per leaf
  s.gpu = *gpu_preset("a100-80gb");
  s.model.name = "mt-nlg-530b";          // 105 layers, hidden 20480, 128 heads (arXiv:2201.11990)
  s.model.layers = 105;
  s.model.hidden = 20480;
  s.model.heads = 128;
  s.model.vocab = 51200;
  s.model.seq_len = 2048;
  s.layout.dp = 9;
  s.layout.tp = 8;
  s.layout.pp = 35;
  s.layout.microbatches = 280;
  s.layout.schedule = Schedule::interleaved_1f1b;
  s.layout.virtual_stages = 3;
  s.layout.zero = 1;
  s.layout.sequence_parallel = true;
  s.layout.recompute = Recompute::selective;
  s.layout.placement = {"tp", "pp", "dp"};
  return s;
}

Scenario full(Scenario s) {
  s.simulation.symmetry = false;
  return s;
}

/// One simulated step, warnings' what-if re-simulations off (those are separate
/// simulations of modified scenarios, run only when a warning fires).
void run(benchmark::State& state, const Scenario& partial) {
  const ResolvedScenario s = resolve(partial);
  double events = 0, step = 0;
  SimOptions opts;
  opts.what_if = false;
  for (auto _ : state) {
    const Result r = simulate(s, opts);
    events = static_cast<double>(r.events);
    step = r.step_time_s;
    benchmark::DoNotOptimize(r.step_time_s);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["events"] = events;
  state.counters["events_per_s"] = benchmark::Counter(events, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["sim_step_s"] = step;
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void BM_Gpt3_175B_1024(benchmark::State& state) { run(state, gpt3_1024()); }
void BM_Llama3_405B_16384(benchmark::State& state) { run(state, llama405_16k()); }
void BM_MtNlg_530B_2520(benchmark::State& state) { run(state, mtnlg530_2520()); }
void BM_Gpt3_175B_1024_full(benchmark::State& state) { run(state, full(gpt3_1024())); }
void BM_Llama3_405B_16384_full(benchmark::State& state) { run(state, full(llama405_16k())); }
void BM_MtNlg_530B_2520_full(benchmark::State& state) { run(state, full(mtnlg530_2520())); }

}  // namespace

BENCHMARK(BM_Gpt3_175B_1024)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Llama3_405B_16384)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_MtNlg_530B_2520)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Gpt3_175B_1024_full)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Llama3_405B_16384_full)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_MtNlg_530B_2520_full)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_MAIN();

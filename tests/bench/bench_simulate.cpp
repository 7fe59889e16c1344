// tests/bench/bench_simulate.cpp — whole-step simulation at the sizes users run.
//
//   GPT-3 175B on 1,024 A100s, t8·p8·d16, m = 64 (Megatron-LM's layout, Narayanan et al. 2021)
//   Llama-3 405B on 16,384 H100s, t8·p16·d128, m = 16 (Llama 3 paper's 3D layout)
//   MT-NLG 530B on 2,520 A100s, t8·p35(v3)·d9, m = 280 (Smith et al. 2022, arXiv:2201.11990)
//   DeepSeek-V3 on 2,048 H800s, pp 16 · ep 64 · dp 128, DualPipe, m = 120 (arXiv 2412.19437)
//
// Each runs with the symmetric fast path (simulation.symmetry: auto, the default;
// the 405B and 530B ones with placement [tp, pp, dp], one replica per leaf) and, as
// `_full`, with every rank simulated (not DeepSeek-V3: minutes with its all-to-alls'
// flows unfolded). The scenarios are read from their YAML files
// (scenarios/, tests/bench/scenarios/), the ones `layoutsim run` takes. Reported
// counters: events, events/s, simulated step time and the process's peak RSS.
// Targets on the 2-core CI machine: ≤ 2 s and ≤ 30 s wall per step, ≤ 8 GiB; with the symmetric fast path GPT-3 ≤ 0.15 s,
// 530B ≤ 1 s, 405B ≤ 0.5 s (README, Performance).
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <string>

#include "tools/scenario/scenario.hpp"
#include "workloads/simulate.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

/// The benchmarked scenarios are the YAML files users run (one definition each):
/// scenarios/gpt3-175b-1024-a100.yaml and tests/bench/scenarios/*.yaml.
Scenario scenario_file(const std::string& path) { return *tools::load_scenario_file(path, {}); }
Scenario gpt3_1024() { return scenario_file(LS_SCENARIOS_DIR "/gpt3-175b-1024-a100.yaml"); }
Scenario llama405_16k() { return scenario_file(LS_BENCH_SCENARIOS_DIR "/llama3-405b-16384-h100.yaml"); }
Scenario mtnlg530_2520() { return scenario_file(LS_BENCH_SCENARIOS_DIR "/mtnlg-530b-2520-a100.yaml"); }
Scenario deepseek_v3_2048() { return scenario_file(LS_BENCH_SCENARIOS_DIR "/deepseek-v3-2048-h800.yaml"); }

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
void BM_DeepSeekV3_2048(benchmark::State& state) { run(state, deepseek_v3_2048()); }
void BM_Gpt3_175B_1024_full(benchmark::State& state) { run(state, full(gpt3_1024())); }
void BM_Llama3_405B_16384_full(benchmark::State& state) { run(state, full(llama405_16k())); }
void BM_MtNlg_530B_2520_full(benchmark::State& state) { run(state, full(mtnlg530_2520())); }

}  // namespace

BENCHMARK(BM_Gpt3_175B_1024)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Llama3_405B_16384)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_MtNlg_530B_2520)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_DeepSeekV3_2048)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Gpt3_175B_1024_full)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Llama3_405B_16384_full)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_MtNlg_530B_2520_full)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_MAIN();

// tests/test_search_estimate.cpp — the search's analytic stage priced from two programs
// at fewer micro-batches (tools/study/search_estimate.hpp): on every schedule and the
// switches that add per-micro-batch or once-per-step work, the estimate, the memory peak
// and the FLOPs equal those of the candidate's own program.
//
// Tolerances: the step time is a sum of ~10^4 op durations on each of two programs,
// whose difference is scaled by (M − a)/(b − a) ≤ M ≈ 100: rounding of 1e-16 per term
// grows to at most ~1e-10 relative; 1e-9 leaves a factor of ten. The peak is a sum of
// integer byte counts (exact in a double below 2^53) and the FLOPs a sum of a few
// thousand terms: 1e-12.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "tools/scenario/scenario.hpp"
#include "tools/study/search_estimate.hpp"
#include "topology/cluster.hpp"
#include "workloads/analysis/interference.hpp"
#include "workloads/analysis/scale_noise.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/cost/hardware.hpp"

using namespace ls;

namespace {

/// 32 GPUs (4 nodes of 8), an 8-layer model (MoE when `moe`), the layout lines given.
std::string scenario_yaml(const std::string& layout, bool moe, const std::string& implementation = "") {
  return fmt::format(R"(name: extrapolation
cluster:
  gpu: h100-sxm
  nodes: 4
  gpus_per_node: 8
model:
  name: small
  layers: 8
  hidden: 1024
  heads: 16
  kv_heads: 8
  ffn_hidden: 4096
  vocab: 32000
  seq_len: 2048
  activation: swiglu
{}layout:
{}
{})",
                     moe ? "  moe: {experts: 8, top_k: 2, expert_ffn_hidden: 2048}\n" : "", layout,
                     implementation.empty() ? "" : "implementation: {" + implementation + "}\n");
}

struct Compared {
  tools::Estimate extrapolated, full;
  bool used_pair = false;
};

Compared compare(const std::string& yaml) {
  const wl::ResolvedScenario rs = tools::load_scenario_string(yaml, "extrapolation.yaml");
  const wl::Scenario& sc = rs.scenario();
  const topo::Cluster cluster = topo::Cluster::build(wl::effective_cluster(sc));
  tools::CollectiveTimes times(cluster, sc.cluster.ideal_network);
  tools::ComputeSlowdowns slow;
  slow.rho = wl::overlap_slowdown(wl::compute_profile_of(sc.gpu));
  slow.noise = wl::scale_noise_factor(sc.implementation.compute_variability, 32);
  Compared c;
  c.used_pair = tools::extrapolation_microbatches(sc.layout.schedule, sc.layout.pp, sc.layout.microbatches).has_value();
  std::optional<tools::EstimatePrograms> a, b;
  c.extrapolated = tools::analyze(sc, times, slow, a, tools::EstimateBuild::extrapolate);
  c.full = tools::analyze(sc, times, slow, b, tools::EstimateBuild::full);
  if (c.used_pair && a) CHECK(a->built.size() == 2);
  if (b) CHECK(b->built.size() == 1);
  return c;
}

double rel(double x, double y) { return std::abs(x - y) / std::max(std::abs(y), 1e-300); }

void check_same(const std::string& what, const std::string& layout, bool moe = false, const std::string& implementation = "") {
  CAPTURE(what);
  const Compared c = compare(scenario_yaml(layout, moe, implementation));
  CHECK(c.used_pair);
  REQUIRE(c.full.rejected == "");
  CHECK(c.extrapolated.rejected == c.full.rejected);
  CHECK(rel(c.extrapolated.step_s, c.full.step_s) <= 1e-9);
  CHECK(rel(c.extrapolated.peak_bytes, c.full.peak_bytes) <= 1e-12);
  CHECK(rel(c.extrapolated.model_flops, c.full.model_flops) <= 1e-12);
  CHECK(c.extrapolated.tokens == c.full.tokens);
  CHECK(c.extrapolated.bubble == c.full.bubble);
}

}  // namespace

TEST_CASE("the micro-batch counts the estimate builds at: valid for the schedule, past its warm-up, fewer than M") {
  using wl::Schedule;
  // 1F1B and GPipe: any two counts from max(2, p) on.
  CHECK(tools::extrapolation_microbatches(Schedule::one_f_one_b, 4, 64) == std::pair{4, 5});
  CHECK(tools::extrapolation_microbatches(Schedule::gpipe, 1, 64) == std::pair{2, 3});
  CHECK_FALSE(tools::extrapolation_microbatches(Schedule::one_f_one_b, 4, 9).has_value());  // 4 + 5 = 9: no saving
  CHECK(tools::extrapolation_microbatches(Schedule::one_f_one_b, 4, 10).has_value());
  // Interleaved: multiples of p from 2p; the zero-bubble replays a period apart; DualPipe even.
  CHECK(tools::extrapolation_microbatches(Schedule::interleaved_1f1b, 8, 64) == std::pair{16, 24});
  CHECK(tools::extrapolation_microbatches(Schedule::zb_2p, 4, 64) == std::pair{8, 12});
  CHECK(tools::extrapolation_microbatches(Schedule::dualpipe, 3, 64) == std::pair{6, 8});
  CHECK_FALSE(tools::extrapolation_microbatches(Schedule::interleaved_1f1b, 8, 40).has_value());
}

TEST_CASE("every schedule: the estimate from two smaller programs equals the candidate's own program's") {
  // 32 GPUs: tp 2 · pp 4 · dp 4; 64 micro-batches of 1 (global batch 256).
  const std::string common = "  tp: 2\n  pp: 4\n  microbatch_size: 1\n  global_batch: 256\n";
  check_same("gpipe", common + "  schedule: gpipe");
  check_same("1f1b", common + "  schedule: 1f1b");
  check_same("interleaved v2", common + "  schedule: interleaved-1f1b\n  virtual_stages: 2");
  check_same("zb-h1", common + "  schedule: zb-h1");
  check_same("zb-2p", common + "  schedule: zb-2p");
  check_same("zb-v", common + "  schedule: zb-v");
  check_same("dualpipe (MoE, ep 4)", common + "  schedule: dualpipe\n  ep: 4", true);
  // An odd micro-batch count, not on the line's grid: 1f1b at 1 · 4 · 8 = 32 GPUs, 37 micro-batches.
  check_same("1f1b, 37 micro-batches", "  tp: 1\n  pp: 4\n  microbatch_size: 1\n  global_batch: 296\n  schedule: 1f1b");
}

TEST_CASE("the switches that add work per micro-batch or once per step keep the estimate affine in M") {
  const std::string common = "  tp: 2\n  pp: 4\n  microbatch_size: 1\n  global_batch: 256\n  schedule: 1f1b\n";
  check_same("ZeRO-1 (gathers at the first forward)", common + "  zero: 1");
  check_same("ZeRO-2 (a reduce-scatter every micro-batch)", common + "  zero: 2");
  check_same("ZeRO-3, pp 1 (gathers every pass)", "  tp: 2\n  pp: 1\n  microbatch_size: 1\n  global_batch: 256\n  zero: 3");
  check_same("full recompute", common + "  recompute: full");
  check_same("selective recompute, sequence parallel", common + "  recompute: selective\n  sequence_parallel: true");
  check_same("activation offload", common + "  offload: {activations: true}");
  check_same("context parallel 2", "  tp: 2\n  pp: 2\n  cp: 2\n  microbatch_size: 1\n  global_batch: 256\n  schedule: 1f1b");
  check_same("MoE, ep 4", common + "  ep: 4", true);
  check_same("TP comm overlap", common, false, "tp_comm_overlap: true");
  check_same("gradient reduction after the backward", common + "  zero: 1", false, "dp_overlap: false");
}

TEST_CASE("few micro-batches: the candidate's own program, and the same estimate either way") {
  // 1f1b at p 4 with 8 micro-batches: 4 + 5 = 9 >= 8, so the estimate builds M itself.
  const Compared c = compare(scenario_yaml("  tp: 2\n  pp: 4\n  microbatch_size: 4\n  global_batch: 128\n  schedule: 1f1b", false));
  CHECK_FALSE(c.used_pair);
  CHECK(c.extrapolated.step_s == c.full.step_s);
  CHECK(c.extrapolated.peak_bytes == c.full.peak_bytes);
}

// tests/test_search_estimate.cpp — the search's analytic stage priced from a program at
// fewer micro-batches and one micro-batch's ops, its peak walked over that program's
// items (tools/study/search_estimate.hpp): on every schedule and the switches that add
// per-micro-batch or once-per-step work, the estimate, the memory peak and the FLOPs
// equal those of the candidate's own program, and no second program is built for the peak.
//
// Tolerances: the step time sums ~10^4 op durations in another order and grouping
// (one micro-batch's tally times M − a): rounding of 1e-16 per term stays under ~1e-12
// relative; 1e-9 leaves room. The peak is the same program's integer byte counts (equal)
// and the FLOPs a sum of a few thousand terms scaled by M / a: 1e-12.
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
  bool extrapolates = false;
  bool peak_rebuilt = false;  // the small program's items did not tell the peak
};

Compared compare(const std::string& yaml) {
  const wl::ResolvedScenario rs = tools::load_scenario_string(yaml, "extrapolation.yaml");
  const wl::Scenario& sc = rs.scenario();
  const topo::Cluster cluster = topo::Cluster::build(wl::effective_cluster(sc));
  tools::EstimateCaches caches(cluster, sc.cluster.ideal_network, wl::collective_costs_of(sc.gpu));
  tools::ComputeSlowdowns slow;
  slow.rho = wl::overlap_slowdown(wl::compute_profile_of(sc.gpu));
  slow.noise = wl::scale_noise_factor(sc.implementation.compute_variability, 32);
  Compared c;
  const auto plan = tools::extrapolation_plan(sc);
  c.extrapolates = plan.has_value();
  std::optional<tools::EstimatePrograms> a, b;
  c.extrapolated = tools::analyze(sc, caches, slow, a, tools::EstimateBuild::extrapolate);
  c.full = tools::analyze(sc, caches, slow, b, tools::EstimateBuild::full);
  if (plan && a) CHECK(a->built_at == plan->built_at);
  c.peak_rebuilt = a && a->peak_built_at;
  if (b) CHECK(b->built_at == sc.layout.microbatches);
  return c;
}

double rel(double x, double y) { return std::abs(x - y) / std::max(std::abs(y), 1e-300); }

void check_same(const std::string& what, const std::string& layout, bool moe = false, const std::string& implementation = "") {
  CAPTURE(what);
  const Compared c = compare(scenario_yaml(layout, moe, implementation));
  CHECK(c.extrapolates);
  CHECK_FALSE(c.peak_rebuilt);
  REQUIRE(c.full.rejected == "");
  CHECK(c.extrapolated.rejected == c.full.rejected);
  CHECK(rel(c.extrapolated.step_s, c.full.step_s) <= 1e-9);
  CHECK(rel(c.extrapolated.peak_bytes, c.full.peak_bytes) <= 1e-12);
  CHECK(rel(c.extrapolated.model_flops, c.full.model_flops) <= 1e-12);
  CHECK(c.extrapolated.tokens == c.full.tokens);
  CHECK(c.extrapolated.bubble == c.full.bubble);
}

}  // namespace

namespace {

/// The plan for a layout with `schedule` over pp stages and M micro-batches (ZeRO-1).
std::optional<tools::ExtrapolationPlan> plan_for(wl::Schedule schedule, int pp, int microbatches, int zero = 1, int dp = 8) {
  wl::Scenario sc;
  sc.layout.schedule = schedule;
  sc.layout.pp = pp;
  sc.layout.dp = dp;
  sc.layout.microbatches = microbatches;
  sc.layout.zero = zero;
  return tools::extrapolation_plan(sc);
}

}  // namespace

TEST_CASE("where the estimate builds: the fewest the schedule takes with a middle micro-batch; the peak past the warm-up") {
  using wl::Schedule;
  using tools::ExtrapolationPlan;
  // 1F1B: 3 micro-batches (a first, a middle, a last), the peak at M up to max(3, p).
  CHECK(plan_for(Schedule::one_f_one_b, 4, 64) == ExtrapolationPlan{3, 1, 4});
  CHECK(plan_for(Schedule::one_f_one_b, 1, 64) == ExtrapolationPlan{3, 1, 3});
  CHECK(plan_for(Schedule::one_f_one_b, 8, 5) == ExtrapolationPlan{3, 1, 5});
  CHECK_FALSE(plan_for(Schedule::one_f_one_b, 4, 3).has_value());  // no saving
  // Interleaved: a multiple of p of at least 3, the peak from 2p; the zero-bubble replays.
  CHECK(plan_for(Schedule::interleaved_1f1b, 8, 64) == ExtrapolationPlan{8, 4, 16});
  CHECK(plan_for(Schedule::interleaved_1f1b, 2, 64) == ExtrapolationPlan{4, 2, 4});
  CHECK(plan_for(Schedule::zb_2p, 4, 64) == ExtrapolationPlan{3, 1, 8});
  CHECK_FALSE(plan_for(Schedule::interleaved_1f1b, 8, 8).has_value());
  // Never: GPipe (its peak grows with M), DualPipe (a micro-batch's ops on a stage are
  // one direction's), ZeRO-2/3 over several ranks (unlabelled per-micro-batch traffic).
  CHECK_FALSE(plan_for(Schedule::gpipe, 4, 64).has_value());
  CHECK_FALSE(plan_for(Schedule::dualpipe, 4, 64).has_value());
  CHECK_FALSE(plan_for(Schedule::one_f_one_b, 1, 64, 2).has_value());
  CHECK_FALSE(plan_for(Schedule::one_f_one_b, 1, 64, 3).has_value());
  CHECK(plan_for(Schedule::one_f_one_b, 1, 64, 3, 1).has_value());  // ZeRO-3 over one rank shards nothing
  // Activation offload's reloads hold memory across items: built past the warm-up.
  wl::Scenario offload;
  offload.layout.pp = 4;
  offload.layout.dp = 8;
  offload.layout.microbatches = 64;
  offload.layout.offload.activations = true;
  CHECK(tools::extrapolation_plan(offload) == ExtrapolationPlan{4, 2, 4});
}

TEST_CASE("every schedule: the estimate from two smaller programs equals the candidate's own program's") {
  // 32 GPUs: tp 2 · pp 4 · dp 4; 64 micro-batches of 1 (global batch 256).
  const std::string common = "  tp: 2\n  pp: 4\n  microbatch_size: 1\n  global_batch: 256\n";
  // GPipe builds M itself (its peak grows with M): the same estimate either way.
  const Compared g = compare(scenario_yaml(common + "  schedule: gpipe", false));
  CHECK_FALSE(g.extrapolates);
  CHECK(g.extrapolated.step_s == g.full.step_s);
  check_same("1f1b", common + "  schedule: 1f1b");
  check_same("interleaved v2", common + "  schedule: interleaved-1f1b\n  virtual_stages: 2");
  check_same("zb-h1", common + "  schedule: zb-h1");
  check_same("zb-2p", common + "  schedule: zb-2p");
  check_same("zb-v", common + "  schedule: zb-v");
  const Compared d = compare(scenario_yaml(common + "  schedule: dualpipe\n  ep: 4", true));
  CHECK_FALSE(d.extrapolates);
  CHECK(d.extrapolated.step_s == d.full.step_s);
  // An odd micro-batch count, not on the line's grid: 1f1b at 1 · 4 · 8 = 32 GPUs, 37 micro-batches.
  check_same("1f1b, 37 micro-batches", "  tp: 1\n  pp: 4\n  microbatch_size: 1\n  global_batch: 296\n  schedule: 1f1b");
}

TEST_CASE("the switches that add work per micro-batch or once per step keep the estimate affine in M") {
  const std::string common = "  tp: 2\n  pp: 4\n  microbatch_size: 1\n  global_batch: 256\n  schedule: 1f1b\n";
  check_same("ZeRO-1 (gathers at the first forward)", common + "  zero: 1");
  check_same("ZeRO-2 with a full gradient buffer", common + "  zero: 2\n  accumulate_unsharded: true");
  check_same("full recompute", common + "  recompute: full");
  check_same("selective recompute, sequence parallel", common + "  recompute: selective\n  sequence_parallel: true");
  check_same("activation offload", common + "  offload: {activations: true}");
  check_same("context parallel 2", "  tp: 2\n  pp: 2\n  cp: 2\n  microbatch_size: 1\n  global_batch: 256\n  schedule: 1f1b");
  check_same("MoE, ep 4", common + "  ep: 4", true);
  check_same("MoE, ep 4, interleaved, ZeRO-1", "  tp: 2\n  pp: 4\n  ep: 4\n  zero: 1\n  microbatch_size: 1\n  global_batch: 256\n"
             "  schedule: interleaved-1f1b\n  virtual_stages: 2", true);
  check_same("zb-h1, full recompute", "  tp: 2\n  pp: 4\n  microbatch_size: 1\n  global_batch: 256\n  schedule: zb-h1\n"
             "  recompute: full");
  check_same("interleaved, activation offload", "  tp: 2\n  pp: 4\n  microbatch_size: 1\n  global_batch: 256\n"
             "  schedule: interleaved-1f1b\n  virtual_stages: 2\n  offload: {activations: true}");
  check_same("TP comm overlap", common, false, "tp_comm_overlap: true");
  check_same("gradient reduction after the backward", common + "  zero: 1", false, "dp_overlap: false");
  // DeepSpeed: the first micro-batch's gradients become .grad as they are (no add), the
  // weight gathers on the compute stream, blocking pipeline sends.
  check_same("deepspeed preset, ZeRO-1", common + "  zero: 1", false, "preset: deepspeed");
}

TEST_CASE("few micro-batches: the candidate's own program, or the walk at M itself") {
  // 1f1b with 3 micro-batches: the plan would build 3, so the estimate builds M itself.
  const Compared c = compare(scenario_yaml("  tp: 2\n  pp: 4\n  microbatch_size: 8\n  global_batch: 96\n  schedule: 1f1b", false));
  CHECK_FALSE(c.extrapolates);
  CHECK(c.extrapolated.step_s == c.full.step_s);
  CHECK(c.extrapolated.peak_bytes == c.full.peak_bytes);
  // 4 micro-batches over 4 stages, inside the warm-up: built at 3, the peak walked at 4.
  check_same("1f1b, M = p", "  tp: 2\n  pp: 4\n  microbatch_size: 8\n  global_batch: 128\n  schedule: 1f1b");
  check_same("zb-h1, M = p + 1", "  tp: 2\n  pp: 4\n  microbatch_size: 8\n  global_batch: 160\n  schedule: zb-h1");
}

TEST_CASE("the rank table kept per layout: what the estimate reads of the candidate's own, shared by its siblings") {
  // An MoE layout with ep and cp, and an HSDP one: the memo's table is the one
  // build_program assigns (each stage's first rank's groups and their devices, the
  // stage's most loaded rank, every rank's stage and load), FLOPs summed over it the
  // same to the bit; a candidate that differs in what moves no rank gets the same table.
  for (const auto& c : {std::pair<std::string, bool>{"  tp: 2\n  cp: 2\n  pp: 2\n  ep: 4\n  global_batch: 64", true},
                        std::pair<std::string, bool>{"  pp: 2\n  zero: 3\n  shard_group: 4\n  global_batch: 64", false}}) {
    // Named copies, not structured bindings: clang's CAPTURE lambdas cannot capture those.
    const std::string layout = c.first;
    const bool moe = c.second;
    CAPTURE(layout);
    const wl::ResolvedScenario rs = tools::load_scenario_string(scenario_yaml(layout, moe), "placement.yaml");
    const wl::Scenario& sc = rs.scenario();
    const wl::BuiltProgram built = wl::build_program(sc);
    const tools::PlacedRanks own = tools::placed_ranks(built.program);
    tools::PlacementMemo memo;
    const auto kept = memo.of(sc);
    REQUIRE(kept->stages.size() == own.stages.size());
    for (std::size_t st = 0; st < own.stages.size(); ++st) {
      CHECK(kept->stages[st].present);
      CHECK(kept->stages[st].group == own.stages[st].group);
      CHECK(kept->stages[st].devices == own.stages[st].devices);
      CHECK(kept->stages[st].max_work_scale == own.stages[st].max_work_scale);
    }
    REQUIRE(kept->ranks.size() == built.program.ranks.size());
    for (std::size_t r = 0; r < kept->ranks.size(); ++r) {
      CHECK(kept->ranks[r].stage == built.program.ranks[r].stage);
      CHECK(kept->ranks[r].work_scale == built.program.ranks[r].work_scale);
    }
    const wl::ProgramTotals a = wl::program_totals(built.program), b = wl::program_totals(built.program, kept->ranks);
    CHECK(a.model_flops == b.model_flops);
    CHECK(a.hardware_flops == b.hardware_flops);
    wl::Scenario sibling = sc;
    sibling.layout.microbatch_size *= 2;
    sibling.layout.recompute = wl::Recompute::full;
    CHECK(memo.of(sibling) == kept);
    sibling.layout.placement = {"dp", "tp", "pp"};
    CHECK(memo.of(sibling) != kept);
  }
}

TEST_CASE("the rank table kept per layout holds a tied table's pairs where the schedule splits the model's ends") {
  // A tied table over two stages: 1F1B keeps its copy on the last stage and pairs the end
  // stages' ranks on the pp slot; zb-v runs both ends on stage 0, no pair. The two are
  // one layout to every other field of the key, yet their tables differ: each gets its own.
  const wl::ResolvedScenario rs = tools::load_scenario_string(scenario_yaml("  pp: 2\n  global_batch: 64", false), "tied.yaml");
  wl::Scenario sc = rs.scenario();
  sc.model.tied_embeddings = true;
  tools::PlacementMemo memo;
  const auto split = memo.of(sc);
  const auto pp = static_cast<std::size_t>(wl::Axis::pp);
  REQUIRE(split->stages.size() == 2);
  for (const auto& st : split->stages) CHECK(st.group[pp] >= 0);
  wl::Scenario v = sc;
  v.layout.schedule = wl::Schedule::zb_v;
  v.layout.virtual_stages = 2;
  const auto ends_on_one_stage = memo.of(v);
  CHECK(ends_on_one_stage != split);
  for (const auto& st : ends_on_one_stage->stages) CHECK(st.group[pp] < 0);
  // Each is the table build_program assigns.
  for (const wl::Scenario* s : {&sc, &v}) {
    const tools::PlacedRanks own = tools::placed_ranks(wl::build_program(*s).program);
    const auto kept = memo.of(*s);
    for (std::size_t st = 0; st < own.stages.size(); ++st) CHECK(kept->stages[st].group == own.stages[st].group);
  }
}

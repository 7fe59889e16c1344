// tests/test_diagnostics.cpp — workloads/advice/diagnostics.hpp: each failure mode simulated,
// warned about and priced, checked against its closed form.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "fixtures.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/model/model.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/program_totals.hpp"
#include "topology/cluster.hpp"
#include "topology/planner.hpp"
#include "workloads/simulate.hpp"

using namespace ls;
using namespace ls::wl;
using ls::test::small_model;
using ls::test::uniform_pipeline;

namespace {

const Warning* find(const Result& r, const std::string& code) {
  for (const auto& w : r.warnings)
    if (w.code == code) return &w;
  return nullptr;
}

}  // namespace

TEST_CASE("one device 1.5x slower in a uniform 1f1b pipeline") {
  // Free communication, per-micro-batch stage times F and B, the last stage slowed
  // by f. The slow stage paces the pipeline and never idles: its first forward
  // starts after (p−1)·F, it works m·f·(F+B), and the last gradient drains through
  // the p−1 fast stages in (p−1)·B. Stage 0 then runs its optimizer step:
  //   T = (p−1)(F+B) + m·f·(F+B) + opt      (Σ of the other stages + m × the slow one).
  // (A slow middle stage adds schedule-specific warm-up and cool-down waits.)
  const int p = 4, m = 8;
  const double f = 1.5;
  Scenario s = uniform_pipeline(p, m);
  s.perturbations.devices.push_back({"node0.gpu3", f});
  const Result r = simulate(resolve(s));
  const BuiltProgram bp = build_program(resolve(s));
  double F = 0, B = 0;
  for (const auto& op : bp.program.stages[0].streams[0]) {
    if (op.labels[wl::label::microbatch] != 0 || op.kind != sim::OpKind::compute) continue;
    (wl::work_of(op) == wl::Work::forward ? F : B) += op.duration.seconds();
  }
  const double opt = bp.program.stages[0].streams[0].back().duration.seconds();
  const double expect = (p - 1) * (F + B) + m * f * (F + B) + opt;
  CHECK(r.step_time_s == doctest::Approx(expect).epsilon(1e-6));
  const Warning* w = find(r, "straggler");
  REQUIRE(w != nullptr);
  CHECK(w->message.find("node0.gpu3") != std::string::npos);
  // The warning prices the straggler against the same run without it:
  // (m+p−1)(F+B) + opt.
  const double healthy = (m + p - 1) * (F + B) + opt;
  CHECK(w->message.find("Without the slow device") != std::string::npos);
  CHECK(w->message.find(fmt::format("{:.4g} s per step", healthy)) != std::string::npos);

  // The straggler by name: its cost, its stage's spread, and the critical path. The
  // slow last stage works m·f·(F+B) of the step, all of it on the critical path.
  REQUIRE(r.perturbed_devices.size() == 1);
  const auto& pd = r.perturbed_devices[0];
  CHECK(r.device_names[static_cast<std::size_t>(pd.device)] == "node0.gpu3");
  CHECK(pd.compute_slowdown == 1.5);
  CHECK(pd.stage == 3);
  CHECK(pd.cost_s == doctest::Approx(r.step_time_s - healthy).epsilon(1e-6));
  CHECK(r.per_stage[3].slowest_device == pd.device);
  REQUIRE_FALSE(r.critical_path.devices.empty());
  CHECK(r.critical_path.devices.front().device == pd.device);
  CHECK(r.critical_path.devices.front().share >= m * f * (F + B) / r.step_time_s * (1 - 1e-6));
  CHECK(pd.critical_share == r.critical_path.devices.front().share);
}

TEST_CASE("the bubble warning names what adds to the schedule's bubble: the straggler, else unequal stages") {
  // p 4, m 64: analytic bubble 3/67 = 4.5 %. One device 1.5x slower paces every stage,
  // so the others idle about a third of the step: the warning blames it by name.
  Scenario s = uniform_pipeline(4, 64);
  s.perturbations.devices.push_back({"node0.gpu1", 1.5});
  const Result r = simulate(resolve(s));
  REQUIRE(r.bubble_fraction > 0.10);
  const Warning* w = find(r, "bubble");
  REQUIRE(w != nullptr);
  CHECK(w->message.find("analytic bubble is only 4.5%") != std::string::npos);
  CHECK(w->message.find("the straggler node0.gpu1 (1.50x)") != std::string::npos);
  // Without the straggler but with one stage doing twice the layers: unequal stages.
  Scenario uneven = uniform_pipeline(4, 64);
  uneven.model.layers = 10;
  uneven.layout.stage_layers_mode = StageLayersMode::explicit_list;
  uneven.layout.stage_layers = {4, 2, 2, 2};
  const Result ru = simulate(resolve(uneven));
  const Warning* wu = find(ru, "bubble");
  REQUIRE(wu != nullptr);
  CHECK(wu->message.find("unequal stages: stage 0 computes") != std::string::npos);
  CHECK(wu->message.find("straggler") == std::string::npos);
}

TEST_CASE("bubble advice keeps a fixed global batch") {
  // p = 4, m = 8 (global batch 8 = m·b·dp): analytic bubble 3/11 = 27 %. With the batch
  // fixed the advice may interleave or shrink the micro-batch, never add micro-batches.
  Scenario s = uniform_pipeline(4, 8);
  s.layout.microbatch_size = 2;
  s.layout.microbatches = 4;
  s.layout.global_batch = 8;
  const Result r = simulate(resolve(s));
  const Warning* w = find(r, "bubble");
  REQUIRE(w != nullptr);
  CHECK(w->message.find("keeping the global batch of 8 sequences") != std::string::npos);
  CHECK(w->message.find("microbatch_size: 1 (m = 8") != std::string::npos);
  CHECK(w->message.find("microbatches:") == std::string::npos);  // would change the batch
  // Given as micro-batches instead, adding micro-batches is offered, with its batch.
  s.layout.global_batch = 0;
  const Result r2 = simulate(resolve(s));
  const Warning* w2 = find(r2, "bubble");
  REQUIRE(w2 != nullptr);
  CHECK(w2->message.find("a global batch of") != std::string::npos);
}

TEST_CASE("jitter: same seed same result, different seed different, p99 >= p50") {
  Scenario s = uniform_pipeline(4, 8);
  s.perturbations.jitter.compute_cv = 0.05;
  s.perturbations.jitter.seed = 7;
  s.simulation.steps = 8;
  const Result a = simulate(resolve(s)), b = simulate(resolve(s));
  CHECK(a.step_stats.step_s == b.step_stats.step_s);
  s.perturbations.jitter.seed = 8;
  const Result c = simulate(resolve(s));
  CHECK(a.step_stats.step_s != c.step_stats.step_s);
  CHECK(a.step_stats.p99_s >= a.step_stats.p50_s);
  CHECK(a.step_stats.max_s >= a.step_stats.p99_s);
  // Steps differ from one another (each step draws its own noise).
  CHECK(*std::max_element(a.step_stats.step_s.begin(), a.step_stats.step_s.end()) >
        *std::min_element(a.step_stats.step_s.begin(), a.step_stats.step_s.end()));
}

namespace {

Scenario tp_scenario(int nodes, int gpus_per_node, int tp, int dp) {
  Scenario s;
  s.name = "tp";
  ls::test::a100_era_cluster(s, nodes, gpus_per_node);
  s.gpu = *gpu_preset("a100-80gb");
  s.model = small_model(16);
  s.layout.tp = tp;
  s.layout.dp = dp;
  s.layout.microbatches = 4;
  s.layout.embedding_free = true;
  return s;
}

}  // namespace

TEST_CASE("TP 16 over two 8-GPU nodes: reported, and slower by what the IB rail predicts") {
  // Same layout on one 16-GPU node vs two 8-GPU nodes: only the TP links differ.
  // One layer pass has 2 all-reduces of S = b·s·h·2 bytes, 4 per layer per micro-batch.
  //  one node, flat ring of 16:      2·15/16·S/B_nv + 30·α_nv
  //  two nodes, hierarchical (NCCL): RS in node 7/8·S/B_nv + 7·α_nv,
  //                                  AR per rail over 2 nodes 2·(1/2)·(S/8)/B_ib + 2·α_ib,
  //                                  AG in node 7/8·S/B_nv + 7·α_nv
  // TP blocks the compute stream (pp = dp = 1), so the step grows by
  // 4·L·m·(hierarchical − flat).
  const double S = 1024.0 * 1024 * 2, Bnv = 300e9, Bib = 25e9, anv = 1e-6, aib = 3e-6;
  const double flat = 2 * 15.0 / 16 * S / Bnv + 30 * anv;
  const double hier = 2 * (7.0 / 8 * S / Bnv + 7 * anv) + (S / 8) / Bib + 2 * aib;
  const Result one = simulate(resolve(tp_scenario(1, 16, 16, 1)));
  const Result two = simulate(resolve(tp_scenario(2, 8, 16, 1)));
  const double n_ar = 4.0 * 16 * 4;
  CHECK(two.step_time_s - one.step_time_s == doctest::Approx(n_ar * (hier - flat)).epsilon(0.01));
  CHECK(find(two, "tp-crosses-nodes") != nullptr);
  CHECK(find(one, "tp-crosses-nodes") == nullptr);
  // TP 8 with dp 2 on the same two nodes stays inside each node.
  CHECK(find(simulate(resolve(tp_scenario(2, 8, 8, 2))), "tp-crosses-nodes") == nullptr);
  // Placing dp fastest splits TP 8 groups across nodes: reported and priced by the
  // what-if with placement [tp, dp, pp].
  Scenario bad = tp_scenario(2, 8, 8, 2);
  bad.layout.placement = {"dp", "tp", "pp"};
  const Result rb = simulate(resolve(bad));
  const Warning* w = find(rb, "tp-crosses-nodes");
  REQUIRE(w != nullptr);
  CHECK(w->message.find("placement [tp, dp, pp]") != std::string::npos);
}

TEST_CASE("embedding/LM-head imbalance: silent on GPT-3 175B pp 8 (no faster split), warned and fixed where a layer can move") {
  // GPT-3: the LM head (2·b·s·h·V) is a third of a layer (24·b·s·h² + 4·b·s²·h), so
  // the last of 8 stages of 12 layers computes ≈ 2.8 % more than the others.
  Scenario g;
  g.name = "gpt3";
  g.cluster.nodes = 8;
  g.cluster.gpus_per_node = 8;
  g.cluster.ideal_network = true;
  g.gpu = *gpu_preset("a100-80gb");
  g.model = *model_preset("gpt3-175b");
  g.layout.tp = 8;
  g.layout.pp = 8;
  g.layout.microbatches = 16;
  g.layout.sequence_parallel = true;
  g.layout.recompute = Recompute::selective;
  const Result r = simulate(resolve(g));
  // The last stage is slower, but no whole-layer split is predicted faster (balanced
  // gives the same 12 per stage), so there is nothing to advise.
  CHECK(find(r, "stage-imbalance") == nullptr);
  CHECK(r.per_stage[7].compute_s / r.per_stage[1].compute_s == doctest::Approx(1.028).epsilon(0.005));
  // No integer move helps GPT-3 here (moving one layer makes some stage 13 layers
  // long); balanced keeps 12 per stage and never does worse.
  g.layout.stage_layers_mode = StageLayersMode::balanced;
  CHECK(simulate(resolve(g)).step_time_s <= r.step_time_s * (1 + 1e-12));

  // Llama-3 8B: V = 128256 makes the head ≈ 1.7 layers, so with pp 4 the last stage
  // is 21 % slower; balanced moves 3 layers off it and the step gets ≥ 5 % faster.
  Scenario l = g;
  l.cluster.nodes = 4;
  l.model = *model_preset("llama3-8b");
  l.layout.pp = 4;
  l.layout.stage_layers_mode = StageLayersMode::auto_even;
  const Result ra = simulate(resolve(l));
  const Warning* wl = find(ra, "stage-imbalance");
  REQUIRE(wl != nullptr);
  CHECK(wl->message.find("stage 3") != std::string::npos);
  CHECK(wl->message.find("stage_layers: [") != std::string::npos);  // names the split ...
  CHECK(wl->message.find("simulated: ") != std::string::npos);      // ... and its step time
  l.layout.stage_layers_mode = StageLayersMode::balanced;
  const Result rbal = simulate(resolve(l));
  CHECK(rbal.per_stage[3].layers < ra.per_stage[3].layers);
  CHECK(rbal.step_time_s < 0.95 * ra.step_time_s);
}

TEST_CASE("halving one spine link slows a DP all-reduce that uses it, not one that does not") {
  // 4 nodes, 2 per leaf, 4 spines, rail-optimised: the rail-0 DP ring
  // (node0.gpu0 → node1.gpu0 → node2.gpu0 → node3.gpu0) leaves leaf0 once, through
  // the one spine ECMP picked for that hop. Halving that leaf0 uplink halves the
  // ring's bottleneck there; halving another leaf0 uplink, which no ring uses, changes
  // nothing (the other rails have leaves of their own).
  Scenario s = tp_scenario(4, 8, 8, 4);
  s.cluster.inter.nodes_per_leaf = 2;
  s.cluster.inter.spines = 4;
  const auto cluster = topo::Cluster::build(s.cluster);
  topo::Planner planner(cluster);
  const std::int32_t ring[] = {0, 8, 16, 24};
  const auto& plan = planner.collective(ring, sim::CollOp::all_reduce, 1e6);
  std::string used, unused;
  for (int j = 0; j < 4; ++j) {
    const std::string name = fmt::format("leaf0->spine{}", j);
    const auto id = cluster.find_link(name);
    REQUIRE(id.has_value());
    const bool on_path = std::find(plan.links.begin(), plan.links.end(), *id) != plan.links.end();
    if (on_path && used.empty()) used = name;
    if (!on_path && unused.empty()) unused = name;
  }
  REQUIRE(!used.empty());
  REQUIRE(!unused.empty());
  const Result base = simulate(resolve(s));
  Scenario slow = s, other = s;
  slow.perturbations.links.push_back({used, 0.5});
  other.perturbations.links.push_back({unused, 0.5});
  const Result rs = simulate(resolve(slow)), ro = simulate(resolve(other));
  CHECK(rs.comm[static_cast<int>(wl::Axis::dp)].exposed_s > base.comm[static_cast<int>(wl::Axis::dp)].exposed_s * 1.01);
  CHECK(rs.step_time_s > base.step_time_s);
  CHECK(ro.step_time_s == base.step_time_s);
}

TEST_CASE("a down spine uplink (bandwidth_factor 0): the DP all-reduce takes another spine, the step completes") {
  // Same cluster as above: 4 nodes, 2 per leaf, 4 spines, each leaf's uplink capacity
  // 2·25 GB/s split over its 4 spine links (12.5 GB/s each). The rail-0 DP ring leaves
  // leaf0 through the uplink ECMP picked; with that link down (factor 0 → down_links,
  // see effective_cluster in simulate.cpp) the hop is re-hashed over the 3 other
  // spines, whose leaf0 uplinks have the same capacity and carry no other ring, so
  // the step is no faster and — the point — finishes (a zero-capacity link would
  // stall its flows forever).
  Scenario s = tp_scenario(4, 8, 8, 4);
  s.cluster.inter.nodes_per_leaf = 2;
  s.cluster.inter.spines = 4;
  const std::int32_t ring[] = {0, 8, 16, 24};
  std::string used;
  {
    const auto cluster = topo::Cluster::build(s.cluster);
    topo::Planner planner(cluster);
    const auto& plan = planner.collective(ring, sim::CollOp::all_reduce, 1e6);
    for (int j = 0; j < 4 && used.empty(); ++j) {
      const std::string name = fmt::format("leaf0->spine{}", j);
      if (std::find(plan.links.begin(), plan.links.end(), *cluster.find_link(name)) != plan.links.end()) used = name;
    }
  }
  REQUIRE(!used.empty());
  {
    topo::ClusterSpec down = s.cluster;
    down.down_links = {used};
    const auto cluster = topo::Cluster::build(down);
    topo::Planner planner(cluster);
    const auto& plan = planner.collective(ring, sim::CollOp::all_reduce, 1e6);
    CHECK(std::find(plan.links.begin(), plan.links.end(), *cluster.find_link(used)) == plan.links.end());
    int other_uplinks = 0;
    for (int j = 0; j < 4; ++j) {
      const auto id = *cluster.find_link(fmt::format("leaf0->spine{}", j));
      other_uplinks += std::find(plan.links.begin(), plan.links.end(), id) != plan.links.end();
    }
    CHECK(other_uplinks == 1);  // the hop still leaves leaf0, through another spine
  }
  const Result base = simulate(resolve(s));
  Scenario dead = s;
  dead.perturbations.links.push_back({used, 0.0});
  const Result rd = simulate(resolve(dead));
  CHECK(rd.step_time_s >= base.step_time_s * (1 - 1e-12));
  CHECK(rd.step_time_s < 2 * base.step_time_s);  // finite: the hop found equal capacity
  for (const auto& l : rd.busiest_links) CHECK(l.name != used);  // nothing crosses it
  CHECK_NOTHROW((void)layout_report(resolve(dead)));
}

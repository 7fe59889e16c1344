// tests/test_symmetry.cpp — the symmetric fast path (workloads/build/symmetry.hpp) gives
// the numbers of the full simulation: over a matrix of layouts, schedules, ZeRO
// stages, MoE, fabrics and placements, and over irregular fabrics and perturbations
// that split the replicas into classes, `simulation.symmetry: auto` and `off` agree
// on the step time to 1e-9 relative (integer-picosecond time: the two runs differ
// only in floating-point summation order, ≪ 1 ps per event) and on every number of
// the JSON summary to 1e-6 (sums over ranks and links in another order), strings
// exactly; only the engine's own counters (events, symmetry, classes) may differ.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <tuple>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/report/report_json.hpp"
#include "engine_fixtures.hpp"
#include "model_fixtures.hpp"
#include "sim/engine.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/simulate.hpp"

using namespace ls;

namespace {

// 4 nodes × 4 GPUs, a small GQA model: every axis can take degree 2.
const std::string kBaseText = test::with_small_gqa_model(R"(name: sym
cluster:
  gpu: {preset: h100-sxm}
  nodes: 4
  gpus_per_node: 4
  inter_node: {kind: infiniband, bandwidth: 400 Gb/s, latency: 3 us, nics_per_node: 4}
)",
                                                         R"(layout:
  tp: 2
  pp: 2
  microbatches: 8
)");
const char* const kBase = kBaseText.c_str();

const char* kMoe = R"(name: sym-moe
cluster:
  gpu: {preset: h100-sxm}
  nodes: 4
  gpus_per_node: 4
model:
  name: small-moe
  layers: 4
  hidden: 1024
  heads: 8
  kv_heads: 4
  ffn_hidden: 2048
  vocab: 32000
  seq_len: 1024
  activation: swiglu
  moe: {experts: 8, top_k: 2}
layout:
  tp: 2
  pp: 2
  ep: 2
  microbatches: 4
)";

/// Every number in `a` and `b` within rel (of the larger magnitude, floor 1e-12),
/// strings and shapes equal. `path` names the first difference.
void compare(const nlohmann::json& a, const nlohmann::json& b, const std::string& path, double rel) {
  INFO(path);
  REQUIRE(a.type() == b.type());
  if (a.is_object()) {
    REQUIRE(a.size() == b.size());
    for (auto it = a.begin(); it != a.end(); ++it) {
      REQUIRE(b.contains(it.key()));
      compare(it.value(), b.at(it.key()), path + "." + it.key(), rel);
    }
  } else if (a.is_array()) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) compare(a[i], b[i], path + "[" + std::to_string(i) + "]", rel);
  } else if (a.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    CHECK(std::abs(x - y) <= rel * std::max({std::abs(x), std::abs(y), 1e-12}));
  } else {
    CHECK(a == b);
  }
}

struct Outcome {
  nlohmann::json json;
  double step = 0;
  std::string symmetry;
  int ranks_simulated = 0;
  int classes = 0;
  int mirrored_links = 0;
  std::string alike_flows;
  std::uint64_t events = 0;
  /// Trace spans as (device, track, start ps, end ps, flow id, sending end), sorted.
  std::vector<std::tuple<int, int, std::int64_t, std::int64_t, std::uint64_t, bool>> spans;
};

Outcome run(const char* yaml, std::vector<std::string> sets, const std::string& mode, bool trace = false) {
  sets.push_back("simulation.symmetry=" + mode);
  const auto sc = tools::load_scenario_string(yaml, "sym.yaml", sets);
  wl::SimOptions o;
  o.trace = trace;
  if (trace) o.trace_devices = {"all"};
  const wl::Result r = wl::simulate(sc, o);
  Outcome out{tools::to_json(r), r.step_time_s, r.symmetry, r.ranks_simulated, r.replica_classes, r.mirrored_links, r.alike_flows, r.events, {}};
  out.json.erase("engine");
  for (const auto& sp : r.spans)
    out.spans.emplace_back(sp.device, sp.track, sp.start.ps(), sp.end.ps(), sp.flow_id, sp.flow_out);
  std::sort(out.spans.begin(), out.spans.end());
  return out;
}

/// Runs both modes and compares; returns auto's symmetry status.
std::string agree(const char* yaml, const std::vector<std::string>& sets) {
  std::string label;
  for (const auto& s : sets) label += s + " ";
  INFO("case: " << label);
  const Outcome on = run(yaml, sets, "auto"), off = run(yaml, sets, "off");
  CHECK(off.symmetry == "off");
  CHECK(std::abs(on.step - off.step) <= 1e-9 * off.step);
  compare(on.json, off.json, "", 1e-6);
  MESSAGE(label << "-> " << on.symmetry << ", " << on.ranks_simulated << " ranks simulated");
  return on.symmetry;
}

}  // namespace

TEST_CASE("symmetric fast path: dense layouts and schedules agree with every rank") {
  CHECK(agree(kBase, {}) == "used");
  agree(kBase, {"layout.schedule=interleaved-1f1b", "layout.virtual_stages=2"});
  agree(kBase, {"layout.schedule=zb-h1"});
  agree(kBase, {"layout.schedule=gpipe", "layout.recompute=full"});
  agree(kBase, {"layout.sequence_parallel=true", "layout.recompute=selective"});
  agree(kBase, {"layout.tp=4", "layout.pp=1"});
  agree(kBase, {"layout.tp=1", "layout.pp=4"});
}

TEST_CASE("symmetric fast path: ZeRO 0-3") {
  for (int z = 0; z <= 3; ++z) agree(kBase, {"layout.zero=" + std::to_string(z)});
}

TEST_CASE("symmetric fast path: placements") {
  agree(kBase, {"layout.placement=[dp, tp, pp]"});
  agree(kBase, {"layout.placement=[tp, pp, dp]"});
  agree(kBase, {"layout.placement=[pp, dp, tp]"});
  agree(kBase, {"layout.placement=[dp, pp, tp]", "layout.tp=4", "layout.pp=1"});
}

TEST_CASE("symmetric fast path: fat-tree with oversubscription") {
  agree(kBase, {"cluster.inter_node.fabric=fat-tree", "cluster.inter_node.oversubscription=2",
                "cluster.inter_node.nodes_per_leaf=2"});
  agree(kBase, {"cluster.inter_node.fabric=fat-tree", "cluster.inter_node.oversubscription=4",
                "cluster.inter_node.nodes_per_leaf=1", "layout.placement=[tp, pp, dp]"});
}

TEST_CASE("symmetric fast path: pipeline transfers through the spines, by routing") {
  // One node per leaf group: every inter-node transfer crosses a spine. tp 2 · dp 4 ·
  // pp 2 in [tp, dp, pp] order puts stage 0 on nodes 0-1 and stage 1 on nodes 2-3.
  // InfiniBand's D-mod-K sends every transfer to node n over spine n mod spines, so
  // the replicas' transfers meet the same loads: the fast path holds, and agrees with
  // every rank. Under ECMP the hashes decide; whatever auto says, it must agree.
  const std::vector<std::string> spread = {"cluster.inter_node.nodes_per_leaf=1", "layout.placement=[tp, dp, pp]"};
  CHECK(agree(kBase, spread) == "used");
  auto ecmp = spread;
  ecmp.push_back("cluster.inter_node.routing=ecmp");
  agree(kBase, ecmp);
  auto fat = spread;
  fat.push_back("cluster.inter_node.fabric=fat-tree");
  fat.push_back("cluster.inter_node.oversubscription=2");
  agree(kBase, fat);
  // Pipeline sends across rails ([dp, tp, pp]: a stage's tp pair sits on GPUs 2r, 2r+1),
  // relayed by PXN over NVLink or, with PXN off, through the spines.
  agree(kBase, {"cluster.inter_node.nodes_per_leaf=1", "layout.placement=[dp, tp, pp]"});
  agree(kBase, {"cluster.inter_node.nodes_per_leaf=1", "layout.placement=[dp, tp, pp]", "cluster.inter_node.pxn=false"});
}

TEST_CASE("symmetric fast path: context parallelism (replicas hold several cp ranks per stage and tp index)") {
  CHECK(agree(kBase, {"layout.cp=2"}) == "used");
  agree(kBase, {"layout.cp=2", "layout.cp_kind=all-gather"});
  agree(kBase, {"layout.cp=2", "layout.tp=1", "layout.placement=[cp, tp, pp, dp]"});
}

TEST_CASE("symmetric fast path: MoE with balanced and skewed routing") {
  agree(kMoe, {});
  agree(kMoe, {"layout.tp=1", "layout.ep=4"});
  // MoE parallel folding: experts split less than the attention (expert_tp 1 under tp 2),
  // ep groups across tp and dp, and MoE with context parallelism (ep from dp × cp).
  CHECK(agree(kMoe, {"layout.expert_tp=1", "layout.ep=4"}) == "used");
  CHECK(agree(kMoe, {"layout.expert_tp=1", "layout.ep=2"}) == "used");
  CHECK(agree(kMoe, {"layout.tp=1", "layout.cp=2", "layout.ep=4"}) == "used");
  agree(kMoe, {"layout.tp=1", "layout.cp=2", "layout.ep=8", "layout.pp=1"});
  // The expert load goes by expert-parallel index, alike in every replica: one class.
  const Outcome skew = run(kMoe, {"model.moe.routing={skew: zipf, alpha: 1.2, seed: 3}"}, "auto");
  CHECK(agree(kMoe, {"model.moe.routing={skew: zipf, alpha: 1.2, seed: 3}"}) == "used");
  CHECK(skew.classes == 1);
}

TEST_CASE("symmetric fast path: tied flows leave out the links that mirror their runner's, and the numbers stay the full run's") {
  // 4 nodes of 4, tp 2 · pp 2 · dp 4: the pipeline sends between nodes cross the NICs the
  // gradient rings cross, so they run tied over the four replicas' paths; each replica's
  // NIC and PCIe links carry the same ring flows as the runner's twins of them, so the
  // tied flows cross the runner's links only. A trace watches links: none left out.
  const std::vector<std::string> spines{"layout.placement=[tp, dp, pp]", "cluster.inter_node.nodes_per_leaf=1"};
  CHECK(run(kBase, {}, "auto").mirrored_links > 0);
  CHECK(run(kBase, spines, "auto").mirrored_links > 0);
  CHECK(agree(kBase, spines) == "used");
  CHECK(run(kBase, {}, "auto", /*trace=*/true).mirrored_links == 0);
  CHECK(run(kBase, {}, "off").mirrored_links == 0);
}

TEST_CASE("alike flows: an all-to-all's fold saves events, and a slow port that parts its flows runs unfolded") {
  // Mixtral 8x7B with ep 8 on 4 nodes of 8 H100s: each dispatch and combine is 56 NVSwitch
  // flows per node, which fold into one network flow.
  const char* wide = R"(name: wide-moe
cluster:
  gpu: h100-sxm
  nodes: 4
  gpus_per_node: 8
  intra_node: {kind: nvswitch, bandwidth: 450 GB/s, latency: 1 us}
  inter_node: {kind: infiniband, bandwidth: 400 Gb/s, latency: 3 us, fabric: rail-optimized}
model:
  preset: mixtral-8x7b
  layers: 4
layout:
  dp: 32
  ep: 8
  zero: 2
  recompute: selective
  microbatches: 2
)";
  const Outcome on = run(wide, {}, "auto"), off = run(wide, {}, "off");
  CHECK(on.alike_flows == "on");
  CHECK(off.alike_flows == "off");
  CHECK(on.events < off.events);
  agree(wide, {});
  // GPU 3's NVSwitch uplink at half rate: beside its slower flows, some of their alike
  // twins would drain at other rates than the rest, so the engine refuses the fold and
  // the run repeats without it: the numbers of every flow run as itself.
  const std::vector<std::string> slow{"perturbations.links=[{link: node0.gpu3->node0.nvswitch, bandwidth_factor: 0.5}]"};
  CHECK(run(wide, slow, "auto").alike_flows.rfind("unfolded: ", 0) == 0);
  agree(wide, slow);
}

TEST_CASE("symmetric fast path: what breaks symmetry runs every rank and says why") {
  CHECK(agree(kBase, {"perturbations.jitter={compute_cv: 0.05, seed: 3}"}) == "broken: jitter");
  CHECK(agree(kBase, {"perturbations.devices=[{device: node1.gpu2, compute_slowdown: 1.5, drift: {per_step: 0.1}}]",
                      "simulation.steps=2"}) == "broken: a device whose slowdown drifts between steps");
  CHECK(agree(kBase, {"layout.tp=4", "layout.pp=4"}) == "broken: one dp replica");
  const Outcome off = run(kBase, {}, "off");
  CHECK(off.ranks_simulated == 16);
  CHECK(off.classes == 0);
  const Outcome on = run(kBase, {}, "auto");
  CHECK(on.ranks_simulated == 4);
  CHECK(on.classes == 1);
}

// ---------------------------------------------------------------- replica classes
// Replicas that differ (a straggler, a slower link, a partly filled leaf, routes that
// cross a leaf boundary for some replicas only) form classes of alike ones, one
// runner each; the reduced run must give the full run's numbers all the same.

namespace {

/// Runs both modes, compares them and returns auto's outcome.
Outcome agree_classes(const std::string& yaml, const std::vector<std::string>& sets) {
  std::string label;
  for (const auto& s : sets) label += s + " ";
  INFO("case: " << label);
  const Outcome on = run(yaml.c_str(), sets, "auto"), off = run(yaml.c_str(), sets, "off");
  CHECK(std::abs(on.step - off.step) <= 1e-9 * off.step);
  compare(on.json, off.json, "", 1e-6);
  MESSAGE(label << "-> " << on.symmetry << ", " << on.classes << " classes, " << on.ranks_simulated << " ranks simulated");
  return on;
}

/// kBase on `nodes` nodes of 4 GPUs (dp fills them: tp 2 · pp 2 · dp nodes).
std::string on_nodes(int nodes) {
  std::string y = kBase;
  const std::string from = "  nodes: 4\n";
  y.replace(y.find(from), from.size(), "  nodes: " + std::to_string(nodes) + "\n");
  return y;
}

/// An explicit graph: `nodes` nodes of 2 GPUs on an NVSwitch each, every GPU on one
/// InfiniBand switch; node `slow` has half the NVLink rate.
std::string graph_cluster(int nodes, int slow) {
  std::string v = "    vertices: [{name: ib, kind: switch}", l;
  for (int n = 0; n < nodes; ++n) {
    const std::string sw = "sw" + std::to_string(n);
    v += ", {name: " + sw + ", kind: nvswitch}";
    for (int g = 0; g < 2; ++g) {
      const std::string gpu = "node" + std::to_string(n) + ".gpu" + std::to_string(g);
      v += ", {name: " + gpu + ", kind: gpu}";
      l += "      - {from: " + gpu + ", to: " + sw + ", kind: nvlink, bandwidth: " + (n == slow ? "200" : "400") + " GB/s}\n";
      l += "      - {from: " + gpu + ", to: ib, kind: infiniband, bandwidth: 50 GB/s}\n";
    }
  }
  return "  graph:\n" + v + "]\n    links:\n" + l;
}

}  // namespace

TEST_CASE("replica classes: a straggler's replica and a slowed link's run as classes of their own") {
  const Outcome slow = agree_classes(kBase, {"perturbations.devices=[{device: node1.gpu2, compute_slowdown: 1.5}]"});
  CHECK(slow.symmetry == "used");
  CHECK(slow.classes == 2);
  CHECK(slow.ranks_simulated == 8);
  const Outcome link = agree_classes(kBase, {"layout.placement=[tp, dp, pp]",
                                             "perturbations.links=[{link: node2.gpu0<->node2.nvswitch, bandwidth_factor: 0.5}]"});
  CHECK(link.symmetry == "used");
  CHECK(link.classes == 2);
  const Outcome down = agree_classes(kBase, {"cluster.inter_node.nodes_per_leaf=1", "layout.placement=[tp, pp, dp]",
                                             "perturbations.links=[{link: leaf0<->spine0, bandwidth_factor: 0}]"});
  CHECK(down.symmetry == "used");
}

TEST_CASE("replica classes: irregular fabrics agree with every rank") {
  // 6 nodes on leaves of 4: the second leaf is partly filled, and with [tp, dp, pp]
  // some replicas' pipeline sends cross the leaves and others stay inside one.
  for (const char* placement : {"[tp, dp, pp]", "[tp, pp, dp]", "[dp, tp, pp]"}) {
    const std::string p = std::string("layout.placement=") + placement;
    agree_classes(on_nodes(6), {"cluster.inter_node.nodes_per_leaf=4", p});
    agree_classes(on_nodes(6), {"cluster.inter_node.fabric=fat-tree", "cluster.inter_node.nodes_per_leaf=4",
                                "cluster.inter_node.oversubscription=2", p});
    agree_classes(on_nodes(6), {"cluster.inter_node.fabric=fat-tree", "cluster.inter_node.nodes_per_leaf=3",
                                "cluster.inter_node.oversubscription=3", p});
    agree_classes(on_nodes(6), {"cluster.inter_node.nodes_per_leaf=1", "cluster.inter_node.routing=ecmp", p});
  }
  // Replicas 0-1 send inside leaf 0, 2-5 across the leaves: two classes.
  const Outcome cut = agree_classes(on_nodes(6), {"cluster.inter_node.nodes_per_leaf=4", "layout.placement=[tp, dp, pp]"});
  CHECK(cut.symmetry == "used");
  CHECK(cut.classes == 2);
  // The same two classes on a 2:1 tree: the partly filled leaf has the full leaf's
  // uplink ports (topology/fabric.cpp), so the crossing replicas' sends meet the
  // gradient rings alike on every uplink.
  const Outcome tree = agree_classes(on_nodes(6), {"cluster.inter_node.fabric=fat-tree", "cluster.inter_node.nodes_per_leaf=4",
                                                   "cluster.inter_node.oversubscription=2", "layout.placement=[tp, dp, pp]"});
  CHECK(tree.symmetry == "used");
  CHECK(tree.classes == 2);
}

TEST_CASE("replica classes: an explicit graph with one slower node") {
  std::string y = kBase;
  const std::size_t a = y.find("  nodes: 4"), b = y.find("model:");
  y.replace(a, b - a, graph_cluster(4, 3));
  const Outcome g = agree_classes(y, {"layout.pp=1"});
  CHECK(g.symmetry == "used");
  CHECK(g.classes == 2);
  CHECK(g.ranks_simulated == 4);
}

namespace {

/// Both modes traced over every device: the same spans at the same picoseconds, with
/// the same send/recv pairing (the ghost flows drain within the engine's tolerance of
/// their twins: ≤ 1 ns).
Outcome traces_agree(const std::string& yaml, const std::vector<std::string>& sets) {
  const Outcome on = run(yaml.c_str(), sets, "auto", true), off = run(yaml.c_str(), sets, "off", true);
  CHECK(std::abs(on.step - off.step) <= 1e-9 * off.step);
  compare(on.json, off.json, "", 1e-6);
  REQUIRE(on.spans.size() == off.spans.size());
  for (std::size_t i = 0; i < on.spans.size(); ++i) {
    const auto& [d1, t1, s1, e1, f1, o1] = on.spans[i];
    const auto& [d2, t2, s2, e2, f2, o2] = off.spans[i];
    CHECK(d1 == d2);
    CHECK(t1 == t2);
    CHECK(std::abs(s1 - s2) <= 1000);
    CHECK(std::abs(e1 - e2) <= 1000);
    CHECK(f1 == f2);
    CHECK(o1 == o2);
  }
  return on;
}

}  // namespace

TEST_CASE("symmetric fast path: a trace over every device matches the full trace") {
  // Replica 0 runs, the other replicas' tracks are its copies.
  CHECK(traces_agree(kBase, {}).symmetry == "used");
}

TEST_CASE("replica classes: a trace over every device matches the full trace when replica 2 runs for 3-5") {
  const Outcome cut = traces_agree(on_nodes(6), {"cluster.inter_node.nodes_per_leaf=4", "layout.placement=[tp, dp, pp]"});
  CHECK(cut.symmetry == "used");
  CHECK(cut.classes == 2);
}

TEST_CASE("replica classes: copies of one plan differ in shape across classes") {
  // 6 GPUs per node, tp 4 · pp 2 · dp 3 in [tp, pp, dp] order: replica 0's stage-1 tp
  // group (GPUs 4-7) spans nodes 0 and 1, replica 1's (GPUs 12-15) stays in node 2, so
  // their tp plans have different phases and flows; the classes must still agree.
  std::string y = kBase;
  const std::string from = "  gpus_per_node: 4\n";
  y.replace(y.find(from), from.size(), "  gpus_per_node: 6\n");
  const Outcome o = agree_classes(y, {"layout.tp=4", "layout.placement=[tp, pp, dp]"});
  CHECK(o.symmetry == "used");
  CHECK(o.classes >= 2);
}

// ---------------------------------------------------------------- tied plans (engine level)
// Two replicas of a two-stage pipeline (ranks 0, 1 in replica 0; 2, 3 in replica 1);
// rank 0 sends 1 MB to rank 1 after 10 us of compute. The transfer runs tied: one
// flow over replica 0's link 0 and replica 1's link 1.

namespace {

using namespace ls::sim;

class OneLinkPlanner final : public CommPlanner {
public:
  const CommPlan& collective(std::span<const std::int32_t>, CollOp, double bytes) override { return plan(bytes); }
  const CommPlan& transfer(std::int32_t, std::int32_t, double bytes) override { return plan(bytes); }
  const CommPlan& all_to_all_matrix(std::span<const std::int32_t>, std::span<const double>) override { return plan(0); }
  const CommPlan& node_limited_all_to_all(std::span<const std::int32_t>, double, const NodeLimitedDispatch&) override {
    return plan(0);
  }
  const CommPlan& plan(double bytes) {
    if (p_.phases.empty()) {
      p_.links = {0};
      p_.phases.push_back(CommPhase{{PlanFlow{0, 1, bytes}}, us(1)});
      p_.bytes_per_member = bytes;
    }
    return p_;
  }

private:
  CommPlan p_;
};

EngineConfig tied_config(const CommPlan& twin, std::vector<LinkId> union_path) {
  EngineConfig cfg;
  auto& s = cfg.symmetry;
  s.replicas = 2;
  s.replica = {0, 0, 1, 1};
  s.position = {0, 1, 0, 1};
  s.rank_at = {0, 2, 1, 3};  // [position · 2 + replica]
  auto tied = std::make_shared<CommPlan>(twin);
  tied->links = std::move(union_path);
  tied->phases[0].flows[0].path_len = static_cast<std::uint32_t>(tied->links.size());
  s.tied[&twin] = EngineSymmetry::Tied{tied, 2};
  return cfg;
}

}  // namespace

TEST_CASE("symmetric fast path: a tied transfer carries every replica's bytes on its links") {
  const sim::Program p = ls::test::two_replicas_pipeline(/*receiver_computes=*/false);
  OneLinkPlanner planner;
  FlowNetwork net({1e9, 1e9});
  Engine eng(p, planner, net, tied_config(planner.plan(1e6), {0, 1}));
  // 10 us compute, 1 MB at 1 GB/s (each copy on its own 1 GB/s link), 1 us latency.
  CHECK(eng.run_step(Time::zero(), 0) == us(1011));
  CHECK(eng.ranks_simulated() == 2);
  CHECK(net.link_bytes(0) == doctest::Approx(1e6));
  CHECK(net.link_bytes(1) == doctest::Approx(1e6));
  CHECK(eng.stats()[3].end == eng.stats()[1].end);
}

TEST_CASE("symmetric fast path: tied copies crossing one link share it") {
  const sim::Program p = ls::test::two_replicas_pipeline(/*receiver_computes=*/false);
  OneLinkPlanner planner;
  FlowNetwork net({2e9});
  // Both copies cross link 0 (multiplicity 2): 1 GB/s each, as two separate flows.
  Engine eng(p, planner, net, tied_config(planner.plan(1e6), {0, 0}));
  CHECK(eng.run_step(Time::zero(), 0) == us(1011));
  CHECK(net.link_bytes(0) == doctest::Approx(2e6));
}

TEST_CASE("symmetric fast path: a tied copy that would run faster than replica 0's throws SymmetryBroken") {
  // Replica 1's link is half as fast: tied, both copies run at 0.5 GB/s, but replica
  // 0's copy alone would run at 1 GB/s (its link is not saturated): not exact.
  const sim::Program p = ls::test::two_replicas_pipeline(/*receiver_computes=*/false);
  OneLinkPlanner planner;
  FlowNetwork net({1e9, 0.5e9});
  Engine eng(p, planner, net, tied_config(planner.plan(1e6), {0, 1}));
  CHECK_THROWS_AS(eng.run_step(Time::zero(), 0), SymmetryBroken);
}

TEST_CASE("symmetric fast path: a mirrored device's trace spans are never marked critical by another rank's op") {
  // tp2·pp2·dp4: replicas 1..3 mirror replica 0. A span is critical only on a device
  // the critical path runs on; the mirrors' spans have no op ids of their own.
  const wl::ResolvedScenario sc = tools::load_scenario_string(kBase, "sym.yaml");
  wl::SimOptions opts;
  opts.trace = true;
  opts.trace_devices = {"all"};
  opts.what_if = false;
  const wl::Result r = wl::simulate(sc, opts);
  REQUIRE(r.symmetry == "used");
  std::vector<int> path_devices;
  for (const auto& seg : r.critical_segments) path_devices.push_back(seg.device);
  std::size_t critical = 0;
  for (const auto& s : r.spans) {
    if (!s.critical) continue;
    ++critical;
    CHECK(std::find(path_devices.begin(), path_devices.end(), s.device) != path_devices.end());
  }
  CHECK(critical > 0);
}

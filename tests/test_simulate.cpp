// tests/test_simulate.cpp — workloads/simulate.hpp: the engine replaying whole layouts.
//
// Each case states the closed form it checks. Tolerances: bubble fractions are
// ratios of integer-picosecond sums, so 1e-6 absorbs the rounding of one op's
// duration to the picosecond many times over.
#include <doctest/doctest.h>

#include <cmath>
#include <tuple>
#include <stdexcept>

#include "fixtures.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/model/model.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/simulate.hpp"

using namespace ls;
using namespace ls::wl;
using ls::test::small_model;
using ls::test::uniform_pipeline;

namespace {

}  // namespace

TEST_CASE("bubble of gpipe and 1f1b equals (p-1)/(m+p-1) on every stage") {
  // Equal stages, free communication: the pipeline takes (m+p-1)(F+B) and each
  // stage works m(F+B) of it, so its bubble is (p-1)/(m+p-1) exactly.
  const int grid[][2] = {{2, 8}, {4, 8}, {4, 32}, {8, 8}, {8, 64}};
  for (Schedule sch : {Schedule::gpipe, Schedule::one_f_one_b}) {
    for (const auto& pm : grid) {
      const int p = pm[0], m = pm[1];
      CAPTURE(p);
      CAPTURE(m);
      CAPTURE(static_cast<int>(sch));
      const Result r = simulate(resolve(uniform_pipeline(p, m, sch)));
      const double expect = double(p - 1) / double(m + p - 1);
      CHECK(r.bubble_fraction_analytic == doctest::Approx(expect).epsilon(1e-12));
      REQUIRE(r.per_stage.size() == static_cast<std::size_t>(p));
      for (const auto& st : r.per_stage) CHECK(std::fabs(st.bubble_fraction - expect) < 1e-6);
    }
  }
}

TEST_CASE("interleaved 1f1b bubble equals (p-1)/(v*m+p-1)") {
  // Megatron-LM (Narayanan et al. 2021, §2.2): v chunks per device cut the bubble by v.
  const int grid[][3] = {{2, 8, 2}, {4, 8, 2}, {4, 16, 4}};
  for (const auto& g : grid) {
    const int p = g[0], m = g[1], v = g[2];
    CAPTURE(p);
    CAPTURE(m);
    CAPTURE(v);
    const Result r = simulate(resolve(uniform_pipeline(p, m, Schedule::interleaved_1f1b, v)));
    const double expect = double(p - 1) / double(v * m + p - 1);
    for (const auto& st : r.per_stage) CHECK(std::fabs(st.bubble_fraction - expect) < 1e-6);
  }
}

TEST_CASE("step time of a uniform 1f1b pipeline is (m+p-1)(F+B) plus the optimizer") {
  // Stage 0 starts first and ends last: its last backward finishes after
  // (m+p-1) slots of one micro-batch's F+B, then it runs its optimizer step.
  const int p = 4, m = 8;
  Scenario s = uniform_pipeline(p, m, Schedule::one_f_one_b);
  const Result r = simulate(resolve(s));
  const BuiltProgram bp = build_program(resolve(s));
  // F+B of one micro-batch on stage 0: its compute ops for micro-batch 0.
  double fb = 0;
  for (const auto& op : bp.program.stages[0].streams[0])
    if (op.kind == sim::OpKind::compute && op.labels[wl::label::microbatch] == 0) fb += op.duration.seconds();
  const double opt = bp.program.stages[0].streams[0].back().duration.seconds();
  CHECK(r.step_time_s == doctest::Approx((m + p - 1) * fb + opt).epsilon(1e-9));
}

TEST_CASE("the result says which run it is: the resolved layout and the global batch b·m·dp") {
  Scenario sc = uniform_pipeline(4, 8, Schedule::interleaved_1f1b, 2);
  sc.layout.microbatch_size = 2;
  const ResolvedScenario resolved = resolve(sc);
  const Result r = simulate(resolved);
  const Scenario& rs = resolved;
  const Result::Setup& s = r.setup;
  CHECK(s.model == rs.model.name);
  CHECK(s.gpu == rs.gpu.name);
  CHECK(s.implementation == rs.implementation.preset);
  CHECK(s.pp == 4);
  CHECK(s.virtual_stages == 2);
  CHECK(s.dp == rs.layout.dp);  // resolve() derived it
  CHECK(s.schedule == "interleaved-1f1b");
  CHECK(s.microbatches == 8);
  CHECK(s.microbatch_size == 2);
  CHECK(s.seq_len == rs.model.seq_len);
  CHECK(s.global_batch == 2 * 8 * rs.layout.dp);
}

TEST_CASE("same scenario twice gives identical results") {
  Scenario s = uniform_pipeline(4, 8, Schedule::one_f_one_b);
  s.cluster.ideal_network = false;
  SimOptions o;
  o.trace = true;
  const Result a = simulate(resolve(s), o), b = simulate(resolve(s), o);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.events == b.events);
  REQUIRE(a.spans.size() == b.spans.size());
  for (std::size_t i = 0; i < a.spans.size(); ++i) {
    CHECK(a.spans[i].start == b.spans[i].start);
    CHECK(a.spans[i].end == b.spans[i].end);
  }
}

TEST_CASE("critical-path shares sum to one") {
  Scenario s = uniform_pipeline(4, 8, Schedule::one_f_one_b);
  s.cluster.ideal_network = false;
  const Result r = simulate(resolve(s));
  const auto& c = r.critical_path;
  // Every picosecond of the step is attributed to exactly one bucket.
  CHECK(std::fabs(c.share_compute + c.share_comm + c.share_wait - 1.0) < 1e-9);
  CHECK(std::fabs(c.compute_s + c.comm_tp_s + c.comm_pp_s + c.comm_dp_s + c.comm_ep_s + c.wait_s - r.step_time_s) <
        1e-9 * r.step_time_s);
}

// ---------------------------------------------------------------------------
// Dense layouts: bytes and FLOPs read back from the engine's recorder.

using ls::test::cluster_scenario;

TEST_CASE("TP bytes per device per layer are 4 ring all-reduces of b*s*h elements") {
  // Megatron: 2 all-reduces per layer forward, 2 backward, each of S = b·s·h·2 bytes;
  // a ring all-reduce sends 2(t-1)/t·S per member. Embedding and head made free so
  // only the layers communicate.
  for (int t : {2, 4, 8}) {
    CAPTURE(t);
    Scenario s = cluster_scenario(1, 8 / t, t, 1, 4);
    s.layout.embedding_free = true;
    const Result r = simulate(resolve(s));
    const double S = 1.0 * 1024 * 1024 * 2;  // b=1, s=1024, h=1024, bf16
    const double per_layer = r.comm[static_cast<int>(wl::Axis::tp)].bytes_per_device / (16.0 * 4);
    CHECK(per_layer == doctest::Approx(4 * 2.0 * (t - 1) / t * S).epsilon(1e-12));
  }
}

TEST_CASE("hardware FLOPs are conserved across layouts of the same model and batch") {
  // Global batch = dp·m·b = 32 sequences in every layout; splitting work over
  // devices never creates or destroys FLOPs.
  const int layouts[][4] = {{8, 1, 1, 4}, {4, 2, 1, 8}, {2, 2, 2, 16}, {1, 8, 1, 32}, {2, 1, 4, 16}, {1, 2, 4, 32}};
  double ref = 0;
  for (const auto& l : layouts) {
    CAPTURE(l[0]);
    CAPTURE(l[1]);
    CAPTURE(l[2]);
    const Result r = simulate(resolve(cluster_scenario(1, l[0], l[1], l[2], l[3])));
    if (ref == 0) ref = r.hardware_flops_per_step;
    CHECK(r.hardware_flops_per_step == doctest::Approx(ref).epsilon(1e-9));
    CHECK(r.model_flops_per_step <= r.hardware_flops_per_step * (1 + 1e-12));
  }
}

TEST_CASE("seed example: 70B, 18 B/param, 64 GPUs, full sharding -> 19.7 GB of state per device") {
  // 18·N/D with N = 70.03e9 (seed-70b) and D = 64: 19.70 GB, whatever the split, once the
  // pipeline's last stage's copy of the tied embedding table (V·h = 0.43e9, held where the
  // pipeline puts the LM head on another stage than the embedding) is counted in N.
  for (const auto& split : {std::tuple{8, 4, 2}, std::tuple{8, 2, 4}, std::tuple{8, 1, 8}}) {
    const auto [tp, pp, dp] = split;
    const int stages = pp;  // CAPTURE takes a reference: not to a structured binding
    CAPTURE(stages);
    Scenario s = cluster_scenario(8, dp, tp, pp, 8);
    s.model = *model_preset("seed-70b");
    s.layout.zero = 3;
    const BuiltProgram bp = build_program(resolve(s));
    double state = 0;
    for (const auto& mt : bp.static_memory) state += mt.weights + mt.gradients + mt.master + mt.optimizer;
    state /= pp;  // mean over stages = mean over devices (every stage has tp·dp devices)
    const double copy = pp > 1 ? static_cast<double>(s.model.vocab) * s.model.hidden : 0.0;
    const double N = total_params(s.model) + copy;
    // The final norm (2h parameters) is the only term not in the state: 1e-6 covers it.
    CHECK(state == doctest::Approx(18.0 * N / 64).epsilon(1e-6));
    CHECK(state / 1e9 == doctest::Approx(pp > 1 ? 19.82 : 19.70).epsilon(1e-3));
  }
  // 16 B/param on 512 GPUs (DP8·TP8·PP8): 16·(70.03e9 + 0.43e9)/512 ≈ 2.20 GB.
  Scenario s = cluster_scenario(64, 8, 8, 8, 8);
  s.model = *model_preset("seed-70b");
  s.layout.zero = 3;
  s.precision.gradients = 2;
  const BuiltProgram bp = build_program(resolve(s));
  double state = 0;
  for (const auto& mt : bp.static_memory) state += mt.weights + mt.gradients + mt.master + mt.optimizer;
  state /= 8;
  CHECK(state / 1e9 == doctest::Approx(2.20).epsilon(5e-3));
}

TEST_CASE("1f1b holds p-stage micro-batches of activations, gpipe holds m") {
  const int p = 4, m = 8;
  for (Schedule sch : {Schedule::one_f_one_b, Schedule::gpipe}) {
    Scenario s = uniform_pipeline(p, m, sch);
    const Result r = simulate(resolve(s));
    const BuiltProgram bp = build_program(resolve(s));
    for (int st = 0; st < p; ++st) {
      CAPTURE(st);
      const double per_mb = bp.activation_bytes_per_microbatch[static_cast<std::size_t>(st)];
      const int inflight = sch == Schedule::gpipe ? m : p - st;
      CHECK(r.memory_per_stage[static_cast<std::size_t>(st)].activations == doctest::Approx(inflight * per_mb).epsilon(1e-9));
    }
  }
}

TEST_CASE("ZeRO-3 adds the per-layer parameter all-gathers in forward and backward") {
  // Each layer's weights W/t are gathered before its forward and before its
  // backward, for every micro-batch: 2·m·L_stage gathers of (dp-1)/dp·W/t bytes each;
  // and its gradients are reduce-scattered every micro-batch, not once.
  Scenario s = cluster_scenario(1, 4, 2, 1, 4);
  s.layout.embedding_free = true;
  s.layout.zero = 1;
  const Result z1 = simulate(resolve(s));
  s.layout.zero = 3;
  const Result z3 = simulate(resolve(s));
  const double W = layer_params(s.model) / 2 * 2;  // per device (tp 2), bf16
  const double gathers = 2.0 * 4 * 16 * 3.0 / 4 * W;
  // ZeRO-1 gathers all of the device's weights (embedding and head included) once
  // after the optimizer; ZeRO-3 does not.
  s.layout.zero = 1;
  const double z1_gather = 3.0 / 4 * build_program(resolve(s)).static_memory[0].weights;
  const double dp_delta = z3.comm[static_cast<int>(wl::Axis::dp)].bytes_per_device -
                          z1.comm[static_cast<int>(wl::Axis::dp)].bytes_per_device;
  // ZeRO-1 reduce-scatters the accumulated fp32 gradients once; ZeRO-3 keeps only its
  // shard, so it reduce-scatters every micro-batch's: (m − 1) more reduce-scatters of
  // (dp−1)/dp · 16 layers · W/t · 4 B = (dp−1)/dp · 16 · 2W each.
  const double extra_reduce_scatters = 3.0 * 3.0 / 4 * 16 * 2 * W;
  CHECK(dp_delta == doctest::Approx(gathers - z1_gather + extra_reduce_scatters).epsilon(1e-6));
}

// ---------------------------------------------------------------------------
// Mixture of experts.

namespace {

/// One MoE layer (E experts, top-2), tp 1, pp 1, dp = 8 on one NVSwitch node.
Scenario moe_scenario(int experts, int ep, int nodes = 1, int gpus_per_node = 8) {
  Scenario s;
  s.name = "moe";
  ls::test::a100_era_cluster(s, nodes, gpus_per_node);
  s.gpu = *gpu_preset("h100-sxm");
  s.model = small_model(1);
  s.model.activation = Activation::swiglu;
  s.model.moe.experts = experts;
  s.model.moe.top_k = 2;
  s.model.moe.expert_ffn_hidden = 2048;
  s.layout.dp = nodes * gpus_per_node;
  s.layout.ep = ep;
  s.layout.microbatches = 1;
  s.layout.embedding_free = true;
  return s;
}

}  // namespace

TEST_CASE("balanced routing: all-to-all bytes per device = tokens*top_k*h*bytes*(ep-1)/ep") {
  // Per MoE layer and micro-batch: dispatch + combine forward, twice again backward.
  for (int ep : {2, 4, 8}) {
    CAPTURE(ep);
    SimOptions o;
    o.trace = true;
    const Result r = simulate(resolve(moe_scenario(8, ep)), o);
    const double per_a2a = 1024.0 * 2 * 1024 * 2 * (ep - 1) / ep;
    CHECK(r.comm[static_cast<int>(wl::Axis::ep)].bytes_per_device == doctest::Approx(4 * per_a2a).epsilon(1e-9));
    // Expert compute equal on every device: every device's compute spans sum alike.
    std::vector<double> busy(8, 0.0);
    for (const auto& sp : r.spans)
      if (sp.kind == sim::OpKind::compute) busy[static_cast<std::size_t>(sp.device)] += (sp.end - sp.start).seconds();
    for (double b : busy) CHECK(b == doctest::Approx(busy[0]).epsilon(1e-12));
    for (double f : r.moe.device_factor) CHECK(f == doctest::Approx(1.0));
  }
}

TEST_CASE("skewed routing: the MoE layer waits for the most loaded device's experts") {
  // E = 4 experts on ep = 4 devices, loads 4:1:1:2 -> device 0 gets half the routed
  // tokens (factor 2). Dispatch: devices 1..3 each send S/2 to device 0, whose
  // NVLink downlink carries 1.5·S: 1.5·S/B + α. Combine is the mirror. So on any
  // device, dispatch start -> combine end = 2·(1.5·S/B + α) + 2·x_f, x_f the
  // balanced expert forward time.
  Scenario s = moe_scenario(4, 4, 1, 4);
  s.model.moe.routing = RoutingKind::load;
  s.model.moe.load = {4, 1, 1, 2};
  SimOptions o;
  o.trace = true;
  const Result r = simulate(resolve(s), o);
  const BuiltProgram bp = build_program(resolve(s));
  CHECK(r.moe.device_factor[0] == doctest::Approx(2.0));
  sim::Time xf;
  for (const auto& op : bp.program.stages[0].streams[0])
    if (op.scaled_by_rank && wl::work_of(op) == wl::Work::forward) xf = op.duration;
  const double S = 1024.0 * 2 * 1024 * 2;
  const double a2a = 1.5 * S / 300e9 + 1e-6;
  const double expect = 2 * a2a + 2 * xf.seconds();
  for (int dev = 0; dev < 4; ++dev) {
    CAPTURE(dev);
    sim::Time first = sim::Time::max(), last;
    int seen = 0;
    for (const auto& sp : r.spans)
      if (sp.device == dev && sp.kind == sim::OpKind::collective && sp.track == wl::track::ep && sp.work == wl::Work::forward) {
        first = std::min(first, sp.start);
        last = std::max(last, sp.end);
        ++seen;
      }
    REQUIRE(seen == 2);
    CHECK((last - first).seconds() == doctest::Approx(expect).epsilon(0.01));
  }
  bool warned = false;
  for (const auto& w : r.warnings) warned = warned || w.code == "moe-imbalance";
  CHECK(warned);
}

TEST_CASE("MoE FLOPs are conserved across ep in {1, 2, 4, 8}") {
  double ref = 0;
  for (int ep : {1, 2, 4, 8}) {
    CAPTURE(ep);
    const Result r = simulate(resolve(moe_scenario(8, ep)));
    if (ref == 0) ref = r.hardware_flops_per_step;
    CHECK(r.hardware_flops_per_step == doctest::Approx(ref).epsilon(1e-9));
  }
}

TEST_CASE("an all-to-all across an oversubscribed fabric is slower by the ratio the links predict") {
  // The collective cost model of the GPU type (h100-sxm: the DGX H100 profile,
  // collective_costs_of) adds to an all-to-all (one phase of point-to-point flows, no
  // fixed per-collective cost in the Planner) the per-step latency floor of the slowest
  // link kind on a route and the efficiency e of the bottleneck link.
  // In a node: each GPU sends 7/8·S over its 300 GB/s NVSwitch port:
  //   max(1 us, α_nvswitch) + 7S/8/(B_nv·e_nvswitch).
  // Across 8 single-GPU nodes, 2 nodes per leaf, 2:1 oversubscription: each leaf's
  // uplink (25 GB/s) carries 2 nodes × 6 off-leaf destinations × S/8 = 1.5·S:
  //   max(3.2 us spine route, α_infiniband) + 1.5·S/(B_ib·e_infiniband).
  // Balanced routing: the four all-to-alls of a layer are fully exposed and equal.
  const double S = 1024.0 * 2 * 1024 * 2;
  const Result in = simulate(resolve(moe_scenario(8, 8, 1, 8)));
  Scenario x = moe_scenario(8, 8, 8, 1);
  x.cluster.inter.nodes_per_leaf = 2;
  x.cluster.inter.oversubscription = 2;
  const Result across = simulate(resolve(x));
  const auto costs = collective_costs_of(x.gpu);
  const auto& nv = costs[ls::topo::LinkKind::nvswitch];
  const auto& ib = costs[ls::topo::LinkKind::infiniband];
  const double t_in = std::max(1e-6, nv.step_latency.seconds()) + 7 * S / 8 / (300e9 * nv.efficiency);
  const double t_x = std::max(3.2e-6, ib.step_latency.seconds()) + 1.5 * S / (25e9 * ib.efficiency);
  const double e_in = in.comm[static_cast<int>(wl::Axis::ep)].exposed_s;
  const double e_x = across.comm[static_cast<int>(wl::Axis::ep)].exposed_s;
  // Relative checks (Approx's default scale of 1 would make microsecond checks vacuous).
  CHECK(e_in / (4 * t_in) == doctest::Approx(1).epsilon(0.01));
  CHECK(e_x / (4 * t_x) == doctest::Approx(1).epsilon(0.01));
  CHECK(e_x / e_in == doctest::Approx(t_x / t_in).epsilon(0.02));
}

TEST_CASE("zb-h1 fills the 1f1b bubble with weight-gradient work") {
  // Qi et al. 2023: with F = B = W the ZB-H1 bubble is (p−1)/(3m+p−1). Here W is only
  // the linear layers' weight gradients (W < B), so the measured bubble lies between
  // that bound and 1F1B's (p−1)/(m+p−1), and the step is shorter than 1F1B's.
  const Result one = simulate(resolve(uniform_pipeline(4, 8, Schedule::one_f_one_b)));
  const Result zb = simulate(resolve(uniform_pipeline(4, 8, Schedule::zb_h1)));
  CHECK(zb.bubble_fraction < one.bubble_fraction - 0.05);
  CHECK(zb.bubble_fraction >= zb.bubble_fraction_analytic - 1e-9);
  CHECK(zb.step_time_s < one.step_time_s);
  CHECK(zb.hardware_flops_per_step == doctest::Approx(one.hardware_flops_per_step).epsilon(1e-12));
}

TEST_CASE("critical-path segments tile the step, in order, without overlap") {
  // The trace's critical-path track: consecutive segments meet exactly, the first
  // starts at 0 and the last ends at the step time (all integer picoseconds).
  Scenario s = uniform_pipeline(4, 8, Schedule::one_f_one_b);
  s.cluster.ideal_network = false;
  SimOptions o;
  o.trace = true;
  const Result r = simulate(resolve(s), o);
  REQUIRE(!r.critical_segments.empty());
  CHECK(r.critical_segments.front().start == sim::Time::zero());
  CHECK(r.critical_segments.back().end == sim::Time::from_seconds(r.step_time_s));
  sim::Time compute;
  for (std::size_t i = 0; i < r.critical_segments.size(); ++i) {
    const auto& g = r.critical_segments[i];
    CHECK(g.end > g.start);
    if (i > 0) CHECK(g.start == r.critical_segments[i - 1].end);
    if (g.kind == CriticalSegment::Kind::compute) compute += g.end - g.start;
  }
  CHECK(compute.seconds() == doctest::Approx(r.critical_path.compute_s).epsilon(1e-12));
}

TEST_CASE("compute_breakdown: each stage's parts add up to its measured compute time") {
  // No perturbation and no MoE: every rank of a stage computes exactly the nominal op
  // durations the breakdown was summed from, so the two agree to integer picoseconds
  // (compared in seconds, 1e-12 relative covers the conversion).
  for (const Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
    Scenario s = cluster_scenario(2, 2, 4, 2, 4);
    s.layout.recompute = rc;
    const Result r = simulate(resolve(s));
    REQUIRE(r.compute_breakdown.size() == r.per_stage.size());
    for (std::size_t st = 0; st < r.per_stage.size(); ++st) {
      const auto& b = r.compute_breakdown[st];
      CHECK(b.total() == b.gemm + b.attention + b.elementwise + b.logits + b.optimizer + b.launch);
      CHECK(b.gemm > ls::sim::Time::zero());
      CHECK(b.total().seconds() == doctest::Approx(r.per_stage[st].compute_s).epsilon(1e-12));
    }
    CHECK(r.compute_breakdown.back().logits > ls::sim::Time::zero());  // LM head and loss on the last stage
  }
}

TEST_CASE("a drifting device: step k runs it at compute_slowdown · (1 + drift)^k, a geometric series on one GPU") {
  // One GPU, no communication: the step is its compute, so step k = step 0 · 1.1^k
  // to integer-picosecond rounding per op: a few hundred ops of a 2.4 ms step, each
  // rounded by at most 0.5 ps, move the ratio by under 1e-7.
  Scenario s = uniform_pipeline(1, 2, Schedule::one_f_one_b);
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 1;
  s.simulation.steps = 4;
  s.perturbations.devices = {{.device = "node0.gpu0", .compute_slowdown = 1.5, .drift_per_step = 0.1}};
  const Result r = simulate(resolve(s));
  REQUIRE(r.step_stats.step_s.size() == 4);
  for (int k = 1; k < 4; ++k) {
    CAPTURE(k);
    CHECK(r.step_stats.step_s[static_cast<std::size_t>(k)] / r.step_stats.step_s[0] == doctest::Approx(std::pow(1.1, k)).epsilon(1e-7));
  }
  // No drift: every step alike.
  s.perturbations.devices[0].drift_per_step = 0;
  const Result flat = simulate(resolve(s));
  for (double t : flat.step_stats.step_s) CHECK(t == flat.step_stats.step_s[0]);
  CHECK(flat.step_stats.step_s[0] == doctest::Approx(r.step_stats.step_s[0]).epsilon(1e-12));
}

TEST_CASE("drift needs more than one step: with simulation.steps = 1 it is an error naming the key") {
  Scenario s = uniform_pipeline(1, 2, Schedule::one_f_one_b);
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 1;
  s.perturbations.devices = {{.device = "node0.gpu0", .compute_slowdown = 1.5, .drift_per_step = 0.1}};
  try {
    (void)resolve(s);
    FAIL("no error");
  } catch (const InvalidScenario& e) {
    CHECK(std::string(e.what()).find("perturbations.devices[0].drift.per_step") != std::string::npos);
  }
}

TEST_CASE("links: false leaves the link report empty and every other number as it is") {
  Scenario s = uniform_pipeline(4, 8, Schedule::one_f_one_b);
  s.cluster.ideal_network = false;
  const ResolvedScenario rs = resolve(s);
  SimOptions without;
  without.links = false;
  const Result a = simulate(rs), b = simulate(rs, without);
  CHECK_FALSE(a.links_by_kind.empty());
  CHECK_FALSE(a.busiest_links.empty());
  CHECK(b.links_by_kind.empty());
  CHECK(b.busiest_links.empty());
  CHECK(b.link_groups.empty());
  CHECK_FALSE(b.link_bottleneck.present);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.mfu == b.mfu);
  CHECK(a.bubble_fraction == b.bubble_fraction);
  CHECK(a.max_peak_bytes == b.max_peak_bytes);
  CHECK(a.events == b.events);
  for (const Axis ax : {Axis::tp, Axis::pp, Axis::dp}) {
    CHECK(a.comm[static_cast<int>(ax)].exposed_s == b.comm[static_cast<int>(ax)].exposed_s);
    CHECK(a.comm[static_cast<int>(ax)].bytes_per_device == b.comm[static_cast<int>(ax)].bytes_per_device);
  }
  REQUIRE(a.per_stage.size() == b.per_stage.size());
  for (std::size_t st = 0; st < a.per_stage.size(); ++st) CHECK(a.per_stage[st].compute_s == b.per_stage[st].compute_s);
}

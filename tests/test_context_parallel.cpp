// tests/test_context_parallel.cpp — context parallelism (workloads/model/cp_attention.hpp) and
// the overlap switches (implementation.tp_comm_overlap / dp_overlap / param_gather_overlap).
//
// Closed forms on one layer, one micro-batch, no pipeline, embedding and LM head free, so
// the step is one forward and one backward of the layer:
//  * bytes: each rank sends (cp−1)·chunk forward and 2·(cp−1)·chunk backward,
//    chunk = 2·b·(s/cp)·(g/t)·d·ab — for ring and all-gather alike;
//  * all-gather kind: every exchange is exposed: AG forward, AG + RS backward (three runs
//    of one ring of the same buffer S = cp·chunk, so C = exposed / 3);
//  * ring: a collective of duration k·C beside cp−1 of the pass's cp attention blocks
//    shows max(0, k·C − A·(cp−1)/cp), k = 1 forward, 2 backward;
//  * tp_comm_overlap: the pass's two all-reduces (duration 2·C_ar, measured without
//    overlap) beside the pass's GEMMs slowed by σ: max(0, 2·C_ar − G·(1 + σ)).
// Tolerance 1e-6 relative: picosecond rounding of the op slices.
#include <doctest/doctest.h>

#include <algorithm>

#include "fixtures.hpp"
#include "workloads/spec/compute_profile.hpp"
#include "workloads/model/cp_attention.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

/// One layer of the small GPT at s = 8192 on `gpus` H100s of one node, NVSwitch at
/// `link_Bps` per GPU (slow links make the exchanges longer than the attention).
Scenario one_layer(int gpus, double link_Bps) {
  Scenario s;
  s.name = "cp";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = gpus;
  s.cluster.intra = {"nvswitch", link_Bps, sim::us(1)};
  s.gpu = *gpu_preset("h100-sxm");
  // The closed forms are about exposure: no NCCL/compute interference (interference.hpp)
  // and every GPU at one speed (scale_noise.hpp).
  s.gpu.compute = *compute_profile_preset("h100-sxm");
  s.gpu.compute.collective_ctas = 0;
  s.implementation.compute_variability = 0;
  s.model = test::small_model(1);
  s.model.seq_len = 8192;
  s.layout.embedding_free = true;
  return s;
}

double exposed(const Result& r, Axis a) { return r.comm[static_cast<int>(a)].exposed_s; }
double sent(const Result& r, Axis a) { return r.comm[static_cast<int>(a)].bytes_per_device; }

}  // namespace

TEST_CASE("cp K/V chunk and bytes per rank per layer follow 2·(cp−1)·(s/cp)·g·d·ab·b") {
  Scenario s = one_layer(4, 450e9);
  s.layout.cp = 4;
  s.layout.microbatch_size = 2;
  s.model.kv_heads = 4;  // GQA: K/V are 4 heads of d = 64
  const double chunk = 2.0 * 2 * (8192.0 / 4) * 4 * 64 * 2;
  CHECK(cp_kv_chunk_bytes(s) == doctest::Approx(chunk));
  CHECK(cp_bytes_sent(s, false) == doctest::Approx(3 * chunk));
  CHECK(cp_bytes_sent(s, true) == doctest::Approx(6 * chunk));
  s.layout.tp = 2;  // K/V heads split over TP
  CHECK(cp_kv_chunk_bytes(s) == doctest::Approx(chunk / 2));
  // The simulated traffic: forward + backward, ring and all-gather alike.
  for (CpKind kind : {CpKind::ring, CpKind::all_gather}) {
    Scenario k = one_layer(4, 450e9);
    k.layout.cp = 4;
    k.layout.cp_kind = kind;
    const Result r = simulate(resolve(k));
    CHECK(sent(r, Axis::cp) == doctest::Approx(cp_bytes_sent(k, false) + cp_bytes_sent(k, true)).epsilon(1e-9));
  }
}

TEST_CASE("cp divides tokens, attention FLOPs and activation memory per rank") {
  Scenario a = one_layer(2, 450e9), b = one_layer(2, 450e9);
  b.layout.cp = 2;
  a.layout.dp = 2;
  const Result ra = simulate(resolve(a)), rb = simulate(resolve(b));
  // Same devices, same model FLOPs per sequence: dp 2 runs two sequences, cp 2 one.
  CHECK(rb.model_flops_per_step == doctest::Approx(ra.model_flops_per_step / 2).epsilon(1e-9));
  const PassBytes pa = pass_bytes(*resolve(a)), pb = pass_bytes(*resolve(b));
  CHECK(pb.activation_per_layer == doctest::Approx(pa.activation_per_layer / 2).epsilon(1e-12));
  CHECK(pb.tp_all_reduce == doctest::Approx(pa.tp_all_reduce / 2));
}

TEST_CASE("cp ring exposes only what exceeds the attention blocks; all-gather exposes all") {
  for (double link : {450e9, 2e9}) {
    CAPTURE(link);
    Scenario ag = one_layer(2, link), ring = one_layer(2, link);
    ag.layout.cp = ring.layout.cp = 2;
    ag.layout.cp_kind = CpKind::all_gather;
    const Result rag = simulate(resolve(ag)), rring = simulate(resolve(ring));
    const double C = exposed(rag, Axis::cp) / 3;
    const KernelPassCosts costs(*resolve(ring));
    const double af = costs.layer(LayerKind::dense, Pass::forward).breakdown.attention.seconds() / 2;
    const double ab = costs.layer(LayerKind::dense, Pass::backward).breakdown.attention.seconds() / 2;
    const double expect = std::max(0.0, C - af) + std::max(0.0, 2 * C - ab);
    CHECK(exposed(rring, Axis::cp) == doctest::Approx(expect).epsilon(1e-6).scale(1e-9));
    CHECK(exposed(rring, Axis::cp) <= exposed(rag, Axis::cp));
    if (link == 2e9) CHECK(exposed(rring, Axis::cp) > 0);  // slow links: the transfer exceeds its block
  }
}

TEST_CASE("tp_comm_overlap exposes max(0, comm − GEMM·(1+σ)) and slows the GEMMs by σ") {
  for (double link : {450e9, 5e9}) {
    CAPTURE(link);
    Scenario off = one_layer(2, link), on = one_layer(2, link);
    off.layout.tp = on.layout.tp = 2;
    on.implementation.tp_comm_overlap = true;
    const Result roff = simulate(resolve(off)), ron = simulate(resolve(on));
    const double C2 = exposed(roff, Axis::tp) / 2;  // one pass's two all-reduces
    const ResolvedScenario rs = resolve(on);
    const double sigma = rs->implementation.profile.tp_overlap_slowdown;
    CHECK(sigma > 0);
    const KernelPassCosts costs(*rs);
    const double gf = costs.layer(LayerKind::dense, Pass::forward).breakdown.gemm.seconds() * (1 + sigma);
    const double gb = costs.layer(LayerKind::dense, Pass::backward).breakdown.gemm.seconds() * (1 + sigma);
    CHECK(exposed(ron, Axis::tp) == doctest::Approx(std::max(0.0, C2 - gf) + std::max(0.0, C2 - gb)).epsilon(1e-6).scale(1e-9));
    CHECK(sent(ron, Axis::tp) == doctest::Approx(sent(roff, Axis::tp)));
  }
}

TEST_CASE("dp_overlap false and param_gather_overlap false only add exposed time") {
  Scenario s = one_layer(2, 450e9);
  s.model = test::small_model(4);
  s.layout.dp = 2;
  s.layout.microbatches = 2;
  s.layout.zero = 3;
  const Result base = simulate(resolve(s));
  Scenario late = s;
  late.implementation.dp_overlap = false;
  Scenario exposed_gathers = s;
  exposed_gathers.implementation.param_gather_overlap = false;
  const Result rl = simulate(resolve(late)), rg = simulate(resolve(exposed_gathers));
  CHECK(sent(rl, Axis::dp) == doctest::Approx(sent(base, Axis::dp)));
  CHECK(sent(rg, Axis::dp) == doctest::Approx(sent(base, Axis::dp)));
  CHECK(rl.step_time_s >= base.step_time_s);
  CHECK(exposed(rg, Axis::dp) > exposed(base, Axis::dp));
  CHECK(rg.step_time_s > base.step_time_s);
}

TEST_CASE("cp layout rules: seq divisible by 2·cp, devices = dp·tp·cp·pp, dp derived") {
  Scenario s = one_layer(8, 450e9);
  s.layout.cp = 4;
  s.layout.tp = 2;
  CHECK(resolve(s)->layout.dp == 1);
  s.model.seq_len = 8196;  // not a multiple of 8
  CHECK_THROWS_AS(resolve(s), InvalidScenario);
  s.model.seq_len = 8192;
  s.layout.placement = {"dp", "cp", "tp", "pp"};
  CHECK_NOTHROW(resolve(s));
  s.layout.placement = {"dp", "cp", "pp"};
  CHECK_THROWS_AS(resolve(s), InvalidScenario);
}

TEST_CASE("shard_over [dp]: ZeRO-3 shards over the dp ranks of one cp index, each cp rank a replica") {
  // dp 4 × cp 2 on 8 GPUs, ZeRO-3. Over [dp, cp] the state of a device is 1/8 of the
  // model's; over [dp] 1/4 (twice), gathered from the 4 dp ranks, and each reduced shard
  // is all-reduced across the 2 cp replicas: every cp rank holds the same shard.
  Scenario s = one_layer(8, 450e9);
  s.layout.cp = 2;
  s.layout.dp = 4;
  s.layout.zero = 3;
  const LayoutReport both = layout_report(resolve(s));
  s.layout.shard_over_cp = false;
  const ResolvedScenario rs = resolve(s);
  const LayoutReport dp_only = layout_report(rs);
  REQUIRE(both.memory_per_stage.size() == 1);
  CHECK(dp_only.memory_per_stage[0].weights == doctest::Approx(2 * both.memory_per_stage[0].weights).epsilon(1e-12));
  CHECK(dp_only.memory_per_stage[0].optimizer == doctest::Approx(2 * both.memory_per_stage[0].optimizer).epsilon(1e-12));
  CHECK(zero_shard_ranks(rs->layout) == 4);
  CHECK(replica_degree(rs->layout) == 2);
  // The groups: shard groups of the 4 dp ranks, replica groups of the 2 cp ranks.
  const BuiltProgram bp = build_program(*rs);
  for (const auto& g : bp.program.groups) {
    if (axis_of(g) == Axis::dp) CHECK(g.ranks.size() == 4);
    if (axis_of(g) == Axis::dpr) CHECK(g.ranks.size() == 2);
  }
  const auto& r0 = bp.program.ranks[0];
  const auto& shard = bp.program.groups[static_cast<std::size_t>(r0.group[static_cast<int>(Axis::dp)])].ranks;
  for (const auto m : shard) CHECK(bp.program.ranks[static_cast<std::size_t>(m)].stage == r0.stage);
  // An HSDP shard group with cp is accepted once ZeRO shards over dp alone.
  s.layout.shard_group = 2;
  CHECK_NOTHROW(resolve(s));
  s.layout.shard_over_cp = true;
  CHECK_THROWS_AS(resolve(s), InvalidScenario);
}

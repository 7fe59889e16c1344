// tests/test_pass_costs.cpp — workloads/cost/pass_costs.hpp: what one layer pass costs.
#include <doctest/doctest.h>

#include "fixtures.hpp"
#include "topology/collective_costs.hpp"
#include "workloads/resolve.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/model/model.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/build/program_builder.hpp"

using namespace ls::wl;

namespace {
Scenario one_gpu(ModelSpec m) {
  Scenario s;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 1;
  s.gpu = *gpu_preset("h100-sxm");
  s.model = std::move(m);
  return s;
}
}  // namespace

TEST_CASE("model FLOPs per pass: forward 1x, backward 2x, its halves 1x each, recompute 0") {
  Scenario s = one_gpu(ls::test::small_model(4));
  s.layout.recompute = Recompute::selective;
  const RooflinePassCosts t(s);
  const double fwd = t.layer(LayerKind::dense, Pass::forward).model_flops;
  CHECK(fwd > 0);
  CHECK(t.layer(LayerKind::dense, Pass::backward).model_flops == 2 * fwd);
  CHECK(t.layer(LayerKind::dense, Pass::backward_input).model_flops == fwd);
  CHECK(t.layer(LayerKind::dense, Pass::backward_weight).model_flops == fwd);
  CHECK(t.layer(LayerKind::dense, Pass::recompute).model_flops == 0);
  CHECK(t.layer(LayerKind::dense, Pass::recompute).hardware_flops > 0);  // the attention core again
  // The zb-h1 halves add up to the whole backward (model.hpp).
  CHECK(t.layer(LayerKind::dense, Pass::backward_input).hardware_flops +
            t.layer(LayerKind::dense, Pass::backward_weight).hardware_flops ==
        doctest::Approx(t.layer(LayerKind::dense, Pass::backward).hardware_flops).epsilon(1e-15));
  // The embedding is a lookup: its backward is no model work.
  CHECK(t.embedding(Pass::backward).model_flops == 0);
  CHECK(t.head(Pass::backward).model_flops == 2 * t.head(Pass::forward).model_flops);
}

TEST_CASE("an MoE layer is its dense part plus its routed experts") {
  Scenario s = one_gpu(*model_preset("mixtral-8x7b"));
  const RooflinePassCosts t(s);
  const LayerCosts whole = layer_costs(s.model, 0, 1, 1, 1, false, Recompute::none, 2);
  const double parts = t.layer(LayerKind::moe, Pass::forward).hardware_flops + t.experts(Pass::forward).hardware_flops;
  CHECK(parts == doctest::Approx(whole.forward.flops).epsilon(1e-12));
  const double model = t.layer(LayerKind::moe, Pass::forward).model_flops + t.experts(Pass::forward).model_flops;
  CHECK(model == doctest::Approx(whole.model_flops_fwd).epsilon(1e-12));
  // The dense table entry stays the plain dense layer (no experts).
  CHECK(t.layer(LayerKind::dense, Pass::forward).hardware_flops < whole.forward.flops);
}

// ---- KernelPassCosts: the kernel model every scenario runs ---------------------------

namespace {
ls::sim::Time compute_op_time(const ls::sim::StageProgram& sp) {
  ls::sim::Time t;
  for (const auto& op : sp.streams[static_cast<std::size_t>(ls::wl::stream::compute)])
    if (op.kind == ls::sim::OpKind::compute) t += op.duration;
  return t;
}
}  // namespace

TEST_CASE("kernel pass costs: each pass is its kernels, the breakdown adds up to its time exactly") {
  Scenario s = one_gpu(ls::test::small_model(4));
  s.layout.recompute = Recompute::selective;
  const KernelPassCosts k(s);
  const KernelOptions o = kernel_options(s);
  for (Pass p : {Pass::forward, Pass::backward, Pass::backward_input, Pass::backward_weight, Pass::recompute}) {
    CAPTURE(static_cast<int>(p));
    const PassCost c = k.layer(LayerKind::dense, p);
    CHECK(c.breakdown.total() == c.time);
  }
  // The forward is layer 0's forward kernels timed on the preset's profile.
  auto fwd = layer_pass_kernels(s.model, 0, o, LayerPass::forward);
  time_kernels(*compute_profile_preset("h100-sxm"), s.gpu, fwd, 2);
  CHECK(k.layer(LayerKind::dense, Pass::forward).time == total_time(fwd));
  // The backward is its two halves.
  CHECK(k.layer(LayerKind::dense, Pass::backward).time ==
        k.layer(LayerKind::dense, Pass::backward_input).time + k.layer(LayerKind::dense, Pass::backward_weight).time);
  // FLOPs stay model.hpp's: the same as the roofline's bookkeeping.
  const RooflinePassCosts r(s);
  for (Pass p : {Pass::forward, Pass::backward, Pass::recompute}) {
    CHECK(k.layer(LayerKind::dense, p).hardware_flops == r.layer(LayerKind::dense, p).hardware_flops);
    CHECK(k.layer(LayerKind::dense, p).model_flops == r.layer(LayerKind::dense, p).model_flops);
  }
  // The optimizer: optimizer_kernels of the shard (fused: grad-norm read + one Adam pass).
  auto opt = optimizer_kernels(1e9, s.precision, true);
  time_kernels(*compute_profile_preset("h100-sxm"), s.gpu, opt, 2);
  CHECK(k.optimizer(1e9).time == total_time(opt));
  CHECK(k.optimizer(1e9).breakdown.optimizer + k.optimizer(1e9).breakdown.launch == k.optimizer(1e9).time);
}

TEST_CASE("kernel pass costs: an MoE layer's routed experts are split from its dense part") {
  Scenario s = one_gpu(*model_preset("mixtral-8x7b"));
  const KernelPassCosts k(s);
  auto all = layer_pass_kernels(s.model, 0, kernel_options(s), LayerPass::forward);
  time_kernels(*compute_profile_preset("h100-sxm"), s.gpu, all, 2);
  CHECK(k.layer(LayerKind::moe, Pass::forward).time + k.experts(Pass::forward).time == total_time(all));
  CHECK(k.experts(Pass::forward).breakdown.gemm > k.experts(Pass::forward).breakdown.elementwise);
  CHECK(k.experts(Pass::forward).breakdown.attention == ls::sim::Time::zero());
}

TEST_CASE("kernel pass costs: a GPU given as a map (no preset) gets a fallback profile") {
  Scenario s = one_gpu(ls::test::small_model(2));
  GpuSpec custom;
  custom.name = "custom";
  custom.peak_flops = 500e12;
  custom.hbm_bandwidth_Bps = 2e12;
  custom.memory_bytes = 64e9;
  custom.matmul_efficiency = 0.6;
  s.gpu = custom;
  const ComputeProfile p = compute_profile_of(s.gpu);
  CHECK(p.gemm_sustained_fraction == 0.6);
  CHECK(p.flash_fwd_efficiency == doctest::Approx(0.7 * 0.6));
  CHECK(profile_bound_violations(p).empty());
  const KernelPassCosts k(s);
  CHECK(k.layer(LayerKind::dense, Pass::forward).time > ls::sim::Time::zero());
  // A preset keeps its own profile.
  CHECK(compute_profile_of(*gpu_preset("a100-80gb")).name == "a100-80gb");
  // The collective profile follows the GPU type.
  CHECK(collective_costs_of(*gpu_preset("a100-40gb"))[ls::topo::LinkKind::nvswitch].efficiency ==
        ls::topo::dgx_a100_collective_costs()[ls::topo::LinkKind::nvswitch].efficiency);
  CHECK(collective_costs_of(*gpu_preset("h200"))[ls::topo::LinkKind::nvswitch].efficiency ==
        ls::topo::default_collective_costs()[ls::topo::LinkKind::nvswitch].efficiency);
}

TEST_CASE("activation bytes follow the kernel model (attention kind, dropout, recompute)") {
  Scenario s = one_gpu(ls::test::small_model(4));
  const PassBytes flash = pass_bytes(s);
  CHECK(flash.activation_per_layer == layer_activation_bytes(s.model, 0, kernel_options(s)));
  CHECK(flash.activation_full_layer == flash.activation_per_layer);  // no recompute
  Scenario unfused = s;
  unfused.implementation.attention = AttentionKind::unfused;
  CHECK(pass_bytes(unfused).activation_per_layer > flash.activation_per_layer);  // the s×s scores
  Scenario dropout = s;
  dropout.model.dropout = 0.1;
  CHECK(pass_bytes(dropout).activation_per_layer > flash.activation_per_layer);  // masks
  Scenario full = s;
  full.layout.recompute = Recompute::full;
  const double bsh = static_cast<double>(s.model.seq_len) * static_cast<double>(s.model.hidden);
  CHECK(pass_bytes(full).activation_per_layer == bsh * 2);  // only the layer input, bf16
  CHECK(pass_bytes(full).activation_full_layer == flash.activation_per_layer);
}

TEST_CASE("compute_breakdown: per stage, exactly the stage's compute op time") {
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    Scenario s = variant == 2 ? ls::test::uniform_pipeline(2, 4, Schedule::zb_h1) : ls::test::uniform_pipeline(2, 4);
    s.layout.embedding_free = false;
    if (variant == 1) s.layout.recompute = Recompute::selective;
    const BuiltProgram bp = build_program(resolve(s));
    REQUIRE(bp.compute_breakdown.size() == 2);
    for (std::size_t st = 0; st < 2; ++st) {
      const ComputeBreakdown& b = bp.compute_breakdown[st];
      CHECK(b.total() == compute_op_time(bp.program.stages[st]));
      CHECK(b.gemm > ls::sim::Time::zero());
      CHECK(b.attention > ls::sim::Time::zero());
      CHECK(b.optimizer > ls::sim::Time::zero());
      CHECK(b.launch > ls::sim::Time::zero());
    }
    CHECK(bp.compute_breakdown[1].logits > ls::sim::Time::zero());  // the LM head lives on the last stage
    CHECK(bp.compute_breakdown[0].logits == ls::sim::Time::zero());
  }
}

namespace {

bool same_cost(const PassCost& a, const PassCost& b) {
  const ComputeBreakdown &x = a.breakdown, &y = b.breakdown;
  return a.time == b.time && a.hardware_flops == b.hardware_flops && a.model_flops == b.model_flops && x.gemm == y.gemm &&
         x.attention == y.attention && x.elementwise == y.elementwise && x.logits == y.logits && x.optimizer == y.optimizer &&
         x.launch == y.launch;
}

/// Every pass of two pass-cost models, and the optimizer on a million parameters.
bool same_costs(const KernelPassCosts& a, const KernelPassCosts& b) {
  for (Pass p : {Pass::forward, Pass::backward, Pass::backward_input, Pass::backward_weight, Pass::recompute})
    for (const auto& [x, y] : {std::pair{a.layer(LayerKind::dense, p), b.layer(LayerKind::dense, p)},
                               std::pair{a.layer(LayerKind::moe, p), b.layer(LayerKind::moe, p)},
                               std::pair{a.experts(p), b.experts(p)}, std::pair{a.embedding(p), b.embedding(p)},
                               std::pair{a.head(p), b.head(p)}, std::pair{a.mtp_entry(p), b.mtp_entry(p)}})
      if (!same_cost(x, y)) return false;
  return same_cost(a.optimizer(1e6), b.optimizer(1e6));
}

}  // namespace

TEST_CASE("pass costs read only the layout fields PassCostsLayout keeps") {
  // An MoE model with one dense layer first, LoRA adapters (whose local widths read tp),
  // and a layout that sets every key field away from its default.
  Scenario base = one_gpu(ls::test::small_moe_model());
  base.model.dense_layers = 1;
  base.model.layers = 4;
  base.training.method = TrainingMethod::lora;
  base.training.lora.rank = 8;
  base.cluster.gpus_per_node = 8;
  LayoutSpec& L = base.layout;
  L.tp = 2;
  L.ep = 2;
  L.expert_tp = 1;
  L.cp = 2;
  L.microbatch_size = 2;
  L.sequence_parallel = true;
  L.recompute = Recompute::selective;
  const KernelPassCosts reference(base);
  // Every other layout field moved: the same key and the same costs. Each key field
  // moved: another key and other costs.
  struct Move {
    const char* field;
    bool key;
    void (*move)(LayoutSpec&);
  };
  const Move moves[] = {
      {"dp", false, [](LayoutSpec& l) { l.dp = 4; }},
      {"pp", false, [](LayoutSpec& l) { l.pp = 2; }},
      {"cp_kind", false, [](LayoutSpec& l) { l.cp_kind = CpKind::all_gather; }},
      {"zero", false, [](LayoutSpec& l) { l.zero = 3; }},
      {"recompute_layers", false, [](LayoutSpec& l) { l.recompute_layers.every = 2; }},
      {"microbatches", false, [](LayoutSpec& l) { l.microbatches = 7; }},
      {"global_batch", false, [](LayoutSpec& l) { l.global_batch = 56; }},
      {"schedule", false, [](LayoutSpec& l) { l.schedule = Schedule::interleaved_1f1b; }},
      {"virtual_stages", false, [](LayoutSpec& l) { l.virtual_stages = 2; }},
      {"stage_layers", false, [](LayoutSpec& l) { l.stage_layers_mode = StageLayersMode::explicit_list; l.stage_layers = {1, 3}; }},
      {"placement", false, [](LayoutSpec& l) { l.placement = {"dp", "tp", "pp"}; }},
      {"dp_bucket_bytes", false, [](LayoutSpec& l) { l.dp_bucket_bytes = 1e6; }},
      {"accumulate_unsharded", false, [](LayoutSpec& l) { l.accumulate_unsharded = true; }},
      {"shard_group", false, [](LayoutSpec& l) { l.shard_group = 2; }},
      {"shard_over_cp", false, [](LayoutSpec& l) { l.shard_over_cp = false; }},
      {"offload", false, [](LayoutSpec& l) { l.offload = {true, true}; }},
      {"microbatch_size", true, [](LayoutSpec& l) { l.microbatch_size = 1; }},
      {"tp", true, [](LayoutSpec& l) { l.tp = 4; }},
      {"ep", true, [](LayoutSpec& l) { l.ep = 4; }},
      {"expert_tp", true, [](LayoutSpec& l) { l.expert_tp = 2; }},
      {"cp", true, [](LayoutSpec& l) { l.cp = 1; }},
      {"sequence_parallel", true, [](LayoutSpec& l) { l.sequence_parallel = false; }},
      {"recompute", true, [](LayoutSpec& l) { l.recompute = Recompute::full; }},
      {"embedding_free", true, [](LayoutSpec& l) { l.embedding_free = true; }},
  };
  for (const Move& m : moves) {
    CAPTURE(m.field);
    Scenario s = base;
    m.move(s.layout);
    CHECK((PassCostsLayout(s.layout) == PassCostsLayout(L)) == !m.key);
    CHECK(same_costs(KernelPassCosts(s), reference) == !m.key);
  }
}

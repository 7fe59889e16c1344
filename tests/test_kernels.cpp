// tests/test_kernels.cpp — the kernel-level compute model: profile table, GEMM tile and
// wave quantisation, memory-bound and optimizer kernels, FLOP conservation against
// model.cpp, activation memory against Korthikanti et al. 2022, exact breakdown sums.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "workloads/spec/compute_profile.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/model/memory.hpp"
#include "workloads/model/model.hpp"

using namespace ls::wl;
using ls::sim::Time;

namespace {

ComputeProfile a100() { return *compute_profile_preset("a100-80gb"); }
GpuSpec a100_gpu() { return *gpu_preset("a100-80gb"); }

/// A GPT block small enough to read the closed forms by hand: h = 1024, a = 16, s = 512.
ModelSpec small_gpt() {
  ModelSpec m;
  m.name = "small-gpt";
  m.layers = 2;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden = 4 * 1024;
  m.vocab = 32000;
  m.seq_len = 512;
  m.activation = Activation::gelu;
  return m;
}

/// The same block as Llama builds it: SwiGLU of width 2816, RMSNorm.
ModelSpec small_llama() {
  ModelSpec m = small_gpt();
  m.name = "small-llama";
  m.activation = Activation::swiglu;
  m.ffn_hidden = 2816;
  return m;
}

/// Korthikanti et al.'s setting: unfused attention, dropout on, no fusion, 16-bit.
KernelOptions korthikanti(int b, int tp, bool sp) {
  KernelOptions o;
  o.microbatch_size = b;
  o.tp = tp;
  o.sequence_parallel = sp;
  o.attention = AttentionKind::unfused;
  o.fused_elementwise = false;
  o.dropout = 0.1;
  return o;
}

double flops_of(const ModelSpec& m, int layer, const KernelOptions& o, LayerPass p) {
  return total_flops(layer_pass_kernels(m, layer, o, p));
}

}  // namespace

TEST_CASE("every GPU preset has a compute profile inside its bounds") {
  for (const auto& name : gpu_preset_names()) {
    CAPTURE(name);
    const auto p = compute_profile_preset(name);
    REQUIRE(p.has_value());
    CHECK(profile_bound_violations(*p).empty());
  }
  CHECK_FALSE(compute_profile_preset("tpu-v5").has_value());
  CHECK(compute_profile_preset_names() == gpu_preset_names());
}

TEST_CASE("the constant table reads and writes every field by name") {
  ComputeProfile p = a100();
  CHECK(profile_constants().size() == 19);  // + fp8 / mxfp8 GEMM fractions, FlashAttention-2 and -1, collective_ctas, dropout RNG
  for (const auto& c : profile_constants()) {
    CAPTURE(std::string(c.name));
    CHECK(c.lower < c.upper);
    CHECK(find_profile_constant(c.name) == &c);
    const double v = c.integer ? std::round((c.lower + c.upper) / 2) : (c.lower + c.upper) / 2;
    c.set(p, v);
    CHECK(c.get(p) == v);
  }
  CHECK(find_profile_constant("no_such_constant") == nullptr);
  ComputeProfile bad = a100();
  find_profile_constant("hbm_fraction")->set(bad, 1.5);
  REQUIRE(profile_bound_violations(bad).size() == 1);
  CHECK(profile_bound_violations(bad)[0].find("hbm_fraction") == 0);
}

TEST_CASE("GEMM: exact tiling reaches the sustained fraction; a 1 %-full last wave costs a whole wave") {
  const ComputeProfile p = a100();  // 108 SMs, 256×128 tiles
  REQUIRE(p.sm_count == 108);
  // 12 × 9 = 108 tiles of 256×128: one full wave; K deep.
  const GemmShape exact{12 * 256.0, 9 * 128.0, 4096};
  CHECK(gemm_efficiency(p, exact) == doctest::Approx(p.gemm_sustained_fraction).epsilon(1e-15));
  // Four full waves (batch 4) are as efficient.
  CHECK(gemm_efficiency(p, {12 * 256.0, 9 * 128.0, 4096, 4}) == doctest::Approx(p.gemm_sustained_fraction).epsilon(1e-15));
  // 109 tiles in one row: the second wave holds one tile (0.9 % of the SMs) and costs
  // as much as the first, in either tile orientation: efficiency sustained · 109/216.
  const GemmShape spill{256, 109 * 128.0, 4096};
  CHECK(gemm_efficiency(p, spill) == doctest::Approx(p.gemm_sustained_fraction * 109.0 / 216.0).epsilon(1e-12));
  // Tile quantisation: one row more than a tile pads a whole tile row.
  const GemmShape ragged{12 * 256.0 + 1, 9 * 128.0, 4096};
  CHECK(gemm_efficiency(p, ragged) < 0.55 * p.gemm_sustained_fraction);
  // K ramp: a tile with K = gemm_min_k / 2 takes as long as one with gemm_min_k.
  const GemmShape shallow{12 * 256.0, 9 * 128.0, p.gemm_min_k / 2};
  CHECK(gemm_efficiency(p, shallow) == doctest::Approx(p.gemm_sustained_fraction / 2).epsilon(1e-15));
}

TEST_CASE("GEMM: a grid smaller than one wave splits K over the idle SMs") {
  const ComputeProfile p = a100();
  const GpuSpec g = a100_gpu();
  // One 256×128 tile, K = 108·256: split 108 ways into gemm_min_k-deep slices, one wave,
  // every SM busy: the sustained fraction, plus a reduction of 108 fp32 partial C tiles.
  const GemmShape skinny{256, 128, 108 * 256.0};
  CHECK(gemm_efficiency(p, skinny) == doctest::Approx(p.gemm_sustained_fraction).epsilon(1e-15));
  const double hbm = g.hbm_bandwidth_Bps * p.hbm_fraction;
  const double compute = skinny.flops() / (g.peak_flops * p.gemm_sustained_fraction);
  const double operands = (256 * 108 * 256.0 + 108 * 256.0 * 128 + 256 * 128) * 2;  // A, B, C bf16
  CHECK(gemm_time(p, g, skinny, 2) ==
        Time::from_seconds(std::max(compute, operands / hbm) + 2 * 108 * 256 * 128 * 4.0 / hbm));
  // A shallow K leaves nothing to split: one tile alone on one SM.
  const GemmShape alone{256, 128, 256};
  CHECK(gemm_efficiency(p, alone) == doctest::Approx(p.gemm_sustained_fraction / 108).epsilon(1e-15));
}

TEST_CASE("GEMM time: compute-bound at the shape's efficiency, memory-bound when skinny") {
  const ComputeProfile p = a100();
  const GpuSpec g = a100_gpu();
  const GemmShape big{12 * 256.0, 9 * 128.0, 8192};
  CHECK(gemm_time(p, g, big, 2) == Time::from_seconds(big.flops() / (g.peak_flops * p.gemm_sustained_fraction)));
  // Shallow batched products (K = 32, no K ramp): one wave of 108 tiles moves
  // 108·(256·32 + 32·128 + 256·128)·2 bytes, longer than its FLOPs take.
  ComputeProfile no_ramp = p;
  no_ramp.gemm_min_k = 0;
  const GemmShape shallow{256, 128, 32, 108};
  const double bytes = 108 * (256 * 32 + 32 * 128 + 256 * 128) * 2.0;
  REQUIRE(shallow.flops() / (g.peak_flops * no_ramp.gemm_sustained_fraction) < bytes / (g.hbm_bandwidth_Bps * p.hbm_fraction));
  CHECK(gemm_time(no_ramp, g, shallow, 2) == Time::from_seconds(bytes / (g.hbm_bandwidth_Bps * p.hbm_fraction)));
}

TEST_CASE("a power limit slows compute-bound kernels by the cube root of the power ratio, not memory-bound ones") {
  const GpuSpec full = *gpu_preset("h100-sxm");
  REQUIRE(full.tdp_watts == 700);
  const ComputeProfile p = full.compute;
  GpuSpec capped = full;
  capped.power_limit_watts = 500;
  const double f = std::cbrt(500.0 / 700.0);  // 0.8939
  CHECK(power_clock_fraction(full) == 1.0);
  CHECK(power_clock_fraction(capped) == doctest::Approx(f).epsilon(1e-15));
  // The cap at or above the TDP is no cap.
  GpuSpec at_tdp = full;
  at_tdp.power_limit_watts = 700;
  CHECK(power_clock_fraction(at_tdp) == 1.0);
  // A compute-bound GEMM: FLOPs / (peak · f · fraction), exactly to the picosecond.
  const GemmShape big{16 * 256.0, 33 * 128.0, 8192};
  CHECK(gemm_time(p, capped, big, 2) ==
        Time::from_seconds(big.flops() / (full.peak_flops * f * gemm_efficiency(p, big))));
  CHECK(fp8_gemm_time(p, capped, big).seconds() / fp8_gemm_time(p, full, big).seconds() == doctest::Approx(1 / f).epsilon(1e-9));
  // Attention on the tensor cores: the same clock.
  CHECK(flash_time(p, capped, 1e15, 1e6, false, false).seconds() / flash_time(p, full, 1e15, 1e6, false, false).seconds() ==
        doctest::Approx(1 / f).epsilon(1e-9));
  // HBM-bound work keeps its rate.
  CHECK(memory_time(p, capped, 1e9) == memory_time(p, full, 1e9));
  // The law against the one published pair of one die at two powers (H100 NVL 400 W,
  // 835 dense bf16 TFLOP/s; SXM 700 W, 989): within 2 %.
  capped.power_limit_watts = 400;
  CHECK(power_clock_fraction(capped) == doctest::Approx(835.0 / 989.0).epsilon(0.02));
}

TEST_CASE("memory-bound kernel time = bytes / (HBM · fraction) + launch") {
  const ComputeProfile p = a100();
  const GpuSpec g = a100_gpu();
  auto ks = optimizer_kernels(1e9, PrecisionSpec{}, true);
  time_kernels(p, g, ks);
  for (const auto& k : ks) {
    CAPTURE(std::string(k.name));
    CHECK(k.time == Time::from_seconds(k.bytes / (g.hbm_bandwidth_Bps * p.hbm_fraction)));
    CHECK(k.launch == Time::from_seconds(p.launch_overhead_s));
    CHECK(k.total() == k.time + k.launch);
  }
}

TEST_CASE("a dropout kernel takes the slower of its bytes and its random draws") {
  const ComputeProfile p = a100();
  const GpuSpec g = a100_gpu();
  const double hbm = g.hbm_bandwidth_Bps * p.hbm_fraction;
  // 151 M-element attention dropout (fp16 in, fp16 out, 1-byte mask): 5 bytes per element.
  const double n = 151e6, bytes = 5 * n;
  REQUIRE(n / p.dropout_rng_rate > bytes / hbm);  // RNG-bound at the A100 rate
  CHECK(memory_kernel_time(p, g, bytes, n) == Time::from_seconds(n / p.dropout_rng_rate));
  // A mask 100 x smaller per byte is bandwidth-bound again; no draws, only the bytes.
  CHECK(memory_kernel_time(p, g, bytes, n / 100) == Time::from_seconds(bytes / hbm));
  CHECK(memory_kernel_time(p, g, bytes, 0) == memory_time(p, g, bytes));
  ComputeProfile no_rng = p;
  no_rng.dropout_rng_rate = 0;  // 0: no RNG bound
  CHECK(memory_kernel_time(no_rng, g, bytes, n) == memory_time(p, g, bytes));

  // The layer's forward draws one number per mask element; its backward reads the masks.
  const ModelSpec m = small_gpt();
  KernelOptions o = korthikanti(2, 1, false);
  o.fused_elementwise = true;
  const double S = 2 * 16.0 * 512 * 512, X = 2 * 512 * 1024.0;
  double drawn = 0;
  for (const auto& k : layer_pass_kernels(m, 0, o, LayerPass::forward)) drawn += k.random_elements;
  CHECK(drawn == S + 2 * X);  // attention dropout + two bias-dropout-adds
  // Per device under tp = 2 with sequence parallelism: half the heads' scores, and the
  // bias-dropout-adds on a sequence shard. Full recompute reruns the forward: it draws again.
  KernelOptions tp2 = korthikanti(2, 2, true);
  tp2.fused_elementwise = true;
  double drawn_tp2 = 0, redrawn = 0;
  for (const auto& k : layer_pass_kernels(m, 0, tp2, LayerPass::forward)) drawn_tp2 += k.random_elements;
  CHECK(drawn_tp2 == S / 2 + 2 * X / 2);
  tp2.recompute = Recompute::full;
  for (const auto& k : layer_pass_kernels(m, 0, tp2, LayerPass::recompute)) redrawn += k.random_elements;
  CHECK(redrawn == drawn_tp2);
  for (auto pass : {LayerPass::backward_input, LayerPass::backward_weight})
    for (const auto& k : layer_pass_kernels(m, 0, o, pass)) CHECK(k.random_elements == 0);
  o.dropout = 0;
  for (const auto& k : layer_pass_kernels(m, 0, o, LayerPass::forward)) CHECK(k.random_elements == 0);
}

TEST_CASE("optimizer moves the stated bytes per parameter") {
  const double P = 1e9;
  // 18 B/param {w 2, g 4, master 4, moments 8}: norm reads g = 4; Adam reads g, master,
  // moments (4 + 4 + 8) and writes master, moments, bf16 weights (4 + 8 + 2) = 30.
  auto fused = optimizer_kernels(P, PrecisionSpec{2, 4, 4, 8, 2}, true);
  REQUIRE(fused.size() == 2);
  CHECK(fused[0].bytes == 4 * P);
  CHECK(fused[1].bytes == 30 * P);
  CHECK(total_bytes(fused) == 34 * P);
  // 16 B/param {2, 2, 4, 8}: 2 + (2 + 8 + 16 + 2) = 30.
  CHECK(total_bytes(optimizer_kernels(P, PrecisionSpec{2, 2, 4, 8, 2}, true)) == 30 * P);
  // fp32 weights without a master copy {4, 4, 0, 8}: norm 4, Adam 4 + 2·4 + 2·8 = 28.
  CHECK(total_bytes(optimizer_kernels(P, PrecisionSpec{4, 4, 0, 8, 2}, true)) == 32 * P);
  // Unfused: norm 4 + clip 8 + moments 2·(8 + 4) + update (8 + 8) + copy (4 + 2) = 58.
  auto unfused = optimizer_kernels(P, PrecisionSpec{2, 4, 4, 8, 2}, false);
  CHECK(unfused.size() == 6);
  CHECK(total_bytes(unfused) == 58 * P);
  for (const auto& k : unfused) CHECK(k.category == KernelCategory::optimizer);
  CHECK_THROWS_AS(optimizer_kernels(-1, PrecisionSpec{}, true), std::invalid_argument);
}

TEST_CASE("activation memory reproduces Korthikanti's closed forms (unfused, dropout, no fusion)") {
  const ModelSpec m = small_gpt();
  const double b = 2, s = 512, h = 1024, a = 16, sbh = s * b * h;
  // t = 1: sbh(34 + 5as/h).
  CHECK(layer_activation_bytes(m, 0, korthikanti(2, 1, false)) == doctest::Approx(sbh * (34 + 5 * a * s / h)).epsilon(1e-14));
  for (int t : {2, 4, 8}) {
    CAPTURE(t);
    // TP without SP: sbh(10 + 24/t + 5as/(ht)); with SP: sbh(34 + 5as/h)/t.
    CHECK(layer_activation_bytes(m, 0, korthikanti(2, t, false)) ==
          doctest::Approx(sbh * (10 + 24.0 / t + 5 * a * s / (h * t))).epsilon(1e-14));
    CHECK(layer_activation_bytes(m, 0, korthikanti(2, t, true)) ==
          doctest::Approx(sbh * (34 + 5 * a * s / h) / t).epsilon(1e-14));
    // And memory.cpp's table agrees in every recompute mode.
    for (bool sp : {false, true})
      for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::every_second_matmul, Recompute::full}) {
        KernelOptions o = korthikanti(2, t, sp);
        o.recompute = rc;
        CHECK(layer_activation_bytes(m, 0, o) ==
              doctest::Approx(activation_bytes_per_layer(m, 2, t, sp, rc)).epsilon(1e-14));
      }
  }
  // Fusing GPT's elementwise kernels keeps the same tensors.
  KernelOptions fused = korthikanti(2, 4, true);
  fused.fused_elementwise = true;
  CHECK(layer_activation_bytes(m, 0, fused) == doctest::Approx(sbh * (34 + 5 * a * s / h) / 4).epsilon(1e-14));
}

TEST_CASE("activation memory follows the attention kind and dropout") {
  const ModelSpec m = small_gpt();
  const double b = 1, s = 512, h = 1024, a = 16, sbh = s * b * h;
  KernelOptions o = korthikanti(1, 1, false);
  o.attention = AttentionKind::flash;  // no s×s tensor: the 5as/h term vanishes
  CHECK(layer_activation_bytes(m, 0, o) == doctest::Approx(34 * sbh).epsilon(1e-14));
  o.dropout = 0;  // the two sbh masks vanish
  CHECK(layer_activation_bytes(m, 0, o) == doctest::Approx(32 * sbh).epsilon(1e-14));
  o.attention = AttentionKind::unfused;  // the softmax output alone (2as²b): 2as/h
  CHECK(layer_activation_bytes(m, 0, o) == doctest::Approx(sbh * (32 + 2 * a * s / h)).epsilon(1e-14));
  // Unfused SwiGLU keeps silu(gate) besides gate and up: one more f-wide tensor.
  const ModelSpec llama = small_llama();
  KernelOptions lf;
  const double f = 2816;
  KernelOptions lu = lf;
  lu.fused_elementwise = false;
  // Unfused RMSNorm keeps an fp32 copy of its input (4 B), its rstd (4 B a token) and its
  // bf16 output, where the fused kernel keeps the bf16 input: 4·sbh + 4·sb more per norm.
  CHECK(layer_activation_bytes(llama, 0, lu) - layer_activation_bytes(llama, 0, lf) ==
        doctest::Approx(s * b * f * 2 + 2 * (4 * sbh + 4 * s * b)).epsilon(1e-14));
}

TEST_CASE("unfused RMSNorm moves 36 B per element forward and 92 backward, in 8 + 14 kernels") {
  // Eager PyTorch normalises an fp32 copy (upcast 2+4, square 4+4, mean 4, ·rstd 4+4,
  // downcast 4+2, ·weight 2+2 bytes per element); its autograd backward mirrors each op
  // (weight 2+2, 2+2+2, 2; downcast 2+4; scale 4+4, 4+4+4, 4; mean 4; square 4+4, 4+4,
  // 4+4+4; the fp32 copy's two gradients added 4+4+4; upcast 4+2), per-token ops aside.
  const ModelSpec llama = small_llama();
  KernelOptions o;
  o.microbatch_size = 2;
  o.fused_elementwise = false;
  const double e = 2 * 512 * 1024.0, row = 2 * 512 * 4.0;  // elements of one norm; its per-token fp32 values
  auto norm_bytes = [&](LayerPass pass, int& kernels) {
    double bytes = 0;
    kernels = 0;
    for (const auto& k : layer_pass_kernels(llama, 0, o, pass))
      if (k.name.rfind("rmsnorm.", 0) == 0) bytes += k.bytes, ++kernels;
    return bytes;
  };
  int fwd_kernels = 0, bwd_kernels = 0;
  // Two norms a layer; per norm the per-token values cross HBM 6 times each way (the
  // mean's output, +eps and rsqrt read and write, the scale's read; backward the mirror).
  CHECK(norm_bytes(LayerPass::forward, fwd_kernels) == doctest::Approx(2 * (36 * e + 6 * row)).epsilon(1e-14));
  CHECK(norm_bytes(LayerPass::backward_input, bwd_kernels) == doctest::Approx(2 * (92 * e + 6 * row)).epsilon(1e-14));
  CHECK(fwd_kernels == 2 * 8);
  CHECK(bwd_kernels == 2 * 14);
}

TEST_CASE("fused_norm: the norms fused beside eager element-wise ops, and only the norms") {
  // torchtitan's fused_rmsnorm in an eager block: the two norms are the fused kernel (no
  // rmsnorm.* op; its bf16 input kept), every other kernel the eager block's. Unset, the
  // norms follow fused_elementwise.
  const ModelSpec llama = small_llama();
  KernelOptions eager;
  eager.microbatch_size = 2;
  eager.fused_elementwise = false;
  KernelOptions norms = eager;
  norms.fused_norm = true;
  const double s = 512, b = 2, h = 1024, sbh = s * b * h;
  auto count = [&](const KernelOptions& o, const char* prefix) {
    int n = 0;
    for (const auto& k : layer_pass_kernels(llama, 0, o, LayerPass::forward))
      if (k.name.rfind(prefix, 0) == 0) ++n;
    return n;
  };
  CHECK(count(eager, "rmsnorm.") == 2 * 8);
  CHECK(count(norms, "rmsnorm.") == 0);
  CHECK(count(norms, "rope.") == count(eager, "rope."));  // RoPE stays eager
  // Activations: the fused norm keeps its bf16 input, the eager one an fp32 copy, rstd and
  // its bf16 output: 4·sbh + 4·sb more per norm, as the whole-block comparison above.
  CHECK(layer_activation_bytes(llama, 0, eager) - layer_activation_bytes(llama, 0, norms) ==
        doctest::Approx(2 * (4 * sbh + 4 * s * b)).epsilon(1e-14));
  KernelOptions unset = eager;
  CHECK(count(unset, "rmsnorm.") == 2 * 8);
  unset.fused_elementwise = true;
  CHECK(count(unset, "rmsnorm.") == 0);
  unset.fused_norm = false;  // eager norms in an otherwise fused block
  CHECK(count(unset, "rmsnorm.") == 2 * 8);
}

TEST_CASE("unfused attention moves b·a·s² elements through HBM") {
  const ModelSpec m = small_gpt();
  const int b = 2, t = 4;
  const double S = b * (16.0 / t) * 512 * 512, ab = 2;  // scores on this device
  KernelOptions o = korthikanti(b, t, false);
  o.fused_elementwise = true;
  double elementwise = 0;
  for (const auto& k : layer_pass_kernels(m, 0, o, LayerPass::forward))
    if (k.category == KernelCategory::attention && k.kind == KernelKind::memory) elementwise += k.bytes;
  // Fused scale-mask-softmax reads and writes the scores (2·S·ab); dropout reads them and
  // writes its output and a 1-byte mask (2·S·ab + S).
  CHECK(elementwise == doctest::Approx(2 * S * ab + 2 * S * ab + S).epsilon(1e-14));
  o.fused_elementwise = false;  // scale, mask and softmax each read and write them
  elementwise = 0;
  for (const auto& k : layer_pass_kernels(m, 0, o, LayerPass::forward))
    if (k.category == KernelCategory::attention && k.kind == KernelKind::memory) elementwise += k.bytes;
  CHECK(elementwise == doctest::Approx(3 * 2 * S * ab + 2 * S * ab + S).epsilon(1e-14));
}

TEST_CASE("FLOP conservation: GEMM + attention FLOPs of every pass equal model.cpp") {
  for (const char* name : {"gpt3-175b", "llama3-8b", "llama3-70b", "mixtral-8x7b", "deepseek-v3"})
  for (int layer : {0, 60}) {  // deepseek-v3: a dense layer, then an MoE one (both MLA); the others: the same kind twice
    ModelSpec m = *model_preset(name);
    m.layers = std::max(m.layers, 61);
    CAPTURE(layer);
    for (int t : {1, 8})
      for (int ep : {1, 4})
        for (AttentionKind att : {AttentionKind::flash, AttentionKind::unfused})
          for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::every_second_matmul, Recompute::full}) {
            CAPTURE(name);
            CAPTURE(t);
            CAPTURE(ep);
            KernelOptions o;
            o.microbatch_size = 2;
            o.tp = t;
            o.ep = ep;
            o.attention = att;
            o.recompute = rc;
            o.dropout = 0.1;
            const LayerCosts c = layer_costs(m, layer, 2, t, ep, false, rc, 2);
            CHECK(flops_of(m, layer, o, LayerPass::forward) == doctest::Approx(c.forward.flops).epsilon(1e-12));
            CHECK(flops_of(m, layer, o, LayerPass::backward_input) == doctest::Approx(c.backward_input.flops).epsilon(1e-12));
            CHECK(flops_of(m, layer, o, LayerPass::backward_weight) == doctest::Approx(c.backward_weight.flops).epsilon(1e-12));
            CHECK(flops_of(m, layer, o, LayerPass::recompute) == doctest::Approx(c.recompute.flops).epsilon(1e-12));
          }
    KernelOptions o;
    o.microbatch_size = 2;
    o.tp = 8;
    const LayerCosts head = lm_head_costs(m, 2, 8, 2);
    CHECK(total_flops(lm_head_pass_kernels(m, o, LayerPass::forward)) == doctest::Approx(head.forward.flops).epsilon(1e-12));
    CHECK(total_flops(lm_head_pass_kernels(m, o, LayerPass::backward_input)) ==
          doctest::Approx(head.backward_input.flops).epsilon(1e-12));
    CHECK(total_flops(lm_head_pass_kernels(m, o, LayerPass::backward_weight)) ==
          doctest::Approx(head.backward_weight.flops).epsilon(1e-12));
    CHECK(total_flops(embedding_pass_kernels(m, o, LayerPass::forward)) == 0);
    CHECK(embedding_pass_kernels(m, o, LayerPass::backward_input).empty());
  }
}

TEST_CASE("FlashAttention: causal blocks skipped, its own forward and backward efficiency") {
  CHECK(causal_block_fraction(2048, 128, true) == 17.0 / 32.0);
  CHECK(causal_block_fraction(2048, 128, false) == 1.0);
  CHECK(causal_block_fraction(100, 128, true) == 1.0);  // one block: the diagonal is all of it
  const ModelSpec m = *model_preset("gpt3-175b");       // s = 2048, h = 12288, a = 96
  const ComputeProfile p = a100();
  const GpuSpec g = a100_gpu();
  KernelOptions o;
  o.tp = 8;
  auto fwd = layer_pass_kernels(m, 0, o, LayerPass::forward);
  auto bwd = layer_pass_kernels(m, 0, o, LayerPass::backward_input);
  time_kernels(p, g, fwd);
  time_kernels(p, g, bwd);
  const double counted = 4.0 * 2048 * 2048 * 12288 / 8;
  for (const auto& k : fwd)
    if (k.kind == KernelKind::flash_forward) {
      CHECK(k.flops == counted);
      CHECK(k.executed_flops == doctest::Approx(counted * 17 / 32).epsilon(1e-15));
      CHECK(k.time == Time::from_seconds(k.executed_flops / (g.peak_flops * p.flash_fwd_efficiency)));
    }
  for (const auto& k : bwd)
    if (k.kind == KernelKind::flash_backward) {
      CHECK(k.flops == 2 * counted);
      CHECK(k.executed_flops == doctest::Approx(2.5 * counted * 17 / 32).epsilon(1e-15));
      CHECK(k.time == Time::from_seconds(k.executed_flops / (g.peak_flops * p.flash_bwd_efficiency)));
    }
}

TEST_CASE("the breakdown sums to the total exactly, launch overhead in its own category") {
  const ComputeProfile p = *compute_profile_preset("h100-sxm");
  const GpuSpec g = *gpu_preset("h100-sxm");
  for (const char* name : {"gpt3-175b", "llama3-8b", "mixtral-8x7b"}) {
    CAPTURE(name);
    const ModelSpec m = *model_preset(name);
    KernelOptions o;
    o.tp = 4;
    o.sequence_parallel = true;
    o.recompute = Recompute::selective;
    std::vector<Kernel> all;
    for (LayerPass pass : {LayerPass::forward, LayerPass::backward_input, LayerPass::backward_weight, LayerPass::recompute}) {
      auto ks = layer_pass_kernels(m, 0, o, pass);
      all.insert(all.end(), ks.begin(), ks.end());
      auto head = lm_head_pass_kernels(m, o, pass);
      all.insert(all.end(), head.begin(), head.end());
    }
    auto opt = optimizer_kernels(1e9, PrecisionSpec{}, true);
    all.insert(all.end(), opt.begin(), opt.end());
    time_kernels(p, g, all);
    const ComputeBreakdown br = breakdown(all);
    Time sum;
    for (const auto& k : all) sum += k.time + k.launch;
    CHECK(br.total() == sum);
    CHECK(br.total() == total_time(all));
    // One launch per kernel each entry stands for (a per-expert grouped GEMM: one per
    // local expert; Mixtral's 8 experts all local here).
    std::int64_t launches = 0;
    for (const auto& k : all) launches += k.launches;
    const bool more_launches_than_entries = launches > static_cast<std::int64_t>(all.size());
    CHECK(more_launches_than_entries == (std::string(name) == "mixtral-8x7b"));
    CHECK(br.launch == Time::from_seconds(p.launch_overhead_s) * launches);
    CHECK(br.gemm > Time::zero());
    CHECK(br.attention > Time::zero());
    CHECK(br.elementwise > Time::zero());
    CHECK(br.logits > Time::zero());
    CHECK(br.optimizer > Time::zero());
  }
}

TEST_CASE("sequence parallelism divides the memory-bound kernels by tp") {
  const ModelSpec m = *model_preset("llama3-8b");
  KernelOptions o;
  o.tp = 8;
  auto elementwise_bytes = [&](bool sp) {
    o.sequence_parallel = sp;
    double sum = 0;
    for (const auto& k : layer_pass_kernels(m, 0, o, LayerPass::forward))
      if (k.name == "norm1" || k.name == "norm2" || k.name == "residual_add") sum += k.bytes;
    return sum;
  };
  CHECK(elementwise_bytes(true) == doctest::Approx(elementwise_bytes(false) / 8).epsilon(1e-14));
}

TEST_CASE("bad options are rejected") {
  const ModelSpec m = small_gpt();
  KernelOptions o;
  o.tp = 0;
  CHECK_THROWS_AS(layer_pass_kernels(m, 0, o, LayerPass::forward), std::invalid_argument);
  o.tp = 1;
  o.dropout = 1.0;
  CHECK_THROWS_AS(layer_activation_bytes(m, 0, o), std::invalid_argument);
  GpuSpec no_hbm = a100_gpu();
  no_hbm.hbm_bandwidth_Bps = 0;
  auto ks = optimizer_kernels(1e6, PrecisionSpec{}, true);
  CHECK_THROWS_AS(time_kernels(a100(), no_hbm, ks), std::invalid_argument);
}

TEST_CASE("pass_breakdown of a stage equals the breakdown of its kernels") {
  const ModelSpec m = *model_preset("mixtral-8x7b");
  const ComputeProfile p = *compute_profile_preset("h200");
  const GpuSpec g = *gpu_preset("h200");
  KernelOptions o;
  o.tp = 2;
  for (LayerPass pass : {LayerPass::forward, LayerPass::backward_input, LayerPass::backward_weight}) {
    std::vector<Kernel> ks = embedding_pass_kernels(m, o, pass);
    for (int layer = 0; layer < 3; ++layer) {
      auto l = layer_pass_kernels(m, layer, o, pass);
      ks.insert(ks.end(), l.begin(), l.end());
    }
    auto head = lm_head_pass_kernels(m, o, pass);
    ks.insert(ks.end(), head.begin(), head.end());
    time_kernels(p, g, ks);
    const ComputeBreakdown expected = breakdown(ks);
    const ComputeBreakdown got = pass_breakdown(m, 0, 3, true, true, o, pass, p, g);
    CHECK(got.total() == expected.total());
    CHECK(got.gemm == expected.gemm);
    CHECK(got.logits == expected.logits);
    CHECK(got.launch == expected.launch);
  }
}

TEST_CASE("embedding and LM head activation bytes") {
  const ModelSpec m = small_gpt();  // h = 1024, V = 32000, s = 512
  KernelOptions o;
  o.microbatch_size = 2;
  o.tp = 4;
  const double T = 2 * 512.0;
  CHECK(embedding_activation_bytes(m, o) == 0);
  o.dropout = 0.1;  // one 1-byte mask per element of the embedding output
  CHECK(embedding_activation_bytes(m, o) == T * 1024);
  // Final-norm input and LM-head input (bf16, T × h each) and the fp32 softmax (T × V/t).
  CHECK(lm_head_activation_bytes(m, o) == doctest::Approx(2 * T * 1024 * 2 + T * 32000 / 4 * 4).epsilon(1e-15));
}

TEST_CASE("triton attention: the flash kernels' FLOPs and bytes, timed at the Triton efficiencies") {
  ComputeProfile p = a100();
  p.triton_fwd_efficiency = p.flash_fwd_efficiency / 2;
  p.triton_bwd_efficiency = p.flash_bwd_efficiency / 4;
  const GpuSpec g = a100_gpu();
  KernelOptions flash;
  flash.attention = AttentionKind::flash;
  KernelOptions triton = flash;
  triton.attention = AttentionKind::triton;
  auto attention_kernel = [&](const KernelOptions& o, LayerPass pass) {
    auto ks = layer_pass_kernels(small_gpt(), 0, o, pass);
    time_kernels(p, g, ks);
    for (const auto& k : ks)
      if (k.category == KernelCategory::attention) return k;
    FAIL("no attention kernel");
    return Kernel{};
  };
  for (LayerPass pass : {LayerPass::forward, LayerPass::backward_input}) {
    const Kernel f = attention_kernel(flash, pass), t = attention_kernel(triton, pass);
    CHECK(t.flops == f.flops);
    CHECK(t.bytes == f.bytes);
    CHECK(t.executed_flops == f.executed_flops);
    // Compute-bound at this size: time scales with 1 / efficiency (to a picosecond).
    const double ratio = pass == LayerPass::forward ? 2.0 : 4.0;
    CHECK(t.time.seconds() == doctest::Approx(ratio * f.time.seconds()).epsilon(1e-6));
  }
  // Activation memory: the same kernel, the same saved tensors.
  CHECK(layer_activation_bytes(small_gpt(), 0, triton) == layer_activation_bytes(small_gpt(), 0, flash));
}

TEST_CASE("host dispatch: a kernel shorter than the dispatch time waits for the host") {
  const ComputeProfile p = a100();  // launch overhead 4 us
  const GpuSpec g = a100_gpu();
  std::vector<Kernel> ks(2);
  ks[0].bytes = 1e3;  // ~0.6 ns of HBM traffic: host-bound
  ks[1].bytes = 1e9;  // ~0.6 ms: GPU-bound
  time_kernels(p, g, ks, 2, 20e-6);
  CHECK(ks[0].total().seconds() == doctest::Approx(20e-6).epsilon(1e-6));  // max(work + launch, dispatch)
  CHECK(ks[1].launch.seconds() == doctest::Approx(p.launch_overhead_s).epsilon(1e-9));
  std::vector<Kernel> no_host = ks;
  time_kernels(p, g, no_host, 2, 0);
  CHECK(no_host[0].launch.seconds() == doctest::Approx(p.launch_overhead_s).epsilon(1e-9));
}

// tests/test_low_precision.cpp — FP8 compute (workloads/cost/low_precision.hpp): the FP8 GEMM
// time closed form, the quantize kernels' bytes, FLOP conservation under fp8 and mxfp8,
// what stays in bf16, the GPU presets' FP8 figures, and the located errors for a GPU
// without FP8 / MX tensor cores.
#include <doctest/doctest.h>

#include <string>

#include "workloads/spec/compute_profile.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/spec/implementation_profile.hpp"
#include "workloads/cost/low_precision.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/resolve.hpp"

using namespace ls::wl;
using ls::sim::Time;

namespace {

/// Llama-like block, tp 1: h 4096, GQA 32/8, SwiGLU f 14336, s 4096, b 1.
ModelSpec llama_like() {
  ModelSpec m;
  m.name = "llama-like";
  m.layers = 2;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.vocab = 128256;
  m.seq_len = 4096;
  m.activation = Activation::swiglu;
  return m;
}

double bytes_named(const std::vector<Kernel>& ks, std::string_view name) {
  double b = 0;
  for (const auto& k : ks)
    if (k.name == name) b += k.bytes;
  return b;
}

Scenario small_scenario(const char* gpu, ComputePrecision c) {
  Scenario s;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 8;
  s.gpu = *gpu_preset(gpu);
  s.model = llama_like();
  s.layout.tp = 8;
  s.precision.compute = c;
  return s;
}

}  // namespace

TEST_CASE("a large, exactly tiled FP8 GEMM runs at fp8 peak × fp8_gemm_sustained_fraction") {
  const GpuSpec h100 = *gpu_preset("h100-sxm");
  ComputeProfile p = *compute_profile_preset("h100-sxm");
  // 8192³ in 128×256 tiles is 64·32 = 2048 tiles: 16 whole waves on 128 SMs, K ≥ gemm_min_k.
  p.sm_count = 128;
  const GemmShape g{8192, 8192, 8192};
  const double expected = g.flops() / (h100.fp8_peak_flops * p.fp8_gemm_sustained_fraction);
  // 1.1e12 FLOP at ~1.09 PFLOP/s ≈ 1 ms; compute-bound (operands 0.27 GB at ~3 TB/s: 0.09 ms).
  CHECK(fp8_gemm_time(p, h100, g).seconds() == doctest::Approx(expected).epsilon(1e-9));
  // The bf16 GEMM of the same shape: flops / (bf16 peak · gemm_sustained_fraction).
  const double bf16 = g.flops() / (h100.peak_flops * p.gemm_sustained_fraction);
  CHECK(gemm_time(p, h100, g, 2).seconds() == doctest::Approx(bf16).epsilon(1e-9));
  // Twice the peak, a lower fraction: 2 · 0.55 / 0.5931 ≈ 1.85× faster.
  CHECK(bf16 / expected == doctest::Approx(2.0 * p.fp8_gemm_sustained_fraction / p.gemm_sustained_fraction).epsilon(1e-3));
  // No FP8 tensor cores: an error, not a silent bf16 time.
  CHECK_THROWS_AS(fp8_gemm_time(p, *gpu_preset("a100-80gb"), g), std::invalid_argument);
}

TEST_CASE("FP8 keeps every pass's FLOPs; only linear GEMMs become FP8; quantize bytes in closed form") {
  const ModelSpec m = llama_like();
  KernelOptions bf;
  bf.compute = ComputePrecision::bf16;
  const double T = 4096, h = 4096, kv = 2.0 * 4096 * 8 / 32, f = 14336;
  for (ComputePrecision c : {ComputePrecision::fp8, ComputePrecision::mxfp8, ComputePrecision::fp8_blockwise}) {
    KernelOptions o = bf;
    o.compute = c;
    const double q = quantize_bytes_per_element(c);
    for (LayerPass pass : {LayerPass::forward, LayerPass::backward_input, LayerPass::backward_weight}) {
      const auto a = layer_pass_kernels(m, 0, bf, pass), b = layer_pass_kernels(m, 0, o, pass);
      CHECK(total_flops(a) == doctest::Approx(total_flops(b)).epsilon(1e-12));
      for (const auto& k : b) {
        const bool linear = k.kind == KernelKind::gemm && k.category == KernelCategory::gemm;
        CHECK(k.fp8 == linear);  // attention core (flash) and everything else stay bf16
      }
    }
    // Forward: each linear quantizes its input: qkv, out, up read T×h, T×h, T×h; down T×f.
    const auto fwd = layer_pass_kernels(m, 0, o, LayerPass::forward);
    CHECK(bytes_named(fwd, "fp8.quantize_input") == doctest::Approx(T * (3 * h + f) * q));
    // Backward: each linear quantizes its output gradient: T×(h+kv), T×h, T×2f, T×h.
    const auto bwd = layer_pass_kernels(m, 0, o, LayerPass::backward_input);
    CHECK(bytes_named(bwd, "fp8.quantize_grad") == doctest::Approx(T * (h + kv + h + 2 * f + h) * q));
    // The LM head stays bf16 (not a TransformerEngine linear in Megatron-Core).
    for (const auto& k : lm_head_pass_kernels(m, o, LayerPass::forward)) CHECK_FALSE(k.fp8);
  }
  CHECK(quantize_bytes_per_element(ComputePrecision::fp8) == 6.0);
  CHECK(quantize_bytes_per_element(ComputePrecision::mxfp8) == doctest::Approx(4.0625));
  // DeepSeek-V3's 1×128 tiles: a 4-byte fp32 scale per 128 elements on each 1-byte copy.
  CHECK(quantize_bytes_per_element(ComputePrecision::fp8_blockwise) == 2.0 + 2 * (1.0 + 4.0 / 128.0));
  CHECK(quantize_bytes_per_element(ComputePrecision::bf16) == 0.0);
}

TEST_CASE("FP8 linears keep their inputs quantized: activation bytes in closed form") {
  // Llama-like block, tp 1, no dropout, flash attention, fused elementwise. A linear keeps
  // its input for the wgrad: qkv and mlp.up the norm outputs (T×h each), attention.out the
  // attention context (T×h), mlp.down the SwiGLU output (T×f). Under FP8 those 3h + f
  // elements per token take 1 byte (mxfp8: 1 + 1/32) instead of 2; nothing else changes.
  const ModelSpec m = llama_like();
  KernelOptions bf;
  const double T = 4096, h = 4096, f = 14336;
  const double bf16_bytes = layer_activation_bytes(m, 0, bf);
  for (ComputePrecision c : {ComputePrecision::fp8, ComputePrecision::mxfp8, ComputePrecision::fp8_blockwise}) {
    KernelOptions o = bf;
    o.compute = c;
    const double per_element = c == ComputePrecision::fp8 ? 1.0 : c == ComputePrecision::mxfp8 ? 1.0 + 1.0 / 32.0 : 1.0 + 4.0 / 128.0;
    CHECK(fp8_saved_bytes_per_element(c) == per_element);
    CHECK(layer_activation_bytes(m, 0, o) == doctest::Approx(bf16_bytes - T * (3 * h + f) * (2.0 - per_element)));
    // Full recompute keeps the layer input only, in bf16 whatever the GEMMs run in.
    bf.recompute = o.recompute = Recompute::full;
    CHECK(layer_activation_bytes(m, 0, o) == doctest::Approx(layer_activation_bytes(m, 0, bf)));
    bf.recompute = Recompute::none;
    // The LM head is not an FP8 linear: it keeps its bf16 input.
    CHECK(lm_head_activation_bytes(m, o) == doctest::Approx(lm_head_activation_bytes(m, bf)));
  }
  CHECK(fp8_saved_bytes_per_element(ComputePrecision::bf16) == 0.0);
}

TEST_CASE("MoE under FP8: the router stays bf16, expert GEMMs are FP8") {
  ModelSpec m = llama_like();
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden = 14336;
  KernelOptions o;
  o.compute = ComputePrecision::fp8;
  for (const auto& k : layer_pass_kernels(m, 0, o, LayerPass::forward)) {
    if (k.name == "router") CHECK_FALSE(k.fp8);
    if (k.name == "expert.up" || k.name == "expert.down") CHECK(k.fp8);
  }
}

TEST_CASE("GPU presets carry dense FP8 peaks; MX formats from Blackwell on") {
  CHECK(gpu_preset("a100-80gb")->fp8_peak_flops == 0);
  CHECK(gpu_preset("h100-sxm")->fp8_peak_flops == 1979e12);
  CHECK_FALSE(gpu_preset("h100-sxm")->mx_formats);
  for (const char* g : {"b200", "b300"}) {
    CHECK(gpu_preset(g)->fp8_peak_flops == 4500e12);
    CHECK(gpu_preset(g)->peak_flops == 2250e12);
    CHECK(gpu_preset(g)->mx_formats);
  }
  for (const char* g : {"gb200", "gb300"}) {
    CHECK(gpu_preset(g)->fp8_peak_flops == 5000e12);
    CHECK(gpu_preset(g)->peak_flops == 2500e12);
    CHECK(gpu_preset(g)->nvlink_bandwidth_Bps == 900e9);  // 1.8 TB/s bidirectional
    CHECK(gpu_preset(g)->mx_formats);
  }
  for (const auto& name : gpu_preset_names()) {
    const auto p = compute_profile_preset(name);
    REQUIRE(p);
    CHECK(profile_bound_violations(*p).empty());
  }
}

TEST_CASE("fp8 on a GPU without FP8, mxfp8 on Hopper: an error at precision.compute") {
  auto key_of = [](const Scenario& s) {
    try {
      (void)resolve(s);
    } catch (const InvalidScenario& e) {
      return e.issues().front().key_path;
    }
    return std::string("(resolved)");
  };
  CHECK(key_of(small_scenario("a100-80gb", ComputePrecision::fp8)) == "precision.compute");
  CHECK(key_of(small_scenario("h100-sxm", ComputePrecision::mxfp8)) == "precision.compute");
  CHECK(key_of(small_scenario("h100-sxm", ComputePrecision::fp8)) == "(resolved)");
  CHECK(key_of(small_scenario("b200", ComputePrecision::mxfp8)) == "(resolved)");
  // Block scaling in software (DeepGEMM) needs FP8 tensor cores only: Hopper runs it.
  CHECK(key_of(small_scenario("h800", ComputePrecision::fp8_blockwise)) == "(resolved)");
  CHECK(key_of(small_scenario("a100-80gb", ComputePrecision::fp8_blockwise)) == "precision.compute");
}

TEST_CASE("kernel_profile: mxfp8 GEMMs at the block-scaled fraction; flash-attn 2.x at the FlashAttention-2 one") {
  // The closed form behind it: an FP8 GEMM's time is FLOPs / (FP8 peak × fraction), so the
  // run's profile must carry the fraction the precision selects (fit in compute_profile.cpp).
  Scenario s = resolve(small_scenario("gb200", ComputePrecision::mxfp8));
  const ComputeProfile gpu = *compute_profile_preset("gb200");
  CHECK(gpu.mxfp8_gemm_sustained_fraction < gpu.fp8_gemm_sustained_fraction);
  CHECK(kernel_profile(s).fp8_gemm_sustained_fraction == gpu.mxfp8_gemm_sustained_fraction);
  s.precision.compute = ComputePrecision::fp8;
  CHECK(kernel_profile(s).fp8_gemm_sustained_fraction == gpu.fp8_gemm_sustained_fraction);
  // Megatron-Core's flash attention is the native kernel; pytorch-fsdp's is flash-attn 2.x.
  CHECK(kernel_profile(s).flash_fwd_efficiency == gpu.flash_fwd_efficiency);
  s.implementation.profile = implementation_preset("pytorch-fsdp")->profile;
  CHECK_FALSE(s.implementation.profile.native_flash);
  CHECK(kernel_profile(s).flash_fwd_efficiency == gpu.flash2_fwd_efficiency);
  CHECK(kernel_profile(s).flash_bwd_efficiency == gpu.flash2_bwd_efficiency);
  // Hopper: FlashAttention-2 at about half of FlashAttention-3's rate ([FA3], [PTB]);
  // Ampere: one kernel, equal constants.
  const ComputeProfile h100 = *compute_profile_preset("h100-sxm"), a100 = *compute_profile_preset("a100-80gb");
  CHECK(h100.flash2_fwd_efficiency < 0.6 * h100.flash_fwd_efficiency);
  CHECK(a100.flash2_fwd_efficiency == a100.flash_fwd_efficiency);
  CHECK(a100.flash2_bwd_efficiency == a100.flash_bwd_efficiency);
}

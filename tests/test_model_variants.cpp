// tests/test_model_variants.cpp — model.bias, model.parallel_block, model.sliding_window
// and implementation.attention: flash1, each against its closed form.
//
// Tolerances: parameter counts are sums of a few doubles below 2^53 (exact); FLOP
// differences 1e-12 relative (a handful of roundings); byte counts 1e-12 as in
// test_simulate's TP case.
#include <doctest/doctest.h>

#include <string>

#include "fixtures.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/model/cp_attention.hpp"
#include "workloads/model/model.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/scenario_issue.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

std::string key_of(const Scenario& s) {
  try {
    (void)resolve(s);
  } catch (const InvalidScenario& e) {
    return e.issues().front().key_path;
  }
  return "(resolved)";
}

}  // namespace

TEST_CASE("model.bias: a Llama-style layer gains the QKV, projection and gate/up/down biases; a GPT-style one loses them and the LayerNorm biases") {
  ModelSpec m = test::small_model(4);
  const double h = 1024, f = 4096, kv = 2 * h;  // MHA: K and V of width h each
  m.activation = Activation::swiglu;
  m.bias = false;
  const double llama = total_params(m);
  m.bias = true;
  CHECK(total_params(m) - llama == 4 * ((h + kv) + h + (2 * f + h)));  // RMSNorm keeps no bias
  CHECK(layer_parameter_tensors(m, 0) == 2 * 2 + 2 + 3 * 2);          // every linear's weight and bias, 2 norms

  m.activation = Activation::gelu;
  m.bias = true;
  const double gpt = total_params(m);
  m.bias = false;
  // Per layer: QKV (h + kv), projection h, fc1 f, fc2 h, two LayerNorm biases 2h; the final
  // LayerNorm's h once.
  CHECK(gpt - total_params(m) == 4 * ((h + kv) + h + f + h + 2 * h) + h);
  CHECK(layer_parameter_tensors(m, 0) == 2 + 2 + 2);

  // Unset, it follows the activation: GPT style has biases, Llama style none.
  Scenario s = test::cluster_scenario(1, 8, 1, 1, 1);
  s.model.bias.reset();
  CHECK(*resolve(s)->model.bias);
  s.model.activation = Activation::swiglu;
  CHECK_FALSE(*resolve(s)->model.bias);
}

TEST_CASE("model.parallel_block: one norm per layer, and one TP all-reduce per pass where Megatron's block has two") {
  ModelSpec m = test::small_model(4);
  const double sequential = total_params(m);
  m.parallel_block = true;
  CHECK(sequential - total_params(m) == 4 * norm_params(m));
  CHECK(norm_params(m) == 2 * 1024);  // LayerNorm: weight and bias

  for (int t : {2, 4, 8}) {
    CAPTURE(t);
    Scenario s = test::cluster_scenario(1, 8 / t, t, 1, 4);
    s.layout.embedding_free = true;
    s.model.parallel_block = true;
    const Result r = simulate(resolve(s));
    const double S = 1.0 * 1024 * 1024 * 2;  // b=1, s=1024, h=1024, bf16
    const double per_layer_pass = r.comm[static_cast<int>(Axis::tp)].bytes_per_device / (16.0 * 4 * 2);
    CHECK(per_layer_pass == doctest::Approx(2.0 * (t - 1) / t * S).epsilon(1e-12));
    // The FLOPs are the sequential block's: the same GEMMs, side by side.
    Scenario seq = s;
    seq.model.parallel_block = false;
    CHECK(r.model_flops_per_step == doctest::Approx(simulate(resolve(seq)).model_flops_per_step).epsilon(1e-12));
  }

  Scenario moe = test::cluster_scenario(1, 8, 1, 1, 1);
  moe.model = *model_preset("mixtral-8x7b");
  moe.model.parallel_block = true;
  CHECK(key_of(moe) == "model.parallel_block");
}

TEST_CASE("model.sliding_window: attention FLOPs count 2w − w²/s keys per query, FlashAttention computes the band's blocks") {
  ModelSpec m = test::small_model(1);
  m.seq_len = 2048;
  const double b = 1, s = 2048, h = 1024, w = 512;
  const LayerCosts full = layer_costs(m, 0, 1, 1, 1, false, Recompute::none, 2);
  m.sliding_window = 512;
  const LayerCosts windowed = layer_costs(m, 0, 1, 1, 1, false, Recompute::none, 2);
  // Full causal counts s keys per query (the s×s grid); the window 2w − w²/s.
  CHECK(full.forward.flops - windowed.forward.flops == doctest::Approx(4 * b * s * (s - (2 * w - w * w / s)) * h).epsilon(1e-12));
  CHECK(window_counted_keys(s, s) == s);
  CHECK(window_counted_keys(s, 4 * s) == s);  // a window past the sequence is no window

  // Blocks of 128: n = 16 query blocks, the band reaches c = ceil(511/128) = 4 blocks back:
  // blocks 0..4 compute 1..5 key blocks, the 11 after them 5 each: 15 + 55 = 70 of 256.
  CHECK(causal_block_fraction(2048, 128, true, 512) == 70.0 / 256.0);
  CHECK(causal_block_fraction(2048, 128, true, 2048) == causal_block_fraction(2048, 128, true));

  // The flash forward kernel executes the band: 4·b·s·s·h × 70/256 FLOPs.
  KernelOptions o;
  std::vector<Kernel> ks = layer_pass_kernels(m, 0, o, LayerPass::forward);
  const ComputeProfile p = *compute_profile_preset("h100-sxm");
  time_kernels(p, *gpu_preset("h100-sxm"), ks, 2, 0);
  bool found = false;
  for (const Kernel& k : ks)
    if (k.name == "flash_attention") {
      found = true;
      CHECK(k.flops == doctest::Approx(4 * b * s * (2 * w - w * w / s) * h).epsilon(1e-12));
      CHECK(k.executed_flops == doctest::Approx(4 * b * s * s * h * 70.0 / 256.0).epsilon(1e-12));
    }
  CHECK(found);

  Scenario cp = test::cluster_scenario(1, 4, 1, 1, 1);
  cp.layout.cp = 2;
  cp.model.sliding_window = 256;
  CHECK(key_of(cp) == "model.sliding_window");
}

TEST_CASE("implementation.attention: flash1 runs FlashAttention-2's efficiencies times flash1_relative_speed (Dao 2023: about 1/2)") {
  Scenario s = test::cluster_scenario(1, 8, 1, 1, 1);
  s.implementation.attention = AttentionKind::flash1;
  const ResolvedScenario rs = resolve(s);
  const ComputeProfile base = compute_profile_of(rs->gpu);
  const ComputeProfile p = kernel_profile(*rs);
  CHECK(base.flash1_relative_speed == 0.5);
  CHECK(p.flash_fwd_efficiency == base.flash2_fwd_efficiency * 0.5);
  CHECK(p.flash_bwd_efficiency == base.flash2_bwd_efficiency * 0.5);
  // A compute-bound attention kernel takes twice FlashAttention-2's time.
  const sim::Time fa1 = flash_time(p, rs->gpu, 1e12, 0, false);
  ComputeProfile fa2 = base;
  fa2.flash_fwd_efficiency = base.flash2_fwd_efficiency;
  CHECK(fa1.seconds() == doctest::Approx(2 * flash_time(fa2, rs->gpu, 1e12, 0, false).seconds()).epsilon(1e-9));
}

TEST_CASE("deepseek-v3: multi-head latent attention's parameters and FLOPs, 3 dense layers, 671e9 parameters") {
  const ModelSpec m = *model_preset("deepseek-v3");
  REQUIRE(m.attention == AttentionArch::mla);
  const double h = 7168, a = 128, dq = 1536, dkv = 512, dr = 64, dn = 128, dv = 128;
  // DeepSeek-V2 §2.1: W_DQ, the query latent's norm, W_UQ (nope + rope per head); W_DKV
  // with the shared rope key W_KR, the KV latent's norm, W_UK and W_UV; W_O.
  const double attention = h * dq + dq + dq * a * (dn + dr) + h * (dkv + dr) + dkv + dkv * a * (dn + dv) + a * dv * h;
  const double rms_norms = 2 * h;
  CHECK(layer_params(m, 0) == attention + rms_norms + 3 * h * 18432);  // a dense layer
  CHECK_FALSE(layer_is_moe(m, 2));
  CHECK(layer_is_moe(m, 3));
  CHECK(layer_params(m, 3) == attention + rms_norms + h * 256 /* router */ + (256 + 1) * 3 * h * 2048);
  CHECK(total_params(m) == doctest::Approx(671e9).epsilon(0.001));  // the report's 671B

  // Forward FLOPs of a dense layer's attention projections on tp ranks, per token: the
  // down-projections whole on every rank (hardware), once across the group (model).
  for (int t : {1, 8}) {
    CAPTURE(t);
    const double T = 4096;  // b = 1
    const LayerCosts c = layer_costs(m, 0, 1, t, 1, false, Recompute::none, 2);
    const double down = 2 * T * h * (dq + dkv + dr);
    const double split = 2 * T * (dq * a * (dn + dr) + dkv * a * (dn + dv) + a * dv * h) / t;
    const double core = 2 * T * T * a * ((dn + dr) + dv) / t;  // QKᵀ over 192 features, ·V over 128
    const double mlp = 6 * T * h * 18432 / t;
    CHECK(c.forward.flops == doctest::Approx(down + split + core + mlp).epsilon(1e-12));
    CHECK(c.model_flops_fwd == doctest::Approx(down / t + split + core + mlp).epsilon(1e-12));
  }

  // Context parallelism exchanges every head's up-projected K (192 features) and V (128).
  Scenario s = test::cluster_scenario(1, 4, 1, 1, 1);
  s.model = m;
  s.model.moe = {};
  s.model.dense_layers = 0;
  s.model.layers = 2;
  s.layout.cp = 2;
  s.layout.dp = 4;
  const ResolvedScenario rs = resolve(s);
  CHECK(cp_kv_chunk_bytes(*rs) == 4096.0 / 2 * a * ((dn + dr) + dv) * 2);
}

TEST_CASE("model.attention and model.mla errors name the key") {
  Scenario s = test::cluster_scenario(1, 8, 1, 1, 1);
  s.model.attention = AttentionArch::mla;
  CHECK(key_of(s) == "model.mla.kv_lora_rank");
  s.model.mla = MlaSpec{512, 0, 64, 0, 64};
  CHECK(key_of(s) == "(resolved)");
  Scenario gqa = test::cluster_scenario(1, 8, 1, 1, 1);
  gqa.model.kv_heads = 4;
  gqa.model.attention = AttentionArch::mha;
  CHECK(key_of(gqa) == "model.attention");
  gqa.model.attention.reset();
  CHECK(resolve(gqa)->model.attention == AttentionArch::gqa);
  Scenario stray = test::cluster_scenario(1, 8, 1, 1, 1);
  stray.model.mla.kv_lora_rank = 512;
  CHECK(key_of(stray) == "model.mla");
  Scenario dense = test::cluster_scenario(1, 8, 1, 1, 1);
  dense.model.dense_layers = 2;
  CHECK(key_of(dense) == "model.dense_layers");
}

TEST_CASE("model.head_dim: heads × head_dim wider than hidden (Qwen3-30B-A3B) in parameters and FLOPs") {
  ModelSpec m = test::small_model(2);
  m.activation = Activation::swiglu;
  m.hidden = 2048;
  m.heads = 32;
  m.kv_heads = 4;
  m.head_dim = 128;  // 32 × 128 = 4096 query features from a 2048-wide stream
  m.ffn_hidden = 6144;
  m.seq_len = 4096;
  const double h = 2048, q = 32 * 128, kv = 2 * 4 * 128;
  CHECK(attention_params(m) == h * (q + kv) + q * h);
  const double T = 4096;
  const LayerCosts c = layer_costs(m, 0, 1, 1, 1, false, Recompute::none, 2);
  CHECK(c.forward.flops == doctest::Approx(2 * T * h * (q + kv) + 2 * T * T * (q + q) + 2 * T * q * h + 6 * T * h * 6144).epsilon(1e-12));
  // The kernels add up to the same FLOPs.
  KernelOptions o;
  CHECK(total_flops(layer_pass_kernels(m, 0, o, LayerPass::forward)) == doctest::Approx(c.forward.flops).epsilon(1e-12));

  Scenario s = test::cluster_scenario(1, 8, 1, 1, 1);
  s.model.attention = AttentionArch::mla;
  s.model.mla = MlaSpec{512, 0, 64, 0, 64};
  s.model.head_dim = 64;
  CHECK(key_of(s) == "model.head_dim");
}

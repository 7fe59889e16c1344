// tests/test_model.cpp — model presets (published parameter counts) and the per-layer
// FLOP/byte arithmetic (docs/ARCHITECTURE.md, "Modelling conventions").
#include <doctest/doctest.h>

#include <stdexcept>

#include "workloads/model/model.hpp"

using namespace ls::wl;

namespace {
ModelSpec preset(const char* name) {
  auto m = model_preset(name);
  REQUIRE(m);
  return *m;
}
}  // namespace

TEST_CASE("presets land on their published parameter counts") {
  // Llama 3 (no biases, RMSNorm, untied): layer = 2h² + 2h·kv + 3hf + 2h, kv = 8·128.
  // 8B: 32·218,112,000 + 2·128256·4096 + 4096 = 8,030,261,248 ("8.03B" on the model card).
  CHECK(total_params(preset("llama3-8b")) == 8'030'261'248.0);
  // 70B: 80·855,654,400 + 2·128256·8192 + 8192 = 70,553,706,496 ("70.6B").
  CHECK(total_params(preset("llama3-70b")) == 70'553'706'496.0);
  CHECK(layer_params(preset("llama3-70b")) == 855'654'400.0);
  // 405B: 126 layers of h 16384, f 53248: 405,853,388,800 ("405B").
  CHECK(total_params(preset("llama3-405b")) == 405'853'388'800.0);
  // GPT-3 175B, tied, biases + learned positions: 96(12h² + 13h) + Vh + sh + 2h.
  CHECK(total_params(preset("gpt3-175b")) == 174'604'259'328.0);
  CHECK(lm_head_params(preset("gpt3-175b")) == 0.0);
  CHECK(embedding_params(preset("gpt3-175b")) == (50257.0 + 2048.0) * 12288.0);
  // seed-70b: within 1 % of 70e9 (it is +0.04 %).
  CHECK(total_params(preset("seed-70b")) == doctest::Approx(70e9).epsilon(0.01));
  CHECK(total_params(preset("seed-70b")) == 70'027'500'480.0);
  CHECK_FALSE(model_preset("gpt5"));
  CHECK(model_preset_names().size() == 7);
  // MoE presets (published shapes). Mixtral 8x7B: 46.7e9 total parameters
  // (Jiang et al. 2024); per layer 8 experts × 3·4096·14336 + attention (GQA 8 kv).
  const ModelSpec mx = preset("mixtral-8x7b");
  CHECK(mx.moe.experts == 8);
  CHECK(mx.moe.top_k == 2);
  CHECK(total_params(mx) == doctest::Approx(46.7e9).epsilon(0.01));
  CHECK(expert_params(mx) == 3.0 * 4096 * 14336);
  const ModelSpec ds = preset("deepseek-v3");
  CHECK(ds.moe.experts == 256);
  CHECK(ds.moe.top_k == 8);
  CHECK(ds.moe.shared_experts == 1);
}

TEST_CASE("layer FLOPs follow the docs/ARCHITECTURE.md formulas, split over tp") {
  const ModelSpec m = preset("gpt3-175b");
  const double b = 2, s = 2048, h = 12288;
  // GPT (f = 4h, g = a): QKV 6bsh² + core 4bs²h + out 2bsh² + MLP 16bsh² = 24bsh² + 4bs²h.
  const double fwd1 = 24 * b * s * h * h + 4 * b * s * s * h;
  for (int t : {1, 8}) {
    const LayerCosts c = layer_costs(m, 2, t, t > 1, Recompute::none, 2);
    CHECK(c.forward.flops == doctest::Approx(fwd1 / t).epsilon(1e-12));
    CHECK(c.model_flops_fwd == c.forward.flops);
    CHECK(c.backward.flops == doctest::Approx(2 * fwd1 / t).epsilon(1e-12));
    // B-input carries the attention core twice (no weights there), W the linear GEMMs once.
    CHECK(c.backward_weight.flops == doctest::Approx(24 * b * s * h * h / t).epsilon(1e-12));
    CHECK(c.backward_input.flops + c.backward_weight.flops == doctest::Approx(c.backward.flops).epsilon(1e-12));
    CHECK(c.recompute.flops == 0);
    CHECK(c.forward.rows == b * s);
    // Weights are read once: at least params/t · 2 bytes.
    CHECK(c.forward.bytes > layer_params(m) / t * 2);
  }
  const LayerCosts full = layer_costs(m, 2, 8, true, Recompute::full, 2);
  CHECK(full.recompute.flops == full.forward.flops);
  CHECK(full.recompute.bytes == full.forward.bytes);
  const LayerCosts sel = layer_costs(m, 2, 8, true, Recompute::selective, 2);
  CHECK(sel.recompute.flops == doctest::Approx(4 * b * s * s * h / 8).epsilon(1e-12));  // Korthikanti: attention core
  CHECK(sel.model_flops_fwd == full.model_flops_fwd);  // model FLOPs exclude recompute
}

TEST_CASE("every-second-matmul recompute reruns the even-numbered matmuls of the block") {
  // Llama (torchtitan's order wq, wk, wv, wo, w1, w3, w2): wk, wo and w3 rerun:
  // 2·T·h·(kv width) + 2·T·h·h + 2·T·h·f per micro-batch of T tokens, split t ways.
  const ModelSpec llama = preset("llama3-8b");
  const double T = 2.0 * 8192, h = 4096, f = 14336, kv_width = 8 * 128;
  for (int t : {1, 4}) {
    CAPTURE(t);
    const LayerCosts c = layer_costs(llama, 2, t, t > 1, Recompute::every_second_matmul, 2);
    CHECK(c.recompute.flops == doctest::Approx(2 * T * h * (kv_width + h + f) / t).epsilon(1e-12));
    CHECK(c.model_flops_fwd == layer_costs(llama, 2, t, t > 1, Recompute::none, 2).model_flops_fwd);
  }
  // GPT (q, k, v, out, up, down; no gate): k, out and the 4h-wide down projection: 12·T·h².
  const ModelSpec gpt = preset("gpt3-175b");
  const double Tg = 2.0 * 2048, hg = 12288;
  CHECK(layer_costs(gpt, 2, 8, true, Recompute::every_second_matmul, 2).recompute.flops ==
        doctest::Approx(12 * Tg * hg * hg / 8).epsilon(1e-12));
}

TEST_CASE("GQA and SwiGLU change QKV and MLP FLOPs") {
  const ModelSpec m = preset("llama3-70b");
  const double s = 8192, h = 8192, f = 28672, g = 8, a = 64;
  // 2sh(h + 2hg/a) + 4s²h + 2sh² + 6shf, b = 1, tp = 1.
  const double fwd = 2 * s * h * (h + 2 * h * g / a) + 4 * s * s * h + 2 * s * h * h + 6 * s * h * f;
  CHECK(layer_costs(m, 1, 1, false, Recompute::none, 2).forward.flops == doctest::Approx(fwd).epsilon(1e-12));
  CHECK(layer_costs(m, 1, 4, false, Recompute::none, 2).forward.flops == doctest::Approx(fwd / 4).epsilon(1e-12));
}

TEST_CASE("embedding and LM head costs") {
  const ModelSpec m = preset("gpt3-175b");
  const double b = 1, s = 2048, h = 12288, V = 50257;
  const LayerCosts head = lm_head_costs(m, 1, 8, 2);
  CHECK(head.forward.flops == doctest::Approx(2 * b * s * h * V / 8).epsilon(1e-12));
  CHECK(head.model_flops_fwd == head.forward.flops);
  CHECK(head.backward.flops == doctest::Approx(2 * head.forward.flops).epsilon(1e-12));
  CHECK(head.backward_input.flops == head.backward_weight.flops);
  CHECK(head.forward.bytes > V * h / 8 * 2);
  const LayerCosts emb = embedding_costs(m, 1, 8, 2);
  CHECK(emb.forward.flops == 0);
  CHECK(emb.model_flops_fwd == 0);
  CHECK(emb.forward.bytes > 0);
  CHECK(emb.backward_input.flops == 0);
  CHECK(emb.backward_input.bytes == 0);
  CHECK(emb.backward.bytes == emb.backward_weight.bytes);
}

TEST_CASE("step model FLOPs: Megatron's closed form and the general sum agree on GPT-3") {
  const ModelSpec m = preset("gpt3-175b");
  // 72·B·s·L·h²·(1 + s/6h + V/12Lh) with B = 1536 (Narayanan et al. 2021's run).
  const double B = 1536, s = 2048, L = 96, h = 12288, V = 50257;
  const double megatron = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
  CHECK(megatron_step_flops(m, B) == doctest::Approx(megatron).epsilon(1e-12));
  // The general sum counts the same GEMMs: 3·(L(24sh² + 4s²h) + 2shV)·B — identical in
  // exact arithmetic; 1e-3 is the brief's tolerance, the difference is rounding only.
  CHECK(model_step_flops(m, B) == doctest::Approx(megatron).epsilon(1e-3));
  CHECK(model_step_flops(m, B) == doctest::Approx(megatron).epsilon(1e-12));
  // seed-70b is GPT-shaped too.
  const ModelSpec seed = preset("seed-70b");
  CHECK(model_step_flops(seed, 128) == doctest::Approx(megatron_step_flops(seed, 128)).epsilon(1e-12));
}

TEST_CASE("MoE layers: parameters and balanced-routing FLOPs") {
  ModelSpec m = preset("llama3-8b");
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.every_n_layers = 2;
  m.moe.expert_ffn_hidden = 14336;
  CHECK_FALSE(layer_is_moe(m, 0));
  CHECK(layer_is_moe(m, 1));
  const double h = 4096, f = 14336;
  const double attn_norm = layer_params(m) - 3 * h * f;
  // MoE layer: attention + norms + router h·E + 8 experts of 3hf.
  CHECK(layer_params(m, 1) == doctest::Approx(attn_norm + h * 8 + 8 * 3 * h * f));
  CHECK(layer_params(m, 0) == layer_params(m));
  // Forward: dense MLP 6shf replaced by top_k·6shf + router 2shE.
  const double s = 8192;
  const double dense = layer_costs(m, 0, 1, 1, 1, false, Recompute::none, 2).forward.flops;
  const double moe = layer_costs(m, 1, 1, 1, 1, false, Recompute::none, 2).forward.flops;
  CHECK(moe - dense == doctest::Approx(6 * s * h * f + 2 * s * h * 8).epsilon(1e-12));
  // EP holds fewer experts: fewer weight bytes, same FLOPs.
  const LayerCosts ep1 = layer_costs(m, 1, 1, 1, 1, false, Recompute::none, 2);
  const LayerCosts ep4 = layer_costs(m, 1, 1, 1, 4, false, Recompute::none, 2);
  CHECK(ep4.forward.flops == ep1.forward.flops);
  CHECK(ep1.forward.bytes - ep4.forward.bytes == doctest::Approx((8 - 2) * 3 * h * f * 2));
}

TEST_CASE("bad arguments throw") {
  const ModelSpec m = preset("llama3-8b");
  CHECK_THROWS_AS(layer_costs(m, 0, 1, false, Recompute::none, 2), std::invalid_argument);
  CHECK_THROWS_AS(lm_head_costs(m, 1, 0, 2), std::invalid_argument);
}

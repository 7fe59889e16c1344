// workloads/model/model.cpp — model presets and transformer arithmetic (see model.hpp).
#include "workloads/model/model.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace ls::wl {

namespace {

ModelSpec make(std::string name, int layers, std::int64_t hidden, int heads, int kv_heads, std::int64_t ffn,
               std::int64_t vocab, std::int64_t seq, Activation act, bool tied) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.seq_len = seq;
  m.activation = act;
  m.tied_embeddings = tied;
  return m;
}

ModelSpec moe(ModelSpec m, int experts, int top_k, std::int64_t expert_ffn, int every_n, int shared) {
  m.moe.experts = experts;
  m.moe.top_k = top_k;
  m.moe.expert_ffn_hidden = expert_ffn;
  m.moe.every_n_layers = every_n;
  m.moe.shared_experts = shared;
  return m;
}

/// DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", §4.2: 61 layers, hidden 7168, 128
/// heads with multi-head latent attention (KV latent 512, query latent 1536, 128 nope and
/// 64 rope features per query/key head, 128 per value head), the first 3 layers dense
/// (FFN 18432), the other 58 with 256 routed experts of width 2048 and 1 shared, 8
/// activated; vocab 129280, untied head; pre-training at 4096 tokens. 671e9 parameters
/// (the report's total, the multi-token-prediction module's 14e9 aside).
ModelSpec deepseek_v3() {
  ModelSpec m = moe(make("deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 4096, Activation::swiglu, false), 256, 8, 2048, 1, 1);
  m.dense_layers = 3;
  m.attention = AttentionArch::mla;
  m.mla = MlaSpec{512, 1536, 64, 128, 128};
  return m;
}

std::vector<ModelSpec> presets() {
  return {
      // Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1:
      // 96 layers, d_model 12288, 96 heads (d_head 128), d_ff = 4·d_model, context
      // 2048; GPT-2 BPE vocabulary of 50257. GPT-3 (like GPT-2) ties the input and
      // output embeddings, and so does Megatron-LM by default (its 175B formula
      // counts V·h once): tied. 174.6e9 parameters with biases and positions.
      make("gpt3-175b", 96, 12288, 96, 96, 4 * 12288, 50257, 2048, Activation::gelu, true),
      // Llama 3 model card / Dubey et al. 2024 "The Llama 3 Herd of Models",
      // Table 3: 8B: 32 layers, 4096, 32 heads, 8 KV heads, FFN 14336,
      // vocab 128256; untied embeddings; 8192-token context (pre-training). 8.03e9.
      make("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, Activation::swiglu, false),
      // 70B: 80 layers, 8192, 64 heads, 8 KV heads, FFN 28672. 70.55e9.
      make("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, Activation::swiglu, false),
      // 405B: 126 layers, 16384, 128 heads, 8 KV heads, FFN 53248. 405.85e9.
      make("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192, Activation::swiglu, false),
      // seed-70b: a GPT-3-style 70B for the seed example (not a published model).
      // 80 layers (divisible by pp = 2, 4, 8, 16), f = 4h and MHA so that Megatron's
      // closed form applies; h = 8512 = 64 heads × 133 lands on 70.03e9 parameters
      // (+0.04 % of 70e9; h = 8192 would give 65e9). GPT-2 vocabulary, 4096 context,
      // tied embeddings like GPT-3.
      make("seed-70b", 80, 8512, 64, 64, 4 * 8512, 50257, 4096, Activation::gelu, true),
      moe(
          // Jiang et al. 2024, "Mixtral of Experts", Table 1: 32 layers, dim 4096,
          // 32 heads, 8 KV heads, hidden 14336 per expert, 8 experts, top-2, vocab
          // 32000; every layer is an MoE layer. 46.7e9 parameters (12.9e9 active).
          make("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096, Activation::swiglu, false), 8, 2, 14336, 1, 0),
      deepseek_v3(),
  };
}

bool gpt_style(const ModelSpec& m) { return m.activation == Activation::gelu; }

int kv_heads_of(const ModelSpec& m) { return m.kv_heads > 0 ? m.kv_heads : m.heads; }


/// One MLP of width f (params).
double mlp_params(const ModelSpec& m, double f) {
  const double h = static_cast<double>(m.hidden);
  if (gpt_style(m)) return 2 * h * f + (has_bias(m) ? f + h : 0);  // up + down weights, biases
  return 3 * h * f + (has_bias(m) ? 2 * f + h : 0);                // gate, up, down
}

int mlp_matrices(const ModelSpec& m) { return gpt_style(m) ? 2 : 3; }

int moe_mlp_modules(const ModelSpec& m) {
  return 1 + (m.moe.experts + m.moe.shared_experts) * mlp_matrices(m);  // router + experts' matrices
}

double norms_params(const ModelSpec& m) {
  return norms_per_layer(m) * norm_params(m);
}

double expert_width(const ModelSpec& m) {
  return static_cast<double>(m.moe.expert_ffn_hidden > 0 ? m.moe.expert_ffn_hidden : m.ffn_hidden);
}

/// Forward FLOPs of one MLP of width f for `tokens` tokens: 4·t·h·f (6 with SwiGLU).
double mlp_flops(const ModelSpec& m, double tokens, double f) {
  const double h = static_cast<double>(m.hidden);
  return (gpt_style(m) ? 4.0 : 6.0) * tokens * h * f;
}

void check_args(const ModelSpec& m, int b, int tp, int act_bytes) {
  if (b < 1 || tp < 1 || act_bytes < 1)
    throw std::invalid_argument(fmt::format("model '{}': microbatch_size ({}), tp ({}) and activation bytes ({}) must be >= 1",
                                            m.name, b, tp, act_bytes));
  if (m.hidden <= 0 || m.seq_len <= 0 || m.heads <= 0)
    throw std::invalid_argument(fmt::format("model '{}': hidden, seq_len and heads must be > 0", m.name));
}

}  // namespace

double attention_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  const AttentionShape A = attention_shape(m);
  if (A.mla) {
    // Query: down-projection, its RMSNorm, up-projection (or one projection without
    // q_lora_rank); key/value: down-projection to the latent and the shared rope key,
    // the latent's RMSNorm, up-projection to every head's nope key and value.
    const double q = A.q_lora_rank > 0 ? h * A.q_lora_rank + A.q_lora_rank + A.q_lora_rank * A.q_width() : h * A.q_width();
    const double nope = A.qk_head_dim - A.rope_head_dim;
    const double kv = h * (A.kv_lora_rank + A.rope_head_dim) + A.kv_lora_rank + A.kv_lora_rank * A.heads * (nope + A.v_head_dim);
    return q + kv + A.context_width() * h;
  }
  const double qkv_out = A.q_width() + A.k_width() + A.v_width();
  const double qkv = h * qkv_out + (has_bias(m) ? qkv_out : 0);
  const double out = A.context_width() * h + (has_bias(m) ? h : 0);
  return qkv + out;
}


std::optional<ModelSpec> model_preset(std::string_view name) {
  for (auto& m : presets())
    if (m.name == name) return m;
  return std::nullopt;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> out;
  for (auto& m : presets()) out.push_back(m.name);
  return out;
}

double layer_params(const ModelSpec& m) {
  return attention_params(m) + mlp_params(m, static_cast<double>(m.ffn_hidden)) + norms_params(m);
}

bool layer_is_moe(const ModelSpec& m, int layer) {
  if (m.moe.experts <= 0 || layer < m.dense_layers) return false;
  const int n = m.moe.every_n_layers > 0 ? m.moe.every_n_layers : 1;
  return (layer - m.dense_layers) % n == n - 1;
}

double layer_params(const ModelSpec& m, int layer) {
  if (!layer_is_moe(m, layer)) return layer_params(m);
  const double h = static_cast<double>(m.hidden);
  const double experts = m.moe.experts + m.moe.shared_experts;
  return attention_params(m) + norms_params(m) + h * m.moe.experts /* router */ +
         experts * mlp_params(m, expert_width(m));
}

double expert_params(const ModelSpec& m) { return mlp_params(m, expert_width(m)); }

double embedding_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  return static_cast<double>(m.vocab) * h + (gpt_style(m) ? static_cast<double>(m.seq_len) * h : 0);
}

double lm_head_params(const ModelSpec& m) {
  return m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
}

double final_norm_params(const ModelSpec& m) { return norm_params(m); }

AttentionShape attention_shape(const ModelSpec& m) {
  if (m.heads <= 0) throw std::invalid_argument(fmt::format("model '{}': heads must be > 0", m.name));
  AttentionShape A;
  A.heads = m.heads;
  if (m.attention == AttentionArch::mla) {
    A.mla = true;
    A.kv_heads = m.heads;
    A.rope_head_dim = static_cast<double>(m.mla.rope_head_dim);
    const double nope = static_cast<double>(m.mla.nope_head_dim > 0 ? m.mla.nope_head_dim : m.mla.v_head_dim);
    A.qk_head_dim = nope + A.rope_head_dim;
    A.v_head_dim = static_cast<double>(m.mla.v_head_dim);
    A.q_lora_rank = static_cast<double>(m.mla.q_lora_rank);
    A.kv_lora_rank = static_cast<double>(m.mla.kv_lora_rank);
    return A;
  }
  A.kv_heads = kv_heads_of(m);
  A.qk_head_dim = A.v_head_dim = m.head_dim > 0 ? static_cast<double>(m.head_dim) : static_cast<double>(m.hidden) / m.heads;
  return A;
}

bool has_bias(const ModelSpec& m) { return m.bias.value_or(m.activation == Activation::gelu); }

int norms_per_layer(const ModelSpec& m) { return m.parallel_block ? 1 : 2; }

double norm_params(const ModelSpec& m) {
  // LayerNorm (GPT style) has a weight and, with biases, a bias; RMSNorm a weight.
  return (gpt_style(m) && has_bias(m) ? 2.0 : 1.0) * static_cast<double>(m.hidden);
}

double attention_counted_keys(const ModelSpec& m, double keys) {
  return window_counted_keys(keys, static_cast<double>(m.sliding_window));
}

double window_counted_keys(double keys, double window) {
  const double w = window;
  if (w <= 0 || w >= keys) return keys;
  // Causal attention is counted over the full s×s grid, twice the ~s²/2 pairs it has;
  // a window of w keys has w·s − w²/2 pairs, so the same convention counts 2w − w²/s
  // keys per query (s at w = s).
  return 2 * w - w * w / keys;
}

int block_count(const ModelSpec& m) { return m.layers + m.mtp_depth; }

bool is_mtp_block(const ModelSpec& m, int block) { return block >= m.layers; }

double mtp_entry_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  return 2 * h * h + 2 * norm_params(m);
}

double total_params(const ModelSpec& m) {
  double sum = 0;
  for (int i = 0; i < block_count(m); ++i) sum += layer_params(m, i) + (is_mtp_block(m, i) ? mtp_entry_params(m) : 0);
  return sum + embedding_params(m) + final_norm_params(m) + lm_head_params(m);
}

LayerCosts layer_costs(const ModelSpec& m, int microbatch_size, int tp, bool sequence_parallel, Recompute rc,
                       int activation_bytes) {
  // A dense model's layer 0 is a dense layer; for an MoE model ask for a dense layer
  // explicitly by giving a model copy without experts.
  ModelSpec dense = m;
  dense.moe.experts = 0;
  return layer_costs(dense, 0, microbatch_size, tp, 1, sequence_parallel, rc, activation_bytes);
}

LayerCosts layer_costs(const ModelSpec& m, int layer, int microbatch_size, int tp, int ep, bool sequence_parallel,
                       Recompute rc, int activation_bytes) {
  check_args(m, microbatch_size, tp, activation_bytes);
  if (ep < 1) throw std::invalid_argument(fmt::format("model '{}': ep ({}) must be >= 1", m.name, ep));
  (void)sequence_parallel;  // SP moves norms/dropout to s/t tokens: negligible FLOPs, same GEMMs.
  const double b = microbatch_size, s = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden);
  const double t = tp, tokens = b * s, ab = activation_bytes;
  const AttentionShape A = attention_shape(m);
  const double kv = A.k_width() + A.v_width();
  const bool moe = layer_is_moe(m, layer);

  // FLOPs per device (docs/ARCHITECTURE.md, "Modelling conventions"): every GEMM is split
  // tp ways (Megatron column/row parallel) but MLA's down-projections, which every TP
  // rank runs whole (counted once in model FLOPs, t times in hardware FLOPs).
  double f_qkv = 2 * tokens * h * (A.q_width() + kv) / t, f_replicated = 0;
  if (A.mla) {
    const double nope = A.qk_head_dim - A.rope_head_dim;
    f_replicated = 2 * tokens * h * (A.q_lora_rank + A.kv_lora_rank + A.rope_head_dim);
    f_qkv = f_replicated + 2 * tokens * ((A.q_lora_rank > 0 ? A.q_lora_rank : h) * A.q_width() + A.kv_lora_rank * A.heads * (nope + A.v_head_dim)) / t;
  }
  // QKᵀ over qk_head_dim and scores·V over v_head_dim, per query head (4bs²h/t for MHA).
  const double f_core = 2 * b * s * attention_counted_keys(m, s) * (A.q_width() + A.context_width()) / t;
  const double f_out = 2 * tokens * A.context_width() * h / t;
  double f_mlp = 0, mlp_width_traffic = 0, weights = attention_params(m) + norms_params(m);
  if (!moe) {
    const double f = static_cast<double>(m.ffn_hidden);
    f_mlp = mlp_flops(m, tokens, f) / t;
    mlp_width_traffic = f;
    weights += mlp_params(m, f);
  } else {
    const double fe = expert_width(m);
    const double visits = m.moe.top_k + m.moe.shared_experts;  // expert MLPs per token
    f_mlp = 2 * tokens * h * m.moe.experts /* router GEMM, replicated */ + visits * mlp_flops(m, tokens, fe) / t;
    mlp_width_traffic = visits * fe;
    weights += h * m.moe.experts + (static_cast<double>(m.moe.experts) / ep + m.moe.shared_experts) * mlp_params(m, fe);
  }
  const double f_linear = f_qkv + f_out + f_mlp;
  const double fwd_flops = f_linear + f_core;

  // HBM traffic in elements per token on this device (forward), fused attention:
  //   norm1 r/w 2h; QKV r h, w (h+kv)/t; attention core r (h+kv)/t, w h/t;
  //   out proj r h/t, w h; residual + norm2 r 3h w 2h; MLP up r h, w F/t (2F/t SwiGLU);
  //   activation r/w; down r F/t, w h; residual r 2h w h.
  const double gate = gpt_style(m) ? 1.0 : 2.0;
  const double F = mlp_width_traffic;
  const double elems = 2 * h + h + (h + kv) / t + (h + kv) / t + h / t + h / t + h + 5 * h + h + gate * F / t +
                       (gate + 1) * F / t + F / t + h + 3 * h;
  const double act_traffic = tokens * elems * ab;
  const double weight_bytes = weights / t * ab;

  LayerCosts c;
  c.forward = {fwd_flops, weight_bytes + act_traffic, tokens};
  c.model_flops_fwd = fwd_flops - f_replicated * (1 - 1 / t);
  // Backward: twice the GEMM work; dX GEMMs read weights, dW GEMMs write gradients;
  // both re-read the saved activations and the incoming gradient.
  c.backward_input = {f_linear + 2 * f_core, weight_bytes + act_traffic, tokens};
  c.backward_weight = {f_linear, weight_bytes + act_traffic, tokens};
  c.backward = {c.backward_input.flops + c.backward_weight.flops, c.backward_input.bytes + c.backward_weight.bytes,
                tokens};
  switch (rc) {
    case Recompute::none: break;
    case Recompute::full: c.recompute = c.forward; break;
    case Recompute::selective:
      // Re-read q, k, v and write the context (the scores stay on chip).
      c.recompute = {f_core, tokens * ((h + kv) / t + h / t) * ab, tokens};
      break;
    case Recompute::every_second_matmul: {
      // The layer's matmuls in the order a PyTorch-native block calls them (q, k and v
      // apart, SwiGLU's gate before its up projection, an MoE's router, routed and
      // shared experts as one grouped matmul per projection); the even-numbered ones
      // rerun, with every op that is no matmul and not the attention core (HBM traffic
      // about the forward's activation traffic).
      std::vector<double> mm;
      if (A.mla) {
        const double nope = A.qk_head_dim - A.rope_head_dim;
        if (A.q_lora_rank > 0) {
          mm.push_back(2 * tokens * h * A.q_lora_rank);
          mm.push_back(2 * tokens * A.q_lora_rank * A.q_width() / t);
        } else {
          mm.push_back(2 * tokens * h * A.q_width() / t);
        }
        mm.push_back(2 * tokens * h * (A.kv_lora_rank + A.rope_head_dim));
        mm.push_back(2 * tokens * A.kv_lora_rank * A.heads * (nope + A.v_head_dim) / t);
      } else {
        for (double width : {A.q_width(), A.k_width(), A.v_width()}) mm.push_back(2 * tokens * h * width / t);
      }
      mm.push_back(f_out);
      // One expert MLP of width `f` over `rows` tokens, `copies` of it, split tp ways.
      const auto mlp = [&](double rows, double f, double copies) {
        const double projection = 2 * rows * h * f * copies / t;
        if (!gpt_style(m)) mm.push_back(projection);  // gate
        mm.push_back(projection);                     // up
        mm.push_back(projection);                     // down
      };
      if (!moe) {
        mlp(tokens, static_cast<double>(m.ffn_hidden), 1);
      } else {
        mm.push_back(2 * tokens * h * m.moe.experts);  // router
        mlp(tokens, expert_width(m), m.moe.top_k);
        if (m.moe.shared_experts > 0) mlp(tokens, expert_width(m), m.moe.shared_experts);
      }
      double rerun = 0;
      for (std::size_t i = 1; i < mm.size(); i += 2) rerun += mm[i];
      c.recompute = {rerun, act_traffic, tokens};
      break;
    }
  }
  return c;
}

LayerCosts embedding_costs(const ModelSpec& m, int microbatch_size, int tp, int activation_bytes) {
  check_args(m, microbatch_size, tp, activation_bytes);
  const double tokens = static_cast<double>(microbatch_size) * static_cast<double>(m.seq_len);
  const double h = static_cast<double>(m.hidden), t = tp, ab = activation_bytes;
  // Vocab-parallel lookup: this device gathers ~tokens/t rows of its shard and writes
  // the full (masked) b·s·h output for the all-reduce; GPT adds learned positions.
  double fwd_bytes = (tokens * h / t + tokens * h) * ab;
  if (gpt_style(m)) fwd_bytes += 2 * tokens * h * ab;
  LayerCosts c;
  c.forward = {0, fwd_bytes, 0};
  // Backward: read the output gradient, scatter-add into the shard (read + write rows).
  c.backward_weight = {0, (tokens * h + 2 * tokens * h / t) * ab, 0};
  c.backward = c.backward_weight;
  return c;
}

LayerCosts lm_head_costs(const ModelSpec& m, int microbatch_size, int tp, int activation_bytes) {
  check_args(m, microbatch_size, tp, activation_bytes);
  const double tokens = static_cast<double>(microbatch_size) * static_cast<double>(m.seq_len);
  const double h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab), t = tp, ab = activation_bytes;
  const double logits = 2 * tokens * h * V / t;
  const double weight_bytes = V * h / t * ab;
  // Final norm r/w 2h per token; logits written, then softmax + cross-entropy read
  // them and write probabilities / the loss gradient (fp32 in Megatron: 2 × ab).
  const double fwd_bytes = weight_bytes + tokens * 3 * h * ab + tokens * V / t * (ab + 2 * 2 * ab);
  LayerCosts c;
  c.forward = {logits, fwd_bytes, tokens};
  c.model_flops_fwd = logits;
  const double half_bytes = weight_bytes + tokens * (h + V / t) * ab;
  c.backward_input = {logits, half_bytes + tokens * 2 * h * ab, tokens};
  c.backward_weight = {logits, half_bytes, tokens};
  c.backward = {2 * logits, c.backward_input.bytes + c.backward_weight.bytes, tokens};
  return c;
}

LayerCosts mtp_entry_costs(const ModelSpec& m, int microbatch_size, int tp, int activation_bytes) {
  check_args(m, microbatch_size, tp, activation_bytes);
  const double tokens = static_cast<double>(microbatch_size) * static_cast<double>(m.seq_len);
  const double h = static_cast<double>(m.hidden), t = tp, ab = activation_bytes;
  const double proj = 2 * tokens * 2 * h * h / t;
  // The lookup (as embedding_costs), two norms r/w 2h each, the concatenation r/w 4h,
  // the projection's weights and its 2h-in / h-out activations.
  const double weight_bytes = 2 * h * h / t * ab;
  const double fwd_bytes = (tokens * h / t + tokens * h) * ab + tokens * 8 * h * ab + weight_bytes + tokens * 3 * h / t * ab;
  LayerCosts c;
  c.forward = {proj, fwd_bytes, tokens};
  c.model_flops_fwd = proj;
  const double half_bytes = weight_bytes + tokens * 3 * h / t * ab;
  c.backward_input = {proj, half_bytes + tokens * 8 * h * ab, tokens};
  c.backward_weight = {proj, half_bytes + (tokens * h + 2 * tokens * h / t) * ab, tokens};
  c.backward = {2 * proj, c.backward_input.bytes + c.backward_weight.bytes, tokens};
  return c;
}

double megatron_step_flops(const ModelSpec& m, double global_batch) {
  const double s = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden);
  const double L = m.layers, V = static_cast<double>(m.vocab);
  return 72.0 * global_batch * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
}

double model_step_flops(const ModelSpec& m, double global_batch) {
  double fwd = 0;  // one sequence, whole model (tp = 1)
  for (int i = 0; i < block_count(m); ++i) fwd += layer_costs(m, i, 1, 1, 1, false, Recompute::none, 2).model_flops_fwd;
  fwd += (1 + m.mtp_depth) * lm_head_costs(m, 1, 1, 2).model_flops_fwd + m.mtp_depth * mtp_entry_costs(m, 1, 1, 2).model_flops_fwd;
  return 3 * fwd * global_batch;
}

int layer_parameter_modules(const ModelSpec& m, int layer) {
  const int attention = 2;  // fused QKV, output projection
  const int norms = norms_per_layer(m);
  const int mtp_entry = is_mtp_block(m, layer) ? 3 : 0;  // projection, two norms
  return attention + norms + mtp_entry + (layer_is_moe(m, layer) ? moe_mlp_modules(m) : mlp_matrices(m));
}

int norm_tensors(const ModelSpec& m) { return gpt_style(m) && has_bias(m) ? 2 : 1; }

int embedding_tensors(const ModelSpec& m) { return gpt_style(m) ? 2 : 1; }

int layer_norm_modules(const ModelSpec& m, int layer) {
  return norms_per_layer(m) + (is_mtp_block(m, layer) ? 2 : 0);
}

int layer_vector_tensors(const ModelSpec& m, int layer) {
  const int matrices = 2 + (layer_is_moe(m, layer) ? moe_mlp_modules(m) : mlp_matrices(m)) + (is_mtp_block(m, layer) ? 1 : 0);
  return layer_parameter_tensors(m, layer) - matrices;
}

double widest_layer_vector(const ModelSpec& m, int tp) {
  const double h = static_cast<double>(m.hidden);
  return std::max({h, 3 * h / tp, static_cast<double>(m.ffn_hidden) / tp});
}

std::vector<double> layer_matrix_numels(const ModelSpec& m, int layer) {
  const int matrices = layer_parameter_tensors(m, layer) - layer_vector_tensors(m, layer);
  const AttentionShape A = attention_shape(m);
  if (A.mla || layer_is_moe(m, layer) || is_mtp_block(m, layer))
    return std::vector<double>(static_cast<std::size_t>(matrices), layer_params(m, layer) / matrices);
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  std::vector<double> out{h * (A.q_width() + A.k_width() + A.v_width()), A.context_width() * h};
  for (int i = 0; i < mlp_matrices(m); ++i) out.push_back(h * f);
  return out;
}

int layer_parameter_tensors(const ModelSpec& m, int layer) {
  // A GPT-style linear carries a bias and a LayerNorm a bias beside its weight; the
  // router has no bias in either style.
  const int per_linear = has_bias(m) ? 2 : 1;
  const int per_norm = norm_tensors(m);
  const int mlp = layer_is_moe(m, layer) ? 1 + (moe_mlp_modules(m) - 1) * per_linear : mlp_matrices(m) * per_linear;
  const int mtp_entry = is_mtp_block(m, layer) ? per_linear + 2 * per_norm : 0;  // projection, two norms
  return 2 * per_linear + norms_per_layer(m) * per_norm + mlp + mtp_entry;
}

}  // namespace ls::wl

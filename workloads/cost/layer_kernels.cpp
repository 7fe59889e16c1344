// workloads/cost/layer_kernels.cpp — layer passes as kernels (see layer_kernels.hpp).
//
// Each forward kernel is built together with its backward: a linear layer's dgrad GEMM
// (backward_input) and wgrad GEMM (backward_weight) follow from its shape
// (Y[M×N] = X[M×K]·W[K×N]: dX = dY·Wᵀ is M×K over N, dW = Xᵀ·dY is K×N over M), the other
// kernels list their backward explicitly. The backward passes walk the forward in reverse.
// Notation: T = b·s/cp tokens on this device (cp: context parallelism), Tn = T/t under
// sequence parallelism (norms, dropout and residual adds run on a sequence shard) else T,
// ab = bytes per activation element. Under cp the attention core attends sq = s/cp local
// queries to all s keys (the K/V exchange is communication: cp_attention.hpp), so its
// counted FLOPs are 4·b·sq·s·h/t = 4bs²h/(t·cp); with the 2·cp-chunk split the causal
// mask skips the same share of blocks as without cp.
#include "workloads/cost/layer_kernels.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "workloads/cost/low_precision.hpp"
#include "workloads/model/model.hpp"

namespace ls::wl {

namespace {

struct Step {
  Kernel fwd;
  std::vector<Kernel> bwd_input;   // in execution order
  std::vector<Kernel> bwd_weight;  // in execution order
  /// A linear layer: the matmuls a PyTorch-native block calls for it, in order, as
  /// shares of the GEMM's output columns (the fused QKV GEMM is q, k, v; a SwiGLU up
  /// projection is gate, up). Empty: not a matmul. Counted by every-second-matmul.
  std::vector<double> mm_parts = {};
};

Kernel mem(std::string_view name, double bytes, double saved = 0,
           KernelCategory category = KernelCategory::elementwise) {
  Kernel k;
  k.name = name;
  k.category = category;
  k.kind = KernelKind::memory;
  k.bytes = bytes;
  k.saved_bytes = saved;
  return k;
}

/// `k` drawing one random number per element of its `elements`-element dropout mask.
Kernel with_draws(Kernel k, double elements) {
  k.random_elements = elements;
  return k;
}

Kernel gemm(std::string_view name, GemmShape shape, KernelCategory category, double saved = 0) {
  Kernel k;
  k.name = name;
  k.category = category;
  k.kind = KernelKind::gemm;
  k.shape = shape;
  k.flops = shape.flops();
  k.executed_flops = k.flops;
  k.saved_bytes = saved;
  return k;
}

class Builder {
public:
  Builder(const ModelSpec& m, const KernelOptions& o) : m_(m), o_(o) {
    if (o.microbatch_size < 1 || o.tp < 1 || o.ep < 1 || o.cp < 1 || o.activation_bytes < 1)
      throw std::invalid_argument(fmt::format(
          "layer kernels of '{}': microbatch_size ({}), tp ({}), ep ({}), cp ({}) and activation bytes ({}) must be >= 1",
          m.name, o.microbatch_size, o.tp, o.ep, o.cp, o.activation_bytes));
    if (!(o.dropout >= 0 && o.dropout < 1))
      throw std::invalid_argument(fmt::format("layer kernels of '{}': dropout {} outside [0, 1)", m.name, o.dropout));
    if (m.hidden <= 0 || m.seq_len <= 0 || m.heads <= 0 || m.ffn_hidden < 0 || m.vocab < 0)
      throw std::invalid_argument(fmt::format("layer kernels of '{}': hidden, seq_len and heads must be > 0", m.name));
    s_ = static_cast<double>(m.seq_len);
    h_ = static_cast<double>(m.hidden);
    t_ = o.tp;
    ab_ = o.activation_bytes;
    sq_ = s_ / o.cp;
    T_ = o.microbatch_size * sq_;
    Tn_ = o.sequence_parallel ? T_ / t_ : T_;
    A_ = attention_shape(m);
    kv_ = A_.k_width() + A_.v_width();
  }

  std::vector<Step> steps;

  // --- building blocks -------------------------------------------------------------

  /// A linear layer X[M×K]·W[K×N] on this device, with its dgrad and wgrad GEMMs;
  /// `saved_elements` of its input are kept for the wgrad. Under FP8 compute (o.compute,
  /// low_precision.hpp) a TransformerEngine linear (category gemm, not the router): all
  /// three GEMMs in FP8, X quantized before the forward and dY before the dgrad (the
  /// wgrad reuses both quantized copies), and the input kept in its quantized form.
  void linear(std::string_view name, std::string_view dgrad, std::string_view wgrad, GemmShape fwd,
              double saved_elements, KernelCategory category = KernelCategory::gemm, bool te_linear = true,
              std::vector<double> mm_parts = {1.0}) {
    const bool fp8 = fp8_gemms(o_.compute) && te_linear && category == KernelCategory::gemm;
    const double q = quantize_bytes_per_element(o_.compute);
    const double saved_bytes = saved_elements * (fp8 ? fp8_saved_bytes_per_element(o_.compute) : ab_);
    if (fp8) steps.push_back({mem("fp8.quantize_input", fwd.batch * fwd.m * fwd.k * q), {}, {}});
    Step st{gemm(name, fwd, category, saved_bytes), {}, {}, std::move(mm_parts)};
    if (fp8) st.bwd_input.push_back(mem("fp8.quantize_grad", fwd.batch * fwd.m * fwd.n * q));
    st.bwd_input.push_back(gemm(dgrad, {fwd.m, fwd.k, fwd.n, fwd.batch}, category));
    st.bwd_weight.push_back(gemm(wgrad, {fwd.k, fwd.n, fwd.m, fwd.batch}, category));
    if (fp8) {
      st.fwd.fp8 = true;
      for (auto& k : st.bwd_input) k.fp8 = k.kind == KernelKind::gemm;
      st.bwd_weight.front().fp8 = true;
    }
    steps.push_back(std::move(st));
  }

  /// Pre-attention / pre-MLP / final norm on Tn tokens; keeps its input. The backward
  /// also accumulates the residual-stream gradient (an add).
  void norm(std::string_view name) {
    const double x = Tn_ * h_ * ab_;
    const bool layernorm = m_.activation == Activation::gelu;
    if (layernorm || o_.fused_norm.value_or(o_.fused_elementwise)) {
      // LayerNorm is one kernel in every framework; RMSNorm when fused (Apex / TE).
      steps.push_back({mem(name, 2 * x, x), {mem("norm.bwd", 3 * x), mem("residual_grad_add", 3 * x)}, {}});
      return;
    }
    unfused_rmsnorm();
  }

  /// RMSNorm as eager PyTorch runs it: torchtitan's RMSNorm (`_norm(x.float()).type_as(x)
  /// * weight`, the Llama reference code's) and PyTorch's own composite rms_norm both
  /// normalise an fp32 copy: upcast, square, mean, +eps and rsqrt (per token), ·rstd,
  /// downcast, ·weight, each op one kernel through HBM. Autograd keeps the fp32 copy (for
  /// the square's and the scale's backward), the per-token rstd and the downcast output
  /// (for the weight's), and runs each op's backward: the weight's two products and the
  /// weight gradient's sum over tokens, the downcast's upcast, the scale's two products
  /// and its sum over the row, the mean's broadcast, the square's 2·x·grad (a copy of x,
  /// then two products), the add of the fp32 copy's two gradients, the upcast's downcast.
  /// e elements of a bytes and f = 4: 36 B per element forward at a = 2, 92 backward.
  void unfused_rmsnorm() {
    const double e = Tn_ * h_, a = ab_, f = 4, row = Tn_ * f;
    steps.push_back({mem("rmsnorm.upcast", e * (a + f), e * f), {mem("rmsnorm.upcast.bwd", e * (f + a))}, {}});
    steps.push_back({mem("rmsnorm.square", 2 * e * f),
                     {mem("rmsnorm.square.bwd.copy", 2 * e * f), mem("rmsnorm.square.bwd.double", 2 * e * f),
                      mem("rmsnorm.square.bwd.mul", 3 * e * f), mem("rmsnorm.grad_add", 3 * e * f)},
                     {}});
    steps.push_back({mem("rmsnorm.mean", e * f + row), {mem("rmsnorm.mean.bwd", row + e * f)}, {}});
    steps.push_back({mem("rmsnorm.eps_add", 2 * row), {}, {}});
    steps.push_back({mem("rmsnorm.rsqrt", 2 * row, row), {mem("rmsnorm.rsqrt.bwd", 3 * row)}, {}});
    steps.push_back({mem("rmsnorm.scale", 2 * e * f + row),
                     {mem("rmsnorm.scale.bwd.input", 2 * e * f + row), mem("rmsnorm.scale.bwd.rstd", 3 * e * f),
                      mem("rmsnorm.scale.bwd.row_sum", e * f + row)},
                     {}});
    steps.push_back({mem("rmsnorm.downcast", e * (f + a), e * a), {mem("rmsnorm.downcast.bwd", e * (a + f))}, {}});
    steps.push_back({mem("rmsnorm.weight", 2 * e * a),
                     {mem("rmsnorm.weight.bwd.input", 2 * e * a), mem("rmsnorm.weight.bwd.product", 3 * e * a),
                      mem("rmsnorm.weight.bwd.token_sum", e * a), mem("residual_grad_add", 3 * e * a)},
                     {}});
  }

  /// Bias (GPT) + dropout (when on) + residual add on Tn tokens; keeps the dropout mask.
  void bias_dropout_add() {
    const double x = Tn_ * h_ * ab_, mask = Tn_ * h_;
    const bool bias = has_bias(m_), drop = o_.dropout > 0;
    if (o_.fused_elementwise) {
      // One kernel reads the branch and the residual, writes the sum (and the mask);
      // its backward scales the gradient by the mask (and reduces the bias gradient).
      const bool any_bwd = bias || drop;
      Step st{mem(drop ? "bias_dropout_add" : "residual_add", 3 * x + (drop ? mask : 0), drop ? mask : 0), {}, {}};
      if (drop) st.fwd.random_elements = Tn_ * h_;
      if (any_bwd) st.bwd_input.push_back(mem("bias_dropout_add.bwd", 2 * x + (drop ? mask : 0)));
      steps.push_back(std::move(st));
      return;
    }
    if (bias) steps.push_back({mem("bias_add", 2 * x), {mem("bias_add.bwd", x)}, {}});
    if (drop) steps.push_back({with_draws(mem("dropout", 2 * x + mask, mask), Tn_ * h_), {mem("dropout.bwd", 2 * x + mask)}, {}});
    steps.push_back({mem("residual_add", 3 * x), {}, {}});
  }

  /// Rotary embeddings on q and k (Llama: (h + kv/2)/t wide; MLA: the heads' rope query
  /// features and the one shared rope key) over T tokens; keeps nothing (its backward
  /// is the inverse rotation).
  void rope() {
    const double width = A_.mla ? A_.heads * A_.rope_head_dim / t_ + A_.rope_head_dim : (A_.q_width() + A_.k_width()) / t_;
    const double x = T_ * width * ab_;
    if (o_.fused_elementwise) {
      steps.push_back({mem("rope", 2 * x), {mem("rope.bwd", 2 * x)}, {}});
      return;
    }
    // x·cos, rotate_half(x), ·sin, add: four passes, the same again backward.
    steps.push_back({mem("rope.mul_cos", 2 * x), {mem("rope.mul_cos.bwd", 2 * x)}, {}});
    steps.push_back({mem("rope.rotate_half", 2 * x), {mem("rope.rotate_half.bwd", 2 * x)}, {}});
    steps.push_back({mem("rope.mul_sin", 2 * x), {mem("rope.mul_sin.bwd", 2 * x)}, {}});
    steps.push_back({mem("rope.add", 3 * x), {mem("rope.add.bwd", 3 * x)}, {}});
  }

  /// Q, K and V from the norm's output. MHA/GQA: one fused QKV GEMM split over TP.
  /// MLA: the query's down-projection (replicated on every TP rank), its latent's
  /// RMSNorm and up-projection (split); the key/value down-projection to the latent and
  /// the shared rope key (replicated), the latent's RMSNorm and its up-projection to
  /// every head's nope key and value (split). The two down-projections read the same
  /// input, kept once.
  void attention_projections() {
    if (!A_.mla) {
      const double qkv = A_.q_width() + kv_;
      linear("qkv", "qkv.dgrad", "qkv.wgrad", {T_, qkv / t_, h_}, Tn_ * h_, KernelCategory::gemm, true,
             {A_.q_width() / qkv, A_.k_width() / qkv, A_.v_width() / qkv});
      return;
    }
    const auto latent_norm = [&](std::string_view name, std::string_view bwd, double width) {
      const double x = T_ * width * ab_;
      steps.push_back({mem(name, 2 * x, x), {mem(bwd, 3 * x)}, {}});
    };
    const double nope = A_.qk_head_dim - A_.rope_head_dim;
    if (A_.q_lora_rank > 0) {
      linear("q_down", "q_down.dgrad", "q_down.wgrad", {T_, A_.q_lora_rank, h_}, Tn_ * h_);
      latent_norm("q_latent_norm", "q_latent_norm.bwd", A_.q_lora_rank);
      linear("q_up", "q_up.dgrad", "q_up.wgrad", {T_, A_.q_width() / t_, A_.q_lora_rank}, T_ * A_.q_lora_rank);
    } else {
      linear("q", "q.dgrad", "q.wgrad", {T_, A_.q_width() / t_, h_}, Tn_ * h_);
    }
    linear("kv_down", "kv_down.dgrad", "kv_down.wgrad", {T_, A_.kv_lora_rank + A_.rope_head_dim, h_}, 0);  // input kept above
    latent_norm("kv_latent_norm", "kv_latent_norm.bwd", A_.kv_lora_rank);
    linear("kv_up", "kv_up.dgrad", "kv_up.wgrad", {T_, A_.heads * (nope + A_.v_head_dim) / t_, A_.kv_lora_rank}, T_ * A_.kv_lora_rank);
  }

  /// QKᵀ, softmax, dropout, ·V for b·a/t heads (4bs²h/t counted FLOPs forward for MHA;
  /// scores over qk_head_dim and the context over v_head_dim per head in general).
  void core_attention() {
    const double bh = o_.microbatch_size * A_.heads / t_;
    const double dqk = A_.qk_head_dim, dv = A_.v_head_dim;
    const double counted = 2 * o_.microbatch_size * sq_ * attention_counted_keys(m_, s_) * (A_.q_width() + A_.context_width()) / t_;
    // K and V of every key (all s under cp: the local chunk plus the exchanged ones).
    // Only the local chunk's K and V are kept for the backward (the ring passes the others
    // again; the all-gather kind gathers them again).
    const double q = T_ * A_.q_width() / t_ * ab_, o = T_ * A_.context_width() / t_ * ab_;
    const double k = o_.microbatch_size * s_ * A_.k_width() / t_ * ab_, v = o_.microbatch_size * s_ * A_.v_width() / t_ * ab_;
    const double kv_local = T_ * kv_ / t_ * ab_;
    if (o_.attention != AttentionKind::unfused) {
      const bool triton = o_.attention == AttentionKind::triton;
      Kernel fwd;
      fwd.name = "flash_attention";
      fwd.category = KernelCategory::attention;
      fwd.kind = triton ? KernelKind::triton_forward : KernelKind::flash_forward;
      fwd.flops = counted;
      fwd.causal_seq_len = o_.causal ? s_ : 0;
      fwd.attention_window = static_cast<double>(m_.sliding_window);
      fwd.bytes = q + k + v + o;       // read Q, K, V; write O
      fwd.saved_bytes = q + kv_local;  // Q, K, V (O is the output projection's saved input)
      fwd.core_attention = true;
      Kernel bwd = fwd;
      bwd.name = "flash_attention.bwd";
      bwd.kind = triton ? KernelKind::triton_backward : KernelKind::flash_backward;
      bwd.flops = 2 * counted;  // executes 2.5 × forward (time_kernels): dQ, dK, dV, dP and QKᵀ again
      bwd.bytes = (q + k + v + 2 * o) + (q + k + v);  // read Q K V O dO; write dQ dK dV
      bwd.saved_bytes = 0;
      bwd.core_attention = false;
      steps.push_back({fwd, {bwd}, {}});
      return;
    }
    // Unfused: the b·a/t·s² scores go through HBM.
    const double S = bh * sq_ * s_, scores = S * ab_, mask = S;
    const auto att = KernelCategory::attention;
    Step qk{gemm("attention.scores", {sq_, s_, dqk, bh}, att, q + T_ * A_.k_width() / t_ * ab_), {}, {}};
    qk.fwd.core_attention = true;
    qk.bwd_input = {gemm("attention.scores.dgrad_q", {sq_, dqk, s_, bh}, att),
                    gemm("attention.scores.dgrad_k", {s_, dqk, sq_, bh}, att)};
    std::vector<Step> mid;
    if (o_.fused_elementwise) {
      mid.push_back({mem("scale_mask_softmax", 2 * scores, scores, att), {mem("scale_mask_softmax.bwd", 3 * scores, 0, att)}, {}});
    } else {
      mid.push_back({mem("attention.scale", 2 * scores, 0, att), {mem("attention.scale.bwd", 2 * scores, 0, att)}, {}});
      mid.push_back({mem("attention.mask", 2 * scores, 0, att), {mem("attention.mask.bwd", 2 * scores, 0, att)}, {}});
      mid.push_back({mem("softmax", 2 * scores, scores, att), {mem("softmax.bwd", 3 * scores, 0, att)}, {}});
    }
    if (o_.dropout > 0)  // keeps the mask and its output (the ·V GEMM's input)
      mid.push_back({with_draws(mem("attention_dropout", 2 * scores + mask, mask + scores, att), S),
                     {mem("attention_dropout.bwd", 2 * scores + mask, 0, att)}, {}});
    Step av{gemm("attention.context", {sq_, dv, s_, bh}, att, T_ * A_.v_width() / t_ * ab_), {}, {}};
    av.fwd.core_attention = true;
    av.bwd_input = {gemm("attention.context.dgrad_probs", {sq_, s_, dv, bh}, att),
                    gemm("attention.context.dgrad_v", {s_, dv, sq_, bh}, att)};
    steps.push_back(std::move(qk));
    for (auto& st : mid) {
      st.fwd.core_attention = true;
      st.fwd.saved_inside_core_attention = true;
      steps.push_back(std::move(st));
    }
    steps.push_back(std::move(av));
  }

  /// Bias + GeLU (GPT) or SwiGLU (Llama) on `rows` rows of width `width` (per device).
  /// Keeps what its backward needs: the GeLU input; gate and up (fused SwiGLU), plus
  /// silu(gate) when unfused (the product keeps both of its inputs).
  void activation(double rows, double width) {
    const double x = rows * width * ab_;
    if (m_.activation == Activation::gelu) {
      if (o_.fused_elementwise) {
        steps.push_back({mem(has_bias(m_) ? "bias_gelu" : "gelu", 2 * x, x), {mem(has_bias(m_) ? "bias_gelu.bwd" : "gelu.bwd", 3 * x)}, {}});
      } else if (!has_bias(m_)) {
        steps.push_back({mem("gelu", 2 * x, x), {mem("gelu.bwd", 3 * x)}, {}});
      } else {
        steps.push_back({mem("mlp.bias_add", 2 * x), {mem("mlp.bias_add.bwd", x)}, {}});
        steps.push_back({mem("gelu", 2 * x, x), {mem("gelu.bwd", 3 * x)}, {}});
      }
      return;
    }
    if (o_.fused_elementwise) {
      steps.push_back({mem("swiglu", 3 * x, 2 * x), {mem("swiglu.bwd", 5 * x)}, {}});
    } else {
      steps.push_back({mem("silu", 2 * x, x), {mem("silu.bwd", 3 * x)}, {}});
      steps.push_back({mem("swiglu.mul", 3 * x, 2 * x), {mem("swiglu.mul.bwd", 5 * x)}, {}});
    }
  }

  /// The up projection's matmuls: SwiGLU's gate and up (torchtitan's w1, w3), or GeLU's one.
  std::vector<double> up_parts() const {
    return m_.activation == Activation::gelu ? std::vector<double>{1.0} : std::vector<double>{0.5, 0.5};
  }

  /// Dense MLP of width f (split tp ways) over T tokens.
  void dense_mlp(double f) {
    const double width = f / t_, gate = m_.activation == Activation::gelu ? 1 : 2;
    linear("mlp.up", "mlp.up.dgrad", "mlp.up.wgrad", {T_, gate * width, h_}, Tn_ * h_, KernelCategory::gemm, true, up_parts());
    activation(T_, width);
    linear("mlp.down", "mlp.down.dgrad", "mlp.down.wgrad", {T_, h_, width}, T_ * width);
  }

  /// MoE MLP: router, permutation to experts, grouped expert GEMMs (experts/ep local
  /// experts, each with T·top_k·ep/experts tokens under balanced routing), shared experts,
  /// and the weighted un-permutation. With an expert tensor parallelism e other than t
  /// (MoE parallel folding) a routed expert's MLP is e ways wide and its rows are the
  /// tokens of e TP ranks' sequence shards: T/t·e per rank before the top-k copies.
  void moe_mlp() {
    const auto& moe = m_.moe;
    const double E = moe.experts, k = moe.top_k, shared = moe.shared_experts;
    const double fe = static_cast<double>(moe.expert_ffn_hidden > 0 ? moe.expert_ffn_hidden : m_.ffn_hidden);
    const double etp = expert_tp();
    const double width = fe / t_, expert_width = fe / etp, gate = m_.activation == Activation::gelu ? 1 : 2;
    const double Te = T_ / t_ * etp;                             // the tokens an expert-TP group handles
    const double local = E / o_.ep, rows = Te * k * o_.ep / E;  // per local expert
    const double pairs = Te * k;                                // token-expert pairs on this device
    // The router reads the norm output (kept once, here, for the router and the
    // permutation): the sequence-parallel shard's Tn tokens.
    linear("router", "router.dgrad", "router.wgrad", {Tn_, E, h_}, Tn_ * h_, KernelCategory::gemm,
           /*te_linear=*/false);
    router_ops(E, k);
    // P: the token-expert pairs' hidden states on this device; X: its tokens'.
    const double P = pairs * h_ * ab_, X = T_ * h_ * ab_;
    const bool fused = o_.moe_permute_fusion;
    if (!fused) permutation_indices(E, k);
    // Gather each token's copies into expert order: one read and one write of P either way;
    // backward, PyTorch's index_select gradient zeroes X and index-adds P into it.
    steps.push_back({mem("moe.permute", 2 * P), {mem("moe.permute.bwd", fused ? P + X : P + 3 * X)}, {}});
    const std::size_t first_expert_step = steps.size();
    // Tokens arrive from the ep ranks grouped by sender; with several local experts the
    // PyTorch dispatcher regroups them by expert (split, then cat: a copy of P) and back
    // after the experts, each copied again in the backward (cat's gradient is a cat).
    const bool regroup = !fused && local > 1 && o_.ep > 1;
    if (regroup) steps.push_back({mem("moe.sort_chunks", 2 * P), {mem("moe.sort_chunks.bwd", 2 * P)}, {}});
    linear("expert.up", "expert.up.dgrad", "expert.up.wgrad", {rows, gate * expert_width, h_, local}, pairs * h_,
           KernelCategory::gemm, true, up_parts());
    per_expert_launches(steps.back(), local);
    activation(pairs, expert_width);
    linear("expert.down", "expert.down.dgrad", "expert.down.wgrad", {rows, h_, expert_width, local}, pairs * expert_width);
    per_expert_launches(steps.back(), local);
    if (regroup) steps.push_back({mem("moe.unsort_chunks", 2 * P), {mem("moe.unsort_chunks.bwd", 2 * P)}, {}});
    for (std::size_t i = first_expert_step; i < steps.size(); ++i) mark_routed_expert(steps[i]);
    if (shared > 0) {
      linear("shared_expert.up", "shared_expert.up.dgrad", "shared_expert.up.wgrad", {T_, gate * width, h_, shared}, 0,
             KernelCategory::gemm, true, up_parts());
      activation(T_ * shared, width);
      linear("shared_expert.down", "shared_expert.down.dgrad", "shared_expert.down.wgrad", {T_, h_, width, shared},
             T_ * shared * width);
    }
    // Combine: weighted sum of each token's expert outputs (kept for the router-probability
    // gradient). Fused: one kernel reads P and writes X; its backward reads X and writes P
    // and reads P again for the probabilities' gradient. As PyTorch ops (Megatron-Core's
    // unpermute): P·probs into a new tensor, a zeroed X, scatter_add of P into it; backward,
    // scatter_add's gather of X into P, the product's two gradients (g·probs, and g·tokens
    // summed over the hidden dimension).
    if (fused) {
      steps.push_back({mem("moe.unpermute", P + X, P), {mem("moe.unpermute.bwd", X + 2 * P)}, {}});
      return;
    }
    steps.push_back({mem("moe.unpermute.weight", 2 * P, P), {mem("moe.unpermute.weight.bwd", 2 * P),
                                                             mem("moe.unpermute.probs_grad", 3 * P),
                                                             mem("moe.unpermute.probs_grad_sum", P)}, {}});
    steps.push_back({mem("moe.unpermute.zeros", X), {}, {}});
    steps.push_back({mem("moe.unpermute.scatter_add", P + 2 * X), {mem("moe.unpermute.scatter_add.bwd", 2 * P)}, {}});
  }

  /// The router after its GEMM, on the Tn×E logits (R elements, in the activation
  /// type) and the Tn·k chosen pairs, as Megatron-Core's TopKRouter runs it with the
  /// aux-loss balancing (core_r0.10.0 moe_utils.topk_softmax_with_capacity and
  /// switch_load_balancing_loss_func, router.aux_loss_load_balancing) and its all-to-all
  /// dispatcher's split counts. Small kernels: their launches, not their bytes, cost.
  /// Fused (implementation.moe_router_fusion, TransformerEngine's fused router): one
  /// kernel each for the top-k with its softmax and masks, the aux-loss scores and the
  /// aux loss, forward and backward. Token dropping (capacity_factor > 0) adds the
  /// per-expert top-k over tokens and its masks, unfused either way. Kept for the
  /// backward: the top-k indices, the softmax outputs, the capacity mask.
  void router_ops(double E, double k) {
    const double R = Tn_ * E, pairs = Tn_ * k, a = ab_, f4 = 4, idx = 8;
    if (o_.moe_router_fusion) {
      steps.push_back({mem("router.fused_topk", R * (a + f4 + 1), R * (f4 + 1)), {mem("router.fused_topk.bwd", R * (2 * f4 + 1 + a))}, {}});
      steps.push_back({mem("router.fused_aux_scores", R * (a + f4 + 1), R * f4), {mem("router.fused_aux_scores.bwd", R * (2 * f4 + a))}, {}});
      steps.push_back({mem("router.fused_aux_loss", R * f4), {mem("router.fused_aux_loss.bwd", R * f4)}, {}});
    } else {
      // Top-k of the logits, softmax over the k in fp32 and back, scattered into a zeroed
      // E-wide gate tensor and a boolean map (zeros, int, clone, scatter, bool); backward:
      // the gates' gather, the softmax and cast, the top-k's scatter into zeros, and the
      // sum of the two gradients that reach the logits (this path's and the aux loss's).
      steps.push_back({mem("router.topk", R * a + pairs * (a + idx), pairs * idx),
                       {mem("router.topk.bwd_zeros", R * a), mem("router.topk.bwd_scatter", pairs * (idx + 2 * a)),
                        mem("router.logits_grad_add", 3 * R * a)},
                       {}});
      steps.push_back({mem("router.softmax", pairs * (a + f4), pairs * f4), {mem("router.softmax.bwd", 3 * pairs * f4)}, {}});
      steps.push_back({mem("router.softmax_cast", pairs * (f4 + a)), {mem("router.softmax_cast.bwd", pairs * (a + f4))}, {}});
      steps.push_back({mem("router.gates_zeros", R * a), {}, {}});
      steps.push_back({mem("router.gates_clone", 2 * R * a), {}, {}});
      steps.push_back({mem("router.gates_scatter", pairs * (idx + 2 * a)), {mem("router.gates_scatter.bwd", pairs * (idx + 2 * a))}, {}});
      steps.push_back({mem("router.map_zeros", R * a), {}, {}});
      steps.push_back({mem("router.map_int", R * (a + f4)), {}, {}});
      steps.push_back({mem("router.map_clone", 2 * R * f4), {}, {}});
      steps.push_back({mem("router.map_scatter", pairs * (idx + f4)), {}, {}});
      steps.push_back({mem("router.map_bool", R * (f4 + 1)), {}, {}});
      steps.push_back({mem("router.tokens_per_expert", R), {}, {}});
      // The aux loss: a full fp32 softmax of the logits, its column sums against the
      // tokens per expert, scaled; the loss tracker's divide and add.
      steps.push_back({mem("router.aux_softmax", R * (a + f4), R * f4), {mem("router.aux_softmax.bwd", 3 * R * f4), mem("router.aux_softmax.cast", R * (f4 + a))}, {}});
      steps.push_back({mem("router.aux_column_sum", R * f4), {mem("router.aux_scale.bwd", E * f4)}, {}});
      steps.push_back({mem("router.aux_product", 3 * E * f4), {mem("router.aux_product.bwd", 3 * E * f4)}, {}});
      steps.push_back({mem("router.aux_sum", E * f4), {}, {}});
      steps.push_back({mem("router.aux_scale", 2 * f4), {}, {}});
      steps.push_back({mem("router.aux_track_divide", 2 * f4), {}, {}});
      steps.push_back({mem("router.aux_track_add", 3 * f4), {}, {}});
    }
    if (m_.moe.capacity_factor > 0) {
      // Token dropping: each expert's top `capacity` tokens by gate (a top-k over the
      // token dimension), a capacity mask built like the map, and-ed with it, and the
      // gates masked (whose backward masks the gradient).
      const double cap = pairs * m_.moe.capacity_factor;
      steps.push_back({mem("router.capacity_topk", R * a + cap * (a + idx)), {}, {}});
      steps.push_back({mem("router.capacity_zeros", R * a), {}, {}});
      steps.push_back({mem("router.capacity_clone", 2 * R * a), {}, {}});
      steps.push_back({mem("router.capacity_scatter", cap * (idx + a)), {}, {}});
      steps.push_back({mem("router.capacity_bool", R * (a + 1)), {}, {}});
      steps.push_back({mem("router.capacity_and", 3 * R), {}, {}});
      steps.push_back({mem("router.capacity_mask", R * (2 * a + 1), R), {mem("router.capacity_mask.bwd", R * (2 * a + 1))}, {}});
    }
    if (o_.ep > 1 || expert_tp() > 1) {
      // The all-to-all dispatcher's split counts (token_dispatcher.py preprocess): tokens
      // per expert as int64, the input splits per EP rank, the received counts sliced to
      // the local experts, the output splits and the tokens per local expert.
      steps.push_back({mem("dispatch.tokens_per_expert", R), {}, {}});
      steps.push_back({mem("dispatch.counts_long", E * (idx + idx)), {}, {}});
      if (m_.moe.capacity_factor > 0) steps.push_back({mem("dispatch.out_tokens", E * idx), {}, {}});
      steps.push_back({mem("dispatch.input_splits", E * idx), {}, {}});
      steps.push_back({mem("dispatch.local_counts", 2 * E * idx), {}, {}});
      steps.push_back({mem("dispatch.output_splits", E * idx), {}, {}});
      steps.push_back({mem("dispatch.tokens_per_local_expert", E * idx), {}, {}});
    }
  }

  /// The PyTorch permutation's index work before its index_select and before the
  /// combine (moe_utils.permute / unpermute, core_r0.10.0): the map transposed and made
  /// contiguous, the token indices masked out of it (a count, then the select), and the
  /// probabilities selected the same way, whose gradient is scattered back into zeros.
  void permutation_indices(double E, double k) {
    const double R = Tn_ * E, pairs = Tn_ * k, a = ab_, idx = 8;
    steps.push_back({mem("moe_index.permute_map_transpose", 2 * R), {}, {}});
    steps.push_back({mem("moe_index.permute_arange", Tn_ * idx), {}, {}});
    steps.push_back({mem("moe_index.permute_count", R), {}, {}});
    steps.push_back({mem("moe_index.permute_select", R * (1 + idx) + pairs * idx), {}, {}});
    steps.push_back({mem("moe_index.unpermute_probs_transpose", 2 * R * a), {mem("moe_index.unpermute_probs_transpose.bwd", 2 * R * a)}, {}});
    steps.push_back({mem("moe_index.unpermute_map_transpose", 2 * R), {}, {}});
    steps.push_back({mem("moe_index.unpermute_count", R), {}, {}});
    steps.push_back({mem("moe_index.unpermute_select", R * (1 + a) + pairs * a),
                     {mem("moe_index.unpermute_select.bwd_zeros", R * a), mem("moe_index.unpermute_select.bwd_scatter", R + 2 * pairs * a)},
                     {}});
  }

  double expert_tp() const { return o_.expert_tp > 0 ? o_.expert_tp : t_; }

  /// A grouped expert GEMM the framework runs as one GEMM per local expert
  /// (implementation.grouped_gemm per-expert): `local` launches for each of its three.
  void per_expert_launches(Step& st, double local) const {
    if (!o_.grouped_gemm_per_expert) return;
    auto mark = [&](Kernel& k) {
      if (k.kind == KernelKind::gemm) k.launches = static_cast<int>(local);
    };
    mark(st.fwd);
    for (auto& k : st.bwd_input) mark(k);
    for (auto& k : st.bwd_weight) mark(k);
  }

  static void mark_routed_expert(Step& st) {
    st.fwd.routed_expert = true;
    for (auto& k : st.bwd_input) k.routed_expert = true;
    for (auto& k : st.bwd_weight) k.routed_expert = true;
  }

  void layer(int index) {
    norm("norm1");
    attention_projections();
    if (m_.activation == Activation::swiglu || A_.mla) rope();
    core_attention();
    linear("attention.out", "attention.out.dgrad", "attention.out.wgrad", {T_, h_, A_.context_width() / t_},
           T_ * A_.context_width() / t_);
    // The parallel block's MLP reads norm1's output too; one add takes both branches
    // into the residual (after the MLP).
    if (!m_.parallel_block) {
      bias_dropout_add();
      norm("norm2");
    }
    if (layer_is_moe(m_, index))
      moe_mlp();
    else
      dense_mlp(static_cast<double>(m_.ffn_hidden));
    bias_dropout_add();
  }

  void embedding() {
    // Vocab-parallel: this device gathers ~T/t rows of its shard and writes the full
    // (masked) T×h output for the all-reduce (or reduce-scatter with SP). Backward:
    // scatter-add the output gradient into the shard (read + write its rows).
    Step lookup{mem("embedding.lookup", (T_ * h_ / t_ + T_ * h_) * ab_), {}, {}};
    lookup.bwd_weight.push_back(mem("embedding.grad", (T_ * h_ + 2 * T_ * h_ / t_) * ab_));
    steps.push_back(std::move(lookup));
    if (m_.activation == Activation::gelu) {
      Step pos{mem("position.add", 3 * Tn_ * h_ * ab_), {}, {}};
      pos.bwd_weight.push_back(mem("position.grad", (Tn_ * h_ + 2 * s_ * h_) * ab_));
      steps.push_back(std::move(pos));
    }
    if (o_.dropout > 0) {
      const double x = Tn_ * h_ * ab_, mask = Tn_ * h_;
      Step drop{with_draws(mem("embedding.dropout", 2 * x + mask, mask), Tn_ * h_), {}, {}};
      drop.bwd_weight.push_back(mem("embedding.dropout.bwd", 2 * x + mask));  // ahead of the scatter-add
      steps.push_back(std::move(drop));
    }
  }

  void mtp_entry() {
    embedding();
    norm("mtp.norm_hidden");
    norm("mtp.norm_embedding");
    const double x = Tn_ * h_ * ab_;
    steps.push_back({mem("mtp.concat", 4 * x), {mem("mtp.concat.bwd", 4 * x)}, {}});
    linear("mtp.proj", "mtp.proj.dgrad", "mtp.proj.wgrad", {T_, h_ / t_, 2 * h_}, Tn_ * 2 * h_);
  }

  void lm_head() {
    norm("final_norm");
    const double V = static_cast<double>(m_.vocab) / t_;
    const auto logits = KernelCategory::logits;
    linear("lm_head", "lm_head.dgrad", "lm_head.wgrad", {T_, V, h_}, Tn_ * h_, logits);
    // Vocab-parallel cross-entropy in fp32 (4-byte) on T×V/t logits; keeps the softmax.
    const auto [lo, f32] = logit_bytes();
    if (fused_loss()) {
      steps.push_back({mem("cross_entropy", lo + f32, f32, logits), {mem("cross_entropy.bwd", f32 + lo, 0, logits)}, {}});
      return;
    }
    // Megatron's vocab-parallel loss as tensor ops: cast, max, subtract, exp, sum, normalise;
    // backward: softmax − one-hot scaled by the loss gradient, cast back.
    steps.push_back({mem("ce.to_fp32", lo + f32, 0, logits), {mem("ce.to_bf16", f32 + lo, 0, logits)}, {}});
    steps.push_back({mem("ce.max", f32, 0, logits), {}, {}});
    steps.push_back({mem("ce.sub_max", 2 * f32, 0, logits), {}, {}});
    steps.push_back({mem("ce.exp", 2 * f32, 0, logits), {}, {}});
    steps.push_back({mem("ce.sum", f32, 0, logits), {}, {}});
    steps.push_back({mem("ce.normalise", 2 * f32, f32, logits), {mem("ce.grad", 2 * f32, 0, logits)}, {}});
  }

  bool fused_loss() const { return o_.fused_loss.value_or(o_.fused_elementwise); }

  /// The T×V/t logits on this device: in the activation type (lo) and in fp32.
  std::pair<double, double> logit_bytes() const {
    const double V = static_cast<double>(m_.vocab) / t_, elements = T_ * V;
    return {elements * ab_, elements * 4};
  }

  /// loss_working_bytes (layer_kernels.hpp), on lm_head's logits.
  LossWorkingSet loss_working_set() const {
    const auto [lo, f32] = logit_bytes();
    if (fused_loss()) return {lo + f32, lo};
    return {lo + 2 * f32, 2 * f32};
  }

  std::vector<Kernel> pass(LayerPass p, Recompute rc) const {
    std::vector<Kernel> out;
    switch (p) {
      case LayerPass::forward:
        for (const auto& st : steps) out.push_back(st.fwd);
        break;
      case LayerPass::backward_input:
        for (auto it = steps.rbegin(); it != steps.rend(); ++it)
          out.insert(out.end(), it->bwd_input.begin(), it->bwd_input.end());
        break;
      case LayerPass::backward_weight:
        for (auto it = steps.rbegin(); it != steps.rend(); ++it)
          out.insert(out.end(), it->bwd_weight.begin(), it->bwd_weight.end());
        break;
      case LayerPass::recompute:
        if (rc == Recompute::every_second_matmul) return every_second_matmul_rerun();
        if (rc == Recompute::none) break;
        for (const auto& st : steps)
          if (rc == Recompute::full || st.fwd.core_attention) out.push_back(st.fwd);
        break;
    }
    return out;
  }

  /// Per-op recompute (torchtitan's `op` policy, torchtitan/parallelisms/
  /// parallelize_llama.py, 2024: a fresh count per checkpointed block; aten.mm, SDPA and
  /// the TP reduce-scatter are saved "except every second mm", every other op is
  /// recomputed): the forward's ops rerun except the attention core and the
  /// odd-numbered matmuls, whose outputs were kept; a fused GEMM reruns the columns of
  /// its even-numbered parts.
  std::vector<Kernel> every_second_matmul_rerun() const {
    std::vector<Kernel> out;
    int count = 0;
    for (const auto& st : steps) {
      if (st.fwd.core_attention) continue;
      if (st.mm_parts.empty()) {
        out.push_back(st.fwd);
        continue;
      }
      for (double share : st.mm_parts) {
        if (++count % 2 != 0) continue;
        Kernel k = st.fwd;
        k.shape.n *= share;
        k.flops = k.shape.flops();
        k.executed_flops = k.flops;
        k.saved_bytes = 0;
        out.push_back(k);
      }
    }
    return out;
  }

  double saved_bytes(Recompute rc) const {
    if (rc == Recompute::full) return Tn_ * h_ * ab_;  // the checkpointed layer input
    if (rc == Recompute::every_second_matmul) {
      // The layer input, the attention's output and the odd-numbered matmuls' outputs.
      double sum = Tn_ * h_ * ab_;
      if (std::any_of(steps.begin(), steps.end(), [](const Step& st) { return st.fwd.core_attention; }))
        sum += T_ * A_.context_width() / t_ * ab_;
      int count = 0;
      for (const auto& st : steps)
        for (double share : st.mm_parts)
          if (++count % 2 != 0) sum += st.fwd.shape.batch * st.fwd.shape.m * st.fwd.shape.n * share * ab_;
      return sum;
    }
    double sum = 0;
    for (const auto& st : steps)
      if (!(rc == Recompute::selective && st.fwd.saved_inside_core_attention)) sum += st.fwd.saved_bytes;
    return sum;
  }

private:
  const ModelSpec& m_;
  const KernelOptions& o_;
  double s_ = 0, sq_ = 0, h_ = 0, t_ = 1, ab_ = 2, T_ = 0, Tn_ = 0, kv_ = 0;  // kv_: K + V width, all heads
  AttentionShape A_;
};

}  // namespace

std::vector<Kernel> layer_pass_kernels(const ModelSpec& m, int layer, const KernelOptions& o, LayerPass pass) {
  Builder b(m, o);
  b.layer(layer);
  return b.pass(pass, o.recompute);
}

double layer_activation_bytes(const ModelSpec& m, int layer, const KernelOptions& o) {
  Builder b(m, o);
  b.layer(layer);
  return b.saved_bytes(o.recompute);
}

namespace {
/// One part of the model outside its layers (a Builder member that adds its steps):
/// its kernels for a pass, or the bytes it keeps for the backward.
using BuilderPart = void (Builder::*)();
std::vector<Kernel> part_kernels(const ModelSpec& m, const KernelOptions& o, LayerPass pass, BuilderPart part) {
  Builder b(m, o);
  (b.*part)();
  return b.pass(pass, Recompute::none);
}
double part_saved_bytes(const ModelSpec& m, const KernelOptions& o, BuilderPart part) {
  Builder b(m, o);
  (b.*part)();
  return b.saved_bytes(Recompute::none);
}
}  // namespace

std::vector<Kernel> embedding_pass_kernels(const ModelSpec& m, const KernelOptions& o, LayerPass pass) {
  return part_kernels(m, o, pass, &Builder::embedding);
}
std::vector<Kernel> lm_head_pass_kernels(const ModelSpec& m, const KernelOptions& o, LayerPass pass) {
  return part_kernels(m, o, pass, &Builder::lm_head);
}
std::vector<Kernel> mtp_entry_pass_kernels(const ModelSpec& m, const KernelOptions& o, LayerPass pass) {
  return part_kernels(m, o, pass, &Builder::mtp_entry);
}
double embedding_activation_bytes(const ModelSpec& m, const KernelOptions& o) { return part_saved_bytes(m, o, &Builder::embedding); }
double lm_head_activation_bytes(const ModelSpec& m, const KernelOptions& o) { return part_saved_bytes(m, o, &Builder::lm_head); }
LossWorkingSet loss_working_bytes(const ModelSpec& m, const KernelOptions& o) { return Builder(m, o).loss_working_set(); }
double mtp_entry_activation_bytes(const ModelSpec& m, const KernelOptions& o) { return part_saved_bytes(m, o, &Builder::mtp_entry); }

ComputeBreakdown pass_breakdown(const ModelSpec& m, int first_layer, int layer_count, bool with_embedding,
                                bool with_lm_head, const KernelOptions& o, LayerPass pass,
                                const ComputeProfile& profile, const GpuSpec& gpu) {
  // Execution order of a stage: embedding, layers, LM head forward; the reverse backward.
  const bool backward = pass == LayerPass::backward_input || pass == LayerPass::backward_weight;
  std::vector<Kernel> kernels;
  auto append = [&](std::vector<Kernel> ks) { kernels.insert(kernels.end(), ks.begin(), ks.end()); };
  if (with_embedding && !backward) append(embedding_pass_kernels(m, o, pass));
  if (with_lm_head && backward) append(lm_head_pass_kernels(m, o, pass));
  for (int i = 0; i < layer_count; ++i) {
    const int layer = backward ? first_layer + layer_count - 1 - i : first_layer + i;
    append(layer_pass_kernels(m, layer, o, pass));
  }
  if (with_lm_head && !backward) append(lm_head_pass_kernels(m, o, pass));
  if (with_embedding && backward) append(embedding_pass_kernels(m, o, pass));
  time_kernels(profile, gpu, kernels, o.activation_bytes, o.dispatch_overhead_s);
  return breakdown(kernels);
}

}  // namespace ls::wl

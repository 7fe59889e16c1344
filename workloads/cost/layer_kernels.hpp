// workloads/cost/layer_kernels.hpp — each layer pass as the kernels a real framework runs
// (Megatron-LM conventions), for one micro-batch on one device of a tp-way group:
// GEMMs by shape, the attention core (FlashAttention or the unfused form of older
// Megatron-LM / DeepSpeed runs), memory-bound kernels (norms, bias + activation,
// dropout + residual add, rotary embeddings) fused or not, the embedding, the LM head
// with an fp32 cross-entropy, and what each kernel keeps for the backward.
//
// Conventions (model.hpp): gelu -> GPT block (biases, LayerNorm, learned positions);
// swiglu -> Llama block (no biases, RMSNorm, RoPE, GQA through kv_heads).
// FLOP conservation: the counted FLOPs of each pass's GEMM and attention kernels equal
// layer_costs() / lm_head_costs() in model.cpp (forward, backward_input,
// backward_weight, recompute); memory-bound kernels count no FLOPs.
// Activation memory (layer_activation_bytes) is the sum of what the forward kernels keep,
// as Korthikanti et al. 2022 count it: main tensors only (per-row statistics such as
// norm mean/rstd and the attention log-sum-exp are O(b·s) and ignored). Unfused, dropout
// on, no fusion, the GPT block gives sbh(34 + 5as/h) with t = 1, sbh(10 + 24/t + 5as/(ht))
// with TP and sbh(34 + 5as/h)/t with TP + SP; FlashAttention keeps no s×s tensor; with
// dropout 0 the masks (and the dropout outputs) are not kept. Under FP8 compute the
// linear layers keep their inputs quantized (1 byte per element; low_precision.hpp).
#pragma once

#include <vector>

#include "workloads/cost/kernels.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

enum class LayerPass { forward, backward_input, backward_weight, recompute };

struct KernelOptions {
  int microbatch_size = 1;   // b, sequences
  int tp = 1;
  int ep = 1;                // expert-parallel group (MoE layers)
  int expert_tp = 0;         // the routed experts' tensor parallelism (0: tp); layout.hpp expert_tp_of
  /// Context parallelism: this device holds s/cp tokens of each sequence (2 of its 2·cp
  /// chunks, so the causal work is balanced) and attends them to all s keys.
  int cp = 1;
  bool sequence_parallel = false;
  AttentionKind attention = AttentionKind::flash;
  bool fused_elementwise = true;  // fused norm, bias+activation, bias+dropout+add, softmax, RoPE
  std::optional<bool> fused_loss;  // the loss (implementation.fused_loss); unset: fused_elementwise
  std::optional<bool> fused_norm;  // the norms (implementation.fused_norm); unset: fused_elementwise
  /// MoE token permutations as fused kernels (implementation.moe_permute_fusion); false: as
  /// PyTorch ops, as Megatron-Core's dispatcher runs them without its fused permutation.
  bool moe_permute_fusion = false;
  /// MoE router top-k, softmax, masks and aux loss as fused kernels
  /// (implementation.moe_router_fusion); false: as Megatron-Core's PyTorch ops.
  bool moe_router_fusion = false;
  /// Local experts' GEMMs as one kernel each (implementation.grouped_gemm per-expert);
  /// false: one grouped kernel for all of them.
  bool grouped_gemm_per_expert = true;
  double dropout = 0;        // probability; > 0 runs dropout kernels and keeps 1-byte masks
  bool causal = true;        // causal attention (FlashAttention skips the blocks above the diagonal)
  Recompute recompute = Recompute::none;
  int activation_bytes = 2;  // bytes per activation element (bf16)
  double dispatch_overhead_s = 0;  // the framework's host time per kernel (implementation_profile.hpp)
  /// fp8 / mxfp8: the linear layers' GEMMs in FP8 plus their quantize kernels (low_precision.hpp).
  ComputePrecision compute = ComputePrecision::bf16;
};

/// Kernels of one pass of layer `layer` (0-based; an MoE layer when layer_is_moe) in
/// execution order, untimed (time_kernels fills the times). recompute: the kernels rerun
/// before the backward — none: empty; selective: the core attention forward; full: the
/// whole forward. Throws std::invalid_argument for bad options or model shapes. O(1).
std::vector<Kernel> layer_pass_kernels(const ModelSpec& m, int layer, const KernelOptions& o, LayerPass pass);
/// Activation bytes layer `layer` keeps for the backward under o.recompute: the forward
/// kernels' saved bytes (selective drops those inside the core attention; full keeps only
/// the layer input, sequence-sharded under SP). O(1).
double layer_activation_bytes(const ModelSpec& m, int layer, const KernelOptions& o);

/// Embedding lookup (first stage): vocab-parallel gather (+ learned positions for GPT,
/// + dropout when o.dropout > 0). Its backward is all weight gradient (scatter-add), so
/// backward_input is empty. O(1).
std::vector<Kernel> embedding_pass_kernels(const ModelSpec& m, const KernelOptions& o, LayerPass pass);
/// Final norm, LM head GEMM (h × V/t) and the vocab-parallel cross-entropy in fp32
/// (last stage). recompute is empty (the head is never checkpointed). O(1).
std::vector<Kernel> lm_head_pass_kernels(const ModelSpec& m, const KernelOptions& o, LayerPass pass);
/// Activation bytes the embedding (dropout mask) and the LM head (final-norm input, LM
/// head input, the fp32 softmax of the loss: T·V/t·4) keep for the backward. O(1).
double embedding_activation_bytes(const ModelSpec& m, const KernelOptions& o);
double lm_head_activation_bytes(const ModelSpec& m, const KernelOptions& o);
/// What the loss holds while it runs, beyond what it keeps (T tokens of the micro-batch
/// on this device, V/t logits each, lo = T·V/t activation bytes, f32 = T·V/t·4):
///  * fused (o.fused_loss; Megatron's vocab-parallel cross-entropy, which works
///    in place on one fp32 copy of the logits and returns its gradient in that buffer):
///    forward lo + f32 (the logits and their fp32 copy, which becomes the kept softmax),
///    backward lo (the gradient cast back for the head's GEMMs);
///  * eager (PyTorch's F.cross_entropy on logits.float(), as torchtitan calls it):
///    forward lo + 2·f32 (the logits, their fp32 copy and log_softmax's fp32 output, the
///    kept one), backward 2·f32 (nll_loss's gradient and log_softmax's, both fp32,
///    beside the kept output).
/// The forward's is counted from before the op keeps anything, the backward's on top of
/// what is kept. O(1).
struct LossWorkingSet {
  double forward = 0, backward = 0;
};
LossWorkingSet loss_working_bytes(const ModelSpec& m, const KernelOptions& o);
/// An MTP module's entry (model.mtp_depth): the embedding lookup of the shifted
/// tokens, an RMSNorm of the previous hidden state and one of that embedding, their
/// concatenation and the 2h → h projection (split over tp, as the block's linears).
/// Its activation bytes keep the two norms' inputs and the projection's input. O(1).
std::vector<Kernel> mtp_entry_pass_kernels(const ModelSpec& m, const KernelOptions& o, LayerPass pass);
double mtp_entry_activation_bytes(const ModelSpec& m, const KernelOptions& o);

/// Timed breakdown of one pass over layers [first_layer, first_layer + layer_count), plus
/// the embedding and / or the LM head when asked (first / last pipeline stage): what one
/// op of the program builder costs, with breakdown().total() its duration. O(layer_count).
ComputeBreakdown pass_breakdown(const ModelSpec& m, int first_layer, int layer_count, bool with_embedding,
                                bool with_lm_head, const KernelOptions& o, LayerPass pass,
                                const ComputeProfile& profile, const GpuSpec& gpu);

}  // namespace ls::wl

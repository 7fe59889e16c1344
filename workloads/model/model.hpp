// workloads/model/model.hpp — model presets (published shapes) and transformer arithmetic:
// parameters, FLOPs and bytes per layer, embedding and LM head (docs/ARCHITECTURE.md, "Modelling conventions").
//
// Architecture conventions:
//  * activation gelu  -> GPT-style block: LayerNorm, learned absolute position
//    embeddings (seq_len · hidden), up/down MLP; biases on every linear layer and
//    LayerNorm unless model.bias says otherwise.
//  * activation swiglu -> Llama-style block: RMSNorm (weight only), RoPE (no position
//    parameters), gate/up/down MLP; no biases unless model.bias says otherwise.
//  * parallel_block: one norm per layer, attention and MLP side by side (GPT-J, PaLM).
//  * sliding_window: attention FLOPs over the window (attention_counted_keys).
//  * MoE (moe.experts > 0): layer i is an MoE layer when i ≥ dense_layers and
//    (i − dense_layers) % every_n_layers == every_n_layers − 1 (GShard / Switch: "every
//    other layer" is layers 1, 3, 5, ...; every_n_layers = 1: all layers past the
//    dense ones, DeepSeek-V3's layers 3..60); its MLP is replaced by a router
//    (hidden · experts) plus `experts` routed and `shared_experts` shared MLPs of
//    width expert_ffn_hidden (ffn_hidden when 0). FLOPs assume balanced routing:
//    every token visits top_k routed experts and every shared expert.
// Units: parameters and FLOPs as double counts, bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// gpt3-175b, llama3-8b, llama3-70b, llama3-405b, seed-70b, mixtral-8x7b, deepseek-v3.
std::optional<ModelSpec> model_preset(std::string_view name);
std::vector<std::string> model_preset_names();

/// Parameters of one dense transformer layer (attention + MLP + norms), whole (not tp-split).
double layer_params(const ModelSpec& m);
/// Parameters of layer `layer` (0-based): layer_params(m) unless it is an MoE layer.
double layer_params(const ModelSpec& m, int layer);
/// True when layer `layer` (0-based) is an MoE layer (see the convention above).
bool layer_is_moe(const ModelSpec& m, int layer);
/// Input embedding parameters: vocab · hidden, plus seq_len · hidden learned
/// positions for GPT-style (gelu) models.
double embedding_params(const ModelSpec& m);
/// Parameters of one routed expert MLP (expert_ffn_hidden wide).
double expert_params(const ModelSpec& m);
/// Output projection vocab · hidden; 0 when tied (the embedding table is reused).
double lm_head_params(const ModelSpec& m);
/// Final norm before the LM head: 2·hidden (LayerNorm) or hidden (RMSNorm).
double final_norm_params(const ModelSpec& m);
/// Sum over layers + embedding + final norm + LM head, and the multi-token-prediction
/// modules (block + entry each) when model.mtp_depth > 0.
double total_params(const ModelSpec& m);
/// Transformer blocks a step runs: the model's layers, then one per MTP module
/// (block index layers + d), all on the last pipeline stage's last chunk.
int block_count(const ModelSpec& m);
/// True for the block of an MTP module (index ≥ model.layers).
bool is_mtp_block(const ModelSpec& m, int block);
/// An MTP module's own parameters besides its block: the 2h × h projection and the
/// norms of the hidden state and of the embedding (2·norm_params).
double mtp_entry_params(const ModelSpec& m);
/// One layer's attention widths per token, over all heads (model.attention):
///  * mha / gqa: head dim d = head_dim (else h/a); queries a·d wide, K and V g·d each
///    (g = kv_heads);
///    one fused QKV projection and an output projection, both split over TP.
///  * mla (DeepSeek-V2 §2.1): per head nope + rope query/key features and v_head_dim
///    value features, K and V up-projected for every head (kv_heads = heads). The
///    down-projections to the latents are replicated on every TP rank, as Megatron-Core's
///    MLA builds them; the up-projections and the output projection are split.
struct AttentionShape {
  bool mla = false;
  double heads = 0, kv_heads = 0;
  double qk_head_dim = 0, v_head_dim = 0;
  double q_lora_rank = 0, kv_lora_rank = 0, rope_head_dim = 0;  // mla only
  double q_width() const { return heads * qk_head_dim; }
  double k_width() const { return kv_heads * qk_head_dim; }
  double v_width() const { return kv_heads * v_head_dim; }
  double context_width() const { return heads * v_head_dim; }  // the output projection's input
};
AttentionShape attention_shape(const ModelSpec& m);
/// Parameters of one layer's attention: projections (with biases when has_bias; MLA's
/// carry none) and, for MLA, its latents' RMSNorms.
double attention_params(const ModelSpec& m);

/// Biases on the linear layers and LayerNorms: ModelSpec::bias, else true for gelu.
bool has_bias(const ModelSpec& m);
/// 2 (pre-attention and pre-MLP), or 1 in the parallel block.
int norms_per_layer(const ModelSpec& m);
/// One norm's parameters: LayerNorm (gelu) weight plus, with biases, bias; RMSNorm weight.
double norm_params(const ModelSpec& m);
/// Keys per query the FLOP convention counts for attention over `keys` keys: `keys`
/// (the full s×s grid, Megatron's convention for causal attention), or under a
/// sliding window w < keys the same convention's 2w − w²/keys (twice the w·s − w²/2
/// pairs a causal window has, per query).
double attention_counted_keys(const ModelSpec& m, double keys);
/// The same for a window of `window` keys (0: none).
double window_counted_keys(double keys, double window);

/// Parameter tensors of layer `layer` as the frameworks hold them (one fused QKV
/// matrix, as Megatron and its DeepSpeed port define the attention): GPT-style
/// (gelu) QKV, projection, fc1, fc2 with a bias each and two LayerNorms of weight and
/// bias = 12; Llama-style (swiglu) QKV, projection, gate, up, down and two RMSNorm
/// weights = 7; an MoE layer's MLP is its router plus every routed and shared expert's
/// matrices. ZeRO-3 of DeepSpeed up to 0.5 issued one all-gather per such tensor.
int layer_parameter_tensors(const ModelSpec& m, int layer);
/// The modules holding them (each linear layer with its bias, each norm): 6 (gelu) or
/// 7 (swiglu) for a dense layer; DeepSpeed from 0.6 gathers one module at a time.
int layer_parameter_modules(const ModelSpec& m, int layer);
/// Of layer_parameter_tensors, the vectors (biases, norm weights and biases) and the
/// modules that hold only vectors (the norms).
int layer_vector_tensors(const ModelSpec& m, int layer);
/// Tensors of one norm: weight and bias (LayerNorm with biases) or the weight alone.
int norm_tensors(const ModelSpec& m);
/// Tensors of the input embedding: the token table and, GPT style, the position table.
int embedding_tensors(const ModelSpec& m);
int layer_norm_modules(const ModelSpec& m, int layer);
/// Elements of the widest vector of a layer on one of `tp` ranks: hidden (norms),
/// 3·hidden / tp (a fused QKV bias), ffn_hidden / tp (the MLP's first bias).
double widest_layer_vector(const ModelSpec& m, int tp);
/// Elements of each weight matrix of a layer (one per linear module), in forward order:
/// QKV, output projection, the MLP's matrices. Layers of other kinds (MoE, MLA, an MTP
/// block) get their matrices as equal shares of the layer's parameters.
std::vector<double> layer_matrix_numels(const ModelSpec& m, int layer);

/// Cost of one piece of work for one micro-batch of b sequences on one device of a
/// tp-way group. FLOPs are hardware FLOPs on that device; bytes are HBM bytes touched
/// (weights read + activations read/written), for the roofline.
struct Cost {
  double flops = 0;
  double bytes = 0;
  double rows = 0;   // matmul M dimension (tokens), for the efficiency floor; 0: not a matmul
};

struct LayerCosts {
  Cost forward;
  Cost backward;          // 2× forward FLOPs (input + weight gradients)
  Cost backward_input;    // zb-h1 split: input-gradient part (see layer_costs)
  Cost backward_weight;   // zb-h1 split: weight-gradient part
  Cost recompute;         // extra forward work under selective/full recompute
  double model_flops_fwd = 0;  // forward model FLOPs on this device (no recompute)
};

/// One dense transformer layer (docs/ARCHITECTURE.md): forward FLOPs per device
///   [2bsh(h + 2hg/a) + 4bs²h + 2bsh² + 4bshf (6bshf SwiGLU)] / tp.
/// backward = 2 × forward, split so that backward_weight = the linear layers'
/// forward FLOPs (dW = Xᵀ·dY, one GEMM per linear) and backward_input = linear
/// forward FLOPs + 2 × the attention-core FLOPs (4bs²h/tp: scores and context have
/// no weights, so both of their backward GEMMs are input gradients). The two halves
/// sum to backward exactly.
/// recompute: none -> 0; full -> one forward; selective -> the attention core
/// 4bs²h/tp (Korthikanti et al. 2022 recompute QKᵀ, softmax, dropout, ·V).
/// Bytes: weights read (params/tp · activation_bytes: bf16 compute copies) plus an
/// element count of activations read and written per token, assuming fused
/// (flash-style) attention that never writes the s×s scores to HBM.
/// rows = b·s (sequence parallelism gathers the sequence before every matmul).
/// sequence_parallel only changes where norms/dropout run, not FLOPs.
LayerCosts layer_costs(const ModelSpec& m, int microbatch_size, int tp, bool sequence_parallel, Recompute rc,
                       int activation_bytes);
/// Same for layer `layer` (0-based), MoE-aware: an MoE layer on an ep-way expert
/// group holds experts/ep experts (weight bytes) and, under balanced routing,
/// processes b·s·top_k token-expert pairs per device (FLOPs do not depend on ep).
LayerCosts layer_costs(const ModelSpec& m, int layer, int microbatch_size, int tp, int ep, bool sequence_parallel,
                       Recompute rc, int activation_bytes);

/// Embedding lookup (first stage) and LM head + loss (last stage), per device.
/// Embedding: no FLOPs counted (a gather), bytes of the lookup (vocab-parallel:
/// each device gathers its shard's rows, writes b·s·h); rows = 0; backward is all
/// weight gradient (scatter-add), backward_input = 0.
LayerCosts embedding_costs(const ModelSpec& m, int microbatch_size, int tp, int activation_bytes);
/// LM head: final norm + logits 2bshV/tp forward (softmax and cross-entropy are
/// element-wise: bytes only, no FLOPs, so MFU == HFU without recompute); backward
/// 2 × forward split evenly (dX = dZ·W and dW = dZᵀ·X are the same size).
LayerCosts lm_head_costs(const ModelSpec& m, int microbatch_size, int tp, int activation_bytes);
/// An MTP module's entry, per device: the embedding lookup of the shifted tokens, two
/// norms and the projection [h_prev; emb] (2h) → h, 2·b·s·2h·h/tp FLOPs forward;
/// backward 2 × forward split evenly. Rows b·s.
LayerCosts mtp_entry_costs(const ModelSpec& m, int microbatch_size, int tp, int activation_bytes);

/// Megatron-LM model FLOPs of one step for GPT-style models:
/// 72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)), B = global batch in sequences.
double megatron_step_flops(const ModelSpec& m, double global_batch);

/// Model FLOPs of one step for any model (GQA, SwiGLU, MoE):
/// 3 × (Σ_layers forward model FLOPs + logits 2·s·h·V) × B, B = global batch in
/// sequences (forward + 2× backward, no recompute); each MTP module adds its block,
/// its entry projection and the logits again. Equals megatron_step_flops for GPT
/// shapes (f = 4h, g = a, dense, no MTP). O(layers).
double model_step_flops(const ModelSpec& m, double global_batch);

}  // namespace ls::wl

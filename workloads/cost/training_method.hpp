// workloads/cost/training_method.hpp — what a fine-tuning method changes: which parameters
// are trained (the rest are frozen: bf16 weights only, no gradient, master copy or
// optimizer moments, no weight-gradient GEMM, no data-parallel gradient traffic, no
// ZeRO-1/2 weight gather), and LoRA's low-rank adapters (Hu et al. 2021, "LoRA:
// Low-Rank Adaptation of Large Language Models"): parameters, kernels, activations.
//
// Frozen parts (training.frozen): embedding, head (LM head), attention (QKV and output
// projection), mlp (MLP, MoE router, experts), norms, layers (attention + mlp + norms).
// Under training.method: lora the whole base model is frozen and only the adapters train.
// pretrain and full-finetune train everything but the frozen parts: they cost the same.
//
// LoRA on a linear Y = X·W (in → out) adds Y += (alpha/r)·(X·A)·B with A: in×r, B: r×out.
// Under tensor parallelism the adapter follows its base linear (as Megatron-style LoRA
// shards it): column-parallel targets (qkv, fc1) keep A whole (h×r) and split B
// (r×out/t); row-parallel targets (proj, fc2) split A (in/t×r) and keep B whole (r×h).
// The all-reduce of a row-parallel adapter's T×r partial product is not modelled (r/h of
// the layer's own TP traffic). Targets fc1/fc2 adapt dense MLPs only: routed experts of
// MoE layers keep no adapters. Cost: O(1) per query (parameter_split: O(layers)).
#pragma once

#include <vector>

#include "workloads/cost/kernels.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/model/memory.hpp"
#include "workloads/spec/scenario_issue.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// Names training.method and training.frozen accept.
const char* training_method_name(TrainingMethod m);
const std::vector<std::string>& frozen_part_names();
const std::vector<std::string>& lora_target_names();

/// Is part `name` (one of frozen_part_names) frozen under `t`? lora freezes every part.
bool is_frozen(const TrainingSpec& t, std::string_view part);

/// Whole-model parameter counts: trained (base parameters trained + adapters), frozen
/// (base parameters not trained), adapters (LoRA, included in trained).
struct ParameterSplit {
  double trained = 0, frozen = 0, adapters = 0;
};
ParameterSplit parameter_split(const Scenario& s);

/// LoRA adapter parameters of layer `layer` on one device of a tp-way group (0 unless
/// training.method is lora). O(1).
double lora_params_on_device(const Scenario& s, int layer);
/// Trained fraction of the base parameters of layer `layer`'s dense part (attention,
/// norms, router, shared experts, dense MLP) and of its routed experts. O(1).
double trained_fraction_dense(const Scenario& s, int layer);
double trained_fraction_experts(const Scenario& s);

/// Parameter state of `trained` and `frozen` parameters on one device: the trained
/// ones as state_bytes (ZeRO stage `zero` over `dp`), the frozen ones their weights
/// only (sharded over dp under ZeRO-3, as FSDP shards frozen weights too). O(1).
StateBytes training_state_bytes(double trained, double frozen, const PrecisionSpec& prec, int zero, int dp);

/// Which kernels a pass list belongs to.
enum class KernelPart { layer, embedding, head };

/// One pass's kernels rewritten for the training method: weight-gradient kernels of
/// frozen parts removed; LoRA's kernels appended (forward: optional input dropout, X·A,
/// (XA)·B, scale-and-add; backward_input: both dgrad GEMMs and the add into dX;
/// backward_weight: both wgrad GEMMs; recompute: the forward ones under full
/// recompute). `flops_delta` gets the counted-FLOP change (added minus removed), so the
/// caller can keep model.hpp's FLOP bookkeeping in step. Unchanged for pretraining with
/// nothing frozen. O(kernels).
std::vector<Kernel> training_kernels(const Scenario& s, int layer, KernelPart part, LayerPass pass, const KernelOptions& o,
                                     std::vector<Kernel> base, double& flops_delta);

/// Activation bytes LoRA's forward kernels keep for the backward of layer `layer` per
/// micro-batch (the T×r product X·A per target, and the dropout mask and dropped input
/// per target when lora.dropout > 0); `ignore_recompute`: as if nothing were recomputed
/// (full recompute keeps only the layer input). O(targets).
double lora_activation_bytes(const Scenario& s, int layer, const KernelOptions& o, bool ignore_recompute = false);

/// The rules of training.*, checkpoint.* and failures.* (resolve() reports them):
/// checkpoint needs `every` and a storage bandwidth; failures need a checkpoint; a LoRA
/// rank at most the hidden size; something left to train. O(layers).
std::vector<ScenarioIssue> training_issues(const Scenario& s);

}  // namespace ls::wl

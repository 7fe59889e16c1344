// workloads/model.hpp — model presets (published shapes) and transformer arithmetic:
// parameters, FLOPs and bytes per layer, embedding and LM head (DESIGN.md formulas).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/spec.hpp"

namespace ls::wl {

/// gpt3-175b, llama3-8b, llama3-70b, llama3-405b, seed-70b (and MoE presets later).
std::optional<ModelSpec> model_preset(std::string_view name);
std::vector<std::string> model_preset_names();

/// Parameters of one transformer layer (attention + MLP + norms), whole (not tp-split).
double layer_params(const ModelSpec& m);
/// Input embedding parameters (vocab · hidden); the LM head adds as many unless tied.
double embedding_params(const ModelSpec& m);
double lm_head_params(const ModelSpec& m);  // 0 when tied
double total_params(const ModelSpec& m);

/// Cost of one piece of work for one micro-batch of b sequences on one device of a
/// tp-way group. FLOPs are hardware FLOPs on that device; bytes are HBM bytes touched
/// (weights read + activations read/written), for the roofline.
struct Cost {
  double flops = 0;
  double bytes = 0;
  double rows = 0;   // matmul M dimension (tokens), for the efficiency floor
};

struct LayerCosts {
  Cost forward;
  Cost backward;          // 2× forward FLOPs (input + weight gradients)
  Cost backward_input;    // zb-h1 split: input-gradient half
  Cost backward_weight;   // zb-h1 split: weight-gradient half
  Cost recompute;         // extra forward work under selective/full recompute
  double model_flops_fwd = 0;  // forward model FLOPs on this device (no recompute)
};

LayerCosts layer_costs(const ModelSpec& m, int microbatch_size, int tp, bool sequence_parallel, Recompute rc,
                       int activation_bytes);
/// Embedding lookup (first stage) and LM head + loss (last stage), per device.
LayerCosts embedding_costs(const ModelSpec& m, int microbatch_size, int tp, int activation_bytes);
LayerCosts lm_head_costs(const ModelSpec& m, int microbatch_size, int tp, int activation_bytes);

/// Megatron-LM model FLOPs of one step for GPT-style models:
/// 72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)), B = global batch in sequences.
double megatron_step_flops(const ModelSpec& m, double global_batch);

}  // namespace ls::wl

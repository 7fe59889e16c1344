// workloads/model/memory.hpp — per-device memory arithmetic: parameter state under ZeRO
// and activations per layer (Korthikanti et al. 2022). Units: bytes.
#pragma once

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// Per-device bytes of each parameter-state term.
struct StateBytes {
  double weights = 0, gradients = 0, master = 0, optimizer = 0;
  double total() const { return weights + gradients + master + optimizer; }
};

/// State of `params_on_device` parameters (the device's tp·pp share, before ZeRO)
/// with `prec` bytes per parameter per term, sharded over `dp` ranks by ZeRO stage
/// `zero`: 1 shards master + optimizer moments, 2 also gradients, 3 also weights
/// (Rajbhandari et al. 2020). With zero = 3 the total is
/// (w + g + m + o)·params_on_device / dp — bytes·N/D when params_on_device = N/(tp·pp).
/// Throws std::invalid_argument for zero outside 0..3, dp < 1 or negative params. O(1).
StateBytes state_bytes(double params_on_device, const PrecisionSpec& prec, int zero, int dp);

/// Activation bytes one transformer layer keeps for the backward pass, for one
/// micro-batch of `microbatch_size` sequences on one device (Korthikanti et al. 2022,
/// "Reducing Activation Recomputation in Large Transformer Models", Table 2; 16-bit
/// activations, s = seq_len, h = hidden, a = heads, t = tp, b = microbatch_size):
///   none, t = 1          : sbh(34 + 5as/h)
///   none, TP without SP  : sbh(10 + 24/t + 5as/(ht))
///   none, TP with SP     : sbh(34 + 5as/h) / t
///   selective with SP    : 34·sbh / t
///   selective without SP : sbh(10 + 24/t)
///   full                 : 2sbh (the layer input), / t with SP (the checkpointed
///                          input is sequence-sharded, as Megatron-LM stores it)
///   every-second-matmul  : 2sbh (/ t with SP) + 14sbh/t: the input, q, v, the
///                          attention output and the MLP's up projection (4h wide)
/// all × b. The formulas are the paper's GPT block (f = 4h, MHA); they are used
/// unchanged for other shapes. With t = 1 the with/without-SP rows coincide. O(1).
double activation_bytes_per_layer(const ModelSpec& m, int microbatch_size, int tp, bool sequence_parallel, Recompute rc);

}  // namespace ls::wl

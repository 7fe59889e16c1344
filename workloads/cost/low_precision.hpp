// workloads/cost/low_precision.hpp — FP8 compute (precision.compute): which GEMMs run in FP8
// and what the quantization around them costs, as TransformerEngine runs them.
//
// Under fp8 and mxfp8 the GEMMs of the linear layers (QKV, attention output, MLP / expert
// up and down: forward, dgrad and wgrad) run at the part's dense FP8 peak
// (kernels.hpp fp8_gemm_time); the attention core, the LM head and the MoE router stay in
// bf16 (Megatron-Core with TransformerEngine: TE modules are the linear layers only).
// Each FP8 linear quantizes its input in the forward and its output gradient in the
// backward, as memory-bound kernels on the bf16 tensor (bytes per element below):
//  * fp8, per-tensor current scaling (the scale is the tensor's amax, taken in the same
//    step): an amax pass (read 2 B) and a fused cast + transpose (read 2 B, write the
//    row-major and the transposed 1-byte copies the forward and the wgrad GEMM read):
//    2 + 2 + 2·1 = 6 B per element.
//  * mxfp8, block scaling (one E8M0 scale per 32 elements, computed inside the
//    quantize kernel, no separate amax pass): read 2 B, write row-wise and column-wise
//    1-byte copies with their scales: 2 + 2·(1 + 1/32) = 4.0625 B per element.
//  * fp8-blockwise, DeepSeek-V3's fine-grained scaling (DeepSeek-AI 2024, §3.3.2): one
//    fp32 scale per 1×128 tile of an activation or gradient (computed online in the
//    quantize kernel) and per 128×128 block of a weight; accumulation promoted to fp32 on
//    the CUDA cores every 128 elements of K. Bytes as mxfp8 (a 4-byte scale per 128 is
//    1/32 B per element): 2 + 2·(1 + 4/128) = 4.0625 B. Its GEMMs run at the part's
//    per-tensor FP8 fraction: the report calls the promotion's cost minimal, and
//    DeepGEMM's warp-specialised kernels overlap it with the tensor-core MMAs (an
//    assumption: no measured per-tensor / blockwise pair on one part was found). Hopper
//    runs it in software: no MX formats needed.
// Weights are quantized once per step, not per micro-batch (TE caches the FP8 weight
// across micro-batches); that O(parameters) cast is not modelled. FLOPs are unchanged
// (quantize kernels count none): MFU keeps the model's FLOPs, against the bf16 peak.
#pragma once

#include <optional>
#include <string_view>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// True for fp8, mxfp8 and fp8-blockwise: the linear layers' GEMMs run in FP8.
constexpr bool fp8_gemms(ComputePrecision c) {
  return c == ComputePrecision::fp8 || c == ComputePrecision::mxfp8 || c == ComputePrecision::fp8_blockwise;
}

/// HBM bytes per element of a bf16 tensor quantized for an FP8 GEMM (see above); 0 when
/// the GEMMs are not FP8.
double quantize_bytes_per_element(ComputePrecision c);

/// Bytes per element of the input an FP8 linear keeps for its wgrad GEMM: TE saves the
/// quantized copy, not the bf16 tensor (NVIDIA/TransformerEngine,
/// transformer_engine/pytorch/module/linear.py, `_Linear` forward: the input quantizer's
/// column-wise copy is what is cached for the backward; with a sequence-parallel gather
/// under per-tensor scaling, the row-wise local copy). fp8: 1 B; mxfp8: 1 + 1/32 B (the
/// block scales); fp8-blockwise: 1 + 4/128 B. 0 when the GEMMs are not FP8. The activations around the linears (norm
/// inputs, the attention core's Q, K, V, the activation function's input) stay bf16.
double fp8_saved_bytes_per_element(ComputePrecision c);

/// "bf16", "fp16", "fp8", "mxfp8", "fp8-blockwise"; and back (nullopt for another name).
std::string_view compute_precision_name(ComputePrecision c);
std::optional<ComputePrecision> parse_compute_precision(std::string_view name);

}  // namespace ls::wl

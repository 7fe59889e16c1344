// workloads/build/offload.hpp — what moves to host memory over the GPU's PCIe link, and what
// it costs (layout.offload).
//
// Activation offload (Megatron-Core's CPU offloading, DeepSpeed activation
// checkpointing with cpu_checkpointing): during the forward the saved activations of
// each layer are copied to the host on a copy stream, overlapped with the next
// layer's forward; the forward of layer l+2 waits for the copy of layer l (a double
// buffer), which then frees it. The last two layers of each model chunk stay on the
// GPU (the backward needs them at once). In the backward, layer l's activations are
// prefetched once the backward of layer l+2 is done, and layer l's backward waits for
// them. Not modelled with schedule zb-h1 (validation rejects it).
//
// Optimizer offload (DeepSpeed ZeRO-Offload, Ren et al. 2021): master weights and
// Adam moments live on the host; after the last gradient reduction the device's
// gradient shard goes down (D2H), the CPU runs Adam, the updated weights come back
// (H2D). The three run back to back on the compute stream's critical path.
// DeepSpeed's ZeRO-3 instead copies each gradient shard down as soon as its bucket's
// reduce-scatter is done, in the backward's gradient hook, with a copy that is not
// non-blocking (deepspeed/runtime/zero/stage3.py, __partition_grads: the
// fp32_grad_tensor.copy_(grad_buffer) of the gradient-accumulation boundary, v0.6.0 to
// v0.10.0 at least): the host, which launches the backward, waits for that bucket's
// reduction and copy, so the backward's compute waits for every reduction of the last
// micro-batch (implementation.blocking_offload_copies; gradient_shards_copied_in_backward).
//
// Copies use the GPU's PCIe link (cluster.inter_node.pcie_bandwidth, the same x16
// link the GPU ↔ NIC hop models) at kPcieCopyEfficiency of its rate. Units: bytes,
// bytes/s, seconds. Cost: O(1).
#pragma once

#include "workloads/build/program_builder.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// Achieved / nominal rate of a pinned-memory cudaMemcpyAsync over PCIe: ~50–55 GB/s of
/// Gen5 x16's 64 GB/s and ~25 of Gen4's 32 GB/s (NVIDIA nvbandwidth and CUDA
/// bandwidthTest, pinned host memory) -> 0.8; bounds 0.6–0.9.
inline constexpr double kPcieCopyEfficiency = 0.8;

/// Host DRAM bandwidth available to one GPU's CPU Adam: a DGX H100 socket (Xeon 8480C)
/// has 8 channels of DDR5-4800 = 307 GB/s peak (JEDEC: 4800 MT/s × 8 B × 8), STREAM
/// reaches ~75 % of it, and 4 GPUs share a socket -> 307·0.75/4 ≈ 57.6 GB/s.
/// Bounds 20–150 GB/s (DDR4 two-socket hosts to Grace's LPDDR5X).
inline constexpr double kHostMemoryBandwidthPerGpu = 57.6e9;

/// Bytes/s of one GPU ↔ host copy.
double pcie_copy_rate(const Scenario& s);
/// Seconds to copy `bytes` between GPU and host.
double pcie_copy_seconds(const Scenario& s, double bytes);

/// CPU Adam on `params` parameters: memory-bound, reading the gradient, reading and
/// writing master weights and both moments, writing the 16-bit weights:
/// params·(g + 2·(m + o) + w) bytes at kHostMemoryBandwidthPerGpu.
double cpu_optimizer_seconds(const Scenario& s, double params);

/// ZeRO-3 with optimizer offload as DeepSpeed runs it (blocking_offload_copies, the
/// gradient reductions beside the backward): each bucket's gradient shard goes to the host
/// right after its reduce-scatter, and the backward waits for both (see above).
bool gradient_shards_copied_in_backward(const Scenario& s);

/// Optimizer offload's PCIe bytes per step, at the step's end, for an update of `params`
/// parameters: the gradient shard down plus the updated weight shard up, params·(g + w);
/// params·w where the gradient shards went down during the backward.
double optimizer_offload_bytes(const Scenario& s, double params);

/// Bytes one device of the busiest stage moves over its PCIe link per step: the
/// activation copies of the program (Work::offload ops) plus the optimizer offload's
/// gradients down and weights up. 0 without offload. O(ops).
double offload_pcie_bytes_per_step(const Scenario& s, const BuiltProgram& bp);

/// Sets res.offload (bytes per device per step and the PCIe link's utilisation over
/// `step_s`) when layout.offload moves anything.
void fold_offload(Result& res, const Scenario& s, const BuiltProgram& bp, double step_s);

/// Layers [begin, end) of a model chunk whose activations activation offload copies
/// to the host: all but the last two.
inline bool layer_offloaded(int layer, int chunk_begin, int chunk_end) {
  return layer >= chunk_begin && layer < chunk_end - 2;
}

}  // namespace ls::wl

// workloads/cost/kernels.hpp — the kernel as the unit of compute time: what one
// GPU kernel does (FLOPs, HBM bytes, GEMM shape, what it keeps for the backward), how
// long it takes on a GPU type (ComputeProfile + GpuSpec peaks), and the per-category
// breakdown of a list of kernels. The decomposition of a layer pass into kernels is in
// layer_kernels.hpp; the optimizer step's kernels are here.
//
// Time model (all rounded once per kernel to integer picoseconds):
//  * GEMM C[M×N] = A[M×K]·B[K×N] (× batch): tiles of tile_m × tile_n (either orientation,
//    whichever is faster, as a library heuristic picks among tile configurations) run one
//    per SM in waves; each tile costs 2·tile_m·tile_n·max(K, gemm_min_k) FLOPs at
//    peak · gemm_sustained_fraction / sm_count. An exactly tiled shape in whole waves
//    with K >= gemm_min_k reaches gemm_sustained_fraction; a last wave 1 % full costs a
//    whole wave. A grid smaller than one wave splits K over the idle SMs (split-K, down to
//    gemm_min_k-deep slices) and pays a reduction of fp32 partial sums through HBM.
//    Bounded below by its operand bytes through HBM.
//  * FP8 GEMM (Kernel::fp8, precision.compute fp8 / mxfp8): the same tiles at the dense FP8
//    peak · fp8_gemm_sustained_fraction; 1-byte A and B, a 2-byte (bf16) C.
//  * FlashAttention: executed FLOPs / (peak · flash_{fwd,bwd}_efficiency), bounded below
//    by its bytes.
//  * Memory-bound kernels: bytes / (hbm_bandwidth · hbm_fraction); a kernel that draws a
//    dropout mask is bound below by its draws: random_elements / dropout_rng_rate.
//  * Every kernel adds launch_overhead, reported in its own breakdown category.
#pragma once

#include <string_view>
#include <vector>

#include "sim/time.hpp"
#include "workloads/spec/compute_profile.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

enum class KernelCategory { gemm, attention, elementwise, logits, optimizer };

/// How a kernel's time is computed.
/// triton_*: flash_* timed at ComputeProfile::triton_{fwd,bwd}_efficiency.
enum class KernelKind { gemm, flash_forward, flash_backward, triton_forward, triton_backward, memory };

/// C[m×n] = A[m×k]·B[k×n], `batch` independent products (batched / grouped GEMM).
struct GemmShape {
  double m = 0, n = 0, k = 0;
  double batch = 1;
  double flops() const { return 2 * batch * m * n * k; }
};

struct Kernel {
  std::string_view name;  // a string literal, e.g. "qkv", "qkv.dgrad", "softmax"
  KernelCategory category = KernelCategory::elementwise;
  KernelKind kind = KernelKind::memory;
  GemmShape shape;              // kind == gemm
  double flops = 0;             // counted FLOPs (the model.cpp convention: MFU/HFU numerators)
  double executed_flops = 0;    // FLOPs the hardware executes (time_kernels fills it; flash: causal
                                // blocks skipped, backward 2.5 × forward)
  double causal_seq_len = 0;    // flash kernels: the sequence length of a causal mask; 0: not causal
  double attention_window = 0;  // flash kernels: sliding window in keys (0: none); flops count the window
  double bytes = 0;             // HBM bytes read + written
  double saved_bytes = 0;       // activation bytes kept for the backward (forward kernels)
  /// Its saved bytes live inside the core-attention region that selective recompute
  /// rebuilds (softmax output, dropout mask and output), so they are not kept then.
  bool saved_inside_core_attention = false;
  bool core_attention = false;  // part of the core-attention region (selective recompute reruns it)
  bool routed_expert = false;   // routed-expert work of an MoE layer (scales with a device's expert load)
  bool fp8 = false;             // kind == gemm: an FP8 GEMM (low_precision.hpp), timed at the FP8 peak
  /// Kernels this entry stands for, each with its launch: a batched GEMM the framework
  /// issues as one GEMM per batch member (per-expert grouped GEMMs) has `batch`.
  int launches = 1;
  /// Random numbers the kernel draws (a dropout forward: one per element of its mask).
  /// Counter-based RNG (Philox) is integer work beside the kernel's memory traffic; the
  /// slower of the two bounds the kernel (ComputeProfile::dropout_rng_rate).
  double random_elements = 0;
  sim::Time time;               // work, without the launch (time_kernels fills it)
  sim::Time launch;             // launch overhead (time_kernels fills it)
  sim::Time total() const { return time + launch; }
};

/// Achieved fraction of peak of a GEMM of this shape (tile and wave quantisation,
/// split-K, K ramp, sustained fraction; no memory bound, no split-K reduction).
/// In (0, gemm_sustained_fraction]. O(1).
double gemm_efficiency(const ComputeProfile& profile, const GemmShape& shape);
/// Time of a GEMM of this shape with `element_bytes`-wide operands, without launch:
/// max(compute at gemm_efficiency, operand bytes / achievable HBM bandwidth), plus the
/// split-K reduction when there is one. O(1).
sim::Time gemm_time(const ComputeProfile& profile, const GpuSpec& gpu, const GemmShape& shape, int element_bytes);
/// An FP8 GEMM of this shape, without launch: gemm_time's model at gpu.fp8_peak_flops ·
/// fp8_gemm_sustained_fraction, 1-byte A and B, a 2-byte C. Throws std::invalid_argument
/// when the GPU has no FP8 rate. O(1).
sim::Time fp8_gemm_time(const ComputeProfile& profile, const GpuSpec& gpu, const GemmShape& shape);
/// bytes / (hbm_bandwidth · hbm_fraction), without launch. O(1).
sim::Time memory_time(const ComputeProfile& profile, const GpuSpec& gpu, double bytes);
/// A memory-bound kernel that also draws `random_elements` random numbers:
/// max(memory_time(bytes), random_elements / dropout_rng_rate), without launch. A rate of
/// 0 leaves only the memory bound. O(1).
sim::Time memory_kernel_time(const ComputeProfile& profile, const GpuSpec& gpu, double bytes, double random_elements);
/// FlashAttention kernel time on `executed_flops`, without launch. O(1).
sim::Time flash_time(const ComputeProfile& profile, const GpuSpec& gpu, double executed_flops, double bytes,
                     bool backward, bool triton = false);
/// Fraction of the s×s score blocks a causal attention kernel computes: (n+1)/(2n) for
/// n = ceil(seq_len / block) (the diagonal blocks are computed whole); 1 when not causal.
/// With a sliding window of w keys, query block i computes min(i, c) + 1 key blocks,
/// c = ceil((w − 1) / block) (the band's blocks, partly masked ones whole), over n².
double causal_block_fraction(double seq_len, int block, bool causal, double window = 0);

/// Fills time and launch of every kernel (work time by kind, then one launch overhead
/// each; a kernel shorter than the host's `dispatch_overhead_s` waits for the host:
/// launch = max(launch_overhead, dispatch − work)). Throws std::invalid_argument when a kernel has work for a rate that is not
/// positive (peak, HBM bandwidth or an efficiency of 0). O(kernels).
void time_kernels(const ComputeProfile& profile, const GpuSpec& gpu, std::vector<Kernel>& kernels,
                  int element_bytes = 2, double dispatch_overhead_s = 0);

/// Seconds (integer picoseconds) of a list of kernels by category; `launch` holds every
/// kernel's launch overhead, so total() equals the sum of Kernel::total() exactly.
struct ComputeBreakdown {
  sim::Time gemm, attention, elementwise, logits, optimizer, launch;
  sim::Time total() const { return gemm + attention + elementwise + logits + optimizer + launch; }
  ComputeBreakdown& operator+=(const ComputeBreakdown& o);
};
ComputeBreakdown breakdown(const std::vector<Kernel>& kernels);
/// Sum of Kernel::total(). O(kernels).
sim::Time total_time(const std::vector<Kernel>& kernels);
double total_flops(const std::vector<Kernel>& kernels);
double total_bytes(const std::vector<Kernel>& kernels);

/// The optimizer step on the local shard of `params` parameters (after the last
/// micro-batch): gradient-norm clipping (an L2-norm read of the gradients; the clip
/// factor is folded into Adam when fused, else a separate scaling pass) and Adam/AdamW,
/// which reads gradients, the master weights (the weights themselves when prec.master is
/// 0) and both moments, and writes master, moments and the 16-bit compute copy.
/// Fused (multi-tensor apply): grad_norm reads g B/param; adam moves
/// g + 2·m + 2·o + w B/param (w only when a master copy exists), m = master bytes (or
/// weight bytes without one), o = optimizer (moment) bytes. Unfused: one kernel per
/// update (m, v, parameter, copy, norm, scale) with its own reads and writes. O(1).
std::vector<Kernel> optimizer_kernels(double params, const PrecisionSpec& prec, bool fused);

}  // namespace ls::wl

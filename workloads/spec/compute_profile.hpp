// workloads/spec/compute_profile.hpp — the kernel-level cost constants of one GPU type:
// what a GEMM, a FlashAttention kernel and a memory-bound kernel really
// sustain, and what a launch costs. Peak FLOP/s and HBM bandwidth stay in GpuSpec
// (datasheet figures); this profile holds only the fractions and shapes that turn them
// into kernel times. Every constant has a physical meaning, bounds, and a citation or a
// calibration origin (compute_profile.cpp); profile_constants() lists them by name so
// that a calibrator can read and write any of them without knowing the struct.
// Units: fractions of peak in [0, 1], element counts, seconds.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ls::wl {

struct ComputeProfile {
  std::string name;
  /// Streaming multiprocessors: how many GEMM output tiles run at once (one per SM).
  int sm_count = 108;
  /// Output tile of one thread block (CTA) of the library GEMM, in elements of C
  /// (rows × columns). Tile and wave quantisation are counted in these tiles.
  int tile_m = 256;
  int tile_n = 128;
  /// Achieved / dense peak of a GEMM whose tiles fill every SM in whole waves and
  /// whose K is deep (>= gemm_min_k): the library's best case on this part.
  double gemm_sustained_fraction = 0.8;
  /// The same for an FP8 GEMM (precision.compute fp8: one scale per tensor), of the dense FP8 peak
  /// (GpuSpec::fp8_peak_flops): the FP8 tensor-core pipe at twice the bf16 rate is harder
  /// to keep fed (operand loads, scaling in the epilogue), so it sits below the bf16 fraction.
  double fp8_gemm_sustained_fraction = 0.6;
  /// The same for an MXFP8 GEMM (precision.compute mxfp8: E8M0 block scales, one per 32
  /// elements of K, on both operands): the block-scaled MMA reads its scale factors into the
  /// tensor core beside every K slice, and the library swizzles them into that layout before
  /// the GEMM, so it sustains less of the same FP8 peak than a per-tensor-scaled GEMM.
  double mxfp8_gemm_sustained_fraction = 0.6;
  /// K depth below which a tile cannot hide its prologue (pipeline fill) and epilogue
  /// (writing C): a tile costs as long as a gemm_min_k-deep main loop. Elements.
  double gemm_min_k = 256;
  /// FlashAttention forward / backward: achieved / dense peak on the FLOPs the kernel
  /// executes (causal blocks skipped; backward counted as 2.5 × forward, as the
  /// FlashAttention papers count it because it recomputes QKᵀ).
  double flash_fwd_efficiency = 0.6;
  double flash_bwd_efficiency = 0.5;
  /// The same for LLM Foundry's Triton FlashAttention kernel (attention: triton) on
  /// this part: the same algorithm and FLOPs, its own code generation (no Hopper
  /// warp-group MMA / TMA), so its own efficiencies.
  double triton_fwd_efficiency = 0.5;
  double triton_bwd_efficiency = 0.3;
  /// The same for FlashAttention-2 (the flash-attn 2.x package): written for Ampere's
  /// warp-level mma.sync, it issues no Hopper warp-group MMA / TMA and no Blackwell tcgen05,
  /// so on those parts it sustains far less than FlashAttention-3 / cuDNN (flash_*). Used when
  /// the framework's `flash` attention is that package (ImplementationProfile::native_flash
  /// false, e.g. pytorch-fsdp as LLM Foundry ran it). On Ampere the two are the same kernel.
  double flash2_fwd_efficiency = 0.6;
  double flash2_bwd_efficiency = 0.5;
  /// FlashAttention-1 (the flash-attn 1.x package, attention: flash1) against
  /// FlashAttention-2 on the same part, forward and backward alike: 0.5 from Dao 2023
  /// (arXiv:2307.08691, abstract and §4.1: FlashAttention-2 is "around 2× faster", 50–73 %
  /// of the A100's peak where FlashAttention-1 reaches 25–40 %); bounds 0.34–0.8, the
  /// extremes of those two ranges' ratios. The same on every part, an assumption off
  /// Ampere (both are mma.sync kernels).
  double flash1_relative_speed = 0.5;
  /// Query/key block of the attention kernel: causal masking skips the blocks above
  /// the diagonal, n(n−1)/2 of n² blocks for n = ceil(s / block).
  int attention_block = 128;
  /// Achieved / datasheet HBM bandwidth of a streaming (memory-bound) kernel.
  double hbm_fraction = 0.88;
  /// Random numbers per second a dropout kernel draws (counter-based Philox, integer
  /// work on the SMs): a kernel that draws a mask takes at least elements / rate, however
  /// little memory it moves (kernels.hpp). FlashAttention's in-kernel dropout is not bound
  /// by it (its draws hide under the kernel's FLOPs; not measured here). The default, for a
  /// GPU given as a map, is the A100 preset's (compute_profile.cpp).
  double dropout_rng_rate = 92e9;
  /// GPU time between two dependent kernels (launch, ramp-up and drain): paid once per kernel.
  double launch_overhead_s = 4e-6;
  /// Thread blocks (CTAs) an NCCL collective's kernel holds, one per channel, each on an SM
  /// of its own for the collective's whole duration: compute that runs beside a collective
  /// has sm_count − collective_ctas SMs left (workloads/analysis/interference.hpp). 0: no
  /// interference (the default for a GPU given as a map).
  int collective_ctas = 0;
};

/// Compute time multiplier while a collective runs beside it: the same work on the SMs
/// the collective leaves, sm_count / (sm_count − collective_ctas). 1 when the collective
/// holds no SM; profile_bound_violations() refuses ctas of half the SMs or more. O(1).
double overlap_slowdown(const ComputeProfile& profile);

/// a100-40gb, a100-80gb, h100-sxm, h200, b200, b300, gb200, gb300 (the GPU preset names). nullopt otherwise.
std::optional<ComputeProfile> compute_profile_preset(std::string_view gpu_name);
std::vector<std::string> compute_profile_preset_names();

/// One calibratable constant: a name to address it by, what it means, its physical
/// bounds, and typed access to the profile field. `integer` constants (SM count, tile
/// and block sizes) are discrete: set() rounds, and a continuous fitter should skip them.
struct ProfileConstant {
  std::string_view name;
  std::string_view unit;
  std::string_view doc;
  double lower = 0;
  double upper = 0;
  bool integer = false;
  double (*get)(const ComputeProfile&) = nullptr;
  void (*set)(ComputeProfile&, double) = nullptr;
};

/// Every constant of ComputeProfile, in declaration order. O(1).
std::span<const ProfileConstant> profile_constants();
/// The constant called `name`, or nullptr. O(constants).
const ProfileConstant* find_profile_constant(std::string_view name);
/// One message per constant outside its bounds ("name = value outside [lo, hi]"); empty when all fit.
std::vector<std::string> profile_bound_violations(const ComputeProfile& profile);

}  // namespace ls::wl

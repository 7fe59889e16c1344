// workloads/spec/compute_profile.cpp — per-GPU kernel cost constants and their table.
//
// Sources (cited by the short names used below):
//  [MAMF]  S. Bekman, "Machine Learning Engineering", compute/accelerator/README.md,
//          "Maximum Achievable Matmul FLOPS comparison table" (github.com/stas00/ml-engineering):
//          best mean BF16 torch.matmul throughput over a brute-force shape search, 100
//          iterations after 50 warm-up: A100 SXM 271.2 of 312 TFLOP/s (86.9 %), H100 SXM
//          794.5 of 989 (80.3 %, "H200 is the same"), GH200 141 GB 828.6 (83.8 %),
//          B200 SXM 1745 of 2250 (77.6 %).
//  [MMB]   NVIDIA, "Matrix Multiplication Background User's Guide" (DU-09799-001, 2023),
//          §2.3 typical cuBLAS tile sizes (256×128 among the largest, most efficient), §3.1 tile
//          and §3.2 wave quantisation over A100's 108 SMs.
//  [FA2]   T. Dao, "FlashAttention-2: Faster Attention with Better Parallelism and Work
//          Partitioning", arXiv:2307.08691 (2023): 50–73 % of the A100's peak in the
//          forward pass, the backward pass less. The repository's benchmark script
//          (Dao-AILab/flash-attention, benchmarks/benchmark_flash_attention.py) counts
//          4·b·s²·heads·d forward FLOPs, halved when causal, and 2.5 × that backward: the
//          efficiencies below are on executed FLOPs of that kind.
//  [FA3]   J. Shah et al., "FlashAttention-3: Fast and Accurate Attention with Asynchrony
//          and Low-precision", arXiv:2407.08608 (2024): up to 740 TFLOP/s FP16 forward on
//          H100 (75 % of 989) at long sequences, 1.5–2.0× FlashAttention-2, which reaches
//          35 % of the H100's peak (Hopper features unused).
//  [PTB]   pytorch/benchmark pull request #2391 (2024), FA3 forward on H100, head dim 128,
//          16 heads, 16k tokens per batch: 430 / 517 / 566 / 590 / 614 / 621 TFLOP/s at
//          s = 0.5k / 1k / 2k / 4k / 8k / 16k (0.57–0.62 of 989 at 2–8k); #2296: the
//          FlashAttention-2 path of torch SDPA 287–304 TFLOP/s (0.29–0.31) on the same part.
//  [A100BW] NVIDIA developer forum, "Trouble to reach peak bandwidth of A100" (2025): a
//          read kernel reaches 1.80 of 2.04 TB/s (88 %, confirmed by Nsight Compute); the
//          best kernel of an NVIDIA GTC 2025 talk reached about 90 %.
//  SM counts: A100 108 SMs (NVIDIA A100 whitepaper), H100 SXM5 and H200 132 SMs (NVIDIA
//  H100 whitepaper; H200 is the same GH100 die), B200 148 SMs over two dies (as reported by
//  the CUDA device query in public Blackwell kernels).
// Constants with no public figure say "assumption; calibrate" and are what `layoutsim
// calibrate` fits first.
#include "workloads/spec/compute_profile.hpp"

#include <array>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

namespace ls::wl {

namespace {

ComputeProfile make(std::string name, int sms, int tile_m, int tile_n, double gemm_fraction, double min_k,
                    double flash_fwd, double flash_bwd, double triton_fwd, double triton_bwd, double hbm_fraction,
                    double launch_us, double fp8_fraction, double mxfp8_fraction, double flash2_fwd,
                    double flash2_bwd) {
  ComputeProfile p;
  p.fp8_gemm_sustained_fraction = fp8_fraction;
  p.mxfp8_gemm_sustained_fraction = mxfp8_fraction;
  p.flash2_fwd_efficiency = flash2_fwd;
  p.flash2_bwd_efficiency = flash2_bwd;
  p.name = std::move(name);
  p.sm_count = sms;
  p.tile_m = tile_m;
  p.tile_n = tile_n;
  p.gemm_sustained_fraction = gemm_fraction;
  p.gemm_min_k = min_k;
  p.flash_fwd_efficiency = flash_fwd;
  p.flash_bwd_efficiency = flash_bwd;
  p.triton_fwd_efficiency = triton_fwd;
  p.triton_bwd_efficiency = triton_bwd;
  p.attention_block = 128;  // FlashAttention-2/3 use 128-row query and key blocks for head dim 128
  p.hbm_fraction = hbm_fraction;
  p.launch_overhead_s = launch_us * 1e-6;
  return p;
}

// Why these numbers:
//  * gemm_sustained_fraction = [MAMF] efficiency of the part (the best-case shape is what
//    exact tiling reaches; the tile and wave model supplies the losses of other shapes).
//  * tile: [MMB] 256×128 on Ampere; Hopper and Blackwell library kernels use 128×256 per
//    SM (a warp-group MMA of 64×256 twice, or half of a 2-SM 256×256 tile).
//  * gemm_min_k 256: a 3–4 stage pipeline of 64-deep K slices plus the epilogue;
//    assumption; calibrate.
//  * flash: A100 0.62 fwd: [FA2] forward range 50–73 % (the top at 16k tokens; training
//    lengths of 2–8k sit mid-range). Hopper (H100, H200, H800) 0.60 fwd: [PTB] 0.57–0.62
//    at 2–8k tokens ([FA3]'s 75 % is its long-sequence best case). Backward A100 0.50:
//    below the forward in both papers, no figure checked here; assumption. Hopper 0.297
//    and both Blackwell figures: CALIBRATED, below.
//  * hbm_fraction: A100 0.88 [A100BW]; Hopper 0.90 (copy and triad kernels reach about
//    3.0–3.1 of 3.35 TB/s; [A100BW]'s ~90 % ceiling); B200 0.85: assumption; calibrate.
//  * launch_overhead: the gap between dependent kernels of an eager framework, a few µs:
//    4 µs on A100, 3 µs on Hopper and Blackwell (faster launch paths, CUDA graphs common).
//
// Physical constants (not fitted): hbm_fraction and launch_overhead at the cited values
// above; flash_{fwd,bwd} at the FlashAttention-2 (A100) / FlashAttention-3 and cuDNN
// (Hopper, what Megatron-Core runs) figures. The software stack's own costs live in
// implementation_profile.cpp (host dispatch per kernel, per-layer hooks, unfused ops).
//
// CALIBRATED (2026-12-01, `layoutsim calibrate validation/llm_foundry.yaml --gpu G --fit
// gemm_sustained_fraction,triton_fwd_efficiency,triton_bwd_efficiency --leave-out model`,
// ZeRO-3/2 FSDP runs of MPT 125m–70b, seq 512–65536, 8–512 GPUs, every row as
// implementation {preset: pytorch-fsdp, attention: triton | flash per the row}; the
// pytorch-fsdp constants held at implementation_profile.cpp's values, compute beside a
// collective then slowed by a fitted 1.70). Fitted: gemm_sustained_fraction and the Triton
// attention efficiencies.
//  * GEMM fraction 0.78 / 0.81 (A100 40 / 80 GB) and 0.67 (H100) of the boost-clock peak:
//    below [MAMF]'s best-shape, short-run figures, as sustained clocks under a training power
//    cap are; inside the bounds. (Before compute was slowed beside collectives the fits gave
//    0.74 / 0.77 / 0.59: the GEMM fraction absorbed the interference.)
//  * triton_fwd/bwd 0.31/0.34 and 0.51/0.26 (A100 40/80 GB: the same chip, the two fits
//    trade forward against backward, nearly collinear in step times), 0.24/0.16 (H100:
//    Triton without Hopper's warp-group MMA, well below FlashAttention-3).
//  NOT refitted (2026-12-05) when the 1.70 became the SM share (collective_ctas, 1.29 on
//  A100, 1.22 on H100): a refit lowers the GEMM fractions to 0.75 / 0.79 / 0.63, and on A100
//  Zero Bubble's kernel-level weight-gradient passes (GEMMs only, tests/test_kernel_profile.cpp)
//  then come out up to 8.6 % slow, where 0.81 holds them within 5 %: the refit would move
//  FSDP's own per-layer costs into a GPU constant. With the fractions kept: a100-40gb 78 runs,
//  mean |err| 4.2 %, max 27.2 %, signed −1.0 %; a100-80gb 61 runs, 3.7 %, 25.9 %, −1.1 %;
//  h100-sxm 77 runs, 4.1 %, 21.9 %, −2.9 % (3.9 / 3.7 / 3.7 % with the fitted 1.70): what
//  FSDP costs beyond the hooks of implementation_profile.cpp shows as that signed bias.
//  h200: no measured rows; the H100 fit carried over (same GH100 die and software).
//  h800: no measured rows; the H100 fit carried over (the same GH100 SXM compute; the
//  export part differs in its NVLink rate, a GPU preset figure, not a compute one).
//  Blackwell bf16 GEMM fraction: [MAMF]'s B200 figure on every Blackwell part (no BF16
//  Blackwell row to fit); SM counts: B200/GB200 148, B300/GB300 160 (NVIDIA technical blog
//  "Inside NVIDIA Blackwell Ultra", 2025).
//
// FP8 (fp8_gemm_sustained_fraction, of the dense FP8 peak; bounds 0.3–0.95, as the bf16
// fraction's but a lower floor: TransformerEngine's FP8 GEMMs pay scaling and a bf16
// output in the epilogue). H100 0.595: CALIBRATED 2026-12-06 (`layoutsim calibrate RUNS --gpu
// h100-sxm --fit fp8_gemm_sustained_fraction --leave-out model`, RUNS = the 22 H100 FP8 rows
// of the two fitted tables, validation/megatron_bridge.yaml (Megatron-Bridge / NeMo, TE FP8,
// Llama 2/3 7B–405B, 8–1,024 GPUs) and validation/llm_foundry.yaml (MPT 1B/3B)): fit 6.9 →
// 5.3 % mean, signed +5.1 → +0.5 %; leave-one-model-out 5.8 %. It had been an assumption,
// 0.55, a little below the bf16 fraction, which left every H100 FP8 table 5 % slow; 0.595
// stays below the bf16 0.666, as the scaling epilogue says it should. The held-out FP8 runs
// (torchtitan's float8 rows, H100 and H200) never saw the fit. H200 and H800 carry it (the
// same GH100 SM).
//
// Hopper attention backward (flash_bwd_efficiency; the `flash` kernel Megatron-Core runs:
// cuDNN fused attention, which TransformerEngine also keeps under context parallelism on
// sm90) 0.297: CALIBRATED 2026-12-06 (`layoutsim calibrate RUNS --gpu h100-sxm --fit
// flash_bwd_efficiency`, RUNS = validation/corpus/nemo_long_sequence.yaml (NeMo 24.03, Llama 2
// 7B FP8, 4K–1M tokens, 4–1,024 GPUs, cp up to 32: the attention core is a tenth of the 4K
// step and nine tenths of the 1M one) with the 16 Megatron-Bridge H100 rows): 25 rows 11.4 →
// 5.0 % mean, signed −7.9 → +1.9 %, leave-one-out 5.1 %; the long-sequence rows 20.7 → 2.3 %.
// It had been an assumption, 0.45. Forward and backward are collinear in every published row
// (each backward follows its forward; a joint fit runs the forward to 0.23, below
// FlashAttention-2), so the forward keeps its measured kernel figure ([PTB]) and the
// assumed backward takes the fit. End to end it sits below the kernel benchmarks' cuDNN
// backward; the fit also carries whatever else these steps spend per attention FLOP.
// H200 and H800 carry it (the same GH100 SM and software).
//
// Blackwell (b200, gb200, gb300): CALIBRATED 2026-12-01 on the Megatron-Bridge FP8 / MXFP8
// rows of validation/megatron_bridge.yaml (Llama 3 8B, 70B, 3.1 405B; 8–256 GPUs; TP, PP,
// VP, CP; releases 25.11–26.06), each type's fraction on that type's rows only (4 / 12 / 16
// runs), least squares on log(predicted/measured), with two constants shared by the
// three types because they are one SM design: the MXFP8/FP8 ratio and the attention
// efficiencies. Fitted, in order of the make() arguments below:
//  * fp8_gemm_sustained_fraction B200 0.604, GB200 0.604, GB300 0.811 of the dense FP8 peak:
//    the same tensor core held to a different sustained clock by each part's power
//    envelope (B200 1,000 W, GB200 1,200 W, GB300 1,400 W per GPU; datasheets in
//    hardware.cpp). On the 8B rows, where B200, GB200 and GB300 ran the same layout and
//    release, GB300 is 16 % faster than GB200 and GB200 only 1–3 % faster than B200 (the
//    datasheet peaks say 0 % and 11 %). B200 and GB200 come out equal: the 405B rows,
//    where GB200 ran a deeper pipeline, carry the rest of that difference.
//  * mxfp8_gemm_sustained_fraction = 0.895 × the FP8 one (B200 0.541, GB200 0.541, GB300 0.726):
//    block-scaled GEMMs load their E8M0 scales beside every K slice and TE swizzles them
//    first; every pair of FP8-CS / MXFP8 rows with one layout measures MXFP8 4–6 % slower.
//  * flash_fwd / flash_bwd 0.376 / 0.307 (the earlier assumption 0.55 / 0.45 × 0.68): TE's
//    cuDNN attention at seq 8192 with GQA as these releases ran it, below FlashAttention-4's
//    best case (~0.7 of the B200 bf16 peak forward). The fit puts the 8B rows' larger
//    attention share right; it also carries what else is not GEMM on these parts.
//  Fit: 32 runs, mean |error| 2.0 %, max 4.7 %; leave-one-model-out (8B, 70B, 405B each
//  refitted without its rows): 3.1 % (without the attention constants: fit 3.2 %, LOMO 8.3 %,
//  before the refit below). Refitted 2026-12-01 when the rows' gradients became bf16, as
//  the Megatron-Bridge recipes run them (grad_reduce_in_fp32 = False; validation/convert.py):
//  the first fit had priced fp32 gradient reduce-scatters (before: 0.59 / 0.57 / 0.78, 0.90,
//  0.37 / 0.30).
//  Refitted 2026-12-05 when compute beside a collective became the SM share (collective_ctas,
//  1.19 / 1.18 on these parts, where a fitted 1.70 had stood) and every step computes at the
//  slowest of its GPUs (implementation.compute_variability, 1.5 %: +2.1 % on 8 GPUs, +3.5 %
//  on 64, +4.3 % on 256): fit 2.1 %, max 5.3 %, leave-one-model-out 4.0 % (from 0.57 / 0.57 /
//  0.76, 0.89, 0.38 / 0.31; with the SM share alone 0.555 / 0.563 / 0.748, 0.892, 0.389 /
//  0.318, LOMO 3.6 %). The FP8 fractions rose by the noise the fit no longer has to carry.
//  Reproduce: `python3 validation/fit_blackwell.py` (calibrate fits one GPU at a time; the
//  script linearises each row around the presets and fits the three types jointly).
//  b300: no measured rows; B200's constants (HGX B300 at 1,100 W is nearer B200's power
//  envelope than GB300's), an assumption.
//
// FlashAttention-2 (flash2_*, the flash-attn 2.x package, e.g. LLM Foundry's attn_impl
// flash): A100 = flash_* (it is the A100 kernel, [FA2]); H100/H200 0.30 forward ([PTB]
// #2296: 0.29–0.31 of 989 on H100; [FA3]: FlashAttention-2 reaches 35 % of the H100 peak),
// backward 0.24 (forward × the A100 backward/forward ratio 0.50/0.62, an assumption).
// Blackwell: the same fractions as Hopper (an assumption: the Ampere-style mma.sync path on
// a part whose fast path is tcgen05). Not fitted: the 12 H100 LLM Foundry rows that ran it
// (ZeRO-2 and ZeRO-3, MPT 1B–70B) were 7 % fast on average with FlashAttention-3's constants.
/// Every preset's collective_ctas: the SMs an NCCL collective holds while compute runs
/// beside it. 24: the block count Nsight Systems shows for an ncclAllGather overlapped with
/// a GEMM on H100 (NVIDIA developer forum, "Compute-Communication Overlap Causes Severe GEMM
/// Performance Degradation because of Tail Effect", 2025: a 24-block all-gather beside a
/// one-wave GEMM); NCCL runs one block per channel and at most 32 channels (MAXCHANNELS in
/// NCCL's src/include/device.h), the upper bound. The same count on every DGX-class part
/// (8 NICs and NVSwitch: NCCL's topology search finds the same rings), an assumption for
/// A100 and Blackwell. The slowdown it gives, sm_count / (sm_count − 24), is 1.22 on H100,
/// 1.29 on A100 and 1.19 / 1.18 on Blackwell: inside the 1.19 (mean) to 1.40 (worst)
/// measured for GPT and LLaMA layers with overlapped collectives on A100 and H100 (Lee et
/// al., arXiv:2507.03114, 2025). It replaced a single fitted multiplier of 1.70 on every
/// part, which sat at the top of that range: fitted freely on LLM Foundry's FSDP rows it had
/// come out 1.70 (H100), 1.45 and 2.0 (A100), standing in for costs of FSDP's own.
constexpr int kCollectiveCtas = 24;

std::vector<ComputeProfile> with_interference(std::vector<ComputeProfile> profiles) {
  for (auto& p : profiles) p.collective_ctas = kCollectiveCtas;
  return profiles;
}

/// dropout_rng_rate (random numbers per second a dropout kernel draws; the slower of its
/// draws and its bytes bounds it). CALIBRATED (2026-12-02) on a kernel-level measurement,
/// not on step times: [ZB] Table 9 profiles, per micro-batch on one pipeline stage of
/// Megatron-LM with unfused attention and dropout 0.1 in fp16 on A100 SXM 80 GB, the
/// forward (T_F), input-gradient (T_B) and weight-gradient (T_W) passes of four GPT
/// models (1.5B, 6.2B, 14.6B, 28.3B; 1–6 sequences of 1,024 tokens). T_W (GEMMs only)
/// agrees with this model within −4…+5 %; the model fell 7–24 % short of T_F, in proportion to the
/// attention-score elements (b·heads·s²: 151, 101, 42 and 50 M): the forward alone draws
/// the dropout masks, and Philox4x32-10 costs ~25 integer instructions per number, which
/// makes a 151 M-element mask RNG-bound rather than bandwidth-bound. A least-squares fit
/// of the four forward deficits over this model's dropout kernels gives 92 G numbers/s on
/// A100 (residuals under 0.16 ms of 3.8–7.4 ms per layer). Bounds 2e10–1e12: the top is
/// Philox alone at an A100-class part's INT32 issue rate (108 SMs × 64 lanes × 1.41 GHz
/// / ~25 instructions, ~0.4 T/s), raised for newer parts; the bottom an assumption.
/// Hopper: the A100 fit × (132 SMs × 1.98 GHz) / (108 SMs × 1.41 GHz), the INT32 issue
/// ratio at the datasheet boost clocks (an assumption: no Hopper measurement found).
/// Blackwell: Hopper's × its SM count / 132 (an assumption).
///  [ZB] P. Qi, X. Wan, G. Huang, M. Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024,
///       arXiv:2401.10241, Table 9 "Profiled time of T_F, T_B, T_W and T_comm".
constexpr double kAmpereDropoutRngRate = 92e9;
constexpr double kHopperDropoutRngRate = kAmpereDropoutRngRate * (132 * 1.98) / (108 * 1.41);

std::vector<ComputeProfile> with_rng_rates(std::vector<ComputeProfile> profiles) {
  for (auto& p : profiles) {
    if (p.name.starts_with("a100"))
      p.dropout_rng_rate = kAmpereDropoutRngRate;
    else
      p.dropout_rng_rate = kHopperDropoutRngRate * p.sm_count / 132;
  }
  return profiles;
}

std::vector<ComputeProfile> presets() {
  // Last four arguments: fp8 and mxfp8 GEMM fractions, FlashAttention-2 forward and
  // backward (see above). FP8 0.5 on A100 and MXFP8 on A100 / Hopper, which have no such
  // tensor cores (never read there; kept inside their bounds).
  return with_rng_rates(with_interference({
      make("a100-40gb", 108, 256, 128, 0.7754, 256, 0.62, 0.50, 0.3088, 0.3393, 0.88, 4, 0.5, 0.5, 0.62, 0.50),
      make("a100-80gb", 108, 256, 128, 0.8130, 256, 0.62, 0.50, 0.5140, 0.2635, 0.88, 4, 0.5, 0.5, 0.62, 0.50),
      make("h100-sxm", 132, 128, 256, 0.6662, 256, 0.60, 0.297, 0.2446, 0.1581, 0.90, 3, 0.595, 0.55, 0.30, 0.24),
      make("h200", 132, 128, 256, 0.6662, 256, 0.60, 0.297, 0.2446, 0.1581, 0.90, 3, 0.595, 0.55, 0.30, 0.24),
      make("h800", 132, 128, 256, 0.6662, 256, 0.60, 0.297, 0.2446, 0.1581, 0.90, 3, 0.595, 0.55, 0.30, 0.24),
      make("b200", 148, 128, 256, 0.776, 256, 0.376, 0.307, 0.5, 0.3, 0.85, 3, 0.604, 0.541, 0.30, 0.24),
      make("b300", 160, 128, 256, 0.776, 256, 0.376, 0.307, 0.5, 0.3, 0.85, 3, 0.604, 0.541, 0.30, 0.24),
      make("gb200", 148, 128, 256, 0.776, 256, 0.376, 0.307, 0.5, 0.3, 0.85, 3, 0.604, 0.541, 0.30, 0.24),
      make("gb300", 160, 128, 256, 0.776, 256, 0.376, 0.307, 0.5, 0.3, 0.85, 3, 0.811, 0.726, 0.30, 0.24),
  }));
}

int round_to_int(double v) { return static_cast<int>(std::lround(v)); }

/// The table's accessors of one member: integers (counts, tile sizes) round on set.
template <auto Member>
double get_field(const ComputeProfile& p) {
  return static_cast<double>(p.*Member);
}
template <auto Member>
void set_field(ComputeProfile& p, double v) {
  if constexpr (std::is_integral_v<std::remove_reference_t<decltype(p.*Member)>>)
    p.*Member = round_to_int(v);
  else
    p.*Member = v;
}

// Bounds are the physical ranges a fit may use (calibrate pins a constant on a bound
// rather than leave them): GEMM fraction 0.45–0.95 (the top: no library reaches the
// dense peak, [MAMF] best 0.78–0.87 on these parts; the bottom: sustained clocks under a
// training power cap below the boost clock the peak is quoted at, an assumption);
// HBM fraction 0.75–0.95 ([A100BW] ~0.9 best; the bottom an assumption); launch overhead
// 1–8 us (a kernel launch plus a dependent kernel's ramp is a few us; a framework's host
// dispatch is implementation_profile.cpp's, not the GPU's); FlashAttention 0.1–0.8 and
// Triton attention 0.05–0.8 ([FA3]'s best, 0.75 of the H100's peak forward at long
// sequences, is the top).
const std::array<ProfileConstant, 19> kConstants{{
    {"sm_count", "SMs", "streaming multiprocessors: GEMM tiles that run at once (one wave)", 1, 1024, true,
     get_field<&ComputeProfile::sm_count>, set_field<&ComputeProfile::sm_count>},
    {"tile_m", "elements", "rows of C per GEMM thread-block tile (tile quantisation)", 16, 512, true,
     get_field<&ComputeProfile::tile_m>, set_field<&ComputeProfile::tile_m>},
    {"tile_n", "elements", "columns of C per GEMM thread-block tile (tile quantisation)", 16, 512, true,
     get_field<&ComputeProfile::tile_n>, set_field<&ComputeProfile::tile_n>},
    {"gemm_sustained_fraction", "fraction", "achieved/peak of an exactly tiled, deep-K GEMM", 0.45, 0.95, false,
     get_field<&ComputeProfile::gemm_sustained_fraction>, set_field<&ComputeProfile::gemm_sustained_fraction>},
    {"fp8_gemm_sustained_fraction", "fraction", "achieved/FP8 dense peak of an exactly tiled, deep-K FP8 GEMM", 0.3,
     0.95, false, get_field<&ComputeProfile::fp8_gemm_sustained_fraction>, set_field<&ComputeProfile::fp8_gemm_sustained_fraction>},
    {"mxfp8_gemm_sustained_fraction", "fraction", "achieved/FP8 dense peak of an exactly tiled, deep-K MXFP8 GEMM",
     0.3, 0.95, false, get_field<&ComputeProfile::mxfp8_gemm_sustained_fraction>, set_field<&ComputeProfile::mxfp8_gemm_sustained_fraction>},
    {"gemm_min_k", "elements", "K depth a tile needs to hide its prologue and epilogue", 0, 4096, false,
     get_field<&ComputeProfile::gemm_min_k>, set_field<&ComputeProfile::gemm_min_k>},
    {"flash_fwd_efficiency", "fraction", "achieved/peak of the FlashAttention forward on executed FLOPs", 0.1, 0.8,
     false, get_field<&ComputeProfile::flash_fwd_efficiency>, set_field<&ComputeProfile::flash_fwd_efficiency>},
    {"flash_bwd_efficiency", "fraction", "achieved/peak of the FlashAttention backward (2.5 x forward FLOPs)", 0.1,
     0.8, false, get_field<&ComputeProfile::flash_bwd_efficiency>, set_field<&ComputeProfile::flash_bwd_efficiency>},
    {"triton_fwd_efficiency", "fraction", "achieved/peak of the Triton FlashAttention forward on executed FLOPs", 0.05,
     0.8, false, get_field<&ComputeProfile::triton_fwd_efficiency>, set_field<&ComputeProfile::triton_fwd_efficiency>},
    {"triton_bwd_efficiency", "fraction", "achieved/peak of the Triton FlashAttention backward (2.5 x forward FLOPs)",
     0.05, 0.8, false, get_field<&ComputeProfile::triton_bwd_efficiency>, set_field<&ComputeProfile::triton_bwd_efficiency>},
    {"flash2_fwd_efficiency", "fraction", "achieved/peak of the FlashAttention-2 (flash-attn 2.x) forward", 0.05, 0.8,
     false, get_field<&ComputeProfile::flash2_fwd_efficiency>, set_field<&ComputeProfile::flash2_fwd_efficiency>},
    {"flash2_bwd_efficiency", "fraction", "achieved/peak of the FlashAttention-2 backward (2.5 x forward FLOPs)", 0.05,
     0.8, false, get_field<&ComputeProfile::flash2_bwd_efficiency>, set_field<&ComputeProfile::flash2_bwd_efficiency>},
    {"flash1_relative_speed", "fraction", "FlashAttention-1's rate / FlashAttention-2's (Dao 2023: about 1/2)", 0.34, 0.8,
     false, get_field<&ComputeProfile::flash1_relative_speed>, set_field<&ComputeProfile::flash1_relative_speed>},
    {"attention_block", "tokens", "query/key block of the attention kernel (causal skip granularity)", 16, 256, true,
     get_field<&ComputeProfile::attention_block>, set_field<&ComputeProfile::attention_block>},
    {"hbm_fraction", "fraction", "achieved/datasheet HBM bandwidth of a streaming kernel", 0.75, 0.95, false,
     get_field<&ComputeProfile::hbm_fraction>, set_field<&ComputeProfile::hbm_fraction>},
    {"dropout_rng_rate", "1/s", "random numbers per second a dropout kernel draws (bounds a mask-drawing kernel)", 2e10,
     1e12, false, get_field<&ComputeProfile::dropout_rng_rate>, set_field<&ComputeProfile::dropout_rng_rate>},
    {"launch_overhead", "s", "GPU time between two dependent kernels, paid once per kernel", 1e-6, 8e-6, false,
     get_field<&ComputeProfile::launch_overhead_s>, set_field<&ComputeProfile::launch_overhead_s>},
    // collective_ctas: 0 (a collective that holds no SM) to 32, NCCL's channel limit; 24 on
    // every preset (with_interference above, where the citations are).
    {"collective_ctas", "CTAs", "SMs an NCCL collective's blocks hold while compute runs beside it", 0, 32, true,
     get_field<&ComputeProfile::collective_ctas>, set_field<&ComputeProfile::collective_ctas>},
}};

/// A collective that held half the SMs or more would leave compute beside it at least twice
/// as slow: no NCCL configuration does that, and at all the SMs the multiplier would not be
/// finite.
bool ctas_leave_most_sms(const ComputeProfile& profile) { return 2 * profile.collective_ctas < profile.sm_count; }

}  // namespace

std::optional<ComputeProfile> compute_profile_preset(std::string_view gpu_name) {
  for (auto& p : presets())
    if (p.name == gpu_name) return p;
  return std::nullopt;
}

std::vector<std::string> compute_profile_preset_names() {
  std::vector<std::string> out;
  for (auto& p : presets()) out.push_back(p.name);
  return out;
}

std::span<const ProfileConstant> profile_constants() { return kConstants; }

const ProfileConstant* find_profile_constant(std::string_view name) {
  for (const auto& c : kConstants)
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<std::string> profile_bound_violations(const ComputeProfile& profile) {
  std::vector<std::string> out;
  for (const auto& c : kConstants) {
    const double v = c.get(profile);
    if (!(v >= c.lower && v <= c.upper))
      out.push_back(fmt::format("{} = {} outside [{}, {}] {}", c.name, v, c.lower, c.upper, c.unit));
  }
  if (profile.collective_ctas > 0 && !ctas_leave_most_sms(profile))
    out.push_back(fmt::format("collective_ctas = {} is half of sm_count = {} or more (a collective holds at most a few of the SMs)",
                              profile.collective_ctas, profile.sm_count));
  return out;
}

double overlap_slowdown(const ComputeProfile& profile) {
  if (profile.collective_ctas <= 0 || !ctas_leave_most_sms(profile)) return 1.0;
  return static_cast<double>(profile.sm_count) / (profile.sm_count - profile.collective_ctas);
}

}  // namespace ls::wl

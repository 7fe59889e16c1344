// workloads/cost/hardware.cpp — GPU presets and the roofline compute-time model.
#include "workloads/cost/hardware.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ls::wl {

namespace {

// Unit helpers, so the table below reads like the datasheets it cites.
constexpr double kTFLOPs = 1e12;    // FLOP/s
constexpr double kGB = 1e9;         // marketed, decimal gigabyte
constexpr double kTBps = 1e12;      // bytes/s
constexpr double kGBps = 1e9;       // bytes/s
constexpr double kGbps = 1e9 / 8;   // bits/s -> bytes/s

GpuSpec make(std::string name, double peak_tflops, double memory_gb, double hbm_TBps, double nvlink_GBps_per_dir,
             double nic_Gbps, double efficiency, double saturation_rows, sim::Time overhead) {
  GpuSpec g;
  g.name = std::move(name);
  g.peak_flops = peak_tflops * kTFLOPs;
  g.memory_bytes = memory_gb * kGB;
  g.hbm_bandwidth_Bps = hbm_TBps * kTBps;
  g.nvlink_bandwidth_Bps = nvlink_GBps_per_dir * kGBps;
  g.nic_bandwidth_Bps = nic_Gbps * kGbps;
  g.matmul_efficiency = efficiency;
  g.saturation_rows = saturation_rows;
  g.kernel_overhead = overhead;
  if (auto profile = compute_profile_preset(g.name)) g.compute = *profile;
  return g;
}

// Efficiency and the small-matmul floor (why these numbers):
//  * matmul_efficiency is what large bf16 GEMMs of transformer shapes reach with
//    cuBLAS, not the marketing peak. A100: ~230-250 of 312 TFLOP/s for h >= 8192
//    GEMMs, and Megatron-LM's GPT-3 175B run reaches 163 TFLOP/s per GPU *including*
//    attention, communication and bubble (Narayanan et al. 2021) -> 0.75.
//    H100/H200 SXM: ~650-750 of 989 TFLOP/s (the dense peak is rarely approached
//    because the part throttles under sustained tensor-core load) -> 0.70.
//    B200: early software, same throttling, larger marketed peak -> 0.65.
//  * saturation_rows: below this many tokens (GEMM M dimension) per device the
//    tile grid no longer fills every SM, so achieved throughput falls roughly in
//    proportion. It scales with the flop:byte ridge point of the part
//    (A100 80GB 312e12/2.04e12 ≈ 153 FLOP/B; H100 ≈ 295; B200 ≈ 281) -> 1024 rows
//    for A100, 2048 for Hopper and Blackwell.
//  * kernel_overhead: a launch plus the tail of a dependent kernel is a few µs;
//    one modelled op is a handful of fused kernels -> 5 µs (4 µs on Hopper and later,
//    where CUDA graphs / faster launch paths are the norm in Megatron-LM and NeMo).
/// The FP8 figures of a preset: dense FP8 FLOP/s (datasheet, without sparsity) and
/// whether the tensor cores run block-scaled MX formats.
GpuSpec with_fp8(GpuSpec g, double fp8_tflops, bool mx_formats) {
  g.fp8_peak_flops = fp8_tflops * kTFLOPs;
  g.mx_formats = mx_formats;
  return g;
}

/// The memory CUDA sees, NVML's total in MiB, for the parts where it was read: HBM comes in
/// binary sizes, so a part marketed as "80 GB" holds 80 GiB less what the driver keeps,
/// about 7 % more than 80e9 bytes. Modal's engineering blog ("Why does an NVIDIA H100 80GB
/// card offer 85.52 GB?", 2024) lists nvidia-smi's totals: A100 40GB 40,960 MiB, A100 80GB
/// 81,920 MiB, H100 80GB 81,559 MiB, H200 143,771 MiB. The other presets keep their
/// datasheet figure in decimal bytes (no total read here).
GpuSpec with_visible_memory(GpuSpec g, double mib) {
  g.memory_bytes = mib * 1024.0 * 1024.0;
  return g;
}

/// The board power the datasheet's peaks are quoted at (TDP, W).
GpuSpec with_tdp(GpuSpec g, double watts) {
  g.tdp_watts = watts;
  return g;
}

std::vector<GpuSpec> presets() {
  return {
      // NVIDIA A100 Tensor Core GPU datasheet (2021): bf16 dense 312 TFLOP/s; 40GB HBM2
      // at 1,555 GB/s; NVLink 600 GB/s total (12 links) = 300 GB/s per direction.
      // A100-era DGX (DGX A100) ships one 200 Gb/s HDR InfiniBand NIC per GPU.
      // No FP8 tensor cores (Ampere): precision.compute fp8 is an error. Max TDP 400 W (SXM).
      with_visible_memory(with_tdp(make("a100-40gb", 312, 40, 1.555, 300, 200, 0.75, 1024, sim::us(5)), 400), 40960),
      // Same datasheet, 80GB HBM2e at 2,039 GB/s (SXM).
      with_visible_memory(with_tdp(make("a100-80gb", 312, 80, 2.039, 300, 200, 0.75, 1024, sim::us(5)), 400), 81920),
      // NVIDIA H100 Tensor Core GPU datasheet, SXM5: bf16 dense 989 TFLOP/s
      // (1,979 with sparsity); FP8 3,958 TFLOP/s with sparsity = 1,979 dense;
      // 80GB HBM3 at 3.35 TB/s; NVLink 900 GB/s total
      // = 450 GB/s per direction; DGX H100: one 400 Gb/s NDR ConnectX-7 per GPU.
      // Max TDP up to 700 W (configurable); the H200 and H800 SXM parts the same.
      with_visible_memory(with_tdp(with_fp8(make("h100-sxm", 989, 80, 3.35, 450, 400, 0.70, 2048, sim::us(4)), 1979, false), 700),
                          81559),
      // NVIDIA H200 datasheet (SXM): same compute as H100 (989 TFLOP/s dense bf16,
      // 1,979 dense FP8); 141GB HBM3e at 4.8 TB/s; NVLink 900 GB/s total; 400 Gb/s NDR per GPU.
      with_visible_memory(with_tdp(with_fp8(make("h200", 989, 141, 4.8, 450, 400, 0.70, 2048, sim::us(4)), 1979, false), 700),
                          143771),
      // NVIDIA H800 SXM5 (the export H100): H100 SXM compute and memory (989 dense bf16,
      // 1,979 dense FP8 TFLOP/s; 80 GB HBM3 at 3.35 TB/s) with NVLink cut to 400 GB/s
      // total = 200 GB/s per direction. DeepSeek-AI 2024 ("DeepSeek-V3 Technical Report",
      // §3.1, its H800 cluster) measures 160 GB/s over NVLink and 50 GB/s (400 Gb/s) per
      // GPU over InfiniBand; the preset keeps the datasheet rate, as every preset here does.
      // Its memory total is taken as the H100 SXM's (the same 80 GB of HBM3; not read here).
      with_visible_memory(with_tdp(with_fp8(make("h800", 989, 80, 3.35, 200, 400, 0.70, 2048, sim::us(4)), 1979, false), 700),
                          81559),
      // NVIDIA DGX B200 / HGX B200 datasheet, per 8 GPUs: FP8 72 PFLOP/s and FP16/BF16
      // 36 PFLOP/s, both with sparsity -> 4,500 dense FP8 and 2,250 dense bf16 TFLOP/s per
      // GPU; 1,440 GB HBM3e per 8 GPUs = 180 GB per GPU (the 192 GB part is the
      // full-stack figure; DGX exposes 180 GB); 64 TB/s HBM per 8 GPUs = 8 TB/s;
      // NVLink 5 at 1.8 TB/s total = 900 GB/s per direction; DGX B200 ships
      // ConnectX-7 400 Gb/s per GPU. Blackwell tensor cores run MXFP8 natively. TDP
      // configurable up to 1,000 W per GPU (NVIDIA GB200 NVL72 / HGX B200 spec table).
      // Sustained FP8 and attention fractions per type: compute_profile.cpp (calibrated).
      with_tdp(with_fp8(make("b200", 2250, 180, 8.0, 900, 400, 0.65, 2048, sim::us(4)), 4500, true), 1000),
      // NVIDIA HGX B300 datasheet, per 8 GPUs: FP8 72 PFLOP/s and FP16/BF16 36 PFLOP/s
      // with sparsity (Blackwell Ultra raised FP4, not FP8/BF16) -> 4,500 / 2,250 dense per
      // GPU; up to 2.3 TB HBM3e per 8 GPUs = 288 GB per GPU at 8 TB/s; NVLink 5 1.8 TB/s
      // total; networking 1.6 TB/s per 8 GPUs = one 800 Gb/s ConnectX-8 per GPU.
      with_tdp(with_fp8(make("b300", 2250, 288, 8.0, 900, 800, 0.65, 2048, sim::us(4)), 4500, true), 1100),
      // NVIDIA GB200 NVL72 datasheet, per rack of 72 GPUs: FP8/FP6 720 PFLOP/s and
      // FP16/BF16 360 PFLOP/s with sparsity -> 5,000 dense FP8 and 2,500 dense bf16
      // TFLOP/s per GPU (1,200 W parts: more than HGX B200's 1,000 W); up to 13.4 TB
      // HBM3e at 576 TB/s -> 186 GB at 8 TB/s per GPU; NVLink 5 1.8 TB/s total per GPU
      // (130 TB/s per rack) through the NVLink Switch System: one 72-GPU NVLink domain
      // (cluster.nvlink_domain: 72, nodes = compute trays of 4 GPUs); DGX GB200: one
      // 400 Gb/s ConnectX-7 per GPU.
      with_tdp(with_fp8(make("gb200", 2500, 186, 8.0, 900, 400, 0.65, 2048, sim::us(4)), 5000, true), 1200),
      // NVIDIA GB300 NVL72 datasheet, per rack: FP8 720 PFLOP/s and FP16/BF16 360 PFLOP/s
      // with sparsity -> 5,000 / 2,500 dense per GPU; up to 20 TB HBM3e at 576 TB/s ->
      // 279 GB at 8 TB/s per GPU; NVLink 5 1.8 TB/s per GPU in one 72-GPU domain;
      // 72 ConnectX-8 SuperNICs per rack = one 800 Gb/s NIC per GPU. 1,400 W per GPU (as
      // reported for Blackwell Ultra in NVL72; HGX B300 1,100 W) and twice Blackwell's SFU
      // (exponential) rate ("Inside NVIDIA Blackwell Ultra", NVIDIA technical blog, 2025).
      with_tdp(with_fp8(make("gb300", 2500, 279, 8.0, 900, 800, 0.65, 2048, sim::us(4)), 5000, true), 1400),
  };
}

}  // namespace

std::optional<GpuSpec> gpu_preset(std::string_view name) {
  for (auto& g : presets())
    if (g.name == name) return g;
  return std::nullopt;
}

std::vector<std::string> gpu_preset_names() {
  std::vector<std::string> out;
  for (auto& g : presets()) out.push_back(g.name);
  return out;
}

ComputeProfile compute_profile_of(const GpuSpec& gpu) {
  if (!gpu.compute.name.empty()) return gpu.compute;
  ComputeProfile p;
  p.name = gpu.name.empty() ? "fallback" : gpu.name + " (fallback)";
  // Only the map's matmul_efficiency says how well this part runs kernels: the GEMM
  // fraction takes it, FlashAttention the ratio the presets have to their GEMM fraction
  // (0.60/0.80 and 0.50/0.87: about 0.7 forward, 0.58 backward).
  p.gemm_sustained_fraction = std::clamp(gpu.matmul_efficiency, 0.3, 1.0);
  // FP8 GEMMs: the same fraction of their own peak (no measurement for a custom part).
  p.fp8_gemm_sustained_fraction = p.gemm_sustained_fraction;
  p.mxfp8_gemm_sustained_fraction = p.gemm_sustained_fraction;
  p.flash_fwd_efficiency = 0.7 * p.gemm_sustained_fraction;
  p.flash_bwd_efficiency = 0.58 * p.gemm_sustained_fraction;
  // FlashAttention-2: the same kernel as far as a custom part is known (as on Ampere).
  p.flash2_fwd_efficiency = p.flash_fwd_efficiency;
  p.flash2_bwd_efficiency = p.flash_bwd_efficiency;
  // Triton attention: the A100 preset's ratios to its GEMM fraction (assumption).
  p.triton_fwd_efficiency = 0.7 * p.gemm_sustained_fraction;
  p.triton_bwd_efficiency = 0.35 * p.gemm_sustained_fraction;
  // The launch overhead: the profile default unless the map gave kernel_overhead (the
  // loader writes it into gpu.compute).
  p.launch_overhead_s = gpu.compute.launch_overhead_s;
  return p;
}

GpuFamily gpu_family(const GpuSpec& gpu) {
  const std::string& type = gpu.compute.name.empty() ? gpu.name : gpu.compute.name;
  if (type.rfind("a100", 0) == 0) return GpuFamily::ampere;
  for (const char* hopper : {"h100", "h200", "h800"})
    if (type.rfind(hopper, 0) == 0) return GpuFamily::hopper;
  for (const char* blackwell : {"b200", "b300", "gb200", "gb300"})
    if (type == blackwell) return GpuFamily::blackwell;
  return GpuFamily::other;
}

const char* gpu_family_name(GpuFamily f) {
  switch (f) {
    case GpuFamily::ampere: return "a100";
    case GpuFamily::hopper: return "hopper";
    case GpuFamily::blackwell: return "blackwell";
    case GpuFamily::other: return "other";
  }
  return "other";
}

topo::CollectiveCostModel collective_costs_of(const GpuSpec& gpu) {
  switch (gpu_family(gpu)) {
    case GpuFamily::ampere: return topo::dgx_a100_collective_costs();
    case GpuFamily::blackwell: return topo::blackwell_collective_costs();
    case GpuFamily::hopper:
    case GpuFamily::other: break;
  }
  return topo::default_collective_costs();
}

double matmul_efficiency(const GpuSpec& gpu, double rows) {
  if (rows <= 0 || gpu.saturation_rows <= 0) return gpu.matmul_efficiency;
  return gpu.matmul_efficiency * std::min(1.0, rows / gpu.saturation_rows);
}

double power_clock_fraction(const GpuSpec& gpu) {
  if (!(gpu.tdp_watts > 0) || !(gpu.power_limit_watts > 0) || gpu.power_limit_watts >= gpu.tdp_watts) return 1.0;
  return std::cbrt(gpu.power_limit_watts / gpu.tdp_watts);
}

sim::Time compute_time(const GpuSpec& gpu, double flops, double bytes, double rows) {
  if (flops <= 0 && bytes <= 0) return sim::Time::zero();
  double t = 0;
  if (flops > 0) {
    const double rate = gpu.peak_flops * power_clock_fraction(gpu) * matmul_efficiency(gpu, rows);
    if (!(rate > 0))
      throw std::invalid_argument(fmt::format("compute_time: GPU '{}' has no compute rate (peak {} FLOP/s, efficiency {})",
                                              gpu.name, gpu.peak_flops, gpu.matmul_efficiency));
    t = flops / rate;
  }
  if (bytes > 0) {
    if (!(gpu.hbm_bandwidth_Bps > 0))
      throw std::invalid_argument(fmt::format("compute_time: GPU '{}' has no HBM bandwidth", gpu.name));
    t = std::max(t, bytes / gpu.hbm_bandwidth_Bps);
  }
  return sim::Time::from_seconds(t) + gpu.kernel_overhead;
}

}  // namespace ls::wl

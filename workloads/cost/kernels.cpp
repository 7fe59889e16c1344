// workloads/cost/kernels.cpp — kernel times, breakdown and the optimizer step (see kernels.hpp).
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/model/model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ls::wl {

namespace {

/// One way to run a GEMM: a tile orientation and a split-K factor.
struct Tiling {
  double padded_flops = 0;  // SM time of all waves, in FLOPs at the sustained per-SM rate
  double split = 1;         // K slices (split-K): > 1 adds a reduction of fp32 partial sums
};

/// Tiles of tile_rows × tile_cols run one per SM in waves; every SM of every wave is
/// charged a whole tile, so the last wave's idle SMs cost time too. A grid smaller than
/// one wave splits K over the idle SMs (split-K, as cuBLAS and CUTLASS do for skinny,
/// deep products), down to gemm_min_k-deep slices.
Tiling tiling(const ComputeProfile& p, const GemmShape& s, double tile_rows, double tile_cols) {
  const double tiles = s.batch * std::ceil(s.m / tile_rows) * std::ceil(s.n / tile_cols);
  double split = 1;
  if (tiles < p.sm_count && p.gemm_min_k > 0)
    split = std::max(1.0, std::min(std::floor(p.sm_count / tiles), std::floor(s.k / p.gemm_min_k)));
  const double waves = std::ceil(tiles * split / p.sm_count);
  return {waves * p.sm_count * 2 * tile_rows * tile_cols * std::max(s.k / split, p.gemm_min_k), split};
}

/// The faster of the two tile orientations (a library heuristic picks among tile shapes).
Tiling best_tiling(const ComputeProfile& p, const GemmShape& s) {
  if (p.sm_count < 1 || p.tile_m < 1 || p.tile_n < 1)
    throw std::invalid_argument(fmt::format("compute profile '{}': sm_count and tile sizes must be >= 1", p.name));
  const Tiling a = tiling(p, s, p.tile_m, p.tile_n), b = tiling(p, s, p.tile_n, p.tile_m);
  return b.padded_flops < a.padded_flops ? b : a;
}

void require_rate(bool ok, std::string_view what, const GpuSpec& gpu, std::string_view kernel) {
  if (!ok)
    throw std::invalid_argument(
        fmt::format("kernel '{}' on GPU '{}': {} is not positive", kernel, gpu.name, what));
}

Kernel memory_kernel(std::string_view name, double bytes, KernelCategory category = KernelCategory::optimizer) {
  Kernel k;
  k.name = name;
  k.category = category;
  k.kind = KernelKind::memory;
  k.bytes = bytes;
  return k;
}

}  // namespace

double gemm_efficiency(const ComputeProfile& p, const GemmShape& s) {
  if (s.flops() <= 0) return p.gemm_sustained_fraction;
  return p.gemm_sustained_fraction * s.flops() / best_tiling(p, s).padded_flops;
}

namespace {

/// gemm_time's model at a given peak and sustained fraction, with A/B and C element widths.
sim::Time gemm_time_at(const ComputeProfile& p, const GpuSpec& gpu, const GemmShape& s, double peak, double fraction,
                       double ab_bytes, double c_bytes, std::string_view what) {
  const Tiling tiles = best_tiling(p, s);
  const double eff = fraction * s.flops() / tiles.padded_flops;
  require_rate(peak > 0 && eff > 0, what, gpu, "gemm");
  const double compute = s.flops() / (peak * power_clock_fraction(gpu) * eff);
  const double bytes = s.batch * ((s.m * s.k + s.k * s.n) * ab_bytes + s.m * s.n * c_bytes);
  const double hbm = gpu.hbm_bandwidth_Bps * p.hbm_fraction;
  require_rate(hbm > 0, "HBM bandwidth × hbm_fraction", gpu, "gemm");
  // Split-K writes and reads back one fp32 partial C per slice before the final sum.
  const double reduction = tiles.split > 1 ? 2 * tiles.split * s.batch * s.m * s.n * 4 / hbm : 0;
  return sim::Time::from_seconds(std::max(compute, bytes / hbm) + reduction);
}

}  // namespace

sim::Time gemm_time(const ComputeProfile& p, const GpuSpec& gpu, const GemmShape& s, int element_bytes) {
  if (s.flops() <= 0) return sim::Time::zero();
  return gemm_time_at(p, gpu, s, gpu.peak_flops, p.gemm_sustained_fraction, element_bytes, element_bytes,
                      "peak FLOP/s × GEMM efficiency");
}

sim::Time fp8_gemm_time(const ComputeProfile& p, const GpuSpec& gpu, const GemmShape& s) {
  if (s.flops() <= 0) return sim::Time::zero();
  return gemm_time_at(p, gpu, s, gpu.fp8_peak_flops, p.fp8_gemm_sustained_fraction, 1, 2,
                      "FP8 peak FLOP/s × FP8 GEMM efficiency");
}

sim::Time memory_time(const ComputeProfile& p, const GpuSpec& gpu, double bytes) {
  if (bytes <= 0) return sim::Time::zero();
  const double hbm = gpu.hbm_bandwidth_Bps * p.hbm_fraction;
  require_rate(hbm > 0, "HBM bandwidth × hbm_fraction", gpu, "memory-bound");
  return sim::Time::from_seconds(bytes / hbm);
}

sim::Time memory_kernel_time(const ComputeProfile& p, const GpuSpec& gpu, double bytes, double random_elements) {
  const sim::Time through_hbm = memory_time(p, gpu, bytes);
  if (random_elements <= 0 || p.dropout_rng_rate <= 0) return through_hbm;
  // Rounding is monotonic, so the larger of two rounded times is the larger time rounded once.
  return std::max(through_hbm, sim::Time::from_seconds(random_elements / p.dropout_rng_rate));
}

sim::Time flash_time(const ComputeProfile& p, const GpuSpec& gpu, double executed_flops, double bytes,
                     bool backward, bool triton) {
  if (executed_flops <= 0 && bytes <= 0) return sim::Time::zero();
  const double eff = triton ? (backward ? p.triton_bwd_efficiency : p.triton_fwd_efficiency)
                            : (backward ? p.flash_bwd_efficiency : p.flash_fwd_efficiency);
  require_rate(gpu.peak_flops > 0 && eff > 0, "peak FLOP/s × flash efficiency", gpu, "flash attention");
  const double hbm = gpu.hbm_bandwidth_Bps * p.hbm_fraction;
  require_rate(hbm > 0, "HBM bandwidth × hbm_fraction", gpu, "flash attention");
  return sim::Time::from_seconds(std::max(executed_flops / (gpu.peak_flops * power_clock_fraction(gpu) * eff), bytes / hbm));
}

double causal_block_fraction(double seq_len, int block, bool causal, double window) {
  if (!causal || seq_len <= 0) return 1.0;
  const double B = std::max(block, 1);
  const double n = std::ceil(seq_len / B);
  const double c = window > 0 ? std::ceil((window - 1) / B) : n;
  if (c >= n - 1) return (n + 1) / (2 * n);
  // Query blocks 0..c compute i + 1 key blocks, the n − c − 1 after them c + 1 each.
  return ((c + 1) * (c + 2) / 2 + (n - c - 1) * (c + 1)) / (n * n);
}

void time_kernels(const ComputeProfile& p, const GpuSpec& gpu, std::vector<Kernel>& kernels, int element_bytes,
                  double dispatch_overhead_s) {
  const sim::Time launch = sim::Time::from_seconds(p.launch_overhead_s);
  const sim::Time dispatch = sim::Time::from_seconds(dispatch_overhead_s);
  for (auto& k : kernels) {
    switch (k.kind) {
      case KernelKind::gemm:
        k.executed_flops = k.flops;
        k.time = k.fp8 ? fp8_gemm_time(p, gpu, k.shape) : gemm_time(p, gpu, k.shape, element_bytes);
        break;
      case KernelKind::flash_forward:
      case KernelKind::flash_backward:
      case KernelKind::triton_forward:
      case KernelKind::triton_backward: {
        // Counted FLOPs follow the model convention (full s², backward 2 × forward); the
        // kernel skips the causal blocks, and its backward executes 2.5 × the forward.
        const bool backward = k.kind == KernelKind::flash_backward || k.kind == KernelKind::triton_backward;
        const bool triton = k.kind == KernelKind::triton_forward || k.kind == KernelKind::triton_backward;
        const double skip = causal_block_fraction(k.causal_seq_len, p.attention_block, k.causal_seq_len > 0, k.attention_window);
        // Counted FLOPs over a window count its 2w − w²/s keys per query; the grid is s.
        const double grid = k.attention_window > 0 && k.causal_seq_len > 0
                                ? k.flops * k.causal_seq_len / window_counted_keys(k.causal_seq_len, k.attention_window)
                                : k.flops;
        k.executed_flops = grid * skip * (backward ? 1.25 : 1.0);
        k.time = flash_time(p, gpu, k.executed_flops, k.bytes, backward, triton);
        break;
      }
      case KernelKind::memory:
        k.executed_flops = 0;
        k.time = memory_kernel_time(p, gpu, k.bytes, k.random_elements);
        break;
    }
    // The first kernel's launch may hide under the host's dispatch; each further one the
    // entry stands for pays a whole launch (its work is already in k.time).
    k.launch = std::max(launch, dispatch - k.time) + std::max(launch, dispatch) * (k.launches - 1);
  }
}

ComputeBreakdown& ComputeBreakdown::operator+=(const ComputeBreakdown& o) {
  gemm += o.gemm;
  attention += o.attention;
  elementwise += o.elementwise;
  logits += o.logits;
  optimizer += o.optimizer;
  launch += o.launch;
  return *this;
}

ComputeBreakdown breakdown(const std::vector<Kernel>& kernels) {
  ComputeBreakdown b;
  for (const auto& k : kernels) {
    switch (k.category) {
      case KernelCategory::gemm: b.gemm += k.time; break;
      case KernelCategory::attention: b.attention += k.time; break;
      case KernelCategory::elementwise: b.elementwise += k.time; break;
      case KernelCategory::logits: b.logits += k.time; break;
      case KernelCategory::optimizer: b.optimizer += k.time; break;
    }
    b.launch += k.launch;
  }
  return b;
}

sim::Time total_time(const std::vector<Kernel>& kernels) {
  sim::Time t;
  for (const auto& k : kernels) t += k.total();
  return t;
}

double total_flops(const std::vector<Kernel>& kernels) {
  double f = 0;
  for (const auto& k : kernels) f += k.flops;
  return f;
}

double total_bytes(const std::vector<Kernel>& kernels) {
  double b = 0;
  for (const auto& k : kernels) b += k.bytes;
  return b;
}

std::vector<Kernel> optimizer_kernels(double params, const PrecisionSpec& prec, bool fused) {
  if (params < 0) throw std::invalid_argument(fmt::format("optimizer_kernels: negative parameter count {}", params));
  const double P = params, g = prec.gradients, o = prec.optimizer;
  const bool has_master = prec.master > 0;
  const double m = has_master ? prec.master : prec.weights;  // the fp32 copy Adam updates
  const double copy = has_master ? prec.weights : 0;         // the 16-bit weights written back
  std::vector<Kernel> out;
  if (fused) {
    // Multi-tensor apply: one L2-norm pass, then one Adam pass that scales the gradient
    // by the clip factor as it reads it.
    out.push_back(memory_kernel("grad_norm", P * g));
    out.push_back(memory_kernel("adam", P * (g + 2 * m + 2 * o + copy)));
  } else {
    // One kernel per tensor expression: norm, clip scale (read + write the gradients),
    // first moment (read m1, g; write m1), second moment (read m2, g; write m2),
    // update (read m1, m2, p; write p), 16-bit copy (read p; write w).
    out.push_back(memory_kernel("grad_norm", P * g));
    out.push_back(memory_kernel("grad_clip_scale", P * 2 * g));
    out.push_back(memory_kernel("adam_moment1", P * (o + g)));
    out.push_back(memory_kernel("adam_moment2", P * (o + g)));
    out.push_back(memory_kernel("adam_update", P * (o + 2 * m)));
    if (has_master) out.push_back(memory_kernel("weight_copy", P * (m + copy)));
  }
  return out;
}

}  // namespace ls::wl

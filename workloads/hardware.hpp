// workloads/hardware.hpp — GPU presets (datasheet figures, cited in hardware.cpp) and
// the compute-time model: roofline with an efficiency that falls for small matmuls.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.hpp"
#include "workloads/spec.hpp"

namespace ls::wl {

/// a100-40gb, a100-80gb, h100-sxm, h200, b200. nullopt for an unknown name.
std::optional<GpuSpec> gpu_preset(std::string_view name);
std::vector<std::string> gpu_preset_names();

/// Achieved fraction of peak for a matmul whose M dimension is `rows`:
/// matmul_efficiency · min(1, rows / saturation_rows).
double matmul_efficiency(const GpuSpec& gpu, double rows);

/// Roofline: max(flops / (peak · efficiency(rows)), bytes / hbm_bandwidth) + kernel_overhead.
sim::Time compute_time(const GpuSpec& gpu, double flops, double bytes, double rows);

}  // namespace ls::wl

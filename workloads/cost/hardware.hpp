// workloads/cost/hardware.hpp — GPU presets (datasheet figures, cited in hardware.cpp) and
// the compute-time model: roofline with an efficiency that falls for small matmuls.
//
// Units: FLOP/s, bytes, bytes/s, sim::Time. Memory capacities are *decimal* bytes as
// NVIDIA markets them (1 GB = 1e9 B), which is slightly below what the device
// really has (an "80 GB" A100 reports 81920 MiB): a conservative capacity.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.hpp"
#include "topology/collective_costs.hpp"
#include "workloads/spec/compute_profile.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// a100-40gb, a100-80gb, h100-sxm, h200, b200, b300, gb200, gb300. nullopt for an unknown name.
std::optional<GpuSpec> gpu_preset(std::string_view name);
/// The preset names, in the order above.
std::vector<std::string> gpu_preset_names();

/// The kernel cost constants that price `gpu`'s compute: its own (a preset's, kept when a
/// map names a preset) or, for a GPU given as a map with no preset (compute.name empty),
/// a fallback: ComputeProfile's defaults (an A100-like SM count and tile) with the GEMM
/// fraction set to the map's matmul_efficiency and the FlashAttention efficiencies scaled
/// with it (the presets' flash/GEMM ratios, ~0.7 forward, ~0.58 backward). O(1).
ComputeProfile compute_profile_of(const GpuSpec& gpu);

/// The GPU generation a type belongs to, by its profile's name (the preset it came
/// from) or else its own: "a100…" is Ampere, "h100…", "h200…", "h800…" Hopper, b200,
/// b300, gb200, gb300 Blackwell. The collective-cost profile and the error band's
/// grouping both read it.
enum class GpuFamily { ampere, hopper, blackwell, other };
GpuFamily gpu_family(const GpuSpec& gpu);
/// "a100", "hopper", "blackwell", "other".
const char* gpu_family_name(GpuFamily f);

/// The collective cost profile (topology/collective_costs.hpp) of the system a GPU type
/// ships in: A100 parts -> DGX A100 (NVLink 3, HDR); Blackwell (b200, b300, gb200,
/// gb300) -> NVLink 5 systems (DGX B200, GB200/GB300 NVL72); everything else (Hopper, a
/// GPU given as a map) -> DGX H100 (NVLink 4, NDR). The one place this choice is made;
/// every Planner that prices a scenario's collectives is built with it. O(1).
topo::CollectiveCostModel collective_costs_of(const GpuSpec& gpu);

/// The tensor-core clock under the GPU's power limit, as a fraction of the clock its
/// datasheet peaks assume: (power_limit / TDP)^(1/3), 1 without a limit below the TDP.
/// Why a cube root: a compute-bound kernel at the cap draws dynamic power C·V²·f, and on
/// the DVFS curve the voltage rises about linearly with the clock, so power goes as f³.
/// Check against two datasheets of one die (GH100, 132 SMs): the H100 NVL at 400 W quotes
/// 835 dense bf16 TFLOP/s, the SXM at 700 W 989 (tensor clocks 1,545 and 1,830 MHz):
/// 0.844, where the law gives (400/700)^(1/3) = 0.830. Memory-bound kernels keep their
/// rate: the HBM clock is not what a board power cap lowers first.
double power_clock_fraction(const GpuSpec& gpu);

/// Achieved fraction of peak for a matmul whose M dimension is `rows`:
/// matmul_efficiency · min(1, rows / saturation_rows).
/// rows <= 0 means "not a matmul" (element-wise work): no floor, matmul_efficiency.
/// saturation_rows <= 0 disables the floor.
double matmul_efficiency(const GpuSpec& gpu, double rows);

/// Roofline: max(flops / (peak · efficiency(rows)), bytes / hbm_bandwidth) + kernel_overhead,
/// rounded once to the nearest picosecond. An op with no work at all (flops <= 0 and
/// bytes <= 0) launches no kernel and costs zero. Throws std::invalid_argument when
/// there is work for a unit whose rate is not positive (peak or HBM bandwidth 0).
/// O(1).
sim::Time compute_time(const GpuSpec& gpu, double flops, double bytes, double rows);

}  // namespace ls::wl

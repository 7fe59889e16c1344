// workloads/analysis/device_metrics.hpp — the metrics that name devices: per-stage compute
// spread (min / max and the slowest rank), the devices that hold the critical path,
// and the perturbed devices (stragglers) with what they did.
#pragma once

#include <vector>

#include "sim/engine.hpp"
#include "workloads/analysis/critical_path.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// StageResult::compute_min_s / compute_max_s / slowest_device (fold_pipeline first).
void fold_stage_spread(Result& res, const sim::Program& prog, const std::vector<sim::RankStats>& stats);
/// CriticalPath::devices: time of the walk's segments per device over the step, top 5.
void fold_critical_devices(Result& res, const CriticalWalk& walk, double first_step_s);
/// Result::perturbed_devices from perturbations.devices (after fold_pipeline); `walk`
/// may be null (no critical path recorded). cost_s stays NaN until what_if prices it.
void fold_perturbed_devices(Result& res, const Scenario& sc, const sim::Program& prog, const std::vector<sim::RankStats>& stats,
                            const CriticalWalk* walk, double first_step_s);

}  // namespace ls::wl

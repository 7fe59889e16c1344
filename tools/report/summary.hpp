// tools/report/summary.hpp — the human-readable outputs of `layoutsim run` (the summary
// table) and `layoutsim check` (the plan); their unit formatters are in human_units.hpp.
// Pure functions: they return text and print nothing. O(stages + links + warnings).
#pragma once

#include <string>

#include "workloads/build/result.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::tools {

/// The `run` summary table: headline numbers, per-stage bubble (measured next to
/// analytic) and idle fraction, exposed communication and bytes per axis, links by
/// kind and the busiest links, memory per stage by term against capacity, the
/// critical path and the warnings.
std::string format_summary(const wl::Result& r);

/// The step time's error band as the summary prints it: "(+3 % … +48 %: 80 % of 16
/// held-out published runs like this, GROUP)"; "" without a band.
std::string step_time_band_text(const wl::Result& r);

/// A stage's slowest rank with its compute time, when the stage's ranks differ:
/// "node0.gpu4 2.288 s (min 1.525 s)"; "" when they agree.
std::string slowest_rank_text(const wl::Result& r, const wl::StageResult& s);

/// The link class that bounded the step: "nvlink PATTERN saturated 97.22 ms of the
/// 2.690 s step (3.61%); also ...", or "none (no link was saturated in the step)".
std::string link_bottleneck_text(const wl::Result& r);

/// The summary's second line, alone: "llama3-8b · 8 × h100-sxm · tp2 pp4 dp1 … · megatron-core".
std::string setup_description(const wl::Result& r);

/// The `check` output: resolved layout, communication groups (GPUs, link kinds,
/// node crossing), per-stage layers and memory budget by term against capacity,
/// analytic bubble, warnings. No simulation is involved.
std::string format_layout_report(const wl::Scenario& s, const wl::LayoutReport& p);

}  // namespace ls::tools

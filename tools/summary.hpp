// tools/summary.hpp — the human-readable outputs of `layoutsim run` (the summary
// table) and `layoutsim check` (the plan), plus the unit formatters they share.
//
// Units are SI and chosen per value ("1.234 s", "19.69 GB", "312.0 TFLOP/s"); every
// formatter prints 4 significant digits. Pure functions: they return text and print
// nothing. O(stages + links + warnings).
#pragma once

#include <string>

#include "workloads/result.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec.hpp"

namespace ls::tools {

/// 0.0123 → "12.30 ms"; 1.5 → "1.500 s"; 3e-7 → "300.0 ns". Non-finite → "n/a".
std::string human_seconds(double s);
/// Decimal (SI) units: 19.69e9 → "19.69 GB"; 512 → "512 B".
std::string human_bytes(double bytes);
/// 1234567 → "1.235 M"; 999 → "999.0". For counts and rates (tokens/s).
std::string human_count(double v);
/// FLOP/s with SI prefix: 312e12 → "312.0 TFLOP/s".
std::string human_flops(double flop_per_s);
/// 0.1234 → "12.34%".
std::string percent(double fraction);

/// The `run` summary table: headline numbers, per-stage bubble (measured next to
/// analytic) and idle fraction, exposed communication and bytes per axis, links by
/// kind and the busiest links, memory per stage by term against capacity, the
/// critical path and the warnings.
std::string format_summary(const wl::Result& r);

/// The `check` output: resolved layout, communication groups (GPUs, link kinds,
/// node crossing), per-stage layers and memory budget by term against capacity,
/// analytic bubble, warnings. No simulation is involved.
std::string format_plan(const wl::Scenario& s, const wl::PlanSummary& p);

}  // namespace ls::tools

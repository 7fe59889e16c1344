// workloads/advice/diagnostics.hpp — warnings that name a failure mode, its numbers and its cost.
//
// static_warnings() needs no simulation (layout, memory budget, matmul sizes);
// dynamic_warnings() reads a simulated Result (bubble, stragglers, imbalance, TP
// exposure). Codes: out-of-memory, tp-crosses-nodes, stage-imbalance,
// small-microbatch, straggler, bubble, moe-imbalance, zero1-grad-reduce-ignored,
// grad-reduce-ignored.
#pragma once

#include <vector>

#include "workloads/build/program_builder.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

std::vector<Warning> static_warnings(const Scenario& s, const BuiltProgram& bp, const LayoutReport& plan);
/// The warnings the scenario alone decides, without a program (zero-with-pp,
/// lora-ignored): part of both lists above, and what a remedy is checked against before
/// it is offered. O(1).
std::vector<Warning> scenario_warnings(const Scenario& s);
/// `unrecorded_ops`: the simulated ops when they were too many to keep the critical
/// path's traces (simulation.critical_path_ops), else 0.
std::vector<Warning> dynamic_warnings(const Scenario& s, const BuiltProgram& bp, const Result& r, std::size_t unrecorded_ops);

}  // namespace ls::wl

// workloads/analysis/metrics.hpp — folds the engine's per-rank statistics, the network's link
// counters and the critical-path walk into a Result, one function per metric family.
//
// Each function writes only its own Result fields and reads the first step's
// RankStats (later steps only contribute step times), so the families can be read
// and tested one at a time.
#pragma once

#include <vector>

#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "sim/time.hpp"
#include "topology/cluster.hpp"
#include "workloads/analysis/critical_path.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// Nearest-rank percentile (q in (0, 1]) of `values`; 0 when empty.
double percentile(std::vector<double> values, double q);

/// step_stats and step_time_s from the per-step times (seconds).
void fold_step_times(Result& res, const std::vector<double>& step_s);
/// FLOPs per step, tokens/s, TFLOP/s per GPU, MFU, HFU (needs step_time_s).
void fold_flops(Result& res, const Scenario& sc, const BuiltProgram& bp, const std::vector<sim::RankStats>& stats);
/// Pipeline shape, per-stage compute, bubble and idle fractions.
void fold_pipeline(Result& res, const Scenario& sc, const BuiltProgram& bp, const std::vector<sim::RankStats>& stats,
                   double first_step_s);
/// Bytes and exposed time per axis, averaged over the axis' members
/// (expert-data-parallel traffic is reported as dp).
void fold_comm(Result& res, const Scenario& sc, const sim::Program& prog, const std::vector<sim::RankStats>& stats);
/// Routing figures of a MoE model (nothing for dense models).
void fold_moe(Result& res, const Scenario& sc, const BuiltProgram& bp);
/// Per-kind link totals and the ten busiest links over [0, run_end].
void fold_links(Result& res, const topo::Cluster& cluster, const sim::FlowNetwork& net, sim::Time run_end);
/// Static memory per stage plus the measured activation peak of its ranks.
/// Per-stage compute time by kind of kernel, as the program builder priced it.
void fold_compute_breakdown(Result& res, const BuiltProgram& bp);
void fold_memory(Result& res, const Scenario& sc, const BuiltProgram& bp, const std::vector<sim::RankStats>& stats);
/// Critical-path buckets and shares of the first step.
void fold_critical_path(Result& res, const CriticalWalk& walk, double first_step_s);
/// TP groups whose members sit on more than one node, with one example.
void fold_tp_crossing(Result& res, const topo::Cluster& cluster, const sim::Program& prog);

}  // namespace ls::wl

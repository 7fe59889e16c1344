// workloads/analysis/axis_comm.hpp — what each parallelism axis costs in bytes, per
// FLOP and against compute: the figures one reasons with when choosing a layout
// ("DP moves a few bytes per thousand FLOPs and hides behind backward; TP moves
// hundreds and crosses a link every layer"), read off the built program without
// simulating it, so that `check` and `run` print the same ones.
//
// For one representative rank per pipeline stage (the stage's first rank) it adds
// up, per step:
//   * the bytes the rank sends on each axis: each collective's plan from the same
//     topo::Planner the engine uses (bytes_per_member × repeat; a weighted MoE
//     all-to-all at its uniform volume), each pipeline send's message;
//   * its compute: the nominal durations and hardware FLOPs of its compute ops (an
//     op scaled by the rank's expert load at that load);
//   * for each collective or send, the slowest link (smallest bandwidth × perturbation
//     factor) its plan's flows cross — the group's bottleneck when nothing else shares
//     it — and its bytes at that link's rate.
// Per axis, over the stages whose representative takes part in it:
//   bytes_per_device       mean bytes sent per device per step
//   bytes_per_flop         bytes_per_device / the device's hardware FLOPs per step
//   slowest_link_Bps       the smallest rate any of its plans meets (bytes/s, one direction)
//   time_at_slowest_link_s the sum over its ops of bytes / that op's slowest link: the
//                          axis's traffic serialised, each collective at its worst
//                          link, no overlap, no contention, no latency. With HSDP the
//                          shard group's bytes go at NVLink's rate and the replica
//                          group's at the network's, both under dp.
//   comm_to_compute        time_at_slowest_link_s / the device's compute seconds
// Cost: O(stages × ops per stage) plus one plan per distinct (group, op, bytes).
#pragma once

#include <array>

#include "sim/program.hpp"
#include "topology/cluster.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"
#include "workloads/spec/vocabulary.hpp"

namespace ls::wl {

/// Indexed by Axis; only the reported axes (kReportedAxes) are filled — expert-dp and
/// the HSDP replica group fold into dp, as comm.<axis> reports them. exposed_s stays 0
/// (only a simulation measures it).
using AxisComms = std::array<AxisComm, kAxisCount>;

/// `s` the resolved scenario the program was built from, `cluster` its effective
/// cluster (effective_cluster()).
AxisComms axis_comm_budgets(const Scenario& s, const sim::Program& prog, const topo::Cluster& cluster);

}  // namespace ls::wl

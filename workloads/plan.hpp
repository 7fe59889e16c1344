// workloads/plan.hpp — `layoutsim check`: the resolved layout and the step's budget,
// without simulating.
//
// Every per-step total the plan reports (model and hardware FLOPs, activation
// memory) is summed over the ops of the built program, the same ops `run` replays,
// so the two commands cannot disagree. Cost: O(devices + ops of every stage).
#pragma once

#include <string>
#include <vector>

#include "sim/program.hpp"
#include "topology/spec.hpp"
#include "workloads/resolve.hpp"
#include "workloads/result.hpp"
#include "workloads/spec.hpp"

namespace ls::wl {

// GroupInfo and PlanSummary (what `layoutsim check` prints) live in result.hpp,
// so that diagnostics can read a plan without depending on the planner.

/// One step of a program added up over its ops, as the engine accounts them:
/// expert work scaled by each rank's expert load, memory deltas applied in compute
/// stream order (the only stream whose ops carry memory).
struct ProgramTotals {
  double model_flops = 0;                       // whole cluster
  double hardware_flops = 0;                    // whole cluster
  std::vector<double> activation_peak_bytes;    // per stage: peak of the running memory delta
};
ProgramTotals program_totals(const sim::Program& prog);

/// The scenario's cluster with every link perturbed to bandwidth_factor 0 moved into
/// down_links: a dead link is taken out of routing (ECMP / PXN relays carry its
/// traffic, see topology/cluster.hpp "Down links") rather than given zero capacity,
/// under which its flows would never finish. Other factors keep scaling capacity.
topo::ClusterSpec effective_cluster(const Scenario& s);

/// The plan of a resolved (hence valid) scenario: resolve() has checked every rule,
/// so nothing here re-validates.
PlanSummary plan(const ResolvedScenario& s);

}  // namespace ls::wl

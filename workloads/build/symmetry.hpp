// workloads/build/symmetry.hpp — the symmetric fast path: when the dp replicas of a layout
// are provably alike, simulate replica 0 only (sim::EngineSymmetry) and account the
// others' traffic on the links exactly.
//
// Replica k is the ranks with dp index in [k·ep, (k+1)·ep) (an expert-parallel group
// stays inside one replica); a rank's position is (stage, tp, dp mod ep). Every
// replica runs the same stage programs; what can still make replicas differ is the
// network. The communication of a program falls in two kinds:
//  * cross-replica: a group whose members lie in several replicas (dp, ep, edp): it is
//    one collective for all replicas, simulated in full;
//  * replica-local: tp groups, pipeline transfers: replica k's plan is the mirror of
//    replica 0's (same phases, flows, bytes and latency; links of equal bandwidth).
// A replica-local plan whose links (or whose mirrors' links) are touched by
// cross-replica traffic or by another replica's traffic is "ghosted": every mirror's
// flows run beside replica 0's on the real links (the closure of that rule over
// shared links). They run tied (sim::EngineSymmetry::tied): one network flow per
// place crosses every copy's path at one rate, which is the untied allocation
// exactly when each copy is max-min bottlenecked on its own path; the engine checks
// that after every re-solve and throws SymmetryBroken otherwise (one flow instead of
// R: the events and re-solves of R − 1 copies are saved). The
// other local plans use links no other traffic touches; their mirrors are not run,
// and their link statistics are copied from replica 0's links afterwards.
// Anything that breaks the premise falls back to every rank with a reason.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "sim/program.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

struct SymmetryDecision {
  /// "used", "off" (simulation.symmetry: off) or "broken: <reason>".
  std::string status = "off";
  sim::EngineSymmetry engine;  // replicas == 1 unless used
  /// (replica-0 link, mirror link): after the run, the mirror gets the first's bytes
  /// and busy time once per pair.
  std::vector<std::pair<sim::LinkId, sim::LinkId>> link_copy;
};

/// Decides whether the scenario can run on its symmetric fast path and prepares the
/// engine's tables. `planner` must be the one the engine will use (plans are matched
/// by address). `traced`: the ranks a trace draws (when one lies outside replica 0,
/// every mirror runs as ghosts: the trace watches its links). Cost: O(replicas ·
/// local plans · path length).
SymmetryDecision decide_symmetry(const Scenario& sc, const sim::Program& prog, sim::CommPlanner& planner,
                                 const std::vector<double>& link_bandwidth, const std::vector<int>& traced);

}  // namespace ls::wl

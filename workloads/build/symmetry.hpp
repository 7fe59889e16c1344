// workloads/build/symmetry.hpp — the symmetric fast path: the dp replicas of a layout
// fall into classes of provably alike ones; one replica per class runs (its runner,
// sim::EngineSymmetry), and the others' traffic is accounted on the links exactly.
//
// Replica k is the ranks with dp index in [k·ep, (k+1)·ep) (an expert-parallel group
// stays inside one replica); a rank's position is (stage, tp, dp mod ep, cp). Every
// replica runs the same stage programs; what can still make replicas differ is the
// network and the devices. The communication of a program falls in two kinds:
//  * cross-replica: a group whose members lie in several replicas (dp, ep, edp): it is
//    one collective for all replicas, simulated in full;
//  * replica-local: tp groups, pipeline transfers: replica k's copy of replica 0's plan
//    is what replica k's ranks ask the planner for.
// Two replicas are in one class when every local plan's copies have the same phases,
// flows, bytes, latencies, path lengths and link bandwidths along each path, and every
// position has the same compute factor (a straggler's replica is a class of its own)
// and expert load. A fabric with a partly filled leaf, ToR groups, uneven rails, a
// down or slowed link then costs a few classes, not every rank.
// A local plan whose links (or whose copies' links) are touched by cross-replica
// traffic or by another replica's traffic is "ghosted": every copy's flows run on the
// real links, tied to their runner's (sim::EngineSymmetry::tied): one network flow per
// place crosses the paths of every copy in the class at one rate, which is the untied
// allocation exactly when each copy is max-min bottlenecked on its own path; the
// engine checks that after every re-solve and throws SymmetryBroken otherwise (one
// flow instead of one per replica: their events and re-solves are saved). A copy's link
// that mirrors its runner's twin (paired one to one by every ghosted plan, equal
// bandwidth, no other replica's local traffic, the same cross-replica flows) is left
// out of the tied flow: the twin stands in for it in the check and, after the run, in
// its statistics (SymmetryDecision::link_mirror). Classes
// also split by how crowded each copy's path is, so that copies meeting different
// loads on shared links (hashed routes through the spines) get runners of their own.
// The other local plans use links no other traffic touches; their copies in replicas
// that do not run are not run, and their link statistics are copied from the
// runner's links afterwards. Anything that breaks the premise falls back to every
// rank with a reason.
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
  /// Replica classes, one runner each (0 unless used).
  int classes = 0;
  /// (runner's link, mirror link): after the run, the mirror gets the first's bytes
  /// and busy time once per pair.
  std::vector<std::pair<sim::LinkId, sim::LinkId>> link_copy;
  /// (runner's link, mirrored link): tied flows leave the second out (it carries the
  /// same flows as the first, at the same rates); after the run it gets the first's
  /// statistics (FlowNetwork::copy_link_stats).
  std::vector<std::pair<sim::LinkId, sim::LinkId>> link_mirror;
};

/// What the decision reads besides the scenario and the program.
struct SymmetryInputs {
  std::vector<double> link_bandwidth;  // per link, as the network runs it (perturbations applied)
  std::vector<double> compute_factor;  // per rank (device slowdowns)
  /// The ranks a trace draws (when one lies in a replica that does not run, every
  /// local plan runs as ghosts: the trace watches its links).
  std::vector<int> traced;
  /// Also split classes by how many flows of every plan cross each link of a copy's
  /// path: more classes, but fewer runs that the engine's bottleneck check refuses
  /// (the caller tries without first, then with).
  bool split_by_load = false;
};

/// Decides whether the scenario can run on its symmetric fast path and prepares the
/// engine's tables. `planner` must be the one the engine will use (plans are matched
/// by address). Cost: O(replicas · local plans · path length · log replicas).
SymmetryDecision decide_symmetry(const Scenario& sc, const sim::Program& prog, sim::CommPlanner& planner, const SymmetryInputs& in);

}  // namespace ls::wl

// workloads/simulate.hpp — the public entry points: plan a scenario (no simulation)
// and simulate it (build the cluster, build every rank's program, replay it on the
// engine, fold the recorder into a Result).
#pragma once

#include <string>
#include <vector>

#include "workloads/resolve.hpp"
#include "workloads/result.hpp"
#include "workloads/spec.hpp"

namespace ls::wl {

struct SimOptions {
  bool trace = false;             // keep spans/counters for the Chrome trace
  int trace_max_devices = 64;     // trace at most this many devices (lowest stage-major ranks first)
  /// Price the warnings by simulating the fix (no straggler, balanced stages, TP
  /// inside nodes). Each what-if is one more simulation, run only when its warning fires.
  bool what_if = true;
};

/// What `layoutsim check` prints: the resolved layout and the analytic budget.
struct GroupInfo {
  std::string axis;                      // "tp", "dp", "pp", "ep"
  std::vector<std::string> devices;      // GPU names, ring order
  bool crosses_nodes = false;
  std::vector<std::string> link_kinds;   // kinds of link the group's traffic uses
};

struct PlanSummary {
  int devices = 0;
  std::vector<int> stage_layers;         // per stage
  std::vector<GroupInfo> groups;         // one representative group per axis, plus every node-crossing TP group
  double bubble_fraction_analytic = 0;
  std::vector<MemoryTerms> memory_per_stage;  // analytic budget
  double memory_capacity_bytes = 0;
  double params_total = 0;
  double model_flops_per_step = 0;
  std::vector<Warning> warnings;
};

/// The plan of a resolved (hence valid) scenario: resolve() has checked every rule,
/// so nothing here re-validates.
PlanSummary plan(const ResolvedScenario& s);

/// Runs the simulation. Throws std::runtime_error on a deadlocked schedule, with a
/// message naming the waiting ranks and what each waits on.
Result simulate(const ResolvedScenario& s, const SimOptions& opts = {});

}  // namespace ls::wl

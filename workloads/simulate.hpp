// workloads/simulate.hpp — the public entry points: plan a scenario (no simulation)
// and simulate it (build the cluster, build every rank's program, replay it on the
// engine, fold the recorder into a Result).
#pragma once

#include <string>
#include <vector>

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

/// PlanSummary and GroupInfo (what `layoutsim check` prints) are in result.hpp.

/// Throws std::invalid_argument if the scenario fails validation (the loader
/// validates first, so this only happens for hand-built scenarios).
PlanSummary plan(const Scenario& s);

/// Runs the simulation. Throws std::runtime_error on a deadlocked schedule, with a
/// message naming the waiting ranks and what each waits on.
Result simulate(const Scenario& s, const SimOptions& opts = {});

}  // namespace ls::wl

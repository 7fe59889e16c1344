// workloads/layout_report.hpp — `layoutsim check`: the layout report — the resolved layout and the step's budget,
// without simulating.
//
// Every per-step total the report holds (model and hardware FLOPs, activation
// memory) is summed over the ops of the built program, the same ops `run` replays,
// so the two commands cannot disagree. Cost: O(devices + ops of every stage).
#pragma once

#include <string>
#include <vector>

#include "workloads/resolve.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

// GroupInfo and LayoutReport (what `layoutsim check` prints) live in result.hpp,
// so that diagnostics can read a report without depending on this entry point.

/// The layout report of a resolved (hence valid) scenario: resolve() has checked every rule,
/// so nothing here re-validates.
LayoutReport layout_report(const ResolvedScenario& s);

}  // namespace ls::wl

// workloads/cost/hardware_checks.hpp — what a scenario asks of its hardware and the hardware
// cannot do: FP8 / MXFP8 compute on a GPU without those tensor cores, an NVLink domain
// that is not whole nodes. Called by resolve() (resolve.hpp) with the other checks.
#pragma once

#include <vector>

#include "workloads/spec/scenario_issue.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// One issue per rule broken, keyed to precision.compute or cluster.nvlink_domain. O(1).
std::vector<ScenarioIssue> hardware_issues(const Scenario& s);

}  // namespace ls::wl

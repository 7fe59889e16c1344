// workloads/advice/what_if.hpp — prices a warning by simulating its fix.
//
// For straggler, stage-imbalance, moe-imbalance and tp-crosses-nodes the fix is a
// changed scenario (no slow device, balanced stages, balanced routing, TP inside
// nodes); its step time, compared with the measured one, is appended to the
// warning's message. Each what-if is one more simulation, run only when its
// warning fired.
#pragma once

#include <functional>

#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// Simulates a scenario (without what-ifs) and returns its mean step time in s.
/// Passed in by simulate() so this file does not depend back on it.
using StepTimeOf = std::function<double(const Scenario&)>;

/// Appends the priced fix to each warning of `res` that has one.
void price_warnings(const Scenario& sc, Result& res, const StepTimeOf& step_time_of);

}  // namespace ls::wl

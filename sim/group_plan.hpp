// sim/group_plan.hpp — the one place where a group's collective op becomes a planner
// request. The engine, the symmetry decider and the per-axis byte report all ask here,
// so that they price the same plan: a weighted all-to-all (MoE routing) as a bytes
// matrix, a node-limited MoE dispatch as its relayed pattern, any other collective as
// the planner's algorithm for it.
#pragma once

#include <cstdint>
#include <span>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"

namespace ls::sim {

/// The plan of collective `coll` of `bytes` per member (`variant`: the all-to-all's
/// direction, 0 dispatch, 1 combine) over `devices`, the group's GPUs in member order.
const CommPlan& group_collective_plan(CommPlanner& planner, const Program& program, std::span<const std::int32_t> devices,
                                      CollOp coll, double bytes, std::uint8_t variant);

}  // namespace ls::sim

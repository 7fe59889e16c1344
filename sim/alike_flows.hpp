// sim/alike_flows.hpp — one network flow for each set of a phase's alike flows.
//
// The flows of one phase of a collective often come in sets that nothing in the
// fabric tells apart: the 56 NVSwitch flows of an all-to-all inside a node of 8, the
// same-rail flows between its nodes. Max-min fairness gives such
// flows one rate as long as nothing else tells them apart, so one network flow may
// cross all their paths at one rate (a link on several of them carrying it that many
// times: the network's multiplicity) and stand for them: one start, one finish and one
// place in each re-solve instead of one per flow. That is the allocation of the
// unfolded flows exactly when each copy is max-min bottlenecked on its own path
// (Bertsekas & Gallager, "Data Networks", §6.5.2: a feasible allocation is max-min
// fair iff every flow has a bottleneck link); the engine checks it after every
// re-solve (FlowNetwork::each_part_bottlenecked) and throws AlikeFlowsDiffer when a
// copy would run at another rate, and the caller runs again unfolded.
//
// Which flows fold: those of one phase with equal bytes, efficiency, copies and path
// length whose paths read alike link by link (the same capacity, and the same sizes of
// the phase's flows crossing it: a skewed all-to-all's flows into one GPU have equal
// bytes but leave GPUs that send unequal loads, so they stay apart). That is a guess
// at symmetry; the check makes it exact.
#pragma once

#include <stdexcept>

#include "sim/comm_plan.hpp"
#include "sim/network.hpp"

namespace ls::sim {

/// A folded flow's copies would not all run at its rate (their paths meet different
/// traffic): the run must be repeated with the flows unfolded.
class AlikeFlowsDiffer : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// `plan` with each set of alike flows of a phase folded into one flow (PlanFlow::copies
/// is the number it stands for, times that of each; its path is theirs one after the
/// other, in plan order). Phases, latencies and bytes_per_member are kept; a flow with
/// no alike partner is kept as it is. Capacities are read from `network`.
/// Cost: O(links of the plan · log flows of a phase).
CommPlan fold_alike_flows(const CommPlan& plan, const FlowNetwork& network);

}  // namespace ls::sim

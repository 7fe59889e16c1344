// workloads/build/rank_groups.hpp — the device mesh as ranks and communication groups.
//
// Fills a Program's rank table (device, stage, coordinates, expert load), its groups
// (tp, dp, ep, expert-dp; members in ring order) and its pipeline-peer table. The
// per-stage op templates are built separately (stage_emitter.hpp).
// Cost: O(devices · pp) for the peer table, O(devices · log groups) for the groups.
#pragma once

#include "sim/program.hpp"
#include "workloads/model/moe.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// `routing`: the MoE token routing (nullptr for dense models); sets each rank's
/// work_scale. Replaces prog.ranks, prog.groups and prog.pp_peer (so a built program can
/// be re-placed); leaves prog.stages and prog.all_to_all_weight untouched.
void assign_ranks_and_groups(const Scenario& s, const Routing* routing, sim::Program& prog);

}  // namespace ls::wl

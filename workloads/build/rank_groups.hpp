// workloads/build/rank_groups.hpp — the device mesh as ranks and communication groups.
//
// Fills a Program's rank table (device, stage, coordinates, expert load), its groups
// (tp, dp, ep, expert-dp; members in ring order) and its pipeline-peer table. The
// per-stage op templates are built separately (stage_emitter.hpp).
// Cost: O(devices · pp) for the peer table, O(devices · log groups) for the groups.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <vector>

#include "sim/program.hpp"
#include "workloads/model/moe.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// `routing`: the MoE token routing (nullptr for dense models); sets each rank's
/// work_scale. Replaces prog.ranks, prog.groups and prog.pp_peer (so a built program can
/// be re-placed); leaves prog.stages and prog.all_to_all_weight untouched.
void assign_ranks_and_groups(const Scenario& s, const Routing* routing, sim::Program& prog);
/// The expert routing the rank table is made with: route_tokens over the ep group for
/// a mixture-of-experts model, none for a dense one.
std::optional<Routing> expert_routing(const Scenario& s);

/// The scenario fields assign_ranks_and_groups reads (the model's shape aside): two
/// scenarios equal in them get the same rank table. Kept beside the function so the two
/// change together (the search keeps one table per key, tools/study/search_estimate.hpp).
struct RankTableKey {
  explicit RankTableKey(const Scenario& s);
  int dp, tp, pp, cp, ep, expert_tp, shard_group;
  bool shard_over_cp;
  std::vector<std::string> placement;
  /// The pp slot's pairs of end stages, where a tied table is split over the pipeline
  /// (stage_memory.hpp tied_head_copy: the schedule and the model decide).
  bool tied_pair;
  auto operator<=>(const RankTableKey&) const = default;
};

}  // namespace ls::wl

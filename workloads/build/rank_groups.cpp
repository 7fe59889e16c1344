// workloads/build/rank_groups.cpp — see rank_groups.hpp.
#include "workloads/spec/vocabulary.hpp"
#include "workloads/build/rank_groups.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "workloads/build/stage_memory.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/schedule.hpp"

namespace ls::wl {

std::optional<Routing> expert_routing(const Scenario& s) {
  if (s.model.moe.experts <= 0) return std::nullopt;
  return route_tokens(s.model.moe, s.layout.ep);
}

RankTableKey::RankTableKey(const Scenario& s)
    : dp(s.layout.dp), tp(s.layout.tp), pp(s.layout.pp), cp(s.layout.cp), ep(s.layout.ep), expert_tp(s.layout.expert_tp),
      shard_group(s.layout.shard_group), shard_over_cp(s.layout.shard_over_cp), placement(s.layout.placement),
      tied_pair(tied_head_copy_trained(s)) {}

void assign_ranks_and_groups(const Scenario& sc, const Routing* routing, sim::Program& prog) {
  const auto& L = sc.layout;
  const int p = L.pp, t = L.tp, d = L.dp, c = L.cp;
  const Mesh mesh(d, t, p, L.placement, c);
  const int D = mesh.size();
  prog.ranks.assign(static_cast<std::size_t>(D), sim::RankInfo{});
  prog.groups.clear();
  prog.pp_peer.assign(static_cast<std::size_t>(D) * static_cast<std::size_t>(p), -1);
  const int pp_stride = p > 1 ? mesh.rank(Coord{0, 0, 1, 0}) - mesh.rank(Coord{0, 0, 0, 0}) : 0;
  // Group ids: tp groups indexed by (dp·cp, pp), dp groups by (tp, pp) — a dp group
  // spans every (dp, cp) coordinate: weight gradients reduce over dp·cp ranks
  // (Megatron-Core's data-parallel-with-context-parallel group) — cp groups by (tp, dp·pp).
  // (axis, a, b) -> group, numbered in the order first met. Each axis's (a, b) pairs
  // index a flat table at a·B + b (B: the bound of b at that call): no hashing and no
  // allocation per lookup, since the search assigns ranks for every candidate it
  // estimates.
  std::array<std::vector<int>, kAxisCount> ids;
  auto group_of = [&](Axis ax, int a, int b, int b_bound) {
    if (b < 0 || b >= b_bound || a < 0) throw std::logic_error("assign_ranks_and_groups: a group coordinate outside its bound");
    auto& table = ids[static_cast<std::size_t>(ax)];
    const std::size_t at = static_cast<std::size_t>(a) * static_cast<std::size_t>(b_bound) + static_cast<std::size_t>(b);
    if (at >= table.size()) table.resize(at + 1, -1);
    if (table[at] < 0) {
      table[at] = static_cast<int>(prog.groups.size());
      prog.groups.push_back(sim::Group{slot(ax), {}});
    }
    return table[at];
  };
  const bool experts = sc.model.moe.experts > 0 || L.ep > 1;
  const int g = shard_degree(L), replicas = d / g;  // HSDP's shard and replica groups (below)
  const int etp = expert_tp_of(L), edp = expert_dp_of(L);
  // A tied table split over the pipeline: the stages of its two ends pair up, rank with
  // the rank of the same (dp, cp, tp), to sum the copies' gradients (stage_memory.hpp
  // tied_head_copy). Its traffic crosses the pipeline: the pp slot holds the pair.
  int tie_first = -1, tie_last = -1;
  if (tied_head_copy_trained(sc)) {
    tie_first = place_model_chunk(L.schedule, p, 0).first;
    tie_last = place_model_chunk(L.schedule, p, model_chunk_count(L.schedule, p, L.virtual_stages) - 1).first;
  }
  Coord co = mesh.coord(0);  // rank r's, stepped at the end of each pass
  for (int r = 0; r < D; ++r, mesh.next(co)) {
    auto& ri = prog.ranks[static_cast<std::size_t>(r)];
    ri.device = r;
    ri.stage = co.pp;
    ri.dp = co.dp;
    ri.tp = co.tp;
    if (t > 1) ri.group[static_cast<int>(Axis::tp)] = group_of(Axis::tp, co.dp * c + co.cp, co.pp, p);
    if (c > 1) ri.group[static_cast<int>(Axis::cp)] = group_of(Axis::cp, co.tp, co.pp * d + co.dp, p * d);
    if (co.pp == tie_first || co.pp == tie_last) ri.group[static_cast<int>(Axis::pp)] = group_of(Axis::pp, co.dp * c + co.cp, co.tp, t);
    // HSDP: the dp slot is the shard group (g consecutive dp indices, inside a node
    // when the placement puts dp right after tp, as PyTorch's device mesh does) and the
    // replica group joins the ranks with the same index in every shard group. Without
    // HSDP (g = dp) the dp group spans every (dp, cp) coordinate; resolve() refuses HSDP
    // with cp > 1 unless ZeRO shards over dp alone.
    if (replicas == 1 && L.shard_over_cp) {
      if (d * c > 1) ri.group[static_cast<int>(Axis::dp)] = group_of(Axis::dp, co.tp, co.pp, p);
    } else if (L.shard_over_cp) {
      if (g > 1) ri.group[static_cast<int>(Axis::dp)] = group_of(Axis::dp, co.tp, co.pp * replicas + co.dp / g, p * replicas);
      ri.group[static_cast<int>(Axis::dpr)] = group_of(Axis::dpr, co.tp, co.pp * g + co.dp % g, p * g);
    } else {
      // ZeRO over dp alone (layout.shard_over: [dp]): the shard group is g dp ranks of
      // one cp index; the replica group joins the ranks with the same place in their
      // shard group across the other shard groups and every cp index.
      if (g > 1) ri.group[static_cast<int>(Axis::dp)] = group_of(Axis::dp, co.tp, (co.pp * c + co.cp) * replicas + co.dp / g, p * c * replicas);
      if (replicas * c > 1) ri.group[static_cast<int>(Axis::dpr)] = group_of(Axis::dpr, co.tp, co.pp * g + co.dp % g, p * g);
    }
    // The expert layers fold the stage's tp·cp·dp ranks into expert_tp × ep ×
    // expert-dp (expert_coord): an ep group shares the experts, an expert-dp group
    // holds the same ones and reduces their gradients, an expert-tp group (when it is
    // not the tp group) splits each expert's MLP. With expert_tp = tp and cp = 1, ep
    // consecutive dp indices form an ep group (Megatron's ep carved out of dp).
    // A dense model without ep has none of these groups, and every rank is ep index 0.
    if (experts) {
      const ExpertCoord ec = expert_coord(L, co);
      if (L.ep > 1) ri.group[static_cast<int>(Axis::ep)] = group_of(Axis::ep, ec.etp, co.pp * edp + ec.edp, p * edp);
      if (sc.model.moe.experts > 0 && edp > 1)
        ri.group[static_cast<int>(Axis::edp)] = group_of(Axis::edp, ec.etp, co.pp * L.ep + ec.ep, p * std::max(1, L.ep));
      if (sc.model.moe.experts > 0 && etp > 1 && etp != t)
        ri.group[static_cast<int>(Axis::etp)] = group_of(Axis::etp, ec.ep, co.pp * edp + ec.edp, p * edp);
      ri.ep = ec.ep;
    }
    if (routing) ri.work_scale = routing->device_factor[static_cast<std::size_t>(ri.ep)];
    // The rank of (dp, tp, st, cp) is affine in st (Mesh::rank: a stride per axis).
    const int stage0 = r - co.pp * pp_stride;
    for (int st = 0; st < p; ++st)
      prog.pp_peer[static_cast<std::size_t>(r) * static_cast<std::size_t>(p) + static_cast<std::size_t>(st)] = stage0 + st * pp_stride;
  }
  // Members in axis-coordinate order (ring order follows the placement's neighbours),
  // each group's list sized once: the search fills thousands of small ones per candidate.
  std::vector<std::uint32_t> members(prog.groups.size(), 0);
  for (const auto& ri : prog.ranks)
    for (int ax = 0; ax < kAxisCount; ++ax)
      if (ri.group[static_cast<std::size_t>(ax)] >= 0) ++members[static_cast<std::size_t>(ri.group[static_cast<std::size_t>(ax)])];
  for (std::size_t gi = 0; gi < prog.groups.size(); ++gi) prog.groups[gi].ranks.reserve(members[gi]);
  for (int r = 0; r < D; ++r) {
    const auto& ri = prog.ranks[static_cast<std::size_t>(r)];
    for (int ax = 0; ax < kAxisCount; ++ax)
      if (ri.group[static_cast<std::size_t>(ax)] >= 0)
        prog.groups[static_cast<std::size_t>(ri.group[static_cast<std::size_t>(ax)])].ranks.push_back(r);
  }
}

}  // namespace ls::wl

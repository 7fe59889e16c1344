// topology/collective_costs.hpp — what a collective costs beyond its bytes on the links:
// a cost model in the spirit of NCCL's own tuner (src/graph/tuning.cc).
//
// The Planner (planner.hpp) turns every collective into flows on the cluster's links;
// this model adds what the links alone do not show:
//   * fixed_cost: once per collective (kernel launch and the start-of-collective
//     synchronisation), on its first phase;
//   * per link kind, a per-step latency floor: one ring step over a hop costs at
//     least the floor of the slowest link kind on its route (the protocol's
//     handshake: flags, flushes, proxy thread), or the route's own latency if larger;
//   * per link kind, an efficiency: the fraction of the line rate a collective
//     achieves (bus bandwidth as nccl-tests reports it, over the line rate). A flow
//     carries payload/efficiency of its bottleneck link (the one with the least
//     line rate × efficiency on its path), so it drains in payload/(B·efficiency);
//     per-link byte counters then count that wire-time equivalent;
//   * algorithms as NCCL picks them at scale: reduce-scatter and all-gather as one
//     flat ring over all ranks, split into one channel per GPU of a node (at most
//     NCCL's 64) so that every rail (NIC) carries its share; all-reduce as that flat ring or as a
//     double binary tree, whichever the model predicts cheaper.
//
//   * for a ring over several nodes, a floor under every step's latency, those inside a
//     node included: the host's proxy thread posts each step (multi_node_ring_step).
//
// Closed forms on a uniform ring of n ranks, step latency α, line rate B, efficiency
// e, fixed cost F (tests/test_planner.cpp checks them):
//   ring all-reduce            F + 2(n−1)(α + S/(n·B·e))
//   reduce-scatter/all-gather  F + (n−1)(α + S/(n·B·e))
//   tree all-reduce (N nodes × k GPUs)
//                              F + 2((k−1)α_intra + ⌈log2 N⌉α_inter) + 2S/(t·B_bottleneck·e)
//     with t = tree_bandwidth_factor: NCCL's tuner scales the tree's bus bandwidth by
//     0.92 and counts 2S of traffic per rank (its "ratio .5" for trees).
// A zero-byte collective costs nothing (no phases).
//
// Every number below is one profile: default_collective_costs() (DGX H100 class),
// blackwell_collective_costs() (DGX B200, GB200/GB300 NVL72) and
// dgx_a100_collective_costs(). wire_only() reproduces the plans from before this model
// (line rate, route latency only, two-level reduce-scatter/all-gather and the
// hierarchical all-reduce across nodes) and is what Planner uses unless told.
#pragma once

#include <array>
#include <cstddef>

#include "sim/time.hpp"
#include "topology/kinds.hpp"

namespace ls::topo {

struct LinkKindCost {
  /// Achievable fraction of the line rate, in (0, 1].
  double efficiency = 1.0;
  /// Least latency of one ring step over a hop whose slowest link is of this kind,
  /// in [0, 1 ms]. The step costs max(route latency, this).
  sim::Time step_latency;
};

struct CollectiveCostModel {
  /// Once per collective, in [0, 1 ms].
  sim::Time fixed_cost;
  /// Indexed by LinkKind.
  std::array<LinkKindCost, kLinkKindNames.size()> per_kind{};
  /// NCCL's algorithms at scale (flat multi-channel rings, tree all-reduce). False:
  /// the two-level reduce-scatter/all-gather and hierarchical all-reduce of before.
  bool nccl_algorithms = false;
  /// All-reduce may use the double binary tree where it is predicted cheaper.
  bool tree_all_reduce = false;
  /// Tree bus bandwidth over ring bus bandwidth, in (0, 1].
  double tree_bandwidth_factor = 0.92;
  /// Least latency of every step of a ring that spans several nodes, its steps inside
  /// a node included, in [0, 1 ms]: each step's network work is posted by NCCL's proxy
  /// thread on the host, so the host's per-step overhead bounds them all.
  sim::Time multi_node_ring_step;

  const LinkKindCost& operator[](LinkKind kind) const { return per_kind[static_cast<std::size_t>(kind)]; }
  LinkKindCost& operator[](LinkKind kind) { return per_kind[static_cast<std::size_t>(kind)]; }

  /// Throws std::invalid_argument naming the field out of its bounds.
  void validate() const;

  /// Line rate, route latency only, the pre-NCCL-model algorithms.
  static CollectiveCostModel wire_only();
};

/// DGX H100 class: NVLink 4 through NVSwitch, NDR InfiniBand, PCIe Gen5. The values
/// and their sources are in collective_costs.cpp.
CollectiveCostModel default_collective_costs();
/// NVLink 5 class: DGX B200 / B300 (8 GPUs on NVSwitch) and GB200 / GB300 NVL72 (72 GPUs
/// on one multi-node NVLink Switch fabric, cluster.nvlink_domain), NDR/XDR InfiniBand.
CollectiveCostModel blackwell_collective_costs();
/// DGX A100 class: NVLink 3 through NVSwitch, HDR InfiniBand, PCIe Gen4.
CollectiveCostModel dgx_a100_collective_costs();

}  // namespace ls::topo

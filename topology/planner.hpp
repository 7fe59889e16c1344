// topology/planner.hpp — turns collectives and transfers into flow plans on a Cluster.
//
// Two sets of algorithms, chosen by the CollectiveCostModel the planner is given
// (collective_costs.hpp):
//  * nccl_algorithms (default_collective_costs(), dgx_a100_collective_costs()): what
//    NCCL runs at scale, with its costs. Reduce-scatter/all-gather: one flat ring
//    over all n ranks, (n−1) steps; across N nodes of k members, k channel rings
//    (each S/k, one per rail, at most NCCL's 64; see planner.cpp, channel_order). All-reduce: that flat
//    ring with 2(n−1) steps, or NCCL's double binary tree where predicted cheaper.
//    Each hop's α is max(route latency, the step latency of its slowest link kind);
//    a ring's steps cost the sum of its hops' α less the largest (NCCL's count: n−N
//    intra-node and N−1 inter-node steps per pass); each flow carries
//    payload/efficiency of its bottleneck link; each collective pays fixed_cost once;
//    a zero-byte collective has no phases.
//  * wire-only (CollectiveCostModel::wire_only(), the default): the model below.
//
// Wire-only algorithms (ring family; α = route latency of one ring hop, taken as the
// largest route latency among the phase's hops; S = per-member buffer bytes). A ring
// is ONE flow whose path is the concatenation of its hop routes (a link on several
// hops appears several times: FlowNetwork multiplicity), carrying what each hop
// carries — the ring moves in lock-step at its bottleneck hop (see planner.cpp):
//   all-reduce, flat ring      one phase, one ring flow of 2(n−1)/n·S, latency 2(n−1)α.
//                              Time on a uniform ring: 2(n−1)(α + S/(nB)) exactly.
//   all-reduce, hierarchical   chosen when the group spans > 1 node with the same
//                              number k > 1 of GPUs on each of its N nodes:
//                              1. intra-node reduce-scatter: one ring flow per node,
//                                 (k−1)/k·S, latency (k−1)α_intra;
//                              2. inter-node all-reduce: one ring flow per rail (the
//                                 j-th GPU of every node), 2(N−1)/N·S/k, 2(N−1)α_inter;
//                              3. intra-node all-gather, as phase 1.
//   reduce-scatter/all-gather  within one node, or when the group is not k > 1 GPUs on
//                              each of N nodes: flat ring flow of (n−1)/n·S, latency (n−1)α.
//                              Otherwise two levels, like the hierarchical all-reduce:
//                              reduce-scatter = intra-node RS ring per node ((k−1)/k·S,
//                              (k−1)α_intra), then inter-node RS ring per rail
//                              ((N−1)/N·S/k, (N−1)α_inter); all-gather = the mirror
//                              (per-rail AG first, then intra-node AG).
//   all-to-all                 one phase, flow i→j of S/n for every i≠j, latency α.
//   broadcast                  pipelined chain from devices[0]: one flow of S bytes
//                              over the n−1 hops, latency (n−1)α, i.e. S/B + (n−1)α
//                              when the hops' links are disjoint (chunk → 0).
//   transfer                   one flow of S bytes on the route, latency = route latency.
// A single-member group (or a transfer to oneself) has no phases.
//
// ECMP: each hop's (or pairwise flow's) hash is a mix of (src, dst, member index), so
// the hops of one collective spread over the spines deterministically.
//
// Ownership and lifetime: the planner keeps a reference to the Cluster (which must
// outlive it) and owns every plan it returns; returned references stay valid for
// the planner's lifetime. Plans are cached by (devices, op, bytes) and
// (src, dst, bytes): a lookup costs O(n) hashing of the device list. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/comm_plan.hpp"
#include "topology/cluster.hpp"
#include "topology/collective_costs.hpp"

namespace ls::topo {

/// A plan's time on an idle network (no other collective running): per phase, each
/// flow gets every link's capacity shared equally among the flow traversals on it
/// (max-min's answer when the flows are alike) and drains; the phase adds its latency.
/// What NCCL's tuner does with its own model: the planner picks ring or tree by it, and
/// the search's analytic stage prices collectives with it.
double idle_network_seconds(const Cluster& c, const sim::CommPlan& plan);

class Planner : public sim::CommPlanner {
public:
  /// `ideal`: every plan has no phases (communication is free) but still reports
  /// bytes_per_member, so byte accounting is the same as on a real network.
  /// `costs`: see collective_costs.hpp; validated here (std::invalid_argument).
  explicit Planner(const Cluster& cluster, bool ideal = false,
                   CollectiveCostModel costs = CollectiveCostModel::wire_only());
  ~Planner() override;

  const sim::CommPlan& collective(std::span<const std::int32_t> devices, sim::CollOp op, double bytes) override;
  const sim::CommPlan& transfer(std::int32_t src_device, std::int32_t dst_device, double bytes) override;

  /// Skewed all-to-all (MoE dispatch/combine): `bytes_matrix` is n×n row-major, entry
  /// (i, j) = bytes member i sends to member j (diagonal and zero entries ignored).
  /// One phase, latency α (largest route latency among the non-empty flows);
  /// bytes_per_member = mean over members of the bytes each sends. Cached by
  /// content (the matrix is part of the key), so a repeated routing is free.
  const sim::CommPlan& all_to_all(std::span<const std::int32_t> devices, std::span<const double> bytes_matrix);
  const sim::CommPlan& all_to_all_matrix(std::span<const std::int32_t> devices,
                                         std::span<const double> bytes_matrix) override {
    return all_to_all(devices, bytes_matrix);
  }

  /// Node-limited MoE dispatch (see sim::NodeLimitedDispatch): over N nodes of k
  /// members each, member i sends S/k·q(N) to the member with its local index on
  /// every other node (q: the share of tokens that select a node, one copy per node)
  /// and S/k to every other member of its own node (its own tokens' pairs for that
  /// member plus the pairs it relays from the N−1 other nodes: N·S/(N·k)). The
  /// pattern is symmetric, so the combine moves the same bytes back. One phase: the
  /// relay forwards while it receives (DeepEP's kernels overlap the two). A group
  /// within one node, or with unequal members per node, sends every pair directly
  /// (the uniform all-to-all). Cached by content.
  const sim::CommPlan& node_limited_all_to_all(std::span<const std::int32_t> devices, double pair_bytes,
                                               const sim::NodeLimitedDispatch& dispatch) override;

  /// True when collective(devices, all_reduce, ·) uses the hierarchical algorithm
  /// (wire-only model only).
  bool uses_hierarchical_all_reduce(std::span<const std::int32_t> devices) const;
  /// True when collective(devices, all_reduce, bytes) uses the tree (NCCL model only).
  /// Builds both candidate plans: O(plan size), not cached.
  bool all_reduce_uses_tree(std::span<const std::int32_t> devices, double bytes) const;
  const CollectiveCostModel& costs() const { return costs_; }

  bool ideal() const { return ideal_; }
  const Cluster& cluster() const { return cluster_; }
  /// Number of distinct plans held (all caches together).
  std::size_t cached_plans() const;

private:
  struct Key {
    std::vector<std::int32_t> devices;
    std::uint8_t op = 0;              // CollOp, or 255 for transfers, 254 for matrix all-to-all
    std::vector<double> values;       // bytes (one value) or the bytes matrix
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };

  sim::CommPlan build_collective(std::span<const std::int32_t> devices, sim::CollOp op, double bytes) const;
  sim::CommPlan build_nccl_collective(std::span<const std::int32_t> devices, sim::CollOp op, double bytes) const;
  /// Flat ring (channel rings when per_node is not empty) moving `bytes` per member,
  /// `passes` times around (all-reduce 2, reduce-scatter/all-gather 1).
  sim::CommPlan nccl_ring(std::span<const std::int32_t> devices, const std::vector<std::vector<std::int32_t>>& per_node,
                          double bytes, std::int64_t passes) const;
  sim::CommPlan nccl_tree_all_reduce(const std::vector<std::vector<std::int32_t>>& per_node, double bytes,
                                     double bytes_per_member) const;
  /// The cheaper of ring and tree; `second` is true for the tree.
  std::pair<sim::CommPlan, bool> nccl_all_reduce(std::span<const std::int32_t> devices, double bytes) const;
  const sim::CommPlan& store(Key key, sim::CommPlan plan);

  const Cluster& cluster_;
  bool ideal_ = false;
  CollectiveCostModel costs_;
  // unique_ptr values: plan addresses never move, whatever the map does.
  std::unordered_map<Key, std::unique_ptr<sim::CommPlan>, KeyHash> plans_;
};

}  // namespace ls::topo

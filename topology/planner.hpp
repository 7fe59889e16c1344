// topology/planner.hpp — turns collectives and transfers into flow plans on a Cluster.
//
// Algorithms (ring family, as NCCL; α = route latency of one ring hop, taken as the
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
#include <vector>

#include "sim/comm_plan.hpp"
#include "topology/cluster.hpp"

namespace ls::topo {

class Planner : public sim::CommPlanner {
public:
  /// `ideal`: every plan has no phases (communication is free) but still reports
  /// bytes_per_member, so byte accounting is the same as on a real network.
  explicit Planner(const Cluster& cluster, bool ideal = false);
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

  /// True when collective(devices, all_reduce, ·) uses the hierarchical algorithm.
  bool uses_hierarchical_all_reduce(std::span<const std::int32_t> devices) const;

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
  const sim::CommPlan& store(Key key, sim::CommPlan plan);

  const Cluster& cluster_;
  bool ideal_ = false;
  // unique_ptr values: plan addresses never move, whatever the map does.
  std::unordered_map<Key, std::unique_ptr<sim::CommPlan>, KeyHash> plans_;
};

}  // namespace ls::topo

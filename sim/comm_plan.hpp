// sim/comm_plan.hpp — communication plans: how a collective or a transfer becomes flows.
//
// The engine runs plans; topology/ makes them (topo::Planner implements CommPlanner).
// Kept apart from sim/program.hpp so that topology/ depends on these types only,
// not on the per-rank programs.
//
// Units: bytes, sim::Time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/network.hpp"
#include "sim/time.hpp"

namespace ls::sim {

enum class CollOp : std::uint8_t { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast };

// A plan is a sequence of phases; a phase is a set of flows started together, and
// it ends `latency` after its last flow drains. The next phase starts then.

struct PlanFlow {
  std::uint32_t path_begin = 0;  // into CommPlan::links
  std::uint32_t path_len = 0;
  double bytes = 0;
};

struct CommPhase {
  std::vector<PlanFlow> flows;
  Time latency;
};

struct CommPlan {
  std::vector<LinkId> links;
  std::vector<CommPhase> phases;
  /// Bytes each member sends in total (for comm.<axis>.bytes_per_device).
  double bytes_per_member = 0;
};

/// Implemented by topology/ (routes on the cluster graph) — the engine only sees
/// plans. Returned references stay valid for the planner's lifetime (cached).
class CommPlanner {
public:
  virtual ~CommPlanner() = default;
  /// `devices`: the group's GPUs in ring order. `bytes`: per-member buffer size S.
  virtual const CommPlan& collective(std::span<const std::int32_t> devices, CollOp op, double bytes) = 0;
  virtual const CommPlan& transfer(std::int32_t src_device, std::int32_t dst_device, double bytes) = 0;
  /// Pairwise all-to-all with bytes_matrix[i·n + j] bytes from member i to member j.
  virtual const CommPlan& all_to_all_matrix(std::span<const std::int32_t> devices, std::span<const double> bytes_matrix) = 0;
};

}  // namespace ls::sim

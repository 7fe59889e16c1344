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
  double bytes = 0;              // on the wire: the payload ÷ `efficiency`
  /// The collective algorithm's efficiency on the flow's bottleneck link
  /// (topology/collective_costs.hpp): payload = bytes × efficiency.
  double efficiency = 1;
  /// Alike flows this one stands for (sim/alike_flows.hpp): its path is their
  /// `copies` paths one after the other, all of one length, crossed at one rate. 1: itself.
  std::uint32_t copies = 1;
  /// A tied flow whose path leaves out links that mirror the runner's
  /// (workloads/build/symmetry.hpp): the copies' paths its check holds to the max-min rule,
  /// parts of `check_part` links each (CommPlan::check_links[check_begin, check_begin +
  /// check_len)), a left-out link stood for by the runner's twin of it. A copy whose every
  /// link is mirrored reads as the runner's part and is not repeated. 0: the path itself,
  /// in `copies` parts.
  std::uint32_t check_begin = 0;
  std::uint32_t check_len = 0;
  std::uint32_t check_part = 0;
};

struct CommPhase {
  std::vector<PlanFlow> flows;
  Time latency;
};

struct CommPlan {
  std::vector<LinkId> links;
  /// The check paths of flows with check_len > 0 (PlanFlow::check_begin).
  std::vector<LinkId> check_links;
  std::vector<CommPhase> phases;
  /// Bytes each member sends in total (for comm.<axis>.bytes_per_device).
  double bytes_per_member = 0;
};

/// Node-limited MoE dispatch (DeepSeek-V3, arXiv 2412.19437 §2.1.2 and §3.2.2): each
/// token goes to experts on a bounded number of nodes; it crosses the inter-node
/// fabric once per selected node, to the GPU with its own local index there, which
/// forwards it over NVLink to the GPUs that hold its experts.
struct NodeLimitedDispatch {
  int top_k = 0;  // experts per token (0: dispatch is not node-limited)
  /// node_share[n]: probability that a token selects a given node when the group's
  /// experts span n nodes (workloads/model/moe.hpp, node_selection_share).
  std::vector<double> node_share;
  bool active() const { return top_k > 0; }
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
  /// A node-limited dispatch (or its combine, the same bytes reversed) moving
  /// `pair_bytes` per member: the (token, expert) pairs it sends, top_k per token.
  virtual const CommPlan& node_limited_all_to_all(std::span<const std::int32_t> devices, double pair_bytes,
                                                  const NodeLimitedDispatch& dispatch) = 0;
};

}  // namespace ls::sim

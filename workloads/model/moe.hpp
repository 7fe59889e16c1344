// workloads/model/moe.hpp — token routing for mixture-of-experts layers.
//
// Experts are sharded over the ep devices of an expert-parallel group, contiguous
// blocks of experts/ep each (Megatron-Core's layout). Every device of the group
// routes its tokens with the same expert distribution, so the load a device sees
// is the share of routed tokens its experts receive.
#pragma once

#include <vector>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

struct Routing {
  std::vector<double> expert_load;   // per expert: share of routed tokens offered (sums to 1)
  std::vector<double> device_share;  // per ep index: share of routed tokens it processes (≤ 1 in total; drops removed)
  std::vector<double> device_factor; // per ep index: processed tokens / the balanced share (1 when balanced)
  double dropped_fraction = 0;       // routed tokens dropped by the capacity factor
};

/// Expert loads from model.moe.routing: balanced (1/E each), zipf (∝ 1/rank^alpha,
/// ranks shuffled by the seed) or an explicit load vector (normalised). With a
/// capacity factor c each expert keeps at most c·(tokens·top_k/E) tokens.
/// Throws std::invalid_argument on a load vector of the wrong length or negative sum.
Routing route_tokens(const MoeSpec& moe, int ep);

/// Node-limited routing: the probability that a token selects a given node when the
/// `experts` are spread evenly over `nodes` nodes, each token takes `top_k` of them
/// and its experts lie on at most `max_nodes` nodes (0: no limit). Balanced routing:
/// the router picks M = min(max_nodes, nodes) nodes alike, then top_k of their
/// M·experts/nodes experts alike, so a picked node receives the token unless none of
/// its experts is chosen: q = M/nodes · (1 − C((M−1)·e, k) / C(M·e, k)), e = experts
/// per node (hypergeometric). DeepSeek-V3 (256 experts, top 8, 4 of 8 nodes):
/// q = 0.455, 3.64 nodes per token.
double node_selection_share(int experts, int top_k, int max_nodes, int nodes);

}  // namespace ls::wl

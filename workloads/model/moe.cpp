// workloads/model/moe.cpp — see moe.hpp.
#include "workloads/model/moe.hpp"

#include "sim/hash.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace ls::wl {

Routing route_tokens(const MoeSpec& moe, int ep) {
  const int E = moe.experts;
  if (E <= 0 || ep < 1 || E % ep != 0)
    throw std::invalid_argument(fmt::format("route_tokens: {} experts cannot be split over ep = {}", E, ep));
  Routing r;
  r.expert_load.assign(static_cast<std::size_t>(E), 1.0 / E);
  if (moe.routing == RoutingKind::zipf) {
    // Zipf popularity: the expert of rank k (1-based) gets ∝ k^-alpha. Which expert
    // holds which rank is a seeded Fisher–Yates shuffle, so the hot expert can land
    // on any device.
    std::vector<int> rank(static_cast<std::size_t>(E));
    std::iota(rank.begin(), rank.end(), 0);
    std::uint64_t state = moe.routing_seed;
    for (int i = E - 1; i > 0; --i) {
      const auto j = static_cast<int>(sim::splitmix64_next(state) % static_cast<std::uint64_t>(i + 1));
      std::swap(rank[static_cast<std::size_t>(i)], rank[static_cast<std::size_t>(j)]);
    }
    double sum = 0;
    for (int e = 0; e < E; ++e) {
      r.expert_load[static_cast<std::size_t>(e)] = std::pow(rank[static_cast<std::size_t>(e)] + 1.0, -moe.zipf_alpha);
      sum += r.expert_load[static_cast<std::size_t>(e)];
    }
    for (auto& l : r.expert_load) l /= sum;
  } else if (moe.routing == RoutingKind::load) {
    if (static_cast<int>(moe.load.size()) != E)
      throw std::invalid_argument(fmt::format("model.moe.routing.load has {} entries, the model has {} experts", moe.load.size(), E));
    double sum = 0;
    for (double l : moe.load) {
      if (!(l >= 0) || !std::isfinite(l)) throw std::invalid_argument("model.moe.routing.load: entries must be finite and >= 0");
      sum += l;
    }
    if (!(sum > 0)) throw std::invalid_argument("model.moe.routing.load: the loads sum to 0");
    for (int e = 0; e < E; ++e) r.expert_load[static_cast<std::size_t>(e)] = moe.load[static_cast<std::size_t>(e)] / sum;
  }
  // Capacity: each expert processes at most capacity_factor × its balanced share.
  const double cap = moe.capacity_factor > 0 ? moe.capacity_factor / E : 1.0;
  r.device_share.assign(static_cast<std::size_t>(ep), 0.0);
  const int per = E / ep;
  for (int e = 0; e < E; ++e) {
    const double offered = r.expert_load[static_cast<std::size_t>(e)];
    const double kept = std::min(offered, cap);
    r.dropped_fraction += offered - kept;
    r.device_share[static_cast<std::size_t>(e / per)] += kept;
  }
  r.device_factor.resize(static_cast<std::size_t>(ep));
  for (int d = 0; d < ep; ++d) r.device_factor[static_cast<std::size_t>(d)] = r.device_share[static_cast<std::size_t>(d)] * ep;
  return r;
}

double node_selection_share(int experts, int top_k, int max_nodes, int nodes) {
  if (nodes < 1 || experts % nodes != 0 || top_k < 1 || top_k > experts)
    throw std::invalid_argument(fmt::format("node_selection_share: {} experts, top {} over {} nodes", experts, top_k, nodes));
  const int M = max_nodes > 0 ? std::min(max_nodes, nodes) : nodes;
  const int e = experts / nodes;
  if (top_k > M * e)
    throw std::invalid_argument(fmt::format("node_selection_share: top {} of the {} experts on {} nodes", top_k, M * e, M));
  // C((M−1)e, k) / C(Me, k) = Π_{i<k} ((M−1)e − i) / (Me − i): no chosen expert on the node.
  double none = 1;
  for (int i = 0; i < top_k; ++i) none *= std::max(0.0, static_cast<double>((M - 1) * e - i)) / (M * e - i);
  return static_cast<double>(M) / nodes * (1 - none);
}

}  // namespace ls::wl

// tests/test_node_limited_routing.cpp — node-limited MoE routing
// (model.moe.max_nodes_per_token, DeepSeek-V3 §2.1.2 / §3.2.2): the share of tokens
// that select a node (hypergeometric closed form), the relayed dispatch plan's flows
// and bytes, and a whole run's EP bytes against hand arithmetic.
//
// With N nodes of k members, S pair bytes per member, top_k = K and node share q:
//   inter-node: member i sends S/K·q to its rail peer on each of the N−1 other nodes;
//   intra-node: member i sends S/k to each of its k−1 node mates (own pairs + relayed);
//   bytes per member = (k−1)/k·S + (N−1)·q·S/K.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "fixtures.hpp"
#include "sim/group_plan.hpp"
#include "topology/cluster.hpp"
#include "topology/planner.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/moe.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"

using namespace ls;

namespace {

/// C(a, b) / C(c, b) as a product, for the closed forms below.
double choose_ratio(int a, int c, int b) {
  double r = 1;
  for (int i = 0; i < b; ++i) r *= static_cast<double>(a - i) / (c - i);
  return r;
}

topo::ClusterSpec nodes_of_8(int nodes) {
  topo::ClusterSpec s;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.intra = {"nvswitch", 300e9, sim::us(1)};
  s.inter.kind = "infiniband";
  s.inter.bandwidth_Bps = 25e9;
  s.inter.latency = sim::us(3);
  s.inter.fabric = "rail-optimized";
  return s;
}

}  // namespace

TEST_CASE("node selection share: hypergeometric closed forms") {
  // DeepSeek-V3: 256 experts over 8 nodes (32 each), top 8 within 4 nodes.
  const double q = wl::node_selection_share(256, 8, 4, 8);
  CHECK(q == doctest::Approx(0.5 * (1 - choose_ratio(96, 128, 8))).epsilon(1e-12));
  CHECK(8 * q == doctest::Approx(3.64).epsilon(0.01));  // nodes per token
  // No limit: a node is missed only when none of its experts is among the K.
  CHECK(wl::node_selection_share(16, 4, 0, 2) == doctest::Approx(1 - choose_ratio(8, 16, 4)).epsilon(1e-12));
  CHECK(wl::node_selection_share(16, 4, 2, 2) == wl::node_selection_share(16, 4, 0, 2));  // the limit is not binding
  // One node per token: it is chosen with probability 1/N.
  CHECK(wl::node_selection_share(64, 6, 1, 4) == doctest::Approx(0.25).epsilon(1e-12));
  // Top-1: the token's one expert lies on a given node with probability 1/N.
  CHECK(wl::node_selection_share(32, 1, 0, 4) == doctest::Approx(0.25).epsilon(1e-12));
  CHECK_THROWS(wl::node_selection_share(64, 20, 1, 4));  // 16 experts on one node cannot hold 20
}

TEST_CASE("relayed dispatch: one copy per selected node over the rail, the node's pairs over NVLink") {
  const topo::Cluster c = topo::Cluster::build(nodes_of_8(2));
  topo::Planner p(c);
  std::vector<std::int32_t> devs(16);
  std::iota(devs.begin(), devs.end(), 0);
  sim::NodeLimitedDispatch d;
  d.top_k = 4;
  d.node_share.assign(17, 0.0);
  d.node_share[2] = 0.75;
  const double S = 8e6;
  const sim::CommPlan& plan = p.node_limited_all_to_all(devs, S, d);
  REQUIRE(plan.phases.size() == 1);
  // 16 members × (7 node mates + 1 rail peer).
  CHECK(plan.phases[0].flows.size() == 16 * 8);
  double inter = 0, intra = 0;
  for (const auto& f : plan.phases[0].flows) {
    bool crosses = false;
    for (std::uint32_t i = 0; i < f.path_len; ++i) crosses |= c.link(plan.links[f.path_begin + i]).type == topo::LinkKind::infiniband;
    (crosses ? inter : intra) += f.bytes;
  }
  CHECK(inter == doctest::Approx(16 * (S / 4 * 0.75)).epsilon(1e-12));
  CHECK(intra == doctest::Approx(16 * 7 * (S / 8)).epsilon(1e-12));
  CHECK(plan.bytes_per_member == doctest::Approx(7.0 / 8 * S + S / 4 * 0.75).epsilon(1e-12));

  // Within one node the pattern is the plain all-to-all: S/n to every other member.
  const sim::CommPlan& one = p.node_limited_all_to_all(std::span(devs).first(8), S, d);
  CHECK(one.phases[0].flows.size() == 8 * 7);
  CHECK(one.bytes_per_member == doctest::Approx(7.0 / 8 * S).epsilon(1e-12));
}

TEST_CASE("a run with node-limited routing moves the closed form's EP bytes, and fewer inter-node bytes") {
  // 2 nodes × 8 GPUs, dp = ep = 16, 64 experts top 4 (four per member), one node per token.
  auto scenario = [](int max_nodes) {
    wl::Scenario s = test::cluster_scenario(2, 16, 1, 1, 1);
    s.model.moe.experts = 64;
    s.model.moe.top_k = 4;
    s.model.moe.max_nodes_per_token = max_nodes;
    s.layout.ep = 16;
    s.implementation.compute_variability = 0;
    return s;
  };
  const wl::Result direct = wl::simulate(wl::resolve(scenario(0))), limited = wl::simulate(wl::resolve(scenario(1)));
  const auto& ep_direct = direct.comm[static_cast<std::size_t>(wl::Axis::ep)];
  const auto& ep_limited = limited.comm[static_cast<std::size_t>(wl::Axis::ep)];
  REQUIRE(ep_direct.bytes_per_device > 0);
  // Per all-to-all of S pair bytes: direct 15/16·S; limited 7/8·S + (N−1)·q·S/K with
  // q = 1/2 (one node of two), K = 4: 7/8·S + S/8 = S.
  CHECK(ep_limited.bytes_per_device / ep_direct.bytes_per_device == doctest::Approx(16.0 / 15).epsilon(1e-9));
  // The inter-node share: direct S/2 per all-to-all (8 of 15 peers remote, S/16
  // each), limited S/8 — a quarter, so the exposed EP time falls.
  CHECK(limited.comm[static_cast<std::size_t>(wl::Axis::ep)].exposed_s < direct.comm[static_cast<std::size_t>(wl::Axis::ep)].exposed_s);
  CHECK(limited.step_time_s < direct.step_time_s);
}

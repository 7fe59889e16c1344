// tests/test_nvlink_domain.cpp — cluster.nvlink_domain (topology/fabric.cpp): GPUs of one
// NVLink domain (GB200 NVL72: 18 trays of 4 GPUs) route over the NVLink switch fabric and
// never over InfiniBand; GPUs of different domains route over InfiniBand; collectives
// inside a domain move no byte over the network.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "topology/cluster.hpp"
#include "topology/collective_costs.hpp"
#include "topology/planner.hpp"

using namespace ls::topo;

namespace {

/// Two NVL72 racks (36 trays of 4 GPUs), one 400 Gb/s NIC per GPU, rail-optimized.
ClusterSpec two_racks() {
  ClusterSpec c;
  c.nodes = 36;
  c.gpus_per_node = 4;
  c.nvlink_domain = 72;
  c.intra = {"nvswitch", 900e9, ls::sim::us(1)};
  c.inter.kind = "infiniband";
  c.inter.bandwidth_Bps = 50e9;
  return c;
}

}  // namespace

TEST_CASE("NVL72: routes inside a domain are NVLink only; between domains they use InfiniBand") {
  const Cluster c = Cluster::build(two_racks());
  REQUIRE(c.gpu_count() == 144);
  CHECK(c.nvlink_domain_count() == 2);
  CHECK(c.find_vertex("nvl0.nvswitch") >= 0);
  CHECK(c.find_vertex("nvl1.nvswitch") >= 0);
  CHECK(c.find_vertex("node0.nvswitch") < 0);
  for (int a = 0; a < c.gpu_count(); ++a) {
    CHECK(c.nvlink_domain_of_gpu(a) == a / 72);
    for (int b = 0; b < c.gpu_count(); ++b) {
      if (a == b) continue;
      const auto kinds = c.link_kinds_on_route(a, b);
      const bool ib = std::find(kinds.begin(), kinds.end(), "infiniband") != kinds.end();
      if (a / 72 == b / 72) {
        // gpu→nvl<D>.nvswitch→gpu, also between trays (nodes).
        CHECK(kinds == std::vector<std::string>{"nvlink", "nvlink"});
      } else {
        CHECK(ib);
      }
    }
  }
  // Tray boundaries inside a rack are not network boundaries.
  const std::int32_t tp8[] = {0, 1, 2, 3, 4, 5, 6, 7};  // two trays
  CHECK(c.crosses_nodes(tp8));
  CHECK_FALSE(c.crosses_nvlink_domains(tp8));
  const std::int32_t across[] = {70, 71, 72, 73};
  CHECK(c.crosses_nvlink_domains(across));
}

TEST_CASE("a collective inside one NVL72 domain puts no byte on the network") {
  const Cluster c = Cluster::build(two_racks());
  Planner planner(c, false, blackwell_collective_costs());
  std::vector<std::int32_t> group;
  for (int g = 0; g < 72; g += 9) group.push_back(g);  // 8 GPUs on 8 different trays
  for (auto op : {ls::sim::CollOp::all_reduce, ls::sim::CollOp::all_gather, ls::sim::CollOp::all_to_all}) {
    const auto& plan = planner.collective(group, op, 1e9);
    REQUIRE_FALSE(plan.links.empty());
    for (auto l : plan.links) CHECK(c.link(l).type == LinkKind::nvlink);
  }
  // The same ranks' counterparts across the two racks do use InfiniBand.
  const std::int32_t pair[] = {5, 77};
  const auto& dp = planner.collective(pair, ls::sim::CollOp::all_reduce, 1e9);
  CHECK(std::any_of(dp.links.begin(), dp.links.end(), [&](auto l) { return c.link(l).type == LinkKind::infiniband; }));
}

TEST_CASE("nvlink_domain equal to gpus_per_node is the ordinary node switch; a non-multiple is an error") {
  ClusterSpec c = two_racks();
  c.nvlink_domain = 4;
  const Cluster per_node = Cluster::build(c);
  CHECK(per_node.nvlink_domain_count() == 36);
  CHECK(per_node.find_vertex("node0.nvswitch") >= 0);
  c.nvlink_domain = 0;  // unset: the same
  CHECK(Cluster::build(c).nvlink_domain_count() == 36);
  c.nvlink_domain = 6;
  CHECK_THROWS_AS(Cluster::build(c), std::invalid_argument);
  // A partial last domain: 20 trays of 4 with domains of 72 -> 72 + 8 GPUs.
  c = two_racks();
  c.nodes = 20;
  const Cluster partial = Cluster::build(c);
  CHECK(partial.nvlink_domain_count() == 2);
  CHECK(partial.nvlink_domain_of_gpu(79) == 1);
}

TEST_CASE("a flat ring across NVLink domains runs at most NCCL's 64 channels") {
  // All-gather of S per member over both NVL72 racks (n = 144, two domains of k = 72).
  // NCCL runs one channel per GPU of a domain up to MAXCHANNELS = 64: 64 channel rings
  // of (n−1)/n·S/64 payload each, where 72 members would give 72. Channel c leaves the
  // first domain through member c+1's NIC and the second through member c's, so 64 NICs
  // of each rack send and 8 stay idle.
  const Cluster c = Cluster::build(two_racks());
  Planner planner(c, false, blackwell_collective_costs());
  std::vector<std::int32_t> all(144);
  for (int g = 0; g < 144; ++g) all[static_cast<std::size_t>(g)] = g;
  const double S = 144e6, n = 144;
  const auto& plan = planner.collective(all, ls::sim::CollOp::all_gather, S);
  REQUIRE(plan.phases.size() == 1);
  REQUIRE(plan.phases[0].flows.size() == 64);
  for (const auto& f : plan.phases[0].flows) CHECK(f.bytes * f.efficiency == doctest::Approx((n - 1) / n * S / 64).epsilon(1e-12));
  int sending_nics = 0;
  std::vector<std::uint8_t> seen(c.link_count(), 0);
  for (const auto l : plan.links) {
    if (seen[static_cast<std::size_t>(l)]) continue;
    seen[static_cast<std::size_t>(l)] = 1;
    const auto& from = c.vertex_name(c.link(l).from_vertex);
    if (c.link(l).type == LinkKind::infiniband && from.find(".nic") != std::string::npos) ++sending_nics;
  }
  CHECK(sending_nics == 2 * 64);
}

// tests/test_cluster_down_links.cpp — Cluster with down links (ClusterSpec::down_links):
// ECMP around a dead uplink, PXN around a dead rail, the structural routes against the
// graph search with the same links down, explicit graphs (a parallel link, a GPU
// without a NIC relaying through a peer's), errors and determinism.
//
// Latency arithmetic of the generators (see fabric.cpp):
//   intra node   gpu→switch→gpu = intra.latency exactly (1 us here).
//   inter node   short hop h = min(100 ns, L/10); gpu→nic = h, nic→leaf + leaf→nic
//                = L − 2h, leaf↔spine = h; so gpu→nic→leaf→nic→gpu = L exactly and a
//                path through a spine = L + 2h. With L = 3 us: 3 us and 3.2 us.
// All latencies are integers of picoseconds, so they are compared exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cluster_fixtures.hpp"
#include "topology/cluster.hpp"

// GCC 12 at -O2 reports std::optional<ExplicitGraphSpec>::emplace() on a fresh,
// empty ClusterSpec::graph as "may be used uninitialized" (a known false positive of
// its inlined optional reset path, which depends on how much of this file it
// inlines). The optional is never read uninitialised; silence it here only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

using ls::sim::LinkId;
using ls::topo::Cluster;
using ls::topo::ClusterSpec;
using ls::topo::ExplicitGraphSpec;
using ls::test::as_explicit_graph;
using ls::test::contains;
using ls::test::error_of;
using ls::test::GBps;
using ls::test::multi_node;
using ls::test::names_on;

// ---------------------------------------------------------------------------------
// Down links (ClusterSpec::down_links). Latencies as at the top of this file:
// intra hops 0.5 us each, h = 100 ns, L = 3 us, a spine path L + 2h = 3.2 us.

namespace {

bool uses_link(const Cluster& c, std::span<const LinkId> path, const std::string& name) {
  const auto id = c.find_link(name);
  return id && std::find(path.begin(), path.end(), *id) != path.end();
}

bool uses_down_link(const Cluster& c, std::span<const LinkId> path) {
  return std::any_of(path.begin(), path.end(), [&](LinkId l) { return c.link_down(l); });
}

}  // namespace

TEST_CASE("down links: a leaf->spine uplink down, ECMP spreads over the other spines") {
  // 4 nodes, 2 per leaf, 4 spines: node0.gpu0 (leaf0) -> node2.gpu0 (leaf8) has one
  // equal-cost path per spine; with leaf0->spine1 down, 3 remain, same 3.2 us each.
  auto s = multi_node(4, "rail-optimized", 2);
  s.inter.spines = 4;
  s.inter.routing = "ecmp";
  const Cluster healthy = Cluster::build(s);
  s.down_links = {"leaf0->spine1"};
  const Cluster c = Cluster::build(s);
  // The link table does not move: same ids, names, capacities.
  REQUIRE(c.link_count() == healthy.link_count());
  for (LinkId l = 0; l < c.link_count(); ++l) {
    CHECK(c.link(l).name == healthy.link(l).name);
    CHECK(c.link(l).bandwidth_Bps == healthy.link(l).bandwidth_Bps);
  }
  const LinkId down = *c.find_link("leaf0->spine1");
  CHECK(c.link_down(down));
  CHECK_FALSE(c.link_down(*c.find_link("spine1->leaf0")));  // directed: only one way is down
  CHECK(std::vector<LinkId>(c.down_links().begin(), c.down_links().end()) == std::vector<LinkId>{down});

  const int a = c.gpu_index("node0.gpu0"), b = c.gpu_index("node2.gpu0");
  CHECK(c.path_count(a, b) == 3);
  std::set<std::string> spines_used;
  for (std::uint64_t h = 0; h < 8; ++h) {
    const auto r = c.route(a, b, h);
    REQUIRE(r.size() == 6);
    CHECK_FALSE(uses_down_link(c, r));
    CHECK(c.link(r.back()).to_vertex == c.find_vertex("node2.gpu0"));  // still reaches
    CHECK(c.route_latency(a, b, h) == ls::sim::ns(3200));
    spines_used.insert(c.vertex_name(c.link(r[2]).to_vertex));
  }
  CHECK(spines_used == std::set<std::string>{"spine0", "spine2", "spine3"});
  CHECK(c.path_count(b, a) == 4);  // spine1->leaf0 is still up
  // A pair that never touches leaf0 keeps all four spines.
  CHECK(c.path_count(c.gpu_index("node0.gpu1"), c.gpu_index("node2.gpu1")) == 4);

  s.down_links = {"leaf0<->spine1"};  // both directions of the cable
  const Cluster both = Cluster::build(s);
  CHECK(both.down_links().size() == 2);
  CHECK(both.path_count(b, a) == 3);
  for (std::uint64_t h = 0; h < 3; ++h) CHECK_FALSE(uses_link(both, both.route(b, a, h), "spine1->leaf0"));

  // D-mod-K around the dead cable: still one path per destination, whatever the
  // hash, and never the down link.
  s.inter.routing = "dmodk";
  const Cluster dmodk = Cluster::build(s);
  for (int dst_node : {2, 3}) {
    const int to = dmodk.gpu_index("node" + std::to_string(dst_node) + ".gpu0");
    const auto first = dmodk.route(a, to, 0);
    REQUIRE(first.size() == 6);
    CHECK_FALSE(uses_down_link(dmodk, first));
    for (std::uint64_t h = 1; h < 8; ++h) CHECK(dmodk.route(a, to, h).data() == first.data());
  }
}

TEST_CASE("down links: a dead rail sends the GPU's traffic over NVLink to a peer's NIC (PXN)") {
  // 2 nodes, rail-optimized, one leaf per rail, derived 2 spines. ECMP, so that
  // the hashes reach every relay (D-mod-K would pick one per destination).
  auto s = multi_node(2);
  s.inter.routing = "ecmp";
  SUBCASE("GPU->NIC PCIe link down") {
    s.down_links = {"node0.gpu3->node0.nic3"};
    const Cluster c = Cluster::build(s);
    const int a = c.gpu_index("node0.gpu3"), b = c.gpu_index("node1.gpu3");
    // gpu3 -> nvswitch -> gpuK -> nicK -> leafK -> spine -> leaf3 -> node1.nic3 -> gpu3:
    // any of the 7 peers K, any of the 2 spines: 14 equal-cost paths, each
    // intra (1 us) + L + 2h (3.2 us) = 4.2 us.
    CHECK(c.path_count(a, b) == 14);
    std::set<std::string> relays;
    for (std::uint64_t h = 0; h < 14; ++h) {
      const auto n = names_on(c, c.route(a, b, h));
      REQUIRE(n.size() == 8);
      CHECK(n[0] == "node0.gpu3->node0.nvswitch");
      CHECK(n[1].rfind("node0.nvswitch->node0.gpu", 0) == 0);
      const std::string peer = n[1].substr(std::string("node0.nvswitch->").size());  // node0.gpuK
      CHECK(peer != "node0.gpu3");
      CHECK(n[2] == peer + "->node0.nic" + peer.substr(9));  // the peer's own NIC
      CHECK(n[6] == "leaf3->node1.nic3");
      CHECK(n[7] == "node1.nic3->node1.gpu3");
      CHECK(c.route_latency(a, b, h) == ls::sim::ns(4200));
      CHECK_FALSE(uses_down_link(c, c.route(a, b, h)));
      relays.insert(peer);
    }
    CHECK(relays.size() == 7);
    // Only the down direction is affected: the way back is the healthy leaf-only route.
    CHECK(names_on(c, c.route(b, a)) == std::vector<std::string>{"node1.gpu3->node1.nic3", "node1.nic3->leaf3",
                                                                 "leaf3->node0.nic3", "node0.nic3->node0.gpu3"});
    // Same node: still the NVSwitch.
    CHECK(c.link_kinds_on_route(a, c.gpu_index("node0.gpu0")) == std::vector<std::string>{"nvlink", "nvlink"});
  }
  SUBCASE("NIC<->leaf cable down: relay on the sending and on the receiving side") {
    s.down_links = {"node0.nic3<->leaf3"};
    const Cluster c = Cluster::build(s);
    const int a = c.gpu_index("node0.gpu3"), b = c.gpu_index("node1.gpu3");
    for (std::uint64_t h = 0; h < 4; ++h) {
      const auto out = names_on(c, c.route(a, b, h));
      REQUIRE(out.size() == 8);
      CHECK(out[0] == "node0.gpu3->node0.nvswitch");
      CHECK(out.back() == "node1.nic3->node1.gpu3");
      const auto back = names_on(c, c.route(b, a, h));
      REQUIRE(back.size() == 8);
      CHECK(back[0] == "node1.gpu3->node1.nic3");
      CHECK(back[6].rfind("node0.gpu", 0) == 0);  // node0.gpuK->node0.nvswitch
      CHECK(back[6].ends_with("->node0.nvswitch"));
      CHECK(back[7] == "node0.nvswitch->node0.gpu3");
      CHECK(c.route_latency(b, a, h) == ls::sim::ns(4200));
      CHECK_FALSE(uses_down_link(c, c.route(a, b, h)));
      CHECK_FALSE(uses_down_link(c, c.route(b, a, h)));
    }
  }
}

TEST_CASE("down links: generated routes equal the graph search on the same graph with the same links down") {
  // The generated cluster keeps its structural routes for the pairs the down links do
  // not touch and searches the others; the explicit copy searches every pair. Both
  // must agree on every pair and hash (ids, path count, latency).
  std::vector<std::pair<std::string, ClusterSpec>> shapes;
  shapes.reserve(8);
  {
    auto s = multi_node(4, "rail-optimized", 2);
    s.inter.spines = 3;
    s.down_links = {"leaf0<->spine1", "node1.gpu2->node1.nic2", "leaf3->node0.nic3", "node2.gpu5<->node2.nvswitch",
                    "spine2->leaf9"};
    shapes.emplace_back("rail, spine cable, PCIe, NIC downlink, NVLink, spine downlink", s);
  }
  {
    auto s = multi_node(4, "fat-tree", 2);
    s.inter.nics_per_node = 4;
    s.down_links = {"node0.nic1<->leaf0", "leaf1->spine0"};
    shapes.emplace_back("fat-tree, shared NIC down", s);
  }
  {
    auto s = multi_node(2, "fat-tree");
    s.down_links = {"node1.gpu0->node1.nic0", "node0.nvswitch->node0.gpu7"};
    shapes.emplace_back("fat-tree, one leaf, no spine", s);
  }
  for (auto& shape : shapes) shape.second.inter.routing = "ecmp";  // as the graph search routes
  const std::uint64_t hashes[] = {0, 1, 2, 3, 5, 7, 12345};
  for (const auto& [shape_name, spec] : shapes) {
    // Clang 14 cannot capture a structured binding in CAPTURE's lambda: name a copy.
    const std::string what = shape_name;
    CAPTURE(what);
    const Cluster structural = Cluster::build(spec);
    ClusterSpec graph_spec;
    graph_spec.graph.emplace(as_explicit_graph(structural));
    graph_spec.down_links = spec.down_links;
    const Cluster searched = Cluster::build(graph_spec);
    REQUIRE(searched.link_count() == structural.link_count());
    int mismatches = 0, used_down = 0;
    for (int a = 0; a < structural.gpu_count(); ++a)
      for (int b = 0; b < structural.gpu_count(); ++b) {
        bool same = structural.path_count(a, b) == searched.path_count(a, b);
        for (std::uint64_t h : hashes) {
          const auto r1 = structural.route(a, b, h), r2 = searched.route(a, b, h);
          same = same && std::equal(r1.begin(), r1.end(), r2.begin(), r2.end()) &&
                 structural.route_latency(a, b, h) == searched.route_latency(a, b, h);
          used_down += uses_down_link(structural, r1);
          if (a != b) CHECK_FALSE(r1.empty());
        }
        if (!same && ++mismatches <= 5) {
          CAPTURE(a);
          CAPTURE(b);
          CHECK(structural.path_count(a, b) == searched.path_count(a, b));
          CHECK(names_on(structural, structural.route(a, b, 1)) == names_on(searched, searched.route(a, b, 1)));
        }
      }
    CHECK(mismatches == 0);
    CHECK(used_down == 0);
  }
}

TEST_CASE("down links: explicit graph, a parallel link takes over") {
  ExplicitGraphSpec g;
  g.vertices = {{"node0.gpu0", "gpu"}, {"node0.gpu1", "gpu"}};
  g.links = {{"node0.gpu0", "node0.gpu1", "nvlink", 100 * GBps, ls::sim::ns(700), true},
             {"node0.gpu0", "node0.gpu1", "nvlink", 100 * GBps, ls::sim::ns(700), true}};
  ClusterSpec s;
  s.graph = g;
  s.down_links = {"node0.gpu0->node0.gpu1"};
  const Cluster c = Cluster::build(s);
  CHECK(c.path_count(0, 1) == 1);
  CHECK(names_on(c, c.route(0, 1)) == std::vector<std::string>{"node0.gpu0->node0.gpu1#1"});
  CHECK(c.path_count(1, 0) == 2);
  s.down_links.push_back("node0.gpu0->node0.gpu1#1");
  const std::string msg = error_of([&] { (void)Cluster::build(s); });
  CHECK(contains(msg, "node0.gpu0 cannot reach node0.gpu1 with links [node0.gpu0->node0.gpu1, node0.gpu0->node0.gpu1#1] down"));
}

TEST_CASE("explicit graph: a GPU without a NIC of its own reaches the network through a peer's (PXN)") {
  // node0.gpu1 has only NVLink; node0.gpu0 owns node0.nic0. No path avoids relaying,
  // so the fallback relays through node0.gpu0 (NVLink side <-> its own NIC), both ways.
  ExplicitGraphSpec g;
  g.vertices = {{"node0.gpu0", "gpu"}, {"node0.gpu1", "gpu"}, {"node0.nvswitch", "nvswitch"}, {"node0.nic0", "nic"},
                {"node1.gpu0", "gpu"}, {"node1.nic0", "nic"}, {"sw", "switch"}};
  g.links = {{"node0.gpu0", "node0.nvswitch", "nvlink", 100 * GBps, ls::sim::ns(500), true},
             {"node0.gpu1", "node0.nvswitch", "nvlink", 100 * GBps, ls::sim::ns(500), true},
             {"node0.gpu0", "node0.nic0", "pcie", 50 * GBps, ls::sim::ns(100), true},
             {"node1.gpu0", "node1.nic0", "pcie", 50 * GBps, ls::sim::ns(100), true},
             {"node0.nic0", "sw", "infiniband", 25 * GBps, ls::sim::us(1), true},
             {"node1.nic0", "sw", "infiniband", 25 * GBps, ls::sim::us(1), true}};
  ClusterSpec s;
  s.graph = g;
  const Cluster c = Cluster::build(s);
  const int a = c.gpu_index("node0.gpu1"), b = c.gpu_index("node1.gpu0");
  CHECK(names_on(c, c.route(a, b)) ==
        std::vector<std::string>{"node0.gpu1->node0.nvswitch", "node0.nvswitch->node0.gpu0", "node0.gpu0->node0.nic0",
                                 "node0.nic0->sw", "sw->node1.nic0", "node1.nic0->node1.gpu0"});
  CHECK(names_on(c, c.route(b, a)) ==
        std::vector<std::string>{"node1.gpu0->node1.nic0", "node1.nic0->sw", "sw->node0.nic0", "node0.nic0->node0.gpu0",
                                 "node0.gpu0->node0.nvswitch", "node0.nvswitch->node0.gpu1"});
  // 0.5 + 0.5 + 0.1 + 1 + 1 + 0.1 us
  CHECK(c.route_latency(a, b) == ls::sim::ns(3200));
  // The NIC owner itself goes direct, and same-node traffic stays on NVLink.
  CHECK(c.route(c.gpu_index("node0.gpu0"), b).size() == 4);
  CHECK(names_on(c, c.route(a, c.gpu_index("node0.gpu0"))) ==
        std::vector<std::string>{"node0.gpu1->node0.nvswitch", "node0.nvswitch->node0.gpu0"});
}

TEST_CASE("down links: a disconnection or an unknown name is a clear error") {
  SUBCASE("one node, a GPU's NVLink up-link down: nothing else leaves it") {
    ClusterSpec s;
    s.down_links = {"node0.gpu1->node0.nvswitch"};
    const std::string msg = error_of([&] { (void)Cluster::build(s); });
    CHECK(contains(msg, "node0.gpu1 cannot reach node0.gpu0 with links [node0.gpu1->node0.nvswitch] down"));
  }
  SUBCASE("a GPU cut off from both its NVSwitch and its NIC") {
    auto s = multi_node(2);
    s.down_links = {"node0.gpu3<->node0.nvswitch", "node0.gpu3<->node0.nic3"};
    const std::string msg = error_of([&] { (void)Cluster::build(s); });
    CHECK(contains(msg, "node0.gpu3 cannot reach node0.gpu0 with links ["));
    CHECK(contains(msg, "node0.gpu3->node0.nvswitch"));
    CHECK(contains(msg, "node0.nic3->node0.gpu3"));
    CHECK(contains(msg, "PXN"));  // says why peers could not relay
  }
  SUBCASE("every uplink of a fat-tree leaf down: its nodes cannot leave it") {
    auto s = multi_node(4, "fat-tree", 2);  // leaf0: node0, node1; leaf1: node2, node3
    s.inter.spines = 2;
    s.down_links = {"leaf0->spine0", "leaf0->spine1"};
    const std::string msg = error_of([&] { (void)Cluster::build(s); });
    CHECK(contains(msg, "node0.gpu0 cannot reach node2.gpu0 with links [leaf0->spine0, leaf0->spine1] down"));
  }
  SUBCASE("unknown names list the nearest valid ones") {
    auto s = multi_node(2);
    s.down_links = {"node0.nic3->leaf4"};
    std::string msg = error_of([&] { (void)Cluster::build(s); });
    CHECK(contains(msg, "no link named 'node0.nic3->leaf4'"));
    CHECK(contains(msg, "'node0.nic3->leaf3'"));
    s.down_links = {"leaf0<->spine7"};
    msg = error_of([&] { (void)Cluster::build(s); });
    CHECK(contains(msg, "no link named 'leaf0->spine7' (from 'leaf0<->spine7')"));
    CHECK(contains(msg, "'leaf0->spine0'"));
  }
}

TEST_CASE("down links: routing is deterministic") {
  auto s = multi_node(8, "rail-optimized", 2);
  s.inter.spines = 4;
  s.down_links = {"leaf0<->spine2", "node3.gpu1->node3.nic1", "leaf21->node4.nic5"};
  const Cluster c1 = Cluster::build(s);
  const Cluster c2 = Cluster::build(s);
  for (int a = 0; a < c1.gpu_count(); a += 3)
    for (int b = 0; b < c1.gpu_count(); b += 5)
      for (std::uint64_t h : {0ULL, 1ULL, 99ULL}) {
        const auto r = c1.route(a, b, h);
        CHECK(names_on(c1, r) == names_on(c2, c2.route(a, b, h)));
        CHECK(c1.route(a, b, h).data() == r.data());  // cached: the same storage
      }
}

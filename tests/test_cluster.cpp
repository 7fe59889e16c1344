// tests/test_cluster.cpp — Cluster: generated and explicit graphs, names, routes,
// ECMP, route cache, capacities, and the error messages of invalid specs. Down links
// are tested in test_cluster_down_links.cpp.
//
// Latency arithmetic of the generators (see fabric.cpp):
//   intra node   gpu→switch→gpu = intra.latency exactly (1 us here).
//   inter node   short hop h = min(100 ns, L/10); gpu→nic = h, nic→leaf + leaf→nic
//                = L − 2h, leaf↔spine = h; so gpu→nic→leaf→nic→gpu = L exactly and a
//                path through a spine = L + 2h. With L = 3 us: 3 us and 3.2 us.
// All latencies are integers of picoseconds, so they are compared exactly.
#include <doctest/doctest.h>

#include <tuple>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
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
using ls::sim::Time;
using ls::topo::Cluster;
using ls::topo::ClusterSpec;
using ls::topo::ExplicitGraphSpec;
using ls::topo::kLinkKindNames;
using ls::topo::kVertexKindNames;
using ls::topo::LinkInfo;
using ls::topo::LinkKind;
using ls::topo::VertexKind;
using ls::test::as_explicit_graph;
using ls::test::contains;
using ls::test::error_of;
using ls::test::GBps;
using ls::test::multi_node;
using ls::test::names_on;

TEST_CASE("link and vertex kinds: one name table each, parsed and printed the same way") {
  for (std::size_t i = 0; i < kLinkKindNames.size(); ++i) {
    const auto kind = static_cast<LinkKind>(i);
    CHECK(ls::topo::parse_link_kind(link_kind_name(kind)) == kind);
  }
  for (std::size_t i = 0; i < kVertexKindNames.size(); ++i) {
    const auto kind = static_cast<VertexKind>(i);
    CHECK(ls::topo::parse_vertex_kind(vertex_kind_name(kind)) == kind);
  }
  CHECK_FALSE(ls::topo::parse_link_kind("carrier-pigeon"));
  CHECK_FALSE(ls::topo::parse_vertex_kind("router"));
  CHECK(ls::topo::kind_list(kLinkKindNames) == "nvlink | nvswitch | pcie | infiniband | ethernet");
  const Cluster c = Cluster::build(ClusterSpec{});
  const LinkInfo& up = c.link(*c.find_link("node0.gpu0->node0.nvswitch"));
  CHECK(up.type == LinkKind::nvlink);
  CHECK(up.kind == link_kind_name(up.type));
}

TEST_CASE("single NVSwitch node: names, links, gpu->switch->gpu route") {
  ClusterSpec s;  // 1 node × 8 GPUs, nvswitch 300 GB/s, 1 us
  const Cluster c = Cluster::build(s);
  CHECK(c.gpu_count() == 8);
  CHECK(c.node_count() == 1);
  CHECK(c.link_count() == 16);  // one duplex link per GPU
  CHECK(c.link_bandwidths().size() == c.link_count());
  CHECK(c.gpu_name(5) == "node0.gpu5");
  CHECK(c.gpu_index("node0.gpu5") == 5);
  CHECK(c.gpu_index("node0.gpu8") == -1);
  CHECK(c.vertex_kind(c.find_vertex("node0.nvswitch")) == "nvswitch");

  const auto r = c.route(0, 3);
  CHECK(names_on(c, r) == std::vector<std::string>{"node0.gpu0->node0.nvswitch", "node0.nvswitch->node0.gpu3"});
  CHECK(c.link_kinds_on_route(0, 3) == std::vector<std::string>{"nvlink", "nvlink"});
  for (LinkId l : r) CHECK(c.link(l).bandwidth_Bps == 300 * GBps);
  CHECK(c.route_latency(0, 3) == ls::sim::us(1));  // 0.5 us + 0.5 us
  CHECK(c.route(2, 2).empty());
  CHECK(c.route_latency(2, 2) == Time::zero());
  CHECK_THROWS_AS(c.route(0, 8), std::out_of_range);
}

TEST_CASE("pcie intra node uses a pcie-switch and pcie links") {
  ClusterSpec s;
  s.gpus_per_node = 4;
  s.intra = {"pcie", 32 * GBps, ls::sim::ps(1'500'001)};  // odd: hops of 750001 + 750000 ps
  const Cluster c = Cluster::build(s);
  CHECK(c.vertex_kind(c.find_vertex("node0.pcie")) == "pcie-switch");
  CHECK(c.link_kinds_on_route(1, 2) == std::vector<std::string>{"pcie", "pcie"});
  CHECK(c.route_latency(1, 2) == ls::sim::ps(1'500'001));  // the split keeps the sum exact
}

TEST_CASE("cross-node route: gpu -> nic -> leaf -> (spine -> leaf) -> nic -> gpu") {
  // 2 nodes, rail-optimized, both nodes under one leaf per rail: leaf<r> for rail r.
  const Cluster c = Cluster::build(multi_node(2));
  CHECK(c.gpu_count() == 16);
  CHECK(c.node_of_gpu(11) == 1);
  CHECK(c.find_link("node1.nic5->leaf5").has_value());  // the contract's naming
  CHECK(c.link(*c.find_link("node1.nic5->leaf5")).kind == "infiniband");

  SUBCASE("same rail stays under the leaf, latency = inter.latency") {
    const int a = c.gpu_index("node0.gpu3"), b = c.gpu_index("node1.gpu3");
    CHECK(names_on(c, c.route(a, b)) == std::vector<std::string>{"node0.gpu3->node0.nic3", "node0.nic3->leaf3",
                                                                 "leaf3->node1.nic3", "node1.nic3->node1.gpu3"});
    CHECK(c.link_kinds_on_route(a, b) == std::vector<std::string>{"pcie", "infiniband", "infiniband", "pcie"});
    CHECK(c.route_latency(a, b) == ls::sim::us(3));
    CHECK(c.path_count(a, b) == 1);
  }
  SUBCASE("different rails go through a spine, latency = L + 2·100 ns") {
    const int a = c.gpu_index("node0.gpu0"), b = c.gpu_index("node1.gpu1");
    // Derived spines: each leaf has d = 2 NICs below it, oversubscription 1 -> 2 spines.
    CHECK(c.path_count(a, b) == 2);
    for (std::uint64_t h = 0; h < 2; ++h) {
      const auto n = names_on(c, c.route(a, b, h));
      REQUIRE(n.size() == 6);
      CHECK(n[0] == "node0.gpu0->node0.nic0");
      CHECK(n[1] == "node0.nic0->leaf0");
      CHECK(n[2].rfind("leaf0->spine", 0) == 0);
      CHECK(n[3].substr(n[3].size() - 7) == "->leaf1");
      CHECK(n[2].substr(7) == n[3].substr(0, n[3].size() - 7));  // same spine up and down
      CHECK(n[4] == "leaf1->node1.nic1");
      CHECK(n[5] == "node1.nic1->node1.gpu1");
      CHECK(c.route_latency(a, b, h) == ls::sim::ns(3200));
    }
    CHECK(c.link_kinds_on_route(a, b) ==
          std::vector<std::string>{"pcie", "infiniband", "infiniband", "infiniband", "infiniband", "pcie"});
  }
  SUBCASE("GPUs of one node still talk over the NVSwitch") {
    CHECK(c.link_kinds_on_route(0, 7) == std::vector<std::string>{"nvlink", "nvlink"});
  }
}

TEST_CASE("rail-optimized across leaf groups and fat-tree under one leaf") {
  SUBCASE("same rail, different groups: through a spine") {
    // 4 nodes, 2 per leaf: rail r of group g is leaf<g·8 + r>; node2 is in group 1.
    const Cluster c = Cluster::build(multi_node(4, "rail-optimized", 2));
    const auto n = names_on(c, c.route(c.gpu_index("node0.gpu2"), c.gpu_index("node2.gpu2")));
    REQUIRE(n.size() == 6);
    CHECK(n[1] == "node0.nic2->leaf2");
    CHECK(n[2].rfind("leaf2->spine", 0) == 0);
    CHECK(n[4] == "leaf10->node2.nic2");
  }
  SUBCASE("fat-tree: every NIC of the group under leaf0, no spine") {
    const Cluster c = Cluster::build(multi_node(2, "fat-tree"));
    CHECK(c.find_vertex("spine0") == -1);
    CHECK(names_on(c, c.route(c.gpu_index("node0.gpu0"), c.gpu_index("node1.gpu5"))) ==
          std::vector<std::string>{"node0.gpu0->node0.nic0", "node0.nic0->leaf0", "leaf0->node1.nic5",
                                   "node1.nic5->node1.gpu5"});
  }
  SUBCASE("fewer NICs than GPUs: GPU g uses NIC g % nics") {
    auto s = multi_node(2, "fat-tree");
    s.inter.nics_per_node = 4;
    const Cluster c = Cluster::build(s);
    CHECK(c.find_vertex("node0.nic4") == -1);
    CHECK(c.link(c.route(c.gpu_index("node0.gpu6"), c.gpu_index("node1.gpu6"))[0]).name == "node0.gpu6->node0.nic2");
  }
}

TEST_CASE("every pair of a 4-node rail-optimized cluster gets the expected route class") {
  // 4 nodes × 8 GPUs, 2 nodes per leaf, 3 spines. Expected, by construction:
  //   same node                         -> NVSwitch, 1 us, 1 path
  //   same rail, same leaf group        -> leaf only, 3 us, 1 path
  //   otherwise                         -> via a spine, 3.2 us, 3 equal-cost paths
  auto s = multi_node(4, "rail-optimized", 2);
  s.inter.spines = 3;
  const Cluster c = Cluster::build(s);
  for (int a = 0; a < c.gpu_count(); ++a)
    for (int b = 0; b < c.gpu_count(); ++b) {
      if (a == b) continue;
      CAPTURE(a);
      CAPTURE(b);
      const bool same_node = a / 8 == b / 8;
      const bool leaf_only = !same_node && a % 8 == b % 8 && a / 16 == b / 16;
      const Time want = same_node ? ls::sim::us(1) : leaf_only ? ls::sim::us(3) : ls::sim::ns(3200);
      CHECK(c.route_latency(a, b) == want);
      CHECK(c.path_count(a, b) == (same_node || leaf_only ? 1u : 3u));
      CHECK(c.route(a, b, 7).size() == (same_node ? 2u : leaf_only ? 4u : 6u));
    }
}

TEST_CASE("a NIC shared by two GPUs does not turn their traffic around") {
  // 4 NICs for 8 GPUs: GPUs 0 and 4 both use nic0. gpu0 -> nic0 -> gpu4 would cost
  // 2 × 100 ns < 1 us of NVSwitch, but a NIC only forwards host <-> network.
  auto s = multi_node(2, "fat-tree");
  s.inter.nics_per_node = 4;
  const Cluster c = Cluster::build(s);
  CHECK(c.link_kinds_on_route(0, 4) == std::vector<std::string>{"nvlink", "nvlink"});
  CHECK(c.route_latency(0, 4) == ls::sim::us(1));
}

TEST_CASE("ECMP: different hashes use different spines; same hash, same path; cache returns the same span") {
  auto s = multi_node(4, "rail-optimized", 2);
  s.inter.spines = 4;
  s.inter.routing = "ecmp";
  const Cluster c = Cluster::build(s);
  const int a = c.gpu_index("node0.gpu0"), b = c.gpu_index("node2.gpu0");
  CHECK(c.path_count(a, b) == 4);  // one equal-cost path per spine
  std::set<std::string> spines_used;
  for (std::uint64_t h = 0; h < 4; ++h) {
    const auto r = c.route(a, b, h);
    spines_used.insert(c.vertex_name(c.link(r[2]).to_vertex));
  }
  CHECK(spines_used == std::set<std::string>{"spine0", "spine1", "spine2", "spine3"});

  // Determinism and the cache: identical hashes give the identical (same storage) span.
  const auto r1 = c.route(a, b, 12345);
  const auto r2 = c.route(a, b, 12345);
  CHECK(r1.data() == r2.data());
  CHECK(r1.size() == r2.size());
  // Hash h and h + path_count select the same path (h mod 4).
  CHECK(c.route(a, b, 1).data() == c.route(a, b, 5).data());
  // A rebuilt cluster routes identically (no dependence on addresses or caching).
  const Cluster c2 = Cluster::build(s);
  CHECK(names_on(c2, c2.route(a, b, 12345)) == names_on(c, r1));
}

TEST_CASE("append_route appends route()'s links and returns route_latency(), generated and explicit graphs alike") {
  auto s = multi_node(4, "rail-optimized", 2);
  s.inter.spines = 4;
  s.inter.routing = "ecmp";
  const Cluster generated = Cluster::build(s);
  ClusterSpec graph_spec;
  graph_spec.graph.emplace(as_explicit_graph(generated));
  const Cluster searched = Cluster::build(graph_spec);
  for (const Cluster* c : {&generated, &searched})
    for (int a = 0; a < c->gpu_count(); ++a)
      for (int b = 0; b < c->gpu_count(); ++b)
        for (std::uint64_t h : {0u, 1u, 7u}) {
          std::vector<LinkId> out{LinkId{0}};  // appended after what is there
          const Time latency = c->append_route(a, b, h, out);
          const auto route = c->route(a, b, h);
          CAPTURE(a);
          CAPTURE(b);
          REQUIRE(out.size() == route.size() + 1);
          CHECK(std::equal(route.begin(), route.end(), out.begin() + 1));
          CHECK(latency == c->route_latency(a, b, h));
        }
}

TEST_CASE("D-mod-K: the spine is the destination's index in its plane mod spines, whatever the hash") {
  // InfiniBand's default. Rail-optimized, 4 nodes, 2 per leaf, 2 spines (derived:
  // 2 NICs per rail leaf at 1:1). A rail is a plane: node n's NIC has index n, so
  // every flow to node n crosses spine n mod 2, from any source and for any hash.
  const Cluster c = Cluster::build(multi_node(4, "rail-optimized", 2));
  for (int dst_node = 2; dst_node < 4; ++dst_node)
    for (int gpu = 0; gpu < 8; ++gpu)
      for (int src_node = 0; src_node < 2; ++src_node)
        for (std::uint64_t h : {0ULL, 1ULL, 7ULL, 12345ULL}) {
          const int a = src_node * 8 + gpu, b = dst_node * 8 + gpu;
          const auto r = c.route(a, b, h);
          REQUIRE(r.size() == 6);
          CHECK(c.vertex_name(c.link(r[2]).to_vertex) == "spine" + std::to_string(dst_node % 2));
        }
  CHECK(c.path_count(0, 16) == 2);  // still two equal-cost paths; the routing picks one

  // Fat-tree: one plane, NIC index node·nics + r. 4 nodes × 4 NICs, 2 per leaf (8
  // ports), 8 spines: node3's NIC 1 is index 13, spine 13 mod 8 = 5.
  auto ft = multi_node(4, "fat-tree", 2);
  ft.inter.nics_per_node = 4;
  const Cluster f = Cluster::build(ft);
  const auto r = f.route(f.gpu_index("node0.gpu0"), f.gpu_index("node3.gpu1"), 99);
  REQUIRE(r.size() == 6);
  CHECK(f.vertex_name(f.link(r[2]).to_vertex) == "spine5");
}

TEST_CASE("D-mod-K: a shift permutation never shares a spine link; routing defaults by link kind") {
  // 8 nodes, 4 per leaf, 4 spines (1:1). Every GPU of node i sends to the same GPU of
  // node (i + 4) mod 8, the other leaf group: per leaf, 4 flows leave and 4 arrive,
  // each on its own uplink and downlink (Zahavi 2010: non-blocking shift permutations).
  auto spec = multi_node(8, "rail-optimized", 4);
  auto flows_per_spine_link = [](const Cluster& c) {
    std::map<LinkId, int> load;
    for (int i = 0; i < 8; ++i)
      for (int g = 0; g < 8; ++g)
        for (LinkId l : c.route(i * 8 + g, ((i + 4) % 8) * 8 + g, static_cast<std::uint64_t>(i * 8 + g)))
          if (c.link(l).name.find("spine") != std::string::npos) ++load[l];
    int most = 0;
    for (const auto& [link, n] : load) most = std::max(most, n);
    return most;
  };
  CHECK(flows_per_spine_link(Cluster::build(spec)) == 1);
  spec.inter.routing = "ecmp";  // hashes collide: the same pattern shares some spine link
  CHECK(flows_per_spine_link(Cluster::build(spec)) > 1);

  // Unset: dmodk on InfiniBand, ecmp on Ethernet (whose switches hash flows).
  spec.inter.routing.clear();
  spec.inter.kind = "ethernet";
  CHECK(flows_per_spine_link(Cluster::build(spec)) > 1);
  spec.inter.routing = "dmodk";
  CHECK(flows_per_spine_link(Cluster::build(spec)) == 1);
  spec.inter.routing = "adaptive";
  CHECK_THROWS_WITH_AS(Cluster::build(spec), doctest::Contains("cluster.inter_node.routing: unknown routing 'adaptive'"),
                       std::invalid_argument);
}

TEST_CASE("PXN relay: the sender-node GPU on the receiver's rail") {
  // 4 NICs per node: GPU g uses NIC g % 4. node0.gpu2 (rail 2) -> node2.gpu5 (rail 1):
  // the relay is node0.gpu1, the first GPU of the sender's node on rail 1.
  auto s = multi_node(4, "rail-optimized", 2);
  s.inter.nics_per_node = 4;
  const Cluster c = Cluster::build(s);
  CHECK(c.pxn_relay(c.gpu_index("node0.gpu2"), c.gpu_index("node2.gpu5")) == c.gpu_index("node0.gpu1"));
  CHECK(c.pxn_relay(c.gpu_index("node0.gpu6"), c.gpu_index("node2.gpu2")) == -1);  // 6 % 4 = 2: same rail
  CHECK(c.pxn_relay(c.gpu_index("node0.gpu2"), c.gpu_index("node0.gpu5")) == -1);  // same node: NVLink
  // An NVLink domain of two nodes: its GPUs talk over the switch fabric, no NIC.
  s.nvlink_domain = 16;
  const Cluster nvl = Cluster::build(s);
  CHECK(nvl.pxn_relay(nvl.gpu_index("node0.gpu2"), nvl.gpu_index("node1.gpu5")) == -1);
  CHECK(nvl.pxn_relay(nvl.gpu_index("node0.gpu2"), nvl.gpu_index("node2.gpu5")) == nvl.gpu_index("node0.gpu1"));
  CHECK_THROWS_AS(c.pxn_relay(-1, 3), std::out_of_range);
}

TEST_CASE("structural routes of generated clusters equal the graph search on the same graph") {
  // Generated clusters route by formula (cluster.cpp, "Structural routes"); explicit
  // graphs by the pruned Dijkstra + equal-cost enumeration. On the same graph both
  // must give, for every ordered pair and hash, the same link ids, the same number
  // of equal-cost paths and the same latency. The shapes cover: spines with several
  // leaf groups, fat-tree with shared NICs, a short last group, no spine at all, one
  // node, an intra-node latency above the network's (same-node pairs still take the
  // switch: fewer hops win, latency only breaks ties), and all-zero latencies.
  // (More NICs than GPUs is an error: see "nics_per_node above gpus_per_node".)
  std::vector<std::pair<std::string, ClusterSpec>> shapes;
  shapes.reserve(8);
  {
    auto s = multi_node(4, "rail-optimized", 2);
    s.inter.spines = 3;
    shapes.emplace_back("rail 4 nodes, 2 per leaf, 3 spines", s);
  }
  {
    auto s = multi_node(4, "fat-tree", 2);
    s.inter.nics_per_node = 4;
    s.inter.oversubscription = 2;
    shapes.emplace_back("fat-tree 4 nodes, 4 NICs, 2:1", s);
  }
  {
    auto s = multi_node(6, "rail-optimized", 4);
    s.inter.nics_per_node = 4;
    shapes.emplace_back("rail 6 nodes, 4 per leaf (short last group), 4 NICs", s);
  }
  shapes.emplace_back("fat-tree 2 nodes, one leaf, no spine", multi_node(2, "fat-tree"));
  {
    ClusterSpec s;
    s.intra = {"pcie", 32 * GBps, ls::sim::ps(1'500'001)};
    shapes.emplace_back("one pcie node", s);
  }
  {
    auto s = multi_node(2, "rail-optimized", 1);
    s.inter.nics_per_node = 4;
    s.intra.latency = ls::sim::us(5);  // above L = 3 us and L + 2h = 3.2 us
    shapes.emplace_back("intra latency above inter", s);
  }
  {
    auto s = multi_node(4, "rail-optimized", 2);
    s.gpus_per_node = 4;
    s.intra.latency = Time::zero();
    s.inter.latency = Time::zero();
    s.inter.spines = 2;
    shapes.emplace_back("zero latencies", s);
  }
  // The graph search knows no destination numbering: compare under ECMP (D-mod-K
  // has its own test below).
  for (auto& shape : shapes) shape.second.inter.routing = "ecmp";
  const std::uint64_t hashes[] = {0, 1, 2, 3, 5, 7, 12345, 0x9e3779b97f4a7c15ULL};
  for (const auto& [shape_name, spec] : shapes) {
    // Clang 14 cannot capture a structured binding in CAPTURE's lambda: name a copy.
    const std::string what = shape_name;
    CAPTURE(what);
    const Cluster structural = Cluster::build(spec);
    ClusterSpec graph_spec;
    graph_spec.graph.emplace(as_explicit_graph(structural));
    const Cluster searched = Cluster::build(graph_spec);
    REQUIRE(searched.link_count() == structural.link_count());
    REQUIRE(searched.gpu_count() == structural.gpu_count());
    for (LinkId l = 0; l < structural.link_count(); ++l) REQUIRE(searched.link(l).name == structural.link(l).name);
    int mismatches = 0;
    for (int a = 0; a < structural.gpu_count(); ++a)
      for (int b = 0; b < structural.gpu_count(); ++b) {
        const bool same_count = structural.path_count(a, b) == searched.path_count(a, b);
        bool same = same_count;
        for (std::uint64_t h : hashes) {
          const auto r1 = structural.route(a, b, h), r2 = searched.route(a, b, h);
          same = same && std::equal(r1.begin(), r1.end(), r2.begin(), r2.end()) &&
                 structural.route_latency(a, b, h) == searched.route_latency(a, b, h);
        }
        if (!same && ++mismatches <= 5) {  // report the first few, not thousands
          CAPTURE(a);
          CAPTURE(b);
          CHECK(structural.path_count(a, b) == searched.path_count(a, b));
          CHECK(names_on(structural, structural.route(a, b, 1)) == names_on(searched, searched.route(a, b, 1)));
          CHECK(structural.route_latency(a, b, 1) == searched.route_latency(a, b, 1));
        }
      }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("a partly filled leaf keeps the full leaf's uplink ports: every leaf->spine link at NIC rate / oversubscription") {
  // Rail-optimized, 24 nodes, 16 per leaf: rail leaves of group 0 have d = 16 NICs below
  // them, those of group 1 d = 8. Derived spines round(16/1) = 16, each uplink at
  // 16·25/16 = 25 GB/s, the NIC's rate, on every leaf: a flow from group 1 to group 0
  // is never held below one NIC's rate by its leaf (group 1's uplinks now carry 2x its
  // downlink capacity instead of 8·25/16 = 12.5 GB/s each). Fat-tree at 2:1: d = 128
  // NICs under a full leaf, 128·25/2 GB/s over round(128/2) = 64 spines, 25 GB/s each,
  // on group 1's leaf (64 NICs) too.
  for (const auto& row : {std::tuple{"rail-optimized", 1.0, 25 * GBps}, std::tuple{"fat-tree", 2.0, 25 * GBps}}) {
    // Plain locals: Clang 14 (the sanitizer build) cannot capture a structured binding.
    const std::string fabric = std::get<0>(row);
    const double over = std::get<1>(row), per_link = std::get<2>(row);
    CAPTURE(fabric);
    auto s = multi_node(24, fabric, 16);
    s.inter.oversubscription = over;
    const Cluster c = Cluster::build(s);
    int spine_links = 0;
    for (LinkId l = 0; l < c.link_count(); ++l) {
      const auto& info = c.link(l);
      if (c.vertex_kind(info.from_vertex) == "switch" && c.vertex_name(info.to_vertex).rfind("spine", 0) == 0) {
        ++spine_links;
        CHECK(info.bandwidth_Bps == doctest::Approx(per_link));
      }
    }
    CHECK(spine_links > 0);
  }
}

TEST_CASE("oversubscription 2:1 halves a leaf's uplink capacity") {
  // Fat-tree, 4 nodes × 8 NICs, 2 nodes per leaf: each leaf has d = 16 NICs below it,
  // downlink capacity 16·25 GB/s = 400 GB/s; uplink = 400/2 = 200 GB/s, over the
  // derived round(16/2) = 8 spines = 25 GB/s per leaf->spine link.
  auto s = multi_node(4, "fat-tree", 2);
  s.inter.oversubscription = 2;
  const Cluster c = Cluster::build(s);
  double down = 0, up = 0;
  int spine_links = 0;
  for (LinkId l = 0; l < c.link_count(); ++l) {
    const auto& info = c.link(l);
    if (c.vertex_name(info.to_vertex) == "leaf0" && c.vertex_kind(info.from_vertex) == "nic") down += info.bandwidth_Bps;
    if (c.vertex_name(info.from_vertex) == "leaf0" && c.vertex_name(info.to_vertex).rfind("spine", 0) == 0) {
      up += info.bandwidth_Bps;
      ++spine_links;
      CHECK(info.bandwidth_Bps == doctest::Approx(25 * GBps));
    }
  }
  CHECK(spine_links == 8);
  CHECK(down == doctest::Approx(400 * GBps));
  CHECK(up == doctest::Approx(down / 2));

  s.inter.spines = 2;  // explicit spine count: same total, 100 GB/s per link
  const Cluster c2 = Cluster::build(s);
  CHECK(c2.link(*c2.find_link("leaf1->spine1")).bandwidth_Bps == doctest::Approx(100 * GBps));
  CHECK(c2.link(*c2.find_link("spine1->leaf1")).bandwidth_Bps == doctest::Approx(100 * GBps));
}

TEST_CASE("explicit graph: GPU order by (node, gpu), direct links, GPUs never relay") {
  ExplicitGraphSpec g;
  g.vertices = {{"node1.gpu0", "gpu"}, {"node0.gpu1", "gpu"}, {"node0.gpu0", "gpu"}, {"sw", "switch"}};
  g.links = {{"node0.gpu0", "node0.gpu1", "nvlink", 100 * GBps, ls::sim::ns(700), true},
             {"node0.gpu0", "sw", "ethernet", 10 * GBps, ls::sim::us(2), true},
             {"node0.gpu1", "sw", "ethernet", 10 * GBps, ls::sim::us(2), true},
             {"node1.gpu0", "sw", "ethernet", 10 * GBps, ls::sim::us(2), true}};
  ClusterSpec s;
  s.graph = g;
  const Cluster c = Cluster::build(s);
  CHECK(c.gpu_count() == 3);
  CHECK(c.gpu_name(0) == "node0.gpu0");
  CHECK(c.gpu_name(1) == "node0.gpu1");
  CHECK(c.gpu_name(2) == "node1.gpu0");
  CHECK(c.node_of_gpu(2) == 1);
  CHECK(c.node_count() == 2);
  CHECK_FALSE(c.crosses_nodes(std::vector<std::int32_t>{0, 1}));
  CHECK(c.crosses_nodes(std::vector<std::int32_t>{1, 2}));
  // Direct NVLink (0.7 us) beats the switch (4 us).
  CHECK(names_on(c, c.route(0, 1)) == std::vector<std::string>{"node0.gpu0->node0.gpu1"});
  CHECK(c.route_latency(0, 1) == ls::sim::ns(700));
  // 0 -> 2: via sw (4 us), not via node0.gpu1 (GPUs do not forward).
  CHECK(names_on(c, c.route(0, 2)) == std::vector<std::string>{"node0.gpu0->sw", "sw->node1.gpu0"});

  // Parallel links get a suffix.
  g.links.push_back({"node0.gpu0", "node0.gpu1", "nvlink", 100 * GBps, ls::sim::ns(700), false});
  s.graph = g;
  const Cluster c3 = Cluster::build(s);
  CHECK(c3.find_link("node0.gpu0->node0.gpu1#1").has_value());
  CHECK(c3.path_count(0, 1) == 2);  // both parallel links are equal-cost
}

TEST_CASE("invalid specs throw std::invalid_argument naming the offender") {
  ExplicitGraphSpec base;
  base.vertices = {{"node0.gpu0", "gpu"}, {"node0.gpu1", "gpu"}, {"node0.nvswitch", "nvswitch"}};
  base.links = {{"node0.gpu0", "node0.nvswitch", "nvlink", 100 * GBps, ls::sim::ns(500), true},
                {"node0.gpu1", "node0.nvswitch", "nvlink", 100 * GBps, ls::sim::ns(500), true}};
  auto build_with = [](ExplicitGraphSpec g) {
    ClusterSpec s;
    s.graph.emplace(std::move(g));
    return error_of([&] { (void)Cluster::build(s); });
  };
  CHECK(build_with(base).empty());

  SUBCASE("unknown vertex in a link") {
    auto g = base;
    g.links[1].to = "node0.nvswich";  // typo
    const auto msg = build_with(g);
    CHECK(contains(msg, "unknown vertex 'node0.nvswich'"));
    CHECK(contains(msg, "links[1]"));
  }
  SUBCASE("non-positive bandwidth") {
    auto g = base;
    g.links[0].bandwidth_Bps = 0;
    const auto msg = build_with(g);
    CHECK(contains(msg, "non-positive bandwidth"));
    CHECK(contains(msg, "node0.gpu0 -> node0.nvswitch"));
  }
  SUBCASE("unreachable GPU") {
    auto g = base;
    g.vertices.push_back({"node1.gpu0", "gpu"});
    g.links.push_back({"node0.gpu1", "node1.gpu0", "nvlink", 100 * GBps, ls::sim::ns(500), true});  // only via a GPU
    const auto msg = build_with(g);
    CHECK(contains(msg, "cannot reach"));
    CHECK(contains(msg, "node1.gpu0"));
  }
  SUBCASE("one-way link leaves a GPU unreachable in one direction") {
    auto g = base;
    g.links[1].duplex = false;  // gpu1 -> switch only
    const auto msg = build_with(g);
    CHECK(contains(msg, "GPU node0.gpu0 cannot reach GPU node0.gpu1"));
  }
  SUBCASE("bad GPU name, unknown kinds, duplicates") {
    auto g = base;
    g.vertices[1].name = "gpu1";
    CHECK(contains(build_with(g), "bad GPU name 'gpu1'"));
    g = base;
    g.vertices[2].kind = "router";
    CHECK(contains(build_with(g), "unknown kind 'router'"));
    g = base;
    g.links[0].kind = "carrier-pigeon";
    CHECK(contains(build_with(g), "unknown link kind 'carrier-pigeon'"));
    g = base;
    g.vertices.push_back({"node0.gpu1", "gpu"});
    CHECK(contains(build_with(g), "duplicate vertex name 'node0.gpu1'"));
  }
  SUBCASE("generator keys") {
    auto s = multi_node(2);
    s.inter.bandwidth_Bps = -1;
    CHECK(contains(error_of([&] { (void)Cluster::build(s); }), "cluster.inter_node.bandwidth"));
    s = multi_node(2);
    s.intra.bandwidth_Bps = 0;
    CHECK(contains(error_of([&] { (void)Cluster::build(s); }), "cluster.intra_node.bandwidth"));
    s = multi_node(2);
    s.inter.fabric = "dragonfly";
    CHECK(contains(error_of([&] { (void)Cluster::build(s); }), "unknown fabric 'dragonfly'"));
    s = multi_node(2);
    s.intra.kind = "smoke-signals";
    CHECK(contains(error_of([&] { (void)Cluster::build(s); }), "unknown kind 'smoke-signals'"));
  }
}

TEST_CASE("find_links: 'a->b' is one directed link, 'a<->b' both directions of the cable") {
  const Cluster c = Cluster::build(multi_node(2));
  const auto one = c.find_links("node0.nic0->leaf0");
  REQUIRE(one.size() == 1);
  CHECK(c.link(one[0]).name == "node0.nic0->leaf0");
  const auto both = c.find_links("node0.nic0<->leaf0");
  REQUIRE(both.size() == 2);
  CHECK(c.link(both[0]).name == "node0.nic0->leaf0");
  CHECK(c.link(both[1]).name == "leaf0->node0.nic0");
  CHECK(c.find_links("node0.nic0<->leaf1").empty());
  CHECK(c.find_links("nowhere->leaf0").empty());
}

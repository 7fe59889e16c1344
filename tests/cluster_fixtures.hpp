// tests/cluster_fixtures.hpp — cluster specs and helpers shared by the Cluster tests
// (test_cluster.cpp, test_cluster_down_links.cpp).
#pragma once

#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "topology/cluster.hpp"

namespace ls::test {

inline constexpr double GBps = 1e9;

/// `nodes` nodes of 8 GPUs on NVSwitch (300 GB/s, 1 us), InfiniBand NICs (25 GB/s,
/// 3 us) under leaves of `nodes_per_leaf` nodes.
inline topo::ClusterSpec multi_node(int nodes, const std::string& fabric = "rail-optimized", int nodes_per_leaf = 16) {
  topo::ClusterSpec s;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.intra = {"nvswitch", 300 * GBps, sim::us(1)};
  s.inter.kind = "infiniband";
  s.inter.bandwidth_Bps = 25 * GBps;  // 200 Gb/s
  s.inter.latency = sim::us(3);
  s.inter.fabric = fabric;
  s.inter.nodes_per_leaf = nodes_per_leaf;
  return s;
}

inline std::vector<std::string> names_on(const topo::Cluster& c, std::span<const sim::LinkId> path) {
  std::vector<std::string> out;
  for (sim::LinkId l : path) out.push_back(c.link(l).name);
  return out;
}

/// The message of the std::invalid_argument that `f` throws ("" when none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// The generated cluster `c` as an explicit graph: same vertices in the same order,
/// same directed links (one-way entries, so each direction keeps its own latency)
/// in link-id order. Building it yields identical vertex and link ids, routed by
/// the graph search instead of the generator's structural routes.
inline topo::ExplicitGraphSpec as_explicit_graph(const topo::Cluster& c) {
  topo::ExplicitGraphSpec g;
  for (std::size_t v = 0; v < c.vertex_count(); ++v)
    g.vertices.push_back({c.vertex_name(static_cast<int>(v)), std::string(c.vertex_kind(static_cast<int>(v)))});
  for (sim::LinkId l = 0; l < c.link_count(); ++l) {
    const auto& info = c.link(l);
    g.links.push_back({c.vertex_name(info.from_vertex), c.vertex_name(info.to_vertex),
                       std::string(link_kind_name(info.type)), info.bandwidth_Bps, info.latency, false});
  }
  return g;
}

}  // namespace ls::test

// topology/cluster.hpp — the cluster graph: GPUs, switches, NICs, directed links, routes.
//
// A Cluster is built once from a ClusterSpec (generator keys or an explicit graph)
// and is immutable afterwards except for its route cache and a lazily built
// link-name index. The graph is a Boost.Graph adjacency_list kept inside
// cluster_impl.hpp (pimpl): no Boost type leaks into this header, so the rest of
// layoutsim compiles without Boost. The implementation is split by job:
//   cluster.cpp         the link table, the public API, build() and route dispatch
//   fabric.cpp          the generator and its structural routes
//   explicit_graph.cpp  building an explicit graph (cluster.graph)
//   graph_router.cpp    the routing view and its pruned Dijkstra (PXN relay vertices included)
//   down_links.cpp      down links: names, which pairs they affect, leaf flags
//
// Naming (scenarios and perturbations refer to these names):
//   GPUs            node<N>.gpu<G>
//   intra switch    node<N>.nvswitch (kind "nvswitch") | node<N>.pcie (kind "pcie-switch");
//                   an NVLink domain of several nodes (nvlink_domain): nvl<D>.nvswitch
//   NICs            node<N>.nic<R>
//   leaf switches   leaf<i>   (rail-optimized: i = group·nics_per_node + rail;
//                              fat-tree: i = group, a group being nodes_per_leaf nodes)
//   spines          spine<j>
//   directed links  "<from>-><to>", e.g. "node3.nic5->leaf5"; a duplex link is two
//                   directed links. Parallel links between the same two vertices in an
//                   explicit graph get a suffix: "a->b", "a->b#1", "a->b#2", ...
//
// Generated topology (see fabric.cpp for the numbers and why):
//   intra node: every GPU has a duplex link to its node's switch (its NVLink domain's
//     switch fabric when nvlink_domain spans several nodes: NVL72), bandwidth
//     intra.bandwidth_Bps per direction, latency intra.latency/2 per hop, so that
//     gpu→switch→gpu costs exactly intra.latency.
//   inter node (nodes > 1): GPU g uses NIC g % nics_per_node over a "pcie" link; NICs
//     go up to leaves (link kind inter.kind), leaves to every spine. Latencies are
//     split so that a leaf-only GPU→GPU path across nodes costs exactly inter.latency
//     and a path through a spine a little more (two short switch hops).
//
// Routing: fewest hops, then lowest total latency (latency only breaks ties, so the
// GPUs of one node always talk over their switch, whatever latencies a scenario sets,
// as NCCL routes by hierarchy; see route_weight in cluster_impl.hpp); GPUs do not forward
// traffic of others (a GPU is only a path's first or last vertex; the one exception
// is the PXN-style fallback under "Down links" below, for GPU pairs that have no
// other path; NCCL's PXN on healthy rail-optimized fabrics is the planner's choice,
// made on top of these routes: see pxn_relay) and a NIC only forwards between its host side (GPU, NVSwitch, PCIe
// switch) and the network, never host→host or network→network. Among the equal-cost paths,
// `selector % path_count` chooses one, the paths being ordered deterministically
// (by link ids), so the same selector always gives the same path. The selector is
// the flow's hash (ECMP: explicit graphs, and generated fabrics with
// inter_node.routing: ecmp, Ethernet's default) or, under destination-based routing
// (inter_node.routing: dmodk, InfiniBand's default), the destination NIC's index in
// its plane (fabric.cpp, structural_path, says why).
//   Generated topologies are routed structurally, from the generator's layout, in
//   O(1): same node (NVLink domain) gpu→switch→gpu; NICs under one leaf gpu→nic→leaf→nic→gpu;
//   otherwise gpu→nic→leaf→spine_k→leaf'→nic→gpu with path_count = spines (k =
//   selector % spines) — exactly what the graph search gives on that graph
//   (tests/test_cluster.cpp compares the two for every pair under ECMP).
//   Explicit graphs are routed by a pruned graph search (see route()).
//
// Down links (ClusterSpec::down_links): a down link keeps its id, name and capacity
// in the link table (so link ids, names and per-link statistics do not move), but no
// route uses it. "a<->b" names both directions of a duplex cable. Routing then:
//   * explicit graphs: the graph search runs on the graph without the down links;
//   * generated topologies: a pair whose structural equal-cost paths all avoid the
//     down links keeps them (removing links can only lengthen other paths, so they
//     are still all the shortest ones); any other pair — e.g. every pair whose spine
//     paths leave a leaf with a down uplink — is routed by the graph search on the
//     generated graph without the down links, the selector choosing among what
//     remains (a leaf with spine0's uplink down spreads over spine1.., like a real
//     fabric's ECMP groups or a subnet manager routing around a dead cable).
//   * PXN-style relay, only as a fallback: when no path avoids other GPUs (a dead
//     rail: node3.gpu5->node3.nic5 or node3.nic5->leaf5 down, and the generated
//     node has no NVSwitch→NIC link), a peer GPU may relay between its NVLink side
//     and its own NIC, on the sending side gpu→nvswitch→peer→peer's NIC and on the
//     receiving side peer's NIC→peer→nvswitch→gpu. This is what NCCL's PXN does on
//     rail-optimized DGX-class nodes: the data crosses NVLink to a GPU whose NIC
//     reaches the destination rail and that GPU's NIC sends it (it loads the peer's
//     NVLink and PCIe links, which the flow network then charges). We model no
//     NVSwitch→NIC link: on DGX H100 a GPU reaches a non-local NIC only through the
//     CPU's PCIe root complex, which NCCL avoids. A relay never takes traffic from
//     the network back into the network (network→node→network is not a route).
//     Only links are charged: the relaying GPU's copy engines are not modelled.
//     The same fallback applies to explicit graphs, down links or not (a GPU
//     without a NIC of its own reaches the network through a peer's).
//   Build then checks that every GPU still reaches every other one (searches from
//   the GPUs the down links touch) and throws std::invalid_argument naming the pair
//   and the down links otherwise.
//
// Units: bandwidth bytes/s per direction, latency sim::Time.
// Thread-safety: route()/route_latency()/append_route() fill a cache; a Cluster must not be used
// from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/network.hpp"
#include "sim/time.hpp"
#include "topology/kinds.hpp"
#include "topology/cluster_spec.hpp"

namespace ls::topo {

using sim::LinkId;

/// One directed link. `from_vertex`/`to_vertex` index Cluster::vertex_name().
struct LinkInfo {
  std::string name;            // "<from>-><to>"
  LinkKind type = LinkKind::nvlink;
  std::string kind;            // link_kind_name(type): the reports' spelling
  double bandwidth_Bps = 0;    // > 0
  sim::Time latency;           // >= 0
  int from_vertex = -1;
  int to_vertex = -1;
};

class Cluster {
public:
  /// Builds the graph. Throws std::invalid_argument naming the offender on: bad GPU
  /// names or vertex kinds, duplicate vertex names, links to unknown vertices,
  /// non-positive bandwidth, negative latency, unknown link/fabric kinds, unknown
  /// down-link names (with the nearest valid names), GPUs that cannot reach each
  /// other (explicit graphs, or any graph once its down links are removed; generated
  /// ones are connected by construction). Cost: O(V + E) for generators (measured:
  /// 16384 GPUs, 131k links, ~0.2 s, mostly naming the links); O(G·(V + E)) for an
  /// explicit graph (a reachability search from every GPU); generators with down
  /// links O(V + E) plus O(V + E) per GPU the down links touch (a reachability
  /// search from each of them).
  static Cluster build(const ClusterSpec& spec);

  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;
  ~Cluster();

  // ---- GPUs -------------------------------------------------------------------
  /// GPU index = node·gpus_per_node + local index (explicit graph: GPUs sorted by
  /// (node, gpu) as parsed from their names, then numbered 0..gpu_count()-1).
  int gpu_count() const;
  int node_count() const;
  int node_of_gpu(int gpu) const;
  std::string gpu_name(int gpu) const;
  /// -1 when no GPU has that name. O(1) average.
  int gpu_index(std::string_view name) const;
  /// True when the GPUs are not all on one node.
  bool crosses_nodes(std::span<const std::int32_t> gpus) const;
  /// NVLink domains (ClusterSpec::nvlink_domain): GPUs of one domain share a switch
  /// fabric and route over it, never the network. Domain d holds nodes
  /// [d·k, (d+1)·k), k = nvlink_domain / gpus_per_node; explicit graphs: one per node.
  int nvlink_domain_count() const;
  int nvlink_domain_of_gpu(int gpu) const;
  /// True when the GPUs are not all in one NVLink domain.
  bool crosses_nvlink_domains(std::span<const std::int32_t> gpus) const;

  // ---- vertices ---------------------------------------------------------------
  std::size_t vertex_count() const;
  const std::string& vertex_name(int vertex) const;
  /// gpu | nvswitch | pcie-switch | nic | switch (vertex_kind_name of its VertexKind)
  std::string_view vertex_kind(int vertex) const;
  /// -1 when unknown.
  int find_vertex(std::string_view name) const;

  // ---- links ------------------------------------------------------------------
  std::size_t link_count() const;
  const LinkInfo& link(LinkId id) const;
  /// O(1) average; the first call on a generated cluster indexes all link names, O(E).
  std::optional<LinkId> find_link(std::string_view name) const;
  /// The links a user-facing name denotes: "a->b" one directed link, "a<->b" both
  /// directions of the cable. Empty when any of them does not exist.
  std::vector<LinkId> find_links(std::string_view name) const;
  /// Capacities indexed by LinkId: what sim::FlowNetwork is constructed with. A
  /// down link keeps its nominal capacity here (no route puts a flow on it).
  std::vector<double> link_bandwidths() const;
  /// True when the link is down (ClusterSpec::down_links): no route uses it. O(1).
  bool link_down(LinkId id) const;
  /// The down links' ids, ascending (empty when none).
  std::span<const LinkId> down_links() const;

  // ---- routes -----------------------------------------------------------------
  /// Directed links from GPU src to GPU dst (empty when src == dst). The span stays
  /// valid for the Cluster's lifetime: what a call returns is cached and never
  /// evicted, so the cache holds only the (pair, path) combinations asked for.
  /// Generated topology: O(1) per call (a few array reads and one hash-map insert;
  /// measured: 16384 GPUs, the 63k TP/DP-ring and PP pairs of t8·p16·d128, 0.05 s).
  /// Generated topology with down links: the same, except for pairs whose structural
  /// paths touch a down link, which are searched as an explicit graph's.
  /// Explicit graph: first call for a pair runs one pruned, early-stopped Dijkstra
  /// that visits src's first hops, the switch core and dst's last hop,
  /// O(E_core log V), and caches all equal-cost paths of the pair; later calls
  /// O(1). Throws std::out_of_range for a bad GPU index.
  std::span<const LinkId> route(int src_gpu, int dst_gpu, std::uint64_t flow_hash = 0) const;
  /// Number of equal-cost paths between the two GPUs that ECMP chooses from
  /// (capped at kMaxEcmpPaths; 0 when src == dst). Generated topology: O(1).
  std::size_t path_count(int src_gpu, int dst_gpu) const;
  /// Sum of the hop latencies of route(src, dst, flow_hash).
  sim::Time route_latency(int src_gpu, int dst_gpu, std::uint64_t flow_hash = 0) const;
  /// Appends route(src, dst, flow_hash) to `out` and returns route_latency(...) of it,
  /// without keeping a generated topology's structural route in route()'s cache: a
  /// planner that copies the links anyway (NCCL's rings over thousands of GPUs, one per
  /// GPU of a node) would otherwise store every hop of every ring. Same cost bounds as route().
  sim::Time append_route(int src_gpu, int dst_gpu, std::uint64_t flow_hash, std::vector<LinkId>& out) const;
  std::vector<std::string> link_kinds_on_route(int src_gpu, int dst_gpu, std::uint64_t flow_hash = 0) const;

  /// The GPU a point-to-point transfer from src to dst relays through under NCCL's
  /// PXN, or -1 when it goes straight. PXN (NCCL 2.12+, on by default:
  /// NCCL_P2P_PXN_LEVEL=2 "always use PXN") has a sender whose own NIC is on another
  /// rail than the receiver's move the data over NVLink to the GPU of its node on the
  /// receiver's rail, whose NIC sends it: the transfer stays on one rail instead of
  /// crossing the spines between rails. Generated rail-optimized fabrics with
  /// inter_node.pxn (the default), GPUs in different NVLink domains on different
  /// rails: the relay is GPU r of the sender's node, r the receiver's rail. The planner
  /// routes such a transfer src→relay→dst (topology/planner.cpp); ring collectives
  /// keep one rail per inter-node hop by their channel order instead. O(1).
  int pxn_relay(int src_gpu, int dst_gpu) const;

  /// At most this many equal-cost paths are enumerated per GPU pair (in link-id
  /// order); enough for one path per spine in any realistic two-tier fabric.
  static constexpr std::size_t kMaxEcmpPaths = 256;
  /// The most links a generated topology may have (checked before anything is
  /// built): 4 M links, about 1 GB with their names; 131,072 GPUs on rails need
  /// about 1.8 M.
  static constexpr std::size_t kMaxGeneratedLinks = std::size_t{1} << 22;

private:
  struct Impl;
  explicit Cluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ls::topo

// topology/cluster_impl.hpp — Cluster::Impl, shared by the topology/ files that
// implement Cluster (see cluster.hpp for which file does what). Private to topology/:
// it is the only header that includes Boost.Graph.
//
// The graph is a Boost.Graph adjacency_list with bundled vertex/edge properties.
// Link attributes live in a plain vector indexed by LinkId; the edge bundle only
// carries the id and the routing weight.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <fmt/format.h>

#include "topology/cluster.hpp"
#include "topology/kinds.hpp"

namespace ls::topo {

struct FabricShape;  // fabric.cpp: the generator keys, checked, and the fabric they make
struct VertexProps {
  std::string name;
  VertexKind kind = VertexKind::gpu;
};

struct EdgeProps {
  LinkId id = 0;
  // Lexicographic (hops, latency) folded into one integer (route_weight()).
  std::int64_t weight = 1;
};

// Routing follows the hierarchy, as NCCL does, not the latencies: a path with fewer
// hops always wins (GPUs of one node talk over their NVSwitch, 2 hops, never over
// NIC and leaf, 4 or more, whatever latencies a scenario sets), and latency only
// breaks ties among paths of equal hop count. Weight = kHopWeight + latency_ps per
// link: a link's latency is below 1 s = 1e12 ps (checked when it is added), so any
// path of under 281 hops has a total latency below kHopWeight = 2^48 ps ≈ 281 s and
// one hop more always costs more; distances stay in int64 up to 2^15 hops.
constexpr std::int64_t kHopWeight = std::int64_t{1} << 48;
inline std::int64_t route_weight(sim::Time latency) { return kHopWeight + latency.ps(); }

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexProps, EdgeProps>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

/// Routing-view vertex. GPUs are endpoints, never transit vertices (relaying through
/// a GPU is a collective algorithm's choice, e.g. NCCL's PXN, made by the planner).
struct RouteVertex {
  int original = -1;       // vertex of the graph (both NIC halves map to the NIC)
  bool gpu = false;
  bool last_hop = false;   // no out-edge to a non-GPU, non-fallback vertex: useful only next to dst
  bool fallback = false;   // relay half or host copy: entered by the relay-mode search only
  // Relay mode's last_hop: every out-edge, fallback ones included, leads to a GPU or a
  // descending vertex, so from here a path can only end at a GPU "below" it (a NIC's
  // down half, a down relay, a host copy). Useful only if dst is below it.
  bool descending = false;
};
using RouteGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, RouteVertex, EdgeProps>;
using RVertex = boost::graph_traits<RouteGraph>::vertex_descriptor;

struct Cluster::Impl {
  Graph g;
  std::vector<LinkInfo> links;
  // Name indexes. Keys are views into g[v].name and links[id].name, which never move:
  // reserve() sizes g and `links` before anything is added (add_vertex/add_link
  // refuse to grow them). Hash maps, not ordered ones: a 16k-GPU cluster has 131k
  // links whose names share long prefixes ("node1234.gpu5->node1234.nic5"), and an
  // ordered map spent most of Cluster::build comparing them.
  // The link index is filled lazily (index_links(), on the first find_link) for
  // generated topologies, whose names are unique by construction: building it is a
  // third of Cluster::build at 16k GPUs and a simulation may never look a link up
  // by name. Explicit graphs fill it as links are added (parallel-link suffixes).
  mutable std::unordered_map<std::string_view, LinkId> link_by_name;
  mutable std::size_t links_indexed = 0;
  std::unordered_map<std::string_view, int> vertex_by_name;
  int vertices_added = 0;
  std::vector<char> is_gpu;             // per vertex
  std::vector<int> gpu_vertex;          // GPU index -> vertex
  std::vector<int> gpu_node;            // GPU index -> node
  std::vector<int> gpu_domain;          // GPU index -> NVLink domain (explicit graphs: the node)
  std::unordered_map<std::string_view, int> gpu_by_name;  // views into g[v].name
  int nodes = 0;
  int nvlink_domains = 0;

  struct PairRoutes {
    std::vector<std::vector<LinkId>> paths;  // equal-cost paths, sorted by link ids
    std::vector<sim::Time> latency;          // per path
  };
  // Node-based map: references to PairRoutes (and spans into their vectors) stay
  // valid across rehashing, which is what route()'s lifetime promise relies on.
  std::unordered_map<std::uint64_t, PairRoutes> routes;

  // Generated topologies: the generator's layout, filled while it adds the links,
  // from which structural_path() reads every hop of a route in O(1) (see "Routing").
  // Empty for explicit graphs. Indices: GPU, NIC = node·nics + rail, leaf, and
  // leaf·spines + k for the leaf↔spine links.
  struct Layout {
    bool on = false;                  // a generated topology: routes are structural
    int nics = 0;                     // NICs per node (0 when nodes == 1)
    int spines = 0;                   // 0 when one leaf reaches every NIC
    std::vector<LinkId> gpu_to_switch, switch_to_gpu;  // per GPU
    std::vector<LinkId> gpu_to_nic, nic_to_gpu;        // per GPU (its NIC g % nics)
    std::vector<LinkId> nic_to_leaf, leaf_to_nic;      // per NIC
    std::vector<int> leaf_of_nic;                      // per NIC
    std::vector<LinkId> leaf_to_spine, spine_to_leaf;  // per (leaf, spine)
    // Destination-based (D-mod-K) routing (InterNodeSpec::routing): a flow to NIC n
    // crosses spine destination_index[n] % spines, whatever its source or hash.
    bool by_destination = false;
    bool pxn = false;  // rail-optimized with InterNodeSpec::pxn: Cluster::pxn_relay names relays
    std::vector<std::uint32_t> destination_index;  // per NIC: its node (rails), node · nics + its index (fat-tree)
  } layout;

  /// What picks one of a pair's equal-cost paths: the flow's hash under ECMP, the
  /// destination NIC's index under destination-based routing.
  std::uint64_t path_selector(int dst_gpu, std::uint64_t flow_hash) const;
  /// See Cluster::pxn_relay.
  int pxn_relay(int src_gpu, int dst_gpu) const;
  /// A GPU's rail (GPU g of a node uses that node's NIC g % nics) and its NIC's index
  /// into the layout's per-NIC arrays. Generated topologies with a network (nics > 0).
  std::size_t rail_of_gpu(std::size_t gpu) const {
    return (gpu % (gpu_vertex.size() / static_cast<std::size_t>(nodes))) % static_cast<std::size_t>(layout.nics);
  }
  std::size_t nic_of_gpu(std::size_t gpu) const {
    return static_cast<std::size_t>(gpu_node[gpu]) * static_cast<std::size_t>(layout.nics) + rail_of_gpu(gpu);
  }

  /// One structural route: at most 6 hops (gpu→nic→leaf→spine→leaf→nic→gpu).
  struct StructPath {
    std::array<LinkId, 6> ids{};
    std::uint8_t len = 0;
  };
  // Structural routes handed out by route(), keyed by (src, dst, path index): only
  // what is asked is stored (a simulation asks for its ring neighbours, pipeline
  // peers and all-to-all pairs, not for all G² pairs: 16384 GPUs would need 268 M
  // entries). Node-based, so spans into the arrays survive rehashing.
  std::unordered_map<std::uint64_t, StructPath> struct_routes;

  // Routing view (see the file comment) and the search's scratch arrays, stamped
  // with an epoch so that a search costs what it visits, not O(V). Explicit graphs only.
  RouteGraph rg;
  std::vector<std::int64_t> dist;
  std::vector<std::uint32_t> seen_epoch, target_epoch;
  std::uint32_t epoch = 0;
  std::vector<RVertex> below;  // search()'s backward-marking stack

  // Down links (ClusterSpec::down_links). keep_edges: a generated topology that has
  // down links also puts its edges into g, for the routing view and the search.
  bool keep_edges = false;
  std::vector<char> link_down;          // per link; empty when no link is down
  std::vector<LinkId> down_ids;         // ascending
  // Generated topologies with down links, per vertex: a leaf with some leaf→spine
  // link down / some spine→leaf link down (its spine paths lose equal-cost members).
  std::vector<char> uplink_down_at, downlink_down_at;

  bool is_down(LinkId id) const { return !link_down.empty() && link_down[id]; }

  /// Sizes the storage: exactly `vertex_count` vertices and at most `link_count` links.
  void reserve(std::size_t vertex_count, std::size_t link_count) {
    g = Graph(vertex_count);
    is_gpu.reserve(vertex_count);
    vertex_by_name.reserve(vertex_count);
    links.reserve(link_count);
  }

  /// Adds the next vertex; throws on a duplicate name or beyond reserve()'s count.
  int add_vertex(std::string name, VertexKind kind);
  /// Brings link_by_name up to date with `links`. Amortised O(1) per link.
  void index_links() const;
  /// The vertex named `name`; throws std::invalid_argument quoting `where` otherwise.
  int vertex(std::string_view name, std::string_view where) const;
  /// Adds the directed link from→to (explicit graphs: a parallel link gets "#k").
  LinkId add_link(int from, int to, LinkKind kind, double bw_Bps, sim::Time latency);
  /// Returns the ids of a→b and b→a.
  std::pair<LinkId, LinkId> add_duplex(int a, int b, LinkKind kind, double bw_Bps, sim::Time lat_ab,
                                       sim::Time lat_ba) {
    const LinkId ab = add_link(a, b, kind, bw_Bps, lat_ab);
    return {ab, add_link(b, a, kind, bw_Bps, lat_ba)};
  }

  void generate(const ClusterSpec& spec);
  /// generate()'s phases (fabric.cpp): each node's GPUs and switch; the NICs and leaves
  /// (each leaf's vertex and count of NICs below it); the spines.
  void add_nodes(const ClusterSpec& spec, const FabricShape& shape);
  void add_nics_and_leaves(const ClusterSpec& spec, const FabricShape& shape, std::vector<int>& leaf_vertex,
                           std::vector<int>& leaf_nics);
  void add_spines(const ClusterSpec& spec, const FabricShape& shape, const std::vector<int>& leaf_vertex,
                  const std::vector<int>& leaf_nics);
  void load_graph(const ExplicitGraphSpec& graph);
  void build_routing_view();
  /// Forward reachability search (relay mode) from each GPU in `sources`, backward
  /// from each GPU in `sinks`; throws std::invalid_argument on the first GPU pair that
  /// is not connected. O((|sources| + |sinks|)·(V + E)).
  void check_reachability(const std::vector<int>& sources, const std::vector<int>& sinks) const;
  /// Resolves ClusterSpec::down_links into link_down / down_ids.
  void resolve_down_links(const std::vector<std::string>& names);
  /// Up to `n` link names closest to `want` (longest shared prefix + suffix).
  std::string nearest_link_names(std::string_view want, std::size_t n) const;
  std::string down_list() const;
  /// Generated topology with down links: the flags above and the GPUs whose
  /// structural routes may touch a down link, as sources / as destinations.
  void mark_down_leaves();
  bool source_touched(std::size_t s) const;
  bool sink_touched(std::size_t d) const;
  /// Generated topology: true when some structural equal-cost path of (s, d) uses a
  /// down link, so the pair must be searched. O(1). s != d.
  bool affected(int src_gpu, int dst_gpu) const;
  /// The pair is routed by the graph search (explicit graph, or affected by a down link).
  bool searched(int src_gpu, int dst_gpu) const {
    return !layout.on || (!down_ids.empty() && src_gpu != dst_gpu && affected(src_gpu, dst_gpu));
  }

  /// Pruned Dijkstra from src to dst on the routing view; fills dist/seen_epoch.
  /// `relay`: also enter the fallback vertices (PXN relays), without last-hop pruning.
  void search(RVertex src, RVertex dst, bool relay);
  bool settled(RVertex v) const { return seen_epoch[v] == epoch; }
  const PairRoutes& pair_routes(int src_gpu, int dst_gpu);
  /// Generated topologies: the number of equal-cost paths between two GPUs and, when
  /// `out` is given, path number `index % count` of them, in the order the graph
  /// search would sort them. O(1), no allocation. src != dst.
  std::size_t structural_path(int src_gpu, int dst_gpu, std::uint64_t index, StructPath* out) const;
  std::span<const LinkId> route(int src_gpu, int dst_gpu, std::uint64_t flow_hash);

  void check_gpu(int gpu) const {
    if (gpu < 0 || gpu >= static_cast<int>(gpu_vertex.size()))
      throw std::out_of_range(fmt::format("cluster: GPU index {} out of range [0, {})", gpu, gpu_vertex.size()));
  }
};

}  // namespace ls::topo

// topology/cluster.cpp — graph construction (generators, explicit graph) and routing.
//
// The graph is a Boost.Graph adjacency_list with bundled vertex/edge properties.
// Link attributes live in a plain vector indexed by LinkId; the edge bundle only
// carries the id and the routing weight.
//
// Two ways of routing:
//  * Generated topologies (the generator keys) are routed structurally: the
//    generator records, per GPU, NIC, leaf and spine, the ids of the links it adds
//    (Impl::Layout), and a route is read off those arrays in O(1) (see "Structural
//    routes" below). The graph search below, on a 16384-GPU rail-optimized cluster
//    (~1000 leaves × 16 spines), took 21.8 s for the 63k ring-neighbour and pipeline
//    pairs of a t8·p16·d128 layout; the structural routes take 0.05 s. The graph
//    then keeps only the vertices (no edges, no routing view: nothing walks them).
//  * Explicit graphs (cluster.graph) are searched, as follows.
//
// Routing runs on a second adjacency_list, the *routing view*, equal to the graph
// except that every NIC is split in two: an "up" half entered from the host side
// (GPU, NVSwitch, PCIe switch) that leaves only to the network, and a "down" half
// entered from the network that leaves only to the host side. A NIC thus never
// turns traffic around (GPU→NIC→GPU would otherwise beat NVLink whenever two GPUs
// share a NIC, and leaf→NIC→leaf would make NICs into switches). The view is
// bidirectional so that equal-cost paths can be enumerated backwards from dst.
//
// Search: one Dijkstra per (src, dst) pair, pruned and stopped early, because a
// per-source full Dijkstra (what we measured first) made planning a 4096-GPU cluster
// take 16 s: (1) GPUs other than src are never expanded and only dst is entered;
// (2) a "last-hop" vertex (all its out-edges lead to GPUs: a NIC's down half, a
// node's NVSwitch) is entered only if it has an edge to dst; (3) the search stops
// once the heap's minimum exceeds dist(dst). What is left is src's first hops, the
// switch core (leaves, spines) and dst's last hop, whatever the number of GPUs.
//
// Down links and PXN relay (see cluster.hpp, "Down links"). Down links are simply
// left out of the routing view. The view also holds *fallback* vertices that only a
// second, relay-mode search enters, run when the first finds no path: per GPU that
// touches a NIC an "up relay" (entered from the host side, leaves only to a NIC) and a
// "down relay" (entered from a NIC, leaves only to the host side), and per NVSwitch /
// PCIe switch a "host copy" reached only from down relays, that leaves only towards
// GPUs and other host copies. The layering is what keeps relays PXN-like without a
// per-path state: after a down relay a path can only end at a GPU of that host side,
// so network→node→network never appears. Relay mode prunes with `descending` instead
// of `last_hop` (see RouteVertex): a vertex from which every path only goes down to
// GPUs is entered only if dst is among them.
#include "topology/cluster.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <queue>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <boost/graph/adjacency_list.hpp>
#include <fmt/format.h>

namespace ls::topo {
namespace {

struct VertexProps {
  std::string name;
  std::string kind;
};

struct EdgeProps {
  LinkId id = 0;
  // Lexicographic (latency, hops) folded into one integer so that Boost's Dijkstra
  // minimises latency first and hop count second: weight = latency_ps·kHopScale + 1.
  // kHopScale exceeds any path's hop count; 1 s of latency · 4096 ≈ 4e15 < 2^63.
  std::int64_t weight = 1;
};

constexpr std::int64_t kHopScale = 4096;

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

bool host_side(const std::string& kind) { return kind == "gpu" || kind == "nvswitch" || kind == "pcie-switch"; }

const char* const kVertexKinds[] = {"gpu", "nvswitch", "pcie-switch", "nic", "switch"};
const char* const kLinkKinds[] = {"nvlink", "nvswitch", "pcie", "infiniband", "ethernet"};

template <std::size_t N>
bool one_of(std::string_view s, const char* const (&set)[N]) {
  return std::any_of(std::begin(set), std::end(set), [&](const char* k) { return s == k; });
}

/// Parses "node<N>.gpu<G>" (decimal, no sign, no leading junk). False otherwise.
bool parse_gpu_name(std::string_view name, int& node, int& gpu) {
  auto number = [](std::string_view& s, int& out) {
    std::size_t i = 0;
    long v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v < 100'000'000) v = v * 10 + (s[i++] - '0');
    if (i == 0 || v >= 100'000'000) return false;
    out = static_cast<int>(v);
    s.remove_prefix(i);
    return true;
  };
  if (!name.starts_with("node")) return false;
  name.remove_prefix(4);
  if (!number(name, node) || !name.starts_with(".gpu")) return false;
  name.remove_prefix(4);
  return number(name, gpu) && name.empty();
}

}  // namespace

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
  std::unordered_map<std::string_view, int> gpu_by_name;  // views into g[v].name
  int nodes = 0;

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
  } layout;

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

  int add_vertex(std::string name, std::string kind) {
    if (static_cast<std::size_t>(vertices_added) >= boost::num_vertices(g))
      throw std::logic_error("cluster: more vertices than reserved");  // would break the name views
    const int v = vertices_added++;
    auto& props = g[static_cast<Vertex>(v)];
    props = VertexProps{std::move(name), std::move(kind)};
    if (!vertex_by_name.emplace(props.name, v).second)
      throw std::invalid_argument(fmt::format("cluster: duplicate vertex name '{}'", props.name));
    is_gpu.push_back(props.kind == "gpu");
    return v;
  }

  /// Brings link_by_name up to date with `links`. Amortised O(1) per link.
  void index_links() const {
    if (links_indexed == links.size()) return;
    link_by_name.reserve(links.size());
    for (; links_indexed < links.size(); ++links_indexed)
      link_by_name.emplace(links[links_indexed].name, static_cast<LinkId>(links_indexed));
  }

  int vertex(std::string_view name, std::string_view where) const {
    auto it = vertex_by_name.find(name);
    if (it == vertex_by_name.end()) throw std::invalid_argument(fmt::format("{}: unknown vertex '{}'", where, name));
    return it->second;
  }

  LinkId add_link(int from, int to, const std::string& kind, double bw_Bps, sim::Time latency) {
    std::string name = fmt::format("{}->{}", g[from].name, g[to].name);
    if (!layout.on && link_by_name.count(name)) {  // parallel link: "a->b#1", "a->b#2", ...
      int k = 1;
      while (link_by_name.count(fmt::format("{}#{}", name, k))) ++k;
      name = fmt::format("{}#{}", name, k);
    }
    if (!(bw_Bps > 0) || !std::isfinite(bw_Bps))
      throw std::invalid_argument(fmt::format("cluster: link {} ({}) has non-positive bandwidth {} B/s", name, kind, bw_Bps));
    if (latency < sim::Time::zero() || latency.ps() >= std::int64_t{1'000'000'000'000})
      throw std::invalid_argument(fmt::format("cluster: link {} ({}) latency {} is negative or above 1 s", name, kind, latency));
    if (links.size() == links.capacity()) throw std::logic_error("cluster: more links than reserved");
    const auto id = static_cast<LinkId>(links.size());
    links.push_back(LinkInfo{std::move(name), kind, bw_Bps, latency, from, to});
    if (layout.on && !keep_edges) return id;  // generated: routes are structural, g keeps the vertices only
    index_links();
    boost::add_edge(static_cast<Vertex>(from), static_cast<Vertex>(to), EdgeProps{id, latency.ps() * kHopScale + 1}, g);
    return id;
  }

  /// Returns the ids of a→b and b→a.
  std::pair<LinkId, LinkId> add_duplex(int a, int b, const std::string& kind, double bw_Bps, sim::Time lat_ab,
                                       sim::Time lat_ba) {
    const LinkId ab = add_link(a, b, kind, bw_Bps, lat_ab);
    return {ab, add_link(b, a, kind, bw_Bps, lat_ba)};
  }

  void generate(const ClusterSpec& spec);
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

// ---------------------------------------------------------------------------------
// Generators

void Cluster::Impl::generate(const ClusterSpec& spec) {
  const int N = spec.nodes;
  const int G = spec.gpus_per_node;
  if (N < 1) throw std::invalid_argument(fmt::format("cluster.nodes must be >= 1 (got {})", N));
  if (G < 1) throw std::invalid_argument(fmt::format("cluster.gpus_per_node must be >= 1 (got {})", G));

  // Intra-node: one switch per node, a duplex link per GPU.
  std::string sw_suffix, sw_kind, intra_link_kind;
  if (spec.intra.kind == "nvswitch" || spec.intra.kind == "nvlink") {
    sw_suffix = "nvswitch", sw_kind = "nvswitch", intra_link_kind = "nvlink";
  } else if (spec.intra.kind == "pcie") {
    sw_suffix = "pcie", sw_kind = "pcie-switch", intra_link_kind = "pcie";
  } else {
    throw std::invalid_argument(
        fmt::format("cluster.intra_node.kind: unknown kind '{}' (expected nvswitch | nvlink | pcie)", spec.intra.kind));
  }
  if (!(spec.intra.bandwidth_Bps > 0))
    throw std::invalid_argument(fmt::format("cluster.intra_node.bandwidth must be > 0 (got {} B/s)", spec.intra.bandwidth_Bps));
  if (spec.intra.latency < sim::Time::zero())
    throw std::invalid_argument("cluster.intra_node.latency must be >= 0");

  // Inter-node fabric keys, checked (and the shape derived) before anything is built
  // so that the storage can be sized exactly (see reserve()).
  const InterNodeSpec& in = spec.inter;
  const bool rail = in.fabric == "rail-optimized";
  int nics = 0, npl = 1, groups = 1, leaf_count = 0, spines = 0;
  if (N > 1) {
    if (in.kind != "infiniband" && in.kind != "ethernet")
      throw std::invalid_argument(
          fmt::format("cluster.inter_node.kind: unknown kind '{}' (expected infiniband | ethernet)", in.kind));
    if (!rail && in.fabric != "fat-tree")
      throw std::invalid_argument(
          fmt::format("cluster.inter_node.fabric: unknown fabric '{}' (expected rail-optimized | fat-tree)", in.fabric));
    if (!(in.bandwidth_Bps > 0))
      throw std::invalid_argument(fmt::format("cluster.inter_node.bandwidth must be > 0 (got {} B/s)", in.bandwidth_Bps));
    if (!(in.pcie_bandwidth_Bps > 0))
      throw std::invalid_argument(
          fmt::format("cluster.inter_node.pcie_bandwidth must be > 0 (got {} B/s)", in.pcie_bandwidth_Bps));
    if (!(in.oversubscription > 0) || !std::isfinite(in.oversubscription))
      throw std::invalid_argument(
          fmt::format("cluster.inter_node.oversubscription must be > 0 (got {})", in.oversubscription));
    if (in.nodes_per_leaf < 1)
      throw std::invalid_argument(
          fmt::format("cluster.inter_node.nodes_per_leaf must be >= 1 (got {})", in.nodes_per_leaf));
    if (in.nics_per_node < 0 || in.spines < 0)
      throw std::invalid_argument("cluster.inter_node.nics_per_node and spines must be >= 0");
    if (in.latency < sim::Time::zero()) throw std::invalid_argument("cluster.inter_node.latency must be >= 0");
    nics = in.nics_per_node > 0 ? in.nics_per_node : G;
    npl = in.nodes_per_leaf;
    groups = (N + npl - 1) / npl;
    leaf_count = rail ? groups * nics : groups;
    if (leaf_count > 1) {
      // Spines. A leaf with d NICs below it has downlink capacity d·B and uplink
      // capacity d·B/oversubscription, split evenly over its links to the spines (one
      // link per spine, so that ECMP has `spines` equal-cost choices). When `spines`
      // is 0 we derive the number of uplink ports a full leaf needs at NIC speed,
      // max(1, round(d_max/oversubscription)), capped at 64 (a typical spine-facing
      // radix). The fullest leaf is one of the first group: min(npl, N) nodes, one
      // NIC each under a rail leaf, all their NICs under a fat-tree leaf.
      const int d_max = std::min(npl, N) * (rail ? 1 : nics);
      spines = in.spines > 0 ? in.spines
                             : std::clamp(static_cast<int>(std::lround(d_max / in.oversubscription)), 1, 64);
    }
  }
  {
    const auto n = static_cast<std::size_t>(N), gpn = static_cast<std::size_t>(G), r = static_cast<std::size_t>(nics);
    const auto leaves = static_cast<std::size_t>(leaf_count), sp = static_cast<std::size_t>(spines);
    reserve(n * (1 + gpn + r) + leaves + sp,                      // switches, GPUs, NICs, leaves, spines
            2 * (n * gpn + n * r + (r ? n * gpn : 0) + leaves * sp));  // duplex: intra, nic-leaf, gpu-nic, leaf-spine
  }

  // gpu→switch gets the odd picosecond so that the two hops sum to intra.latency exactly.
  const sim::Time intra_down = sim::ps(spec.intra.latency.ps() / 2);
  const sim::Time intra_up = spec.intra.latency - intra_down;

  nodes = N;
  layout.on = true;
  const auto gpus = static_cast<std::size_t>(N) * static_cast<std::size_t>(G);
  layout.gpu_to_switch.reserve(gpus);
  layout.switch_to_gpu.reserve(gpus);
  gpu_vertex.reserve(gpus);
  gpu_node.reserve(gpus);
  gpu_by_name.reserve(gpus);
  std::vector<int> node_switch(static_cast<std::size_t>(N));
  for (int n = 0; n < N; ++n) {
    node_switch[n] = add_vertex(fmt::format("node{}.{}", n, sw_suffix), sw_kind);
    for (int gi = 0; gi < G; ++gi) {
      const int v = add_vertex(fmt::format("node{}.gpu{}", n, gi), "gpu");
      gpu_by_name.emplace(g[v].name, static_cast<int>(gpu_vertex.size()));
      gpu_vertex.push_back(v);
      gpu_node.push_back(n);
      const auto [up, down] = add_duplex(v, node_switch[n], intra_link_kind, spec.intra.bandwidth_Bps, intra_up, intra_down);
      layout.gpu_to_switch.push_back(up);
      layout.switch_to_gpu.push_back(down);
    }
  }
  if (N == 1) return;

  // Latency budget. inter.latency is what a GPU→GPU message across nodes costs when
  // it stays under one leaf. The GPU↔NIC PCIe hop and each leaf↔spine hop get a
  // short fixed latency, min(100 ns, L/10) — a PCIe switch or an IB/Ethernet switch
  // traversal is of the order of 100 ns (e.g. NVIDIA Quantum-2 port-to-port ~130 ns);
  // the two NIC↔leaf hops share the rest, so gpu→nic→leaf→nic→gpu = L exactly and a
  // path through a spine costs L + 2·min(100 ns, L/10).
  const sim::Time L = in.latency;
  const sim::Time short_hop = std::min(sim::ns(100), sim::ps(L.ps() / 10));
  const sim::Time nic_leaf_total = L - short_hop * 2;
  const sim::Time leaf_to_nic = sim::ps(nic_leaf_total.ps() / 2);
  const sim::Time nic_to_leaf = nic_leaf_total - leaf_to_nic;

  std::vector<int> leaf_vertex(static_cast<std::size_t>(leaf_count));
  std::vector<int> leaf_down(static_cast<std::size_t>(leaf_count), 0);  // NICs per leaf
  for (int i = 0; i < leaf_count; ++i) leaf_vertex[i] = add_vertex(fmt::format("leaf{}", i), "switch");

  layout.nics = nics;
  const auto nic_total = static_cast<std::size_t>(N) * static_cast<std::size_t>(nics);
  layout.nic_to_leaf.reserve(nic_total);
  layout.leaf_to_nic.reserve(nic_total);
  layout.leaf_of_nic.reserve(nic_total);
  layout.gpu_to_nic.reserve(gpus);
  layout.nic_to_gpu.reserve(gpus);
  std::vector<int> node_nics(static_cast<std::size_t>(nics));
  for (int n = 0; n < N; ++n) {
    const int group = n / npl;
    for (int r = 0; r < nics; ++r) {
      const int nic = add_vertex(fmt::format("node{}.nic{}", n, r), "nic");
      node_nics[r] = nic;
      const int leaf = rail ? group * nics + r : group;
      ++leaf_down[leaf];
      const auto [up, down] = add_duplex(nic, leaf_vertex[leaf], in.kind, in.bandwidth_Bps, nic_to_leaf, leaf_to_nic);
      layout.nic_to_leaf.push_back(up);
      layout.leaf_to_nic.push_back(down);
      layout.leaf_of_nic.push_back(leaf);
    }
    for (int gi = 0; gi < G; ++gi) {
      const int gpu = gpu_vertex[static_cast<std::size_t>(n) * G + gi];
      const auto [up, down] = add_duplex(gpu, node_nics[gi % nics], "pcie", in.pcie_bandwidth_Bps, short_hop, short_hop);
      layout.gpu_to_nic.push_back(up);
      layout.nic_to_gpu.push_back(down);
    }
  }
  if (leaf_count == 1) return;  // one leaf reaches every NIC: no spine needed

  std::vector<int> spine_vertex(static_cast<std::size_t>(spines));
  for (int j = 0; j < spines; ++j) spine_vertex[j] = add_vertex(fmt::format("spine{}", j), "switch");
  layout.spines = spines;
  layout.leaf_to_spine.reserve(static_cast<std::size_t>(leaf_count) * spines);
  layout.spine_to_leaf.reserve(static_cast<std::size_t>(leaf_count) * spines);
  for (int i = 0; i < leaf_count; ++i) {
    const double uplink_Bps = leaf_down[i] * in.bandwidth_Bps / in.oversubscription / spines;
    for (int j = 0; j < spines; ++j) {
      const auto [up, down] = add_duplex(leaf_vertex[i], spine_vertex[j], in.kind, uplink_Bps, short_hop, short_hop);
      layout.leaf_to_spine.push_back(up);
      layout.spine_to_leaf.push_back(down);
    }
  }
}

void Cluster::Impl::load_graph(const ExplicitGraphSpec& graph) {
  struct GpuEntry { int node, local, vertex; };
  std::vector<GpuEntry> gpus;
  std::size_t directed_links = 0;
  for (const auto& ls : graph.links) directed_links += ls.duplex ? 2 : 1;
  reserve(graph.vertices.size(), directed_links);
  for (std::size_t i = 0; i < graph.vertices.size(); ++i) {
    const auto& vs = graph.vertices[i];
    if (!one_of(vs.kind, kVertexKinds))
      throw std::invalid_argument(fmt::format(
          "cluster.graph.vertices[{}] '{}': unknown kind '{}' (expected gpu | nvswitch | pcie-switch | nic | switch)", i,
          vs.name, vs.kind));
    if (vs.name.empty()) throw std::invalid_argument(fmt::format("cluster.graph.vertices[{}]: empty name", i));
    int node = 0, local = 0;
    const bool gpu_named = parse_gpu_name(vs.name, node, local);
    if (vs.kind == "gpu" && !gpu_named)
      throw std::invalid_argument(
          fmt::format("cluster.graph.vertices[{}]: bad GPU name '{}' (expected node<N>.gpu<G>)", i, vs.name));
    const int v = add_vertex(vs.name, vs.kind);
    if (vs.kind == "gpu") gpus.push_back({node, local, v});
  }
  if (gpus.empty()) throw std::invalid_argument("cluster.graph: no vertex of kind gpu");
  std::sort(gpus.begin(), gpus.end(),
            [](const GpuEntry& a, const GpuEntry& b) { return std::pair(a.node, a.local) < std::pair(b.node, b.local); });
  for (const auto& e : gpus) {
    gpu_by_name.emplace(g[e.vertex].name, static_cast<int>(gpu_vertex.size()));
    gpu_vertex.push_back(e.vertex);
    gpu_node.push_back(e.node);
    nodes = std::max(nodes, e.node + 1);
  }
  for (std::size_t i = 0; i < graph.links.size(); ++i) {
    const auto& ls = graph.links[i];
    const std::string where = fmt::format("cluster.graph.links[{}] ({} -> {})", i, ls.from, ls.to);
    const int a = vertex(ls.from, where);
    const int b = vertex(ls.to, where);
    if (!one_of(ls.kind, kLinkKinds))
      throw std::invalid_argument(fmt::format(
          "{}: unknown link kind '{}' (expected nvlink | nvswitch | pcie | infiniband | ethernet)", where, ls.kind));
    if (!(ls.bandwidth_Bps > 0))
      throw std::invalid_argument(fmt::format("{}: non-positive bandwidth {} B/s", where, ls.bandwidth_Bps));
    if (a == b) throw std::invalid_argument(fmt::format("{}: a link must join two different vertices", where));
    add_link(a, b, ls.kind, ls.bandwidth_Bps, ls.latency);
    if (ls.duplex) add_link(b, a, ls.kind, ls.bandwidth_Bps, ls.latency);
  }
}

void Cluster::Impl::build_routing_view() {
  // Vertex v of the graph is vertex v of the view; the down half of each NIC, the
  // relay halves of each GPU that touches a NIC and the host copies of the intra-node
  // switches are appended after them (the latter two only when some GPU touches a NIC).
  const std::size_t V = boost::num_vertices(g);
  std::vector<int> down(V, -1), up_relay(V, -1), down_relay(V, -1), host_copy(V, -1);
  auto is_nic = [&](std::size_t v) { return g[v].kind == "nic"; };
  for (std::size_t v = 0; v < V; ++v)
    boost::add_vertex(RouteVertex{static_cast<int>(v), static_cast<bool>(is_gpu[v]), false, false}, rg);
  for (std::size_t v = 0; v < V; ++v)
    if (is_nic(v)) down[v] = static_cast<int>(boost::add_vertex(RouteVertex{static_cast<int>(v), false, false, false}, rg));
  bool any_relay = false;
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    const std::size_t a = boost::source(*e, g), b = boost::target(*e, g);
    for (auto [gpu, nic] : {std::pair(a, b), std::pair(b, a)}) {
      if (!is_gpu[gpu] || !is_nic(nic) || up_relay[gpu] >= 0) continue;
      up_relay[gpu] = static_cast<int>(boost::add_vertex(RouteVertex{static_cast<int>(gpu), false, false, true}, rg));
      down_relay[gpu] = static_cast<int>(boost::add_vertex(RouteVertex{static_cast<int>(gpu), false, false, true}, rg));
      any_relay = true;
    }
  }
  if (any_relay)
    for (std::size_t v = 0; v < V; ++v)
      if (!is_gpu[v] && host_side(g[v].kind))
        host_copy[v] = static_cast<int>(boost::add_vertex(RouteVertex{static_cast<int>(v), false, false, true}, rg));

  auto edge = [&](int from, int to, const EdgeProps& p) {
    boost::add_edge(static_cast<RVertex>(from), static_cast<RVertex>(to), p, rg);
  };
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    const EdgeProps& p = g[*e];
    if (is_down(p.id)) continue;  // a down link is in no route
    const auto a = static_cast<int>(boost::source(*e, g));
    const auto b = static_cast<int>(boost::target(*e, g));
    const bool a_host = host_side(g[a].kind), b_host = host_side(g[b].kind);
    int from = a, to = b;
    if (down[a] >= 0 && b_host) from = down[a];   // NIC → host leaves from the down half
    if (down[b] >= 0 && !a_host) to = down[b];    // network → NIC enters the down half
    edge(from, to, p);
    // Fallback (relay-mode) edges, see the file comment.
    if (up_relay[b] >= 0 && a_host) edge(a, up_relay[b], p);                 // host side → relay
    if (up_relay[a] >= 0 && down[b] >= 0) edge(up_relay[a], b, p);           // relay → its NIC (up half)
    if (down[a] >= 0 && down_relay[b] >= 0) edge(down[a], down_relay[b], p); // NIC (down half) → relay
    if (down_relay[a] >= 0 && b_host) edge(down_relay[a], is_gpu[b] ? b : host_copy[b], p);  // relay → host side
    if (host_copy[a] >= 0 && b_host) edge(host_copy[a], is_gpu[b] ? b : host_copy[b], p);    // host copy → host side
  }
  for (auto [v, end] = boost::vertices(rg); v != end; ++v) {
    bool onward = false;  // an out-edge to a vertex the plain search may pass through
    for (auto [e, eend] = boost::out_edges(*v, rg); e != eend; ++e) {
      const auto& t = rg[boost::target(*e, rg)];
      onward |= !t.gpu && !t.fallback;
    }
    rg[*v].last_hop = !rg[*v].gpu && !onward;
  }
  // `descending` is the least fixpoint of "non-GPU, every out-neighbour a GPU or
  // descending": iterate until nothing changes (each round is O(E); the chain is at
  // most host copy ← down relay ← NIC down half ← ..., a few rounds).
  for (bool changed = true; changed;) {
    changed = false;
    for (auto [v, end] = boost::vertices(rg); v != end; ++v) {
      if (rg[*v].gpu || rg[*v].descending) continue;
      bool all = true;
      for (auto [e, eend] = boost::out_edges(*v, rg); e != eend && all; ++e) {
        const auto& t = rg[boost::target(*e, rg)];
        all = t.gpu || t.descending;
      }
      if (all) rg[*v].descending = changed = true;
    }
  }
  const std::size_t RV = boost::num_vertices(rg);
  dist.assign(RV, 0);
  seen_epoch.assign(RV, 0);
  target_epoch.assign(RV, 0);
}

std::string Cluster::Impl::down_list() const {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(down_ids.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + links[down_ids[i]].name;
  if (shown < down_ids.size()) out += fmt::format(", ... ({} in all)", down_ids.size());
  return out;
}

// Every GPU must reach every other one without relaying through a third GPU (nor
// turning around in a NIC), except for the PXN-style fallback relays. A search over
// every vertex of the view, fallback ones included, from each given source (forward)
// and to each given sink (backward, on in-edges): GPUs other than the search's own
// end never forward. Done once, at build.
void Cluster::Impl::check_reachability(const std::vector<int>& sources, const std::vector<int>& sinks) const {
  const std::size_t V = boost::num_vertices(rg);
  std::vector<char> seen(V);
  std::vector<RVertex> stack;
  auto fail = [&](int from_gpu, int to_gpu) {
    const std::string& a = g[gpu_vertex[from_gpu]].name;
    const std::string& b = g[gpu_vertex[to_gpu]].name;
    if (down_ids.empty())
      throw std::invalid_argument(fmt::format(
          "cluster.graph: GPU {} cannot reach GPU {} (no path that avoids other GPUs; a peer GPU relays only "
          "PXN-style, between its NVLink/PCIe side and its own NIC)", a, b));
    throw std::invalid_argument(fmt::format(
        "cluster.down_links: {} cannot reach {} with links [{}] down (no path avoids them; other GPUs relay only "
        "PXN-style, from the host side to their own NIC or from their NIC to the host side, and there is no "
        "NVSwitch->NIC link in a generated node)", a, b, down_list()));
  };
  for (int backward = 0; backward < 2; ++backward) {
    for (int gpu : backward ? sinks : sources) {
      std::fill(seen.begin(), seen.end(), 0);
      const auto start = static_cast<RVertex>(gpu_vertex[static_cast<std::size_t>(gpu)]);
      stack.assign(1, start);
      seen[start] = 1;
      while (!stack.empty()) {
        const RVertex u = stack.back();
        stack.pop_back();
        if (u != start && rg[u].gpu) continue;  // GPUs do not forward
        auto visit = [&](RVertex w) {
          if (!seen[w]) seen[w] = 1, stack.push_back(w);
        };
        if (backward) {
          for (auto [e, end] = boost::in_edges(u, rg); e != end; ++e) visit(boost::source(*e, rg));
        } else {
          for (auto [e, end] = boost::out_edges(u, rg); e != end; ++e) visit(boost::target(*e, rg));
        }
      }
      for (std::size_t other = 0; other < gpu_vertex.size(); ++other)
        if (!seen[static_cast<std::size_t>(gpu_vertex[other])])
          backward ? fail(static_cast<int>(other), gpu) : fail(gpu, static_cast<int>(other));
    }
  }
}

void Cluster::Impl::resolve_down_links(const std::vector<std::string>& names) {
  index_links();
  link_down.assign(links.size(), 0);
  auto mark = [&](const std::string& name, const std::string& entry) {
    auto it = link_by_name.find(name);
    if (it == link_by_name.end())
      throw std::invalid_argument(fmt::format(
          "cluster.down_links: no link named '{}'{} (links are directed, '<from>-><to>', and 'a<->b' names both "
          "directions of a cable); nearest names: {}",
          name, name == entry ? "" : fmt::format(" (from '{}')", entry), nearest_link_names(name, 5)));
    link_down[it->second] = 1;
  };
  for (const auto& entry : names) {
    if (const auto pos = entry.find("<->"); pos != std::string::npos) {
      const std::string a = entry.substr(0, pos), b = entry.substr(pos + 3);
      mark(a + "->" + b, entry);
      mark(b + "->" + a, entry);
    } else {
      mark(entry, entry);
    }
  }
  down_ids.clear();
  for (std::size_t id = 0; id < links.size(); ++id)
    if (link_down[id]) down_ids.push_back(static_cast<LinkId>(id));
}

std::string Cluster::Impl::nearest_link_names(std::string_view want, std::size_t n) const {
  // Score = shared prefix + shared suffix (not overlapping): "node3.nic5->leaf4" is
  // closest to "node3.nic5->leaf5", "leaf0->spin1" to "leaf0->spine1". O(E), only
  // on the error path.
  std::vector<std::pair<std::size_t, LinkId>> scored;
  scored.reserve(links.size());
  for (std::size_t id = 0; id < links.size(); ++id) {
    const std::string_view name = links[id].name;
    const std::size_t m = std::min(name.size(), want.size());
    std::size_t pre = 0, suf = 0;
    while (pre < m && name[pre] == want[pre]) ++pre;
    while (suf < m - pre && name[name.size() - 1 - suf] == want[want.size() - 1 - suf]) ++suf;
    scored.emplace_back(pre + suf, static_cast<LinkId>(id));
  }
  n = std::min(n, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(n), scored.end(),
                    [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += fmt::format("{}'{}'", i ? ", " : "", links[scored[i].second].name);
  return out;
}

void Cluster::Impl::mark_down_leaves() {
  const std::size_t V = boost::num_vertices(g);
  uplink_down_at.assign(V, 0);
  downlink_down_at.assign(V, 0);
  for (LinkId id : down_ids) {
    const auto& l = links[id];
    if (g[l.from_vertex].kind != "switch" || g[l.to_vertex].kind != "switch") continue;  // only leaf↔spine
    if (g[l.to_vertex].name.starts_with("spine")) {
      uplink_down_at[l.from_vertex] = 1;
    } else {
      downlink_down_at[l.to_vertex] = 1;
    }
  }
}

// Which GPUs' structural routes can touch a down link, at the source end (its
// NVLink up, its PCIe hop to its NIC, its NIC's uplink, its leaf's spine uplinks)
// and at the destination end (the mirror images). A pair neither of whose ends is
// touched keeps its structural routes, so these are the only searches needed to
// prove every pair still connected.
bool Cluster::Impl::source_touched(std::size_t s) const {
  if (is_down(layout.gpu_to_switch[s])) return true;
  if (layout.nics == 0) return false;
  const std::size_t G = gpu_vertex.size() / static_cast<std::size_t>(nodes);
  const std::size_t nic = static_cast<std::size_t>(gpu_node[s]) * static_cast<std::size_t>(layout.nics) +
                          (s % G) % static_cast<std::size_t>(layout.nics);
  return is_down(layout.gpu_to_nic[s]) || is_down(layout.nic_to_leaf[nic]) ||
         uplink_down_at[links[layout.nic_to_leaf[nic]].to_vertex];
}

bool Cluster::Impl::sink_touched(std::size_t d) const {
  if (is_down(layout.switch_to_gpu[d])) return true;
  if (layout.nics == 0) return false;
  const std::size_t G = gpu_vertex.size() / static_cast<std::size_t>(nodes);
  const std::size_t nic = static_cast<std::size_t>(gpu_node[d]) * static_cast<std::size_t>(layout.nics) +
                          (d % G) % static_cast<std::size_t>(layout.nics);
  return is_down(layout.nic_to_gpu[d]) || is_down(layout.leaf_to_nic[nic]) ||
         downlink_down_at[links[layout.leaf_to_nic[nic]].from_vertex];
}

bool Cluster::Impl::affected(int src_gpu, int dst_gpu) const {
  StructPath p;
  structural_path(src_gpu, dst_gpu, 0, &p);
  for (std::size_t i = 0; i < p.len; ++i)
    if (is_down(p.ids[i])) return true;
  // A spine path: path 0 goes through spine0; the others differ only in the spine,
  // so any down leaf_s→spine or spine→leaf_d link removes one of them.
  return p.len == 6 && (uplink_down_at[links[p.ids[1]].to_vertex] || downlink_down_at[links[p.ids[4]].from_vertex]);
}

// ---------------------------------------------------------------------------------
// Routing

void Cluster::Impl::search(RVertex src, RVertex dst, bool relay) {
  if (++epoch == 0) {  // wrapped: clear the stamps once every 2^32 searches
    std::fill(seen_epoch.begin(), seen_epoch.end(), 0);
    std::fill(target_epoch.begin(), target_epoch.end(), 0);
    epoch = 1;
  }
  // Mark what may precede dst: its in-neighbours and, in relay mode, every descending
  // vertex from which dst can be reached (backwards through descending vertices: the
  // NIC down halves, down relays and host copy of dst's node in a generated cluster).
  below.assign(1, dst);
  while (!below.empty()) {
    const RVertex v = below.back();
    below.pop_back();
    for (auto [e, end] = boost::in_edges(v, rg); e != end; ++e) {
      const RVertex u = boost::source(*e, rg);
      if (target_epoch[u] == epoch) continue;
      target_epoch[u] = epoch;
      if (relay && rg[u].descending) below.push_back(u);
    }
  }
  using Item = std::pair<std::int64_t, RVertex>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
  dist[src] = 0;
  seen_epoch[src] = epoch;
  heap.emplace(0, src);
  while (!heap.empty()) {
    const auto [d, u] = heap.top();
    heap.pop();
    if (d != dist[u]) continue;                            // stale entry
    if (settled(dst) && d > dist[dst]) break;              // everything ≤ dist(dst) is final
    if (u == dst || (u != src && rg[u].gpu)) continue;     // GPUs do not forward
    for (auto [e, end] = boost::out_edges(u, rg); e != end; ++e) {
      const RVertex w = boost::target(*e, rg);
      if (rg[w].fallback && !relay) continue;
      const bool dead_end = relay ? rg[w].descending : rg[w].last_hop;  // only useful next to dst
      if (rg[w].gpu ? w != dst : (dead_end && target_epoch[w] != epoch)) continue;
      const std::int64_t nd = d + rg[*e].weight;
      if (seen_epoch[w] != epoch || nd < dist[w]) {
        seen_epoch[w] = epoch;
        dist[w] = nd;
        heap.emplace(nd, w);
      }
    }
  }
}

const Cluster::Impl::PairRoutes& Cluster::Impl::pair_routes(int src_gpu, int dst_gpu) {
  if (layout.on && down_ids.empty())
    throw std::logic_error("cluster: graph search on a generated topology without down links (no routing view)");
  check_gpu(src_gpu);
  check_gpu(dst_gpu);
  const std::uint64_t key = static_cast<std::uint64_t>(src_gpu) * gpu_vertex.size() + static_cast<std::uint64_t>(dst_gpu);
  if (auto it = routes.find(key); it != routes.end()) return it->second;

  PairRoutes pr;
  if (src_gpu != dst_gpu) {
    const auto src = static_cast<RVertex>(gpu_vertex[src_gpu]);
    const auto dst = static_cast<RVertex>(gpu_vertex[dst_gpu]);
    search(src, dst, false);
    if (!settled(dst)) search(src, dst, true);  // no direct path: let peers relay (PXN)
    if (!settled(dst))
      throw std::runtime_error(fmt::format("cluster: no route from {} to {}", g[src].name, g[dst].name));
    // Enumerate the shortest-path DAG backwards from dst: an in-edge (u, v) lies on a
    // shortest path iff dist[u] + w = dist[v] (and u may forward). Such a u has
    // dist[u] < dist[dst], so the search settled it and its dist is final; every
    // weight is >= 1, so the DAG is acyclic and every backward branch ends at src.
    std::vector<LinkId> suffix;
    auto walk = [&](auto& self, RVertex v) -> void {
      if (v == src) {
        pr.paths.emplace_back(suffix.rbegin(), suffix.rend());
        return;
      }
      for (auto [e, end] = boost::in_edges(v, rg); e != end && pr.paths.size() < kMaxEcmpPaths; ++e) {
        const RVertex u = boost::source(*e, rg);
        if ((u != src && rg[u].gpu) || !settled(u) || dist[u] + rg[*e].weight != dist[v]) continue;
        suffix.push_back(rg[*e].id);
        self(self, u);
        suffix.pop_back();
      }
    };
    walk(walk, dst);
    std::sort(pr.paths.begin(), pr.paths.end());
    for (const auto& p : pr.paths) {
      sim::Time t;
      for (LinkId l : p) t += links[l].latency;
      pr.latency.push_back(t);
    }
  }
  return routes.emplace(key, std::move(pr)).first->second;
}

// Structural routes of a generated topology. The generator's graph has exactly
// three kinds of loop-free GPU→GPU paths that neither relay through a GPU nor turn
// around in a NIC (the switch of a node only touches that node's GPUs; a NIC's
// host side is its GPUs; leaves touch NICs and spines; every leaf touches every
// spine):
//   A  gpu→switch→gpu                                  same node only, 2 hops
//   B  gpu→nic→leaf→nic'→gpu                           NICs under one leaf, 4 hops
//   C  gpu→nic→leaf→spine_k→leaf'→nic'→gpu, k = any    6 hops
// where nic / nic' are the NICs of the two GPUs (g % nics). Any other walk adds
// hops without removing one, so it is never shorter by (latency, hops). We compare
// A with the network path (B or C) by the search's own weight, Σ(latency·kHopScale
// + 1) — they can never tie: their hop counts differ by 2 or 4 and kHopScale does
// not divide that. C's equal-cost paths are the `spines` choices of k (all
// leaf↔spine links have the same latency by construction), and the search sorts
// them by link ids, i.e. by k (leaf→spine_k ids grow with k), so path i is spine
// i. tests/test_cluster.cpp checks all of this against the graph search on the
// same graph, pair by pair.
std::size_t Cluster::Impl::structural_path(int src_gpu, int dst_gpu, std::uint64_t index, StructPath* out) const {
  const Layout& L = layout;
  const auto s = static_cast<std::size_t>(src_gpu), d = static_cast<std::size_t>(dst_gpu);
  auto w = [&](LinkId id) { return links[id].latency.ps() * kHopScale + 1; };
  auto emit = [&](std::initializer_list<LinkId> ids) {
    if (!out) return;
    out->len = static_cast<std::uint8_t>(ids.size());
    std::copy(ids.begin(), ids.end(), out->ids.begin());
  };
  const bool same_node = gpu_node[s] == gpu_node[d];
  const std::int64_t via_switch =
      same_node ? w(L.gpu_to_switch[s]) + w(L.switch_to_gpu[d]) : std::numeric_limits<std::int64_t>::max();
  if (L.nics == 0) {  // one node: the switch is the only way
    emit({L.gpu_to_switch[s], L.switch_to_gpu[d]});
    return 1;
  }
  const std::size_t G = gpu_vertex.size() / static_cast<std::size_t>(nodes);
  const auto nics = static_cast<std::size_t>(L.nics);
  const std::size_t nic_s = static_cast<std::size_t>(gpu_node[s]) * nics + (s % G) % nics;
  const std::size_t nic_d = static_cast<std::size_t>(gpu_node[d]) * nics + (d % G) % nics;
  const auto leaf_s = static_cast<std::size_t>(L.leaf_of_nic[nic_s]);
  const auto leaf_d = static_cast<std::size_t>(L.leaf_of_nic[nic_d]);
  const std::int64_t ends = w(L.gpu_to_nic[s]) + w(L.nic_to_leaf[nic_s]) + w(L.leaf_to_nic[nic_d]) + w(L.nic_to_gpu[d]);
  if (leaf_s == leaf_d) {
    if (via_switch < ends) {
      emit({L.gpu_to_switch[s], L.switch_to_gpu[d]});
    } else {
      emit({L.gpu_to_nic[s], L.nic_to_leaf[nic_s], L.leaf_to_nic[nic_d], L.nic_to_gpu[d]});
    }
    return 1;
  }
  const auto spines = static_cast<std::size_t>(L.spines);
  const std::int64_t via_spine = ends + w(L.leaf_to_spine[leaf_s * spines]) + w(L.spine_to_leaf[leaf_d * spines]);
  if (via_switch < via_spine) {
    emit({L.gpu_to_switch[s], L.switch_to_gpu[d]});
    return 1;
  }
  const std::size_t count = std::min(spines, kMaxEcmpPaths);
  const std::size_t k = static_cast<std::size_t>(index % count);
  emit({L.gpu_to_nic[s], L.nic_to_leaf[nic_s], L.leaf_to_spine[leaf_s * spines + k], L.spine_to_leaf[leaf_d * spines + k],
        L.leaf_to_nic[nic_d], L.nic_to_gpu[d]});
  return count;
}

std::span<const LinkId> Cluster::Impl::route(int src_gpu, int dst_gpu, std::uint64_t flow_hash) {
  check_gpu(src_gpu);
  check_gpu(dst_gpu);
  if (searched(src_gpu, dst_gpu)) {
    const auto& pr = pair_routes(src_gpu, dst_gpu);
    if (pr.paths.empty()) return {};
    return pr.paths[flow_hash % pr.paths.size()];
  }
  if (src_gpu == dst_gpu) return {};
  StructPath p;
  const std::size_t count = structural_path(src_gpu, dst_gpu, flow_hash, &p);
  // Key (src, dst, path index): 8 bits of index suffice (kMaxEcmpPaths = 256), and
  // G²·256 < 2^64 for any G below 2^28.
  static_assert(kMaxEcmpPaths <= 256);
  const std::uint64_t pair = static_cast<std::uint64_t>(src_gpu) * gpu_vertex.size() + static_cast<std::uint64_t>(dst_gpu);
  const auto [it, inserted] = struct_routes.try_emplace(pair << 8 | (flow_hash % count), p);
  return {it->second.ids.data(), it->second.len};
}

// ---------------------------------------------------------------------------------
// Public API

Cluster::Cluster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;
Cluster::~Cluster() = default;

Cluster Cluster::build(const ClusterSpec& spec) {
  auto impl = std::make_unique<Impl>();
  std::vector<int> all;
  if (spec.graph) {
    impl->load_graph(*spec.graph);
    impl->resolve_down_links(spec.down_links);
    impl->build_routing_view();
    for (int gpu = 0; gpu < static_cast<int>(impl->gpu_vertex.size()); ++gpu) all.push_back(gpu);
    impl->check_reachability(all, {});
  } else {
    // Connected by construction; routes are structural, no routing view. With down
    // links, also the edges and the view, for the pairs that must be searched.
    impl->keep_edges = !spec.down_links.empty();
    impl->generate(spec);
    if (impl->keep_edges) {
      impl->resolve_down_links(spec.down_links);
      impl->build_routing_view();
      impl->mark_down_leaves();
      std::vector<int> sources, sinks;
      for (std::size_t gpu = 0; gpu < impl->gpu_vertex.size(); ++gpu) {
        if (impl->source_touched(gpu)) sources.push_back(static_cast<int>(gpu));
        if (impl->sink_touched(gpu)) sinks.push_back(static_cast<int>(gpu));
      }
      impl->check_reachability(sources, sinks);
    }
  }
  return Cluster(std::move(impl));
}

int Cluster::gpu_count() const { return static_cast<int>(impl_->gpu_vertex.size()); }
int Cluster::node_count() const { return impl_->nodes; }
int Cluster::node_of_gpu(int gpu) const {
  impl_->check_gpu(gpu);
  return impl_->gpu_node[gpu];
}
std::string Cluster::gpu_name(int gpu) const {
  impl_->check_gpu(gpu);
  return impl_->g[impl_->gpu_vertex[gpu]].name;
}
int Cluster::gpu_index(std::string_view name) const {
  auto it = impl_->gpu_by_name.find(name);
  return it == impl_->gpu_by_name.end() ? -1 : it->second;
}
bool Cluster::crosses_nodes(std::span<const std::int32_t> gpus) const {
  for (std::int32_t gpu : gpus)
    if (node_of_gpu(gpu) != node_of_gpu(gpus.front())) return true;
  return false;
}

std::size_t Cluster::vertex_count() const { return boost::num_vertices(impl_->g); }
const std::string& Cluster::vertex_name(int vertex) const { return impl_->g[static_cast<Vertex>(vertex)].name; }
const std::string& Cluster::vertex_kind(int vertex) const { return impl_->g[static_cast<Vertex>(vertex)].kind; }
int Cluster::find_vertex(std::string_view name) const {
  auto it = impl_->vertex_by_name.find(name);
  return it == impl_->vertex_by_name.end() ? -1 : it->second;
}

std::size_t Cluster::link_count() const { return impl_->links.size(); }
const LinkInfo& Cluster::link(LinkId id) const { return impl_->links.at(id); }
std::optional<LinkId> Cluster::find_link(std::string_view name) const {
  impl_->index_links();
  auto it = impl_->link_by_name.find(name);
  if (it == impl_->link_by_name.end()) return std::nullopt;
  return it->second;
}
std::vector<LinkId> Cluster::find_links(std::string_view name) const {
  const auto both = name.find("<->");
  if (both == std::string_view::npos) {
    if (auto id = find_link(name)) return {*id};
    return {};
  }
  const std::string a(name.substr(0, both)), b(name.substr(both + 3));
  const auto ab = find_link(a + "->" + b), ba = find_link(b + "->" + a);
  if (!ab || !ba) return {};
  return {*ab, *ba};
}
bool Cluster::link_down(LinkId id) const {
  (void)impl_->links.at(id);  // range check
  return impl_->is_down(id);
}
std::span<const LinkId> Cluster::down_links() const { return impl_->down_ids; }
std::vector<double> Cluster::link_bandwidths() const {
  std::vector<double> bw;
  bw.reserve(impl_->links.size());
  for (const auto& l : impl_->links) bw.push_back(l.bandwidth_Bps);
  return bw;
}

std::span<const LinkId> Cluster::route(int src_gpu, int dst_gpu, std::uint64_t flow_hash) const {
  return impl_->route(src_gpu, dst_gpu, flow_hash);
}
std::size_t Cluster::path_count(int src_gpu, int dst_gpu) const {
  impl_->check_gpu(src_gpu);
  impl_->check_gpu(dst_gpu);
  if (impl_->searched(src_gpu, dst_gpu)) return impl_->pair_routes(src_gpu, dst_gpu).paths.size();
  return src_gpu == dst_gpu ? 0 : impl_->structural_path(src_gpu, dst_gpu, 0, nullptr);
}
sim::Time Cluster::route_latency(int src_gpu, int dst_gpu, std::uint64_t flow_hash) const {
  impl_->check_gpu(src_gpu);
  impl_->check_gpu(dst_gpu);
  if (impl_->searched(src_gpu, dst_gpu)) {
    const auto& pr = impl_->pair_routes(src_gpu, dst_gpu);
    if (pr.paths.empty()) return sim::Time::zero();
    return pr.latency[flow_hash % pr.paths.size()];
  }
  sim::Time t;
  for (LinkId l : route(src_gpu, dst_gpu, flow_hash)) t += impl_->links[l].latency;
  return t;
}
std::vector<std::string> Cluster::link_kinds_on_route(int src_gpu, int dst_gpu, std::uint64_t flow_hash) const {
  std::vector<std::string> kinds;
  for (LinkId l : route(src_gpu, dst_gpu, flow_hash)) kinds.push_back(impl_->links[l].kind);
  return kinds;
}

}  // namespace ls::topo

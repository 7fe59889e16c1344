// topology/cluster.cpp — graph construction (generators, explicit graph) and routing.
//
// The graph is a Boost.Graph adjacency_list with bundled vertex/edge properties.
// Link attributes live in a plain vector indexed by LinkId; the edge bundle only
// carries the id and the routing weight.
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
#include "topology/cluster.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
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
  bool last_hop = false;   // no out-edge to a non-GPU vertex: useful only next to dst
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
  std::map<std::string, LinkId, std::less<>> link_by_name;
  std::map<std::string, int, std::less<>> vertex_by_name;
  std::vector<char> is_gpu;             // per vertex
  std::vector<int> gpu_vertex;          // GPU index -> vertex
  std::vector<int> gpu_node;            // GPU index -> node
  std::map<std::string, int, std::less<>> gpu_by_name;
  int nodes = 0;

  struct PairRoutes {
    std::vector<std::vector<LinkId>> paths;  // equal-cost paths, sorted by link ids
    std::vector<sim::Time> latency;          // per path
  };
  // Node-based map: references to PairRoutes (and spans into their vectors) stay
  // valid across rehashing, which is what route()'s lifetime promise relies on.
  std::unordered_map<std::uint64_t, PairRoutes> routes;

  // Routing view (see the file comment) and the search's scratch arrays, stamped
  // with an epoch so that a search costs what it visits, not O(V).
  RouteGraph rg;
  std::vector<std::int64_t> dist;
  std::vector<std::uint32_t> seen_epoch, target_epoch;
  std::uint32_t epoch = 0;

  int add_vertex(std::string name, std::string kind) {
    if (vertex_by_name.count(name)) throw std::invalid_argument(fmt::format("cluster: duplicate vertex name '{}'", name));
    const auto v = static_cast<int>(boost::add_vertex(VertexProps{name, kind}, g));
    vertex_by_name.emplace(std::move(name), v);
    is_gpu.push_back(kind == "gpu");
    return v;
  }

  int vertex(std::string_view name, std::string_view where) const {
    auto it = vertex_by_name.find(name);
    if (it == vertex_by_name.end()) throw std::invalid_argument(fmt::format("{}: unknown vertex '{}'", where, name));
    return it->second;
  }

  LinkId add_link(int from, int to, const std::string& kind, double bw_Bps, sim::Time latency) {
    std::string name = fmt::format("{}->{}", g[from].name, g[to].name);
    if (link_by_name.count(name)) {  // parallel link: "a->b#1", "a->b#2", ...
      int k = 1;
      while (link_by_name.count(fmt::format("{}#{}", name, k))) ++k;
      name = fmt::format("{}#{}", name, k);
    }
    if (!(bw_Bps > 0) || !std::isfinite(bw_Bps))
      throw std::invalid_argument(fmt::format("cluster: link {} ({}) has non-positive bandwidth {} B/s", name, kind, bw_Bps));
    if (latency < sim::Time::zero() || latency.ps() >= std::int64_t{1'000'000'000'000})
      throw std::invalid_argument(fmt::format("cluster: link {} ({}) latency {} is negative or above 1 s", name, kind, latency));
    const auto id = static_cast<LinkId>(links.size());
    links.push_back(LinkInfo{name, kind, bw_Bps, latency, from, to});
    link_by_name.emplace(std::move(name), id);
    boost::add_edge(static_cast<Vertex>(from), static_cast<Vertex>(to), EdgeProps{id, latency.ps() * kHopScale + 1}, g);
    return id;
  }

  void add_duplex(int a, int b, const std::string& kind, double bw_Bps, sim::Time lat_ab, sim::Time lat_ba) {
    add_link(a, b, kind, bw_Bps, lat_ab);
    add_link(b, a, kind, bw_Bps, lat_ba);
  }

  void generate(const ClusterSpec& spec);
  void load_graph(const ExplicitGraphSpec& graph);
  void build_routing_view();
  void check_reachability() const;

  /// Pruned Dijkstra from src to dst on the routing view; fills dist/seen_epoch.
  void search(RVertex src, RVertex dst);
  bool settled(RVertex v) const { return seen_epoch[v] == epoch; }
  const PairRoutes& pair_routes(int src_gpu, int dst_gpu);

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
  // gpu→switch gets the odd picosecond so that the two hops sum to intra.latency exactly.
  const sim::Time intra_down = sim::ps(spec.intra.latency.ps() / 2);
  const sim::Time intra_up = spec.intra.latency - intra_down;

  nodes = N;
  std::vector<int> node_switch(static_cast<std::size_t>(N));
  for (int n = 0; n < N; ++n) {
    node_switch[n] = add_vertex(fmt::format("node{}.{}", n, sw_suffix), sw_kind);
    for (int gi = 0; gi < G; ++gi) {
      const int v = add_vertex(fmt::format("node{}.gpu{}", n, gi), "gpu");
      gpu_by_name.emplace(g[v].name, static_cast<int>(gpu_vertex.size()));
      gpu_vertex.push_back(v);
      gpu_node.push_back(n);
      add_duplex(v, node_switch[n], intra_link_kind, spec.intra.bandwidth_Bps, intra_up, intra_down);
    }
  }
  if (N == 1) return;

  // Inter-node fabric.
  const InterNodeSpec& in = spec.inter;
  if (in.kind != "infiniband" && in.kind != "ethernet")
    throw std::invalid_argument(fmt::format("cluster.inter_node.kind: unknown kind '{}' (expected infiniband | ethernet)", in.kind));
  const bool rail = in.fabric == "rail-optimized";
  if (!rail && in.fabric != "fat-tree")
    throw std::invalid_argument(
        fmt::format("cluster.inter_node.fabric: unknown fabric '{}' (expected rail-optimized | fat-tree)", in.fabric));
  if (!(in.bandwidth_Bps > 0))
    throw std::invalid_argument(fmt::format("cluster.inter_node.bandwidth must be > 0 (got {} B/s)", in.bandwidth_Bps));
  if (!(in.pcie_bandwidth_Bps > 0))
    throw std::invalid_argument(fmt::format("cluster.inter_node.pcie_bandwidth must be > 0 (got {} B/s)", in.pcie_bandwidth_Bps));
  if (!(in.oversubscription > 0) || !std::isfinite(in.oversubscription))
    throw std::invalid_argument(fmt::format("cluster.inter_node.oversubscription must be > 0 (got {})", in.oversubscription));
  if (in.nodes_per_leaf < 1)
    throw std::invalid_argument(fmt::format("cluster.inter_node.nodes_per_leaf must be >= 1 (got {})", in.nodes_per_leaf));
  if (in.nics_per_node < 0 || in.spines < 0)
    throw std::invalid_argument("cluster.inter_node.nics_per_node and spines must be >= 0");
  if (in.latency < sim::Time::zero()) throw std::invalid_argument("cluster.inter_node.latency must be >= 0");

  const int nics = in.nics_per_node > 0 ? in.nics_per_node : G;
  const int npl = in.nodes_per_leaf;
  const int groups = (N + npl - 1) / npl;

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

  const int leaf_count = rail ? groups * nics : groups;
  std::vector<int> leaf_vertex(static_cast<std::size_t>(leaf_count));
  std::vector<int> leaf_down(static_cast<std::size_t>(leaf_count), 0);  // NICs per leaf
  for (int i = 0; i < leaf_count; ++i) leaf_vertex[i] = add_vertex(fmt::format("leaf{}", i), "switch");

  for (int n = 0; n < N; ++n) {
    const int group = n / npl;
    for (int r = 0; r < nics; ++r) {
      const int nic = add_vertex(fmt::format("node{}.nic{}", n, r), "nic");
      const int leaf = rail ? group * nics + r : group;
      ++leaf_down[leaf];
      add_duplex(nic, leaf_vertex[leaf], in.kind, in.bandwidth_Bps, nic_to_leaf, leaf_to_nic);
    }
    for (int gi = 0; gi < G; ++gi) {
      const int gpu = gpu_vertex[static_cast<std::size_t>(n) * G + gi];
      const int nic = vertex_by_name.at(fmt::format("node{}.nic{}", n, gi % nics));
      add_duplex(gpu, nic, "pcie", in.pcie_bandwidth_Bps, short_hop, short_hop);
    }
  }
  if (leaf_count == 1) return;  // one leaf reaches every NIC: no spine needed

  // Spines. A leaf with d NICs below it has downlink capacity d·B and uplink
  // capacity d·B/oversubscription, split evenly over its links to the spines (one
  // link per spine, so that ECMP has `spines` equal-cost choices). When `spines` is
  // 0 we derive the number of uplink ports a full leaf needs at NIC speed,
  // max(1, round(d_max/oversubscription)), capped at 64 (a typical spine-facing radix).
  const int d_max = *std::max_element(leaf_down.begin(), leaf_down.end());
  const int spines = in.spines > 0
                         ? in.spines
                         : std::clamp(static_cast<int>(std::lround(d_max / in.oversubscription)), 1, 64);
  std::vector<int> spine_vertex(static_cast<std::size_t>(spines));
  for (int j = 0; j < spines; ++j) spine_vertex[j] = add_vertex(fmt::format("spine{}", j), "switch");
  for (int i = 0; i < leaf_count; ++i) {
    const double uplink_Bps = leaf_down[i] * in.bandwidth_Bps / in.oversubscription / spines;
    for (int j = 0; j < spines; ++j) add_duplex(leaf_vertex[i], spine_vertex[j], in.kind, uplink_Bps, short_hop, short_hop);
  }
}

void Cluster::Impl::load_graph(const ExplicitGraphSpec& graph) {
  struct GpuEntry { int node, local, vertex; };
  std::vector<GpuEntry> gpus;
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
  // Vertex v of the graph is vertex v of the view; the down half of each NIC is
  // appended after them.
  const std::size_t V = boost::num_vertices(g);
  std::vector<int> down(V, -1);
  for (std::size_t v = 0; v < V; ++v)
    boost::add_vertex(RouteVertex{static_cast<int>(v), static_cast<bool>(is_gpu[v]), false}, rg);
  for (std::size_t v = 0; v < V; ++v)
    if (g[v].kind == "nic") down[v] = static_cast<int>(boost::add_vertex(RouteVertex{static_cast<int>(v), false, false}, rg));
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    auto from = static_cast<int>(boost::source(*e, g));
    auto to = static_cast<int>(boost::target(*e, g));
    const bool from_host = host_side(g[from].kind), to_host = host_side(g[to].kind);
    if (down[from] >= 0 && to_host) from = down[from];   // NIC → host leaves from the down half
    if (down[to] >= 0 && !from_host) to = down[to];      // network → NIC enters the down half
    boost::add_edge(static_cast<RVertex>(from), static_cast<RVertex>(to), g[*e], rg);
  }
  for (auto [v, end] = boost::vertices(rg); v != end; ++v) {
    bool to_non_gpu = false;
    for (auto [e, eend] = boost::out_edges(*v, rg); e != eend; ++e) to_non_gpu |= !rg[boost::target(*e, rg)].gpu;
    rg[*v].last_hop = !rg[*v].gpu && !to_non_gpu;
  }
  const std::size_t RV = boost::num_vertices(rg);
  dist.assign(RV, 0);
  seen_epoch.assign(RV, 0);
  target_epoch.assign(RV, 0);
}

// Every GPU must reach every other one without relaying through a third GPU (nor
// turning around in a NIC). One breadth-first search per GPU on the routing view:
// O(G·(V + E)), done once, for explicit graphs only.
void Cluster::Impl::check_reachability() const {
  const std::size_t V = boost::num_vertices(rg);
  std::vector<char> seen(V);
  std::vector<RVertex> stack;
  for (std::size_t s = 0; s < gpu_vertex.size(); ++s) {
    std::fill(seen.begin(), seen.end(), 0);
    const auto src = static_cast<RVertex>(gpu_vertex[s]);
    stack.assign(1, src);
    seen[src] = 1;
    while (!stack.empty()) {
      const RVertex u = stack.back();
      stack.pop_back();
      if (u != src && rg[u].gpu) continue;  // GPUs do not forward
      for (auto [e, end] = boost::out_edges(u, rg); e != end; ++e) {
        const RVertex w = boost::target(*e, rg);
        if (!seen[w]) seen[w] = 1, stack.push_back(w);
      }
    }
    for (std::size_t d = 0; d < gpu_vertex.size(); ++d)
      if (!seen[static_cast<std::size_t>(gpu_vertex[d])])
        throw std::invalid_argument(fmt::format("cluster.graph: GPU {} cannot reach GPU {} (no path that avoids other GPUs)",
                                                g[gpu_vertex[s]].name, g[gpu_vertex[d]].name));
  }
}

// ---------------------------------------------------------------------------------
// Routing

void Cluster::Impl::search(RVertex src, RVertex dst) {
  if (++epoch == 0) {  // wrapped: clear the stamps once every 2^32 searches
    std::fill(seen_epoch.begin(), seen_epoch.end(), 0);
    std::fill(target_epoch.begin(), target_epoch.end(), 0);
    epoch = 1;
  }
  for (auto [e, end] = boost::in_edges(dst, rg); e != end; ++e) target_epoch[boost::source(*e, rg)] = epoch;
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
      if (rg[w].gpu ? w != dst : (rg[w].last_hop && target_epoch[w] != epoch)) continue;
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
  check_gpu(src_gpu);
  check_gpu(dst_gpu);
  const std::uint64_t key = static_cast<std::uint64_t>(src_gpu) * gpu_vertex.size() + static_cast<std::uint64_t>(dst_gpu);
  if (auto it = routes.find(key); it != routes.end()) return it->second;

  PairRoutes pr;
  if (src_gpu != dst_gpu) {
    const auto src = static_cast<RVertex>(gpu_vertex[src_gpu]);
    const auto dst = static_cast<RVertex>(gpu_vertex[dst_gpu]);
    search(src, dst);
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

// ---------------------------------------------------------------------------------
// Public API

Cluster::Cluster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;
Cluster::~Cluster() = default;

Cluster Cluster::build(const ClusterSpec& spec) {
  auto impl = std::make_unique<Impl>();
  if (spec.graph) {
    impl->load_graph(*spec.graph);
    impl->build_routing_view();
    impl->check_reachability();
  } else {
    impl->generate(spec);  // connected by construction
    impl->build_routing_view();
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
  auto it = impl_->link_by_name.find(name);
  if (it == impl_->link_by_name.end()) return std::nullopt;
  return it->second;
}
std::vector<double> Cluster::link_bandwidths() const {
  std::vector<double> bw;
  bw.reserve(impl_->links.size());
  for (const auto& l : impl_->links) bw.push_back(l.bandwidth_Bps);
  return bw;
}

std::span<const LinkId> Cluster::route(int src_gpu, int dst_gpu, std::uint64_t flow_hash) const {
  const auto& pr = impl_->pair_routes(src_gpu, dst_gpu);
  if (pr.paths.empty()) return {};
  return pr.paths[flow_hash % pr.paths.size()];
}
std::size_t Cluster::path_count(int src_gpu, int dst_gpu) const {
  return impl_->pair_routes(src_gpu, dst_gpu).paths.size();
}
sim::Time Cluster::route_latency(int src_gpu, int dst_gpu, std::uint64_t flow_hash) const {
  const auto& pr = impl_->pair_routes(src_gpu, dst_gpu);
  if (pr.paths.empty()) return sim::Time::zero();
  return pr.latency[flow_hash % pr.paths.size()];
}
std::vector<std::string> Cluster::link_kinds_on_route(int src_gpu, int dst_gpu, std::uint64_t flow_hash) const {
  std::vector<std::string> kinds;
  for (LinkId l : route(src_gpu, dst_gpu, flow_hash)) kinds.push_back(impl_->links[l].kind);
  return kinds;
}

}  // namespace ls::topo

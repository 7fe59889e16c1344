// topology/fabric.cpp — the generated topology (generator keys) and its structural
// routes: the intra-node switch, the NICs, the rail-optimized or fat-tree leaves and
// the spines, each link's capacity and latency, and the O(1) routes read off the
// generator's layout (Impl::Layout).
#include "topology/cluster_impl.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>

namespace ls::topo {

/// What the generator keys make: checked and derived before anything is built, so
/// that the storage can be sized exactly (Cluster::Impl::reserve).
struct FabricShape {
  int nodes = 0, gpus_per_node = 0;
  // NVLink domains (ClusterSpec::nvlink_domain): `per_domain` consecutive nodes share one
  // switch fabric. One node per domain is the classic intra-node switch.
  int per_domain = 1, domains = 0;
  std::string_view switch_suffix;
  VertexKind switch_kind{};
  LinkKind intra_link_kind{};
  // The inter-node fabric (nodes > 1): NICs per node, nodes per leaf, leaf groups.
  bool rail = false;
  int nics = 0, nodes_per_leaf = 1, groups = 1, leaf_count = 0, spines = 0;
  std::optional<LinkKind> inter_kind;
  bool by_destination = false, pxn = false;
};

namespace {

/// Intra-node: one switch per node (per NVLink domain), a duplex link per GPU.
void intra_shape(const ClusterSpec& spec, FabricShape& shape) {
  const int N = spec.nodes;
  const int G = spec.gpus_per_node;
  if (N < 1) throw std::invalid_argument(fmt::format("cluster.nodes must be >= 1 (got {})", N));
  if (G < 1) throw std::invalid_argument(fmt::format("cluster.gpus_per_node must be >= 1 (got {})", G));
  shape.nodes = N;
  shape.gpus_per_node = G;

  const int domain_gpus = spec.nvlink_domain > 0 ? spec.nvlink_domain : G;
  if (domain_gpus < G || domain_gpus % G != 0)
    throw std::invalid_argument(fmt::format(
        "cluster.nvlink_domain: {} GPUs is not a multiple of gpus_per_node ({}); an NVLink domain is whole nodes",
        domain_gpus, G));
  shape.per_domain = domain_gpus / G;
  shape.domains = (N + shape.per_domain - 1) / shape.per_domain;

  const std::optional<LinkKind> intra_kind = parse_link_kind(spec.intra.kind);
  if (intra_kind == LinkKind::nvswitch || intra_kind == LinkKind::nvlink) {
    shape.switch_suffix = "nvswitch", shape.switch_kind = VertexKind::nvswitch, shape.intra_link_kind = LinkKind::nvlink;
  } else if (intra_kind == LinkKind::pcie) {
    if (shape.per_domain > 1)
      throw std::invalid_argument(fmt::format(
          "cluster.nvlink_domain: {} GPUs spans {} nodes, but intra_node.kind is pcie (an NVLink domain needs nvswitch)",
          domain_gpus, shape.per_domain));
    shape.switch_suffix = "pcie", shape.switch_kind = VertexKind::pcie_switch, shape.intra_link_kind = LinkKind::pcie;
  } else {
    throw std::invalid_argument(
        fmt::format("cluster.intra_node.kind: unknown kind '{}' (expected nvswitch | nvlink | pcie)", spec.intra.kind));
  }
  if (!(spec.intra.bandwidth_Bps > 0))
    throw std::invalid_argument(fmt::format("cluster.intra_node.bandwidth must be > 0 (got {} B/s)", spec.intra.bandwidth_Bps));
  if (spec.intra.latency < sim::Time::zero())
    throw std::invalid_argument("cluster.intra_node.latency must be >= 0");
  // Checked here, as given: the links below each get a part of it, and the per-link
  // check would state that part, not the value in the scenario.
  for (const auto& [key, lat] : {std::pair{"cluster.intra_node.latency", spec.intra.latency},
                                 std::pair{"cluster.inter_node.latency", spec.inter.latency}})
    if (lat.ps() >= std::int64_t{1'000'000'000'000})
      throw std::invalid_argument(fmt::format("{}: {} is above 1 s", key, lat));
}

/// Inter-node fabric keys (checked only when there is more than one node).
void inter_shape(const ClusterSpec& spec, FabricShape& shape) {
  const int N = shape.nodes;
  const int G = shape.gpus_per_node;
  const InterNodeSpec& in = spec.inter;
  const bool rail = in.fabric == "rail-optimized";
  shape.rail = rail;
  shape.inter_kind = parse_link_kind(in.kind);
  if (N <= 1) return;
  if (shape.inter_kind != LinkKind::infiniband && shape.inter_kind != LinkKind::ethernet)
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
  // Routes spread over at most kMaxEcmpPaths spines: the uplink capacity of any
  // spine beyond would be built (and counted in the leaf's capacity) but never used.
  if (static_cast<std::size_t>(in.spines) > Cluster::kMaxEcmpPaths)
    throw std::invalid_argument(fmt::format(
        "cluster.inter_node.spines: {} spines is more than {}, the most equal-cost paths a GPU pair is routed over "
        "(the uplinks to the others would carry nothing)",
        in.spines, Cluster::kMaxEcmpPaths));
  if (in.latency < sim::Time::zero()) throw std::invalid_argument("cluster.inter_node.latency must be >= 0");
  // More NICs than GPUs would leave NICs with no GPU behind them (and once built
  // 32,768 InfiniBand links for nics_per_node: 1024 on 8-GPU nodes): an error.
  if (in.nics_per_node > G)
    throw std::invalid_argument(fmt::format(
        "cluster.inter_node.nics_per_node: {} NICs per node is more than the {} GPUs per node (each NIC serves GPUs g with g % nics = its index)",
        in.nics_per_node, G));
  if (!in.routing.empty() && in.routing != "ecmp" && in.routing != "dmodk")
    throw std::invalid_argument(
        fmt::format("cluster.inter_node.routing: unknown routing '{}' (expected ecmp | dmodk)", in.routing));
  shape.by_destination = in.routes_by_destination();
  shape.nics = in.nics_per_node > 0 ? in.nics_per_node : G;
  shape.pxn = rail && in.pxn;
  const int npl = in.nodes_per_leaf;
  shape.nodes_per_leaf = npl;
  shape.groups = (N + npl - 1) / npl;
  shape.leaf_count = rail ? shape.groups * shape.nics : shape.groups;
  if (shape.leaf_count > 1) {
    // Spines. A full leaf with d NICs below it has downlink capacity d·B and uplink
    // capacity d·B/oversubscription, split evenly over its links to the spines (one
    // link per spine, so that ECMP has `spines` equal-cost choices; a partly filled
    // leaf has the same ports, see add_spines). When `spines`
    // is 0 we derive the number of uplink ports a full leaf needs at NIC speed,
    // max(1, round(d_max/oversubscription)), capped at 64 (a typical spine-facing
    // radix). The fullest leaf is one of the first group: min(npl, N) nodes, one
    // NIC each under a rail leaf, all their NICs under a fat-tree leaf.
    const int d_max = std::min(npl, N) * (rail ? 1 : shape.nics);
    shape.spines = in.spines > 0 ? in.spines
                                 : std::clamp(static_cast<int>(std::lround(d_max / in.oversubscription)), 1, 64);
  }
}

/// Vertex and link counts of the fabric, for reserve(). Bounded work: the link count
/// is known before anything is allocated (leaves × spines is what explodes:
/// nodes_per_leaf: 1 with spines: 131072).
std::pair<std::size_t, std::size_t> fabric_size(const FabricShape& shape) {
  const auto n = static_cast<std::size_t>(shape.nodes), gpn = static_cast<std::size_t>(shape.gpus_per_node),
             r = static_cast<std::size_t>(shape.nics);
  const auto leaves = static_cast<std::size_t>(shape.leaf_count), sp = static_cast<std::size_t>(shape.spines);
  const double link_total = 2.0 * (static_cast<double>(n) * static_cast<double>(gpn) * (r ? 2 : 1) +
                                   static_cast<double>(n) * static_cast<double>(r) +
                                   static_cast<double>(leaves) * static_cast<double>(sp));
  if (link_total > static_cast<double>(Cluster::kMaxGeneratedLinks))
    throw std::invalid_argument(fmt::format(
        "cluster.inter_node: the fabric would have {:.4g} links ({} leaves × {} spines, {} nodes × {} GPUs, {} NICs per "
        "node), above the limit of {}; use fewer spines or more nodes_per_leaf",
        link_total, leaves, sp, n, gpn, r, Cluster::kMaxGeneratedLinks));
  return {static_cast<std::size_t>(shape.domains) + n * (gpn + r) + leaves + sp,  // switches, GPUs, NICs, leaves, spines
          2 * (n * gpn + n * r + (r ? n * gpn : 0) + leaves * sp)};  // duplex: intra, nic-leaf, gpu-nic, leaf-spine
}

/// Latency budget. inter.latency is what a GPU→GPU message across nodes costs when
/// it stays under one leaf. The GPU↔NIC PCIe hop and each leaf↔spine hop get a
/// short fixed latency, min(100 ns, L/10) — a PCIe switch or an IB/Ethernet switch
/// traversal is of the order of 100 ns (e.g. NVIDIA Quantum-2 port-to-port ~130 ns);
/// the two NIC↔leaf hops share the rest, so gpu→nic→leaf→nic→gpu = L exactly and a
/// path through a spine costs L + 2·min(100 ns, L/10).
struct InterLatency {
  sim::Time short_hop, nic_to_leaf, leaf_to_nic;
};

InterLatency inter_latency(sim::Time L) {
  const sim::Time short_hop = std::min(sim::ns(100), sim::ps(L.ps() / 10));
  const sim::Time nic_leaf_total = L - short_hop * 2;
  const sim::Time leaf_to_nic = sim::ps(nic_leaf_total.ps() / 2);
  return {short_hop, nic_leaf_total - leaf_to_nic, leaf_to_nic};
}

}  // namespace

void Cluster::Impl::generate(const ClusterSpec& spec) {
  FabricShape shape;
  intra_shape(spec, shape);
  inter_shape(spec, shape);
  layout.by_destination = shape.by_destination;
  layout.pxn = shape.pxn;
  const auto [vertex_count, link_count] = fabric_size(shape);
  reserve(vertex_count, link_count);
  add_nodes(spec, shape);
  if (shape.nodes == 1) return;
  std::vector<int> leaf_vertex, leaf_nics;
  add_nics_and_leaves(spec, shape, leaf_vertex, leaf_nics);
  if (shape.leaf_count == 1) return;  // one leaf reaches every NIC: no spine needed
  add_spines(spec, shape, leaf_vertex, leaf_nics);
}

void Cluster::Impl::add_nodes(const ClusterSpec& spec, const FabricShape& shape) {
  const int N = shape.nodes;
  const int G = shape.gpus_per_node;
  const int per_domain = shape.per_domain;
  // gpu→switch gets the odd picosecond so that the two hops sum to intra.latency exactly.
  const sim::Time intra_down = sim::ps(spec.intra.latency.ps() / 2);
  const sim::Time intra_up = spec.intra.latency - intra_down;

  nodes = N;
  nvlink_domains = shape.domains;
  layout.on = true;
  const auto gpus = static_cast<std::size_t>(N) * static_cast<std::size_t>(G);
  layout.gpu_to_switch.reserve(gpus);
  layout.switch_to_gpu.reserve(gpus);
  gpu_vertex.reserve(gpus);
  gpu_node.reserve(gpus);
  gpu_domain.reserve(gpus);
  gpu_by_name.reserve(gpus);
  int domain_switch = -1;
  for (int n = 0; n < N; ++n) {
    // A node's switch is "node<N>.nvswitch"; a domain of several nodes has one switch
    // fabric "nvl<D>.nvswitch" (NVL72: the 18 NVLink Switch chips of 9 switch trays,
    // non-blocking, so one vertex with one full-rate link per GPU).
    const int d = n / per_domain;
    if (n % per_domain == 0)
      domain_switch = add_vertex(per_domain == 1 ? fmt::format("node{}.{}", n, shape.switch_suffix)
                                                 : fmt::format("nvl{}.{}", d, shape.switch_suffix),
                                 shape.switch_kind);
    for (int gi = 0; gi < G; ++gi) {
      const int v = add_vertex(fmt::format("node{}.gpu{}", n, gi), VertexKind::gpu);
      gpu_by_name.emplace(g[v].name, static_cast<int>(gpu_vertex.size()));
      gpu_vertex.push_back(v);
      gpu_node.push_back(n);
      gpu_domain.push_back(d);
      const auto [up, down] = add_duplex(v, domain_switch, shape.intra_link_kind, spec.intra.bandwidth_Bps, intra_up, intra_down);
      layout.gpu_to_switch.push_back(up);
      layout.switch_to_gpu.push_back(down);
    }
  }
}

void Cluster::Impl::add_nics_and_leaves(const ClusterSpec& spec, const FabricShape& shape, std::vector<int>& leaf_vertex,
                                        std::vector<int>& leaf_nics) {
  const InterNodeSpec& in = spec.inter;
  const int N = shape.nodes;
  const int G = shape.gpus_per_node;
  const int nics = shape.nics;
  const InterLatency lat = inter_latency(in.latency);
  leaf_vertex.assign(static_cast<std::size_t>(shape.leaf_count), 0);
  leaf_nics.assign(static_cast<std::size_t>(shape.leaf_count), 0);
  for (int i = 0; i < shape.leaf_count; ++i) leaf_vertex[i] = add_vertex(fmt::format("leaf{}", i), VertexKind::network_switch);

  layout.nics = nics;
  const auto gpus = static_cast<std::size_t>(N) * static_cast<std::size_t>(G);
  const auto nic_total = static_cast<std::size_t>(N) * static_cast<std::size_t>(nics);
  layout.nic_to_leaf.reserve(nic_total);
  layout.leaf_to_nic.reserve(nic_total);
  layout.leaf_of_nic.reserve(nic_total);
  layout.destination_index.reserve(nic_total);
  layout.gpu_to_nic.reserve(gpus);
  layout.nic_to_gpu.reserve(gpus);
  std::vector<int> node_nics(static_cast<std::size_t>(nics));
  for (int n = 0; n < N; ++n) {
    const int group = n / shape.nodes_per_leaf;
    for (int r = 0; r < nics; ++r) {
      const int nic = add_vertex(fmt::format("node{}.nic{}", n, r), VertexKind::nic);
      node_nics[r] = nic;
      const int leaf = shape.rail ? group * nics + r : group;
      // D-mod-K's destination index: the NIC's number in its plane, counted leaf by
      // leaf (a rail is a plane of its own: rail r's leaves hold the r-th NICs only).
      layout.destination_index.push_back(static_cast<std::uint32_t>(shape.rail ? n : n * nics + r));
      ++leaf_nics[leaf];
      const auto [up, down] = add_duplex(nic, leaf_vertex[leaf], *shape.inter_kind, in.bandwidth_Bps, lat.nic_to_leaf, lat.leaf_to_nic);
      layout.nic_to_leaf.push_back(up);
      layout.leaf_to_nic.push_back(down);
      layout.leaf_of_nic.push_back(leaf);
    }
    for (int gi = 0; gi < G; ++gi) {
      const int gpu = gpu_vertex[static_cast<std::size_t>(n) * G + gi];
      const auto [up, down] = add_duplex(gpu, node_nics[gi % nics], LinkKind::pcie, in.pcie_bandwidth_Bps, lat.short_hop, lat.short_hop);
      layout.gpu_to_nic.push_back(up);
      layout.nic_to_gpu.push_back(down);
    }
  }
}

void Cluster::Impl::add_spines(const ClusterSpec& spec, const FabricShape& shape, const std::vector<int>& leaf_vertex,
                               const std::vector<int>& leaf_nics) {
  const InterNodeSpec& in = spec.inter;
  const int leaf_count = shape.leaf_count;
  const int spines = shape.spines;
  const sim::Time short_hop = inter_latency(in.latency).short_hop;
  std::vector<int> spine_vertex(static_cast<std::size_t>(spines));
  for (int j = 0; j < spines; ++j) spine_vertex[j] = add_vertex(fmt::format("spine{}", j), VertexKind::network_switch);
  layout.spines = spines;
  layout.leaf_to_spine.reserve(static_cast<std::size_t>(leaf_count) * spines);
  layout.spine_to_leaf.reserve(static_cast<std::size_t>(leaf_count) * spines);
  // Every uplink runs at the rate the fullest leaf's design gives it: d_max·B /
  // oversubscription over the spines (switch ports and cables are alike across the
  // fabric). A leaf with fewer NICs below it — the last, partly filled group — keeps
  // those ports and is the less oversubscribed for it; splitting its own smaller
  // capacity over the same number of spines would give each of its flows to another
  // leaf a fraction of a NIC's rate, which no built fabric does.
  const int d_max = leaf_count > 0 ? *std::max_element(leaf_nics.begin(), leaf_nics.end()) : 0;
  const double uplink_Bps = d_max * in.bandwidth_Bps / in.oversubscription / spines;
  for (int i = 0; i < leaf_count; ++i) {
    for (int j = 0; j < spines; ++j) {
      const auto [up, down] = add_duplex(leaf_vertex[i], spine_vertex[j], *shape.inter_kind, uplink_Bps, short_hop, short_hop);
      layout.leaf_to_spine.push_back(up);
      layout.spine_to_leaf.push_back(down);
    }
  }
}

// ---------------------------------------------------------------------------------
// Structural routes of a generated topology. The generator's graph has exactly
// three kinds of loop-free GPU→GPU paths that neither relay through a GPU nor turn
// around in a NIC (the switch of a node — of an NVLink domain — only touches that
// node's (domain's) GPUs; a NIC's
// host side is its GPUs; leaves touch NICs and spines; every leaf touches every
// spine):
//   A  gpu→switch→gpu                                  same node (NVLink domain) only, 2 hops
//   B  gpu→nic→leaf→nic'→gpu                           NICs under one leaf, 4 hops
//   C  gpu→nic→leaf→spine_k→leaf'→nic'→gpu, k = any    6 hops
// where nic / nic' are the NICs of the two GPUs (g % nics). Any other walk adds
// hops without removing one, so it is never shorter by (hops, latency). We compare
// A with the network path (B or C) by the search's own weight, Σ route_weight(latency)
// (cluster_impl.hpp): fewer hops always win, so A, 2 hops, beats B and C whatever the
// latencies; B and C never meet (one leaf or two). C's equal-cost paths are the `spines` choices of k (all
// leaf↔spine links have the same latency by construction), and the search sorts
// them by link ids, i.e. by k (leaf→spine_k ids grow with k), so path i is spine
// i. tests/test_cluster.cpp checks all of this against the graph search on the
// same graph, pair by pair.
std::size_t Cluster::Impl::structural_path(int src_gpu, int dst_gpu, std::uint64_t index, StructPath* out) const {
  const Layout& L = layout;
  const auto s = static_cast<std::size_t>(src_gpu), d = static_cast<std::size_t>(dst_gpu);
  auto w = [&](LinkId id) { return route_weight(links[id].latency); };
  auto emit = [&](std::initializer_list<LinkId> ids) {
    if (!out) return;
    out->len = static_cast<std::uint8_t>(ids.size());
    std::copy(ids.begin(), ids.end(), out->ids.begin());
  };
  const bool same_domain = gpu_domain[s] == gpu_domain[d];
  const std::int64_t via_switch =
      same_domain ? w(L.gpu_to_switch[s]) + w(L.switch_to_gpu[d]) : std::numeric_limits<std::int64_t>::max();
  if (L.nics == 0) {  // one node: the switch is the only way
    emit({L.gpu_to_switch[s], L.switch_to_gpu[d]});
    return 1;
  }
  const std::size_t nic_s = nic_of_gpu(s), nic_d = nic_of_gpu(d);
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
  // Which spine. ECMP: the flow's hash. Destination-based (D-mod-K): destination
  // NIC d, numbered in its plane leaf by leaf, always crosses spine d mod spines
  // (with as many spines as ports per leaf: the port it hangs on), so the downlink
  // spine→leaf' serves one destination port (or `ports/spines` of them) and a shift
  // pattern (node i → node i+s: ring hops, pipeline sends) takes distinct uplinks
  // from each leaf: it is non-blocking on a non-oversubscribed tree. This is what
  // the fat-tree routing of InfiniBand subnet managers programs into the switch
  // forwarding tables (OpenSM's ftree engine "optimizes routing of fat-trees for
  // congestion-free shift communication pattern", opensm doc/current-routing.txt;
  // E. Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift
  // Permutations on Real Life Fat Trees", Technion, 2010).
  const std::size_t count = std::min(spines, kMaxEcmpPaths);
  const std::size_t k = static_cast<std::size_t>(path_selector(dst_gpu, index) % count);
  emit({L.gpu_to_nic[s], L.nic_to_leaf[nic_s], L.leaf_to_spine[leaf_s * spines + k], L.spine_to_leaf[leaf_d * spines + k],
        L.leaf_to_nic[nic_d], L.nic_to_gpu[d]});
  return count;
}

int Cluster::Impl::pxn_relay(int src_gpu, int dst_gpu) const {
  if (!layout.pxn || layout.nics == 0) return -1;
  const auto s = static_cast<std::size_t>(src_gpu), d = static_cast<std::size_t>(dst_gpu);
  if (gpu_domain[s] == gpu_domain[d]) return -1;  // NVLink carries it, no NIC involved
  const std::size_t dst_rail = rail_of_gpu(d);
  if (rail_of_gpu(s) == dst_rail) return -1;  // already on the receiver's rail
  // GPU dst_rail of the sender's node uses NIC dst_rail (dst_rail < nics <= G).
  const std::size_t G = gpu_vertex.size() / static_cast<std::size_t>(nodes);
  return static_cast<int>(static_cast<std::size_t>(gpu_node[s]) * G + dst_rail);
}

std::uint64_t Cluster::Impl::path_selector(int dst_gpu, std::uint64_t flow_hash) const {
  if (!layout.by_destination) return flow_hash;
  return layout.destination_index[nic_of_gpu(static_cast<std::size_t>(dst_gpu))];
}

}  // namespace ls::topo

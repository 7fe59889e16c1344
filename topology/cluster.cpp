// topology/cluster.cpp — the cluster's link table, build(), route dispatch and public API.
//
// Which routes come from where (see cluster.hpp for the other files):
//  * Generated topologies (the generator keys) are routed structurally (fabric.cpp):
//    the generator records, per GPU, NIC, leaf and spine, the ids of the links it
//    adds (Impl::Layout), and a route is read off those arrays in O(1). The graph
//    search, on a 16384-GPU rail-optimized cluster (~1000 leaves × 16 spines), took
//    21.8 s for the 63k ring-neighbour and pipeline pairs of a t8·p16·d128 layout; the
//    structural routes take 0.05 s. The graph then keeps only the vertices (no edges,
//    no routing view: nothing walks them).
//  * Explicit graphs (cluster.graph, explicit_graph.cpp), and the pairs of a generated
//    topology that a down link affects (down_links.cpp), are searched on the routing
//    view (graph_router.cpp).
#include "topology/cluster_impl.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

namespace ls::topo {

// ---------------------------------------------------------------------------------
// Vertices and links

int Cluster::Impl::add_vertex(std::string name, VertexKind kind) {
  if (static_cast<std::size_t>(vertices_added) >= boost::num_vertices(g))
    throw std::logic_error("cluster: more vertices than reserved");  // would break the name views
  const int v = vertices_added++;
  auto& props = g[static_cast<Vertex>(v)];
  props = VertexProps{std::move(name), kind};
  if (!vertex_by_name.emplace(props.name, v).second)
    throw std::invalid_argument(fmt::format("cluster: duplicate vertex name '{}'", props.name));
  is_gpu.push_back(props.kind == VertexKind::gpu);
  return v;
}

void Cluster::Impl::index_links() const {
  if (links_indexed == links.size()) return;
  link_by_name.reserve(links.size());
  for (; links_indexed < links.size(); ++links_indexed)
    link_by_name.emplace(links[links_indexed].name, static_cast<LinkId>(links_indexed));
}

int Cluster::Impl::vertex(std::string_view name, std::string_view where) const {
  auto it = vertex_by_name.find(name);
  if (it == vertex_by_name.end()) throw std::invalid_argument(fmt::format("{}: unknown vertex '{}'", where, name));
  return it->second;
}

LinkId Cluster::Impl::add_link(int from, int to, LinkKind kind, double bw_Bps, sim::Time latency) {
  std::string name = fmt::format("{}->{}", g[from].name, g[to].name);
  if (!layout.on && link_by_name.count(name)) {  // parallel link: "a->b#1", "a->b#2", ...
    int k = 1;
    while (link_by_name.count(fmt::format("{}#{}", name, k))) ++k;
    name = fmt::format("{}#{}", name, k);
  }
  const std::string_view kind_name = link_kind_name(kind);
  if (!(bw_Bps > 0) || !std::isfinite(bw_Bps))
    throw std::invalid_argument(
        fmt::format("cluster: link {} ({}) has non-positive bandwidth {} B/s", name, kind_name, bw_Bps));
  if (latency < sim::Time::zero() || latency.ps() >= std::int64_t{1'000'000'000'000})
    throw std::invalid_argument(
        fmt::format("cluster: link {} ({}) latency {} is negative or above 1 s", name, kind_name, latency));
  if (links.size() == links.capacity()) throw std::logic_error("cluster: more links than reserved");
  const auto id = static_cast<LinkId>(links.size());
  links.push_back(LinkInfo{std::move(name), kind, std::string(kind_name), bw_Bps, latency, from, to});
  if (layout.on && !keep_edges) return id;  // generated: routes are structural, g keeps the vertices only
  index_links();
  boost::add_edge(static_cast<Vertex>(from), static_cast<Vertex>(to), EdgeProps{id, route_weight(latency)}, g);
  return id;
}

// ---------------------------------------------------------------------------------
// Route dispatch: the graph search for explicit graphs and down-link-affected pairs,
// structural routes otherwise.

std::span<const LinkId> Cluster::Impl::route(int src_gpu, int dst_gpu, std::uint64_t flow_hash) {
  check_gpu(src_gpu);
  check_gpu(dst_gpu);
  if (searched(src_gpu, dst_gpu)) {
    const auto& pr = pair_routes(src_gpu, dst_gpu);
    if (pr.paths.empty()) return {};
    return pr.paths[path_selector(dst_gpu, flow_hash) % pr.paths.size()];
  }
  if (src_gpu == dst_gpu) return {};
  StructPath p;
  const std::size_t count = structural_path(src_gpu, dst_gpu, flow_hash, &p);
  // Key (src, dst, path index): 8 bits of index suffice (kMaxEcmpPaths = 256), and
  // G²·256 < 2^64 for any G below 2^28.
  static_assert(kMaxEcmpPaths <= 256);
  const std::uint64_t pair = static_cast<std::uint64_t>(src_gpu) * gpu_vertex.size() + static_cast<std::uint64_t>(dst_gpu);
  const auto [it, inserted] = struct_routes.try_emplace(pair << 8 | (path_selector(dst_gpu, flow_hash) % count), p);
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
int Cluster::nvlink_domain_count() const { return impl_->nvlink_domains; }
int Cluster::nvlink_domain_of_gpu(int gpu) const {
  impl_->check_gpu(gpu);
  return impl_->gpu_domain[gpu];
}
bool Cluster::crosses_nvlink_domains(std::span<const std::int32_t> gpus) const {
  for (std::int32_t gpu : gpus)
    if (nvlink_domain_of_gpu(gpu) != nvlink_domain_of_gpu(gpus.front())) return true;
  return false;
}

std::size_t Cluster::vertex_count() const { return boost::num_vertices(impl_->g); }
const std::string& Cluster::vertex_name(int vertex) const { return impl_->g[static_cast<Vertex>(vertex)].name; }
std::string_view Cluster::vertex_kind(int vertex) const {
  return vertex_kind_name(impl_->g[static_cast<Vertex>(vertex)].kind);
}
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
int Cluster::pxn_relay(int src_gpu, int dst_gpu) const {
  impl_->check_gpu(src_gpu);
  impl_->check_gpu(dst_gpu);
  return impl_->pxn_relay(src_gpu, dst_gpu);
}
sim::Time Cluster::route_latency(int src_gpu, int dst_gpu, std::uint64_t flow_hash) const {
  impl_->check_gpu(src_gpu);
  impl_->check_gpu(dst_gpu);
  if (impl_->searched(src_gpu, dst_gpu)) {
    const auto& pr = impl_->pair_routes(src_gpu, dst_gpu);
    if (pr.paths.empty()) return sim::Time::zero();
    return pr.latency[impl_->path_selector(dst_gpu, flow_hash) % pr.paths.size()];
  }
  sim::Time t;
  for (LinkId l : route(src_gpu, dst_gpu, flow_hash)) t += impl_->links[l].latency;
  return t;
}
sim::Time Cluster::append_route(int src_gpu, int dst_gpu, std::uint64_t flow_hash, std::vector<LinkId>& out) const {
  impl_->check_gpu(src_gpu);
  impl_->check_gpu(dst_gpu);
  if (impl_->searched(src_gpu, dst_gpu)) {
    const auto& pr = impl_->pair_routes(src_gpu, dst_gpu);
    if (pr.paths.empty()) return sim::Time::zero();
    const std::size_t i = impl_->path_selector(dst_gpu, flow_hash) % pr.paths.size();
    out.insert(out.end(), pr.paths[i].begin(), pr.paths[i].end());
    return pr.latency[i];
  }
  if (src_gpu == dst_gpu) return sim::Time::zero();
  Impl::StructPath p;
  impl_->structural_path(src_gpu, dst_gpu, flow_hash, &p);
  sim::Time t;
  for (std::size_t k = 0; k < p.len; ++k) {
    out.push_back(p.ids[k]);
    t += impl_->links[p.ids[k]].latency;
  }
  return t;
}
std::vector<std::string> Cluster::link_kinds_on_route(int src_gpu, int dst_gpu, std::uint64_t flow_hash) const {
  std::vector<std::string> kinds;
  for (LinkId l : route(src_gpu, dst_gpu, flow_hash)) kinds.emplace_back(link_kind_name(impl_->links[l].type));
  return kinds;
}

}  // namespace ls::topo

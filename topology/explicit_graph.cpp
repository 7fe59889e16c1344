// topology/explicit_graph.cpp — building the cluster from an explicit graph
// (cluster.graph): vertex and link kinds, GPU names and numbering, parallel links.
// Routing on it is graph_router.cpp's.
#include "topology/cluster_impl.hpp"

#include <algorithm>
#include <optional>

namespace ls::topo {
namespace {

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

void Cluster::Impl::load_graph(const ExplicitGraphSpec& graph) {
  struct GpuEntry { int node, local, vertex; };
  std::vector<GpuEntry> gpus;
  std::size_t directed_links = 0;
  for (const auto& ls : graph.links) directed_links += ls.duplex ? 2 : 1;
  reserve(graph.vertices.size(), directed_links);
  for (std::size_t i = 0; i < graph.vertices.size(); ++i) {
    const auto& vs = graph.vertices[i];
    const std::optional<VertexKind> kind = parse_vertex_kind(vs.kind);
    if (!kind)
      throw std::invalid_argument(fmt::format("cluster.graph.vertices[{}] '{}': unknown kind '{}' (expected {})", i,
                                              vs.name, vs.kind, kind_list(kVertexKindNames)));
    if (vs.name.empty()) throw std::invalid_argument(fmt::format("cluster.graph.vertices[{}]: empty name", i));
    int node = 0, local = 0;
    const bool gpu_named = parse_gpu_name(vs.name, node, local);
    if (kind == VertexKind::gpu && !gpu_named)
      throw std::invalid_argument(
          fmt::format("cluster.graph.vertices[{}]: bad GPU name '{}' (expected node<N>.gpu<G>)", i, vs.name));
    const int v = add_vertex(vs.name, *kind);
    if (kind == VertexKind::gpu) gpus.push_back({node, local, v});
  }
  if (gpus.empty()) throw std::invalid_argument("cluster.graph: no vertex of kind gpu");
  std::sort(gpus.begin(), gpus.end(),
            [](const GpuEntry& a, const GpuEntry& b) { return std::pair(a.node, a.local) < std::pair(b.node, b.local); });
  for (const auto& e : gpus) {
    gpu_by_name.emplace(g[e.vertex].name, static_cast<int>(gpu_vertex.size()));
    gpu_vertex.push_back(e.vertex);
    gpu_node.push_back(e.node);
    gpu_domain.push_back(e.node);
    nodes = std::max(nodes, e.node + 1);
  }
  nvlink_domains = nodes;
  for (std::size_t i = 0; i < graph.links.size(); ++i) {
    const auto& ls = graph.links[i];
    const std::string where = fmt::format("cluster.graph.links[{}] ({} -> {})", i, ls.from, ls.to);
    const int a = vertex(ls.from, where);
    const int b = vertex(ls.to, where);
    const std::optional<LinkKind> kind = parse_link_kind(ls.kind);
    if (!kind)
      throw std::invalid_argument(
          fmt::format("{}: unknown link kind '{}' (expected {})", where, ls.kind, kind_list(kLinkKindNames)));
    if (!(ls.bandwidth_Bps > 0))
      throw std::invalid_argument(fmt::format("{}: non-positive bandwidth {} B/s", where, ls.bandwidth_Bps));
    if (a == b) throw std::invalid_argument(fmt::format("{}: a link must join two different vertices", where));
    add_link(a, b, *kind, ls.bandwidth_Bps, ls.latency);
    if (ls.duplex) add_link(b, a, *kind, ls.bandwidth_Bps, ls.latency);
  }
}

}  // namespace ls::topo

// topology/down_links.cpp — down links (ClusterSpec::down_links; see cluster.hpp,
// "Down links"): resolving their names, and, for a generated topology, which GPU pairs'
// structural routes they touch. Those pairs are searched on the routing view without
// the down links (graph_router.cpp), where a peer GPU may relay PXN-style when no
// other path is left; every other pair keeps its structural routes.
#include "topology/cluster_impl.hpp"

#include <algorithm>

namespace ls::topo {

std::string Cluster::Impl::down_list() const {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(down_ids.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + links[down_ids[i]].name;
  if (shown < down_ids.size()) out += fmt::format(", ... ({} in all)", down_ids.size());
  return out;
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
    if (g[l.from_vertex].kind != VertexKind::network_switch || g[l.to_vertex].kind != VertexKind::network_switch)
      continue;  // only leaf↔spine
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
  const std::size_t nic = nic_of_gpu(s);
  return is_down(layout.gpu_to_nic[s]) || is_down(layout.nic_to_leaf[nic]) ||
         uplink_down_at[links[layout.nic_to_leaf[nic]].to_vertex];
}

bool Cluster::Impl::sink_touched(std::size_t d) const {
  if (is_down(layout.switch_to_gpu[d])) return true;
  if (layout.nics == 0) return false;
  const std::size_t nic = nic_of_gpu(d);
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

}  // namespace ls::topo

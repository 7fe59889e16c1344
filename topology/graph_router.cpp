// topology/graph_router.cpp — routing by graph search: the routing view, its pruned
// Dijkstra with equal-cost path enumeration, and the reachability check at build.
// Used for explicit graphs and for the pairs of a generated topology that a down
// link affects (see down_links.cpp).
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
#include "topology/cluster_impl.hpp"

#include <algorithm>
#include <functional>
#include <queue>

namespace ls::topo {

void Cluster::Impl::build_routing_view() {
  // Vertex v of the graph is vertex v of the view; the down half of each NIC, the
  // relay halves of each GPU that touches a NIC and the host copies of the intra-node
  // switches are appended after them (the latter two only when some GPU touches a NIC).
  const std::size_t V = boost::num_vertices(g);
  std::vector<int> down(V, -1), up_relay(V, -1), down_relay(V, -1), host_copy(V, -1);
  auto is_nic = [&](std::size_t v) { return g[v].kind == VertexKind::nic; };
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

// ---------------------------------------------------------------------------------
// Search

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

}  // namespace ls::topo

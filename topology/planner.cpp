// topology/planner.cpp — ring / hierarchical / pairwise plans on the cluster's routes.
//
// Why one phase per ring collective, not one phase per ring step: a ring all-reduce
// has 2(n−1) steps; in step t every member sends S/n bytes to its successor, and the
// steps are separated by a hop latency α. On a ring whose hops do not share links
// (the normal case: each GPU's NVLink or NIC port carries exactly one ring hop per
// direction) every step drains at the same rate B, so
//     per-step plan:  2(n−1) · (α + S/(nB))
//     one phase:      (2(n−1)/n · S)/B + 2(n−1)α      — the same number,
// while the engine handles far fewer flow events (measured once, by hand, with
// FlowNetwork driven as in tests/test_planner.cpp, -O2: a 1 GB reduce-scatter over
// 64 GPUs on 8 rail-optimized nodes simulates to the same 78.9516 ms either way; one
// phase of per-hop flows: 64 completions, 0.04 ms wall; 63 phases: 4032
// completions, 1.15 ms).
//
// Why one flow per ring, not one per hop (PlanBuilder::ring): the ring's steps are
// lock-stepped, so the whole ring moves at its slowest hop's rate, and max-min
// gives a single flow over the concatenated hop routes exactly that rate on every
// hop. Per-hop flows gave the same time on a uniform ring but, under foreign
// traffic, let uncontended hops drain early and hand their bandwidth to others as
// if they could run ahead of the ring. And the engine sees one flow event per ring:
// a 64-rank flat all-reduce is 1 flow instead of 64; the hierarchical all-reduce of
// 8 nodes × 8 GPUs is 8 + 8 + 8 = 24 flows instead of 64 + 64 + 64 = 192.
// The remaining approximation: a contended hop slows the ring for the whole
// collective, not only during the steps in which the foreign traffic is present.
#include "topology/planner.hpp"

#include "sim/hash.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace ls::topo {
namespace {

constexpr auto mix64 = sim::splitmix64;

/// The most channels (rings) NCCL runs one collective on: MAXCHANNELS in NCCL's
/// src/include/device.h, 64 in current releases (32 in earlier ones). It bounds only
/// NVLink domains of more than 64 GPUs, which only current releases drive.
constexpr std::size_t kNcclMaxChannels = 64;

/// ECMP hash of one flow: deterministic in (src, dst, member index).
std::uint64_t flow_hash(std::int32_t src, std::int32_t dst, std::uint64_t index) {
  return mix64(mix64(mix64(static_cast<std::uint32_t>(src)) ^ static_cast<std::uint32_t>(dst)) ^ index);
}

/// Accumulates flows and phases. Every hop pays the cost model's step latency
/// (hop_alpha) and every flow carries payload/efficiency of its bottleneck link.
class PlanBuilder {
public:
  PlanBuilder(const Cluster& cluster, const CollectiveCostModel& costs) : cluster_(cluster), costs_(costs) {}

  /// One ring step over this route: the route's latency, or the step latency floor
  /// of its slowest link kind if larger.
  sim::Time hop_alpha(std::span<const LinkId> path, sim::Time route_latency) const {
    sim::Time alpha = route_latency;
    for (LinkId l : path) alpha = std::max(alpha, costs_[cluster_.link(l).type].step_latency);
    return alpha;
  }

  /// Efficiency of the path's bottleneck: the link with the least line rate ×
  /// efficiency (ties: the first). 1 for an empty path.
  double path_efficiency(std::span<const LinkId> path) const {
    double best_rate = 0, efficiency = 1;
    for (LinkId l : path) {
      const LinkInfo& info = cluster_.link(l);
      const double e = costs_[info.type].efficiency;
      if (best_rate == 0 || info.bandwidth_Bps * e < best_rate) best_rate = info.bandwidth_Bps * e, efficiency = e;
    }
    return efficiency;
  }

  /// A pairwise flow; the phase's α is the largest hop α among its flows. Under
  /// PXN (Cluster::pxn_relay) the flow's path is the sender's route to the relay GPU
  /// then the relay's to the receiver: one flow, as NCCL pipelines the NVLink copy
  /// and the network send chunk by chunk.
  void add_flow(std::int32_t src, std::int32_t dst, double bytes, std::uint64_t index) {
    if (src == dst) return;  // nothing crosses a link
    const std::uint64_t h = flow_hash(src, dst, index);
    sim::PlanFlow f;
    f.path_begin = static_cast<std::uint32_t>(plan_.links.size());
    sim::Time latency;
    const int relay = cluster_.pxn_relay(src, dst);
    const std::array<std::int32_t, 3> stops{src, relay < 0 ? dst : relay, dst};
    for (std::size_t leg = 0; leg < (relay < 0 ? 1u : 2u); ++leg) {
      latency += cluster_.append_route(stops[leg], stops[leg + 1], h, plan_.links);
    }
    f.path_len = static_cast<std::uint32_t>(plan_.links.size()) - f.path_begin;
    const auto path = std::span(plan_.links).subspan(f.path_begin, f.path_len);
    f.efficiency = path_efficiency(path);
    f.bytes = bytes / f.efficiency;
    phase_.flows.push_back(f);
    alpha_ = std::max(alpha_, hop_alpha(path, latency));
  }

  /// Step latencies of one ring's hops.
  struct RingLatency {
    sim::Time sum;  // over its hops
    sim::Time max;  // largest hop
    /// A closed ring of n hops takes n−1 steps per pass; NCCL's tuner charges them
    /// as the sum over the hops of their latency, less the largest one's: with N
    /// nodes, (n−N) intra-node and (N−1) inter-node steps.
    sim::Time steps() const { return sum - max; }
  };

  /// A ring over `members` as ONE flow of `bytes` (what every hop carries) whose
  /// path is the concatenation of the hop routes: member i → i+1 mod m when
  /// `closed`, the open chain members[0] → … → members[m−1] otherwise. A link used
  /// by several hops appears several times (FlowNetwork's multiplicity: it then
  /// carries the ring's rate that many times). Each hop keeps its own ECMP hash.
  ///
  /// Why one flow, not one per hop: a ring advances in lock-step, every step
  /// waiting for its slowest hop, so the whole ring moves at its bottleneck rate.
  /// Max-min fairness gives a single multi-link flow exactly that: one rate, the
  /// bottleneck share, on every hop. On a uniform ring this is the same time as m
  /// independent hop flows (each at B); under contention it is more realistic
  /// (per-hop flows let the uncontended hops finish early, and hand the bandwidth
  /// they free to others, as if they could run ahead of the ring); and the engine
  /// handles one flow event per ring instead of m.
  /// `floor`: the least latency of each hop's step.
  RingLatency ring(std::span<const std::int32_t> members, double bytes, bool closed = true,
                   sim::Time floor = sim::Time::zero()) {
    RingLatency lat;
    const std::size_t m = members.size();
    if (m < 2) return lat;
    sim::PlanFlow f;
    f.path_begin = static_cast<std::uint32_t>(plan_.links.size());
    for (std::size_t i = 0; i < (closed ? m : m - 1); ++i) {
      const std::int32_t src = members[i], dst = members[(i + 1) % m];
      if (src == dst) continue;  // not for validated groups (distinct devices)
      const std::uint64_t h = flow_hash(src, dst, i);
      const std::size_t at = plan_.links.size();
      const sim::Time latency = cluster_.append_route(src, dst, h, plan_.links);
      const sim::Time alpha = std::max(floor, hop_alpha(std::span<const LinkId>(plan_.links).subspan(at), latency));
      lat.sum += alpha;
      lat.max = std::max(lat.max, alpha);
    }
    alpha_ = std::max(alpha_, lat.max);
    f.path_len = static_cast<std::uint32_t>(plan_.links.size()) - f.path_begin;
    f.efficiency = path_efficiency(std::span(plan_.links).subspan(f.path_begin, f.path_len));
    f.bytes = bytes / f.efficiency;
    if (f.path_len > 0) phase_.flows.push_back(f);
    return lat;
  }

  void end_phase(sim::Time latency) {
    if (phase_.flows.empty()) return;
    phase_.latency = latency;
    plan_.phases.push_back(std::move(phase_));
    phase_ = {};
    alpha_ = sim::Time::zero();
  }
  /// The phase's latency is `multiplier` times its largest hop α.
  void end_phase(std::int64_t multiplier) { end_phase(alpha_ * multiplier); }

  /// `fixed`: the once-per-collective cost, charged on the first phase.
  sim::CommPlan take(double bytes_per_member, sim::Time fixed = sim::Time::zero()) {
    if (!plan_.phases.empty()) plan_.phases.front().latency += fixed;
    plan_.bytes_per_member = bytes_per_member;
    return std::move(plan_);
  }

private:
  const Cluster& cluster_;
  const CollectiveCostModel& costs_;
  sim::CommPlan plan_;
  sim::CommPhase phase_;
  sim::Time alpha_;
};

void check_bytes(double bytes) {
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw std::invalid_argument(fmt::format("planner: bytes must be finite and >= 0 (got {})", bytes));
}

void check_devices(const Cluster& c, std::span<const std::int32_t> devices) {
  for (const std::int32_t d : devices)
    if (d < 0 || d >= c.gpu_count())
      throw std::invalid_argument(fmt::format("planner: device {} out of range [0, {})", d, c.gpu_count()));
  // Sorted, not pairwise: a data-parallel group spans up to every GPU (16,384 and more),
  // where comparing each member with the ones before it took seconds.
  std::vector<std::int32_t> sorted(devices.begin(), devices.end());
  std::sort(sorted.begin(), sorted.end());
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
    throw std::invalid_argument(fmt::format("planner: device {} appears twice in a group", *twice));
}

/// Members grouped by node (nodes in order of first appearance, members in ring
/// order) when the group spans at least 2 nodes with the same number of members on
/// each; empty otherwise. A "node" here is an NVLink domain (a node unless
/// cluster.nvlink_domain joins several): NCCL treats a multi-node NVLink domain (MNNVL,
/// NVL72) as one NVLink clique, its rings and trees cross the network between domains only.
std::vector<std::vector<std::int32_t>> node_groups(const Cluster& c, std::span<const std::int32_t> devices) {
  std::vector<int> node_ids;
  std::vector<std::vector<std::int32_t>> per_node;
  for (std::int32_t d : devices) {
    const int n = c.nvlink_domain_of_gpu(d);
    auto it = std::find(node_ids.begin(), node_ids.end(), n);
    if (it == node_ids.end()) {
      node_ids.push_back(n);
      per_node.emplace_back();
      it = node_ids.end() - 1;
    }
    per_node[static_cast<std::size_t>(it - node_ids.begin())].push_back(d);
  }
  if (per_node.size() < 2) return {};
  for (const auto& v : per_node)
    if (v.size() != per_node.front().size()) return {};
  return per_node;
}

/// The wire-only model's hierarchical algorithm: node_groups with k > 1 per node.
std::vector<std::vector<std::int32_t>> hierarchical_split(const Cluster& c, std::span<const std::int32_t> devices) {
  auto per_node = node_groups(c, devices);
  if (!per_node.empty() && per_node.front().size() < 2) return {};
  return per_node;
}

/// Ring order of channel `channel` of a flat ring over N nodes × k members. NCCL runs
/// a ring collective on several channels, each a ring over all ranks carrying its
/// share of the data, so that every NIC of a node carries one channel's inter-node
/// hop (its "rail"). Here channel c enters node 0 at its member c and leaves it at
/// member c+1 (mod k), enters node 1 at member c+1 and leaves it at c, and so on,
/// alternating: every inter-node hop joins the same local index on both nodes (the
/// same rail on a rail-optimized fabric; with N odd the closing hop cannot), and over
/// k channels every member enters and leaves its node once (over fewer, the first ones).
std::vector<std::int32_t> channel_order(const std::vector<std::vector<std::int32_t>>& per_node, std::size_t channel) {
  const std::size_t k = per_node.front().size();
  const std::size_t a = channel % k, b = (channel + 1) % k;
  std::vector<std::int32_t> order;
  order.reserve(k * per_node.size());
  for (std::size_t j = 0; j < per_node.size(); ++j) {
    const std::size_t entry = j % 2 == 0 ? a : b, exit = j % 2 == 0 ? b : a;
    order.push_back(per_node[j][entry]);
    for (std::size_t i = 0; i < k; ++i)
      if (i != entry && i != exit) order.push_back(per_node[j][i]);
    if (exit != entry) order.push_back(per_node[j][exit]);
  }
  return order;
}

}  // namespace

double idle_network_seconds(const Cluster& c, const sim::CommPlan& plan) {
  double total = 0;
  std::unordered_map<LinkId, int> uses;
  for (const auto& phase : plan.phases) {
    uses.clear();
    for (const auto& f : phase.flows)
      for (std::uint32_t i = 0; i < f.path_len; ++i) ++uses[plan.links[f.path_begin + i]];
    double drain = 0;
    for (const auto& f : phase.flows) {
      double rate = std::numeric_limits<double>::infinity();
      for (std::uint32_t i = 0; i < f.path_len; ++i) {
        const LinkId l = plan.links[f.path_begin + i];
        rate = std::min(rate, c.link(l).bandwidth_Bps / uses[l]);
      }
      drain = std::max(drain, f.bytes / rate);
    }
    total += drain + phase.latency.seconds();
  }
  return total;
}

Planner::Planner(const Cluster& cluster, bool ideal, CollectiveCostModel costs)
    : cluster_(cluster), ideal_(ideal), costs_(costs) {
  costs_.validate();
}
Planner::~Planner() = default;

std::size_t Planner::KeyHash::operator()(const Key& k) const {
  std::uint64_t h = sim::hash_ints(mix64(k.op), k.devices);
  for (double v : k.values) h = mix64(h ^ std::hash<double>{}(v));
  return static_cast<std::size_t>(h);
}

std::size_t Planner::cached_plans() const { return plans_.size(); }

bool Planner::uses_hierarchical_all_reduce(std::span<const std::int32_t> devices) const {
  return !costs_.nccl_algorithms && !hierarchical_split(cluster_, devices).empty();
}

bool Planner::all_reduce_uses_tree(std::span<const std::int32_t> devices, double bytes) const {
  check_bytes(bytes);
  check_devices(cluster_, devices);
  return nccl_all_reduce(devices, bytes).second;
}

const sim::CommPlan& Planner::store(Key key, sim::CommPlan plan) {
  if (ideal_) {  // communication is free, byte accounting is kept
    plan.phases.clear();
    plan.links.clear();
  }
  auto [it, inserted] = plans_.emplace(std::move(key), std::make_unique<sim::CommPlan>(std::move(plan)));
  return *it->second;
}

const sim::CommPlan& Planner::collective(std::span<const std::int32_t> devices, sim::CollOp op, double bytes) {
  Key key{std::vector<std::int32_t>(devices.begin(), devices.end()), static_cast<std::uint8_t>(op), {bytes}};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  check_bytes(bytes);
  check_devices(cluster_, devices);
  return store(std::move(key), build_collective(devices, op, bytes));
}

sim::CommPlan Planner::build_collective(std::span<const std::int32_t> devices, sim::CollOp op, double S) const {
  if (costs_.nccl_algorithms) return build_nccl_collective(devices, op, S);
  PlanBuilder b(cluster_, costs_);
  const auto n = static_cast<double>(devices.size());
  if (devices.size() < 2) return b.take(0);
  const auto steps = static_cast<std::int64_t>(devices.size()) - 1;  // n − 1

  switch (op) {
    case sim::CollOp::all_reduce: {
      const auto per_node = hierarchical_split(cluster_, devices);
      if (per_node.empty()) {
        // Flat ring: 2(n−1)(α + S/(nB)).
        b.ring(devices, 2 * (n - 1) / n * S);
        b.end_phase(2 * steps);
        return b.take(2 * (n - 1) / n * S);
      }
      // Hierarchical (NCCL-style intra RS → inter AR per rail → intra AG):
      //   (k−1)(α_i + S/(kB_i)) + 2(N−1)(α_o + S/(kNB_o)) + (k−1)(α_i + S/(kB_i)).
      const auto k = static_cast<double>(per_node.front().size());
      const auto N = static_cast<double>(per_node.size());
      const auto k_steps = static_cast<std::int64_t>(per_node.front().size()) - 1;
      const auto n_steps = static_cast<std::int64_t>(per_node.size()) - 1;
      for (const auto& members : per_node) b.ring(members, (k - 1) / k * S);
      b.end_phase(k_steps);
      std::vector<std::int32_t> rail(per_node.size());
      for (std::size_t j = 0; j < per_node.front().size(); ++j) {
        for (std::size_t m = 0; m < per_node.size(); ++m) rail[m] = per_node[m][j];
        b.ring(rail, 2 * (N - 1) / N * (S / k));
      }
      b.end_phase(2 * n_steps);
      for (const auto& members : per_node) b.ring(members, (k - 1) / k * S);
      b.end_phase(k_steps);
      return b.take(2 * (k - 1) / k * S + 2 * (N - 1) / N * (S / k));
    }
    case sim::CollOp::reduce_scatter:
    case sim::CollOp::all_gather: {
      const auto per_node = hierarchical_split(cluster_, devices);
      if (per_node.empty()) {
        // Flat ring: (n−1)(α + S/(nB)); each rank forwards n−1 chunks.
        b.ring(devices, (n - 1) / n * S);
        b.end_phase(steps);
        return b.take((n - 1) / n * S);
      }
      // Across nodes NCCL runs one ring per NIC (channels), so every rail carries its
      // share. Modelled as two levels, like the hierarchical all-reduce:
      //   reduce-scatter: intra-node RS of S, then inter-node RS per rail of S/k:
      //     (k−1)(α_i + S/(kB_i)) + (N−1)(α_o + S/(kNB_o));
      //   all-gather: the mirror (inter-node AG per rail of S/k first, then intra-node AG).
      // A single flat ring would push the whole (n−1)/n·S through one NIC pair.
      const auto k = static_cast<double>(per_node.front().size());
      const auto N = static_cast<double>(per_node.size());
      const auto k_steps = static_cast<std::int64_t>(per_node.front().size()) - 1;
      const auto n_steps = static_cast<std::int64_t>(per_node.size()) - 1;
      auto intra = [&] {
        for (const auto& members : per_node) b.ring(members, (k - 1) / k * S);
        b.end_phase(k_steps);
      };
      auto inter = [&] {
        std::vector<std::int32_t> rail(per_node.size());
        for (std::size_t j = 0; j < per_node.front().size(); ++j) {
          for (std::size_t m = 0; m < per_node.size(); ++m) rail[m] = per_node[m][j];
          b.ring(rail, (N - 1) / N * (S / k));
        }
        b.end_phase(n_steps);
      };
      if (op == sim::CollOp::reduce_scatter) { intra(); inter(); }
      else { inter(); intra(); }
      return b.take((k - 1) / k * S + (N - 1) / N * (S / k));
    }
    case sim::CollOp::all_to_all:
      // Direct pairwise exchange, all at once: α + (n−1)/n·S / B_eff.
      for (std::size_t i = 0; i < devices.size(); ++i)
        for (std::size_t j = 0; j < devices.size(); ++j)
          if (i != j) b.add_flow(devices[i], devices[j], S / n, i);
      b.end_phase(1);
      return b.take((n - 1) / n * S);
    case sim::CollOp::broadcast:
      // Pipelined chain from devices[0]: with infinitely small chunks each member
      // relays while receiving, so every hop carries S concurrently: S/B + (n−1)α.
      // bytes_per_member is the mean over members ((n−1) of them send S).
      b.ring(devices, S, /*closed=*/false);
      b.end_phase(steps);
      return b.take((n - 1) / n * S);
  }
  throw std::invalid_argument("planner: unknown collective");
}

// NCCL's algorithms (CollectiveCostModel::nccl_algorithms); see collective_costs.hpp.
sim::CommPlan Planner::build_nccl_collective(std::span<const std::int32_t> devices, sim::CollOp op, double S) const {
  const auto n = static_cast<double>(devices.size());
  PlanBuilder b(cluster_, costs_);
  if (devices.size() < 2 || S == 0) return b.take(0);  // nothing to move: free
  switch (op) {
    case sim::CollOp::all_reduce:
      return nccl_all_reduce(devices, S).first;
    case sim::CollOp::reduce_scatter:
    case sim::CollOp::all_gather:
      return nccl_ring(devices, node_groups(cluster_, devices), (n - 1) / n * S, 1);
    case sim::CollOp::all_to_all:
      // Direct pairwise exchange, all at once: F + α + (n−1)/n·S / B_eff.
      for (std::size_t i = 0; i < devices.size(); ++i)
        for (std::size_t j = 0; j < devices.size(); ++j)
          if (i != j) b.add_flow(devices[i], devices[j], S / n, i);
      b.end_phase(1);
      return b.take((n - 1) / n * S, costs_.fixed_cost);
    case sim::CollOp::broadcast: {
      // Pipelined chain from devices[0]: F + S/B_eff + the sum of its n−1 hop steps.
      const auto lat = b.ring(devices, S, /*closed=*/false);
      b.end_phase(lat.sum);
      return b.take((n - 1) / n * S, costs_.fixed_cost);
    }
  }
  throw std::invalid_argument("planner: unknown collective");
}

sim::CommPlan Planner::nccl_ring(std::span<const std::int32_t> devices,
                                 const std::vector<std::vector<std::int32_t>>& per_node, double bytes,
                                 std::int64_t passes) const {
  PlanBuilder b(cluster_, costs_);
  sim::Time steps;
  // Several nodes: per_node says so when it splits them evenly; otherwise ask the devices.
  const int first_node = cluster_.nvlink_domain_of_gpu(devices.front());
  const bool multi_node = !per_node.empty() || std::any_of(devices.begin(), devices.end(), [&](std::int32_t d) {
                            return cluster_.nvlink_domain_of_gpu(d) != first_node;
                          });
  const sim::Time floor = multi_node ? costs_.multi_node_ring_step : sim::Time::zero();
  if (per_node.empty()) {  // one node, or uneven nodes: one ring in the given order
    steps = b.ring(devices, bytes, true, floor).steps();
  } else {
    // One channel per member of a node (each its NIC's rail), as NCCL's ring search
    // finds on a node of k GPUs and k NICs; NCCL never runs more than MAXCHANNELS of
    // them, so a larger NVLink domain leaves the NICs of its last members idle.
    const std::size_t channels = std::min(per_node.front().size(), kNcclMaxChannels);
    for (std::size_t c = 0; c < channels; ++c)
      steps = std::max(steps, b.ring(channel_order(per_node, c), bytes / static_cast<double>(channels), true, floor).steps());
  }
  b.end_phase(steps * passes);
  return b.take(bytes, costs_.fixed_cost);
}

sim::CommPlan Planner::nccl_tree_all_reduce(const std::vector<std::vector<std::int32_t>>& per_node, double S,
                                            double bytes_per_member) const {
  // NCCL's double binary tree over the nodes, a chain inside each node, pipelined:
  // every rank's links carry 2S/t (t = tree_bandwidth_factor), the inter-node share
  // split over the k rails. Flows: per node a ring over its members (each NVLink
  // port once) and per rail a ring over the nodes (each NIC once per direction),
  // all in one phase. Latency 2((k−1)α_intra + ⌈log2 N⌉α_inter), as NCCL's tuner.
  PlanBuilder b(cluster_, costs_);
  const std::size_t k = per_node.front().size(), N = per_node.size();
  const double t = costs_.tree_bandwidth_factor;
  sim::Time alpha_intra, alpha_inter;
  if (k > 1)
    for (const auto& members : per_node) alpha_intra = std::max(alpha_intra, b.ring(members, 2 * S / t).max);
  std::vector<std::int32_t> rail(N);
  for (std::size_t j = 0; j < k; ++j) {
    for (std::size_t m = 0; m < N; ++m) rail[m] = per_node[m][j];
    alpha_inter = std::max(alpha_inter, b.ring(rail, 2 * S / (static_cast<double>(k) * t)).max);
  }
  std::int64_t depth = 0;
  while ((std::size_t{1} << depth) < N) ++depth;
  b.end_phase((alpha_intra * static_cast<std::int64_t>(k - 1) + alpha_inter * depth) * 2);
  return b.take(bytes_per_member, costs_.fixed_cost);
}

std::pair<sim::CommPlan, bool> Planner::nccl_all_reduce(std::span<const std::int32_t> devices, double S) const {
  const auto n = static_cast<double>(devices.size());
  if (devices.size() < 2 || S == 0) return {PlanBuilder(cluster_, costs_).take(0), false};
  const auto per_node = node_groups(cluster_, devices);
  const double moved = 2 * (n - 1) / n * S;  // what an all-reduce moves per member, any algorithm
  sim::CommPlan ring = nccl_ring(devices, per_node, moved, 2);
  if (!costs_.tree_all_reduce || per_node.empty()) return {std::move(ring), false};
  sim::CommPlan tree = nccl_tree_all_reduce(per_node, S, moved);
  // NCCL's tuner picks the algorithm its model predicts fastest; ties go to the ring.
  if (idle_network_seconds(cluster_, tree) < idle_network_seconds(cluster_, ring)) return {std::move(tree), true};
  return {std::move(ring), false};
}

const sim::CommPlan& Planner::transfer(std::int32_t src_device, std::int32_t dst_device, double bytes) {
  Key key{{src_device, dst_device}, 255, {bytes}};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  check_bytes(bytes);
  const std::int32_t pair[2] = {src_device, dst_device};
  if (src_device != dst_device) check_devices(cluster_, pair);
  PlanBuilder b(cluster_, costs_);
  b.add_flow(src_device, dst_device, bytes, 0);
  b.end_phase(1);  // latency = the route's latency
  return store(std::move(key), b.take(src_device == dst_device ? 0 : bytes));
}

const sim::CommPlan& Planner::all_to_all(std::span<const std::int32_t> devices, std::span<const double> bytes_matrix) {
  const std::size_t n = devices.size();
  if (bytes_matrix.size() != n * n)
    throw std::invalid_argument(
        fmt::format("planner: all_to_all bytes matrix has {} entries, expected {}×{}", bytes_matrix.size(), n, n));
  Key key{std::vector<std::int32_t>(devices.begin(), devices.end()), 254,
          std::vector<double>(bytes_matrix.begin(), bytes_matrix.end())};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  check_devices(cluster_, devices);
  PlanBuilder b(cluster_, costs_);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const double s = bytes_matrix[i * n + j];
      check_bytes(s);
      if (i == j || s == 0) continue;
      b.add_flow(devices[i], devices[j], s, i);
      total += s;
    }
  b.end_phase(1);
  return store(std::move(key), b.take(n ? total / static_cast<double>(n) : 0));
}

const sim::CommPlan& Planner::node_limited_all_to_all(std::span<const std::int32_t> devices, double pair_bytes,
                                                     const sim::NodeLimitedDispatch& dispatch) {
  check_bytes(pair_bytes);
  check_devices(cluster_, devices);
  const std::size_t n = devices.size();
  const auto per_node = node_groups(cluster_, devices);
  std::vector<double> m(n * n, 0.0);
  if (per_node.empty() || !dispatch.active() || per_node.size() >= dispatch.node_share.size()) {
    // One node, or unequal members per node: every pair directly, S/n each.
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j) m[i * n + j] = pair_bytes / static_cast<double>(n);
    return all_to_all(devices, m);
  }
  const std::size_t nodes = per_node.size(), k = per_node.front().size();
  const double q = dispatch.node_share[nodes];
  if (!(q >= 0 && q <= 1))
    throw std::invalid_argument(fmt::format("planner: node-limited dispatch share {} is not a probability", q));
  // Member index of (node, local index): where each device sits in `devices`.
  std::vector<std::size_t> node_of(n), local_of(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t a = 0; a < nodes; ++a)
      for (std::size_t l = 0; l < k; ++l)
        if (per_node[a][l] == devices[i]) node_of[i] = a, local_of[i] = l;
  const double token_bytes = pair_bytes / dispatch.top_k;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      if (node_of[i] == node_of[j]) m[i * n + j] = pair_bytes / static_cast<double>(k);
      else if (local_of[i] == local_of[j]) m[i * n + j] = token_bytes * q;
    }
  return all_to_all(devices, m);
}

}  // namespace ls::topo

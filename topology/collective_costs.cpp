// topology/collective_costs.cpp — the cost profiles and where their numbers come from.
//
// Sources (facts quoted by number; nothing copied):
//  [T] NCCL src/graph/tuning.cc (2.18–2.2x), the tuner's own model, Simple protocol
//      (large messages): baseLat 8.4 us per collective for ring and tree; hwLat per
//      ring step 3.4 us over NVLink, 5.7 us over PCIe, 14 us over the network (6.6 us
//      in NCCL 2.12), to which it adds the network's own latency; in a ring over
//      several nodes every step, those inside a node too, costs at least 3 × the
//      host's network overhead for Simple ("inter-node rings still have to launch
//      nsteps * net overhead"; getNetOverhead: 2 us on AMD x86 hosts, 1 us on Intel
//      and others; in the tuner from 2.18 to master 5067397c: the proxy thread that
//      posts each step is older, only its place in the model is new); the tree's bus
//      bandwidth is the ring's × 0.92 for all-reduce, and a tree all-reduce moves 2S
//      per rank (bus-to-algorithm bandwidth ratio 0.5).
//  [H] nccl-tests issue #212 (S. Jeaugey, NVIDIA, 2024): H100 NVLink 4 line rate
//      450 GB/s; "with the protocol overhead (~20 %)" NCCL reaches ~370 GB/s bus
//      bandwidth (ring all-reduce, or any non-all-reduce collective) on 8 GPUs.
//  [A] nccl-tests issue #175 (2023): 8× A100 SXM, one node, all_reduce_perf
//      232.5 GB/s bus bandwidth of NVLink 3's 300 GB/s; issue #149 reports ~200 GB/s
//      on another 8× A100 board (a lower bound of the range).
//  [N] nccl-tests issue #290 (D. Addison, NVIDIA, 2025): NDR 400 Gb/s (50 GB/s)
//      InfiniBand, "you should see 46–48 GB/s per NIC".
//  [R] NCCL issue #812 (D. Addison, NVIDIA, 2023): DGX A100 with 8× 200 Gb/s HDR
//      InfiniBand measures 192 GB/s all-reduce bus bandwidth across nodes (of 200).
//  [B] NCCL issue #1807 (2025): 8× B200 in one node, all_reduce_perf "830+" GB/s bus
//      bandwidth of NVLink 5's 900 GB/s per direction.
//  [M] coreweave/nccl-tests pull request #43 (2025), a full GB200 NVL72 rack (72 GPUs,
//      18 trays of 4, one multi-node NVLink domain): all_reduce_perf 835–847 GB/s bus
//      bandwidth at 4–8 GB messages (of 900 GB/s per direction).
#include "topology/collective_costs.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace ls::topo {
namespace {

void check_fraction(double value, std::string_view what) {
  if (!(value > 0.0 && value <= 1.0))
    throw std::invalid_argument(fmt::format("collective costs: {} must be in (0, 1] (got {})", what, value));
}

void check_latency(sim::Time value, std::string_view what) {
  if (value < sim::Time::zero() || value > sim::ms(1))
    throw std::invalid_argument(fmt::format("collective costs: {} must be in [0, 1 ms] (got {})", what, value));
}

/// What both DGX profiles share: NCCL's per-step latencies do not depend on the GPU
/// generation in [T], and PCIe / Ethernet are not measured in the sources above.
CollectiveCostModel nccl_common() {
  CollectiveCostModel m;
  m.nccl_algorithms = true;
  m.tree_all_reduce = true;
  // [T] baseLat 8.4 us, plus ~2 us of kernel launch not hidden behind the previous
  // kernel (a collective waits on the stream). Range seen in practice: 10–20 us.
  m.fixed_cost = sim::us(10);
  // [T] tree bus bandwidth = 0.92 × ring bus bandwidth.
  m.tree_bandwidth_factor = 0.92;
  // [T] 3.4 us per NVLink ring step (an NVSwitch port is an NVLink).
  m[LinkKind::nvlink].step_latency = sim::ps(3'400'000);
  m[LinkKind::nvswitch].step_latency = sim::ps(3'400'000);
  // [T] 5.7 us per PCIe ring step. Efficiency: an assumption, not a measurement:
  // TLP headers and flow control leave ~80 % of a x16 link to DMA (range 0.7–0.9).
  m[LinkKind::pcie] = {0.80, sim::ps(5'700'000)};
  // [T] 6.6–14 us of NCCL's network step plus the fabric's own ~1–3 us: 8 us for
  // InfiniBand. RoCE: 10 us and 0.90, assumptions (a slower, lossless-Ethernet
  // handshake and larger headers than IB; range 0.85–0.95).
  m[LinkKind::infiniband].step_latency = sim::us(8);
  m[LinkKind::ethernet] = {0.90, sim::us(10)};
  // [T] 3 × 1 us: an Intel host (DGX H100 and DGX B200: Xeon) or Grace (NCCL's 1 us
  // for non-x86), under the NVLink step's 3.4 us, so it changes nothing there.
  m.multi_node_ring_step = sim::us(3);
  return m;
}

}  // namespace

void CollectiveCostModel::validate() const {
  check_latency(fixed_cost, "fixed_cost");
  check_latency(multi_node_ring_step, "multi_node_ring_step");
  for (std::size_t i = 0; i < per_kind.size(); ++i) {
    const std::string_view kind = kLinkKindNames[i];
    check_fraction(per_kind[i].efficiency, fmt::format("{}.efficiency", kind));
    check_latency(per_kind[i].step_latency, fmt::format("{}.step_latency", kind));
  }
  check_fraction(tree_bandwidth_factor, "tree_bandwidth_factor");
}

CollectiveCostModel CollectiveCostModel::wire_only() { return CollectiveCostModel{}; }

CollectiveCostModel default_collective_costs() {
  CollectiveCostModel m = nccl_common();
  // [H] 370 / 450 GB/s.
  m[LinkKind::nvlink].efficiency = 370.0 / 450.0;
  m[LinkKind::nvswitch].efficiency = 370.0 / 450.0;
  // [N] 46 / 50 GB/s (the low end of 46–48).
  m[LinkKind::infiniband].efficiency = 46.0 / 50.0;
  return m;
}

CollectiveCostModel blackwell_collective_costs() {
  CollectiveCostModel m = nccl_common();
  // [B] 830 / 900 GB/s inside a node; [M] 835 / 900 across the trays of an NVL72 rack:
  // the same fraction, so one NVLink entry serves DGX B200 and the NVL72 fabric (whose
  // GPU↔switch links are NVLink too, kind `nvlink`). The per-step latency stays [T]'s
  // NVLink 3.4 us: the NVLink Switch trays add a switch hop of ~100 ns, below it.
  m[LinkKind::nvlink].efficiency = 830.0 / 900.0;
  m[LinkKind::nvswitch].efficiency = 830.0 / 900.0;
  // ConnectX-7 (400 Gb/s) or ConnectX-8 (800 Gb/s) InfiniBand: no measurement here of
  // XDR; [N]'s NDR fraction, 46 / 50, derived (same NCCL network path).
  m[LinkKind::infiniband].efficiency = 46.0 / 50.0;
  return m;
}

CollectiveCostModel dgx_a100_collective_costs() {
  CollectiveCostModel m = nccl_common();
  // [A] 232.5 / 300 GB/s.
  m[LinkKind::nvlink].efficiency = 232.5 / 300.0;
  m[LinkKind::nvswitch].efficiency = 232.5 / 300.0;
  // [R] 192 / 200 GB/s.
  m[LinkKind::infiniband].efficiency = 192.0 / 200.0;
  // [T] 3 × 2 us: DGX A100's hosts are AMD EPYC 7742 (NVIDIA DGX A100 User Guide),
  // as are Azure NDm A100 v4's (EPYC 7V12): a multi-node ring's NVLink steps cost
  // 6 us, not 3.4.
  m.multi_node_ring_step = sim::us(6);
  return m;
}

}  // namespace ls::topo

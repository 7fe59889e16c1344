// topology/cluster_spec.hpp — the cluster as the scenario describes it (plain data, no Boost).
//
// Filled by the scenario loader (tools/scenario), consumed by topology::build_cluster.
// Units: bandwidth in bytes/s (per direction), latency as sim::Time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/time.hpp"

namespace ls::topo {

/// One class of link. `kind`: nvlink | nvswitch | pcie | infiniband | ethernet.
struct LinkSpec {
  std::string kind;
  double bandwidth_Bps = 0;   // per GPU (intra) or per NIC (inter), per direction
  sim::Time latency;
};

struct InterNodeSpec : LinkSpec {
  int nics_per_node = 0;            // 0: one per GPU (rails)
  std::string fabric = "rail-optimized";  // rail-optimized | fat-tree
  double oversubscription = 1.0;    // leaf downlink : uplink capacity
  int nodes_per_leaf = 16;          // leaf radix towards nodes (per rail for rail-optimized)
  int spines = 0;                   // 0: derived (one per uplink port needed)
  double pcie_bandwidth_Bps = 64e9; // GPU <-> NIC hop (PCIe Gen5 x16)
  /// How a flow between two leaves picks its spine: "dmodk" (by destination, as an
  /// InfiniBand subnet manager's fat-tree routing programs the switches), "ecmp" (by
  /// a hash of the flow, as Ethernet switches do); empty: dmodk on infiniband, ecmp
  /// on ethernet. See fabric.cpp, structural_path().
  std::string routing = {};
  /// Whether flows between leaves pick their spine by destination: as `routing` says,
  /// or, unset, as the link kind's switches do (InfiniBand by destination, others by hash).
  bool routes_by_destination() const { return routing.empty() ? kind == "infiniband" : routing == "dmodk"; }
  /// NCCL's PXN on rail-optimized fabrics: a point-to-point transfer to a GPU on
  /// another rail crosses NVLink to the sender-node GPU on the receiver's rail and
  /// leaves by that GPU's NIC, so it stays on one rail. See Cluster::pxn_relay.
  bool pxn = true;
};

struct GraphVertexSpec {
  std::string name;   // GPUs must be named node<N>.gpu<G>
  std::string kind;   // gpu | nvswitch | pcie-switch | nic | switch
};

struct GraphLinkSpec {
  std::string from, to;
  std::string kind;   // nvlink | pcie | infiniband | ethernet
  double bandwidth_Bps = 0;
  sim::Time latency;
  bool duplex = true;
};

struct ExplicitGraphSpec {
  std::vector<GraphVertexSpec> vertices;
  std::vector<GraphLinkSpec> links;
};

struct ClusterSpec {
  int nodes = 1;
  int gpus_per_node = 8;
  /// GPUs that share one NVLink switch fabric (an NVLink domain): consecutive nodes,
  /// nvlink_domain / gpus_per_node of them, hang off one NVSwitch fabric and talk over it,
  /// never over the network (GB200/GB300 NVL72: 18 trays of 4 GPUs, 72). A multiple of
  /// gpus_per_node; the last domain may be partial. 0 (unset) or gpus_per_node: one
  /// domain per node, the intra-node switch. Generated topologies only.
  int nvlink_domain = 0;
  LinkSpec intra{"nvswitch", 300e9, sim::us(1)};
  InterNodeSpec inter{{"infiniband", 25e9, sim::us(3)}};  // 200 Gb/s HDR per GPU
  std::optional<ExplicitGraphSpec> graph;  // replaces the generator keys when set
  bool ideal_network = false;              // `network: ideal`: communication is free
  /// Links that are down (a pulled cable, a dead port, a failed rail): kept in the
  /// link table with their ids, but no route uses them. Each entry is a directed link
  /// name as Cluster names it ("node3.nic5->leaf5", "leaf0->spine1", an explicit
  /// graph's "a->b#1"), or "a<->b" for both directions of a duplex cable. Unknown
  /// names, and removals that leave two GPUs unable to reach each other, make
  /// Cluster::build throw std::invalid_argument. See cluster.hpp, "Down links".
  std::vector<std::string> down_links;
};

}  // namespace ls::topo

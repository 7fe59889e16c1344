// workloads/build/program_totals.hpp — what a built program adds up to before it runs: its
// FLOPs and each stage's activation peak, and the cluster it runs on once dead links
// are taken out of routing. `check`, the memory remedies, the search's pruning and the
// time-range check all read a program this way, without simulating it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/program.hpp"
#include "topology/cluster.hpp"
#include "topology/cluster_spec.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// One step of a program added up over its ops, as the engine accounts them:
/// expert work scaled by each rank's expert load, memory deltas applied in compute
/// stream order (the only stream whose ops carry memory).
struct ProgramTotals {
  double model_flops = 0;                       // whole cluster
  double hardware_flops = 0;                    // whole cluster
  std::vector<double> activation_peak_bytes;    // per stage: peak of the running memory delta
};
ProgramTotals program_totals(const sim::Program& prog);
/// A rank as its FLOPs are counted: its stage and its expert load (RankInfo's).
struct RankWork {
  std::int32_t stage = 0;
  double work_scale = 1.0;
};
/// The same with the ranks given apart from the program (whose own are not read), in
/// rank order: the search's estimate keeps a layout's ranks once for all its candidates.
ProgramTotals program_totals(const sim::Program& prog, const std::vector<RankWork>& ranks);

/// The memory peak per device: over the stages, the static state and buffers
/// (`static_memory`, BuiltProgram's) plus the stage's activation peak (program_totals's,
/// or one walked at another micro-batch count).
double device_peak_bytes(const std::vector<MemoryTerms>& static_memory, const std::vector<double>& activation_peaks);

/// The scenario's cluster with every link perturbed to bandwidth_factor 0 moved into
/// down_links: a dead link is taken out of routing (ECMP / PXN relays carry its
/// traffic, see topology/cluster.hpp "Down links") rather than given zero capacity,
/// under which its flows would never finish. Other factors keep scaling capacity.
topo::ClusterSpec effective_cluster(const Scenario& s);

/// Every link's capacity as the engine's network holds it: its bandwidth times its
/// perturbations.links bandwidth_factor (a down link, out of routing, keeps its nominal
/// figure). Indexed by LinkId of `cluster` (built from effective_cluster(s)). Throws
/// std::invalid_argument for a perturbed link the cluster does not have (resolve()
/// reports those first).
std::vector<double> link_capacities(const Scenario& s, const topo::Cluster& cluster);

}  // namespace ls::wl

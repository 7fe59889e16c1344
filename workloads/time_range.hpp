// workloads/time_range.hpp — a scenario whose step cannot be represented in sim::Time
// (int64 picoseconds, about 106 days) is a located error at load time, not an
// unlocated failure half-way through the simulation.
//
// The check runs last in resolve(), on the built step program (workloads/
// program_builder.hpp), and uses a LOWER bound of the simulated step that follows
// from the engine's own semantics (sim/program.hpp, sim/network.hpp):
//   * streams: the ops of one stream of one rank run one at a time, so the step is
//     at least, for every rank and stream, the sum of its compute ops' durations
//     times the rank's compute factor (perturbations.devices compute_slowdown, the
//     MoE expert load for the ops it scales) plus the phase latencies of its
//     collectives and transfers (a phase ends its latency after its last flow);
//   * links: max-min fairness never gives a link more than its capacity, so the step
//     is at least, for every link, the bytes the step's flows carry over it (every
//     collective of every group and every pipeline transfer, planned by the same
//     topo::Planner the engine uses) over its bandwidth × bandwidth_factor.
// Weighted (skewed) all-to-alls and the overlap of streams are left out, which keeps
// it a lower bound. With jitter (perturbations.jitter) each term is multiplied by the smallest
// factor the engine's lognormal can draw (its Box–Muller z is bounded by
// sqrt(2·ln 2^53) ≈ 8.57), so the bound still holds. simulation.steps steps run back to
// back on one clock: the run is at least steps × the bound.
//
// "Most responsible" key (counterfactual): every candidate key whose value is worse
// than a reference — the GPU preset's figure (peak_tflops, fp8_tflops,
// hbm_bandwidth, nvlink/nic bandwidth), the GPU's link rate for a cluster link
// bandwidth, the cluster default for a latency, the PCIe hop and the fabric's
// oversubscription, the model preset's figure (seq_len,
// layers, hidden, ffn_hidden, vocab), 1 for a bandwidth_factor, a compute_slowdown,
// microbatches, microbatch_size and simulation.steps — is set back to its reference alone, and the bound recomputed;
// the key whose reset gives the smallest bound is blamed (ties: the first in the order
// above). Counts of work (microbatches, microbatch_size, steps) are tried only when no
// value with a published reference lowers the bound: 16 micro-batches are not "more
// responsible" than a GPU 10^7 times slower because one micro-batch would be faster.
// When no reset lowers it, the key behind the largest term is blamed (the link
// class's bandwidth, the cluster for latencies, the model — or a GPU given without a
// preset — for compute). Cost: O(stage ops + ranks ×
// distinct collectives + plan sizes) for a valid scenario (one program build); on the
// error path once more per candidate.
#pragma once

#include <string>
#include <vector>

#include "workloads/resolve.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// A lower bound of one simulated step of a resolved scenario, and what sets it.
struct StepBound {
  double seconds = 0;  // +infinity when one op alone is outside the range
  std::string what;    // e.g. "compute on node0.gpu3", "link node1.nic0->leaf0: 4.4e+09 bytes at 125 B/s"
};

/// The bound of `s` (resolved content; a Scenario so that a counterfactual copy can be
/// bounded too). Throws what build_program throws, except sim::TimeRangeError, which
/// gives an infinite bound.
StepBound step_lower_bound(const Scenario& s);

/// Where the cluster's link rates came from (resolve() derives unset ones from the GPU).
struct LinkRateOrigin {
  bool intra_from_gpu = false;  // cluster.intra_node.bandwidth unset: gpu.nvlink_bandwidth
  bool inter_from_gpu = false;  // cluster.inter_node.bandwidth unset: gpu.nic_bandwidth
};

/// resolve()'s last check: one issue, blamed as above, when simulation.steps × the
/// bound reaches sim::kMaxTimeSeconds. Other exceptions of the program build are left
/// to the simulation (they were never this check's to report).
void check_time_range(const Scenario& s, const LinkRateOrigin& origin, std::vector<ScenarioIssue>& issues);

}  // namespace ls::wl

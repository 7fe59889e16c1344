// workloads/build/checkpoint.hpp — what saving and restoring a checkpoint costs a layout,
// and what failures cost a run (checkpoint.*, failures.* keys).
//
// Content: every trained parameter's weights, fp32 master copy and optimizer moments
// (gradients are not saved; frozen weights are not saved either: they are in the base
// model's checkpoint, read back on restore). Closed form:
//   bytes_total = trained parameters × (weights + master + optimizer bytes per parameter)
// (14 B/param with bf16 weights, fp32 master and Adam's two fp32 moments).
// sharded: every rank writes its own file, replicated bytes spread evenly over the
// replicas (Megatron-Core distributed checkpointing with fully parallel save, PyTorch
// DCP's de-duplication): a rank of stage s writes (dense/dp + experts/(dp/ep)) of its
// trained state, so shards = dp·tp·pp. consolidated: one file written by one rank.
//
// Time: aggregate storage bandwidth A, per-node P (one derives the other over the
// cluster's nodes when only one is given). sharded save = max(bytes_total / A, a node's
// bytes / P) with a node's bytes = gpus per node × the largest shard; consolidated save =
// bytes_total / min(A, P). Synchronous: the step stalls for the save. Asynchronous: it
// stalls for the GPU→host copy (the rank's bytes over the GPU's PCIe link) and holds the
// node's bytes in pinned host memory while the write proceeds; a write longer than the
// interval stalls the next checkpoint by the difference. Restore reads the checkpoint
// plus the frozen weights at the same bandwidth.
// Overhead: stall per checkpoint / interval. Failures (Young 1974, "A first order
// approximation to the optimum checkpoint interval"; Daly 2006): MTBF of the cluster
// M = mtbf_per_gpu / GPUs, optimal interval τ* = √(2·C·M) with C the stall per
// checkpoint, goodput(τ) = 1 − C/τ − (τ/2 + R)/M (first order, ≥ 0) with R the restore.
// Cost: O(layers).
#pragma once

#include <vector>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

struct CheckpointReport {
  bool consolidated = false, async = false;
  // Bytes of one checkpoint, whole model.
  double bytes_total = 0, bytes_weights = 0, bytes_master = 0, bytes_optimizer = 0;
  int shards = 0;
  double bytes_per_rank_max = 0, bytes_per_rank_min = 0, bytes_per_rank_mean = 0;
  std::vector<double> shard_bytes_per_stage;  // sharded: one rank's file, per pipeline stage
  double storage_Bps = 0, storage_per_node_Bps = 0;
  double interval_s = 0, interval_steps = 0;
  double save_s = 0;                 // the write
  double copy_s = 0;                 // async: GPU→host copy (the stall)
  double host_bytes_per_node = 0;    // async: pinned host memory
  double stall_s = 0;                // per checkpoint, what the step waits
  double restore_bytes = 0, restore_s = 0;
  double overhead_fraction = 0;      // stall / (interval + stall): the share of wall-clock time stalled
  // failures (when failures.mtbf_per_gpu is given)
  bool failures = false;
  double mtbf_cluster_s = 0, optimal_interval_s = 0, goodput = 0, goodput_at_optimal = 0;
};

/// The checkpoint report of a resolved scenario with checkpoint.enabled, for a step of
/// `step_time_s` seconds. Throws std::invalid_argument when checkpoint is not enabled.
CheckpointReport checkpoint_report(const Scenario& s, double step_time_s);

struct Result;
/// Fills r's trained/frozen parameter counts and, when s has a checkpoint section, its
/// checkpoint report at r.step_time_s. O(layers).
void fold_training(Result& r, const Scenario& s);

/// Young's optimal interval √(2·C·M) and the first-order goodput 1 − C/τ − (τ/2 + R)/M
/// (clamped to [0, 1]). O(1).
double young_daly_interval(double checkpoint_s, double mtbf_s);
double expected_goodput(double interval_s, double checkpoint_s, double restore_s, double mtbf_s);

}  // namespace ls::wl

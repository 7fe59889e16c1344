// workloads/build/checkpoint.cpp — checkpoint bytes, save and restore times, failures (see
// checkpoint.hpp).
#include "workloads/build/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "workloads/build/result.hpp"
#include "workloads/build/stage_layers.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/cost/training_method.hpp"
#include "workloads/model/layout.hpp"

namespace ls::wl {

double young_daly_interval(double checkpoint_s, double mtbf_s) { return std::sqrt(2 * checkpoint_s * mtbf_s); }

double expected_goodput(double interval_s, double checkpoint_s, double restore_s, double mtbf_s) {
  if (interval_s <= 0 || mtbf_s <= 0) return 0;
  const double g = 1 - checkpoint_s / interval_s - (interval_s / 2 + restore_s) / mtbf_s;
  return std::clamp(g, 0.0, 1.0);
}

CheckpointReport checkpoint_report(const Scenario& s, double step_time_s) {
  const auto& c = s.checkpoint;
  if (!c.enabled) throw std::invalid_argument("checkpoint_report: the scenario has no checkpoint section");
  const auto& L = s.layout;
  const auto& pr = s.precision;
  CheckpointReport r;
  r.consolidated = c.consolidated;
  r.async = c.async;

  // Bytes: per pipeline stage, one rank's share of the trained state.
  const DeviceParams params(s);
  const StageLayers layers = stage_layers(s);
  const double per_param = pr.weights + std::max(0, pr.master) + pr.optimizer;
  const int dp = std::max(1, L.dp), edp = expert_dp_of(L);
  double trained_device_sum = 0;  // Σ over stages of one tp rank's trained parameters × tp
  for (int st = 0; st < L.pp; ++st) {
    const StageParams sp = stage_params(s, params, layers.chunks[static_cast<std::size_t>(st)], st);
    const double rank_params = sp.trained_dense / dp + sp.trained_experts / edp;
    r.shard_bytes_per_stage.push_back(rank_params * per_param);
    trained_device_sum += sp.trained_dense * L.tp + sp.trained_experts * L.ep * expert_tp_of(L);
  }
  // Whole-model count: a LoRA factor replicated over tp (A of a column-parallel target)
  // is held by every tp rank but saved once, so the per-rank shards are scaled to it.
  const double trained = parameter_split(s).trained;
  if (trained_device_sum > 0)
    for (double& b : r.shard_bytes_per_stage) b *= trained / trained_device_sum;
  r.bytes_weights = trained * pr.weights;
  r.bytes_master = trained * std::max(0, pr.master);
  r.bytes_optimizer = trained * pr.optimizer;
  r.bytes_total = r.bytes_weights + r.bytes_master + r.bytes_optimizer;
  const int devices = dp * L.tp * L.pp;
  if (c.consolidated) {
    r.shards = 1;
    r.bytes_per_rank_max = r.bytes_total;
    r.bytes_per_rank_min = 0;
    r.bytes_per_rank_mean = r.bytes_total / devices;
  } else {
    r.shards = devices;
    const auto [lo, hi] = std::minmax_element(r.shard_bytes_per_stage.begin(), r.shard_bytes_per_stage.end());
    r.bytes_per_rank_min = *lo;
    r.bytes_per_rank_max = *hi;
    r.bytes_per_rank_mean = r.bytes_total / devices;
  }

  // Bandwidths: one of aggregate / per node derives the other.
  const int nodes = std::max(1, s.cluster.nodes);
  r.storage_Bps = c.storage_Bps > 0 ? c.storage_Bps : c.storage_per_node_Bps * nodes;
  r.storage_per_node_Bps = c.storage_per_node_Bps > 0 ? c.storage_per_node_Bps : c.storage_Bps / nodes;
  const int per_node = std::min(devices, std::max(1, s.cluster.gpus_per_node));
  const double node_bytes = c.consolidated ? r.bytes_total : per_node * r.bytes_per_rank_max;
  r.save_s = c.consolidated ? r.bytes_total / std::min(r.storage_Bps, r.storage_per_node_Bps)
                            : std::max(r.bytes_total / r.storage_Bps, node_bytes / r.storage_per_node_Bps);

  // Interval.
  if (c.every_steps > 0) {
    r.interval_steps = c.every_steps;
    r.interval_s = c.every_steps * step_time_s;
  } else {
    r.interval_s = c.every_s;
    r.interval_steps = step_time_s > 0 ? c.every_s / step_time_s : 0;
  }

  // Stall per checkpoint.
  if (c.async) {
    // Each rank copies its own bytes over its PCIe link (the consolidated writer, all of them).
    r.copy_s = r.bytes_per_rank_max / s.cluster.inter.pcie_bandwidth_Bps;
    r.host_bytes_per_node = node_bytes;
    r.stall_s = r.copy_s + std::max(0.0, r.save_s - r.interval_s);
  } else {
    r.stall_s = r.save_s;
  }
  // The share of wall-clock time the stalls take: a fraction even when a save takes
  // longer than the training between two (stall / interval, the goodput's C/τ term,
  // would exceed 1 there).
  r.overhead_fraction = r.interval_s + r.stall_s > 0 ? r.stall_s / (r.interval_s + r.stall_s) : 0;

  // Restore: the checkpoint plus the frozen base weights.
  const ParameterSplit split = parameter_split(s);
  r.restore_bytes = r.bytes_total + split.frozen * pr.weights;
  r.restore_s = c.consolidated ? r.restore_bytes / std::min(r.storage_Bps, r.storage_per_node_Bps)
                               : r.restore_bytes / r.storage_Bps;

  if (s.failures.mtbf_per_gpu_s > 0) {
    r.failures = true;
    r.mtbf_cluster_s = s.failures.mtbf_per_gpu_s / devices;
    r.optimal_interval_s = young_daly_interval(r.stall_s, r.mtbf_cluster_s);
    r.goodput = expected_goodput(r.interval_s, r.stall_s, r.restore_s, r.mtbf_cluster_s);
    r.goodput_at_optimal = expected_goodput(r.optimal_interval_s, r.stall_s, r.restore_s, r.mtbf_cluster_s);
  }
  return r;
}

void fold_training(Result& r, const Scenario& s) {
  const ParameterSplit split = parameter_split(s);
  r.training_method = training_method_name(s.training.method);
  r.trained_parameters = split.trained;
  r.frozen_parameters = split.frozen;
  r.adapter_parameters = split.adapters;
  r.has_checkpoint = s.checkpoint.enabled;
  if (r.has_checkpoint) r.checkpoint = checkpoint_report(s, r.step_time_s);
}

}  // namespace ls::wl

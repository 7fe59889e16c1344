// tools/study/reshard.hpp — `layoutsim reshard FROM.yaml TO.yaml`: what moving a sharded
// checkpoint from one layout of a model to another costs.
//
// Model of the checkpoint (the sharded format of workloads/build/checkpoint.hpp): every
// parameter group — each layer, the embedding, the LM head — lives on the pipeline
// stage that holds it; its trained state (weights + master + optimizer bytes per
// parameter, frozen weights excluded) is split into tp equal slices and each slice into
// dp equal pieces, one per data-parallel rank (fully parallel save): source shard
// (stage s, tp rank i, dp rank k) holds piece i·dp + k of t·dp of every group of stage s.
// Tensor-parallel slices are taken as contiguous ranges of a group's flattened state:
// byte counts are exact for splits along one dimension, which is how Megatron splits
// every linear (columns or rows).
//
// A target rank (stage s', tp j, dp k') reads, for every group of s': the weights of
// its tp slice j (of its dp piece only under ZeRO-3) and the master and optimizer state
// of its tp slice (of its dp piece under ZeRO ≥ 1). Bytes from a source shard = the
// overlap of the ranges × the group's parameters × bytes per parameter.
// Closed form: tp 2 → 4 with dp 1 and the same stages: every target rank reads exactly
// its own shard, half of one source shard: bytes_moved = the checkpoint's bytes.
// Time: with a storage bandwidth (TO's checkpoint section, else FROM's) max(total / A,
// a node's reads / P); without one, peer to peer over the network: the largest rank's
// reads over one GPU's NIC share. Cost: O(ranks × groups × overlapping shards).
#pragma once

#include <string>
#include <vector>

#include "workloads/resolve.hpp"

namespace ls::tools {

struct ReshardRead {
  std::string source;  // "s<stage>.t<tp>.d<dp>"
  double bytes = 0;
};

struct ReshardRank {
  int stage = 0, tp = 0, dp = 0;
  double bytes = 0;
  std::vector<ReshardRead> reads;  // by source shard, in shard order
};

struct ReshardPlan {
  std::string from, to;          // scenario names
  std::string kind;              // "unchanged", "re-slicing", "moves layers between stages"
  int source_shards = 0, target_ranks = 0;
  int layers_moved = 0;          // layers whose stage changes
  double checkpoint_bytes = 0;   // trained state, whole model
  double bytes_moved = 0;        // sum of every target rank's reads
  double max_rank_read_bytes = 0;
  double time_s = 0;
  std::string medium;            // "storage" or "network"
  double bandwidth_Bps = 0;      // the aggregate (storage) or per-GPU NIC rate (network)
  std::vector<ReshardRank> ranks;
};

/// The migration from `from` to `to`. Throws ScenarioError (located in `to_yaml`'s
/// text, reported as `to_source`) when the models, the training methods or the
/// precisions differ, or when either layout uses ep > 1 (not modelled).
ReshardPlan plan_reshard(const wl::Scenario& from, const wl::Scenario& to, std::string_view to_yaml, const std::string& to_source);

/// The summary table (the first 16 target ranks; the JSON has all).
std::string format_reshard(const ReshardPlan& p);
/// {from, to, kind, layers_moved, source_shards, target_ranks, checkpoint_bytes,
///  bytes_moved, max_rank_read_bytes, time_s, medium, bandwidth_bytes_per_s,
///  ranks: [{stage, tp, dp, bytes, reads: [{source, bytes}]}]}, pretty-printed.
std::string reshard_json(const ReshardPlan& p);

}  // namespace ls::tools

namespace ls::tools {
/// The `reshard` command: loads both files (ScenarioError on a bad one), plans, prints
/// the table (or the JSON when json_path is "-"), writes the JSON to json_path when
/// given. Returns the exit code (0).
int reshard_command(const std::string& from_path, const std::string& to_path, const std::string& json_path);
}  // namespace ls::tools

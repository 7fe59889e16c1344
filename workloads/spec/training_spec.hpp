// workloads/spec/training_spec.hpp — plain data for what is trained (training.method,
// training.lora, training.frozen), how checkpoints are written (checkpoint.*) and how
// often GPUs fail (failures.*). Included by scenario_spec.hpp; the arithmetic lives in
// training_method.hpp and checkpoint.hpp. Units: bytes/s, seconds.
#pragma once

#include <string>
#include <vector>

namespace ls::wl {

enum class TrainingMethod { pretrain, full_finetune, lora };

/// Low-rank adapters (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language
/// Models"): W x + (alpha/r)·B A x on each target linear, A: in×r, B: r×out.
struct LoraSpec {
  bool given = false;  // a `training.lora` map was written (it needs method: lora)
  int rank = 16;
  double alpha = 32;   // scaling alpha/rank: no cost, reported only
  double dropout = 0;  // on the adapter input: one dropout kernel and a kept mask per target
  std::vector<std::string> targets{"qkv", "proj", "fc1", "fc2"};
};

struct TrainingSpec {
  TrainingMethod method = TrainingMethod::pretrain;
  LoraSpec lora;
  /// Parts whose weights are not trained: embedding, head, attention, mlp, norms, layers
  /// (attention + mlp + norms of every layer). Under lora the whole base model is frozen.
  std::vector<std::string> frozen;
  /// The whole run (training_cost.hpp): tokens to train on and the GPU-hour price.
  double tokens = 0;            // 0: not given
  double gpu_hour_price = -1;   // < 0: not given
  std::string currency;         // "USD", as written after the price
};

struct CheckpointSpec {
  bool enabled = false;          // a `checkpoint:` section was given
  int every_steps = 0;           // "500 steps"; 0: use every_s
  double every_s = 0;            // "30 min"
  double storage_Bps = 0;        // aggregate storage bandwidth; 0: unset (per-node × nodes)
  double storage_per_node_Bps = 0;  // per-node storage bandwidth; 0: unset (aggregate / nodes)
  bool consolidated = false;     // false: sharded (one file per writing rank)
  bool async = false;            // copy to host memory, write in the background
};

struct FailuresSpec {
  double mtbf_per_gpu_s = 0;  // 0: no failure model
};

}  // namespace ls::wl

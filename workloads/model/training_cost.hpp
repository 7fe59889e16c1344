// workloads/model/training_cost.hpp — the whole training run from one simulated step:
// how long training on `training.tokens` tokens takes at the simulated throughput,
// how many GPU-hours that is, and what it costs at `training.gpu_hour_price`.
//
//   time_to_train_s = tokens / tokens_per_s
//   gpu_hours       = devices · time_to_train_s / 3600
//   cost            = gpu_hours · gpu_hour_price
//   cost_per_million_tokens = devices · gpu_hour_price / 3600 / tokens_per_s · 1e6
// Steady state only: no warm-up, checkpoints, failures or evaluation (the step
// simulated is the one repeated for the whole run).
#pragma once

#include <string>

namespace ls::wl {

struct TrainingSpec;

struct TrainingCost {
  bool has_tokens = false;            // training.tokens given: time and GPU-hours
  bool has_price = false;             // training.gpu_hour_price given: cost
  double tokens = 0;
  double time_to_train_s = 0;
  double gpu_hours = 0;
  double gpu_hour_price = 0;
  std::string currency;               // "USD"
  double cost = 0;                    // has_tokens && has_price
  double cost_per_million_tokens = 0; // has_price
};

/// The run's totals for `devices` GPUs at `tokens_per_s` (> 0; else nothing is derived).
TrainingCost training_cost(const TrainingSpec& t, int devices, double tokens_per_s);

}  // namespace ls::wl

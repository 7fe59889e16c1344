// workloads/model/training_cost.hpp — the whole training run from one simulated step:
// how long training on `training.tokens` tokens takes at the simulated throughput,
// how many GPU-hours that is, and what it costs at `training.gpu_hour_price`.
//
//   time_to_train_ideal_s = tokens / tokens_per_s        (every second a useful step)
//   time_to_train_s = time_to_train_ideal_s / goodput      (wall clock)
//   gpu_hours       = devices · time_to_train_s / 3600     (the GPUs are held throughout)
//   cost            = gpu_hours · gpu_hour_price
//   cost_per_million_tokens = devices · gpu_hour_price / 3600 / (tokens_per_s · goodput) · 1e6
// goodput is the share of wall-clock time spent on steps that count: 1 without a
// checkpoint section; with one, 1 − the checkpoint stalls' share; with failures too, the
// expected goodput at the checkpoint interval (checkpoint.hpp: stalls, lost work since
// the last checkpoint, restores). No warm-up or evaluation is counted.
#pragma once

#include <string>

namespace ls::wl {

struct TrainingSpec;

struct TrainingCost {
  bool has_tokens = false;            // training.tokens given: time and GPU-hours
  bool has_price = false;             // training.gpu_hour_price given: cost
  double tokens = 0;
  double time_to_train_s = 0;         // wall clock: time_to_train_ideal_s / goodput
  double time_to_train_ideal_s = 0;   // at 100 % goodput
  double goodput = 1;                 // share of wall-clock time doing steps that count
  double gpu_hours = 0;
  double gpu_hour_price = 0;
  std::string currency;               // "USD"
  double cost = 0;                    // has_tokens && has_price
  double cost_per_million_tokens = 0; // has_price
};

/// The run's totals for `devices` GPUs at `tokens_per_s` (> 0; else nothing is derived)
/// and `goodput` in [0, 1] (0: no training ever completes; the times and costs are
/// infinite).
TrainingCost training_cost(const TrainingSpec& t, int devices, double tokens_per_s, double goodput = 1);

}  // namespace ls::wl

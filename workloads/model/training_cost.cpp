// workloads/model/training_cost.cpp — see training_cost.hpp.
#include "workloads/model/training_cost.hpp"

#include <algorithm>
#include <limits>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

TrainingCost training_cost(const TrainingSpec& t, int devices, double tokens_per_s, double goodput) {
  TrainingCost c;
  if (!(tokens_per_s > 0) || devices <= 0) return c;
  constexpr double kSecondsPerHour = 3600;
  c.goodput = std::clamp(goodput, 0.0, 1.0);
  const double useful_tokens_per_s = tokens_per_s * c.goodput;  // 0: never done (infinite times)
  const double inf = std::numeric_limits<double>::infinity();
  c.has_tokens = t.tokens > 0;
  c.has_price = t.gpu_hour_price >= 0;
  c.tokens = t.tokens;
  c.currency = t.currency;
  if (c.has_tokens) {
    c.time_to_train_ideal_s = t.tokens / tokens_per_s;
    c.time_to_train_s = useful_tokens_per_s > 0 ? t.tokens / useful_tokens_per_s : inf;
    c.gpu_hours = devices * c.time_to_train_s / kSecondsPerHour;
  }
  if (c.has_price) {
    c.gpu_hour_price = t.gpu_hour_price;
    c.cost_per_million_tokens = useful_tokens_per_s > 0 ? devices * t.gpu_hour_price / kSecondsPerHour / useful_tokens_per_s * 1e6 : inf;
    if (c.has_tokens) c.cost = c.gpu_hours * t.gpu_hour_price;
  }
  return c;
}

}  // namespace ls::wl

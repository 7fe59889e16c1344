// workloads/model/memory.cpp — parameter state and activation memory (see memory.hpp).
#include "workloads/model/memory.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace ls::wl {

StateBytes state_bytes(double params_on_device, const PrecisionSpec& prec, int zero, int dp) {
  if (zero < 0 || zero > 3) throw std::invalid_argument(fmt::format("state_bytes: zero must be 0..3, got {}", zero));
  if (dp < 1) throw std::invalid_argument(fmt::format("state_bytes: dp must be >= 1, got {}", dp));
  if (params_on_device < 0) throw std::invalid_argument(fmt::format("state_bytes: negative parameter count {}", params_on_device));
  const double P = params_on_device, d = dp;
  StateBytes s;
  s.weights = P * prec.weights / (zero >= 3 ? d : 1);
  s.gradients = P * prec.gradients / (zero >= 2 ? d : 1);
  s.master = P * prec.master / (zero >= 1 ? d : 1);
  s.optimizer = P * prec.optimizer / (zero >= 1 ? d : 1);
  return s;
}

double activation_bytes_per_layer(const ModelSpec& m, int microbatch_size, int tp, bool sequence_parallel, Recompute rc) {
  if (microbatch_size < 1 || tp < 1)
    throw std::invalid_argument(fmt::format("activation_bytes_per_layer: microbatch_size ({}) and tp ({}) must be >= 1", microbatch_size, tp));
  if (m.hidden <= 0 || m.seq_len <= 0 || m.heads <= 0)
    throw std::invalid_argument(fmt::format("activation_bytes_per_layer: model '{}' needs hidden, seq_len and heads > 0", m.name));
  const double b = microbatch_size, s = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden);
  const double a = m.heads, t = tp;
  const double sbh = s * b * h;
  // SP shards the norm/dropout activations along the sequence; with t = 1 it is a
  // no-op, and both branches below give the same numbers.
  const bool sp = sequence_parallel;
  switch (rc) {
    case Recompute::full: return sp ? 2 * sbh / t : 2 * sbh;
    case Recompute::selective: return sp ? 34 * sbh / t : sbh * (10 + 24 / t);
    // The layer input (2sbh, sequence-sharded under SP) and, per TP rank, the outputs
    // of the odd-numbered matmuls q, v (2sbh/t each) and the MLP's up projection
    // (8sbh/t), and the attention's output (2sbh/t): 2sbh + 14sbh/t.
    case Recompute::every_second_matmul: return (sp ? 2 * sbh / t : 2 * sbh) + 14 * sbh / t;
    case Recompute::none: break;
  }
  return sp ? sbh * (34 + 5 * a * s / h) / t : sbh * (10 + 24 / t + 5 * a * s / (h * t));
}

}  // namespace ls::wl

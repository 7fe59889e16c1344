// workloads/advice/cp_advice.cpp — see cp_advice.hpp.
#include "workloads/advice/cp_advice.hpp"

#include <fmt/format.h>

namespace ls::wl {

std::optional<int> cp_remedy(const Scenario& s, const MemoryTerms& mt) {
  const auto& L = s.layout;
  if (s.model.seq_len < kCpAdviceMinSeqLen || s.model.moe.experts > 0 || L.cp > 1 || L.dp < 2) return std::nullopt;
  if (L.schedule == Schedule::dualpipe) return std::nullopt;  // the layout rules refuse cp with it
  for (double other : {mt.weights, mt.gradients, mt.master, mt.optimizer, mt.buffers})
    if (other > mt.activations) return std::nullopt;  // the largest term is not activations
  std::optional<int> best;
  for (int c = 2; c <= L.dp; c *= 2) {
    if (L.dp % c != 0 || s.model.seq_len % (2 * c) != 0) break;
    best = c;
    if (mt.peak - mt.activations * (1.0 - 1.0 / c) <= s.gpu.memory_bytes) break;
  }
  return best;
}

Scenario with_cp(const Scenario& s, int c) {
  Scenario f = s;
  f.layout.cp = c;
  f.layout.dp = s.layout.dp / c;
  f.layout.microbatches = s.layout.microbatches * c;
  f.layout.global_batch = 0;
  return f;
}

void price_cp_advice(const Scenario& s, Result& res, const std::function<Result(const Scenario&)>& simulate_fixed) {
  for (auto& w : res.warnings) {
    if (w.code != "out-of-memory") continue;
    const auto at = w.message.find("cp: ");
    if (at == std::string::npos) continue;
    const int c = std::stoi(w.message.substr(at + 4));
    const Result r = simulate_fixed(with_cp(s, c));
    w.message += fmt::format(". With cp: {} (dp {}, {} micro-batches, same global batch) the step takes {:.4g} s instead of {:.4g} s "
                             "and the peak is {:.2f} GB ({})",
                             c, s.layout.dp / c, s.layout.microbatches * c, r.step_time_s, res.step_time_s, r.max_peak_bytes / 1e9,
                             r.memory_fits ? "fits" : "still over");
    return;
  }
}

}  // namespace ls::wl

// workloads/analysis/interference.cpp — per-rank compute slowdown under overlapped collectives.
#include "workloads/analysis/interference.hpp"

#include "workloads/spec/vocabulary.hpp"

#include <algorithm>
#include <cstdint>

namespace ls::wl {

std::uint8_t interference_streams() {
  std::uint8_t mask = 0;
  for (int s = 0; s < sim::kStreamCount; ++s)
    if (s != static_cast<int>(sim::Stream::main) && s != static_cast<int>(stream::overlap)) mask |= static_cast<std::uint8_t>(1U << s);
  return mask;
}

bool has_collectives_on(const sim::Program& prog, std::uint8_t streams) {
  for (const auto& sp : prog.stages)
    for (int s = 0; s < sim::kStreamCount; ++s) {
      if (((streams >> s) & 1U) == 0) continue;
      const auto& ops = sp.streams[static_cast<std::size_t>(s)];
      if (std::any_of(ops.begin(), ops.end(), [](const sim::Op& op) { return op.kind == sim::OpKind::collective; })) return true;
    }
  return false;
}

double interference_factor(double rho, double beside_s, double compute_s) {
  if (!(compute_s > 0)) return 1.0;
  return 1 + (rho - 1) * std::min(beside_s, compute_s) / compute_s;
}

std::vector<double> interference_factors(const sim::Engine& engine, const std::vector<sim::RankStats>& stats, double rho) {
  std::vector<double> out(stats.size(), 1.0);
  if (rho <= 1.0) return out;
  for (std::size_t r = 0; r < stats.size(); ++r) {
    if (!engine.simulated(static_cast<std::int32_t>(r))) continue;
    const sim::RankStats& st = stats[r];
    if (st.compute_busy > sim::Time::zero())
      out[r] = interference_factor(rho, st.compute_beside_comm.seconds(), st.compute_busy.seconds());
  }
  return out;
}

void book_slowdown_as_overhead(Result& res) {
  const std::size_t n = std::min(res.compute_breakdown.size(), res.per_stage.size());
  for (std::size_t st = 0; st < n; ++st) {
    auto& b = res.compute_breakdown[st];
    const sim::Time measured = sim::Time::from_seconds(res.per_stage[st].compute_s);
    if (measured > b.total()) b.launch += measured - b.total();
  }
}

}  // namespace ls::wl

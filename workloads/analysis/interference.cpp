// workloads/analysis/interference.cpp — per-rank compute slowdown under overlapped collectives.
#include "workloads/analysis/interference.hpp"

#include "workloads/spec/vocabulary.hpp"

#include <algorithm>

namespace ls::wl {

std::vector<double> interference_factors(const sim::Engine& engine, const sim::Program& program, double rho) {
  const auto traces = engine.op_traces();
  std::vector<double> out(program.ranks.size(), 1.0);
  if (rho <= 1.0 || traces.empty()) return out;
  struct Span {
    sim::Time a, b;
  };
  std::vector<Span> comm, compute;
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    // A rank the symmetric fast path did not run has no traces of its own (the
    // caller gives it its representative's factor); reading them would only fault
    // in untouched pages.
    if (!engine.simulated(static_cast<std::int32_t>(r))) continue;
    const auto& stage = program.stages[static_cast<std::size_t>(program.ranks[r].stage)];
    comm.clear();
    compute.clear();
    for (int s = 0; s < sim::kStreamCount; ++s) {
      const auto& ops = stage.streams[static_cast<std::size_t>(s)];
      const std::int64_t base = engine.op_base(static_cast<std::int32_t>(r), s);
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const sim::OpTrace& t = traces[static_cast<std::size_t>(base) + i];
        if (t.end <= t.start) continue;
        if (s == static_cast<int>(sim::Stream::main) && ops[i].kind == sim::OpKind::compute)
          compute.push_back({t.start, t.end});
        // The overlap stream's collectives (TP comm-GEMM overlap, the CP ring) are
        // priced with their own SM-sharing factor (implementation.tp_overlap_slowdown,
        // stage_emitter.cpp): counting them here too would slow those GEMMs twice.
        else if (s != static_cast<int>(sim::Stream::main) && s != static_cast<int>(stream::overlap) &&
                 ops[i].kind == sim::OpKind::collective)
          comm.push_back({t.start, t.end});
      }
    }
    if (compute.empty() || comm.empty()) continue;
    // Side streams interleave: merge their collectives into disjoint busy intervals.
    std::sort(comm.begin(), comm.end(), [](const Span& x, const Span& y) { return x.a < y.a; });
    std::vector<Span> busy;
    for (const Span& c : comm) {
      if (!busy.empty() && c.a <= busy.back().b) busy.back().b = std::max(busy.back().b, c.b);
      else busy.push_back(c);
    }
    // Main-stream compute ops run one at a time, in time order: one sweep.
    double overlap = 0, total = 0;
    std::size_t j = 0;
    for (const Span& c : compute) {
      total += (c.b - c.a).seconds();
      while (j < busy.size() && busy[j].b <= c.a) ++j;
      for (std::size_t k = j; k < busy.size() && busy[k].a < c.b; ++k)
        overlap += (std::min(c.b, busy[k].b) - std::max(c.a, busy[k].a)).seconds();
    }
    if (total > 0) out[r] = 1 + (rho - 1) * overlap / total;
  }
  return out;
}

void book_interference(Result& res) {
  const std::size_t n = std::min(res.compute_breakdown.size(), res.per_stage.size());
  for (std::size_t st = 0; st < n; ++st) {
    auto& b = res.compute_breakdown[st];
    const sim::Time measured = sim::Time::from_seconds(res.per_stage[st].compute_s);
    if (measured > b.total()) b.launch += measured - b.total();
  }
}

}  // namespace ls::wl

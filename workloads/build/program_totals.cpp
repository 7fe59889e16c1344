// workloads/build/program_totals.cpp — see program_totals.hpp.
#include "workloads/build/program_totals.hpp"

#include <algorithm>
#include <stdexcept>
#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "topology/cluster.hpp"
#include "workloads/spec/vocabulary.hpp"

namespace ls::wl {

namespace {

/// program_totals over `ranks`, each read as (stage, work_scale) by `work`.
template <class Ranks, class Work>
ProgramTotals totals_over(const sim::Program& prog, const Ranks& ranks, Work work) {
  ProgramTotals out;
  // Per stage: FLOPs of the ops every rank runs alike, and of the expert ops that
  // each rank scales by its own expert load.
  struct StageFlops {
    double model = 0, hardware = 0, expert_model = 0, expert_hardware = 0;
  };
  std::vector<StageFlops> per_stage(prog.stages.size());
  out.activation_peak_bytes.assign(prog.stages.size(), 0.0);
  for (std::size_t st = 0; st < prog.stages.size(); ++st) {
    auto& f = per_stage[st];
    std::int64_t now = 0, peak = 0;
    for (const auto& op : prog.stages[st].streams[static_cast<std::size_t>(stream::compute)]) {
      if (op.mem_working_bytes != 0) peak = std::max(peak, now + op.mem_working_bytes);
      if (op.mem_delta_bytes != 0) {
        now += op.mem_delta_bytes;
        peak = std::max(peak, now);
      }
      if (op.kind != sim::OpKind::compute) continue;
      (op.scaled_by_rank ? f.expert_model : f.model) += op.model_flops;
      (op.scaled_by_rank ? f.expert_hardware : f.hardware) += op.hw_flops;
    }
    out.activation_peak_bytes[st] = static_cast<double>(peak);
  }
  for (const auto& r : ranks) {
    const RankWork w = work(r);
    const auto& f = per_stage[static_cast<std::size_t>(w.stage)];
    out.model_flops += f.model + f.expert_model * w.work_scale;
    out.hardware_flops += f.hardware + f.expert_hardware * w.work_scale;
  }
  return out;
}

}  // namespace

ProgramTotals program_totals(const sim::Program& prog) {
  return totals_over(prog, prog.ranks, [](const sim::RankInfo& r) { return RankWork{r.stage, r.work_scale}; });
}

ProgramTotals program_totals(const sim::Program& prog, const std::vector<RankWork>& ranks) {
  return totals_over(prog, ranks, [](const RankWork& r) { return r; });
}

double device_peak_bytes(const std::vector<MemoryTerms>& static_memory, const std::vector<double>& activation_peaks) {
  double peak = 0;
  for (std::size_t st = 0; st < static_memory.size(); ++st) {
    const MemoryTerms& m = static_memory[st];
    peak = std::max(peak, m.weights + m.gradients + m.master + m.optimizer + m.buffers + activation_peaks[st]);
  }
  return peak;
}

std::vector<double> link_capacities(const Scenario& sc, const topo::Cluster& cluster) {
  std::vector<double> capacity = cluster.link_bandwidths();
  for (const auto& lf : sc.perturbations.links) {
    if (lf.bandwidth_factor == 0) continue;  // down, named and checked by Cluster::build (effective_cluster)
    const auto ids = cluster.find_links(lf.link);
    if (ids.empty())
      throw std::invalid_argument(fmt::format("perturbations.links: no link named '{}' in the cluster (links are named like "
                                              "'node0.gpu0->node0.nvswitch', or 'a<->b' for both directions)",
                                              lf.link));
    for (const auto id : ids) capacity[id] = cluster.link(id).bandwidth_Bps * lf.bandwidth_factor;
  }
  return capacity;
}

topo::ClusterSpec effective_cluster(const Scenario& sc) {
  topo::ClusterSpec spec = sc.cluster;
  for (const auto& lf : sc.perturbations.links)
    if (lf.bandwidth_factor == 0) spec.down_links.push_back(lf.link);
  return spec;
}

}  // namespace ls::wl

// workloads/layout_report.cpp — see plan.hpp.
#include "workloads/spec/vocabulary.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/model/headroom.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

#include <fmt/format.h>

#include "topology/cluster.hpp"
#include "workloads/analysis/axis_comm.hpp"
#include "workloads/advice/diagnostics.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/model.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/model/schedule.hpp"

namespace ls::wl {

LayoutReport layout_report(const ResolvedScenario& resolved) {
  const Scenario& sc = resolved.scenario();
  const auto cluster = topo::Cluster::build(effective_cluster(sc));
  const BuiltProgram bp = build_program(sc);
  const ProgramTotals totals = program_totals(bp.program);
  LayoutReport ps;
  ps.devices = cluster.gpu_count();
  ps.stage_layers = bp.stage_layers;
  ps.params_total = total_params(sc.model);
  ps.model_flops_per_step = totals.model_flops;
  ps.hardware_flops_per_step = totals.hardware_flops;
  ps.memory_capacity_bytes = sc.gpu.memory_bytes;
  ps.memory_usable_bytes = usable_memory_bytes(sc);
  ps.bubble_fraction_analytic =
      analytic_bubble(sc.layout.schedule, sc.layout.pp, sc.layout.microbatches, std::max(1, sc.layout.virtual_stages));
  for (int st = 0; st < sc.layout.pp; ++st) {
    MemoryTerms mt = bp.static_memory[static_cast<std::size_t>(st)];
    mt.activations = totals.activation_peak_bytes[static_cast<std::size_t>(st)];
    mt.peak = mt.weights + mt.gradients + mt.master + mt.optimizer + mt.buffers + mt.activations;
    ps.memory_per_stage.push_back(mt);
    ps.max_peak_bytes = std::max(ps.max_peak_bytes, mt.peak);
  }
  ps.fits = memory_fits(sc, ps.max_peak_bytes);
  ps.verdict = memory_verdict_name(memory_verdict(sc, ps.max_peak_bytes));
  // The calls a framework's gather / reduce granularity makes (implementation.*), read off
  // the program rather than restated.
  for (const auto& stream : bp.program.stages.front().streams)
    for (const auto& op : stream) {
      if (op.kind != sim::OpKind::collective) continue;
      if (work_of(op) == Work::param_gather) {
        ps.weight_gathers_per_step += op.repeat;
        ps.weight_gather_bytes_per_step += op.bytes * op.repeat;
      } else if (work_of(op) == Work::grad_sync) {
        ps.gradient_reductions_per_step += op.repeat;
        ps.gradient_reduction_bytes_per_step += op.bytes * op.repeat;
      }
    }
  // One representative group per axis, and every TP group that leaves its node.
  const auto& prog = bp.program;
  std::vector<bool> shown(static_cast<std::size_t>(kAxisCount), false);
  for (std::size_t g = 0; g < prog.groups.size(); ++g) {
    const auto& grp = prog.groups[g];
    std::vector<std::int32_t> devs;
    for (auto r : grp.ranks) devs.push_back(prog.ranks[static_cast<std::size_t>(r)].device);
    const bool crosses = cluster.crosses_nvlink_domains(devs);
    const int ax = static_cast<int>(axis_of(grp));
    if (shown[static_cast<std::size_t>(ax)] && !(axis_of(grp) == Axis::tp && crosses)) continue;
    shown[static_cast<std::size_t>(ax)] = true;
    GroupInfo gi{std::string(axis_name(axis_of(grp))),
                 {}, false, {}};
    for (auto dv : devs) gi.devices.push_back(cluster.gpu_name(dv));
    gi.crosses_nodes = crosses;
    std::vector<std::string> kinds;
    for (std::size_t k = 0; k < devs.size() && devs.size() > 1; ++k)
      for (auto& kind : cluster.link_kinds_on_route(devs[k], devs[(k + 1) % devs.size()]))
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    gi.link_kinds = kinds;
    ps.groups.push_back(std::move(gi));
  }
  if (sc.layout.pp > 1) {
    GroupInfo gi{std::string("pp"), {}, false, {}};
    std::vector<std::string> kinds;
    for (int st = 0; st < sc.layout.pp; ++st) {
      const int r = prog.pp_peer[static_cast<std::size_t>(st)];
      gi.devices.push_back(cluster.gpu_name(prog.ranks[static_cast<std::size_t>(r)].device));
      if (st + 1 < sc.layout.pp) {
        const int r2 = prog.pp_peer[static_cast<std::size_t>(st + 1)];
        for (auto& kind : cluster.link_kinds_on_route(r, r2))
          if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
      }
    }
    std::vector<std::int32_t> devs;
    for (int st = 0; st < sc.layout.pp; ++st) devs.push_back(prog.pp_peer[static_cast<std::size_t>(st)]);
    gi.crosses_nodes = cluster.crosses_nodes(devs);
    gi.link_kinds = kinds;
    ps.groups.push_back(std::move(gi));
  }
  const AxisComms comms = axis_comm_budgets(sc, prog, cluster);
  for (const Axis a : kReportedAxes) ps.comm[static_cast<int>(a)] = comms[static_cast<std::size_t>(a)];
  ps.warnings = static_warnings(sc, bp, ps);
  return ps;
}

}  // namespace ls::wl

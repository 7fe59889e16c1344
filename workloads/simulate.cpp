// workloads/simulate.cpp — orchestration: cluster + program + engine → Result.
//
// The pieces live in their own files: the recorder (trace spans and counters), the
// critical-path walk, the metric families (metrics.cpp) and the what-ifs. This
// file wires them together; dependencies run one way (simulate → diagnostics,
// metrics, recorder, what_if; never back).
#include "workloads/simulate.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/engine.hpp"
#include "topology/cluster.hpp"
#include "topology/planner.hpp"
#include "workloads/critical_path.hpp"
#include "workloads/diagnostics.hpp"
#include "workloads/memory.hpp"
#include "workloads/metrics.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/recorder.hpp"
#include "workloads/schedule.hpp"
#include "workloads/vocabulary.hpp"
#include "workloads/what_if.hpp"

namespace ls::wl {

namespace {

using sim::Time;

/// The scenario's cluster with every link perturbed to bandwidth_factor 0 moved into
/// down_links: a dead link is taken out of routing (ECMP / PXN relays carry its
/// traffic, see topology/cluster.hpp "Down links") rather than given zero capacity,
/// under which its flows would never finish. Other factors keep scaling capacity.
topo::ClusterSpec effective_cluster(const Scenario& sc) {
  topo::ClusterSpec spec = sc.cluster;
  for (const auto& lf : sc.perturbations.links)
    if (lf.bandwidth_factor == 0) spec.down_links.push_back(lf.link);
  return spec;
}

}  // namespace

PlanSummary plan(const Scenario& sc) {
  if (auto errs = validate(sc); !errs.empty())
    throw std::invalid_argument(fmt::format("{}: {}", errs.front().key_path, errs.front().message));
  const auto cluster = topo::Cluster::build(effective_cluster(sc));
  const BuiltProgram bp = build_program(sc);
  PlanSummary ps;
  ps.devices = cluster.gpu_count();
  ps.stage_layers = bp.stage_layers;
  ps.params_total = bp.params_total;
  ps.model_flops_per_step = bp.model_flops_step;
  ps.memory_capacity_bytes = sc.gpu.memory_bytes;
  ps.bubble_fraction_analytic =
      analytic_bubble(sc.layout.schedule, sc.layout.pp, sc.layout.microbatches, std::max(1, sc.layout.virtual_stages));
  for (int st = 0; st < sc.layout.pp; ++st) {
    MemoryTerms mt = bp.static_memory[static_cast<std::size_t>(st)];
    const int inflight = max_inflight_microbatches(sc.layout.schedule, sc.layout.pp, st, sc.layout.microbatches,
                                                   std::max(1, sc.layout.virtual_stages));
    // For interleaved schedules the in-flight count is in model chunks, each 1/v of the stage.
    const double per_unit = bp.activation_bytes_per_microbatch[static_cast<std::size_t>(st)] /
                            (sc.layout.schedule == Schedule::interleaved_1f1b ? std::max(1, sc.layout.virtual_stages) : 1);
    mt.activations = per_unit * inflight;
    mt.peak = mt.weights + mt.gradients + mt.master + mt.optimizer + mt.buffers + mt.activations;
    ps.memory_per_stage.push_back(mt);
  }
  // One representative group per axis, and every TP group that leaves its node.
  const auto& prog = bp.program;
  std::vector<bool> shown(static_cast<std::size_t>(kAxisCount), false);
  for (std::size_t g = 0; g < prog.groups.size(); ++g) {
    const auto& grp = prog.groups[g];
    std::vector<std::int32_t> devs;
    for (auto r : grp.ranks) devs.push_back(prog.ranks[static_cast<std::size_t>(r)].device);
    const bool crosses = cluster.crosses_nodes(devs);
    const int ax = static_cast<int>(axis_of(grp));
    if (shown[static_cast<std::size_t>(ax)] && !(axis_of(grp) == Axis::tp && crosses)) continue;
    shown[static_cast<std::size_t>(ax)] = true;
    GroupInfo gi{std::string(axis_name(axis_of(grp))), {}, false, {}};
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
  ps.warnings = static_warnings(sc, bp, ps);
  return ps;
}

namespace {

Result simulate_once(const Scenario& sc, const SimOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  if (auto errs = validate(sc); !errs.empty())
    throw std::invalid_argument(fmt::format("{}: {}", errs.front().key_path, errs.front().message));
  const auto cluster = topo::Cluster::build(effective_cluster(sc));
  topo::Planner planner(cluster, sc.cluster.ideal_network);
  sim::FlowNetwork net(cluster.link_bandwidths());
  for (const auto& lf : sc.perturbations.links) {
    if (lf.bandwidth_factor == 0) continue;  // down, named and checked by Cluster::build (effective_cluster)
    const auto ids = cluster.find_links(lf.link);
    if (ids.empty()) throw std::invalid_argument(fmt::format("perturbations.links: no link named '{}' in the cluster (links are named like 'node0.gpu0->node0.nvswitch', or 'a<->b' for both directions)", lf.link));
    for (const auto id : ids) net.set_bandwidth(id, cluster.link(id).bandwidth_Bps * lf.bandwidth_factor);
  }
  const BuiltProgram bp = build_program(sc);
  const auto& prog = bp.program;
  const int D = static_cast<int>(prog.ranks.size());

  sim::EngineConfig cfg;
  cfg.compute_factor.assign(static_cast<std::size_t>(D), 1.0);
  for (const auto& ds : sc.perturbations.devices) {
    const int g = cluster.gpu_index(ds.device);
    if (g < 0) throw std::invalid_argument(fmt::format("perturbations.devices: no GPU named '{}'", ds.device));
    cfg.compute_factor[static_cast<std::size_t>(g)] *= ds.compute_slowdown;
  }
  cfg.compute_cv = sc.perturbations.jitter.compute_cv;
  cfg.comm_cv = sc.perturbations.jitter.comm_cv;
  cfg.seed = sc.perturbations.jitter.seed;
  for (int ax = 0; ax < kAxisCount; ++ax)
    cfg.group_slot_names[slot(static_cast<Axis>(ax))] = axis_name(static_cast<Axis>(ax));
  for (int s = 0; s < sim::kStreamCount; ++s) cfg.stream_names[static_cast<std::size_t>(s)] = kStreamNames[s];
  for (int l = 0; l < sim::kOpLabels; ++l) cfg.label_names[static_cast<std::size_t>(l)] = kLabelNames[l];
  std::size_t total_ops = 0;
  for (std::size_t r = 0; r < prog.ranks.size(); ++r)
    for (const auto& s : prog.stages[static_cast<std::size_t>(prog.ranks[r].stage)].streams) total_ops += s.size();
  // The critical path needs one sim::OpTrace (24 bytes) per executed op; past
  // ~25 M ops (≈0.6 GB) it is skipped and the summary says so.
  cfg.record_ops = total_ops <= 25'000'000;
  std::vector<int> traced;
  if (opts.trace) {
    traced = traced_ranks(prog, opts.trace_max_devices);
    cfg.traced.assign(static_cast<std::size_t>(D), 0);
    for (int r : traced) cfg.traced[static_cast<std::size_t>(r)] = 1;
  }

  Result res;
  res.scenario = sc.name;
  res.devices = D;
  res.steps = std::max(1, sc.simulation.steps);
  res.gpus_per_node = sc.cluster.gpus_per_node;
  for (int g = 0; g < cluster.gpu_count(); ++g) res.device_names.push_back(cluster.gpu_name(g));

  sim::Engine eng(prog, planner, net, cfg);
  Recorder rec(eng, res);
  if (opts.trace) rec.attach(eng, net, cluster, prog, traced);

  Time t = Time::zero();
  std::vector<double> step_s;
  CriticalWalk crit;
  std::vector<sim::RankStats> first_stats;
  for (int k = 0; k < res.steps; ++k) {
    const Time end = eng.run_step(t, k);
    step_s.push_back((end - t).seconds());
    if (k == 0) {
      first_stats = eng.stats();
      if (cfg.record_ops) crit = walk_critical_path(eng, prog, t, end);
    }
    t = end;
  }
  const Time total = t;
  const auto& stats = first_stats;
  const double step0 = step_s.front();

  fold_step_times(res, step_s);
  fold_flops(res, sc, bp, stats);
  fold_pipeline(res, sc, bp, stats, step0);
  fold_comm(res, sc, prog, stats);
  fold_moe(res, sc, bp);
  fold_links(res, cluster, net, total);
  fold_memory(res, sc, bp, stats);
  if (cfg.record_ops) {
    fold_critical_path(res, crit, step0);
    if (opts.trace) {
      res.critical_segments = std::move(crit.segments);
      rec.mark_critical(crit.ops);
    }
  }
  if (opts.trace) rec.finish(Time::from_seconds(step0), total, res.steps);
  fold_tp_crossing(res, cluster, prog);

  res.warnings = dynamic_warnings(sc, bp, res, cfg.record_ops);
  res.events = eng.events_processed();
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace

Result simulate(const Scenario& sc, const SimOptions& opts) {
  Result res = simulate_once(sc, opts);
  if (opts.what_if) {
    SimOptions sub;
    sub.what_if = false;
    price_warnings(sc, res, [&sub](const Scenario& fixed) { return simulate_once(fixed, sub).step_time_s; });
  }
  return res;
}

}  // namespace ls::wl

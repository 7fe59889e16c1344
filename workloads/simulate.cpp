// workloads/simulate.cpp — orchestration: cluster + program + engine → Result.
//
// The pieces live in their own files: the recorder (trace spans and counters), the
// critical-path walk, the metric families (metrics.cpp) and the what-ifs. This
// file wires them together; dependencies run one way (simulate → diagnostics,
// metrics, recorder, what_if; never back).
#include "workloads/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/alike_flows.hpp"
#include "sim/engine.hpp"
#include "topology/cluster.hpp"
#include "topology/planner.hpp"
#include "workloads/analysis/axis_comm.hpp"
#include "workloads/analysis/critical_path.hpp"
#include "workloads/analysis/device_metrics.hpp"
#include "workloads/advice/diagnostics.hpp"
#include "workloads/analysis/error_band.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/analysis/interference.hpp"
#include "workloads/analysis/scale_noise.hpp"
#include "workloads/model/memory.hpp"
#include "workloads/analysis/metrics.hpp"
#include "workloads/build/offload.hpp"
#include "workloads/model/training_cost.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/analysis/recorder.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/build/symmetry.hpp"
#include "workloads/spec/vocabulary.hpp"
#include "workloads/advice/cp_advice.hpp"
#include "workloads/advice/what_if.hpp"
#include "workloads/analysis/step_split.hpp"
#include "workloads/cost/low_precision.hpp"

namespace ls::wl {

using sim::Time;

namespace {

Result::Setup setup_of(const Scenario& sc) {
  const LayoutSpec& l = sc.layout;
  Result::Setup s;
  s.model = sc.model.name;
  s.gpu = sc.gpu.name;
  s.implementation = sc.implementation.preset;
  s.schedule = std::string(name_of(kScheduleNames, l.schedule));
  s.recompute = std::string(name_of(kRecomputeNames, l.recompute));
  s.recompute_layers = recompute_layers_text(l.recompute_layers);
  s.compute_precision = std::string(compute_precision_name(sc.precision.compute));
  s.tp = l.tp;
  s.pp = l.pp;
  s.dp = l.dp;
  s.cp = l.cp;
  s.ep = l.ep;
  s.expert_tp = expert_tp_of(l);
  s.zero = l.zero;
  s.virtual_stages = l.virtual_stages;
  s.sequence_parallel = l.sequence_parallel;
  s.seq_len = sc.model.seq_len;
  s.microbatch_size = l.microbatch_size;
  s.microbatches = l.microbatches;
  s.global_batch = static_cast<std::int64_t>(l.microbatch_size) * l.microbatches * l.dp;
  return s;
}

/// The cluster's links at their bandwidths, perturbations.links applied. The network
/// refers to `cluster` for its links' names.
sim::FlowNetwork make_network(const Scenario& sc, const topo::Cluster& cluster) {
  sim::FlowNetwork n(link_capacities(sc, cluster));
  // A drain time past the range names its link.
  n.set_link_namer([&cluster](sim::LinkId l) { return cluster.link(l).name; });
  return n;
}

/// The engine's configuration from the scenario: device slowdowns, jitter, the names
/// of slots, streams and labels, and whether ops are recorded.
sim::EngineConfig engine_config(const Scenario& sc, const topo::Cluster& cluster, const sim::Program& prog) {
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
  // The pp slot's collectives are the end stages' sums of a tied table's gradients: the
  // stage that arrives first waits out the pipeline's drain there, not communication.
  cfg.exposed_from_last_arrival = static_cast<std::uint16_t>(1U << slot(Axis::pp));
  for (int s = 0; s < sim::kStreamCount; ++s) cfg.stream_names[static_cast<std::size_t>(s)] = kStreamNames[s];
  for (int l = 0; l < sim::kOpLabels; ++l) cfg.label_names[static_cast<std::size_t>(l)] = kLabelNames[l];
  return cfg;
}

/// The ops the engine will run: every rank's, or on the symmetric fast path only the
/// runner replicas' (the others' op traces are never written).
std::size_t simulated_ops(const sim::Program& prog, const sim::EngineSymmetry& sym) {
  std::size_t n = 0;
  for (std::size_t r = 0; r < prog.ranks.size(); ++r)
    if (sym.runs(r)) n += prog.rank_op_count(r);
  return n;
}

/// --trace-devices: "auto" (the slow devices and a sample; the critical path's join
/// after the first step), "all", or GPU names. Sorted, without repeats.
std::vector<int> traced_devices(const Scenario& sc, const SimOptions& opts, const topo::Cluster& cluster, const sim::Program& prog,
                                bool trace_auto) {
  std::vector<int> traced;
  if (trace_auto) {
    std::vector<int> slow;
    for (const auto& ds : sc.perturbations.devices) slow.push_back(cluster.gpu_index(ds.device));
    traced = auto_traced_ranks(prog, slow);
  } else if (opts.trace_devices.size() == 1 && opts.trace_devices[0] == "all") {
    traced = traced_ranks(prog, static_cast<int>(prog.ranks.size()));
  } else {
    for (const auto& name : opts.trace_devices) {
      const int g = cluster.gpu_index(name);
      if (g < 0) throw UnknownTraceDevice(fmt::format("--trace-devices: no GPU named '{}' (GPUs are named like '{}')", name, cluster.gpu_name(0)));
      traced.push_back(g);
    }
    std::sort(traced.begin(), traced.end());
    traced.erase(std::unique(traced.begin(), traced.end()), traced.end());
  }
  return traced;
}

/// Estimates the trace before anything runs: past kMaxTracedOps it could not be built
/// in memory (and would not open in a viewer), so the run stops saying what would fit.
/// The trace draws one step (Recorder::stop_spans), so the steps do not count.
void refuse_oversized_trace(const sim::Program& prog, const std::vector<int>& traced, const topo::Cluster& cluster) {
  std::uint64_t ops = 0;
  for (int r : traced) ops += prog.rank_op_count(static_cast<std::size_t>(r));
  if (ops <= kMaxTracedOps) return;
  const std::uint64_t per_device = traced.empty() ? 0 : ops / traced.size();
  const std::uint64_t fit = per_device > 0 ? std::max<std::uint64_t>(1, kMaxTracedOps / per_device) : 0;
  throw TraceTooLarge(fmt::format(
      "--trace: {} devices draw about {:.3g} M ops (about {:.1f} GB to build, {:.1f} GB of JSON), past the limit of {:.3g} M; "
      "trace fewer devices: --trace-devices auto, or a list of at most about {} such as {}",
      traced.size(), static_cast<double>(ops) / 1e6, static_cast<double>(ops) * kTraceBuildBytesPerOp / 1e9,
      static_cast<double>(ops) * kTraceJsonBytesPerOp / 1e9, static_cast<double>(kMaxTracedOps) / 1e6, fit, cluster.gpu_name(0)));
}

/// NCCL kernels share the SMs with the compute they overlap (interference.hpp): the
/// overlap a metered run measured in its first step (`first`, its stats) slows `cfg`'s
/// compute. True when some rank's compute slows (a factor other than exactly 1).
bool slow_by_interference(const sim::Engine& metered, const std::vector<sim::RankStats>& first, double overlap_slowdown,
                          sim::EngineConfig& cfg) {
  auto factors = interference_factors(metered, first, overlap_slowdown);
  // On the symmetric path only the runners ran: their twins in the replicas they run
  // for overlap exactly as they do, so they take their factors.
  const sim::EngineSymmetry& es = cfg.symmetry;
  for (std::size_t r = 0; r < factors.size(); ++r) factors[r] = factors[static_cast<std::size_t>(es.runner_rank(r))];
  bool slowed = false;
  for (std::size_t r = 0; r < factors.size(); ++r) {
    slowed = slowed || factors[r] != 1.0;
    cfg.compute_factor[r] *= factors[r];
  }
  return slowed;
}

/// A probe step, its own run without op traces or a trace, meters the overlap that slows
/// `cfg`'s compute.
void probe_interference(const sim::Program& prog, topo::Planner& planner, sim::FlowNetwork probe_net, double overlap_slowdown,
                        sim::EngineConfig& cfg) {
  sim::EngineConfig probe_cfg = cfg;
  probe_cfg.traced.clear();
  probe_cfg.record_ops = false;  // the overlap meter needs no op traces
  probe_cfg.overlap_streams = interference_streams();
  sim::Engine probe(prog, planner, probe_net, probe_cfg);
  probe.run_step(Time::zero(), 0);
  slow_by_interference(probe, probe.stats(), overlap_slowdown, cfg);
}

/// What the reported steps leave for the folds.
struct StepsRun {
  Time total;
  std::vector<double> step_s;
  CriticalWalk crit;                         // the first step's (record_ops)
  std::vector<sim::RankStats> first_stats;
};

/// A device whose compute slowdown grows per step (perturbations.devices[].drift).
struct Drift {
  int rank;
  double per_step;
};

std::vector<Drift> drifts_of(const Scenario& sc, const topo::Cluster& cluster) {
  std::vector<Drift> out;
  for (const auto& ds : sc.perturbations.devices)
    if (ds.drift_per_step > 0) out.push_back({cluster.gpu_index(ds.device), ds.drift_per_step});
  return out;
}

StepsRun run_steps(sim::Engine& eng, Recorder& rec, const sim::Program& prog, const sim::EngineConfig& cfg, const SimOptions& opts,
                   bool trace_auto, const std::vector<int>& traced, int steps, const std::vector<Drift>& drifts) {
  StepsRun run;
  Time t = Time::zero();
  for (int k = 0; k < steps; ++k) {
    // Step k of a drifting device: its first step's factor (slowdown and interference) · (1 + drift)^k.
    for (const Drift& d : drifts)
      if (k > 0) eng.set_compute_factor(d.rank, cfg.compute_factor[static_cast<std::size_t>(d.rank)] * std::pow(1 + d.per_step, k));
    const Time end = eng.run_step(t, k);
    run.step_s.push_back((end - t).seconds());
    if (k == 0) {
      rec.stop_spans();
      run.first_stats = eng.stats();
      if (cfg.record_ops) {
        run.crit = walk_critical_path(eng, prog, t, end);
        if (opts.trace && trace_auto) {
          // The critical path's devices join the automatic trace, rebuilt from op traces.
          std::vector<int> more;
          for (const auto& seg : run.crit.segments)
            if (seg.device >= 0 && !std::binary_search(traced.begin(), traced.end(), seg.device)) more.push_back(seg.device);
          std::sort(more.begin(), more.end());
          more.erase(std::unique(more.begin(), more.end()), more.end());
          rec.add_from_op_traces(eng, prog, more);
        }
      }
    }
    t = end;
  }
  run.total = t;
  return run;
}

/// Which ranks a simulation runs (symmetry.hpp).
enum class Reduction { every_rank, classes, finer_classes };

Result simulate_once(const Scenario& sc, const SimOptions& opts, Reduction reduction, bool fold) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto cluster = topo::Cluster::build(effective_cluster(sc));
  topo::Planner planner(cluster, sc.cluster.ideal_network, collective_costs_of(sc.gpu));
  sim::FlowNetwork net = make_network(sc, cluster);
  const BuiltProgram bp = build_program(sc);
  const auto& prog = bp.program;
  const int D = static_cast<int>(prog.ranks.size());

  sim::EngineConfig cfg = engine_config(sc, cluster, prog);
  // Every rank computes at the slowest of the D GPUs' speeds (scale_noise.hpp): one factor
  // for all, so replicas stay alike for the symmetric fast path.
  const double noise = scale_noise_factor(sc.implementation.compute_variability, D);
  for (auto& f : cfg.compute_factor) f *= noise;
  std::vector<int> traced;
  const bool trace_auto = opts.trace_devices.empty() || (opts.trace_devices.size() == 1 && opts.trace_devices[0] == "auto");
  if (opts.trace) {
    traced = traced_devices(sc, opts, cluster, prog, trace_auto);
    refuse_oversized_trace(prog, traced, cluster);
    cfg.traced.assign(static_cast<std::size_t>(D), 0);
    for (int r : traced) cfg.traced[static_cast<std::size_t>(r)] = 1;
  }

  // The symmetric fast path (symmetry.hpp).
  SymmetryDecision sym;
  if (reduction != Reduction::every_rank) {
    SymmetryInputs in{{}, cfg.compute_factor, traced, reduction == Reduction::finer_classes};
    in.link_bandwidth.reserve(net.link_count());
    for (std::size_t l = 0; l < net.link_count(); ++l) in.link_bandwidth.push_back(net.bandwidth(static_cast<sim::LinkId>(l)));
    sym = decide_symmetry(sc, prog, planner, in);
    if (reduction == Reduction::finer_classes) {
      // The coarser run was refused; the same classes again would be too.
      in.split_by_load = false;
      if (sym.status != "used" || sym.classes == decide_symmetry(sc, prog, planner, in).classes) throw sim::SymmetryBroken("no finer classes");
    }
    cfg.symmetry = std::move(sym.engine);
  }
  cfg.fold_alike_flows = fold;

  // The critical path needs one sim::OpTrace (24 bytes) per simulated op; past
  // simulation.critical_path_ops it is left out and a warning says so. Nothing else reads
  // the traces: every number but the critical path's is the same either way.
  const std::size_t ops = simulated_ops(prog, cfg.symmetry);
  cfg.record_ops = opts.critical_path && ops <= static_cast<std::size_t>(sc.simulation.critical_path_ops);

  const ComputeProfile profile = compute_profile_of(sc.gpu);
  const double rho = overlap_slowdown(profile);
  const bool interference = rho > 1 && D > 1;
  // How long each rank's compute runs beside side-stream collectives is metered (the meter
  // changes no time) in a first run. Where it finds no such overlap every factor is exactly
  // 1 and that run is the reported one; else it was a probe, and the run repeats with the
  // compute slowed by what it measured (interference.hpp). A first run that records op
  // traces or a trace costs more than a probe, so where the scenario's own switches
  // overlap gradient reductions or weight gathers with compute (overlap likely) a bare
  // probe runs first instead.
  bool metered = false;
  if (interference && has_collectives_on(prog, interference_streams())) {
    const bool records = cfg.record_ops || opts.trace;
    const bool overlaps_by_switch = sc.implementation.dp_overlap || sc.implementation.param_gather_overlap;
    if (records && overlaps_by_switch) {
      probe_interference(prog, planner, make_network(sc, cluster), rho, cfg);
    } else {
      metered = true;
      cfg.overlap_streams = interference_streams();
    }
  }

  Result res;
  res.scenario = sc.name;
  res.setup = setup_of(sc);
  res.devices = D;
  res.steps = std::max(1, sc.simulation.steps);
  res.gpus_per_node = sc.cluster.gpus_per_node;
  for (int g = 0; g < cluster.gpu_count(); ++g) res.device_names.push_back(cluster.gpu_name(g));
  res.device_stage.assign(res.device_names.size(), 0);
  for (const auto& rank : prog.ranks)
    if (rank.device >= 0 && static_cast<std::size_t>(rank.device) < res.device_stage.size())
      res.device_stage[static_cast<std::size_t>(rank.device)] = rank.stage;

  const Result unrun = res;
  std::optional<sim::Engine> engine;
  std::optional<Recorder> recorder;
  StepsRun run;
  for (;;) {
    res.compute_factors = cfg.compute_factor;
    engine.emplace(prog, planner, net, cfg);
    recorder.emplace(*engine, res);
    if (opts.trace) recorder->attach(*engine, net, cluster, prog, traced);
    run = run_steps(*engine, *recorder, prog, cfg, opts, trace_auto, traced, res.steps, drifts_of(sc, cluster));
    if (!metered) break;
    metered = false;
    cfg.overlap_streams = 0;
    if (!slow_by_interference(*engine, run.first_stats, rho, cfg)) break;
    recorder.reset();
    engine.reset();
    net = make_network(sc, cluster);
    res = unrun;
  }
  sim::Engine& eng = *engine;
  Recorder& rec = *recorder;
  const Time total = run.total;
  // Links only a replica that did not run used carry what their runner's twins carried.
  for (const auto& [from, to] : sym.link_copy) net.credit_link(to, net.link_bytes(from), net.link_busy(from, total), net.link_bottleneck(from, total),
                                                                  net.link_payload_bytes(from));
  // Links tied flows left out carried the cross-replica traffic only; their runner's twins
  // carried that and the copies, what the full run puts on both.
  for (const auto& [from, to] : sym.link_mirror) net.copy_link_stats(from, to, total);
  res.symmetry = sym.status;
  res.ranks_simulated = eng.ranks_simulated();
  res.replica_classes = sym.classes;
  res.mirrored_links = static_cast<int>(sym.link_mirror.size());
  res.alike_flows = fold ? "on" : "off";
  const auto& stats = run.first_stats;
  const double step0 = run.step_s.front();

  fold_step_times(res, run.step_s);
  fold_flops(res, sc, bp, stats);
  fold_pipeline(res, sc, bp, stats, step0);
  fold_stage_spread(res, prog, stats);
  fold_comm(res, sc, prog, stats);
  // Bytes per FLOP and the time at each axis's slowest link: the program's figures, as
  // `check` prints them; bytes_per_device and exposed_s stay the simulation's.
  const AxisComms budgets = axis_comm_budgets(sc, prog, cluster);
  for (const Axis a : kReportedAxes) {
    AxisComm& c = res.comm[static_cast<int>(a)];
    const double bytes = c.bytes_per_device, exposed = c.exposed_s;
    c = budgets[static_cast<std::size_t>(a)];
    c.bytes_per_device = bytes;
    c.exposed_s = exposed;
  }
  fold_moe(res, sc, bp);
  if (opts.links) fold_links(res, cluster, net, total);
  fold_compute_breakdown(res, bp);
  if (interference || noise > 1) book_slowdown_as_overhead(res);
  fold_memory(res, sc, bp, stats);
  fold_perturbed_devices(res, sc, prog, stats, cfg.record_ops ? &run.crit : nullptr, step0);
  fold_offload(res, sc, bp, step0);
  if (cfg.record_ops) {
    fold_critical_path(res, run.crit, step0);
    fold_critical_devices(res, run.crit, step0);
    if (opts.trace) {
      res.critical_segments = std::move(run.crit.segments);
      rec.mark_critical(run.crit.ops);
    }
  }
  if (opts.trace) rec.finish(total);
  fold_tp_crossing(res, cluster, prog);
  fold_scale_noise(res, sc.implementation.compute_variability, noise, cfg.record_ops);

  res.warnings = dynamic_warnings(sc, bp, res, cfg.record_ops || !opts.critical_path ? 0 : ops);
  res.events = eng.events_processed();
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

/// The symmetric fast path when the scenario allows it. When a run finds replicas of
/// one class drifting apart (sim::SymmetryBroken), it runs again in finer classes,
/// and then every rank, saying why.
Result simulate_symmetric(const Scenario& sc, const SimOptions& opts) {
  // Alike flows fold wherever the scenario allows the symmetric fast path (with
  // `symmetry: off` every flow runs as itself: the reference the fast paths are
  // tested against). A run whose folded flows would part runs again unfolded.
  // Once refused, the fold is not tried again in finer classes: the traffic that parted
  // the flows is still there.
  std::string refused;
  auto once = [&](Reduction reduction) {
    if (sc.simulation.symmetry && refused.empty()) {
      try {
        return simulate_once(sc, opts, reduction, true);
      } catch (const sim::AlikeFlowsDiffer& why) {
        refused = std::string("unfolded: ") + why.what();
      }
    }
    Result res = simulate_once(sc, opts, reduction, false);
    if (!refused.empty()) res.alike_flows = refused;
    return res;
  };
  try {
    return once(Reduction::classes);
  } catch (const sim::SymmetryBroken& first) {
    try {
      return once(Reduction::finer_classes);
    } catch (const sim::SymmetryBroken&) {
      Result res = once(Reduction::every_rank);
      res.symmetry = std::string("broken: ") + first.what();
      return res;
    }
  }
}

/// The scenario of the step split's second simulation (step_split.hpp): m + Δ micro-batches,
/// the rest as resolved. A rule it breaks is a user error said as the split's, since the
/// user asked for m micro-batches, not m + Δ.
ResolvedScenario split_probe(const ResolvedScenario& resolved) {
  LayoutSpec probe = resolved->layout;
  probe.microbatches = split_probe_microbatches(probe);
  probe.global_batch = 0;  // the micro-batches decide: dp and everything else stay
  try {
    return resolve_variant(resolved, probe, resolved->implementation);
  } catch (const InvalidScenario& e) {
    std::vector<ScenarioIssue> issues = e.issues();
    for (auto& issue : issues) {
      issue.message = fmt::format("the step split's second simulation, at {} micro-batches: {}", probe.microbatches, issue.message);
      issue.hint = "the split runs the scenario once more with one period of micro-batches more; leave the split out, or run fewer";
    }
    throw InvalidScenario(std::move(issues));
  }
}

/// A simulation of which only the step time and the memory are read (the split's second
/// run, a warning's priced remedy): no what-ifs of its own, no critical path, no link report.
SimOptions step_only() {
  SimOptions o;
  o.what_if = false;
  o.critical_path = false;
  o.links = false;
  return o;
}

Result simulate_resolved(const ResolvedScenario& resolved, const SimOptions& opts) {
  const Scenario& sc = resolved.scenario();
  Result res = simulate_symmetric(sc, opts);
  fold_training(res, sc);  // checkpoint.hpp: trained/frozen parameters, checkpoint cost
  if (opts.step_split) {
    const ResolvedScenario probe = split_probe(resolved);
    res.step_split = split_step(sc.layout.microbatches, res.step_time_s, probe->layout.microbatches,
                                simulate_symmetric(*probe, step_only()).step_time_s);
  }
  if (opts.what_if) {
    // The remedies are priced by step time, peak memory and fit alone (what_if.hpp,
    // cp_advice.hpp): their critical paths and link reports were built and never read.
    const SimOptions sub = step_only();
    price_warnings(sc, res, [&sub](const Scenario& fixed) { return simulate_symmetric(fixed, sub).step_time_s; });
    price_cp_advice(sc, res, [&sub](const Scenario& fixed) { return simulate_symmetric(fixed, sub); });
  }
  // Checkpoint stalls and, with failures, lost work and restores stretch the wall clock.
  double goodput = 1;
  if (res.has_checkpoint) goodput = res.checkpoint.failures ? res.checkpoint.goodput : 1 - res.checkpoint.overhead_fraction;
  res.training = training_cost(sc.training, res.devices, res.tokens_per_s, goodput);
  const ErrorBand band = error_band(res.step_time_s, band_features(sc), shipped_residuals());
  if (band.rows > 0) res.step_time_band = {band.rows, band.lo_s, band.hi_s, kBandCoverage, band.group};
  return res;
}

}  // namespace

Result simulate(const ResolvedScenario& resolved, const SimOptions& opts) {
  try {
    return simulate_resolved(resolved, opts);
  } catch (const sim::UnattributedTimeRangeError& e) {
    // sim knows no scenario keys: the values that make a step this long are named here.
    throw sim::TimeRangeError(std::string(e.what()) +
                              "; check rates such as peak_tflops, hbm_bandwidth, link bandwidths and bandwidth_factor, and "
                              "sizes such as seq_len");
  } catch (const sim::DrainTimeRangeError& e) {
    throw sim::TimeRangeError(std::string(e.what()) +
                              "; check that link's bandwidth (the cluster's link bandwidths, a perturbation's "
                              "bandwidth_factor), the message sizes, and what made the run this long before it (latencies, "
                              "rates, counts)");
  }
}

}  // namespace ls::wl

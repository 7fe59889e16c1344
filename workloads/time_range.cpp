// workloads/time_range.cpp — the step's lower bound and the located time-range error
// (time_range.hpp says why the bound holds and how the key is chosen).
#include "workloads/time_range.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "sim/program.hpp"
#include "sim/time.hpp"
#include "topology/cluster.hpp"
#include "topology/planner.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/model/model.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/program_builder.hpp"

namespace ls::wl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kMaxPerturbationCandidates = 8;  // the most extreme entries of each list

/// The smallest factor Engine::jitter can return for coefficient of variation `cv`:
/// exp(σ·z − σ²/2) with σ² = ln(1 + cv²) and z ≥ −sqrt(−2 ln 2⁻⁵³) (u1 ≥ 2⁻⁵³ in its
/// Box–Muller draw). 1 without jitter.
double jitter_floor(double cv) {
  if (!(cv > 0)) return 1.0;
  const double sigma = std::sqrt(std::log1p(cv * cv));
  const double z_max = std::sqrt(-2.0 * std::log(0x1.0p-53));
  return std::exp(-sigma * z_max - 0.5 * sigma * sigma);
}

/// A stage template's work, folded so that each rank costs O(distinct entries).
struct StageWork {
  std::array<double, sim::kStreamCount> plain{}, scaled{};  // compute seconds per stream (scaled: × work_scale)
  std::map<std::tuple<int, int, int, int, double>, double> collectives;  // (stream, slot, op, variant, bytes) → runs
  std::map<std::tuple<int, int, double>, double> sends;                  // (stream, peer stage, bytes) → count
};

StageWork fold_stage(const sim::StageProgram& sp) {
  StageWork w;
  for (std::size_t st = 0; st < sp.streams.size(); ++st)
    for (const sim::Op& op : sp.streams[st]) {
      const int stream = static_cast<int>(st);
      switch (op.kind) {
        case sim::OpKind::compute: (op.scaled_by_rank ? w.scaled : w.plain)[st] += op.duration.seconds(); break;
        case sim::OpKind::collective:
          w.collectives[{stream, op.group_slot, static_cast<int>(op.coll), op.variant, op.bytes}] += std::max<int>(1, op.repeat);
          break;
        case sim::OpKind::send: w.sends[{stream, op.peer_stage, op.bytes}] += 1; break;
        case sim::OpKind::recv: break;
      }
    }
  return w;
}

/// Seconds of a plan's phase latencies: each phase ends that long after its last flow.
double latency_of(const sim::CommPlan& plan) {
  double s = 0;
  for (const auto& phase : plan.phases) s += phase.latency.seconds();
  return s;
}

std::string duration_text(double s) {
  if (!std::isfinite(s)) return "longer than the range";
  if (s < 86400.0) return fmt::format("{:.4g} s", s);
  return fmt::format("{:.4g} s ({:.4g} days)", s, s / 86400.0);
}

std::string bandwidth_text(double Bps) {
  if (Bps >= 1e9) return fmt::format("{:.4g} GB/s", Bps / 1e9);
  if (Bps >= 1e6) return fmt::format("{:.4g} MB/s", Bps / 1e6);
  if (Bps >= 1e3) return fmt::format("{:.4g} kB/s", Bps / 1e3);
  return fmt::format("{:.4g} B/s ({:.4g} b/s)", Bps, Bps * 8);
}

std::string tflops_text(double flops) { return fmt::format("{:.4g} TFLOP/s", flops / 1e12); }

struct Candidate {
  std::string key;
  std::string given;      // the value as the scenario has it, with its unit
  std::string reference;  // "the GPU preset's 989 TFLOP/s"
  std::function<void(Scenario&)> reset;
  int tier = 0;  // 0: a value with a published reference; 1: a count of work, tried only when no tier-0 reset helps
};

/// The cluster defaults the candidates reset to (topo::ClusterSpec, as the key table
/// documents them).
struct ClusterDefaults {
  sim::Time intra_latency, inter_latency;
  double pcie_Bps = 0, oversubscription = 1;
};
// GCC 12 warns (-Wmaybe-uninitialized, a false positive in std::string's destructor) on
// a ClusterSpec built here, however it is built.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
ClusterDefaults cluster_defaults() {
  const topo::ClusterSpec d;
  return {d.intra.latency, d.inter.latency, d.inter.pcie_bandwidth_Bps, d.inter.oversubscription};
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

std::vector<Candidate> candidates(const Scenario& s, const LinkRateOrigin& origin) {
  std::vector<Candidate> out;
  const auto gpu_ref = gpu_preset(s.gpu.name);
  if (gpu_ref) {
    const GpuSpec g = *gpu_ref;
    if (s.gpu.peak_flops < g.peak_flops)
      out.push_back({"cluster.gpu.peak_tflops", tflops_text(s.gpu.peak_flops),
                     fmt::format("the {} preset's {}", g.name, tflops_text(g.peak_flops)),
                     [v = g.peak_flops](Scenario& x) { x.gpu.peak_flops = v; }});
    if (s.gpu.fp8_peak_flops > 0 && s.gpu.fp8_peak_flops < g.fp8_peak_flops)
      out.push_back({"cluster.gpu.fp8_tflops", tflops_text(s.gpu.fp8_peak_flops),
                     fmt::format("the {} preset's {}", g.name, tflops_text(g.fp8_peak_flops)),
                     [v = g.fp8_peak_flops](Scenario& x) { x.gpu.fp8_peak_flops = v; }});
    if (s.gpu.hbm_bandwidth_Bps < g.hbm_bandwidth_Bps)
      out.push_back({"cluster.gpu.hbm_bandwidth", bandwidth_text(s.gpu.hbm_bandwidth_Bps),
                     fmt::format("the {} preset's {}", g.name, bandwidth_text(g.hbm_bandwidth_Bps)),
                     [v = g.hbm_bandwidth_Bps](Scenario& x) { x.gpu.hbm_bandwidth_Bps = v; }});
    // A link rate derived from the GPU is blamed on the GPU's figure (the key given).
    if (!s.cluster.graph && origin.intra_from_gpu && s.gpu.nvlink_bandwidth_Bps < g.nvlink_bandwidth_Bps)
      out.push_back({"cluster.gpu.nvlink_bandwidth", bandwidth_text(s.gpu.nvlink_bandwidth_Bps),
                     fmt::format("the {} preset's {}", g.name, bandwidth_text(g.nvlink_bandwidth_Bps)),
                     [v = g.nvlink_bandwidth_Bps](Scenario& x) { x.gpu.nvlink_bandwidth_Bps = x.cluster.intra.bandwidth_Bps = v; }});
    if (!s.cluster.graph && origin.inter_from_gpu && s.gpu.nic_bandwidth_Bps < g.nic_bandwidth_Bps)
      out.push_back({"cluster.gpu.nic_bandwidth", bandwidth_text(s.gpu.nic_bandwidth_Bps),
                     fmt::format("the {} preset's {}", g.name, bandwidth_text(g.nic_bandwidth_Bps)),
                     [v = g.nic_bandwidth_Bps](Scenario& x) { x.gpu.nic_bandwidth_Bps = x.cluster.inter.bandwidth_Bps = v; }});
  }
  // A cluster link bandwidth given explicitly: the cluster default is the GPU's rate.
  if (!s.cluster.graph && !origin.intra_from_gpu && s.gpu.nvlink_bandwidth_Bps > s.cluster.intra.bandwidth_Bps)
    out.push_back({"cluster.intra_node.bandwidth", bandwidth_text(s.cluster.intra.bandwidth_Bps),
                   fmt::format("the GPU's nvlink_bandwidth, {}", bandwidth_text(s.gpu.nvlink_bandwidth_Bps)),
                   [v = s.gpu.nvlink_bandwidth_Bps](Scenario& x) { x.cluster.intra.bandwidth_Bps = v; }});
  if (!s.cluster.graph && !origin.inter_from_gpu && s.gpu.nic_bandwidth_Bps > s.cluster.inter.bandwidth_Bps)
    out.push_back({"cluster.inter_node.bandwidth", bandwidth_text(s.cluster.inter.bandwidth_Bps),
                   fmt::format("the GPU's nic_bandwidth, {}", bandwidth_text(s.gpu.nic_bandwidth_Bps)),
                   [v = s.gpu.nic_bandwidth_Bps](Scenario& x) { x.cluster.inter.bandwidth_Bps = v; }});
  // Latencies, the PCIe hop and the fabric's oversubscription: the cluster default.
  const ClusterDefaults cd = cluster_defaults();
  const sim::Time intra = cd.intra_latency, inter = cd.inter_latency;
  if (!s.cluster.graph && s.cluster.intra.latency > intra)
    out.push_back({"cluster.intra_node.latency", fmt::format("{}", s.cluster.intra.latency), fmt::format("the default {}", intra),
                   [intra](Scenario& x) { x.cluster.intra.latency = intra; }});
  if (!s.cluster.graph && s.cluster.inter.latency > inter)
    out.push_back({"cluster.inter_node.latency", fmt::format("{}", s.cluster.inter.latency), fmt::format("the default {}", inter),
                   [inter](Scenario& x) { x.cluster.inter.latency = inter; }});
  if (!s.cluster.graph && s.cluster.inter.pcie_bandwidth_Bps < cd.pcie_Bps)
    out.push_back({"cluster.inter_node.pcie_bandwidth", bandwidth_text(s.cluster.inter.pcie_bandwidth_Bps),
                   fmt::format("the default {}", bandwidth_text(cd.pcie_Bps)),
                   [v = cd.pcie_Bps](Scenario& x) { x.cluster.inter.pcie_bandwidth_Bps = v; }});
  if (!s.cluster.graph && s.cluster.inter.oversubscription > cd.oversubscription)
    out.push_back({"cluster.inter_node.oversubscription", fmt::format("{:.4g}", s.cluster.inter.oversubscription),
                   fmt::format("the default {:.4g}", cd.oversubscription),
                   [v = cd.oversubscription](Scenario& x) { x.cluster.inter.oversubscription = v; }});
  if (const auto m = model_preset(s.model.name)) {
    const auto add = [&](const char* key, std::int64_t given, std::int64_t ref, std::function<void(Scenario&)> reset) {
      if (given > ref)
        out.push_back({key, fmt::format("{}", given), fmt::format("the {} preset's {}", m->name, ref), std::move(reset)});
    };
    add("model.seq_len", s.model.seq_len, m->seq_len, [v = m->seq_len](Scenario& x) { x.model.seq_len = v; });
    add("model.layers", s.model.layers, m->layers, [v = m->layers](Scenario& x) { x.model.layers = v; });
    add("model.hidden", s.model.hidden, m->hidden, [v = m->hidden](Scenario& x) { x.model.hidden = v; });
    if (m->ffn_hidden > 0)
      add("model.ffn_hidden", s.model.ffn_hidden, m->ffn_hidden, [v = m->ffn_hidden](Scenario& x) { x.model.ffn_hidden = v; });
    add("model.vocab", s.model.vocab, m->vocab, [v = m->vocab](Scenario& x) { x.model.vocab = v; });
  }
  if (s.layout.global_batch == 0 && s.layout.microbatches > 1)
    out.push_back({"layout.microbatches", fmt::format("{}", s.layout.microbatches), "1",
                   [](Scenario& x) { x.layout.microbatches = 1; }, 1});
  if (s.layout.microbatch_size > 1 && s.layout.global_batch == 0)
    out.push_back({"layout.microbatch_size", fmt::format("{}", s.layout.microbatch_size), "1",
                   [](Scenario& x) { x.layout.microbatch_size = 1; }, 1});
  // The most extreme perturbations first, a few of each.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < s.perturbations.links.size(); ++i)
    if (s.perturbations.links[i].bandwidth_factor > 0 && s.perturbations.links[i].bandwidth_factor < 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return s.perturbations.links[a].bandwidth_factor < s.perturbations.links[b].bandwidth_factor;
  });
  if (order.size() > kMaxPerturbationCandidates) order.resize(kMaxPerturbationCandidates);
  for (const std::size_t i : order)
    out.push_back({fmt::format("perturbations.links[{}].bandwidth_factor", i),
                   fmt::format("{:.4g} (link {})", s.perturbations.links[i].bandwidth_factor, s.perturbations.links[i].link), "1",
                   [i](Scenario& x) { x.perturbations.links[i].bandwidth_factor = 1; }});
  order.clear();
  for (std::size_t i = 0; i < s.perturbations.devices.size(); ++i)
    if (s.perturbations.devices[i].compute_slowdown > 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return s.perturbations.devices[a].compute_slowdown > s.perturbations.devices[b].compute_slowdown;
  });
  if (order.size() > kMaxPerturbationCandidates) order.resize(kMaxPerturbationCandidates);
  for (const std::size_t i : order)
    out.push_back({fmt::format("perturbations.devices[{}].compute_slowdown", i),
                   fmt::format("{:.4g} (device {})", s.perturbations.devices[i].compute_slowdown, s.perturbations.devices[i].device),
                   "1", [i](Scenario& x) { x.perturbations.devices[i].compute_slowdown = 1; }});
  if (s.simulation.steps > 1)
    out.push_back({"simulation.steps", fmt::format("{}", s.simulation.steps), "1", [](Scenario& x) { x.simulation.steps = 1; }, 1});
  return out;
}

/// steps × the bound: what must fit on the engine's clock.
double run_bound(const Scenario& s, StepBound* detail = nullptr) {
  StepBound b = step_lower_bound(s);
  const double total = b.seconds * std::max(1, s.simulation.steps);
  if (detail) *detail = std::move(b);
  return total;
}

/// The key behind the largest term when no counterfactual lowers the bound.
std::string fallback_key(const Scenario& s, const StepBound& b, const LinkRateOrigin& origin) {
  if (b.what.rfind("latencies", 0) == 0) return "cluster";
  if (b.what.rfind("link ", 0) != 0) return gpu_preset(s.gpu.name) ? "model" : "cluster.gpu";
  if (s.cluster.graph) return "cluster.graph";
  if (b.what.find("[nvlink]") != std::string::npos || b.what.find("[nvswitch]") != std::string::npos)
    return origin.intra_from_gpu ? "cluster.gpu.nvlink_bandwidth" : "cluster.intra_node.bandwidth";
  if (b.what.find("[pcie]") != std::string::npos) return "cluster.inter_node.pcie_bandwidth";
  return origin.inter_from_gpu ? "cluster.gpu.nic_bandwidth" : "cluster.inter_node.bandwidth";
}

}  // namespace

StepBound step_lower_bound(const Scenario& s) {
  StepBound out;
  try {
    const topo::Cluster cluster = topo::Cluster::build(effective_cluster(s));
    const BuiltProgram bp = build_program(s);
    const sim::Program& prog = bp.program;

    std::vector<double> factor(static_cast<std::size_t>(cluster.gpu_count()), 1.0);
    for (const auto& ds : s.perturbations.devices)
      if (const int g = cluster.gpu_index(ds.device); g >= 0) factor[static_cast<std::size_t>(g)] *= ds.compute_slowdown;
    const std::vector<double> capacity = link_capacities(s, cluster);

    std::vector<StageWork> stages;
    stages.reserve(prog.stages.size());
    for (const auto& sp : prog.stages) stages.push_back(fold_stage(sp));

    // Per rank and stream: its compute plus the phase latencies of its collectives and
    // transfers (one op at a time on a stream). Per plan: how often the step runs it
    // (a collective once per group, at its first member), for the link term below.
    topo::Planner planner(cluster, s.cluster.ideal_network, collective_costs_of(s.gpu));
    std::map<std::tuple<int, int, int, double>, const sim::CommPlan*> group_plans;  // (group, op, variant, bytes)
    std::map<std::tuple<int, int, double>, const sim::CommPlan*> transfer_plans;    // (src, dst, bytes)
    // Summed in the order the plans are first met, not by address: the link bytes are
    // sums of doubles, and an address order would make the blamed link (of equals, the
    // first to reach the maximum) depend on where the heap put the plans.
    std::vector<std::pair<const sim::CommPlan*, double>> runs_of;
    std::unordered_map<const sim::CommPlan*, std::size_t> run_slot;
    const auto add_runs = [&](const sim::CommPlan* plan, double runs) {
      const auto [it, fresh] = run_slot.try_emplace(plan, runs_of.size());
      if (fresh) runs_of.emplace_back(plan, 0.0);
      runs_of[it->second].second += runs;
    };
    std::vector<std::int32_t> devs;
    const auto group_plan = [&](std::int32_t g, int op, int variant, double bytes) -> const sim::CommPlan* {
      const auto key = std::make_tuple(static_cast<int>(g), op, variant, bytes);
      if (const auto it = group_plans.find(key); it != group_plans.end()) return it->second;
      const auto& members = prog.groups[static_cast<std::size_t>(g)].ranks;
      const auto coll = static_cast<sim::CollOp>(op);
      const sim::CommPlan* plan = nullptr;
      // A weighted all-to-all (MoE load) is left out: still a lower bound.
      if (!(coll == sim::CollOp::all_to_all && prog.all_to_all_weight.size() == members.size())) {
        devs.clear();
        for (const std::int32_t m : members) devs.push_back(prog.ranks[static_cast<std::size_t>(m)].device);
        plan = &planner.collective(devs, coll, bytes);
      }
      group_plans.emplace(key, plan);
      return plan;
    };
    const double compute_floor = jitter_floor(s.perturbations.jitter.compute_cv);
    for (std::size_t r = 0; r < prog.ranks.size(); ++r) {
      const sim::RankInfo& info = prog.ranks[r];
      const StageWork& w = stages[static_cast<std::size_t>(info.stage)];
      const double f = factor[static_cast<std::size_t>(info.device)] * compute_floor;
      std::array<double, sim::kStreamCount> busy{}, waits{};  // compute, latencies
      for (std::size_t st = 0; st < sim::kStreamCount; ++st) busy[st] = (w.plain[st] + w.scaled[st] * info.work_scale) * f;
      for (const auto& [key, runs] : w.collectives) {
        const auto [stream, slot, op, variant, bytes] = key;
        const std::int32_t g = info.group[static_cast<std::size_t>(slot)];
        if (g < 0) continue;  // degree 1: done at once
        const sim::CommPlan* plan = group_plan(g, op, variant, bytes);
        if (!plan) continue;
        waits[static_cast<std::size_t>(stream)] += latency_of(*plan) * runs;
        if (prog.groups[static_cast<std::size_t>(g)].ranks.front() == static_cast<std::int32_t>(r)) add_runs(plan, runs);
      }
      for (const auto& [key, count] : w.sends) {
        const auto [stream, peer_stage, bytes] = key;
        const std::int32_t peer = prog.pp_peer[r * prog.stages.size() + static_cast<std::size_t>(peer_stage)];
        const std::int32_t dst = prog.ranks[static_cast<std::size_t>(peer)].device;
        auto [it, fresh] = transfer_plans.try_emplace({info.device, dst, bytes}, nullptr);
        if (fresh) it->second = &planner.transfer(info.device, dst, bytes);
        waits[static_cast<std::size_t>(stream)] += latency_of(*it->second) * count;
        add_runs(it->second, count);
      }
      for (std::size_t st = 0; st < sim::kStreamCount; ++st)
        if (busy[st] + waits[st] > out.seconds) {
          out.seconds = busy[st] + waits[st];
          out.what = waits[st] > busy[st] ? fmt::format("latencies of the collectives and transfers of {}", cluster.gpu_name(info.device))
                                          : fmt::format("compute on {}", cluster.gpu_name(info.device));
        }
    }

    // Links: every flow's bytes on every link of its path, over the link's capacity.
    std::vector<double> link_bytes(cluster.link_count(), 0.0);
    for (const auto& [plan, runs] : runs_of)
      for (const auto& phase : plan->phases)
        for (const auto& flow : phase.flows)
          for (std::uint32_t k = 0; k < flow.path_len; ++k) link_bytes[plan->links[flow.path_begin + k]] += flow.bytes * runs;
    const double comm_floor = jitter_floor(s.perturbations.jitter.comm_cv);
    for (std::size_t l = 0; l < link_bytes.size(); ++l) {
      if (!(link_bytes[l] > 0) || !(capacity[l] > 0)) continue;
      const double t = link_bytes[l] / capacity[l] * comm_floor;
      if (t > out.seconds) {
        const auto& info = cluster.link(static_cast<sim::LinkId>(l));
        out.seconds = t;
        out.what = fmt::format("link {} [{}]: {:.4g} bytes at {}", info.name, topo::kLinkKindNames[static_cast<std::size_t>(info.type)],
                               link_bytes[l], bandwidth_text(capacity[l]));
      }
    }
  } catch (const sim::TimeRangeError&) {
    out.seconds = kInf;
    out.what = "a part of the step alone";
  }
  return out;
}

void check_time_range(const Scenario& s, const LinkRateOrigin& origin, std::vector<ScenarioIssue>& issues) {
  StepBound bound;
  double total = 0;
  try {
    total = run_bound(s, &bound);
  } catch (const std::exception&) {
    return;  // not a range problem: the simulation reports it as before
  }
  if (total < sim::kMaxTimeSeconds) return;

  // Counterfactual: the candidate whose reset alone gives the smallest bound, among
  // the values with a published reference first, then among the counts of work.
  const Candidate* best = nullptr;
  double best_total = total;
  const std::vector<Candidate> cands = candidates(s, origin);
  for (const int tier : {0, 1}) {
    for (const Candidate& c : cands) {
      if (c.tier != tier) continue;
      Scenario x = s;
      c.reset(x);
      double t = kInf;
      try {
        t = run_bound(x);
      } catch (const std::exception&) {
        continue;  // the reset makes an invalid program (e.g. explicit stage_layers): no answer
      }
      if (t < best_total) {
        best = &c;
        best_total = t;
      }
    }
    if (best) break;
  }
  const int steps = std::max(1, s.simulation.steps);
  const std::string run = steps > 1 ? fmt::format("{} steps", steps) : "the step";
  const std::string range = "outside the representable range of time (int64 picoseconds, about 106 days), the step would exceed it";
  const std::string lasts = std::isfinite(total)
                                ? fmt::format("makes {} last at least {} ({})", run, duration_text(total), bound.what)
                                : fmt::format("makes part of {} (one operation, or a sum of them) too long to represent", run);
  if (best) {
    std::string with = fmt::format("with {} it would last at least {}", best->reference, duration_text(best_total));
    if (best_total >= sim::kMaxTimeSeconds) with += ", still outside: other values are too far off as well";
    issues.push_back({best->key, fmt::format("{} {}: {}; {}", best->given, lasts, range, with), "", "", true});
    return;
  }
  issues.push_back({fallback_key(s, bound, origin), fmt::format("this scenario {}: {}", lasts, range),
                    "check rates such as peak_tflops, hbm_bandwidth and link bandwidths, and sizes such as seq_len", "", false});
}

}  // namespace ls::wl

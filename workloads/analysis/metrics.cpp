// workloads/analysis/metrics.cpp — see metrics.hpp.
#include "workloads/analysis/metrics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>

#include "workloads/model/headroom.hpp"
#include "workloads/analysis/link_groups.hpp"
#include "workloads/model/model.hpp"
#include "workloads/model/schedule.hpp"

namespace ls::wl {

using sim::Time;

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest-rank percentile: with few steps p99 is the max, never an interpolation.
  const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(k, v.size() - 1)];
}

void fold_step_times(Result& res, const std::vector<double>& step_s) {
  res.step_stats.step_s = step_s;
  res.step_stats.mean_s = std::accumulate(step_s.begin(), step_s.end(), 0.0) / static_cast<double>(step_s.size());
  res.step_stats.p50_s = percentile(step_s, 0.5);
  res.step_stats.p99_s = percentile(step_s, 0.99);
  res.step_stats.max_s = *std::max_element(step_s.begin(), step_s.end());
  res.step_time_s = res.step_stats.mean_s;
}

void fold_flops(Result& res, const Scenario& sc, const BuiltProgram& bp, const std::vector<sim::RankStats>& stats) {
  const int D = static_cast<int>(stats.size());
  for (const auto& st : stats) {
    res.model_flops_per_step += st.model_flops;
    res.hardware_flops_per_step += st.hw_flops;
  }
  res.tokens_per_s = bp.tokens_per_step / res.step_time_s;
  res.tflops_per_gpu = res.hardware_flops_per_step / res.step_time_s / D / 1e12;
  res.mfu = res.model_flops_per_step / (res.step_time_s * D * sc.gpu.peak_flops);
  res.hfu = res.hardware_flops_per_step / (res.step_time_s * D * sc.gpu.peak_flops);
}

void fold_pipeline(Result& res, const Scenario& sc, const BuiltProgram& bp, const std::vector<sim::RankStats>& stats,
                   double step0) {
  const auto& prog = bp.program;
  const int D = static_cast<int>(stats.size());
  const auto& L = sc.layout;
  res.stages = L.pp;
  res.microbatches = L.microbatches;
  res.virtual_stages = std::max(1, L.virtual_stages);
  res.schedule = schedule_name(L.schedule);
  res.bubble_fraction_analytic = analytic_bubble(L.schedule, L.pp, L.microbatches, res.virtual_stages);
  Time win_start = Time::max(), win_end = Time::zero();
  for (const auto& st : stats) {
    win_start = std::min(win_start, st.busy_from);
    win_end = std::max(win_end, st.busy_until);
  }
  const double window = (win_end - win_start).seconds();
  std::vector<int> per_stage_count(static_cast<std::size_t>(L.pp), 0);
  res.per_stage.resize(static_cast<std::size_t>(L.pp));
  for (int st = 0; st < L.pp; ++st) {
    auto& sr = res.per_stage[static_cast<std::size_t>(st)];
    sr.stage = st;
    sr.layers = bp.stage_layers[static_cast<std::size_t>(st)];
    sr.bubble_fraction_analytic = res.bubble_fraction_analytic;
  }
  for (int r = 0; r < D; ++r) {
    const auto& st = stats[static_cast<std::size_t>(r)];
    const int s = prog.ranks[static_cast<std::size_t>(r)].stage;
    auto& sr = res.per_stage[static_cast<std::size_t>(s)];
    ++per_stage_count[static_cast<std::size_t>(s)];
    sr.compute_s += st.compute_busy.seconds();
    sr.bubble_fraction += window > 0 ? 1.0 - st.busy_time.seconds() / window : 0.0;
    sr.idle_fraction += 1.0 - st.compute_busy.seconds() / step0;
  }
  for (int st = 0; st < L.pp; ++st) {
    auto& sr = res.per_stage[static_cast<std::size_t>(st)];
    const double n = std::max(1, per_stage_count[static_cast<std::size_t>(st)]);
    sr.compute_s /= n;
    sr.bubble_fraction /= n;
    sr.idle_fraction /= n;
    res.bubble_fraction += sr.bubble_fraction / L.pp;
  }
}

void fold_comm(Result& res, const Scenario& sc, const sim::Program& prog, const std::vector<sim::RankStats>& stats) {
  const auto& L = sc.layout;
  const int D = static_cast<int>(stats.size());
  for (int ax = 1; ax < kAxisCount; ++ax) {
    if (reported_axis(static_cast<Axis>(ax)) != static_cast<Axis>(ax)) continue;  // folded into dp or tp below
    const bool is_dp = ax == static_cast<int>(Axis::dp);
    const bool is_tp = ax == static_cast<int>(Axis::tp);
    double bytes = 0, exposed = 0;
    int n = 0;
    for (int r = 0; r < D; ++r) {
      const auto& ri = prog.ranks[static_cast<std::size_t>(r)];
      const auto& st = stats[static_cast<std::size_t>(r)];
      bool member = ax == static_cast<int>(Axis::pp) ? L.pp > 1 : ri.group[static_cast<std::size_t>(ax)] >= 0;
      if (is_dp) member = member || ri.group[static_cast<int>(Axis::edp)] >= 0 || ri.group[static_cast<int>(Axis::dpr)] >= 0;
      if (is_tp) member = member || ri.group[static_cast<int>(Axis::etp)] >= 0;
      if (!member) continue;
      ++n;
      bytes += st.bytes_sent[ax];
      exposed += st.exposed[ax].seconds();
      if (is_dp) {
        for (const Axis extra : {Axis::edp, Axis::dpr}) {
          bytes += st.bytes_sent[static_cast<int>(extra)];
          exposed += st.exposed[static_cast<int>(extra)].seconds();
        }
      }
      if (is_tp) {
        bytes += st.bytes_sent[static_cast<int>(Axis::etp)];
        exposed += st.exposed[static_cast<int>(Axis::etp)].seconds();
      }
    }
    if (n > 0) {
      res.comm[ax].bytes_per_device = bytes / n;
      res.comm[ax].exposed_s = exposed / n;
    }
  }
}

void fold_moe(Result& res, const Scenario& sc, const BuiltProgram& bp) {
  const auto& L = sc.layout;
  if (sc.model.moe.experts > 0) {
    auto& mo = res.moe;
    mo.present = true;
    mo.experts = sc.model.moe.experts;
    mo.top_k = sc.model.moe.top_k;
    mo.ep = L.ep;
    mo.expert_load = bp.routing.expert_load;
    mo.device_factor = bp.routing.device_factor;
    mo.dropped_fraction = bp.routing.dropped_fraction;
    int moe_layers = 0;
    for (int l = 0; l < block_count(sc.model); ++l) moe_layers += layer_is_moe(sc.model, l) ? 1 : 0;  // MTP blocks too
    mo.dropped_tokens_per_step = bp.routing.dropped_fraction * bp.tokens_per_step * sc.model.moe.top_k * moe_layers;
  }
}

void fold_links(Result& res, const topo::Cluster& cluster, const sim::FlowNetwork& net, Time total) {
  // Per link kind (indexed by LinkKind), reported in the order of the kinds' names.
  std::array<LinkKindStats, topo::kLinkKindNames.size()> by_kind{};
  std::vector<LinkStat> links;
  links.reserve(cluster.link_count());
  const double span_s = total.seconds();
  for (std::size_t l = 0; l < cluster.link_count(); ++l) {
    const auto id = static_cast<sim::LinkId>(l);
    const auto& li = cluster.link(id);
    const double bytes = net.link_bytes(id);
    const double bw = net.bandwidth(id);
    const double busy = net.link_busy(id, total).seconds();
    LinkStat st{li.name, li.kind, bytes, span_s > 0 ? bytes / (bw * span_s) : 0.0};
    st.busy_fraction = span_s > 0 ? busy / span_s : 0.0;
    st.busy_utilization = busy > 0 && bw > 0 ? bytes / (bw * busy) : 0.0;
    st.bottleneck_s = net.link_bottleneck(id, total).seconds();
    st.payload_bytes = net.link_payload_bytes(id);
    auto& k = by_kind[static_cast<std::size_t>(li.type)];
    ++k.count;
    k.bytes += bytes;
    k.payload_bytes += st.payload_bytes;
    k.mean_utilization += st.utilization;
    k.max_utilization = std::max(k.max_utilization, st.utilization);
    links.push_back(std::move(st));
  }
  for (std::size_t i = 0; i < by_kind.size(); ++i) {
    LinkKindStats& k = by_kind[i];
    if (k.count == 0) continue;
    k.kind = topo::kLinkKindNames[i];
    k.mean_utilization /= k.count;
    res.links_by_kind.push_back(std::move(k));
  }
  std::sort(res.links_by_kind.begin(), res.links_by_kind.end(),
            [](const LinkKindStats& x, const LinkKindStats& y) { return x.kind < y.kind; });
  // The ten busiest links with traffic, by utilization to 1e-9 and then by name (unique:
  // a total order). Links that carry alike traffic differ only in the rounding of their
  // byte sums, which depends on how the flows were grouped (sim/alike_flows.hpp, the
  // symmetric fast path): unrounded, such ties would list them in that order instead.
  std::vector<const LinkStat*> used;
  for (const LinkStat& st : links)
    if (st.bytes > 0) used.push_back(&st);
  const auto top = std::min<std::size_t>(used.size(), 10);
  const auto level = [](const LinkStat* l) { return std::llround(l->utilization * 1e9); };
  std::partial_sort(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(top), used.end(), [&](const LinkStat* a, const LinkStat* b) {
    const auto la = level(a), lb = level(b);
    return la > lb || (la == lb && a->name < b->name);
  });
  res.busiest_links.clear();
  for (std::size_t i = 0; i < top; ++i) res.busiest_links.push_back(*used[i]);
  const auto ranked = group_links(links, span_s);
  res.link_group_count = static_cast<int>(ranked.size());
  res.link_groups = reported_link_groups(ranked, 10);
  res.link_bottleneck = link_bottleneck(ranked);
}

void fold_compute_breakdown(Result& res, const BuiltProgram& bp) { res.compute_breakdown = bp.compute_breakdown; }

void fold_memory(Result& res, const Scenario& sc, const BuiltProgram& bp, const std::vector<sim::RankStats>& stats) {
  const auto& L = sc.layout;
  const auto& prog = bp.program;
  const int D = static_cast<int>(stats.size());
  res.memory_capacity_bytes = sc.gpu.memory_bytes;
  res.memory_per_stage.resize(static_cast<std::size_t>(L.pp));
  for (int st = 0; st < L.pp; ++st) res.memory_per_stage[static_cast<std::size_t>(st)] = bp.static_memory[static_cast<std::size_t>(st)];
  for (int r = 0; r < D; ++r) {
    const int s = prog.ranks[static_cast<std::size_t>(r)].stage;
    auto& mt = res.memory_per_stage[static_cast<std::size_t>(s)];
    mt.activations = std::max(mt.activations, static_cast<double>(stats[static_cast<std::size_t>(r)].mem_peak));
  }
  for (auto& mt : res.memory_per_stage) {
    mt.peak = mt.weights + mt.gradients + mt.master + mt.optimizer + mt.buffers + mt.activations;
    res.max_peak_bytes = std::max(res.max_peak_bytes, mt.peak);
  }
  res.memory_usable_bytes = usable_memory_bytes(sc);
  res.memory_fits = memory_fits(sc, res.max_peak_bytes);
  res.memory_verdict = memory_verdict_name(memory_verdict(sc, res.max_peak_bytes));
}

void fold_critical_path(Result& res, const CriticalWalk& crit, double step0) {
  const double tot = step0;
  auto& cp = res.critical_path;
  cp.device = crit.device;
  cp.compute_s = crit.compute.seconds();
  cp.wait_s = crit.wait.seconds();
  cp.comm_tp_s = crit.comm[static_cast<int>(Axis::tp)].seconds();
  cp.comm_pp_s = crit.comm[static_cast<int>(Axis::pp)].seconds();
  cp.comm_dp_s = crit.comm[static_cast<int>(Axis::dp)].seconds();
  cp.comm_ep_s = crit.comm[static_cast<int>(Axis::ep)].seconds();
  Time comm;
  for (int ax = 0; ax < kAxisCount; ++ax) comm += crit.comm[ax];
  cp.share_compute = crit.compute.seconds() / tot;
  cp.share_comm = comm.seconds() / tot;
  cp.share_wait = crit.wait.seconds() / tot;
}

void fold_tp_crossing(Result& res, const topo::Cluster& cluster, const sim::Program& prog) {
  for (const auto& grp : prog.groups) {
    if (axis_of(grp) != Axis::tp) continue;
    std::vector<std::int32_t> devs;
    for (auto r : grp.ranks) devs.push_back(prog.ranks[static_cast<std::size_t>(r)].device);
    if (!cluster.crosses_nvlink_domains(devs)) continue;
    if (res.tp_groups_crossing_nodes++ == 0) {
      for (auto dv : devs) res.tp_crossing_example.push_back(cluster.gpu_name(dv));
      for (std::size_t k = 0; k < devs.size(); ++k)
        for (auto& kind : cluster.link_kinds_on_route(devs[k], devs[(k + 1) % devs.size()]))
          if (std::find(res.tp_crossing_link_kinds.begin(), res.tp_crossing_link_kinds.end(), kind) ==
              res.tp_crossing_link_kinds.end())
            res.tp_crossing_link_kinds.push_back(kind);
    }
  }
}

}  // namespace ls::wl

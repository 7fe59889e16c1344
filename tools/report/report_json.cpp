// tools/report/report_json.cpp — Result → ordered JSON. Key order follows README.md's "JSON reference" so that a
// reader can diff two summaries line by line.
#include "tools/report/report_json.hpp"
#include "tools/report/finetune_report.hpp"

#include "tools/report/training_report.hpp"
#include "workloads/spec/vocabulary.hpp"

#include <cmath>

namespace ls::tools {

using nlohmann::ordered_json;

namespace {

// JSON cannot carry NaN/inf; nlohmann would print `null` anyway, but making it
// explicit keeps the intent visible and the type of the key stable (number|null).
ordered_json num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

}  // namespace

ordered_json axis_comm_json(const wl::AxisComm& c) {
  return ordered_json{{"bytes_per_device", num(c.bytes_per_device)},
                      {"exposed_s", num(c.exposed_s)},
                      {"bytes_per_flop", num(c.bytes_per_flop)},
                      {"slowest_link", c.slowest_link_Bps > 0
                                           ? ordered_json{{"kind", c.slowest_link_kind}, {"bandwidth_Bps", num(c.slowest_link_Bps)}}
                                           : ordered_json(nullptr)},
                      {"time_at_slowest_link_s", num(c.time_at_slowest_link_s)},
                      {"comm_to_compute", num(c.comm_to_compute)}};
}

namespace {

/// A device's name, or null when the index is none (-1) or out of range.
ordered_json device_name(const wl::Result& r, std::int32_t d) {
  if (d < 0 || static_cast<std::size_t>(d) >= r.device_names.size()) return nullptr;
  return r.device_names[static_cast<std::size_t>(d)];
}

/// The headline figures: what ran and how fast.
void add_headline_json(ordered_json& j, const wl::Result& r) {
  j["scenario"] = r.scenario;
  j["devices"] = r.devices;
  j["steps"] = r.steps;
  j["step_time_s"] = num(r.step_time_s);
  j["tokens_per_s"] = num(r.tokens_per_s);
  j["model_flops_per_step"] = num(r.model_flops_per_step);
  j["hardware_flops_per_step"] = num(r.hardware_flops_per_step);
  j["tflops_per_gpu"] = num(r.tflops_per_gpu);
  j["mfu"] = num(r.mfu);
  j["hfu"] = num(r.hfu);
}

ordered_json pipeline_json(const wl::Result& r) {
  ordered_json pipe;
  pipe["stages"] = r.stages;
  pipe["microbatches"] = r.microbatches;
  pipe["schedule"] = r.schedule;
  pipe["virtual_stages"] = r.virtual_stages;
  pipe["bubble_fraction_analytic"] = num(r.bubble_fraction_analytic);
  pipe["bubble_fraction"] = num(r.bubble_fraction);
  ordered_json stages = ordered_json::array();
  for (const auto& s : r.per_stage) {
    ordered_json e;
    e["stage"] = s.stage;
    e["layers"] = s.layers;
    e["compute_s"] = num(s.compute_s);
    e["bubble_fraction"] = num(s.bubble_fraction);
    e["idle_fraction"] = num(s.idle_fraction);
    e["bubble_fraction_analytic"] = num(s.bubble_fraction_analytic);  // extra
    e["compute_min_s"] = num(s.compute_min_s);  // extras: the spread over the stage's ranks
    e["compute_max_s"] = num(s.compute_max_s);
    e["slowest_device"] = device_name(r, s.slowest_device);
    stages.push_back(std::move(e));
  }
  pipe["per_stage"] = std::move(stages);
  return pipe;
}

ordered_json comm_json(const wl::Result& r) {
  ordered_json comm;
  for (wl::Axis a : wl::kReportedAxes) comm[wl::axis_name(a)] = axis_comm_json(r.comm[static_cast<int>(a)]);
  return comm;
}

ordered_json links_json(const wl::Result& r) {
  ordered_json links;
  ordered_json by_kind = ordered_json::object();
  for (const auto& k : r.links_by_kind) {
    by_kind[k.kind] = ordered_json{{"count", k.count},
                                   {"bytes", num(k.bytes)},
                                   {"payload_bytes", num(k.payload_bytes)},
                                   {"mean_utilization", num(k.mean_utilization)},
                                   {"max_utilization", num(k.max_utilization)}};
  }
  links["by_kind"] = std::move(by_kind);
  ordered_json busiest = ordered_json::array();
  for (const auto& l : r.busiest_links) {
    busiest.push_back(ordered_json{{"name", l.name},
                                   {"kind", l.kind},
                                   {"bytes", num(l.bytes)},
                                   {"payload_bytes", num(l.payload_bytes)},
                                   {"utilization", num(l.utilization)},
                                   {"busy_fraction", num(l.busy_fraction)},
                                   {"busy_utilization", num(l.busy_utilization)},
                                   {"bottleneck_s", num(l.bottleneck_s)}});
  }
  links["busiest"] = std::move(busiest);
  // Links that behaved identically, ranked by the time they were a flow's bottleneck;
  // the first ten plus the busiest group of every link class (workloads/analysis/link_groups.hpp).
  ordered_json groups = ordered_json::array();
  for (const auto& g : r.link_groups) {
    groups.push_back(ordered_json{{"pattern", g.pattern},
                                  {"kind", g.kind},
                                  {"class", g.link_class},
                                  {"count", g.count},
                                  {"example", g.example},
                                  {"bytes", num(g.bytes)},
                                  {"payload_bytes", num(g.payload_bytes)},
                                  {"utilization", num(g.utilization)},
                                  {"busy_fraction", num(g.busy_fraction)},
                                  {"busy_utilization", num(g.busy_utilization)},
                                  {"bottleneck_s", num(g.bottleneck_s)},
                                  {"bottleneck_fraction", num(g.bottleneck_fraction)},
                                  {"busiest_of_class", g.busiest_of_class}});
  }
  links["groups"] = std::move(groups);
  links["group_count"] = r.link_group_count;
  if (const auto& b = r.link_bottleneck; b.present) {
    ordered_json tied = ordered_json::array();
    for (const auto& g : b.tied)
      tied.push_back(ordered_json{{"class", g.link_class}, {"pattern", g.pattern}, {"bottleneck_s", num(g.bottleneck_s)},
                                  {"fraction", num(g.bottleneck_fraction)}});
    links["bottleneck"] = ordered_json{{"class", b.link_class}, {"kind", b.kind}, {"pattern", b.pattern},
                                       {"bottleneck_s", num(b.bottleneck_s)}, {"fraction", num(b.fraction)}, {"tied", std::move(tied)}};
  }
  return links;
}

ordered_json memory_json(const wl::Result& r) {
  ordered_json mem;
  mem["capacity_bytes"] = num(r.memory_capacity_bytes);
  mem["fits"] = r.memory_fits;
  mem["verdict"] = r.memory_verdict;
  mem["max_peak_bytes"] = num(r.max_peak_bytes);
  // headroom.hpp: usable = capacity − reserved − fragmentation · capacity; headroom = usable − peak
  mem["usable_bytes"] = num(r.memory_usable_bytes);
  mem["headroom_bytes"] = num(r.memory_usable_bytes - r.max_peak_bytes);
  ordered_json mstages = ordered_json::array();
  for (const auto& m : r.memory_per_stage) {
    ordered_json e;
    e["stage"] = m.stage;
    e["weights"] = num(m.weights);
    e["gradients"] = num(m.gradients);
    e["optimizer"] = num(m.optimizer);
    e["activations"] = num(m.activations);
    e["peak"] = num(m.peak);
    e["master"] = num(m.master);    // extra: fp32 master copy
    e["buffers"] = num(m.buffers);  // extra: communication buffers, ZeRO-3 window
    mstages.push_back(std::move(e));
  }
  mem["per_stage"] = std::move(mstages);
  add_training_memory_json(mem, r);
  return mem;
}

ordered_json critical_path_json(const wl::Result& r) {
  const auto& cp = r.critical_path;
  ordered_json crit;
  crit["device"] = cp.device;
  if (cp.device >= 0 && static_cast<std::size_t>(cp.device) < r.device_names.size())
    crit["device_name"] = r.device_names[static_cast<std::size_t>(cp.device)];  // extra
  crit["share_compute"] = num(cp.share_compute);
  crit["share_comm"] = num(cp.share_comm);
  crit["share_wait"] = num(cp.share_wait);
  crit["compute_s"] = num(cp.compute_s);  // extras: the shares in seconds, comm by axis
  crit["comm_tp_s"] = num(cp.comm_tp_s);
  crit["comm_pp_s"] = num(cp.comm_pp_s);
  crit["comm_dp_s"] = num(cp.comm_dp_s);
  crit["comm_ep_s"] = num(cp.comm_ep_s);
  crit["wait_s"] = num(cp.wait_s);
  ordered_json cdev = ordered_json::array();
  for (const auto& d : cp.devices) cdev.push_back(ordered_json{{"device", device_name(r, d.device)}, {"share", num(d.share)}});
  crit["devices"] = std::move(cdev);  // the five devices holding most of the path
  return crit;
}

ordered_json warnings_json(const wl::Result& r) {
  ordered_json warns = ordered_json::array();
  for (const auto& w : r.warnings) warns.push_back(ordered_json{{"code", w.code}, {"message", w.message}});
  return warns;
}

/// The band of the measured step time from held-out published runs like this one.
void add_step_time_band_json(ordered_json& j, const wl::Result& r) {
  const auto& band = r.step_time_band;
  j["step_time_band_s"] = band.rows > 0 ? ordered_json::array({num(band.lo_s), num(band.hi_s)}) : ordered_json(nullptr);
  j["step_time_band"] = {{"coverage", band.rows > 0 ? num(band.coverage) : ordered_json(nullptr)},
                         {"group", band.rows > 0 ? ordered_json(band.group) : ordered_json(nullptr)},
                         {"rows", band.rows}};
}

/// Per stage, seconds per step of one rank's compute by kind of kernel; the parts add up
/// to that rank's nominal compute time (overhead_s: kernel launches and dispatch).
ordered_json compute_breakdown_json(const wl::Result& r) {
  ordered_json breakdown = ordered_json::array();
  for (std::size_t st = 0; st < r.compute_breakdown.size(); ++st) {
    const auto& b = r.compute_breakdown[st];
    ordered_json e;
    e["stage"] = st;
    e["gemm_s"] = num(b.gemm.seconds());
    e["attention_s"] = num(b.attention.seconds());
    e["elementwise_s"] = num(b.elementwise.seconds());
    e["logits_s"] = num(b.logits.seconds());
    e["optimizer_s"] = num(b.optimizer.seconds());
    e["overhead_s"] = num(b.launch.seconds());
    e["total_s"] = num(b.total().seconds());
    breakdown.push_back(std::move(e));
  }
  return breakdown;
}

/// Slow devices (perturbations.devices with compute_slowdown > 1) and what each costs:
/// the step time without it (a what-if simulation; null when not priced).
void add_perturbed_devices_json(ordered_json& j, const wl::Result& r) {
  ordered_json strag = ordered_json::array();
  ordered_json perturbed = ordered_json::array();
  for (const auto& p : r.perturbed_devices) {
    if (p.compute_slowdown > 1.0)
      strag.push_back(ordered_json{{"device", device_name(r, p.device)}, {"compute_slowdown", num(p.compute_slowdown)}, {"cost_s", num(p.cost_s)}});
    perturbed.push_back(ordered_json{{"device", device_name(r, p.device)},
                                     {"stage", p.stage},
                                     {"compute_slowdown", num(p.compute_slowdown)},
                                     {"compute_s", num(p.compute_s)},
                                     {"stage_mean_compute_s", num(p.stage_mean_compute_s)},
                                     {"idle_fraction", num(p.idle_fraction)},
                                     {"critical_share", num(p.critical_share)},
                                     {"cost_s", num(p.cost_s)}});
  }
  j["stragglers"] = std::move(strag);
  j["perturbed_devices"] = std::move(perturbed);
}

ordered_json step_stats_json(const wl::Result& r) {
  ordered_json ss;
  ss["mean_s"] = num(r.step_stats.mean_s);
  ss["p50_s"] = num(r.step_stats.p50_s);
  ss["p99_s"] = num(r.step_stats.p99_s);
  ss["max_s"] = num(r.step_stats.max_s);
  ordered_json steps = ordered_json::array();
  for (double s : r.step_stats.step_s) steps.push_back(num(s));
  ss["step_s"] = std::move(steps);
  return ss;
}

/// Mixture of experts: the routing as simulated (per-expert load, per-ep-rank work).
ordered_json moe_json(const wl::Result& r) {
  ordered_json moe;
  moe["experts"] = r.moe.experts;
  moe["top_k"] = r.moe.top_k;
  moe["ep"] = r.moe.ep;
  ordered_json load = ordered_json::array(), factor = ordered_json::array();
  for (double x : r.moe.expert_load) load.push_back(num(x));
  for (double x : r.moe.device_factor) factor.push_back(num(x));
  moe["expert_load"] = std::move(load);
  moe["device_factor"] = std::move(factor);
  moe["dropped_fraction"] = num(r.moe.dropped_fraction);
  moe["dropped_tokens_per_step"] = num(r.moe.dropped_tokens_per_step);
  return moe;
}

ordered_json tp_crossing_json(const wl::Result& r) {
  ordered_json tpx;
  tpx["groups"] = r.tp_groups_crossing_nodes;
  tpx["example"] = r.tp_crossing_example;
  tpx["link_kinds"] = r.tp_crossing_link_kinds;
  return tpx;
}

ordered_json engine_json(const wl::Result& r, const JsonOptions& opts) {
  ordered_json eng;
  eng["events"] = r.events;
  eng["symmetry"] = r.symmetry;
  eng["ranks_simulated"] = r.ranks_simulated;
  eng["classes"] = r.replica_classes;
  eng["mirrored_links"] = r.mirrored_links;
  eng["alike_flows"] = r.alike_flows;
  if (opts.include_wall_time) eng["wall_s"] = num(r.wall_s);
  return eng;
}

}  // namespace

/// Extra: the resolved run (wl::Result::Setup), for a reader of many summaries.
ordered_json scenario_resolved_json(const wl::Result& r) {
  const wl::Result::Setup& s = r.setup;
  return {{"model", s.model},
          {"gpu", s.gpu},
          {"implementation", s.implementation},
          {"layout",
           {{"tp", s.tp}, {"pp", s.pp}, {"dp", s.dp}, {"cp", s.cp}, {"ep", s.ep}, {"expert_tp", s.expert_tp}, {"zero", s.zero},
            {"sequence_parallel", s.sequence_parallel}, {"recompute", s.recompute}, {"recompute_layers", s.recompute_layers},
            {"schedule", s.schedule}, {"virtual_stages", s.virtual_stages}}},
          {"seq_len", s.seq_len},
          {"microbatch_size", s.microbatch_size},
          {"microbatches", s.microbatches},
          {"global_batch", s.global_batch},
          {"compute_precision", s.compute_precision}};
}

// One helper per section, called in the order of the keys.
ordered_json to_json(const wl::Result& r, const JsonOptions& opts) {
  ordered_json j;
  add_headline_json(j, r);
  add_training_json(j, r.training);  // time_to_train_s, gpu_hours, cost: only with a `training` key
  j["pipeline"] = pipeline_json(r);
  j["comm"] = comm_json(r);
  j["links"] = links_json(r);
  j["memory"] = memory_json(r);
  if (r.offload.present)  // extra: layout.offload's PCIe traffic (workloads/build/offload.hpp)
    j["offload"] = ordered_json{{"pcie_bytes_per_device", num(r.offload.pcie_bytes_per_device)},
                                {"pcie_utilization", num(r.offload.pcie_utilization)}};
  j["critical_path"] = critical_path_json(r);
  j["warnings"] = warnings_json(r);
  j["scenario_resolved"] = scenario_resolved_json(r);
  add_step_time_band_json(j, r);
  j["scale_noise_s"] = num(r.scale_noise.cost_s);
  j["scale_noise"] = {{"variability", num(r.scale_noise.variability)}, {"devices", r.devices}, {"factor", num(r.scale_noise.factor)}};
  j["compute_breakdown"] = compute_breakdown_json(r);
  add_checkpoint_json(j, r);  // checkpoint, goodput (when the scenario has a checkpoint)
  add_perturbed_devices_json(j, r);
  // ---- extras (not in the v1 contract; additive) ----
  j["step_stats"] = step_stats_json(r);
  if (r.step_split.present)  // only with run --split (workloads/analysis/step_split.hpp)
    j["step_split"] = {{"microbatches", r.step_split.microbatches},
                       {"probe_microbatches", r.step_split.probe_microbatches},
                       {"probe_step_time_s", num(r.step_split.probe_step_s)},
                       {"per_microbatch_s", num(r.step_split.per_microbatch_s)},
                       {"fixed_s", num(r.step_split.fixed_s)}};
  if (r.moe.present) j["moe"] = moe_json(r);
  j["tp_crossing_nodes"] = tp_crossing_json(r);
  j["engine"] = engine_json(r, opts);
  return j;
}

std::string to_json_string(const wl::Result& r, const JsonOptions& opts) {
  // replace: a device or link name with invalid UTF-8 must not abort the report.
  return to_json(r, opts).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace ls::tools

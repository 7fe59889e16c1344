// tools/report/summary.cpp — text tables for people. Columns are padded with fmt so that the
// output lines up in a terminal; nothing here feeds a machine (the JSON does that).
#include "tools/report/summary.hpp"

#include "workloads/model/model.hpp"
#include "workloads/model/layout.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tools/report/finetune_report.hpp"
#include "tools/report/human_units.hpp"
#include "tools/report/report_json.hpp"
#include "tools/report/training_report.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/spec/vocabulary.hpp"

namespace ls::tools {

namespace {

std::string bar(double fraction, int width) {
  const int n = std::clamp(static_cast<int>(std::lround(fraction * width)), 0, width);
  return std::string(static_cast<std::size_t>(n), '#') + std::string(static_cast<std::size_t>(width - n), '.');
}

/// `capacity`: the usable bytes (headroom.hpp), what "fits" compares with.
void append_memory_table(std::string& out, const std::vector<wl::MemoryTerms>& terms, double capacity) {
  out += fmt::format("  {:>5}  {:>10}  {:>10}  {:>10}  {:>10}  {:>11}  {:>10}  {:>10}  {:>6}\n", "stage", "weights", "gradients",
                     "master", "optimizer", "activations", "buffers", "peak", "usable");
  for (const auto& m : terms) {
    const double frac = capacity > 0 ? m.peak / capacity : 0;
    out += fmt::format("  {:>5}  {:>10}  {:>10}  {:>10}  {:>10}  {:>11}  {:>10}  {:>10}  {:>6}{}\n", m.stage, human_bytes(m.weights),
                       human_bytes(m.gradients), human_bytes(m.master), human_bytes(m.optimizer), human_bytes(m.activations),
                       human_bytes(m.buffers), human_bytes(m.peak), fmt::format("{:.0f}%", frac * 100),
                       capacity > 0 && m.peak > capacity ? "  OVER" : "");
  }
}

/// Per axis: its bytes per device per step, per FLOP of the device's compute, and the
/// time they take at the axis's slowest link against the device's compute
/// (workloads/analysis/axis_comm.hpp); `exposed`: the simulated wait on the axis too.
void append_axis_comm_table(std::string& out, const wl::AxisComm (&comm)[wl::kAxisCount], bool exposed) {
  out += "\nCommunication per device per step (each collective's bytes at its slowest link, against compute)\n";
  out += fmt::format("  {:>4}  {:>10}  {:>10}  {:<24}  {:>10}  {:>12}{}\n", "axis", "bytes", "bytes/FLOP", "slowest link", "at link",
                     "comm/compute", exposed ? fmt::format("  {:>10}", "exposed") : std::string());
  for (wl::Axis a : wl::kReportedAxes) {
    const auto& c = comm[static_cast<int>(a)];
    if (!c.present && !(c.bytes_per_device > 0)) continue;  // no group on this axis
    const std::string link =
        c.slowest_link_Bps > 0 ? fmt::format("{} {}/s", c.slowest_link_kind, human_bytes(c.slowest_link_Bps)) : std::string("-");
    out += fmt::format("  {:>4}  {:>10}  {:>10.2e}  {:<24}  {:>10}  {:>12.3g}{}\n", wl::axis_name(a), human_bytes(c.bytes_per_device),
                       c.bytes_per_flop, link, human_seconds(c.time_at_slowest_link_s), c.comm_to_compute,
                       exposed ? fmt::format("  {:>10}", human_seconds(c.exposed_s)) : std::string());
  }
}

// "fits, peak X" / "TIGHT ..." / "DOES NOT FIT, peak X" (headroom.hpp's three states;
// `fits` is true for fits and tight).
std::string verdict_text(bool fits, const std::string& verdict, double peak) {
  if (!fits) return fmt::format("DOES NOT FIT, peak {}", human_bytes(peak));
  if (verdict == "tight") return fmt::format("TIGHT (over usable, within HBM less reserved), peak {}", human_bytes(peak));
  return fmt::format("fits, peak {}", human_bytes(peak));
}

void append_warnings(std::string& out, const std::vector<wl::Warning>& warnings) {
  if (warnings.empty()) {
    out += "\nWarnings: none\n";
    return;
  }
  out += fmt::format("\nWarnings ({})\n", warnings.size());
  for (const auto& w : warnings) out += fmt::format("  warning [{}]: {}\n", w.code, w.message);
}

/// "  llama3-70b · 64 × h100-sxm · tp8 pp2 dp4 zero 1 · 1f1b: 32 micro-batches of 1 × 8192
/// tokens, global batch 128 · bf16 · megatron-core": the resolved run, in one line.
std::string setup_line(const wl::Result::Setup& s, int devices) {
  std::string layout = fmt::format("tp{} pp{}", s.tp, s.pp);
  if (s.virtual_stages > 1) layout += fmt::format(" v{}", s.virtual_stages);
  layout += fmt::format(" dp{}", s.dp);
  if (s.cp > 1) layout += fmt::format(" cp{}", s.cp);
  if (s.ep > 1) layout += fmt::format(" ep{}", s.ep);
  if (s.expert_tp != s.tp) layout += fmt::format(" etp{}", s.expert_tp);
  if (s.zero > 0) layout += fmt::format(" zero {}", s.zero);
  if (s.sequence_parallel) layout += " sp";
  if (s.recompute != "none") layout += fmt::format(" recompute {}", s.recompute);
  if (s.recompute != "none" && s.recompute_layers != "all") layout += fmt::format(" (layers {})", s.recompute_layers);
  return fmt::format("  {} · {} × {} · {} · {}: {} micro-batch{} of {} × {} tokens, global batch {} · {} · {}\n", s.model, devices, s.gpu,
                     layout, s.schedule, s.microbatches, s.microbatches == 1 ? "" : "es", s.microbatch_size, s.seq_len,
                     s.global_batch, s.compute_precision, s.implementation);
}

}  // namespace

std::string setup_description(const wl::Result& r) {
  std::string line = setup_line(r.setup, r.devices);
  const auto first = line.find_first_not_of(' ');
  line.erase(0, first == std::string::npos ? line.size() : first);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

std::string step_time_band_text(const wl::Result& r) {
  const auto& band = r.step_time_band;
  if (band.rows == 0) return {};
  return fmt::format("({:+.0f} % … {:+.0f} %: {:.0f} % of {} held-out published runs like this, {})", 100 * (band.lo_s / r.step_time_s - 1),
                     100 * (band.hi_s / r.step_time_s - 1), 100 * band.coverage, band.rows, band.group);
}

std::string slowest_rank_text(const wl::Result& r, const wl::StageResult& s) {
  if (!(s.compute_max_s > s.compute_min_s * (1 + 1e-3)) || s.slowest_device < 0 ||
      static_cast<std::size_t>(s.slowest_device) >= r.device_names.size())
    return {};
  return fmt::format("{} {} (min {})", r.device_names[static_cast<std::size_t>(s.slowest_device)], human_seconds(s.compute_max_s),
                     human_seconds(s.compute_min_s));
}

std::string link_bottleneck_text(const wl::Result& r) {
  const auto& b = r.link_bottleneck;
  if (!b.present) return "none (no link was saturated in the step)";
  std::string out = fmt::format("{} {} saturated {} of the {} step ({})", b.kind, b.pattern, human_seconds(b.bottleneck_s),
                                human_seconds(r.step_time_s), percent(b.fraction));
  for (const auto& g : b.tied) out += fmt::format("; also {} {} ({})", g.kind, g.pattern, percent(g.bottleneck_fraction));
  return out;
}

std::string format_summary(const wl::Result& r) {
  std::string out;
  out += fmt::format("layoutsim: {} — {} GPUs, {} step{}\n", r.scenario, r.devices, r.steps, r.steps == 1 ? "" : "s");
  out += setup_line(r.setup, r.devices) + "\n";
  const std::string band = step_time_band_text(r);
  out += fmt::format("  {:<22} {}{}\n", "step time", human_seconds(r.step_time_s), band.empty() ? band : "  " + band);
  if (r.steps > 1) {
    out += fmt::format("  {:<22} mean {}  p50 {}  p99 {}  max {}\n", "step time over steps", human_seconds(r.step_stats.mean_s),
                       human_seconds(r.step_stats.p50_s), human_seconds(r.step_stats.p99_s), human_seconds(r.step_stats.max_s));
  }
  if (r.scale_noise.factor > 1)
    out += fmt::format("  {:<22} +{} of it: the slowest of {} GPUs computes {:.1f} % slower (per-GPU speed spread {:.1f} %)\n",
                       "scale noise", human_seconds(r.scale_noise.cost_s), r.devices, 100 * (r.scale_noise.factor - 1),
                       100 * r.scale_noise.variability);
  out += fmt::format("  {:<22} {}\n", "tokens/s", human_count(r.tokens_per_s));
  out += fmt::format("  {:<22} {}  (hardware FLOPs, recompute included)\n", "TFLOP/s per GPU",
                     human_flops(r.tflops_per_gpu * 1e12));
  out += fmt::format("  {:<22} {} / {}\n", "MFU / HFU", percent(r.mfu), percent(r.hfu));
  out += training_summary_lines(r.training);
  out += fmt::format("  {:<22} {}, {} stage{}, {} micro-batch{}{}\n", "pipeline", r.schedule, r.stages, r.stages == 1 ? "" : "s",
                     r.microbatches, r.microbatches == 1 ? "" : "es",
                     r.virtual_stages > 1 ? fmt::format(", {} virtual stages", r.virtual_stages) : std::string());
  out += fmt::format("  {:<22} {} measured, {} analytic\n", "bubble (mean)", percent(r.bubble_fraction),
                     percent(r.bubble_fraction_analytic));
  if (r.step_split.present)
    out += fmt::format("  {:<22} {} micro-batch{} × {} + {} once per step (fill and drain, gradient reduction, optimizer; "
                       "from a second run at {})\n",
                       "step split", r.step_split.microbatches, r.step_split.microbatches == 1 ? "" : "es",
                       human_seconds(r.step_split.per_microbatch_s), human_seconds(r.step_split.fixed_s),
                       r.step_split.probe_microbatches);
  if (r.offload.present)
    out += fmt::format("  {:<22} {} over PCIe per GPU per step (busiest stage), {} of the link's rate\n", "offload",
                       human_bytes(r.offload.pcie_bytes_per_device), percent(r.offload.pcie_utilization));

  if (!r.per_stage.empty()) {
    out += "\nPipeline stages\n";
    // Compute is the mean over the stage's ranks; when they differ (a straggler, jitter)
    // the slowest rank is named with its time.
    out += fmt::format("  {:>5}  {:>6}  {:>10}  {:>9}  {:>9}  {:>9}  {:<20}  {}\n", "stage", "layers", "compute", "bubble", "analytic",
                       "idle", "idle share", "slowest rank");
    for (const auto& s : r.per_stage) {
      const std::string slowest = slowest_rank_text(r, s);
      std::string row = fmt::format("  {:>5}  {:>6}  {:>10}  {:>9}  {:>9}  {:>9}  {:<20}  {}", s.stage, s.layers,
                                    human_seconds(s.compute_s), percent(s.bubble_fraction), percent(s.bubble_fraction_analytic),
                                    percent(s.idle_fraction), bar(s.idle_fraction, 20), slowest);
      while (!row.empty() && row.back() == ' ') row.pop_back();
      out += row + "\n";
    }
  }

  if (!r.compute_breakdown.empty()) {
    // Shares of each stage's compute by kind of kernel: where the compute time goes.
    out += "\nCompute by kernel kind (per stage, one step)\n";
    out += fmt::format("  {:>5}  {:>10}  {:>7}  {:>9}  {:>11}  {:>7}  {:>9}  {:>8}\n", "stage", "compute", "gemm", "attention",
                       "elementwise", "logits", "optimizer", "overhead");
    for (std::size_t st = 0; st < r.compute_breakdown.size(); ++st) {
      const auto& b = r.compute_breakdown[st];
      const double total = b.total().seconds();
      const auto share = [total](sim::Time t) { return total > 0 ? percent(t.seconds() / total) : percent(0.0); };
      out += fmt::format("  {:>5}  {:>10}  {:>7}  {:>9}  {:>11}  {:>7}  {:>9}  {:>8}\n", st, human_seconds(total), share(b.gemm),
                         share(b.attention), share(b.elementwise), share(b.logits), share(b.optimizer), share(b.launch));
    }
  }

  append_axis_comm_table(out, r.comm, true);

  if (!r.links_by_kind.empty()) {
    out += "\nLinks by kind\n";
    // First, the link class that limited flows longest (saturated: some flow's max-min
    // bottleneck), and any other class within a point of it.
    out += "  bottleneck: " + link_bottleneck_text(r) + "\n";
    out += fmt::format("  {:<12}  {:>6}  {:>10}  {:>10}  {:>9}  {:>9}\n", "kind", "count", "payload", "wire", "mean util", "max util");
    for (const auto& k : r.links_by_kind) {
      out += fmt::format("  {:<12}  {:>6}  {:>10}  {:>10}  {:>9}  {:>9}\n", k.kind, k.count, human_bytes(k.payload_bytes),
                         human_bytes(k.bytes), percent(k.mean_utilization), percent(k.max_utilization));
    }
  }
  if (!r.link_groups.empty()) {
    // Identical links folded into one row; ranked by the time the links were some
    // flow's bottleneck ("bneck"), which finds the link that limits a collective.
    out += fmt::format("\nLink groups (of {}; busiest first, by time as a flow's bottleneck; '+' = busiest of its class)\n",
                       r.link_group_count);
    std::size_t w = 4;
    for (const auto& g : r.link_groups) w = std::max(w, g.pattern.size() + 8);
    out += fmt::format("  {:<{}}  {:<10}  {:>12}  {:>10}  {:>8}  {:>8}  {:>10}  {:>8}\n", "links", w, "kind", "payload/link",
                       "wire/link", "util", "busy", "util busy", "bneck");
    for (const auto& g : r.link_groups) {
      out += fmt::format("  {:<{}}  {:<10}  {:>12}  {:>10}  {:>8}  {:>8}  {:>10}  {:>8}{}\n", fmt::format("{} x{}", g.pattern, g.count),
                         w, g.kind, human_bytes(g.payload_bytes), human_bytes(g.bytes), percent(g.utilization),
                         percent(g.busy_fraction), percent(g.busy_utilization), percent(g.bottleneck_fraction),
                         g.busiest_of_class ? " +" : "");
    }
  }

  out += fmt::format("\nMemory per GPU (capacity {}, usable {}): {}\n", human_bytes(r.memory_capacity_bytes),
                     human_bytes(r.memory_usable_bytes),
                     verdict_text(r.memory_fits, r.memory_verdict, r.max_peak_bytes));
  append_memory_table(out, r.memory_per_stage, r.memory_usable_bytes);
  append_finetune_summary(out, r);

  if (r.moe.present) {
    const auto [lo, hi] = std::minmax_element(r.moe.device_factor.begin(), r.moe.device_factor.end());
    out += fmt::format("\nMixture of experts: {} experts, top-{}, ep {}; expert work per ep rank {:.2f}x..{:.2f}x the balanced share\n",
                       r.moe.experts, r.moe.top_k, r.moe.ep, r.moe.device_factor.empty() ? 1.0 : *lo,
                       r.moe.device_factor.empty() ? 1.0 : *hi);
    if (r.moe.dropped_fraction > 0)
      out += fmt::format("  capacity factor drops {} of {} routed token-expert assignments per step ({})\n",
                         human_count(r.moe.dropped_tokens_per_step),
                         human_count(r.moe.dropped_tokens_per_step / r.moe.dropped_fraction), percent(r.moe.dropped_fraction));
    else
      out += "  no tokens dropped\n";
  }

  const auto& cp = r.critical_path;
  const std::string dev = cp.device >= 0 && static_cast<std::size_t>(cp.device) < r.device_names.size()
                              ? r.device_names[static_cast<std::size_t>(cp.device)]
                              : fmt::format("device {}", cp.device);
  std::string most;
  if (!cp.devices.empty()) {
    const auto& top = cp.devices.front();
    most = fmt::format("; {} of it on {}", percent(top.share),
                       top.device >= 0 && static_cast<std::size_t>(top.device) < r.device_names.size()
                           ? r.device_names[static_cast<std::size_t>(top.device)]
                           : fmt::format("device {}", top.device));
  }
  out += fmt::format("\nCritical path (ends on {}{}): compute {}, communication {}, waiting {}\n", dev, most, percent(cp.share_compute),
                     percent(cp.share_comm), percent(cp.share_wait));
  if (!r.perturbed_devices.empty()) {
    out += "\nPerturbed devices\n";
    out += fmt::format("  {:<16}  {:>5}  {:>8}  {:>10}  {:>12}  {:>9}  {:>9}\n", "device", "stage", "slowdown", "compute",
                       "stage mean", "critical", "costs");
    for (const auto& p : r.perturbed_devices) {
      const std::string name = p.device >= 0 && static_cast<std::size_t>(p.device) < r.device_names.size()
                                   ? r.device_names[static_cast<std::size_t>(p.device)]
                                   : fmt::format("device {}", p.device);
      out += fmt::format("  {:<16}  {:>5}  {:>7.2f}x  {:>10}  {:>12}  {:>9}  {:>9}\n", name, p.stage, p.compute_slowdown,
                         human_seconds(p.compute_s), human_seconds(p.stage_mean_compute_s), percent(p.critical_share),
                         std::isfinite(p.cost_s) ? human_seconds(p.cost_s) : std::string("-"));
    }
  }

  append_warnings(out, r.warnings);
  return out;
}

std::string format_layout_report(const wl::Scenario& s, const wl::LayoutReport& p) {
  const auto& L = s.layout;
  std::string out;
  out += fmt::format("layoutsim check: {} ({}) — valid\n\n", s.name, s.source);
  out += fmt::format("  {:<20} {} x {} GPUs = {} ({}{})\n", "cluster", s.cluster.nodes, s.cluster.gpus_per_node, p.devices, s.gpu.name,
                     wl::power_clock_fraction(s.gpu) < 1
                         ? fmt::format(", capped at {:g} W of {:g}: tensor clock {:.3f} of the datasheet's", s.gpu.power_limit_watts,
                                       s.gpu.tdp_watts, wl::power_clock_fraction(s.gpu))
                         : std::string());
  // Block variants the activation does not imply (model.hpp's conventions), so that a
  // reader sees what the FLOPs and the TP traffic were priced for.
  std::string variants;
  if (wl::has_bias(s.model) != (s.model.activation == wl::Activation::gelu)) variants += wl::has_bias(s.model) ? ", biases" : ", no biases";
  if (s.model.parallel_block) variants += ", parallel block";
  if (s.model.sliding_window > 0) variants += fmt::format(", sliding window {}", s.model.sliding_window);
  if (s.model.mtp_depth > 0) variants += fmt::format(", {} MTP module{} on the last stage", s.model.mtp_depth, s.model.mtp_depth == 1 ? "" : "s");
  out += fmt::format("  {:<20} {}: {} layers, hidden {}, {} parameters{}\n", "model", s.model.name, s.model.layers, s.model.hidden,
                     human_count(p.params_total), variants);
  if (const auto& moe = s.model.moe; moe.experts > 0)
    out += fmt::format("  {:<20} {} experts, top {}{}{}\n", "moe", moe.experts, moe.top_k,
                       moe.shared_experts > 0 ? fmt::format(" + {} shared", moe.shared_experts) : std::string(),
                       moe.max_nodes_per_token > 0
                           ? fmt::format(", at most {} node{} per token (one copy per node, relayed over NVLink)",
                                         moe.max_nodes_per_token, moe.max_nodes_per_token == 1 ? "" : "s")
                           : std::string());
  const std::string recompute_layers = wl::recompute_layers_text(L.recompute_layers);
  out += fmt::format("  {:<20} dp={} tp={} pp={} ep={}{}{} zero={} sp={} recompute={}{}\n", "layout", L.dp, L.tp, L.pp, L.ep,
                     wl::expert_tp_of(L) != L.tp ? fmt::format(" expert_tp={} (expert-dp={})", wl::expert_tp_of(L), wl::expert_dp_of(L)) : std::string(),
                     L.cp > 1 ? fmt::format(" cp={} ({})", L.cp, wl::name_of(wl::kCpKindNames, L.cp_kind)) : std::string(),
                     L.zero, L.sequence_parallel ? "on" : "off", wl::name_of(wl::kRecomputeNames, L.recompute),
                     L.recompute != wl::Recompute::none && recompute_layers != "all" ? " (layers " + recompute_layers + ")" : std::string());
  out += fmt::format("  {:<20} {}, {} micro-batches of {} sequence{}{}\n", "schedule", wl::schedule_name(L.schedule), L.microbatches,
                     L.microbatch_size, L.microbatch_size == 1 ? "" : "s",
                     L.virtual_stages > 1 ? fmt::format(", {} virtual stages", L.virtual_stages) : std::string());
  out += fmt::format("  {:<20} {}\n", "placement", fmt::join(L.cp > 1 ? wl::placement_with_cp(L.placement) : L.placement, " > "));
  out += fmt::format("  {:<20} {}FLOP\n", "model FLOPs/step", human_count(p.model_flops_per_step));
  out += fmt::format("  {:<20} {}  ({})\n", "bubble (analytic)", percent(p.bubble_fraction_analytic),
                     wl::analytic_bubble_formula(L.schedule, L.pp, L.microbatches));
  {
    // Gradients reduced once per step are summed over the micro-batches by a kernel of the
    // framework's (implementation.grad_accumulation): say what it moves.
    double per_param = 0;
    int summed = 0;
    for (int mb = 0; mb < L.microbatches; ++mb) {
      const double b = wl::grad_accumulation_bytes_per_param(s, mb);
      if (b > 0) {
        ++summed;
        per_param = b;
      }
    }
    if (summed > 0)
      out += fmt::format("  {:<20} {}: an add after the weight gradients, {} B per parameter, {} of {} micro-batches\n",
                         "grad accumulation", wl::name_of(wl::kGradAccumulationNames, s.implementation.grad_accumulation),
                         per_param, summed, L.microbatches);
  }
  if (L.pp > 1) {
    // How the pipeline's sends meet the compute (implementation.p2p_overlap, pp_scatter_gather).
    const bool blocks = wl::pipeline_sends_block(s);
    const bool pieces = wl::pass_bytes(s).pp_regather > 0;
    out += fmt::format("  {:<20} {}{}\n", "pipeline sends",
                       blocks ? "blocking: the compute stream waits for each" : "overlapped with the next pass",
                       pieces ? fmt::format("; in {} TP pieces, all-gathered at the receiver", L.tp) : std::string());
  }
  int moe_layer = -1;
  for (int l = 0; l < s.model.layers && moe_layer < 0; ++l)
    if (wl::layer_is_moe(s.model, l)) moe_layer = l;
  if (moe_layer >= 0) {
    // One MoE layer's kernels per micro-batch, forward and backward: what the token
    // permutations move through HBM (implementation.moe_permute_fusion), and how many
    // small router kernels follow the router GEMM (implementation.moe_router_fusion),
    // whose launches are their cost, so the count is what that line says.
    const wl::KernelOptions ko = wl::kernel_options(s);
    double moved = 0;
    int router_kernels = 0;
    for (auto pass : {wl::LayerPass::forward, wl::LayerPass::backward_input})
      for (const auto& k : wl::layer_pass_kernels(s.model, moe_layer, ko, pass)) {
        if (k.name.rfind("moe.", 0) == 0) moved += k.bytes;
        if (k.name.rfind("router.", 0) == 0 && k.kind == wl::KernelKind::memory) ++router_kernels;
      }
    out += fmt::format("  {:<20} {}: {} per MoE layer and micro-batch, forward and backward\n", "moe permutations",
                       s.implementation.moe_permute_fusion ? "fused kernels" : "PyTorch ops (index_select, regroup by expert, scatter_add)",
                       human_bytes(moved));
    out += fmt::format("  {:<20} {}: {} kernels per MoE layer and micro-batch, forward and backward\n", "moe router",
                       s.implementation.moe_router_fusion ? "fused (top-k with softmax, aux-loss scores, aux loss)"
                                                          : "PyTorch ops (top-k, softmax, masks, aux loss)",
                       router_kernels);
    // How the local experts' GEMMs are issued (implementation.grouped_gemm).
    const int local = s.model.moe.experts / std::max(1, L.ep);
    const std::string experts = fmt::format("{} local expert{}", local, local == 1 ? "" : "s");
    out += fmt::format("  {:<20} {}\n", "moe expert gemms",
                       s.implementation.grouped_gemm == wl::GroupedGemm::per_expert
                           ? fmt::format("one GEMM kernel per local expert, each launched ({})", experts)
                           : fmt::format("one grouped kernel for all local experts ({})", experts));
  }
  if (L.zero >= 1 && p.weight_gathers_per_step + p.gradient_reductions_per_step > 0) {
    // How the framework issues its sharded collectives decides their latency cost: the
    // counts here are the program's, under the implementation keys named beside them.
    const auto& impl = s.implementation;
    std::string gathers = fmt::format("{} weight all-gathers ({}", p.weight_gathers_per_step, human_bytes(p.weight_gather_bytes_per_step));
    if (L.zero >= 3) {
      gathers += fmt::format(", per {}", wl::name_of(wl::kGatherGranularityNames, impl.gather_granularity));
      if (impl.persistence_threshold > 0) gathers += fmt::format(", tensors under {} elements kept whole", human_count(impl.persistence_threshold));
      if (impl.max_reuse_distance > 0 && L.recompute == wl::Recompute::full)
        gathers += fmt::format(", again after the recompute past {} elements", human_count(impl.max_reuse_distance));
      const bool by_module = impl.gather_granularity == wl::GatherGranularity::module ||
                             impl.gather_granularity == wl::GatherGranularity::parameter;
      if (impl.param_gather_overlap && by_module && impl.max_live_parameters > 0)
        gathers += fmt::format(", a module prefetched only after one under {} parameters",
                               human_count(impl.max_live_parameters));
    }
    std::string reductions = fmt::format("{} gradient reductions ({}", p.gradient_reductions_per_step, human_bytes(p.gradient_reduction_bytes_per_step));
    if (L.zero >= 3)
      reductions += fmt::format(", per {}", wl::name_of(wl::kReduceGranularityNames, impl.reduce_granularity));
    out += fmt::format("  {:<20} per step on stage 0: {}), {}){}\n", "sharded collectives", gathers, reductions,
                       impl.gather_list_copies && L.zero >= 3 ? "; list-form, a copy kernel per rank per call" : "");
  }

  out += "\nCommunication groups\n";
  for (const auto& g : p.groups) {
    std::string members;
    const std::size_t show = 8;
    for (std::size_t i = 0; i < g.devices.size() && i < show; ++i) members += (i ? " " : "") + g.devices[i];
    if (g.devices.size() > show) members += fmt::format(" ... (+{})", g.devices.size() - show);
    out += fmt::format("  {:<9} size {:<4} links {:<24} {}  [{}]\n", g.axis, g.devices.size(),
                       g.link_kinds.empty() ? std::string("-") : fmt::format("{}", fmt::join(g.link_kinds, ",")),
                       g.crosses_nodes ? "crosses nodes" : "within a node", members);
  }
  const bool tp_cross = std::any_of(p.groups.begin(), p.groups.end(), [](const wl::GroupInfo& g) { return g.axis == "tp" && g.crosses_nodes; });
  out += fmt::format("  TP groups crossing nodes: {}\n", tp_cross ? "YES (tensor parallelism over the inter-node network)" : "no");

  append_axis_comm_table(out, p.comm, false);

  out += "\nStages\n";
  for (std::size_t i = 0; i < p.stage_layers.size(); ++i) out += fmt::format("  stage {:>3}: {} layers\n", i, p.stage_layers[i]);

  out += fmt::format("\nMemory budget per GPU (capacity {}, usable {}): {}\n", human_bytes(p.memory_capacity_bytes),
                     human_bytes(p.memory_usable_bytes),
                     verdict_text(p.fits, p.verdict, p.max_peak_bytes));
  append_memory_table(out, p.memory_per_stage, p.memory_usable_bytes);
  append_plan_parameters(out, s);
  append_warnings(out, p.warnings);
  return out;
}

}  // namespace ls::tools

// workloads/advice/diagnostics.cpp — see diagnostics.hpp.
#include "workloads/advice/diagnostics.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "workloads/advice/cp_advice.hpp"
#include "workloads/advice/bubble_advice.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/build/stage_layers.hpp"

namespace ls::wl {

namespace {

std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

void memory_warnings(const Scenario& s, const std::vector<MemoryTerms>& stages, std::vector<Warning>& out) {
  const double cap = usable_memory_bytes(s);
  const double tensors = tensor_memory_bytes(s);
  double worst = 0;
  for (const auto& mt : stages) worst = std::max(worst, mt.peak);
  if (worst > cap && worst <= tensors) {
    out.push_back({"memory-tight",
                   fmt::format("the peak of {} per device is over the usable {} but within HBM less reserved ({}): only the allocator's "
                               "fragmentation margin ({:.0f}%) is short. Runs like this train with "
                               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which lets the caching allocator grow its segments "
                               "instead of leaving gaps; without it, expect out-of-memory errors at the peak",
                               gb(worst), gb(cap), gb(tensors), 100 * s.memory.fragmentation)});
  } else if (worst <= cap && worst > kMemoryTightFraction * cap) {
    out.push_back({"memory-tight",
                   fmt::format("the peak of {} per device is {:.1f}% of the usable {} (HBM {} less {} reserved and {:.0f}% "
                               "fragmentation): a longer sequence, a larger micro-batch or a little more fragmentation runs out of memory",
                               gb(worst), 100 * worst / cap, gb(cap), gb(s.gpu.memory_bytes), gb(reserved_memory_bytes(s.gpu)),
                               100 * s.memory.fragmentation)});
  }
  for (const auto& mt : stages) {
    if (mt.peak <= tensors) continue;  // fits, or tight (warned above)
    struct Term { const char* name; double v; };
    Term terms[] = {{"weights", mt.weights}, {"gradients", mt.gradients}, {"master weights", mt.master},
                    {"optimizer state", mt.optimizer}, {"activations", mt.activations}, {"buffers", mt.buffers}};
    const auto* top = std::max_element(std::begin(terms), std::end(terms), [](const Term& a, const Term& b) { return a.v < b.v; });
    // The seed's remedies, cheapest first: shard the optimizer state, recompute, then split the model further.
    std::vector<std::string> remedies;
    // Offload and HSDP remedies are priced by simulation afterwards (what_if.cpp, memory_remedies.cpp).
    if (s.layout.zero < 1 && s.layout.dp > 1) remedies.push_back(fmt::format("zero: 1 (shards master+moments over dp={}: saves {})", s.layout.dp, gb((mt.master + mt.optimizer) * (1.0 - 1.0 / s.layout.dp))));
    else if (s.layout.zero < 3 && s.layout.dp > 1) remedies.push_back(fmt::format("zero: {} (shard {} too)", s.layout.zero + 1, s.layout.zero == 1 ? "gradients" : "weights"));
    // Long sequences: context parallelism divides the activations (priced by cp_advice.hpp).
    if (const auto c = cp_remedy(s, mt))
      remedies.push_back(fmt::format("cp: {} (splits each {}-token sequence over {} GPUs taken from dp: activations {} -> {})", *c,
                                     s.model.seq_len, *c, gb(mt.activations), gb(mt.activations / *c)));
    if (s.layout.recompute != Recompute::full) remedies.push_back(std::string("recompute: ") + (s.layout.recompute == Recompute::none ? "selective" : "full") + " (activations are " + gb(mt.activations) + ")");
    remedies.push_back("split further: more tp (within a node) or pp");
    std::string r;
    for (std::size_t i = 0; i < remedies.size(); ++i) r += fmt::format("{}{}) {}", i ? "; " : "", i + 1, remedies[i]);
    out.push_back({"out-of-memory",
                   fmt::format("stage {} needs {} per device but the GPU has {} usable (over by {}); the largest term is {} ({}). Remedies in order: {}",
                               mt.stage, gb(mt.peak), gb(cap), gb(mt.peak - cap), top->name, gb(top->v), r)});
  }
}

/// ZeRO-2/3 shard the gradients the pipeline schedule accumulates across micro-batches:
/// Megatron-LM's distributed optimizer shards only optimizer state (ZeRO-1) and
/// DeepSpeed's pipeline engine rejects ZeRO stages 2 and 3.
void zero_with_pipeline(const Scenario& s, std::vector<Warning>& out) {
  if (s.layout.zero < 2 || s.layout.pp <= 1 || s.layout.dp <= 1) return;
  out.push_back({"zero-with-pp",
                 fmt::format("zero: {} with pp = {}: Megatron-LM (distributed optimizer = ZeRO-1) and DeepSpeed's pipeline engine do not "
                             "support ZeRO-2/3 with pipeline parallelism; the simulated layout has no framework that runs it. Use zero: 1",
                             s.layout.zero, s.layout.pp)});
}

/// A `training.lora` map under another method has no effect: said, not silently dropped
/// (a warning rather than an error, so `--set training.method=full-finetune` compares
/// the same file without its adapters).
void unused_lora(const Scenario& s, std::vector<Warning>& out) {
  if (!s.training.lora.given || s.training.method == TrainingMethod::lora) return;
  out.push_back({"lora-ignored", "training.lora is given but training.method is not lora: the adapters are not simulated "
                                 "(set training.method: lora to train them)"});
}

/// implementation.zero1_grad_reduce all-reduce under ZeRO-2/3, whose gradients are
/// reduce-scattered whatever the key says: said, not silently ignored. (Not a scenario
/// warning: a memory remedy that raises zero to 2 does not become one by it.)
void unused_zero1_grad_reduce(const Scenario& s, std::vector<Warning>& out) {
  if (s.implementation.zero1_grad_reduce != Zero1GradReduce::all_reduce || s.layout.zero < 2) return;
  out.push_back({"zero1-grad-reduce-ignored",
                 fmt::format("implementation.zero1_grad_reduce is all-reduce but layout.zero is {}: ZeRO-2/3 reduce-scatter the "
                             "gradients, so the key applies to zero: 1 only",
                             s.layout.zero)});
}

/// precision.grad_reduce where no data-parallel gradient reduction runs (dp·cp of 1 and no
/// expert-data-parallel group): said, not silently ignored. (Not a scenario warning, as
/// above: a layout remedy may give the key its reduction.)
void unused_grad_reduce(const Scenario& s, std::vector<Warning>& out) {
  const auto& L = s.layout;
  if (s.precision.grad_reduce == 0 || L.dp * L.cp > 1 || (s.model.moe.experts > 0 && expert_dp_of(L) > 1)) return;
  out.push_back({"grad-reduce-ignored", "precision.grad_reduce is set but dp·cp is 1: no data-parallel gradient reduction "
                                        "runs, so the key changes nothing"});
}

/// The keys the layout leaves without effect, said in a run's and in `check`'s warnings.
void ignored_keys(const Scenario& s, std::vector<Warning>& out) {
  unused_zero1_grad_reduce(s, out);
  unused_grad_reduce(s, out);
}

/// Achieved fraction of the GPU's peak for an MLP up-projection GEMM with `rows` rows
/// (n = ffn/tp, k = hidden), priced by the same kernel model the step uses (tile
/// waves, sustained fraction, memory bound), so the warning's figures are the cost
/// model's own.
double mlp_gemm_efficiency(const Scenario& s, const ComputeProfile& profile, double rows, double ffn) {
  const GemmShape shape{rows, std::max(1.0, ffn / s.layout.tp), static_cast<double>(s.model.hidden)};
  const double t = gemm_time(profile, s.gpu, shape, s.precision.activations).seconds();
  return t > 0 ? shape.flops() / (t * s.gpu.peak_flops) : 0.0;
}

/// A GEMM's efficiency at its rows and at the GPU's floor (saturation_rows).
struct ThinGemm {
  double efficiency = 0, at_floor = 0;
};

/// Thin matmuls: below `saturation_rows` rows (the GPU's floor for full GEMM
/// efficiency) the kernel model's efficiency at these rows is compared with its
/// efficiency at the floor; only a loss of at least 5 % is reported, since a few
/// percent of wave quantisation is not worth a remedy that costs memory.
std::optional<ThinGemm> thin_gemm(const Scenario& s, const ComputeProfile& profile, double rows, double ffn) {
  constexpr double kMinLoss = 0.05;
  const double floor_rows = s.gpu.saturation_rows;
  if (rows < 1 || rows >= floor_rows) return std::nullopt;
  const ThinGemm g{mlp_gemm_efficiency(s, profile, rows, ffn), mlp_gemm_efficiency(s, profile, floor_rows, ffn)};
  if (!(g.at_floor > 0) || g.efficiency >= (1 - kMinLoss) * g.at_floor) return std::nullopt;
  return g;
}

/// Why the measured bubble exceeds the schedule's, most specific cause first: slowed
/// devices (they pace their stage, and every stage waits on the slowest), then unequal
/// stage compute, then the pipeline transfers the compute stream waited on.
std::string bubble_excess_cause(const Scenario& s, const Result& r) {
  std::vector<std::string> slow;
  for (const auto& d : s.perturbations.devices)
    if (d.compute_slowdown > 1.0 || d.drift_per_step > 0) slow.push_back(fmt::format("{} ({:.2f}x)", d.device, d.compute_slowdown));
  if (!slow.empty())
    return fmt::format("the straggler{} {} hold{} {} stage back and the others wait on it (see the straggler warning)",
                       slow.size() == 1 ? "" : "s", fmt::join(slow, ", "), slow.size() == 1 ? "s" : "", slow.size() == 1 ? "its" : "their");
  auto by_compute = [](const auto& a, const auto& b) { return a.compute_s < b.compute_s; };
  const auto mx = std::max_element(r.per_stage.begin(), r.per_stage.end(), by_compute);
  const auto mn = std::min_element(r.per_stage.begin(), r.per_stage.end(), by_compute);
  if (mx != r.per_stage.end() && mn->compute_s > 0 && mx->compute_s / mn->compute_s > 1.02)
    return fmt::format("unequal stages: stage {} computes {:.4g} s per step, stage {} {:.4g} s", mx->stage, mx->compute_s, mn->stage,
                       mn->compute_s);
  // The zero-bubble orders are built for equal F, B-input and W times (Qi et al.'s
  // T_F = T_B = T_W); the step's own pass times say how far this run is from that.
  const double pp_wait = r.comm[static_cast<int>(Axis::pp)].exposed_s;
  if (splits_backward(s.layout.schedule) && mx != r.per_stage.end() && pp_wait < 0.01 * mx->compute_s) {
    const KernelPassCosts costs(s);
    const double f = costs.layer(LayerKind::dense, Pass::forward).time.seconds();
    const double b = costs.layer(LayerKind::dense, Pass::backward_input).time.seconds();
    const double w = costs.layer(LayerKind::dense, Pass::backward_weight).time.seconds();
    if (f > 0)
      return fmt::format("the {} order, built for equal forward, input-gradient and weight-gradient times, on this run's "
                         "F : B : W = 1 : {:.2f} : {:.2f} per layer (the waits are the stage's own, comm.pp {:.4g} s)",
                         schedule_name(s.layout.schedule), b / f, w / f, pp_wait);
  }
  return fmt::format("pipeline transfers: the compute stream waited {:.4g} s per step on them (comm.pp)", pp_wait);
}

void small_microbatch(const Scenario& s, const BuiltProgram& bp, std::vector<Warning>& out) {
  const ComputeProfile profile = kernel_profile(s);
  const auto& moe = s.model.moe;
  if (moe.experts > 0 && moe.top_k > 0) {
    // An expert sees only its share of the ep group's tokens: ep·b·s·top_k/E rows, of
    // s/cp tokens per sequence, gathered over expert_tp of the tp ranks' shards.
    const auto& L = s.layout;
    const double fold = static_cast<double>(expert_tp_of(L)) / L.tp / L.cp;
    const double xrows = static_cast<double>(L.ep) * L.microbatch_size * static_cast<double>(s.model.seq_len) * fold *
                         moe.top_k / moe.experts;
    // mlp_gemm_efficiency splits the width tp ways; an expert's is split expert_tp ways.
    const double ffn = static_cast<double>(moe.expert_ffn_hidden > 0 ? moe.expert_ffn_hidden : s.model.ffn_hidden) * L.tp / expert_tp_of(L);
    const std::string folded = fold == 1 ? "" : fmt::format(" x expert_tp {} / (tp {} x cp {})", expert_tp_of(L), L.tp, L.cp);
    if (const auto g = thin_gemm(s, profile, xrows, ffn))
      out.push_back({"small-microbatch",
                     fmt::format("expert matmuls have {:.0f} rows (ep {} x microbatch_size {} x seq_len {}{} x top_k {} / {} experts), below the "
                                 "{:.0f}-row floor of this GPU: an expert MLP GEMM reaches {:.1f}% of peak instead of {:.1f}%; raise ep or microbatch_size",
                                 xrows, L.ep, L.microbatch_size, s.model.seq_len, folded, moe.top_k, moe.experts,
                                 s.gpu.saturation_rows, g->efficiency * 100, g->at_floor * 100)});
  }
  const double rows = bp.matmul_rows;
  if (const auto g = thin_gemm(s, profile, rows, static_cast<double>(s.model.ffn_hidden)))
    out.push_back({"small-microbatch",
                   fmt::format("matmuls have {:.0f} rows (microbatch_size {} x seq_len {}), below the {:.0f}-row floor of this GPU: "
                               "an MLP GEMM reaches {:.1f}% of peak instead of {:.1f}% ({:.0f}% of its throughput lost); raise microbatch_size",
                               rows, s.layout.microbatch_size, s.model.seq_len, s.gpu.saturation_rows, g->efficiency * 100,
                               g->at_floor * 100, (1.0 - g->efficiency / g->at_floor) * 100)});
}

}  // namespace

std::vector<Warning> scenario_warnings(const Scenario& s) {
  std::vector<Warning> out;
  zero_with_pipeline(s, out);
  unused_lora(s, out);
  return out;
}

std::vector<Warning> static_warnings(const Scenario& s, const BuiltProgram& bp, const LayoutReport& plan) {
  std::vector<Warning> out;
  memory_warnings(s, plan.memory_per_stage, out);
  for (const auto& g : plan.groups)
    if (g.axis == "tp" && g.crosses_nodes) {
      std::string kinds;
      for (const auto& k : g.link_kinds) kinds += (kinds.empty() ? "" : ", ") + k;
      out.push_back({"tp-crosses-nodes", fmt::format("TP group {}..{} ({} GPUs) spans nodes and uses {} links; "
                                                     "its 4 all-reduces per layer per micro-batch cross the inter-node fabric",
                                                     g.devices.front(), g.devices.back(), g.devices.size(), kinds)});
      break;
    }
  for (auto& w : scenario_warnings(s)) out.push_back(std::move(w));
  ignored_keys(s, out);
  small_microbatch(s, bp, out);
  if (plan.bubble_fraction_analytic > 0.10) {
    const std::string fix = bubble_remedies(s, 0.10, plan.memory_per_stage);
    out.push_back({"bubble", fmt::format("analytic pipeline bubble {:.1f}% with p={} m={}{}{}", plan.bubble_fraction_analytic * 100,
                                         s.layout.pp, s.layout.microbatches, fix.empty() ? "" : "; ", fix)});
  }
  return out;
}

std::vector<Warning> dynamic_warnings(const Scenario& s, const BuiltProgram& bp, const Result& r, std::size_t unrecorded_ops) {
  std::vector<Warning> out;
  if (unrecorded_ops > 0)
    out.push_back({"no-critical-path",
                   fmt::format("the critical path is left out: {} simulated ops exceed simulation.critical_path_ops ({}), "
                               "whose traces it needs (24 bytes each, {:.1f} GB); raise the key to compute it (every other "
                               "number is the same either way)",
                               unrecorded_ops, s.simulation.critical_path_ops, 24.0 * static_cast<double>(unrecorded_ops) / 1e9)});
  memory_warnings(s, r.memory_per_stage, out);
  if (r.tp_groups_crossing_nodes > 0) {
    std::string kinds;
    for (const auto& k : r.tp_crossing_link_kinds) kinds += (kinds.empty() ? "" : ", ") + k;
    const double tp_s = r.comm[static_cast<int>(Axis::tp)].exposed_s;
    out.push_back({"tp-crosses-nodes",
                   fmt::format("{} TP group(s) span nodes, e.g. {}..{} ({} GPUs), whose all-reduces use {} links; "
                               "exposed TP time {:.4g} s per step ({:.1f}% of the step)",
                               r.tp_groups_crossing_nodes, r.tp_crossing_example.front(), r.tp_crossing_example.back(),
                               r.tp_crossing_example.size(), kinds, tp_s, 100 * tp_s / r.step_time_s)});
  }
  for (auto& w : scenario_warnings(s)) out.push_back(std::move(w));
  ignored_keys(s, out);
  small_microbatch(s, bp, out);
  if (s.layout.pp > 1 && r.bubble_fraction > 0.10) {
    if (r.bubble_fraction_analytic > 0.10) {
      const std::string fix = bubble_remedies(s, 0.10, r.memory_per_stage);
      // Two points above the schedule's own bubble: say where they come from too.
      const double excess = r.bubble_fraction - r.bubble_fraction_analytic;
      const std::string cause =
          excess > 0.02 ? fmt::format("; {:.1f} points above the schedule's come from {}", 100 * excess, bubble_excess_cause(s, r)) : "";
      out.push_back({"bubble", fmt::format("measured pipeline bubble {:.1f}% (analytic {:.1f}%){}{}{}", r.bubble_fraction * 100,
                                           r.bubble_fraction_analytic * 100, cause,
                                           fix.empty() ? "" : "; to bring the analytic bubble under 10%, ", fix)});
    } else {
      // More micro-batches would not help: the schedule's own bubble is small, the
      // rest is stages waiting on each other (imbalance, stragglers, slow transfers).
      out.push_back({"bubble", fmt::format("measured pipeline bubble {:.1f}% although the schedule's analytic bubble is only {:.1f}%: "
                                           "the excess comes from {}",
                                           r.bubble_fraction * 100, r.bubble_fraction_analytic * 100, bubble_excess_cause(s, r))});
    }
  }
  if (r.per_stage.size() > 1) {
    auto mx = std::max_element(r.per_stage.begin(), r.per_stage.end(), [](auto& a, auto& b) { return a.compute_s < b.compute_s; });
    auto mn = std::min_element(r.per_stage.begin(), r.per_stage.end(), [](auto& a, auto& b) { return a.compute_s < b.compute_s; });
    // Only when a split is predicted faster: the balanced split differs from this one
    // (what_if.cpp then simulates it and drops the warning if it is not faster).
    Scenario split = s;
    split.layout.stage_layers_mode = StageLayersMode::balanced;
    split.layout.stage_layers.clear();
    std::vector<int> better;
    if (s.layout.stage_layers_mode != StageLayersMode::balanced && validate(split).empty()) {
      better = resolve_stage_layers(split);
      if (better == resolve_stage_layers(s)) better.clear();
    }
    if (!better.empty() && mn->compute_s > 0 && mx->compute_s / mn->compute_s > 1.02) {
      std::string per;
      for (const auto& st : r.per_stage) per += fmt::format("{}{:.3f}", per.empty() ? "" : ", ", st.compute_s);
      out.push_back({"stage-imbalance",
                     fmt::format("stage {} computes {:.3f} s per step, stage {} only {:.3f} s (per-stage compute [{}] s); the faster stages wait "
                                 "{:.3f} s per step on it; the split predicted faster: stage_layers: [{}] (what stage_layers: balanced gives)",
                                 mx->stage, mx->compute_s, mn->stage, mn->compute_s, per, mx->compute_s - mn->compute_s,
                                 fmt::join(better, ", "))});
    }
  }
  for (const auto& d : s.perturbations.devices) {
    if (d.compute_slowdown <= 1.0 && d.drift_per_step <= 0) continue;
    const int steps = std::max(1, s.simulation.steps);
    const std::string drift =
        d.drift_per_step > 0 ? fmt::format(", throttling {:.3g}% further each step ({:.2f}x by step {})", 100 * d.drift_per_step,
                                           d.compute_slowdown * std::pow(1 + d.drift_per_step, steps - 1), steps)
                             : std::string();
    out.push_back({"straggler", fmt::format("{} computes {:.2f}x slower than its peers{}; every collective and pipeline hand-off it "
                                            "joins waits for it",
                                            d.device, d.compute_slowdown, drift)});
  }
  if (r.moe.present && !r.moe.device_factor.empty()) {
    const auto mx = std::max_element(r.moe.device_factor.begin(), r.moe.device_factor.end());
    if (*mx > 1.05) {
      // Priced afterwards by simulating balanced routing (what_if.cpp, price_warnings).
      out.push_back({"moe-imbalance",
                     fmt::format("routing is skewed: ep rank {} processes {:.2f}x its balanced share of expert tokens and every MoE layer "
                                 "(expert compute and all-to-all) waits for it{}",
                                 mx - r.moe.device_factor.begin(), *mx,
                                 r.moe.dropped_fraction > 0 ? fmt::format("; the capacity factor drops {:.1f}% of routed tokens", 100 * r.moe.dropped_fraction) : std::string())});
    }
  }
  return out;
}

}  // namespace ls::wl

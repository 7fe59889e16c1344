// workloads/cost/pass_costs.cpp — see pass_costs.hpp.
#include "workloads/cost/pass_costs.hpp"

#include <algorithm>
#include <cstddef>

#include "workloads/cost/hardware.hpp"
#include "workloads/cost/training_method.hpp"
#include "workloads/model/layout.hpp"

namespace ls::wl {

namespace {

std::size_t index(Pass p) { return static_cast<std::size_t>(p); }

sim::Time time_of(const GpuSpec& g, const Cost& c) {
  if (c.flops <= 0 && c.bytes <= 0) return sim::Time::zero();
  return compute_time(g, c.flops, c.bytes, c.rows);
}

const Cost& cost_of(const LayerCosts& c, Pass pass) {
  switch (pass) {
    case Pass::forward: return c.forward;
    case Pass::backward: return c.backward;
    case Pass::backward_input: return c.backward_input;
    case Pass::backward_weight: return c.backward_weight;
    case Pass::recompute: return c.recompute;
  }
  return c.forward;
}

/// Model FLOPs of a pass in forward units: the backward is twice the forward, its
/// zb-h1 halves one forward each; recomputation is not model work.
double model_multiplier(Pass pass) {
  switch (pass) {
    case Pass::forward: return 1;
    case Pass::backward: return 2;
    case Pass::backward_input: return 1;
    case Pass::backward_weight: return 1;
    case Pass::recompute: return 0;
  }
  return 0;
}

constexpr Pass kPasses[] = {Pass::forward, Pass::backward, Pass::backward_input, Pass::backward_weight, Pass::recompute};

}  // namespace

PassCost operator+(const PassCost& a, const PassCost& b) {
  PassCost out{a.time + b.time, a.hardware_flops + b.hardware_flops, a.model_flops + b.model_flops, a.breakdown};
  out.breakdown += b.breakdown;
  return out;
}

namespace {

/// Context parallelism: each of the cp ranks holds s/cp tokens of every sequence, and
/// every FLOP term of a layer (linear layers ∝ tokens, attention ∝ local queries × keys)
/// divides by cp on it (layer_kernels.cpp counts the same).
void per_cp_rank(LayerCosts& c, int cp) {
  if (cp <= 1) return;
  for (Cost* x : {&c.forward, &c.backward, &c.backward_input, &c.backward_weight, &c.recompute}) {
    x->flops /= cp;
    x->bytes /= cp;
    x->rows /= cp;
  }
  c.model_flops_fwd /= cp;
}

/// model.hpp's FLOPs of one micro-batch, split as the PassCosts interface asks.
struct FlopTables {
  LayerCosts dense, moe_dense, experts, embedding, head, mtp_entry;
  int moe_layer = 0;  // the MoE layer they describe (-1: dense model)
};

FlopTables flop_tables(const Scenario& sc) {
  const auto& m = sc.model;
  const auto& L = sc.layout;
  const int ab = sc.precision.activations;
  FlopTables t;
  t.moe_layer = -1;
  t.dense = layer_costs(m, L.microbatch_size, L.tp, L.sequence_parallel, L.recompute, ab);
  if (!L.embedding_free) {
    t.embedding = embedding_costs(m, L.microbatch_size, L.tp, ab);
    t.head = lm_head_costs(m, L.microbatch_size, L.tp, ab);
    if (m.mtp_depth > 0) t.mtp_entry = mtp_entry_costs(m, L.microbatch_size, L.tp, ab);
  }
  per_cp_rank(t.dense, L.cp);
  per_cp_rank(t.embedding, L.cp);
  per_cp_rank(t.head, L.cp);
  per_cp_rank(t.mtp_entry, L.cp);
  if (m.moe.experts <= 0) return t;
  // Difference of two layer_costs calls: the full MoE layer minus the same layer
  // with no routed expert visits (top_k = 0) leaves exactly the routed-expert work.
  t.moe_layer = m.dense_layers + std::max(1, m.moe.every_n_layers) - 1;  // the first MoE layer (layer_is_moe)
  LayerCosts full = layer_costs(m, t.moe_layer, L.microbatch_size, L.tp, L.ep, L.sequence_parallel, L.recompute, ab);
  ModelSpec m0 = m;
  m0.moe.top_k = 0;
  t.moe_dense = layer_costs(m0, t.moe_layer, L.microbatch_size, L.tp, L.ep, L.sequence_parallel, L.recompute, ab);
  per_cp_rank(full, L.cp);
  per_cp_rank(t.moe_dense, L.cp);
  // Rows of one expert's matmul: the tokens of the ep group's expert-TP groups (each
  // rank's s/cp tokens of b sequences, sequence-split over tp and gathered over
  // expert_tp) × top_k, spread over E experts.
  const double rows = static_cast<double>(L.ep) * L.microbatch_size * static_cast<double>(m.seq_len) / L.cp / L.tp *
                      expert_tp_of(L) * m.moe.top_k / m.moe.experts;
  auto diff = [&](const Cost& a, const Cost& b) { return Cost{a.flops - b.flops, a.bytes - b.bytes, rows}; };
  t.experts.forward = diff(full.forward, t.moe_dense.forward);
  t.experts.backward = diff(full.backward, t.moe_dense.backward);
  t.experts.backward_input = diff(full.backward_input, t.moe_dense.backward_input);
  t.experts.backward_weight = diff(full.backward_weight, t.moe_dense.backward_weight);
  t.experts.recompute = diff(full.recompute, t.moe_dense.recompute);
  t.experts.model_flops_fwd = full.model_flops_fwd - t.moe_dense.model_flops_fwd;
  return t;
}

/// FLOPs of a pass from model.hpp, without a time.
PassCost flops_of(const LayerCosts& costs, Pass pass) {
  const Cost& c = cost_of(costs, pass);
  const double mult = model_multiplier(pass);
  PassCost out;
  out.hardware_flops = c.flops;
  out.model_flops = mult == 0 ? 0.0 : mult * costs.model_flops_fwd;
  return out;
}

/// The kernels of one pass, as the layer_kernels functions list them; Pass::backward
/// is the input-gradient kernels followed by the weight-gradient ones.
template <class KernelsOf>
std::vector<Kernel> kernels_of(KernelsOf&& kernels, Pass pass) {
  switch (pass) {
    case Pass::forward: return kernels(LayerPass::forward);
    case Pass::backward_input: return kernels(LayerPass::backward_input);
    case Pass::backward_weight: return kernels(LayerPass::backward_weight);
    case Pass::recompute: return kernels(LayerPass::recompute);
    case Pass::backward: {
      auto out = kernels(LayerPass::backward_input);
      auto weight = kernels(LayerPass::backward_weight);
      out.insert(out.end(), weight.begin(), weight.end());
      return out;
    }
  }
  return {};
}

/// Times `kernels` and books them into `cost` (time = breakdown total, exactly).
void price(PassCost& cost, std::vector<Kernel> kernels, const ComputeProfile& profile, const GpuSpec& gpu,
           int element_bytes, double dispatch_overhead_s) {
  time_kernels(profile, gpu, kernels, element_bytes, dispatch_overhead_s);
  cost.breakdown = breakdown(kernels);
  cost.time = cost.breakdown.total();
}

/// The framework's per-layer host time (implementation_profile.hpp), booked as launch
/// overhead so that the breakdown still sums to the pass time. A pass with no kernels
/// (recompute none) costs nothing.
void add_module_overhead(PassCost& cost, sim::Time module) {
  if (cost.time == sim::Time::zero()) return;
  cost.breakdown.launch += module;
  cost.time += module;
}

/// FLOPs the training method adds or removes (training_method.hpp): hardware FLOPs
/// always, model FLOPs except for recomputation (which is never model work).
void add_method_flops(PassCost& cost, double delta, Pass pass) {
  cost.hardware_flops += delta;
  if (pass != Pass::recompute) cost.model_flops += delta;
}

}  // namespace

KernelOptions kernel_options(const Scenario& sc) {
  const auto& L = sc.layout;
  KernelOptions o;
  o.microbatch_size = L.microbatch_size;
  o.tp = L.tp;
  o.ep = L.ep;
  o.expert_tp = expert_tp_of(L);
  o.cp = L.cp;
  o.sequence_parallel = L.sequence_parallel && L.tp > 1;
  o.attention = sc.implementation.attention;
  o.fused_elementwise = sc.implementation.fused_elementwise;
  o.fused_loss = sc.implementation.fused_loss;
  o.fused_norm = sc.implementation.fused_norm;
  o.moe_permute_fusion = sc.implementation.moe_permute_fusion;
  o.moe_router_fusion = sc.implementation.moe_router_fusion;
  o.grouped_gemm_per_expert = sc.implementation.grouped_gemm == GroupedGemm::per_expert;
  o.dropout = sc.model.dropout;
  o.causal = true;
  o.recompute = L.recompute;
  o.activation_bytes = sc.precision.activations;
  o.dispatch_overhead_s = sc.implementation.profile.dispatch_overhead_s;
  o.compute = sc.precision.compute;
  return o;
}

namespace {
/// The first layer of the kind asked for, or -1 when the model has none.
int first_layer(const ModelSpec& m, bool moe) {
  for (int l = 0; l < m.layers; ++l)
    if (layer_is_moe(m, l) == moe) return l;
  return -1;
}
}  // namespace

ComputeProfile kernel_profile(const Scenario& sc) {
  ComputeProfile p = compute_profile_of(sc.gpu);
  if (sc.precision.compute == ComputePrecision::mxfp8) p.fp8_gemm_sustained_fraction = p.mxfp8_gemm_sustained_fraction;
  if (!sc.implementation.profile.native_flash) {
    p.flash_fwd_efficiency = p.flash2_fwd_efficiency;
    p.flash_bwd_efficiency = p.flash2_bwd_efficiency;
  }
  if (sc.implementation.attention == AttentionKind::flash1) {
    // The flash-attn 1.x package whatever the framework's own flash kernel would be.
    p.flash_fwd_efficiency = p.flash2_fwd_efficiency * p.flash1_relative_speed;
    p.flash_bwd_efficiency = p.flash2_bwd_efficiency * p.flash1_relative_speed;
  }
  return p;
}

PassCostsLayout::PassCostsLayout(const LayoutSpec& L)
    : microbatch_size(L.microbatch_size), tp(L.tp), ep(L.ep), expert_tp(expert_tp_of(L)), cp(L.cp),
      sequence_parallel(L.sequence_parallel), recompute(L.recompute), embedding_free(L.embedding_free) {}

KernelPassCosts::KernelPassCosts(const Scenario& sc)
    : precision_(sc.precision),
      fused_elementwise_(sc.implementation.fused_elementwise),
      dispatch_overhead_s_(sc.implementation.profile.dispatch_overhead_s),
      gpu_(sc.gpu),
      profile_(kernel_profile(sc)) {
  const auto& m = sc.model;
  const auto& g = sc.gpu;
  const KernelOptions o = kernel_options(sc);
  const int ab = sc.precision.activations;
  const FlopTables flops = flop_tables(sc);
  const int dense_layer = first_layer(m, false), moe_layer = first_layer(m, true);
  const sim::Time module = sim::Time::from_seconds(sc.implementation.profile.module_overhead_s);
  for (Pass p : kPasses) {
    const std::size_t i = index(p);
    // training_method.hpp: frozen weight gradients dropped, LoRA kernels added; `delta`
    // keeps the FLOP counts in step.
    double delta = 0;
    auto method = [&](int layer, KernelPart part, LayerPass lp, std::vector<Kernel> ks) {
      return training_kernels(sc, layer, part, lp, o, std::move(ks), delta);
    };
    dense_[i] = flops_of(flops.dense, p);
    if (dense_layer >= 0) {
      delta = 0;
      price(dense_[i], kernels_of([&](LayerPass lp) { return method(dense_layer, KernelPart::layer, lp, layer_pass_kernels(m, dense_layer, o, lp)); }, p), profile_, g, ab, o.dispatch_overhead_s);
      add_method_flops(dense_[i], delta, p);
      add_module_overhead(dense_[i], module);
    }
    if (!sc.layout.embedding_free && (p == Pass::forward || p == Pass::backward)) {
      embedding_[i] = flops_of(flops.embedding, p);
      price(embedding_[i], kernels_of([&](LayerPass lp) { return method(0, KernelPart::embedding, lp, embedding_pass_kernels(m, o, lp)); }, p), profile_, g, ab, o.dispatch_overhead_s);
      head_[i] = flops_of(flops.head, p);
      delta = 0;
      price(head_[i], kernels_of([&](LayerPass lp) { return method(m.layers - 1, KernelPart::head, lp, lm_head_pass_kernels(m, o, lp)); }, p), profile_, g, ab, o.dispatch_overhead_s);
      add_method_flops(head_[i], delta, p);
      if (m.mtp_depth > 0) {  // pretraining only (layout.cpp): no training-method kernels
        mtp_entry_[i] = flops_of(flops.mtp_entry, p);
        price(mtp_entry_[i], kernels_of([&](LayerPass lp) { return mtp_entry_pass_kernels(m, o, lp); }, p), profile_, g, ab, o.dispatch_overhead_s);
      }
    }
    if (moe_layer < 0) continue;
    // One MoE layer's kernels, split into the routed experts and the rest.
    delta = 0;
    auto all = kernels_of([&](LayerPass lp) { return method(moe_layer, KernelPart::layer, lp, layer_pass_kernels(m, moe_layer, o, lp)); }, p);
    double routed_delta = 0;  // frozen expert wgrads belong to the routed part
    if (p == Pass::backward || p == Pass::backward_weight)
      for (const auto& k : kernels_of([&](LayerPass lp) { return layer_pass_kernels(m, moe_layer, o, lp); }, p))
        if (k.routed_expert && is_frozen(sc.training, "mlp") && k.name.size() > 6 && k.name.substr(k.name.size() - 6) == ".wgrad")
          routed_delta -= k.flops;
    std::vector<Kernel> routed, rest;
    for (auto& k : all) (k.routed_expert ? routed : rest).push_back(k);
    moe_dense_[i] = flops_of(flops.moe_dense, p);
    price(moe_dense_[i], std::move(rest), profile_, g, ab, o.dispatch_overhead_s);
    add_method_flops(moe_dense_[i], delta - routed_delta, p);
    add_module_overhead(moe_dense_[i], module);
    experts_[i] = flops_of(flops.experts, p);
    price(experts_[i], std::move(routed), profile_, g, ab, o.dispatch_overhead_s);
    add_method_flops(experts_[i], routed_delta, p);
  }
  // The embedding's backward is a scatter-add of gradients into the table: no model FLOPs.
  embedding_[index(Pass::backward)].model_flops = 0;
}

PassCost KernelPassCosts::layer(LayerKind kind, Pass pass) const {
  return kind == LayerKind::moe ? moe_dense_[index(pass)] : dense_[index(pass)];
}
PassCost KernelPassCosts::experts(Pass pass) const { return experts_[index(pass)]; }
PassCost KernelPassCosts::embedding(Pass pass) const { return embedding_[index(pass)]; }
PassCost KernelPassCosts::head(Pass pass) const { return head_[index(pass)]; }
PassCost KernelPassCosts::mtp_entry(Pass pass) const { return mtp_entry_[index(pass)]; }

PassCost KernelPassCosts::optimizer(double params) const {
  // Adam's ~10 element-wise FLOP per parameter are not counted as hardware FLOPs
  // (Megatron's HFU counts matmul work only), so FLOPs are conserved across layouts.
  PassCost cost;
  if (params <= 0) return cost;
  price(cost, optimizer_kernels(params, precision_, fused_elementwise_), profile_, gpu_, precision_.activations,
        dispatch_overhead_s_);
  return cost;
}

PassCost RooflinePassCosts::priced(const GpuSpec& gpu, const LayerCosts& costs, Pass pass) {
  PassCost out = flops_of(costs, pass);
  out.time = time_of(gpu, cost_of(costs, pass));
  out.breakdown.gemm = out.time;
  return out;
}

RooflinePassCosts::RooflinePassCosts(const Scenario& sc) : gpu_(&sc.gpu), precision_(sc.precision) {
  const FlopTables t = flop_tables(sc);
  const auto& g = sc.gpu;
  for (Pass p : kPasses) {
    dense_[index(p)] = priced(g, t.dense, p);
    embedding_[index(p)] = priced(g, t.embedding, p);
    head_[index(p)] = priced(g, t.head, p);
    mtp_entry_[index(p)] = priced(g, t.mtp_entry, p);
    if (t.moe_layer >= 0) {
      moe_dense_[index(p)] = priced(g, t.moe_dense, p);
      experts_[index(p)] = priced(g, t.experts, p);
    }
  }
  embedding_[index(Pass::backward)].model_flops = 0;
}

PassCost RooflinePassCosts::optimizer(double params) const {
  // Adam reads and writes master, both moments and the weights, and reads the grads.
  const auto& pr = precision_;
  const double bytes = params * (2.0 * (pr.master + pr.optimizer + pr.weights) + pr.gradients);
  PassCost cost;
  cost.time = compute_time(*gpu_, 0, bytes, 1e9);
  cost.breakdown.optimizer = cost.time;
  return cost;
}

PassCost RooflinePassCosts::layer(LayerKind kind, Pass pass) const {
  return kind == LayerKind::moe ? moe_dense_[index(pass)] : dense_[index(pass)];
}
PassCost RooflinePassCosts::experts(Pass pass) const { return experts_[index(pass)]; }
PassCost RooflinePassCosts::embedding(Pass pass) const { return embedding_[index(pass)]; }
PassCost RooflinePassCosts::head(Pass pass) const { return head_[index(pass)]; }
PassCost RooflinePassCosts::mtp_entry(Pass pass) const { return mtp_entry_[index(pass)]; }

PassBytes pass_bytes(const Scenario& sc) {
  const auto& m = sc.model;
  const auto& L = sc.layout;
  const int ab = sc.precision.activations;
  const KernelOptions o = kernel_options(sc);
  KernelOptions no_recompute = o;
  no_recompute.recompute = Recompute::none;
  PassBytes pb;
  const int dense_layer = first_layer(m, false), moe_layer = first_layer(m, true);
  if (dense_layer >= 0) {
    pb.activation_per_layer = layer_activation_bytes(m, dense_layer, o);
    pb.activation_full_layer = layer_activation_bytes(m, dense_layer, no_recompute);
    pb.activation_per_layer += lora_activation_bytes(sc, dense_layer, o);
    pb.activation_full_layer += lora_activation_bytes(sc, dense_layer, o, true);
  }
  if (moe_layer >= 0) {
    pb.activation_per_moe_layer = layer_activation_bytes(m, moe_layer, o) + lora_activation_bytes(sc, moe_layer, o);
    pb.activation_full_moe_layer = layer_activation_bytes(m, moe_layer, no_recompute) + lora_activation_bytes(sc, moe_layer, o, true);
  }
  if (!L.embedding_free) {
    pb.embedding = embedding_activation_bytes(m, o);
    pb.logits = lm_head_activation_bytes(m, o);
    pb.loss_working = loss_working_bytes(m, o);
    if (m.mtp_depth > 0) pb.mtp_entry = mtp_entry_activation_bytes(m, o);
  }
  // Tokens of the micro-batch on this device: s/cp per sequence under context parallelism.
  const double bsh =
      static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len) / L.cp * static_cast<double>(m.hidden);
  pb.tp_all_reduce = bsh * ab;
  // With sequence parallelism the boundary activation is already split over the TP
  // group, so each TP rank sends 1/t of it. Without, each rank holds all of it and sends
  // it whole, unless the framework splits it (implementation.pp_scatter_gather): each
  // rank sends 1/t and the receiver all-gathers the t pieces over its TP group.
  const bool split = L.tp > 1 && (L.sequence_parallel || sc.implementation.pp_scatter_gather);
  pb.pp_boundary = split ? bsh * ab / L.tp : bsh * ab;
  pb.pp_regather = split && !L.sequence_parallel ? bsh * ab : 0;
  // Each TP rank dispatches a disjoint 1/t of its s/cp tokens per sequence. The expert
  // layers' TP collective (layout.expert_tp other than tp) gathers the tokens of an
  // expert-TP group: 1/t of them per rank, expert_tp ranks — b·s/cp·h bytes at
  // expert_tp = tp, as the attention's.
  if (m.moe.experts > 0) {
    pb.ep_all_to_all = bsh * m.moe.top_k * ab / L.tp;
    pb.expert_tp_all_reduce = bsh * ab / L.tp * expert_tp_of(L);
  }
  return pb;
}

double layer_activation(const Scenario& s, const PassBytes& bytes, int layer) {
  // activation_full_* are what a layer keeps without recompute.
  const bool recomputed = recompute_of_layer(s.layout, layer) != Recompute::none;
  const double mtp = is_mtp_block(s.model, layer) ? bytes.mtp_entry + bytes.logits : 0.0;
  if (layer_is_moe(s.model, layer)) return mtp + (recomputed ? bytes.activation_per_moe_layer : bytes.activation_full_moe_layer);
  return mtp + (recomputed ? bytes.activation_per_layer : bytes.activation_full_layer);
}

}  // namespace ls::wl

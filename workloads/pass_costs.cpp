// workloads/pass_costs.cpp — see pass_costs.hpp.
#include "workloads/pass_costs.hpp"

#include <algorithm>
#include <cstddef>

#include "workloads/hardware.hpp"
#include "workloads/memory.hpp"

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
  return PassCost{a.time + b.time, a.hardware_flops + b.hardware_flops, a.model_flops + b.model_flops};
}

PassCost RooflinePassCosts::priced(const GpuSpec& gpu, const LayerCosts& costs, Pass pass) {
  const Cost& c = cost_of(costs, pass);
  const double mult = model_multiplier(pass);
  return PassCost{time_of(gpu, c), c.flops, mult == 0 ? 0.0 : mult * costs.model_flops_fwd};
}

RooflinePassCosts::RooflinePassCosts(const Scenario& sc) {
  const auto& m = sc.model;
  const auto& L = sc.layout;
  const int ab = sc.precision.activations;
  const auto& g = sc.gpu;
  LayerCosts layer = layer_costs(m, L.microbatch_size, L.tp, L.sequence_parallel, L.recompute, ab);
  LayerCosts embed = embedding_costs(m, L.microbatch_size, L.tp, ab);
  LayerCosts head = lm_head_costs(m, L.microbatch_size, L.tp, ab);
  if (L.embedding_free) {
    embed = LayerCosts{};
    head = LayerCosts{};
  }
  for (Pass p : kPasses) {
    dense_[index(p)] = priced(g, layer, p);
    embedding_[index(p)] = priced(g, embed, p);
    head_[index(p)] = priced(g, head, p);
  }
  // The embedding's backward is a scatter-add of gradients into the table: no model FLOPs.
  embedding_[index(Pass::backward)].model_flops = 0;
  if (m.moe.experts <= 0) return;
  // Difference of two layer_costs calls: the full MoE layer minus the same layer
  // with no routed expert visits (top_k = 0) leaves exactly the routed-expert work.
  const int l_moe = std::max(1, m.moe.every_n_layers) - 1;
  const LayerCosts full = layer_costs(m, l_moe, L.microbatch_size, L.tp, L.ep, L.sequence_parallel, L.recompute, ab);
  ModelSpec m0 = m;
  m0.moe.top_k = 0;
  const LayerCosts dense = layer_costs(m0, l_moe, L.microbatch_size, L.tp, L.ep, L.sequence_parallel, L.recompute, ab);
  // Rows of one expert's matmul: the ep group's tokens × top_k spread over E experts.
  const double rows =
      static_cast<double>(L.ep) * L.microbatch_size * static_cast<double>(m.seq_len) * m.moe.top_k / m.moe.experts;
  auto diff = [&](const Cost& a, const Cost& b) { return Cost{a.flops - b.flops, a.bytes - b.bytes, rows}; };
  LayerCosts experts;
  experts.forward = diff(full.forward, dense.forward);
  experts.backward = diff(full.backward, dense.backward);
  experts.backward_input = diff(full.backward_input, dense.backward_input);
  experts.backward_weight = diff(full.backward_weight, dense.backward_weight);
  experts.recompute = diff(full.recompute, dense.recompute);
  experts.model_flops_fwd = full.model_flops_fwd - dense.model_flops_fwd;
  for (Pass p : kPasses) {
    moe_dense_[index(p)] = priced(g, dense, p);
    experts_[index(p)] = priced(g, experts, p);
  }
}

PassCost RooflinePassCosts::layer(LayerKind kind, Pass pass) const {
  return kind == LayerKind::moe ? moe_dense_[index(pass)] : dense_[index(pass)];
}
PassCost RooflinePassCosts::experts(Pass pass) const { return experts_[index(pass)]; }
PassCost RooflinePassCosts::embedding(Pass pass) const { return embedding_[index(pass)]; }
PassCost RooflinePassCosts::head(Pass pass) const { return head_[index(pass)]; }

PassBytes pass_bytes(const Scenario& sc) {
  const auto& m = sc.model;
  const auto& L = sc.layout;
  const int ab = sc.precision.activations;
  PassBytes pb;
  pb.activation_per_layer = activation_bytes_per_layer(m, L.microbatch_size, L.tp, L.sequence_parallel, L.recompute);
  pb.activation_full_layer = activation_bytes_per_layer(m, L.microbatch_size, L.tp, L.sequence_parallel, Recompute::none);
  const double bsh = static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len) * static_cast<double>(m.hidden);
  // Logits in fp32 (4 B) for the cross-entropy, vocab split over tp (Megatron's vocab-parallel head).
  pb.logits = L.embedding_free ? 0.0
                               : static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len) *
                                     static_cast<double>(m.vocab) * 4.0 / L.tp;
  pb.tp_all_reduce = bsh * ab;
  // With sequence parallelism the boundary activation is already split over the TP
  // group, so each TP rank sends 1/t of it (Megatron's scatter/gather optimisation).
  pb.pp_boundary = L.sequence_parallel && L.tp > 1 ? bsh * ab / L.tp : bsh * ab;
  // Each TP rank dispatches a disjoint 1/t of the micro-batch's tokens.
  if (m.moe.experts > 0)
    pb.ep_all_to_all = static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len) *
                       static_cast<double>(m.hidden) * m.moe.top_k * ab / L.tp;
  return pb;
}

}  // namespace ls::wl

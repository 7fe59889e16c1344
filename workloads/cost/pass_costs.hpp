// workloads/cost/pass_costs.hpp — the time and FLOPs of one pass of one layer on one device.
//
// The stage emitter asks a PassCosts, and nothing else, what a layer pass costs.
// KernelPassCosts is the model every scenario runs: each pass is the kernels a real
// framework launches (layer_kernels.hpp), timed on the GPU's ComputeProfile
// (kernels.hpp); FLOPs stay model.hpp's (so MFU/HFU and `check` are the model's
// counts, whatever the kernels are). RooflinePassCosts (the roofline of model.hpp's
// FLOPs and bytes) is kept for tests/test_pass_costs.cpp, whose closed forms compare
// the two models' FLOP bookkeeping.
//
// MoE layers are split in two parts: the dense part (attention, router, shared
// experts) and the routed experts, so that only the latter scales with a device's
// expert load (sim::RankInfo::work_scale).
// Cost: O(1) per query; construction O(1) (two layer_costs calls for MoE models).
#pragma once

#include "sim/time.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/model/model.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

enum class LayerKind { dense, moe };
enum class Pass { forward, backward, backward_input, backward_weight, recompute };

/// One piece of compute on one device for one micro-batch.
struct PassCost {
  sim::Time time;
  double hardware_flops = 0;  // what the device executes (recompute included)
  double model_flops = 0;     // what MFU counts: forward 1×, backward 2× (split 1× + 1×), recompute 0
  /// `time` by kernel category; breakdown.total() == time exactly (KernelPassCosts).
  /// RooflinePassCosts books its whole time under gemm.
  ComputeBreakdown breakdown;
};
PassCost operator+(const PassCost& a, const PassCost& b);

/// What the stage emitter asks about compute. Implementations price passes their own
/// way; the emitter lays out the same ops whichever it is given.
class PassCosts {
public:
  virtual ~PassCosts() = default;
  /// A dense layer, or the dense part (attention, router, shared experts) of an MoE layer.
  virtual PassCost layer(LayerKind kind, Pass pass) const = 0;
  /// The routed experts of an MoE layer under balanced load (zero for dense models).
  virtual PassCost experts(Pass pass) const = 0;
  /// Embedding lookup (forward/backward only). Its backward counts no model FLOPs.
  virtual PassCost embedding(Pass pass) const = 0;
  /// LM head and loss (forward/backward only).
  virtual PassCost head(Pass pass) const = 0;
  /// An MTP module's entry (forward/backward only; zero without model.mtp_depth).
  virtual PassCost mtp_entry(Pass pass) const = 0;
  /// The optimizer step (gradient clipping + Adam) on `params` local parameters.
  virtual PassCost optimizer(double params) const = 0;
};

/// The kernel options (layer_kernels.hpp) a scenario implies: micro-batch, tp, ep, SP,
/// recompute, activation width, and implementation.attention / fused_elementwise,
/// model.dropout. Causal attention (every model here is a decoder). O(1).
KernelOptions kernel_options(const Scenario& s);

/// The GPU's compute profile as this scenario's kernels select from it: under
/// precision.compute mxfp8 the FP8 GEMMs are block-scaled (mxfp8_gemm_sustained_fraction
/// stands in for fp8_gemm_sustained_fraction); a framework whose `flash` attention is the
/// flash-attn 2.x package (implementation profile native_flash false) runs the
/// FlashAttention-2 efficiencies (flash2_*); attention flash1 runs them times
/// flash1_relative_speed. O(1).
ComputeProfile kernel_profile(const Scenario& s);

/// The layout fields KernelPassCosts reads (kernel_options, the FLOP tables, the
/// training method's adapters). Two scenarios that differ only in their layouts price
/// every pass alike when these agree (test_pass_costs varies every other layout field),
/// so the search's analytic stage prices each once across its candidates.
struct PassCostsLayout {
  explicit PassCostsLayout(const LayoutSpec& layout);
  int microbatch_size = 1, tp = 1, ep = 1, expert_tp = 1, cp = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  bool embedding_free = false;
  auto operator<=>(const PassCostsLayout&) const = default;
};

/// Every pass as the kernels layer_kernels.hpp lists, timed by kernels.hpp on
/// kernel_profile(s). Dense passes price the first dense layer, an MoE layer's
/// dense part and routed experts the first MoE layer (layers of one kind are alike).
/// The optimizer: optimizer_kernels of the local shard, fused (multi-tensor apply) when
/// implementation.fused_elementwise. Construction O(kernels of two layers).
class KernelPassCosts final : public PassCosts {
public:
  explicit KernelPassCosts(const Scenario& s);
  PassCost layer(LayerKind kind, Pass pass) const override;
  PassCost experts(Pass pass) const override;
  PassCost embedding(Pass pass) const override;
  PassCost head(Pass pass) const override;
  PassCost mtp_entry(Pass pass) const override;
  PassCost optimizer(double params) const override;
  const ComputeProfile& profile() const { return profile_; }

private:
  // What the optimizer is priced with (the rest is priced at construction): no pointer
  // to the scenario, so that one object serves every scenario its layout key stands for.
  PrecisionSpec precision_;
  bool fused_elementwise_ = false;
  double dispatch_overhead_s_ = 0;
  GpuSpec gpu_;
  ComputeProfile profile_;
  PassCost dense_[5], moe_dense_[5], experts_[5], embedding_[5], head_[5], mtp_entry_[5];
};

/// Every pass priced by the roofline (hardware.hpp compute_time) on model.hpp's
/// FLOPs and bytes for one micro-batch.
class RooflinePassCosts final : public PassCosts {
public:
  explicit RooflinePassCosts(const Scenario& s);
  PassCost layer(LayerKind kind, Pass pass) const override;
  PassCost experts(Pass pass) const override;
  PassCost embedding(Pass pass) const override;
  PassCost head(Pass pass) const override;
  PassCost mtp_entry(Pass pass) const override;
  PassCost optimizer(double params) const override;

private:
  const GpuSpec* gpu_;
  PrecisionSpec precision_;
  static PassCost priced(const GpuSpec& gpu, const LayerCosts& costs, Pass pass);

  PassCost dense_[5], moe_dense_[5], experts_[5], embedding_[5], head_[5], mtp_entry_[5];
};

/// Bytes the stage emitter moves and keeps per micro-batch, on one device.
struct PassBytes {
  double activation_per_layer = 0;       // kept per dense layer for the backward (under layout.recompute)
  double activation_full_layer = 0;      // materialised by a full recompute of one dense layer
  double activation_per_moe_layer = 0;   // the same for an MoE layer
  double activation_full_moe_layer = 0;
  double embedding = 0;                  // embedding: what its backward needs (dropout mask)
  double logits = 0;                     // LM head: final-norm and head inputs, fp32 softmax of the loss
  LossWorkingSet loss_working;           // the loss's buffers while it runs (layer_kernels.hpp)
  double mtp_entry = 0;                  // an MTP module's entry: its norms' and projection's inputs
  double tp_all_reduce = 0;              // one TP all-reduce buffer: b·s·h·activation_bytes
  double ep_all_to_all = 0;              // one MoE dispatch/combine buffer: b·(s/cp)·k·h·activation_bytes / t
  double expert_tp_all_reduce = 0;       // the expert layers' TP collective: b·(s/cp)·h·activation_bytes / t · expert_tp
  double pp_boundary = 0;                // one pipeline boundary tensor per TP rank
  double pp_regather = 0;                // the TP all-gather after a scattered boundary recv (0: none)
};
/// Activation bytes from the kernel model (layer_kernels.hpp layer_activation_bytes and
/// friends), following attention kind, fusion, dropout, SP and recompute. O(kernels of two layers).
PassBytes pass_bytes(const Scenario& s);
/// Activation bytes layer `layer` keeps per micro-batch (dense or MoE entry of `bytes`;
/// the entry without recompute when layout.recompute.layers leaves the layer out). An
/// MTP module's block also keeps its entry's and its own head's (mtp_entry, logits).
double layer_activation(const Scenario& s, const PassBytes& bytes, int layer);

}  // namespace ls::wl

// workloads/pass_costs.hpp — the time and FLOPs of one pass of one layer on one device.
//
// The stage emitter asks a PassCosts, and nothing else, what a layer pass costs, so a
// finer compute model (per-kernel times) can replace RooflinePassCosts without
// touching how programs are laid out.
//
// MoE layers are split in two parts: the dense part (attention, router, shared
// experts) and the routed experts, so that only the latter scales with a device's
// expert load (sim::RankInfo::work_scale).
// Cost: O(1) per query; construction O(1) (two layer_costs calls for MoE models).
#pragma once

#include "sim/time.hpp"
#include "workloads/model.hpp"
#include "workloads/spec.hpp"

namespace ls::wl {

enum class LayerKind { dense, moe };
enum class Pass { forward, backward, backward_input, backward_weight, recompute };

/// One piece of compute on one device for one micro-batch.
struct PassCost {
  sim::Time time;
  double hardware_flops = 0;  // what the device executes (recompute included)
  double model_flops = 0;     // what MFU counts: forward 1×, backward 2× (split 1× + 1×), recompute 0
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

private:
  static PassCost priced(const GpuSpec& gpu, const LayerCosts& costs, Pass pass);

  PassCost dense_[5], moe_dense_[5], experts_[5], embedding_[5], head_[5];
};

/// Bytes the stage emitter moves and keeps per micro-batch, on one device.
struct PassBytes {
  double activation_per_layer = 0;       // kept per layer for the backward
  double activation_full_layer = 0;      // materialised by a full recompute of one layer
  double logits = 0;                     // LM head: fp32 logits kept for the loss backward
  double tp_all_reduce = 0;              // one TP all-reduce buffer: b·s·h·activation_bytes
  double ep_all_to_all = 0;              // one MoE dispatch/combine buffer: b·s·k·h·activation_bytes / t
  double pp_boundary = 0;                // one pipeline boundary tensor per TP rank
};
PassBytes pass_bytes(const Scenario& s);

}  // namespace ls::wl

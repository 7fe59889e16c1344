// workloads/build/stage_memory.hpp — parameters a device holds and the memory they cost.
//
// DeviceParams answers "how many parameters of layer l live on one device" (the
// dense part split over tp, routed experts also over ep); the stage emitter sizes
// gradient reductions and weight gathers with it, and this file's stage totals
// size the static memory and the optimizer step. Units: parameters, bytes.
// Cost: O(1) per layer query, O(layers of the stage) per stage total.
#pragma once

#include <vector>

#include "workloads/cost/pass_costs.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"
#include "workloads/build/stage_layers.hpp"

namespace ls::wl {

class DeviceParams {
public:
  explicit DeviceParams(const Scenario& s);
  /// Dense parameters of layer l on one device (the attention, router and shared
  /// experts of an MoE layer).
  double dense(int layer) const;
  /// Routed-expert parameters of layer l on one device (experts/ep of them); 0 for dense layers.
  double experts(int layer) const;
  /// Weight bytes of layer l on one device.
  double layer_weight_bytes(int layer) const;
  /// Weights a gather must fetch for layer l: the layer, plus the embedding with the
  /// first layer and the LM head with the last (they live on those stages).
  double gather_weight_bytes(int layer) const;
  /// Whole (not tp-split) embedding and LM head parameters; 0 when embedding_free. A tied
  /// table's head is its copy on the last stage (tied_head_copy), else 0.
  double embedding() const { return embedding_; }
  double head() const { return head_; }
  /// The trained share of dense(l), experts(l), embedding() and head()
  /// (training_method.hpp); equal to them when everything is trained.
  double trained_dense(int layer) const;
  double trained_experts(int layer) const;
  double trained_embedding() const;
  double trained_head() const;

private:
  const Scenario* s_;
  double embedding_ = 0, head_ = 0;
};

/// Whole (not tp-split) parameters of the copy of a tied embedding table that the stage
/// running the LM head keeps when the pipeline puts it on another stage than the
/// embedding: V·h, else 0. Megatron-LM and DeepSpeed's pipeline engine both keep one and
/// sum the two copies' gradients over the pair every step (implementation_profile.cpp
/// [TIE]); zb-v and dualpipe put both ends on one stage, where one table serves both.
double tied_head_copy(const Scenario& s);
/// Whether the copy's gradients are summed over its pair each step: it exists and is trained.
bool tied_head_copy_trained(const Scenario& s);

/// Per-device parameters of one stage, all its chunks together.
struct StageParams {
  double dense = 0;    // dense layers, dense parts of MoE layers, embedding and head shares
  double experts = 0;  // routed experts
  double trained_dense = 0, trained_experts = 0;  // their trained share (training_method.hpp)
};
StageParams stage_params(const Scenario& s, const DeviceParams& params, const std::vector<ChunkLayers>& chunks, int stage);

/// Parameters whose optimizer state one device updates (after ZeRO sharding: dense
/// over dp, experts over the expert-data-parallel group).
double optimizer_params(const Scenario& s, const StageParams& sp);

/// Weights, gradients, master, optimizer and buffers of one stage; activations and peak 0.
MemoryTerms static_memory(const Scenario& s, const DeviceParams& params, const std::vector<ChunkLayers>& chunks, int stage,
                          const StageParams& sp);

/// Activation bytes one micro-batch leaves on the stage for the backward: every layer
/// (the kernel model's saved bytes, pass_costs.hpp PassBytes), plus the embedding's on the
/// first model chunk and the LM head's on the last.
double activation_bytes_per_microbatch(const Scenario& s, const PassBytes& bytes, const std::vector<ChunkLayers>& chunks,
                                       int stage);

}  // namespace ls::wl

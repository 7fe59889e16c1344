// workloads/build/stage_memory.cpp — see stage_memory.hpp.
#include "workloads/build/stage_memory.hpp"

#include <algorithm>

#include "workloads/model/layout.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/memory.hpp"
#include "workloads/model/model.hpp"
#include "workloads/cost/training_method.hpp"

namespace ls::wl {

namespace {
int last_model_chunk(const Scenario& s) { return model_chunk_count(s.layout.schedule, s.layout.pp, s.layout.virtual_stages) - 1; }

/// Layer l's weight bytes on one device that a ZeRO-3 gather holds at once: the layer
/// where the framework gathers and frees it as a unit (an FSDP unit, Megatron's buckets);
/// its widest module where it fetches and releases each sub-module by itself (DeepSpeed,
/// gather_granularity module or parameter; implementation_profile.cpp [RESH]).
double gathered_unit_bytes(const Scenario& s, const DeviceParams& params, int l) {
  const GatherGranularity g = s.implementation.gather_granularity;
  if (g != GatherGranularity::module && g != GatherGranularity::parameter) return params.layer_weight_bytes(l);
  const std::vector<double> numels = layer_matrix_numels(s.model, l);
  double widest = 0, all = 0;
  for (double n : numels) {
    widest = std::max(widest, n);
    all += n;
  }
  return all > 0 ? params.layer_weight_bytes(l) * widest / all : params.layer_weight_bytes(l);
}
}  // namespace

double tied_head_copy(const Scenario& s) {
  const auto& L = s.layout;
  if (!s.model.tied_embeddings || L.embedding_free || L.pp <= 1) return 0.0;
  // Where the stage of the embedding also runs the head, one table serves both: zb-v's V,
  // and dualpipe, whose end stages run one model copy's first chunk and the other copy's
  // last (the mirror exchange sums the two stages' gradients).
  const int first_stage = place_model_chunk(L.schedule, L.pp, 0).first, last = last_model_chunk(s);
  for (const int copy : {0, 1})
    if (place_model_chunk(L.schedule, L.pp, last, copy).first == first_stage) return 0.0;
  return static_cast<double>(s.model.vocab) * static_cast<double>(s.model.hidden);
}

bool tied_head_copy_trained(const Scenario& s) {
  return tied_head_copy(s) > 0 && !is_frozen(s.training, "embedding") && !is_frozen(s.training, "head");
}

DeviceParams::DeviceParams(const Scenario& s) : s_(&s) {
  // A tied table on one stage is counted once, there, so that fully sharded state is
  // exactly bytes·N/D (the seed's worked example). Split over the pipeline, the last
  // stage holds a copy for the LM head, with its own gradients and optimizer state.
  // `embedding_free` (what-if/tests) removes the embedding and head entirely: no
  // work and no parameters, so equal stages really are equal.
  head_ = s.layout.embedding_free ? 0.0 : lm_head_params(s.model) + tied_head_copy(s);
  embedding_ = s.layout.embedding_free ? 0.0 : embedding_params(s.model);
}

double DeviceParams::experts(int l) const {
  const auto& m = s_->model;
  return layer_is_moe(m, l) ? static_cast<double>(m.moe.experts) / s_->layout.ep * expert_params(m) / expert_tp_of(s_->layout) : 0.0;
}

double DeviceParams::dense(int l) const {
  const auto& m = s_->model;
  // An MTP module's block carries its entry (projection and norms), split over tp.
  const double entry = is_mtp_block(m, l) ? mtp_entry_params(m) : 0.0;
  return (layer_is_moe(m, l) ? (layer_params(m, l) - m.moe.experts * expert_params(m) + entry) / s_->layout.tp
                             : (layer_params(m) + entry) / s_->layout.tp) +
         lora_params_on_device(*s_, l);
}

double DeviceParams::trained_dense(int l) const {
  const double lora = lora_params_on_device(*s_, l);
  return (dense(l) - lora) * trained_fraction_dense(*s_, l) + lora;
}
double DeviceParams::trained_experts(int l) const { return experts(l) * trained_fraction_experts(*s_); }
double DeviceParams::trained_embedding() const { return is_frozen(s_->training, "embedding") ? 0.0 : embedding_; }
double DeviceParams::trained_head() const {
  // A tied table's copy is trained with the table: frozen with either end.
  if (tied_head_copy(*s_) > 0) return tied_head_copy_trained(*s_) ? head_ : 0.0;
  return is_frozen(s_->training, "head") ? 0.0 : head_;
}

double DeviceParams::layer_weight_bytes(int l) const { return (dense(l) + experts(l)) * s_->precision.weights; }

double DeviceParams::gather_weight_bytes(int l) const {
  double b = layer_weight_bytes(l);
  if (l == 0) b += embedding_ / s_->layout.tp * s_->precision.weights;
  if (l == s_->model.layers - 1) b += head_ / s_->layout.tp * s_->precision.weights;
  return b;
}

StageParams stage_params(const Scenario& s, const DeviceParams& params, const std::vector<ChunkLayers>& chunks, int stage) {
  StageParams sp;
  const int t = s.layout.tp;
  for (int ch = 0; ch < static_cast<int>(chunks.size()); ++ch) {
    const auto cl = chunks[static_cast<std::size_t>(ch)];
    const int mc = model_chunk_of(s.layout.schedule, s.layout.pp, stage, ch);
    for (int l = cl.begin; l < cl.end; ++l) {
      sp.dense += params.dense(l);
      sp.experts += params.experts(l);
      sp.trained_dense += params.trained_dense(l);
      sp.trained_experts += params.trained_experts(l);
    }
    if (mc == 0) sp.dense += params.embedding() / t;
    if (mc == last_model_chunk(s)) sp.dense += params.head() / t;
    if (mc == 0) sp.trained_dense += params.trained_embedding() / t;
    if (mc == last_model_chunk(s)) sp.trained_dense += params.trained_head() / t;
  }
  return sp;
}

double optimizer_params(const Scenario& s, const StageParams& sp) {
  const int d = zero_shard_ranks(s.layout);  // ZeRO shards over dp·cp, dp alone, or the HSDP shard group
  // The experts shard over the same ranks regrouped (layout.hpp expert_coord): d·tp / (expert_tp·ep).
  const int edp_size = std::max(1, d * s.layout.tp / (expert_tp_of(s.layout) * std::max(1, s.layout.ep)));
  return s.layout.zero >= 1 ? sp.trained_dense / d + sp.trained_experts / edp_size : sp.trained_dense + sp.trained_experts;
}

MemoryTerms static_memory(const Scenario& s, const DeviceParams& params, const std::vector<ChunkLayers>& chunks, int stage,
                          const StageParams& sp) {
  const auto& L = s.layout;
  const auto& pr = s.precision;
  const int d = L.dp * L.cp;  // ZeRO shards over the dp·cp gradient group (Megatron-Core)
  // ... or over dp alone, or the HSDP shard group (headroom.hpp zero_shard_ranks).
  const int shard = zero_shard_ranks(L);
  // Frozen parameters keep their weights only (training_method.hpp).
  StateBytes sb = training_state_bytes(sp.trained_dense, sp.dense - sp.trained_dense, pr, L.zero, shard);
  // A full gradient buffer accumulated over the micro-batches (FSDP no_sync): ZeRO-1's gradients.
  if (L.accumulate_unsharded && L.zero >= 2) sb.gradients = sp.trained_dense * pr.gradients;
  if (sp.experts > 0) {
    const StateBytes se =
        training_state_bytes(sp.trained_experts, sp.experts - sp.trained_experts, pr, L.zero, expert_dp_of(L));
    sb.weights += se.weights;
    sb.gradients += L.accumulate_unsharded && L.zero >= 2 ? sp.trained_experts * pr.gradients : se.gradients;
    sb.master += se.master;
    sb.optimizer += se.optimizer;
  }
  MemoryTerms mt;
  mt.stage = stage;
  mt.weights = sb.weights;
  mt.gradients = sb.gradients;
  mt.master = sb.master;
  mt.optimizer = sb.optimizer;
  // Optimizer offload (offload.hpp): master weights and moments live in host memory.
  if (L.offload.optimizer) mt.master = mt.optimizer = 0;
  double buffers = 0;
  if (L.zero >= 3 && shard > 1) {
    // Resharded after the forward: two gathered units, the one in use and the one
    // prefetched (layers, or DeepSpeed's modules). Kept past the forward: every layer of
    // the stage is gathered while a micro-batch is in flight (its forward done, its
    // backward not), beside the shards.
    double widest = 0, all = 0;
    for (const auto& cl : chunks)
      for (int l = cl.begin; l < cl.end; ++l) {
        widest = std::max(widest, gathered_unit_bytes(s, params, l));
        all += params.layer_weight_bytes(l);
      }
    buffers += s.implementation.reshard == Reshard::after_forward ? 2 * widest : all;
  }
  if (d > 1) buffers += std::min(L.dp_bucket_bytes, sp.trained_dense * pr.gradients);  // bucket being reduced
  mt.buffers = buffers;
  return mt;
}

double activation_bytes_per_microbatch(const Scenario& s, const PassBytes& bytes, const std::vector<ChunkLayers>& chunks,
                                       int stage) {
  double act = 0;
  for (int ch = 0; ch < static_cast<int>(chunks.size()); ++ch) {
    const auto cl = chunks[static_cast<std::size_t>(ch)];
    for (int l = cl.begin; l < cl.end; ++l) act += layer_activation(s, bytes, l);
    const int mc = model_chunk_of(s.layout.schedule, s.layout.pp, stage, ch);
    if (mc == 0) act += bytes.embedding;
    if (mc == last_model_chunk(s)) act += bytes.logits;
  }
  return act;
}

}  // namespace ls::wl

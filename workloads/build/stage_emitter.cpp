// workloads/build/stage_emitter.cpp — see stage_emitter.hpp.
#include "workloads/spec/vocabulary.hpp"
#include "workloads/build/stage_emitter.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>

#include "workloads/model/cp_attention.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/model.hpp"
#include "workloads/build/offload.hpp"
#include "workloads/build/pair_overlap.hpp"
#include "workloads/cost/kernels.hpp"

namespace ls::wl {

namespace {

using sim::CollOp;
using sim::Op;
using sim::OpKind;
using sim::OpRef;
using sim::Stream;

Work work_of(Pass pass) {
  switch (pass) {
    case Pass::forward: return Work::forward;
    case Pass::backward: return Work::backward;
    case Pass::backward_input: return Work::backward_input;
    case Pass::backward_weight: return Work::backward_weight;
    case Pass::recompute: return Work::recompute;
  }
  return Work::other;
}

/// Fields every op of a micro-batch pass carries; microbatch < 0 marks work outside any micro-batch.
Op base_op(OpKind kind, Work work, int microbatch, int chunk, int layer_begin, int layer_end) {
  Op op;
  op.kind = kind;
  op.tag = tag(work);
  op.counts_as_busy = microbatch >= 0;
  op.labels[label::microbatch] = microbatch;
  op.labels[label::chunk] = chunk;
  op.labels[label::layer_begin] = layer_begin;
  op.labels[label::layer_end] = layer_end;
  return op;
}

Op collective_op(Axis axis, CollOp coll, Work work, int microbatch, int chunk, int layer_begin, int layer_end, double bytes,
                 int repeat) {
  Op op = base_op(OpKind::collective, work, microbatch, chunk, layer_begin, layer_end);
  op.group_slot = slot(axis);
  op.coll = coll;
  op.bytes = bytes;
  op.repeat = static_cast<std::uint8_t>(repeat);
  return op;
}

/// A pipeline transfer end: the send (pp_send stream) or the recv (compute stream).
Op pipeline_op(OpKind kind, Work work, int microbatch, int chunk, double bytes, int peer_stage) {
  Op op;
  op.kind = kind;
  op.group_slot = slot(Axis::pp);
  op.tag = tag(work);
  op.labels[label::microbatch] = microbatch;
  op.labels[label::chunk] = chunk;
  op.bytes = bytes;
  op.peer_stage = peer_stage;
  return op;
}

}  // namespace

Op StageEmitter::compute_op(Work work, int microbatch, int chunk, int layer_begin, int layer_end, const PassCost& cost,
                             std::int64_t mem_delta) {
  Op op = base_op(OpKind::compute, work, microbatch, chunk, layer_begin, layer_end);
  op.duration = cost.time;
  op.hw_flops = cost.hardware_flops;
  op.model_flops = cost.model_flops;
  op.mem_delta_bytes = mem_delta;
  compute_breakdown_ += cost.breakdown;
  return op;
}

StageEmitter::StageEmitter(const EmitterInputs& in, const std::vector<ChunkLayers>& chunks, int stage)
    : s_(*in.scenario),
      costs_(*in.costs),
      bytes_(*in.bytes),
      params_(*in.params),
      chunks_(chunks),
      stage_(stage),
      last_model_chunk_(model_chunk_count(s_.layout.schedule, s_.layout.pp, static_cast<int>(chunks.size())) - 1),
      zero3_(s_.layout.zero >= 3 && zero_shard_ranks(s_.layout) > 1),
      // ZeRO-1/2 (distributed optimizer): each rank updated its shard; the new weights are
      // all-gathered bucket by bucket at the start of the next step, overlapped with the
      // forward (Megatron's overlap_param_gather). In one simulated step: a gather per
      // layer on the prefetch stream, and the layer's first forward waits for it.
      zero12_gather_(zero_shard_ranks(s_.layout) > 1 && (s_.layout.zero == 1 || s_.layout.zero == 2)),
      expert_dp_(s_.model.moe.experts > 0 && expert_dp_of(s_.layout) > 1),
      offload_activations_(s_.layout.offload.activations),
      profile_(kernel_profile(s_)),
      // One slot per (gradient, micro-batch, chunk), and one past them: dualpipe's mirror gradients.
      recv_(static_cast<std::size_t>(2 * s_.layout.microbatches + 1) * chunks.size(), 0),
      gathered_this_step_(static_cast<std::size_t>(block_count(s_.model)), 0),
      offload_copy_(static_cast<std::size_t>(block_count(s_.model)), 0) {}

bool StageEmitter::on_other_stage(int model_chunk, int copy) const {
  return place_model_chunk(s_.layout.schedule, s_.layout.pp, model_chunk, copy).first != stage_;
}

std::size_t StageEmitter::recv_slot(bool gradient, int microbatch, int chunk) const {
  const std::size_t dir = gradient ? 1 : 0;
  return (dir * static_cast<std::size_t>(s_.layout.microbatches) + static_cast<std::size_t>(microbatch)) * chunks_.size() +
         static_cast<std::size_t>(chunk);
}

std::uint32_t StageEmitter::recv_index(bool gradient, int microbatch, int chunk) const {
  return recv_[recv_slot(gradient, microbatch, chunk)];
}

void StageEmitter::emit(const std::vector<ScheduleItem>& items, const StageParams& stage_params,
                        const MemoryTerms& static_memory) {
  const bool zb = splits_backward(s_.layout.schedule);
  // Last backward-type item per chunk: DP/ZeRO gradient work hangs off it.
  std::vector<int> last_gradient_item(chunks_.size(), -1);
  for (int i = 0; i < static_cast<int>(items.size()); ++i) {
    const auto& it = items[static_cast<std::size_t>(i)];
    const bool grad = zb ? it.kind == ItemKind::backward_weight
                         : (it.kind == ItemKind::backward || it.kind == ItemKind::backward_weight);
    if (grad) last_gradient_item[static_cast<std::size_t>(it.chunk)] = i;
  }
  // ZeRO-2/3 (DeepSpeed stages 2 and 3, PyTorch FSDP SHARD_GRAD_OP / FULL_SHARD) keep
  // only their gradient shard, so every micro-batch's backward reduce-scatters its
  // gradients (accumulating unsharded gradients would cost the memory the sharding
  // saves). ZeRO-0/1 accumulate locally and reduce once, after the last micro-batch;
  // so do ZeRO-2/3 with accumulate_unsharded (FSDP no_sync: a full gradient buffer).
  const bool reduce_every_microbatch = s_.layout.zero >= 2 && s_.layout.dp * s_.layout.cp > 1 && !s_.layout.accumulate_unsharded;
  PairMarks pair;  // the overlapped pair (dualpipe's F&B) being emitted, if any
  for (int i = 0; i < static_cast<int>(items.size()); ++i) {
    const auto& it = items[static_cast<std::size_t>(i)];
    const Site at{it.microbatch, it.chunk};
    if (it.overlapped) {
      pair = {builder_.count(stream::compute), 0, builder_.count(stream::prefetch), builder_.count(stream::overlap), i + 2};
    } else if (i == pair.last_item - 1) {
      pair.split = builder_.count(stream::compute);
    }
    const bool gradient_item = zb ? it.kind == ItemKind::backward_weight
                                  : (it.kind == ItemKind::backward || it.kind == ItemKind::backward_weight);
    const bool last_gradient =
        reduce_every_microbatch ? gradient_item : i == last_gradient_item[static_cast<std::size_t>(it.chunk)];
    switch (it.kind) {
      case ItemKind::forward: emit_forward(at); break;
      case ItemKind::backward: emit_backward(at, Pass::backward, !zb && last_gradient); break;
      case ItemKind::backward_input: emit_backward(at, Pass::backward_input, !zb && last_gradient); break;
      case ItemKind::backward_weight: emit_backward_weight(at, last_gradient); break;
    }
    if (i == pair.last_item) overlap_pair(pair);
  }
  emit_optimizer(stage_params);
  builder_.program().static_memory_bytes = static_cast<std::int64_t>(
      static_memory.weights + static_memory.gradients + static_memory.master + static_memory.optimizer + static_memory.buffers);
}

void StageEmitter::overlap_pair(const PairMarks& pair) {
  // Ops the passes put on the prefetch or overlap stream would keep their issue order
  // there while their compute is re-threaded, which can deadlock: the layout rules
  // refuse what adds them (ZeRO-3, offload, cp, TP comm overlap).
  if (builder_.count(stream::prefetch) != pair.prefetch || builder_.count(stream::overlap) != pair.overlap)
    throw std::logic_error(fmt::format(
        "dualpipe pair with weight gathers, offload copies or side-stream collectives (the layout rules should refuse it): "
        "stage {}, prefetch ops {} -> {}, overlap ops {} -> {}",
        stage_, pair.prefetch, builder_.count(stream::prefetch), pair.overlap, builder_.count(stream::overlap)));
  // The expert-parallel all-to-alls go beside the other pass's compute (pair_overlap.hpp).
  const auto where = interleave_pair(builder_.program(), stream::compute, stream::overlap, pair.compute, pair.split,
                                     builder_.count(stream::compute), [](const Op& op) {
                                       return op.kind == OpKind::collective && axis_of(op) == Axis::ep;
                                     });
  // Indices this emitter keeps of compute ops (recvs, ZeRO-3 gather users) follow them.
  const auto end = pair.compute + static_cast<std::uint32_t>(where.size());
  for (auto* list : {&recv_, &gather_user_})
    for (std::uint32_t& idx : *list)
      if (idx >= pair.compute && idx < end) idx = where[idx - pair.compute].index;
}

void StageEmitter::emit_forward(const Site& at) {
  const auto& L = s_.layout;
  const int p = L.pp, mc = model_chunk_of(L.schedule, p, stage_, at.chunk);
  const auto cl = chunks_[static_cast<std::size_t>(at.chunk)];
  if (mc > 0 && on_other_stage(mc - 1, at.chunk)) {
    recv_[recv_slot(false, at.microbatch, at.chunk)] =
        builder_.add(stream::compute, pipeline_op(OpKind::recv, Work::forward, at.microbatch, at.chunk, bytes_.pp_boundary, -1));
  }
  if (mc == 0 && !L.embedding_free) {
    builder_.add(stream::compute, compute_op(Work::forward, at.microbatch, at.chunk, -1, 0, costs_.embedding(Pass::forward),
                                             static_cast<std::int64_t>(bytes_.embedding)));
    tp_all_reduce(Pass::forward, at, -1, 0, 1);  // vocab-parallel embedding all-reduce
  }
  // The model's layers, the head, then each MTP module's entry, block and head (the
  // module's logits are booked with its block's activations).
  const int layers = s_.model.layers;
  for (int l = cl.begin; l < std::min(cl.end, layers); ++l) forward_block(at, cl, l);
  if (mc == last_model_chunk_ && !L.embedding_free)
    builder_.add(stream::compute, compute_op(Work::forward, at.microbatch, at.chunk, layers, layers + 1,
                                             costs_.head(Pass::forward), static_cast<std::int64_t>(bytes_.logits)));
  for (int l = std::max(cl.begin, layers); l < cl.end; ++l) {
    mtp_entry(Pass::forward, at, l);
    forward_block(at, cl, l);
    builder_.add(stream::compute, compute_op(Work::forward, at.microbatch, at.chunk, layers, layers + 1, costs_.head(Pass::forward), 0));
  }
  if (mc < last_model_chunk_ && on_other_stage(mc + 1, at.chunk)) {
    const auto [peer, peer_chunk] = place_model_chunk(L.schedule, p, mc + 1, at.chunk);
    const auto idx = builder_.add(stream::pp_send,
                                  pipeline_op(OpKind::send, Work::forward, at.microbatch, at.chunk, bytes_.pp_boundary, peer),
                                  {builder_.last(stream::compute)});
    sends_.push_back(PendingSend{idx, peer, false, at.microbatch, peer_chunk});
  }
}

void StageEmitter::forward_block(const Site& at, ChunkLayers cl, int l) {
  std::int64_t gather = zero3_gather(at, l, false);
  if (gather == kNoGather) gather = first_use_gather(at.chunk, l);
  // Activation offload: layer l's forward waits for the copy of layer l−2, which frees it.
  if (offload_activations_ && layer_offloaded(l - 2, cl.begin, cl.end)) {
    pending_copy_ = offload_copy_[static_cast<std::size_t>(l - 2)];
    pending_mem_ -= static_cast<std::int64_t>(layer_activation(s_, bytes_, l - 2));
  }
  emit_layer(l, Pass::forward, at, gather);
  if (offload_activations_ && layer_offloaded(l, cl.begin, cl.end))
    offload_copy_[static_cast<std::size_t>(l)] =
        builder_.add(stream::prefetch, copy_op(at, l, layer_activation(s_, bytes_, l)), {builder_.last(stream::compute)});
}

void StageEmitter::emit_backward(const Site& at, Pass pass, bool last_gradient) {
  const auto& L = s_.layout;
  const int p = L.pp, mc = model_chunk_of(L.schedule, p, stage_, at.chunk);
  const auto cl = chunks_[static_cast<std::size_t>(at.chunk)];
  if (mc < last_model_chunk_ && on_other_stage(mc + 1, at.chunk)) {
    recv_[recv_slot(true, at.microbatch, at.chunk)] =
        builder_.add(stream::compute, pipeline_op(OpKind::recv, Work::backward, at.microbatch, at.chunk, bytes_.pp_boundary, -1));
  }
  // Mirror of the forward: each MTP module's head, block and entry (last first), the
  // model's head, then its layers.
  const int layers = s_.model.layers;
  for (int l = cl.end - 1; l >= std::max(cl.begin, layers); --l) {
    builder_.add(stream::compute, compute_op(Work::backward, at.microbatch, at.chunk, layers, layers + 1, costs_.head(Pass::backward), 0));
    tp_all_reduce(Pass::backward, at, layers, layers + 1, 1);
    backward_block(at, cl, l, pass);
    mtp_entry(Pass::backward, at, l);
    if (last_gradient) reduce_layer_gradients(at.chunk, l);
  }
  if (mc == last_model_chunk_ && !L.embedding_free) {
    builder_.add(stream::compute, compute_op(Work::backward, at.microbatch, at.chunk, layers, layers + 1,
                                             costs_.head(Pass::backward), -static_cast<std::int64_t>(bytes_.logits)));
    tp_all_reduce(Pass::backward, at, layers, layers + 1, 1);
  }
  for (int l = std::min(cl.end, layers) - 1; l >= cl.begin; --l) {
    backward_block(at, cl, l, pass);
    if (last_gradient) reduce_layer_gradients(at.chunk, l);
  }
  if (mc == 0 && !L.embedding_free)
    builder_.add(stream::compute, compute_op(Work::backward, at.microbatch, at.chunk, -1, 0, costs_.embedding(Pass::backward),
                                             -static_cast<std::int64_t>(bytes_.embedding)));
  if (last_gradient) reduce_chunk_gradients(at.chunk);
  if (mc > 0 && on_other_stage(mc - 1, at.chunk)) {
    const auto [peer, peer_chunk] = place_model_chunk(L.schedule, p, mc - 1, at.chunk);
    // The gradient leaves after the chunk's first layer (input gradient).
    const auto idx = builder_.add(stream::pp_send,
                                  pipeline_op(OpKind::send, Work::backward, at.microbatch, at.chunk, bytes_.pp_boundary, peer),
                                  {builder_.last(stream::compute)});
    sends_.push_back(PendingSend{idx, peer, true, at.microbatch, peer_chunk});
  }
}

void StageEmitter::backward_block(const Site& at, ChunkLayers cl, int l, Pass pass) {
  const auto& L = s_.layout;
  std::int64_t gather = zero3_gather(at, l, true);
  // Activation offload: wait for layer l's reload; allocate layer l−2's, which starts after this backward.
  const bool reload_next = offload_activations_ && layer_offloaded(l - 2, cl.begin, cl.end);
  if (offload_activations_ && layer_offloaded(l, cl.begin, cl.end)) pending_copy_ = offload_copy_[static_cast<std::size_t>(l)];
  if (reload_next) pending_mem_ += static_cast<std::int64_t>(layer_activation(s_, bytes_, l - 2));
  // Full recompute re-runs the layer's forward and holds its complete activations
  // until the backward ends: a separate op, as is the per-op recompute, which
  // gathers the TP inputs again. Selective recompute of a dense layer (the
  // attention core) runs back to back with the backward and no communication in
  // between, so it is folded into the backward op — one event instead of two, same
  // time and FLOPs. An MoE layer's dense part is recomputed as its own op.
  const bool moe = layer_is_moe(s_.model, l);
  const Recompute rc = recompute_of_layer(L, l);
  const bool separate_recompute = moe ? rc != Recompute::none : rc == Recompute::full || rc == Recompute::every_second_matmul;
  const std::int64_t held = separate_recompute ? emit_layer(l, Pass::recompute, at, gather) : 0;
  if (rc == Recompute::full && !moe) gather = std::max(gather, zero3_regather(at, l));
  emit_layer(l, pass, at, gather, held);
  if (reload_next)
    offload_copy_[static_cast<std::size_t>(l - 2)] = builder_.add(
        stream::prefetch, copy_op(at, l - 2, layer_activation(s_, bytes_, l - 2)), {builder_.last(stream::compute)});
}

void StageEmitter::emit_backward_weight(const Site& at, bool last_gradient) {
  // zb-h1 weight-gradient work: no communication, fills the bubble.
  const auto cl = chunks_[static_cast<std::size_t>(at.chunk)];
  for (int l = cl.end - 1; l >= cl.begin; --l) {
    std::int64_t gather = kNoGather;
    emit_layer(l, Pass::backward_weight, at, gather);
    if (last_gradient) reduce_layer_gradients(at.chunk, l);
  }
  if (last_gradient) reduce_chunk_gradients(at.chunk);
}

std::int64_t StageEmitter::emit_layer(int l, Pass pass, const Site& at, std::int64_t& gather, std::int64_t recomputed_bytes) {
  const auto& L = s_.layout;
  const Recompute rc = recompute_of_layer(L, l);
  const bool moe = layer_is_moe(s_.model, l);
  const LayerKind kind = moe ? LayerKind::moe : LayerKind::dense;
  const auto act = static_cast<std::int64_t>(layer_activation(s_, bytes_, l));
  // Overlapped TP collectives (implementation.tp_comm_overlap): dense layers' passes.
  const bool overlap_tp = s_.implementation.tp_comm_overlap && L.tp > 1 && !moe;
  auto compute = [&](const PassCost& cost, std::int64_t mem_delta) {
    layer_compute(pass, at, l, cost, mem_delta, gather, overlap_tp);
  };
  switch (pass) {
    case Pass::forward:
      // MoE: attention + router, dispatch, the experts this device owns, combine.
      compute(costs_.layer(kind, pass), act);
      if (moe) {
        tp_all_reduce(pass, at, l, l + 1, 1);
        expert_round_trip(pass, at, l);
        expert_tp_all_reduce(pass, at, l);
      } else if (!overlap_tp) {
        tp_all_reduce(pass, at, l, l + 1, dense_tp_all_reduces());
      }
      return 0;
    case Pass::recompute: {
      // An MoE layer's recompute replays no TP or EP communication (as if the
      // dispatched tokens were kept): a simplification of the model.
      // The per-op recompute reruns the TP all-gathers ahead of the matmuls it reruns
      // (sequence parallel; without SP the all-reduce of the attention's output, which
      // feeds the rerun norm): about one all-reduce's bytes, counted as one (the
      // parallel block's single all-gather is counted as that one too).
      const double full = moe ? bytes_.activation_full_moe_layer : bytes_.activation_full_layer;
      const std::int64_t held = rc == Recompute::full ? static_cast<std::int64_t>(full) : 0;
      compute(costs_.layer(kind, pass), held);
      if (!moe && !overlap_tp) tp_all_reduce(pass, at, l, l + 1, rc == Recompute::full ? dense_tp_all_reduces() : 1);
      else if (moe && rc != Recompute::selective) expert_op_for(pass, at, l);
      return held;
    }
    case Pass::backward:
    case Pass::backward_input: {
      // Activations are freed by the op that last needs them: the full backward,
      // or (zb-h1) the weight-gradient half.
      const std::int64_t freed = -recomputed_bytes - (pass == Pass::backward_input ? 0 : act);
      if (moe) {
        // Mirror of the forward: gradients go to the expert owners and back.
        expert_tp_all_reduce(pass, at, l);
        expert_round_trip(pass, at, l);
        compute(costs_.layer(kind, pass), freed);
        tp_all_reduce(pass, at, l, l + 1, 1);
      } else {
        PassCost cost = costs_.layer(kind, pass);
        if (rc == Recompute::selective) cost = cost + costs_.layer(kind, Pass::recompute);
        compute(cost, freed);
        if (!overlap_tp) tp_all_reduce(pass, at, l, l + 1, dense_tp_all_reduces());
      }
      return 0;
    }
    case Pass::backward_weight:
      if (moe) expert_op_for(pass, at, l);
      add_compute(compute_op(work_of(pass), at.microbatch, at.chunk, l, l + 1, costs_.layer(kind, pass), -act), gather);
      return 0;
  }
  return 0;
}

void StageEmitter::emit_optimizer(const StageParams& stage_params) {
  // Gradient clipping and Adam on the shard this device updates (no counted FLOPs).
  const double params = optimizer_params(s_, stage_params);
  PassCost cost = costs_.optimizer(params);
  if (s_.layout.offload.optimizer) {
    // ZeRO-Offload: gradients down, CPU Adam, weights up, back to back (offload.hpp).
    cost = PassCost{};
    cost.time = sim::Time::from_seconds(pcie_copy_seconds(s_, optimizer_offload_bytes(s_, params)) +
                                        cpu_optimizer_seconds(s_, params));
    cost.breakdown.optimizer = cost.time;
  }
  const Op opt = compute_op(Work::optimizer, -1, 0, -1, -1, cost, 0);
  // implementation.dp_overlap false: every gradient collective starts after the backward.
  for (const DeferredSync& g : deferred_grad_sync_) issue_grad_sync(g.op, g.copies, true);
  deferred_grad_sync_.clear();
  if (s_.layout.schedule == Schedule::dualpipe) exchange_mirror_gradients(stage_params);
  // Memory-bound, after every gradient is reduced.
  if (any_gradient_sync_) builder_.add(stream::compute, opt, {builder_.last(stream::dp)});
  else builder_.add(stream::compute, opt);
}

void StageEmitter::exchange_mirror_gradients(const StageParams& stage_params) {
  // dualpipe: stage s and stage p−1−s hold the same two model chunks (as chunks 0 and 1,
  // swapped), so each one's gradients are half of the sum the optimizer needs. Each
  // sends the mirror the shard it updates, once its data-parallel reduction is done, and
  // waits for the mirror's before the optimizer (DualPipe's example sums the two
  // copies' gradients the same way, rank with rank p−1−r). Booked under pp.
  const int mirror = s_.layout.pp - 1 - stage_;
  const double bytes = optimizer_params(s_, stage_params) * s_.precision.gradients;
  const int past_last = s_.layout.microbatches;  // the slot one past every micro-batch (recv_)
  Op send = pipeline_op(OpKind::send, Work::grad_sync, past_last, 0, bytes, mirror);
  const auto idx = any_gradient_sync_ ? builder_.add(stream::pp_send, send, {builder_.last(stream::dp)})
                                      : builder_.add(stream::pp_send, send, {builder_.last(stream::compute)});
  sends_.push_back(PendingSend{idx, mirror, true, past_last, 0});
  recv_[recv_slot(true, past_last, 0)] =
      builder_.add(stream::compute, pipeline_op(OpKind::recv, Work::grad_sync, past_last, 0, bytes, -1));
}

void StageEmitter::mtp_entry(Pass pass, const Site& at, int block) {
  // The entry's activations are booked with its block (layer_activation).
  builder_.add(stream::compute, compute_op(work_of(pass), at.microbatch, at.chunk, block, block + 1, costs_.mtp_entry(pass), 0));
  if (pass == Pass::forward) tp_all_reduce(pass, at, block, block + 1, 1);  // its vocab-parallel embedding lookup
}

Op StageEmitter::copy_op(const Site& at, int layer, double bytes) const {
  Op op = base_op(OpKind::compute, Work::offload, at.microbatch, at.chunk, layer, layer + 1);
  op.counts_as_busy = false;  // a copy engine's work, not the SMs'
  op.duration = sim::Time::from_seconds(pcie_copy_seconds(s_, bytes));
  op.bytes = bytes;
  return op;
}

std::uint32_t StageEmitter::add_compute(const Op& given, std::int64_t& gather) {
  Op op = given;
  op.mem_delta_bytes += pending_mem_;
  pending_mem_ = 0;
  const std::int64_t copy = pending_copy_;
  pending_copy_ = kNoGather;
  const auto pre = static_cast<std::uint8_t>(stream::prefetch);
  if (gather == kNoGather) {
    if (copy == kNoGather) return builder_.add(stream::compute, op);
    return builder_.add(stream::compute, op, {OpRef{pre, static_cast<std::uint32_t>(copy)}});
  }
  const auto idx = copy == kNoGather
                       ? builder_.add(stream::compute, op, {OpRef{pre, static_cast<std::uint32_t>(gather)}})
                       : builder_.add(stream::compute, op,
                                      {OpRef{pre, static_cast<std::uint32_t>(gather)}, OpRef{pre, static_cast<std::uint32_t>(copy)}});
  if (zero3_) gather_user_.push_back(idx);  // the ZeRO-3 window tracks who used gather k
  gather = kNoGather;
  return idx;
}

int StageEmitter::dense_tp_all_reduces() const {
  // Megatron's block reduces the attention's and the MLP's row-parallel outputs apart;
  // the parallel block sums them first, so one all-reduce (or, under SP, one
  // reduce-scatter and one all-gather) per pass carries both (PaLM §2).
  return s_.model.parallel_block ? 1 : 2;
}

void StageEmitter::tp_all_reduce(Pass pass, const Site& at, int layer_begin, int layer_end, int repeat) {
  if (s_.layout.tp <= 1) return;
  builder_.add(stream::compute, collective_op(Axis::tp, CollOp::all_reduce, work_of(pass), at.microbatch, at.chunk, layer_begin,
                                              layer_end, bytes_.tp_all_reduce, repeat));
}

void StageEmitter::expert_tp_all_reduce(Pass pass, const Site& at, int layer) {
  // The experts' TP collective: on the tp group when expert_tp = tp (the
  // attention's bytes), on the expert-tp group otherwise, none at expert_tp = 1.
  const int etp = expert_tp_of(s_.layout);
  if (etp == s_.layout.tp) {
    tp_all_reduce(pass, at, layer, layer + 1, 1);
    return;
  }
  if (etp <= 1) return;
  builder_.add(stream::compute, collective_op(Axis::etp, CollOp::all_reduce, work_of(pass), at.microbatch, at.chunk, layer,
                                              layer + 1, bytes_.expert_tp_all_reduce, 1));
}

void StageEmitter::expert_round_trip(Pass pass, const Site& at, int layer) {
  ep_all_to_all(pass, at, layer, 0);
  expert_op_for(pass, at, layer);
  ep_all_to_all(pass, at, layer, 1);
}

void StageEmitter::expert_op_for(Pass pass, const Site& at, int layer) {
  Op op = compute_op(work_of(pass), at.microbatch, at.chunk, layer, layer + 1, costs_.experts(pass), 0);
  op.scaled_by_rank = true;
  builder_.add(stream::compute, op);
}

void StageEmitter::ep_all_to_all(Pass pass, const Site& at, int layer, int variant) {
  if (s_.layout.ep <= 1) return;
  Op op = collective_op(Axis::ep, CollOp::all_to_all, work_of(pass), at.microbatch, at.chunk, layer, layer + 1,
                        bytes_.ep_all_to_all, 1);
  op.variant = static_cast<std::uint8_t>(variant);
  builder_.add(stream::compute, op);
}

int StageEmitter::gather_calls(int layer, double bytes) const {
  const ModelSpec& m = s_.model;
  const bool gpt = m.activation == Activation::gelu;
  const bool last = layer == m.layers - 1;
  // The embedding (and a GPT model's position table) ride with the first layer; the
  // final norm (weight, and bias under LayerNorm) and an untied head with the last.
  const int first_modules = layer == 0 ? (gpt ? 2 : 1) : 0;
  // Vectors under the persistence threshold stay whole on every rank: a norm module is
  // then never gathered, nor a bias. (Their bytes, about a thousandth of a layer's at
  // hidden 1,024 and above, stay in the gathered bytes.)
  const bool persist = widest_layer_vector(m, s_.layout.tp) < s_.implementation.persistence_threshold;
  const int final_norm_tensors = gpt && has_bias(m) ? 2 : 1;
  const int last_modules = last ? (persist ? 0 : 1) + (m.tied_embeddings ? 0 : 1) : 0;
  const int last_tensors = last ? (persist ? 0 : final_norm_tensors) + (m.tied_embeddings ? 0 : 1) : 0;
  switch (s_.implementation.gather_granularity) {
    case GatherGranularity::layer: return 1;
    case GatherGranularity::module:
      return layer_parameter_modules(m, layer) - (persist ? layer_norm_modules(m, layer) : 0) + first_modules + last_modules;
    case GatherGranularity::parameter:
      return layer_parameter_tensors(m, layer) - (persist ? layer_vector_tensors(m, layer) : 0) + first_modules + last_tensors;
    case GatherGranularity::bucket: return std::max(1, static_cast<int>(std::ceil(bytes / s_.implementation.gather_bucket_bytes)));
  }
  return 1;
}

std::int64_t StageEmitter::zero3_gather(const Site& at, int layer, bool backward) {
  if (!zero3_) return kNoGather;
  // Weights kept past the forward need no gather for the backward (and its recompute);
  // kept past the step, none after the layer's first use in it.
  const Reshard reshard = s_.implementation.reshard;
  if (backward && reshard != Reshard::after_forward) return kNoGather;
  if (reshard == Reshard::after_step) {
    auto& done = gathered_this_step_[static_cast<std::size_t>(layer)];
    if (done) return kNoGather;
    done = 1;
  }
  const double bytes = params_.gather_weight_bytes(layer);
  return emit_weight_gathers(at, layer, bytes, gather_calls(layer, bytes), backward);
}

std::int64_t StageEmitter::zero3_regather(const Site& at, int layer) {
  // DeepSpeed's reuse distance [DSP]: after a module's recomputed forward, the layer's
  // later modules run twice (recomputed, then their backward) before this module's
  // backward; a module whose weights would wait behind more than max_reuse_distance
  // parameters is released and gathered again.
  const double limit = s_.implementation.max_reuse_distance;
  if (!zero3_ || !(limit > 0) || s_.implementation.reshard != Reshard::after_forward) return kNoGather;
  const std::vector<double> numels = layer_matrix_numels(s_.model, layer);
  const double tp = s_.layout.tp;
  double after = 0, again = 0, all = 0;
  int modules = 0;
  for (auto it = numels.rbegin(); it != numels.rend(); ++it) {
    if (2 * after / tp > limit) {
      again += *it;
      ++modules;
    }
    after += *it;
    all += *it;
  }
  if (modules == 0) return kNoGather;
  const double bytes = params_.gather_weight_bytes(layer) * again / all;
  const bool persist = widest_layer_vector(s_.model, s_.layout.tp) < s_.implementation.persistence_threshold;
  const int per_module = s_.implementation.gather_granularity == GatherGranularity::parameter && !persist && has_bias(s_.model) ? 2 : 1;
  int calls = modules * per_module;
  if (s_.implementation.gather_granularity == GatherGranularity::layer) calls = 1;
  if (s_.implementation.gather_granularity == GatherGranularity::bucket)
    calls = std::max(1, static_cast<int>(std::ceil(bytes / s_.implementation.gather_bucket_bytes)));
  return emit_weight_gathers(at, layer, bytes, calls, true);
}

std::int64_t StageEmitter::emit_weight_gathers(const Site& at, int layer, double bytes, int calls, bool backward) {
  // `calls` all-gathers of bytes/calls each, as the framework issues them
  // (gather_granularity): one op runs up to 255 of them back to back (Op::repeat).
  constexpr int kMaxRepeat = 255;
  std::int64_t idx = kNoGather;
  for (int done = 0; done < calls;) {
    const int n = std::min(kMaxRepeat, calls - done);
    Op g = collective_op(Axis::dp, CollOp::all_gather, Work::param_gather, -1, at.chunk, layer, layer + 1, bytes / calls, n);
    g.labels[label::microbatch] = at.microbatch;
    const bool first_op = done == 0;
    done += n;
    if (!s_.implementation.param_gather_overlap) {  // not prefetched: the layer waits for its gathers
      builder_.add(stream::compute, g);
      continue;
    }
    // One-layer prefetch: gather k may start once the layer that used gather k−2 has
    // finished, so at most two gathered layers are resident; a layer's later ops follow
    // its first on the prefetch stream.
    if (first_op && gathers_issued_ >= 2)
      idx = builder_.add(stream::prefetch, g, {OpRef{static_cast<std::uint8_t>(stream::compute), gather_user_[gathers_issued_ - 2]}});
    else
      idx = builder_.add(stream::prefetch, g);
  }
  if (s_.implementation.gather_list_copies) {
    // List-form all_gather (implementation_profile.cpp [DSL]): each call's flat buffer is
    // copied out rank by rank, one kernel per rank of the group, its bytes read and written
    // once through HBM. The layer needs the copies, so they run on its stream, after the
    // gathers.
    const double ranks = static_cast<double>(zero_shard_ranks(s_.layout));
    PassCost copies;
    copies.time = sim::Time::from_seconds(calls * ranks * profile_.launch_overhead_s) + memory_time(profile_, s_.gpu, 2 * bytes);
    copies.breakdown.launch = copies.time;  // no kernel of the layer: booked as overhead
    const Work work = backward ? Work::backward : Work::forward;
    Op c = compute_op(work, at.microbatch, at.chunk, layer, layer + 1, copies, 0);
    if (s_.implementation.param_gather_overlap)
      builder_.add(stream::compute, c, {OpRef{static_cast<std::uint8_t>(stream::prefetch), static_cast<std::uint32_t>(idx)}});
    else
      builder_.add(stream::compute, c);
  }
  if (!s_.implementation.param_gather_overlap) return kNoGather;
  ++gathers_issued_;
  return idx;
}

std::int64_t StageEmitter::first_use_gather(int chunk, int layer) {
  if (!zero12_gather_ || gathered_this_step_[static_cast<std::size_t>(layer)]) return kNoGather;
  gathered_this_step_[static_cast<std::size_t>(layer)] = 1;
  const double weights = s_.precision.weights;
  // Only trained weights change in the optimizer step: frozen ones need no gather.
  double dense = params_.gather_weight_bytes(layer) - params_.experts(layer) * weights;
  dense -= (params_.dense(layer) - params_.trained_dense(layer)) * weights;
  if (layer == 0) dense -= (params_.embedding() - params_.trained_embedding()) / s_.layout.tp * weights;
  if (layer == s_.model.layers - 1) dense -= (params_.head() - params_.trained_head()) / s_.layout.tp * weights;
  if (!s_.implementation.param_gather_overlap) {  // not prefetched: exposed before the layer's first forward
    builder_.add(stream::compute, collective_op(Axis::dp, CollOp::all_gather, Work::param_gather, -1, chunk, layer, layer + 1, dense, 1));
    if (expert_dp_ && layer_is_moe(s_.model, layer) && params_.trained_experts(layer) > 0)
      builder_.add(stream::compute, collective_op(Axis::edp, CollOp::all_gather, Work::param_gather, -1, chunk, layer, layer + 1,
                                                  params_.trained_experts(layer) * weights, 1));
    return kNoGather;
  }
  const auto idx = builder_.add(stream::prefetch, collective_op(Axis::dp, CollOp::all_gather, Work::param_gather, -1, chunk,
                                                                layer, layer + 1, dense, 1));
  if (expert_dp_ && layer_is_moe(s_.model, layer) && params_.trained_experts(layer) > 0)
    return builder_.add(stream::prefetch, collective_op(Axis::edp, CollOp::all_gather, Work::param_gather, -1, chunk, layer,
                                                        layer + 1, params_.trained_experts(layer) * weights, 1));
  return idx;
}

void StageEmitter::reduce_gradients(double bytes, int chunk, int layer_begin, int layer_end, bool flush) {
  const auto& L = s_.layout;
  if (L.dp * L.cp <= 1) return;  // weight gradients reduce over dp·cp
  bucket_bytes_ += bytes;
  if (!flush && bucket_bytes_ < L.dp_bucket_bytes) return;
  // A flush with nothing pending (the bucket size divided the gradients) issues no
  // collective: an empty all-reduce still costs its latency.
  if (bucket_bytes_ <= 0) return;
  issue_gradient_reduce(bucket_bytes_, 1, chunk, layer_begin, layer_end);
  bucket_bytes_ = 0;
}

void StageEmitter::issue_gradient_reduce(double bytes, int calls, int chunk, int layer_begin, int layer_end) {
  const auto& L = s_.layout;
  const CollOp op = L.zero >= 1 ? CollOp::reduce_scatter : CollOp::all_reduce;
  const double ranks = static_cast<double>(zero_shard_ranks(L));
  // `calls` collectives of bytes/calls each, up to 255 back to back in one op (Op::repeat).
  constexpr int kMaxRepeat = 255;
  for (int done = 0; done < calls;) {
    const int n = std::min(kMaxRepeat, calls - done);
    const double batch_bytes = bytes * n / calls;
    done += n;
    std::optional<Op> copies;
    if (s_.implementation.gather_list_copies && L.zero >= 3 && ranks > 1) {
      // List-form reduce_scatter (implementation_profile.cpp [DSL]): each call's inputs
      // are copied into one flat buffer rank by rank before the collective, one kernel
      // per rank of the group, its bytes read and written once through HBM.
      PassCost c;
      c.time = sim::Time::from_seconds(n * ranks * profile_.launch_overhead_s) + memory_time(profile_, s_.gpu, 2 * batch_bytes);
      c.breakdown.launch = c.time;  // no kernel of the layer: booked as overhead
      copies = compute_op(Work::backward, -1, chunk, layer_begin, layer_end, c, 0);
    }
    if (ranks > 1)
      add_grad_sync(collective_op(Axis::dp, op, Work::grad_sync, -1, chunk, layer_begin, layer_end, batch_bytes / n, n), copies);
    // HSDP, or ZeRO over dp alone with cp: the reduced shard (bucket / shard group) is
    // all-reduced across the replicas.
    if (replica_degree(L) > 1)
      add_grad_sync(collective_op(Axis::dpr, CollOp::all_reduce, Work::grad_sync, -1, chunk, layer_begin, layer_end,
                                  batch_bytes / n / ranks, n));
  }
}

int StageEmitter::reduce_calls(int layer) const {
  const ModelSpec& m = s_.model;
  const bool gpt = m.activation == Activation::gelu;
  // Every tensor's gradient is reduced, persistent ones too; the final norm with the last layer.
  const int final_norm = layer == m.layers - 1 ? (gpt && has_bias(m) ? 2 : 1) : 0;
  return layer_parameter_tensors(m, layer) + final_norm;
}

bool StageEmitter::reduce_per_parameter() const {
  return zero3_ && s_.implementation.reduce_granularity == ReduceGranularity::parameter;
}

void StageEmitter::reduce_expert_gradients(int chunk, int layer) {
  // Expert gradients reduce over the ranks holding the same experts.
  if (!expert_dp_ || !layer_is_moe(s_.model, layer) || params_.trained_experts(layer) <= 0) return;
  const CollOp op = s_.layout.zero >= 1 ? CollOp::reduce_scatter : CollOp::all_reduce;
  add_grad_sync(collective_op(Axis::edp, op, Work::grad_sync, -1, chunk, layer, layer + 1,
                              params_.trained_experts(layer) * s_.precision.gradients, 1));
}

void StageEmitter::add_grad_sync(const Op& op, const std::optional<Op>& copies) {
  any_gradient_sync_ = true;
  if (!s_.implementation.dp_overlap) {
    deferred_grad_sync_.push_back(DeferredSync{op, copies});
    return;
  }
  issue_grad_sync(op, copies, false);
}

void StageEmitter::issue_grad_sync(const Op& op, const std::optional<Op>& copies, bool after_backward) {
  // The copies are kernels on the GPU (booked on the compute stream) and the reduction
  // waits for them. After the backward nothing else runs: each copy waits for the
  // previous reduction, as on the one NCCL stream they share in the framework. Beside
  // the backward they must not hold the backward up behind a reduction.
  if (copies) {
    if (after_backward && builder_.count(stream::dp) > 0) builder_.add(stream::compute, *copies, {builder_.last(stream::dp)});
    else builder_.add(stream::compute, *copies);
  }
  builder_.add(stream::dp, op, {builder_.last(stream::compute)});
}

void StageEmitter::layer_compute(Pass pass, const Site& at, int l, const PassCost& cost, std::int64_t mem_delta,
                                 std::int64_t& gather, bool overlap_tp) {
  const auto& L = s_.layout;
  const Work work = work_of(pass);
  struct Beside {
    Op coll;
    PassCost slice;  // the compute the collective overlaps
  };
  std::vector<Beside> beside;
  std::vector<Op> before, after;
  PassCost rest = cost;
  const Recompute rc = recompute_of_layer(L, l);
  // The per-op recompute keeps the attention's output: no K/V exchange again.
  const bool reruns_attention = pass != Pass::recompute || rc != Recompute::every_second_matmul;
  if (L.cp > 1 && pass != Pass::backward_weight && reruns_attention) {
    const bool backward = pass == Pass::backward || pass == Pass::backward_input;
    for (CpCollective c : cp_exchange(s_, backward)) {
      // Selective recompute reruns the attention core inside the backward: its ring
      // passes K/V once more.
      if (backward && rc == Recompute::selective && L.cp_kind == CpKind::ring) c.repeat += 1;
      Op op = collective_op(Axis::cp, c.coll, work, at.microbatch, at.chunk, l, l + 1, c.bytes, c.repeat);
      if (L.cp_kind == CpKind::all_gather) {
        (c.after ? after : before).push_back(op);
        continue;
      }
      // Ring: the pass's attention runs in cp blocks; cp−1 of them run beside a
      // transfer, the last block needs the last chunk.
      PassCost slice;
      slice.time = sim::Time::from_ps(rest.breakdown.attention.ps() / L.cp * (L.cp - 1));
      slice.breakdown.attention = slice.time;
      rest.time -= slice.time;
      rest.breakdown.attention -= slice.time;
      beside.push_back({op, slice});
    }
  }
  if (overlap_tp) {
    // The layer's TP collectives beside its GEMMs (TransformerEngine's comm-GEMM
    // overlap), which slow down by the SM-sharing factor.
    const sim::Time gemm = rest.breakdown.gemm;
    PassCost slice;
    slice.time = gemm + sim::Time::from_seconds(gemm.seconds() * s_.implementation.profile.tp_overlap_slowdown);
    slice.breakdown.gemm = slice.time;
    rest.time -= gemm;
    rest.breakdown.gemm -= gemm;
    beside.push_back({collective_op(Axis::tp, CollOp::all_reduce, work, at.microbatch, at.chunk, l, l + 1, bytes_.tp_all_reduce,
                                    dense_tp_all_reduces()),
                      slice});
  }
  for (const Op& op : before) builder_.add(stream::compute, op);
  if (beside.empty()) {
    add_compute(compute_op(work, at.microbatch, at.chunk, l, l + 1, rest, mem_delta), gather);
  } else {
    std::int64_t waits_on = -1;  // the previous slice's collective (overlap stream)
    for (const Beside& b : beside) {
      const bool first_op = builder_.count(stream::compute) == 0;
      const std::uint32_t coll =
          first_op ? builder_.add(stream::overlap, b.coll) : builder_.add(stream::overlap, b.coll, {builder_.last(stream::compute)});
      Op part = compute_op(work, at.microbatch, at.chunk, l, l + 1, b.slice, 0);
      if (waits_on >= 0) {
        const OpRef dep{static_cast<std::uint8_t>(stream::overlap), static_cast<std::uint32_t>(waits_on)};
        if (gather == kNoGather) builder_.add(stream::compute, part, {dep});
        else {
          builder_.add(stream::compute, part, {dep, OpRef{static_cast<std::uint8_t>(stream::prefetch), static_cast<std::uint32_t>(gather)}});
          if (zero3_) gather_user_.push_back(builder_.count(stream::compute) - 1);
          gather = kNoGather;
        }
      } else {
        add_compute(part, gather);
      }
      waits_on = coll;
    }
    rest.hardware_flops = cost.hardware_flops;
    rest.model_flops = cost.model_flops;
    builder_.add(stream::compute, compute_op(work, at.microbatch, at.chunk, l, l + 1, rest, mem_delta),
                 {OpRef{static_cast<std::uint8_t>(stream::overlap), static_cast<std::uint32_t>(waits_on)}});
  }
  for (const Op& op : after) builder_.add(stream::compute, op);
}

void StageEmitter::reduce_layer_gradients(int chunk, int layer) {
  const double bytes = params_.trained_dense(layer) * s_.precision.gradients;
  if (reduce_per_parameter()) {
    if (s_.layout.dp * s_.layout.cp > 1 && bytes > 0) issue_gradient_reduce(bytes, reduce_calls(layer), chunk, layer, layer + 1);
  } else {
    reduce_gradients(bytes, chunk, layer, layer + 1, false);
  }
  reduce_expert_gradients(chunk, layer);
}

void StageEmitter::reduce_chunk_gradients(int chunk) {
  // The embedding and LM head gradients join the chunk's last bucket.
  const int mc = model_chunk_of(s_.layout.schedule, s_.layout.pp, stage_, chunk);
  const auto cl = chunks_[static_cast<std::size_t>(chunk)];
  const double extra = (mc == 0 ? params_.trained_embedding() : 0.0) + (mc == last_model_chunk_ ? params_.trained_head() : 0.0);
  const double bytes = extra / s_.layout.tp * s_.precision.gradients;
  if (reduce_per_parameter()) {
    // The embedding (and a GPT model's position table), an untied head: a tensor each.
    const bool gpt = s_.model.activation == Activation::gelu;
    const int calls = (mc == 0 && params_.trained_embedding() > 0 ? (gpt ? 2 : 1) : 0) +
                      (mc == last_model_chunk_ && params_.trained_head() > 0 && !s_.model.tied_embeddings ? 1 : 0);
    if (s_.layout.dp * s_.layout.cp > 1 && bytes > 0) issue_gradient_reduce(bytes, std::max(1, calls), chunk, cl.begin, cl.end);
  } else {
    reduce_gradients(bytes, chunk, cl.begin, cl.end, true);
  }
}

}  // namespace ls::wl

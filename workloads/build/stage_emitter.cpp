// workloads/build/stage_emitter.cpp — see stage_emitter.hpp: the passes, pipeline transfers and
// in-layer collectives of a stage; its data-parallel gathers and reductions are in
// stage_emitter_dp.cpp.
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
#include "workloads/build/stage_ops.hpp"
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
      // all-gathered bucket by bucket. Overlapped (implementation.param_gather_overlap,
      // Megatron's overlap_param_gather) they run at the start of the next step beside the
      // forward: in one simulated step, a gather per layer on the prefetch stream that the
      // layer's first forward waits for. Otherwise they run after the optimizer.
      zero12_gather_(zero_shard_ranks(s_.layout) > 1 && (s_.layout.zero == 1 || s_.layout.zero == 2)),
      expert_dp_(s_.model.moe.experts > 0 && expert_dp_of(s_.layout) > 1),
      overlapped_offload_(s_.layout.offload.activations && !s_.implementation.blocking_offload_copies),
      blocking_offload_(s_.layout.offload.activations && s_.implementation.blocking_offload_copies),
      sends_block_(pipeline_sends_block(s_)),
      grad_copies_in_backward_(gradient_shards_copied_in_backward(s_)),
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
    final_gradients_ = i == last_gradient_item[static_cast<std::size_t>(it.chunk)];
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
    regather_boundary(Work::forward, at);
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
  flush_deferred_copy();
  if (mc == last_model_chunk_ && !L.embedding_free)
    builder_.add(stream::compute, head_op(Pass::forward, at, static_cast<std::int64_t>(bytes_.logits)));
  for (int l = std::max(cl.begin, layers); l < cl.end; ++l) {
    mtp_entry(Pass::forward, at, l);
    forward_block(at, cl, l);
    builder_.add(stream::compute, head_op(Pass::forward, at, 0));
  }
  if (mc < last_model_chunk_ && on_other_stage(mc + 1, at.chunk)) {
    const auto [peer, peer_chunk] = place_model_chunk(L.schedule, p, mc + 1, at.chunk);
    const auto idx = builder_.add(stream::pp_send,
                                  pipeline_op(OpKind::send, Work::forward, at.microbatch, at.chunk, bytes_.pp_boundary, peer),
                                  {builder_.last(stream::compute)});
    sends_.push_back(PendingSend{idx, peer, false, at.microbatch, peer_chunk});
    wait_for_send(idx, Work::forward, at);
  }
}

sim::Op StageEmitter::head_op(Pass pass, const Site& at, std::int64_t mem_delta) {
  const int layers = s_.model.layers;
  const bool forward = pass == Pass::forward;
  const PassCost cost =
      forward ? costs_.head(pass) : with_grad_accumulation(costs_.head(pass), params_.trained_head() / s_.layout.tp, at.microbatch);
  sim::Op op = compute_op(forward ? Work::forward : Work::backward, at.microbatch, at.chunk, layers, layers + 1, cost, mem_delta);
  op.mem_working_bytes = static_cast<std::int64_t>(forward ? bytes_.loss_working.forward : bytes_.loss_working.backward);
  return op;
}

void StageEmitter::forward_block(const Site& at, ChunkLayers cl, int l) {
  std::int64_t gather = zero3_gather(at, l, false);
  if (gather == kNoGather) gather = first_use_gather(at.chunk, l);
  if (blocking_offload_) {
    // Blocking offload [DSCK]: the copy runs on the compute stream as soon as the layer's
    // forward ends, and frees the layer's activations when it completes.
    emit_layer(l, Pass::forward, at, gather);
    builder_.add(stream::compute, blocking_copy_op(at, l, -1));
    return;
  }
  flush_deferred_copy();
  // Activation offload: layer l's forward waits for the copy of layer l−2, which frees it.
  if (overlapped_offload_ && layer_offloaded(l - 2, cl.begin, cl.end)) {
    pending_copy_ = offload_copy_[static_cast<std::size_t>(l - 2)];
    pending_mem_ -= static_cast<std::int64_t>(layer_activation(s_, bytes_, l - 2));
  }
  emit_layer(l, Pass::forward, at, gather);
  if (overlapped_offload_ && layer_offloaded(l, cl.begin, cl.end))
    defer_copy(copy_op(at, l, l + 1, layer_activation(s_, bytes_, l)), l);
}

void StageEmitter::defer_copy(const Op& copy, int layer) {
  // The copy shares the in-order prefetch stream with the weight gathers but needs its
  // layer's compute done first: queued at once, it would hold back the next layer's gather
  // (prefetched during this layer) until this layer ended. Frameworks copy on a stream of
  // their own, so it joins the stream after the next layer's gather instead.
  deferred_copy_ = DeferredCopy{copy, builder_.last(stream::compute), layer};
}

void StageEmitter::flush_deferred_copy() {
  if (!deferred_copy_) return;
  offload_copy_[static_cast<std::size_t>(deferred_copy_->layer)] =
      builder_.add(stream::prefetch, deferred_copy_->op, {deferred_copy_->after});
  deferred_copy_.reset();
}

void StageEmitter::emit_backward(const Site& at, Pass pass, bool last_gradient) {
  const auto& L = s_.layout;
  const int p = L.pp, mc = model_chunk_of(L.schedule, p, stage_, at.chunk);
  const auto cl = chunks_[static_cast<std::size_t>(at.chunk)];
  if (mc < last_model_chunk_ && on_other_stage(mc + 1, at.chunk)) {
    recv_[recv_slot(true, at.microbatch, at.chunk)] =
        builder_.add(stream::compute, pipeline_op(OpKind::recv, Work::backward, at.microbatch, at.chunk, bytes_.pp_boundary, -1));
    regather_boundary(Work::backward, at);
  }
  // Mirror of the forward: each MTP module's head, block and entry (last first), the
  // model's head, then its layers.
  const int layers = s_.model.layers;
  for (int l = cl.end - 1; l >= std::max(cl.begin, layers); --l) {
    builder_.add(stream::compute, head_op(Pass::backward, at, 0));
    tp_all_reduce(Pass::backward, at, layers, layers + 1, 1);
    backward_block(at, cl, l, pass);
    mtp_entry(Pass::backward, at, l);
    if (last_gradient) reduce_layer_gradients(at.chunk, l);
  }
  if (mc == last_model_chunk_ && !L.embedding_free) {
    builder_.add(stream::compute, head_op(Pass::backward, at, -static_cast<std::int64_t>(bytes_.logits)));
    tp_all_reduce(Pass::backward, at, layers, layers + 1, 1);
  }
  for (int l = std::min(cl.end, layers) - 1; l >= cl.begin; --l) {
    backward_block(at, cl, l, pass);
    if (last_gradient) reduce_layer_gradients(at.chunk, l);
  }
  if (mc == 0 && !L.embedding_free)
    builder_.add(stream::compute,
                 compute_op(Work::backward, at.microbatch, at.chunk, -1, 0,
                            with_grad_accumulation(costs_.embedding(Pass::backward), params_.trained_embedding() / L.tp, at.microbatch),
                            -static_cast<std::int64_t>(bytes_.embedding)));
  if (last_gradient) reduce_chunk_gradients(at.chunk);
  if (mc > 0 && on_other_stage(mc - 1, at.chunk)) {
    const auto [peer, peer_chunk] = place_model_chunk(L.schedule, p, mc - 1, at.chunk);
    // The gradient leaves after the chunk's first layer (input gradient).
    const auto idx = builder_.add(stream::pp_send,
                                  pipeline_op(OpKind::send, Work::backward, at.microbatch, at.chunk, bytes_.pp_boundary, peer),
                                  {builder_.last(stream::compute)});
    sends_.push_back(PendingSend{idx, peer, true, at.microbatch, peer_chunk});
    wait_for_send(idx, Work::backward, at);
  }
}

void StageEmitter::wait_for_send(std::uint32_t send, Work work, const Site& at) {
  if (!sends_block_) return;
  // A zero-time op on the compute stream that starts when the send is done: the next
  // pass waits behind it, and the wait counts as exposed pp time (the send's slot).
  Op wait = compute_op(work, at.microbatch, at.chunk, -1, -1, PassCost{}, 0);
  wait.counts_as_busy = false;
  builder_.add(stream::compute, wait, {OpRef{static_cast<std::uint8_t>(stream::pp_send), send}});
}

void StageEmitter::regather_boundary(Work work, const Site& at) {
  // A boundary tensor sent in TP pieces (implementation.pp_scatter_gather) is
  // all-gathered over the TP group before the pass uses it.
  if (bytes_.pp_regather <= 0) return;
  builder_.add(stream::compute, collective_op(Axis::tp, CollOp::all_gather, work, at.microbatch, at.chunk, -1, -1,
                                              bytes_.pp_regather, 1));
}

void StageEmitter::backward_block(const Site& at, ChunkLayers cl, int l, Pass pass) {
  const auto& L = s_.layout;
  std::int64_t gather = zero3_gather(at, l, true);
  if (blocking_offload_) {
    // Blocking offload: the activations come back on the compute stream just before the
    // layer's recompute and backward; held from the copy's end.
    builder_.add(stream::compute, blocking_copy_op(at, l, +1));
  }
  flush_deferred_copy();
  // Activation offload: wait for layer l's reload; allocate layer l−2's, which starts after this backward.
  const bool reload_next = overlapped_offload_ && layer_offloaded(l - 2, cl.begin, cl.end);
  if (overlapped_offload_ && layer_offloaded(l, cl.begin, cl.end))
    pending_copy_ = offload_copy_[static_cast<std::size_t>(l)];
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
  // The recompute consumed the layer's gather; a module released after it is gathered again.
  if (rc == Recompute::full && !moe) {
    const std::int64_t again = zero3_regather(at, l);
    if (again != kNoGather) gather = again;
  }
  emit_layer(l, pass, at, gather, held);
  if (reload_next) defer_copy(copy_op(at, l - 2, l - 1, layer_activation(s_, bytes_, l - 2)), l - 2);
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
      // The full backward ends with the weight gradients, which the step's sum follows.
      PassCost cost = costs_.layer(kind, pass);
      if (pass == Pass::backward) cost = with_layer_grad_accumulation(cost, l, at.microbatch);
      if (moe) {
        // Mirror of the forward: gradients go to the expert owners and back.
        expert_tp_all_reduce(pass, at, l);
        expert_round_trip(pass, at, l);
        compute(cost, freed);
        tp_all_reduce(pass, at, l, l + 1, 1);
      } else {
        if (rc == Recompute::selective) cost = cost + costs_.layer(kind, Pass::recompute);
        compute(cost, freed);
        if (!overlap_tp) tp_all_reduce(pass, at, l, l + 1, dense_tp_all_reduces());
      }
      return 0;
    }
    case Pass::backward_weight:
      if (moe) expert_op_for(pass, at, l);
      add_compute(compute_op(work_of(pass), at.microbatch, at.chunk, l, l + 1,
                             with_layer_grad_accumulation(costs_.layer(kind, pass), l, at.microbatch), -act),
                  gather);
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
  sum_tied_copies();
  // Memory-bound, after every gradient is reduced.
  if (any_gradient_sync_) builder_.add(stream::compute, opt, {builder_.last(stream::dp)});
  else builder_.add(stream::compute, opt);
  // The updated shards' all-gathers, when not overlapped with the next forward.
  for (const Op& g : deferred_param_gather_) builder_.add(stream::compute, g);
  deferred_param_gather_.clear();
}

void StageEmitter::sum_tied_copies() {
  // A tied table split over the pipeline: its copies on the first and the last stage
  // each hold their end's gradients; an all-reduce over the pair sums them once the
  // data-parallel reduction is done (Megatron), DeepSpeed's pipeline just before it;
  // both before the optimizer, which waits for it (implementation_profile.cpp [TIE]).
  if (!tied_head_copy_trained(s_)) return;
  const int p = s_.layout.pp, v = static_cast<int>(chunks_.size());
  for (int chunk = 0; chunk < v; ++chunk) {
    const int mc = model_chunk_of(s_.layout.schedule, p, stage_, chunk);
    if (mc != 0 && mc != last_model_chunk_) continue;
    const double bytes = tied_head_copy(s_) / s_.layout.tp * s_.precision.gradients;
    const Op sum = collective_op(Axis::pp, CollOp::all_reduce, Work::grad_sync, -1, chunk, -1, -1, bytes, 1);
    if (any_gradient_sync_) builder_.add(stream::compute, sum, {builder_.last(stream::dp)});
    else builder_.add(stream::compute, sum);
    return;
  }
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

Op StageEmitter::copy_op(const Site& at, int layer_begin, int layer_end, double bytes) const {
  Op op = base_op(OpKind::compute, Work::offload, at.microbatch, at.chunk, layer_begin, layer_end);
  op.counts_as_busy = false;  // a copy engine's work, not the SMs'
  op.duration = sim::Time::from_seconds(pcie_copy_seconds(s_, bytes));
  op.bytes = bytes;
  return op;
}

Op StageEmitter::blocking_copy_op(const Site& at, int layer, int sign) const {
  Op op = copy_op(at, layer, layer + 1, layer_activation(s_, bytes_, layer));
  // The compute stream does nothing else meanwhile: not bubble.
  op.counts_as_busy = true;
  op.mem_delta_bytes = sign * static_cast<std::int64_t>(op.bytes);
  return op;
}

std::uint32_t StageEmitter::add_compute(Op op, std::int64_t& gather) {
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

}  // namespace ls::wl

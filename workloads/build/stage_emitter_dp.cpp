// workloads/build/stage_emitter_dp.cpp — the data-parallel collectives of one stage
// (see stage_emitter.hpp): ZeRO-1/2 and ZeRO-3 / FSDP weight all-gathers, gradient
// reductions in buckets or per tensor, and the list-form copies of DeepSpeed's. Apart
// from stage_emitter.cpp, which emits the passes these wait on or follow.
#include "workloads/build/stage_emitter.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "workloads/build/offload.hpp"
#include "workloads/build/stage_ops.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/model.hpp"

namespace ls::wl {

using sim::CollOp;
using sim::Op;
using sim::OpRef;

bool StageEmitter::vectors_persist() const {
  return widest_layer_vector(s_.model, s_.layout.tp) < s_.implementation.persistence_threshold;
}

int StageEmitter::gather_calls_for(int modules, int tensors, double bytes) const {
  switch (s_.implementation.gather_granularity) {
    case GatherGranularity::layer: return 1;
    case GatherGranularity::module: return modules;
    case GatherGranularity::parameter: return tensors;
    case GatherGranularity::bucket: return std::max(1, static_cast<int>(std::ceil(bytes / s_.implementation.gather_bucket_bytes)));
  }
  return 1;
}

int StageEmitter::gather_calls(int layer, double bytes) const {
  const ModelSpec& m = s_.model;
  const bool last = layer == m.layers - 1;
  // The embedding (and a GPT model's position table) ride with the first layer; the
  // final norm and the head's own table (untied, or a tied table's copy on the last
  // stage) with the last. Vectors under the persistence threshold stay whole on every
  // rank: a norm module is then never gathered, nor a bias. (Their bytes, about a
  // thousandth of a layer's at hidden 1,024 and above, stay in the gathered bytes.)
  const bool persist = vectors_persist();
  const int first = layer == 0 ? embedding_tensors(m) : 0;
  const int head = last && params_.head() > 0 ? 1 : 0;
  const int modules = layer_parameter_modules(m, layer) - (persist ? layer_norm_modules(m, layer) : 0) + first + head +
                      (last && !persist ? 1 : 0);
  const int tensors = layer_parameter_tensors(m, layer) - (persist ? layer_vector_tensors(m, layer) : 0) + first + head +
                      (last && !persist ? norm_tensors(m) : 0);
  return gather_calls_for(modules, tensors, bytes);
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
  const int per_module = !vectors_persist() && has_bias(s_.model) ? 2 : 1;  // a matrix and its bias
  return emit_weight_gathers(at, layer, bytes, gather_calls_for(modules, modules * per_module, bytes), true);
}

double StageEmitter::unprefetched_share(int layer, bool backward) const {
  const double limit = s_.implementation.max_live_parameters;
  const GatherGranularity g = s_.implementation.gather_granularity;
  if (!(limit > 0) || (g != GatherGranularity::module && g != GatherGranularity::parameter)) return 0;
  std::vector<double> numels = layer_matrix_numels(s_.model, layer);
  if (numels.empty()) return 0;
  if (backward) std::reverse(numels.begin(), numels.end());
  // The module before the layer's first is the previous layer's last in the pass order,
  // of the same shape here: this layer's last.
  const double tp = s_.layout.tp;
  double all = 0, exposed = 0;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    const double before = numels[i == 0 ? numels.size() - 1 : i - 1] / tp;
    all += numels[i];
    if (before >= limit) exposed += numels[i];
  }
  return all > 0 ? exposed / all : 0;
}

std::int64_t StageEmitter::emit_weight_gathers(const Site& at, int layer, double bytes, int calls, bool backward) {
  // `calls` all-gathers of bytes/calls each, as the framework issues them
  // (gather_granularity): one op runs up to 255 of them back to back (Op::repeat).
  constexpr int kMaxRepeat = 255;
  std::int64_t idx = kNoGather;
  // Modules not fetched ahead (implementation.max_live_parameters) wait for their own
  // gathers: that share of the calls and bytes goes on the compute stream before the
  // layer, the rest is prefetched; all of them when the framework does not prefetch.
  const bool overlap = s_.implementation.param_gather_overlap;
  const double share = overlap ? unprefetched_share(layer, backward) : 1.0;
  int exposed_calls = 0;
  if (share >= 1 || (share > 0 && calls < 2))
    exposed_calls = share >= 0.5 ? calls : 0;  // one call: it goes one way or the other
  else if (share > 0)
    exposed_calls = std::clamp(static_cast<int>(std::lround(calls * share)), 1, calls - 1);
  const double exposed_bytes = exposed_calls == calls ? bytes : exposed_calls == 0 ? 0.0 : bytes * share;
  auto gather = [&](double bytes_each, int n) {
    Op g = collective_op(Axis::dp, CollOp::all_gather, Work::param_gather, -1, at.chunk, layer, layer + 1, bytes_each, n);
    g.labels[label::microbatch] = at.microbatch;
    return g;
  };
  for (int done = 0; done < exposed_calls;) {
    const int n = std::min(kMaxRepeat, exposed_calls - done);
    builder_.add(stream::compute, gather(exposed_bytes / exposed_calls, n));
    done += n;
  }
  const int prefetched_calls = calls - exposed_calls;
  for (int done = 0; done < prefetched_calls;) {
    const int n = std::min(kMaxRepeat, prefetched_calls - done);
    const Op g = gather((bytes - exposed_bytes) / prefetched_calls, n);
    const bool first_op = done == 0;
    done += n;
    // One-layer prefetch: gather k may start once the layer that used gather k−2 has
    // finished, so at most two gathered layers are resident; a layer's later ops follow
    // its first on the prefetch stream.
    if (first_op && gathers_issued_ >= 2)
      idx = builder_.add(stream::prefetch, g, {OpRef{static_cast<std::uint8_t>(stream::compute), gather_user_[gathers_issued_ - 2]}});
    else
      idx = builder_.add(stream::prefetch, g);
  }
  // The copies the layer needs after its gathers, on its stream: a list-form all_gather's
  // flat buffer copied out rank by rank, one kernel per rank of the group
  // (implementation_profile.cpp [DSL]); FSDP2's copy-out into the parameters, one kernel per
  // call ([FSDP2]). Either reads and writes the gathered bytes once through HBM.
  PassCost copies;
  if (s_.implementation.gather_list_copies) copies = list_copies(calls, bytes);
  if (s_.implementation.per_parameter_sharding) {
    PassCost out = hbm_pass(2 * bytes);
    const sim::Time launches = sim::Time::from_seconds(calls * profile_.launch_overhead_s);
    out.time += launches;
    out.breakdown.elementwise += launches;
    copies = copies + out;
  }
  if (copies.time > sim::Time::zero()) {
    const Work work = backward ? Work::backward : Work::forward;
    Op c = compute_op(work, at.microbatch, at.chunk, layer, layer + 1, copies, 0);
    if (idx != kNoGather)
      builder_.add(stream::compute, c, {OpRef{static_cast<std::uint8_t>(stream::prefetch), static_cast<std::uint32_t>(idx)}});
    else
      builder_.add(stream::compute, c);
  }
  if (idx == kNoGather) return kNoGather;
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
  std::vector<Op> gathers{collective_op(Axis::dp, CollOp::all_gather, Work::param_gather, -1, chunk, layer, layer + 1, dense, 1)};
  if (expert_dp_ && layer_is_moe(s_.model, layer) && params_.trained_experts(layer) > 0)
    gathers.push_back(collective_op(Axis::edp, CollOp::all_gather, Work::param_gather, -1, chunk, layer, layer + 1,
                                    params_.trained_experts(layer) * weights, 1));
  if (!s_.implementation.param_gather_overlap) {
    // Not overlapped: the framework gathers every bucket synchronously at the end of its
    // optimizer step, before the next step's forward ([MDO] and [DSF] in
    // workloads/spec/implementation_profile.cpp); here, after this step's optimizer
    // (emit_optimizer), outside the pipeline's dependency chain.
    deferred_param_gather_.insert(deferred_param_gather_.end(), gathers.begin(), gathers.end());
    return kNoGather;
  }
  // Prefetched: the layer's first forward waits for the last of them.
  std::int64_t idx = kNoGather;
  for (const Op& g : gathers) idx = builder_.add(stream::prefetch, g);
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

void StageEmitter::issue_gradient_reduce(double grad_bytes, int calls, int chunk, int layer_begin, int layer_end) {
  const auto& L = s_.layout;
  if (L.dp * L.cp <= 1 || !(grad_bytes > 0)) return;  // weight gradients reduce over dp·cp
  // Buckets fill with gradient elements; the reduction moves them in its own dtype.
  const double bytes = grad_bytes * grad_reduce_bytes(s_) / s_.precision.gradients;
  // ZeRO-1 may sum the whole gradient on every rank, each then reading its shard [DSBF].
  const bool scatter = L.zero >= 2 || (L.zero == 1 && s_.implementation.zero1_grad_reduce == Zero1GradReduce::reduce_scatter);
  const CollOp op = scatter ? CollOp::reduce_scatter : CollOp::all_reduce;
  const double ranks = static_cast<double>(zero_shard_ranks(L));
  // `calls` collectives of bytes/calls each, up to 255 back to back in one op (Op::repeat).
  constexpr int kMaxRepeat = 255;
  for (int done = 0; done < calls;) {
    const int n = std::min(kMaxRepeat, calls - done);
    const double batch_bytes = bytes * n / calls;
    done += n;
    // FSDP2 copies the unsharded gradients into the reduce-scatter's input in the reduce
    // dtype ([FSDP2]): w + r bytes per element, which also does any cast.
    PassCost kernels = s_.implementation.per_parameter_sharding && L.zero >= 2 ? copy_in(batch_bytes) : reduce_casts(batch_bytes);
    if (s_.implementation.gather_list_copies && L.zero >= 3 && ranks > 1) {
      // List-form reduce_scatter (implementation_profile.cpp [DSL]): each call's inputs
      // are copied into one flat buffer rank by rank before the collective, one kernel
      // per rank of the group, its bytes read and written once through HBM.
      const PassCost list = list_copies(n, batch_bytes);
      kernels.time += list.time;
      kernels.breakdown.launch += list.breakdown.launch;
    }
    const std::optional<Op> copies = grad_sync_kernels(kernels, chunk, layer_begin, layer_end);
    if (ranks > 1)
      add_grad_sync(collective_op(Axis::dp, op, Work::grad_sync, -1, chunk, layer_begin, layer_end, batch_bytes / n, n), copies);
    // HSDP, or ZeRO over dp alone with cp: the reduced shard (bucket / shard group) is
    // all-reduced across the replicas.
    if (replica_degree(L) > 1)
      add_grad_sync(collective_op(Axis::dpr, CollOp::all_reduce, Work::grad_sync, -1, chunk, layer_begin, layer_end,
                                  batch_bytes / n / ranks, n));
    if (grad_copies_in_backward_ && final_gradients_) {
      // DeepSpeed ZeRO-3 with optimizer offload (offload.hpp): the reduced shards go to
      // the host at once, and the backward's next kernel waits for the reduction and the copy.
      Op copy = copy_op(Site{-1, chunk}, layer_begin, layer_end, batch_bytes * s_.precision.gradients / grad_reduce_bytes(s_) / ranks);
      // The compute stream does nothing else meanwhile: the wait for the reduction is
      // exposed DP time and, like a blocking copy's, not bubble.
      copy.counts_as_busy = true;
      builder_.add(stream::compute, copy, {builder_.last(stream::dp)});
    }
  }
}

PassCost StageEmitter::hbm_pass(double bytes) const {
  PassCost c;
  c.time = memory_time(profile_, s_.gpu, bytes);
  c.breakdown.elementwise = c.time;
  return c;
}

PassCost StageEmitter::copy_in(double reduce_bytes) const {
  const double r = grad_reduce_bytes(s_);
  return hbm_pass((s_.precision.weights + r) * reduce_bytes / r);
}

PassCost StageEmitter::reduce_casts(double reduce_bytes) const {
  // A reduction in another dtype than the gradient buffer's casts the buffer to it and
  // the result back (DeepSpeed's allreduce_bucket: tensor.to(communication_data_type),
  // then copy_ back): g + r bytes through HBM per element each way.
  const double g = s_.precision.gradients, r = grad_reduce_bytes(s_);
  if (r == g) return PassCost{};
  return hbm_pass(2 * (g + r) * reduce_bytes / r);
}

std::optional<Op> StageEmitter::grad_sync_kernels(const PassCost& cost, int chunk, int layer_begin, int layer_end) {
  if (!(cost.time > sim::Time::zero())) return std::nullopt;
  return compute_op(Work::backward, -1, chunk, layer_begin, layer_end, cost, 0);
}

PassCost StageEmitter::list_copies(int calls, double bytes) const {
  // One copy kernel per rank of the ZeRO group per call, the bytes read and written once;
  // a rank's copy starts no sooner than the host has made its view and issued it.
  PassCost c;
  const double per_rank = std::max(profile_.launch_overhead_s, s_.implementation.profile.list_rank_overhead_s);
  c.time = sim::Time::from_seconds(calls * static_cast<double>(zero_shard_ranks(s_.layout)) * per_rank) +
           memory_time(profile_, s_.gpu, 2 * bytes);
  c.breakdown.launch = c.time;  // no kernel of the layer: booked as overhead
  return c;
}

PassCost StageEmitter::with_grad_accumulation(PassCost cost, double params, int microbatch) const {
  const double per_param = grad_accumulation_bytes_per_param(s_, microbatch);
  if (!(per_param > 0) || !(params > 0)) return cost;
  return cost + hbm_pass(params * per_param);
}

PassCost StageEmitter::with_layer_grad_accumulation(PassCost cost, int l, int microbatch) const {
  if (!(grad_accumulation_bytes_per_param(s_, microbatch) > 0)) return cost;
  return with_grad_accumulation(cost, params_.trained_dense(l) + params_.trained_experts(l), microbatch);
}

int StageEmitter::reduce_calls(int layer) const {
  // Every tensor's gradient is reduced, persistent ones too; the final norm with the last layer.
  const ModelSpec& m = s_.model;
  return layer_parameter_tensors(m, layer) + (layer == m.layers - 1 ? norm_tensors(m) : 0);
}

bool StageEmitter::reduce_per_parameter() const {
  return zero3_ && s_.implementation.reduce_granularity == ReduceGranularity::parameter;
}

void StageEmitter::reduce_expert_gradients(int chunk, int layer) {
  // Expert gradients reduce over the ranks holding the same experts.
  if (!expert_dp_ || !layer_is_moe(s_.model, layer) || params_.trained_experts(layer) <= 0) return;
  const CollOp op = s_.layout.zero >= 1 ? CollOp::reduce_scatter : CollOp::all_reduce;
  const double bytes = params_.trained_experts(layer) * grad_reduce_bytes(s_);
  add_grad_sync(collective_op(Axis::edp, op, Work::grad_sync, -1, chunk, layer, layer + 1, bytes, 1),
                grad_sync_kernels(reduce_casts(bytes), chunk, layer, layer + 1));
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

void StageEmitter::reduce_layer_gradients(int chunk, int layer) {
  const double bytes = params_.trained_dense(layer) * s_.precision.gradients;
  if (reduce_per_parameter()) {
    issue_gradient_reduce(bytes, reduce_calls(layer), chunk, layer, layer + 1);
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
    // The embedding (and a GPT model's position table), the head's table: a tensor each.
    const int calls = (mc == 0 && params_.trained_embedding() > 0 ? embedding_tensors(s_.model) : 0) +
                      (mc == last_model_chunk_ && params_.trained_head() > 0 ? 1 : 0);
    issue_gradient_reduce(bytes, std::max(1, calls), chunk, cl.begin, cl.end);
  } else {
    reduce_gradients(bytes, chunk, cl.begin, cl.end, true);
  }
}

}  // namespace ls::wl

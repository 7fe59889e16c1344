// workloads/build/stage_emitter.hpp — one pipeline stage's op template, in schedule order.
//
// Streams (sim::Stream): compute (embedding, per-layer passes with the layer's TP and
// EP collectives, LM head, pipeline recvs, optimizer), pp_send (boundary activations
// and gradients), dp (bucketed gradient all-reduce / reduce-scatter) and prefetch
// (ZeRO weight gathers). Every layer pass — forward, backward, its zb-h1 halves and
// the recompute — goes through emit_layer, for dense and MoE layers alike; what a
// pass costs (time, FLOPs) comes from a PassCosts (pass_costs.hpp) and nowhere else.
// Cost: O(ops of the stage).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/stage_program_builder.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/spec/scenario_spec.hpp"
#include "workloads/build/stage_layers.hpp"
#include "workloads/build/stage_memory.hpp"

namespace ls::wl {

/// A pipeline send whose matching recv (on the peer stage) is patched in once every
/// stage is built.
struct PendingSend {
  std::uint32_t op = 0;  // index on this stage's pp_send stream
  int peer_stage = 0;
  bool gradient = false;  // false: forward activation, true: backward gradient
  int microbatch = 0;
  int peer_chunk = 0;
};

/// What every stage of one program shares; the referenced objects outlive the emitter.
struct EmitterInputs {
  const Scenario* scenario = nullptr;
  const PassCosts* costs = nullptr;
  const PassBytes* bytes = nullptr;
  const DeviceParams* params = nullptr;
};

class StageEmitter {
public:
  StageEmitter(const EmitterInputs& in, const std::vector<ChunkLayers>& chunks, int stage);

  /// Emits the stage's schedule (sched[stage]), then its optimizer step.
  void emit(const std::vector<ScheduleItem>& items, const StageParams& stage_params, const MemoryTerms& static_memory);

  /// Index of the recv for (gradient?, micro-batch, chunk) on the compute stream.
  std::uint32_t recv_index(bool gradient, int microbatch, int chunk) const;
  const std::vector<PendingSend>& sends() const { return sends_; }
  sim::StageProgram take() { return builder_.take(); }
  /// Reserves the room `other`'s program takes so far (sim::StageProgramBuilder::reserve_like).
  void reserve_like(const StageEmitter& other) { builder_.reserve_like(other.builder_.program()); }
  /// Seconds per step of every compute op emitted so far, by kernel category (the ops'
  /// PassCost breakdowns summed): total() equals the sum of the stage template's compute
  /// op durations exactly. Before per-rank perturbations and MoE expert-load scaling.
  const ComputeBreakdown& compute_breakdown() const { return compute_breakdown_; }

private:
  struct Site {
    int microbatch = 0, chunk = 0;
  };
  static constexpr std::int64_t kNoGather = -1;

  void emit_forward(const Site& at);
  void emit_backward(const Site& at, Pass pass, bool last_gradient);
  void emit_backward_weight(const Site& at, bool last_gradient);
  /// One pass of layer l (recompute included): its compute, TP collectives and, for
  /// MoE layers, the dispatch / experts / combine. `gather` is the prefetch op the
  /// first compute op waits on; the op that waits on it resets it to kNoGather.
  /// `recomputed_bytes`: what this micro-batch's recompute of the layer holds (freed
  /// by the backward). Returns the bytes the recompute pass allocates.
  std::int64_t emit_layer(int layer, Pass pass, const Site& at, std::int64_t& gather, std::int64_t recomputed_bytes = 0);
  void emit_optimizer(const StageParams& stage_params);
  /// A compute op priced by `cost`; books cost.breakdown into the stage's breakdown
  /// (every compute op is made here and added to the program at once).
  sim::Op compute_op(Work work, int microbatch, int chunk, int layer_begin, int layer_end, const PassCost& cost,
                     std::int64_t mem_delta);
  /// The head's pass (final norm, LM head, loss; Pass::forward or Pass::backward) with the
  /// loss's working buffers held while it runs (PassBytes::loss_working).
  sim::Op head_op(Pass pass, const Site& at, std::int64_t mem_delta);

  /// True when model chunk `model_chunk` (of the copy that chunk `copy` runs: dualpipe)
  /// runs on another stage: only then does a boundary tensor travel (zb-v's turn, model
  /// chunks p−1 and p on stage p−1, does not).
  bool on_other_stage(int model_chunk, int copy) const;
  /// Where an overlapped pair's ops begin: the op counts of the compute stream (the
  /// forward's first op), of the prefetch and overlap streams (nothing may join those)
  /// when it began, the compute count where its backward begins, and the item index of
  /// its last item (the backward's W).
  struct PairMarks {
    std::uint32_t compute = 0, split = 0, prefetch = 0, overlap = 0;
    int last_item = -1;
  };
  /// Re-threads the overlapped pair just emitted (pair_overlap.hpp) and follows its indices.
  void overlap_pair(const PairMarks& pair);
  /// A tied table split over the pipeline: the all-reduce of its two copies' gradients,
  /// on the stages of its ends, before the optimizer.
  void sum_tied_copies();
  /// dualpipe: the gradient shard this stage updates, to and from the mirror stage.
  void exchange_mirror_gradients(const StageParams& stage_params);
  std::size_t recv_slot(bool gradient, int microbatch, int chunk) const;
  /// Adds a compute op after `gather` (reset to kNoGather) and after the pending
  /// activation copy, with the pending offload memory change added to its own.
  std::uint32_t add_compute(sim::Op op, std::int64_t& gather);
  /// The compute of one layer pass with its context-parallel K/V exchange and, when
  /// `overlap_tp`, its TP collectives beside the GEMMs (overlap.md in the README): a
  /// collective that overlaps a slice of the compute runs on stream::overlap beside a
  /// compute op of that slice's time, and the rest of the pass waits for it, so its
  /// exposed time is max(0, comm − slice). Blocking CP collectives (all-gather kind) sit
  /// on the compute stream before (and, dK/dV, after) the pass.
  void layer_compute(Pass pass, const Site& at, int layer, const PassCost& cost, std::int64_t mem_delta,
                     std::int64_t& gather, bool overlap_tp);
  /// Adds a gradient collective on the dp stream now (dp_overlap) or keeps it for after
  /// the backward (flushed before the optimizer).
  void add_grad_sync(const sim::Op& op, const std::optional<sim::Op>& copies = std::nullopt);
  /// The gradient collective (after its list-form input copies, if any) on the dp stream
  /// now; `after_backward`: the deferred ones, flushed before the optimizer.
  void issue_grad_sync(const sim::Op& op, const std::optional<sim::Op>& copies, bool after_backward);
  /// A host copy of `bytes` (offload.hpp) labelled with layers [layer_begin, layer_end): an
  /// activation copy for the prefetch stream, a copy engine's work, not the SMs'.
  sim::Op copy_op(const Site& at, int layer_begin, int layer_end, double bytes) const;
  /// Holds an overlapped activation copy of `layer` (after the compute stream's last op)
  /// until flush_deferred_copy(), which the next layer's block calls after its gather.
  void defer_copy(const sim::Op& copy, int layer);
  void flush_deferred_copy();
  /// Layer `layer`'s activation copy for the compute stream (blocking_offload_copies),
  /// down (sign −1: frees them as it completes) or back (+1: holds them from then).
  sim::Op blocking_copy_op(const Site& at, int layer, int sign) const;
  /// TP all-reduces of a dense layer's pass: 2, or 1 in the parallel block.
  int dense_tp_all_reduces() const;
  void tp_all_reduce(Pass pass, const Site& at, int layer_begin, int layer_end, int repeat);
  /// Under a blocking p2p (implementation.p2p_overlap): the compute stream waits for pipeline send `send`.
  void wait_for_send(std::uint32_t send, Work work, const Site& at);
  /// The TP all-gather of a boundary tensor sent in TP pieces (implementation.pp_scatter_gather).
  void regather_boundary(Work work, const Site& at);
  /// The expert layers' TP collective after the combine (forward) or before the
  /// dispatch (backward): layout.expert_tp's group and bytes.
  void expert_tp_all_reduce(Pass pass, const Site& at, int layer);
  void expert_round_trip(Pass pass, const Site& at, int layer);
  void expert_op_for(Pass pass, const Site& at, int layer);
  void ep_all_to_all(Pass pass, const Site& at, int layer, int variant);
  /// An MTP module's entry (norms, projection, the shifted tokens' embedding) before
  /// its block in the forward, after it in the backward.
  void mtp_entry(Pass pass, const Site& at, int block);
  /// One block's forward (its gathers, offload copies, the layer), and its backward
  /// (the gathers, offload reloads, recompute and the backward pass).
  void forward_block(const Site& at, ChunkLayers cl, int l);
  void backward_block(const Site& at, ChunkLayers cl, int l, Pass pass);
  /// All-gathers that ZeRO-3 issues for layer `layer`'s `bytes` (gather_granularity), and
  /// for any `modules` holding `tensors` and `bytes`.
  int gather_calls(int layer, double bytes) const;
  int gather_calls_for(int modules, int tensors, double bytes) const;
  /// Biases and norms under implementation.persistence_threshold: never gathered.
  bool vectors_persist() const;
  /// The list-form copies of `calls` ZeRO-3 collectives moving `bytes` (implementation.gather_list_copies).
  PassCost list_copies(int calls, double bytes) const;
  /// The casts of a gradient reduction moving `reduce_bytes` to precision.grad_reduce
  /// and back; zero when it is the gradients' own dtype.
  PassCost reduce_casts(double reduce_bytes) const;
  /// FSDP2's reduce-scatter copy-in [FSDP2] of `reduce_bytes` (in the reduce dtype): the
  /// unsharded gradients (weights' dtype) read, the flat input written, w + r bytes per element.
  PassCost copy_in(double reduce_bytes) const;
  /// A memory-bound pass moving `bytes` through HBM, booked as element-wise work.
  PassCost hbm_pass(double bytes) const;
  /// The kernels a gradient reduction waits for (casts, list-form copies) as one compute
  /// op, or none when they cost nothing.
  std::optional<sim::Op> grad_sync_kernels(const PassCost& cost, int chunk, int layer_begin, int layer_end);
  /// `cost` plus the add that sums `params` parameters' weight gradients of micro-batch
  /// `microbatch` into the step's (implementation.grad_accumulation), where they are
  /// reduced once per step.
  PassCost with_grad_accumulation(PassCost cost, double params, int microbatch) const;
  /// The same for layer l's trained parameters (its dense part and its routed experts),
  /// counted only where an add happens: every backward asks, most need none.
  PassCost with_layer_grad_accumulation(PassCost cost, int l, int microbatch) const;
  std::int64_t zero3_gather(const Site& at, int layer, bool backward);
  /// ZeRO-3 under full recompute with implementation.max_reuse_distance: the modules of
  /// layer `layer` released between its recomputed forward and its backward, gathered again.
  std::int64_t zero3_regather(const Site& at, int layer);
  /// `calls` weight all-gathers of `bytes` in all for layer `layer` (and their list-form
  /// copies), on the compute stream or prefetched; the prefetched gather's index.
  std::int64_t emit_weight_gathers(const Site& at, int layer, double bytes, int calls, bool backward);
  /// Under implementation.max_live_parameters, the share of layer `layer`'s weights (by
  /// parameters) in modules that are not fetched ahead: those after a module of that many
  /// parameters or more, in the pass's module order. 0 without a limit.
  double unprefetched_share(int layer, bool backward) const;
  std::int64_t first_use_gather(int chunk, int layer);
  void reduce_gradients(double bytes, int chunk, int layer_begin, int layer_end, bool flush);
  /// `calls` gradient reductions of `grad_bytes` in all (in the gradients' dtype; moved in
  /// precision.grad_reduce's) over the ZeRO / data-parallel group (and the replicas'
  /// all-reduce under HSDP), each after its casts and list-form copies.
  void issue_gradient_reduce(double grad_bytes, int calls, int chunk, int layer_begin, int layer_end);
  /// ZeRO-3 reduce_granularity parameter: one reduce-scatter per tensor of the layer.
  bool reduce_per_parameter() const;
  int reduce_calls(int layer) const;
  void reduce_expert_gradients(int chunk, int layer);
  void reduce_layer_gradients(int chunk, int layer);
  void reduce_chunk_gradients(int chunk);

  const Scenario& s_;
  const PassCosts& costs_;
  const PassBytes& bytes_;
  const DeviceParams& params_;
  const std::vector<ChunkLayers>& chunks_;
  const int stage_;
  const int last_model_chunk_;
  const bool zero3_;               // per-layer gathers before every use, one-layer prefetch
  const bool zero12_gather_;       // one gather per layer: before its first forward, or after the optimizer
  const bool expert_dp_;           // expert gradients reduce over an expert-data-parallel group
  const bool overlapped_offload_;  // layout.offload.activations, copies beside the compute
  const bool blocking_offload_;    // layout.offload.activations with implementation.blocking_offload_copies
  const bool sends_block_;         // pipeline sends hold the compute stream (implementation.p2p_overlap)
  const bool grad_copies_in_backward_;  // gradient_shards_copied_in_backward (offload.hpp)
  const ComputeProfile profile_;    // kernel_profile(s_): prices the copies of list-form gathers

  sim::StageProgramBuilder builder_;
  std::vector<std::uint32_t> recv_;        // by (gradient, micro-batch, chunk)
  std::vector<PendingSend> sends_;
  std::uint32_t gathers_issued_ = 0;       // ZeRO-3 gathers so far
  std::vector<std::uint32_t> gather_user_; // compute op that consumed ZeRO-3 gather k
  std::vector<char> gathered_this_step_;   // ZeRO-1/2, and ZeRO-3 resharded after the step: layer already gathered
  double bucket_bytes_ = 0;                // DP gradient bytes not yet reduced
  bool any_gradient_sync_ = false;
  bool final_gradients_ = false;           // emitting a chunk's last gradient item of the step
  struct DeferredSync {
    sim::Op op;
    std::optional<sim::Op> copies;
  };
  std::vector<DeferredSync> deferred_grad_sync_;  // implementation.dp_overlap false: after the backward
  std::vector<sim::Op> deferred_param_gather_;    // ZeRO-1/2, param_gather_overlap false: after the optimizer
  std::vector<std::uint32_t> offload_copy_;  // by layer: its latest activation copy (prefetch stream)
  std::int64_t pending_copy_ = kNoGather;    // copy the next compute op waits on
  /// An overlapped activation copy held back until the next layer's gather is queued
  /// (defer_copy), with the compute op it follows.
  struct DeferredCopy {
    sim::Op op;
    sim::OpRef after;
    int layer = 0;
  };
  std::optional<DeferredCopy> deferred_copy_;
  std::int64_t pending_mem_ = 0;             // memory change the next compute op carries
  ComputeBreakdown compute_breakdown_;
};

}  // namespace ls::wl

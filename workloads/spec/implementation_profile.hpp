// workloads/spec/implementation_profile.hpp — the software stack as a physical input:
// which attention kernel a framework runs, whether its element-wise ops are
// fused, and what its host side costs per kernel. A preset is a documented bundle
// (`implementation.preset`); explicit `implementation.attention` / `fused_elementwise`
// override its choices. The GPU's own constants stay in ComputeProfile: this profile
// holds only what belongs to the framework, so that one GPU profile prices every stack.
// Units: seconds.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/spec/names.hpp"

namespace ls::wl {

/// Attention core: FlashAttention-2/3 or cuDNN fused attention (`flash`), LLM Foundry's
/// Triton FlashAttention (`triton`: the same algorithm, its own efficiencies, see
/// ComputeProfile::triton_*), or the unfused QKᵀ / softmax / ·V kernels of older
/// Megatron-LM and DeepSpeed runs (`unfused`, the s×s scores through HBM).
enum class AttentionKind { flash, triton, unfused, flash1 };
inline constexpr NameTable<AttentionKind, 4> kAttentionNames{{
    {AttentionKind::flash, "flash", "FlashAttention-2/3 or cuDNN fused attention"},
    {AttentionKind::triton, "triton", "LLM Foundry's Triton flash attention"},
    {AttentionKind::flash1, "flash1", "FlashAttention-1 (flash-attn 1.x, the 2022 runs): FlashAttention-2's kernel at half its rate"},
    {AttentionKind::unfused, "unfused", "QKᵀ, softmax and ·V as separate kernels, the s×s scores through HBM"}}};

/// The framework's own per-kernel cost constants.
struct ImplementationProfile {
  std::string name;  // the preset it came from; empty: unset (resolve() derives it)
  /// Host (CPU) time to dispatch one kernel: Python + the PyTorch dispatcher + the
  /// launch call. The host runs ahead of the GPU, so it shows only when a kernel's GPU
  /// time is shorter: each kernel takes max(work + launch, dispatch_overhead_s).
  double dispatch_overhead_s = 0;
  /// Host-side time per layer (transformer block) per pass that the GPU waits for: a
  /// framework's per-module hooks (FSDP: unshard / reshard, pre- and post-backward hooks,
  /// stream synchronisation with the all-gather's rate limiter). Added to every layer's
  /// forward, backward and recompute pass.
  double module_overhead_s = 0;
  /// Fraction by which a GEMM slows down while a TP collective overlaps it
  /// (implementation.tp_comm_overlap): the communication kernels take SMs and HBM
  /// bandwidth from the GEMM. Dimensionless, time × (1 + slowdown).
  double tp_overlap_slowdown = 0;
  /// Host time per rank of the group per list-form collective call (gather_list_copies):
  /// the framework's Python loop builds one view per rank, and PyTorch's ProcessGroupNCCL
  /// issues one copy per rank from C++. The GPU waits for it (the fetch synchronises the
  /// device first, and the copies come no faster than the host issues them), so each
  /// rank's copy takes max(this, the GPU's launch overhead) plus its bytes through HBM.
  double list_rank_overhead_s = 0;
  /// Whether the framework's `flash` attention is written for the part's own tensor-core
  /// instructions (FlashAttention-3 or cuDNN fused attention on Hopper, their Blackwell
  /// versions: ComputeProfile::flash_*), or is the flash-attn 2.x package, which issues
  /// Ampere's warp-level MMA on every part (false: ComputeProfile::flash2_*). The same
  /// kernel on Ampere, where the GPU profile holds equal constants for both.
  bool native_flash = true;
};

/// How a sharded (ZeRO-3 / FSDP) layer's weights are all-gathered: one collective per
/// layer (an FSDP unit, a Megatron bucket), per module (each linear and norm: DeepSpeed
/// from 0.6), per parameter tensor (DeepSpeed up to 0.5), or in buckets of
/// gather_bucket bytes. Each call pays the collective's fixed cost and its ring latency
/// over the group: calls · (fixed + (n−1)·α) + bytes / bus bandwidth.
enum class GatherGranularity { layer, module, parameter, bucket };
inline constexpr NameTable<GatherGranularity, 4> kGatherGranularityNames{{
    {GatherGranularity::layer, "layer", "one per layer (an FSDP unit)"},
    {GatherGranularity::module, "module", "one per linear and norm (DeepSpeed 0.6+)"},
    {GatherGranularity::parameter, "parameter", "one per parameter tensor (DeepSpeed up to 0.5)"},
    {GatherGranularity::bucket, "bucket", "one per `gather_bucket` bytes"}}};

/// How ZeRO-3 reduce-scatters a layer's gradients: in `layout.dp_bucket`s (every preset
/// but `deepspeed`; DeepSpeed from 0.6 coalesces its buckets too), or one collective per
/// parameter tensor (DeepSpeed up to 0.5), each paying the collective's fixed cost and
/// ring latency over the group.
enum class ReduceGranularity { bucket, parameter };
inline constexpr NameTable<ReduceGranularity, 2> kReduceGranularityNames{{
    {ReduceGranularity::bucket, "bucket", "one per `layout.dp_bucket` bytes"},
    {ReduceGranularity::parameter, "parameter", "one per parameter tensor (DeepSpeed up to 0.5)"}}};

/// When a sharded (ZeRO-3 / FSDP) layer's gathered weights are freed: after its
/// forward, so the backward (and a full recompute) gathers them again — FSDP FULL_SHARD,
/// DeepSpeed ZeRO-3; after its backward, so each micro-batch gathers each layer once and
/// the stage holds its layers unsharded while a micro-batch is in flight — FSDP's
/// reshard_after_forward=False; or after the step, so each layer is gathered once per
/// step, at its first use — a pipeline schedule that keeps FSDP stages unsharded
/// across its micro-batches.
enum class Reshard { after_forward, after_backward, after_step };
inline constexpr NameTable<Reshard, 3> kReshardNames{{
    {Reshard::after_forward, "after-forward", "gathered again for the backward (FSDP FULL_SHARD, DeepSpeed ZeRO-3)"},
    {Reshard::after_backward, "after-backward", "one gather per layer per micro-batch (FSDP `reshard_after_forward=False`)"},
    {Reshard::after_step, "after-step", "one gather per layer per step, kept across the micro-batches"}}};

/// How a framework accumulates weight gradients over the micro-batches of a step when
/// it reduces them once, after the last (ZeRO-0/1, and ZeRO-2/3 with
/// layout.accumulate_unsharded): `fused` — the weight-gradient GEMM adds into the
/// gradient buffer itself (Megatron's gradient-accumulation fusion, TransformerEngine's
/// fused wgrad accumulation), nothing more; `buffer` — each micro-batch's gradient, in the
/// weights' type, is added by a kernel of its own into a buffer in `precision.gradients`
/// (Megatron-LM's DDP of 2021, FSDP2's unsharded accumulation): w + 2g bytes per
/// parameter every micro-batch; `autograd` — PyTorch's autograd adds each new gradient
/// into `.grad` in the weights' type from the second micro-batch on (torch DDP under
/// no_sync, DeepSpeed ZeRO-0/1): 3w bytes per parameter. Memory-bound, after the layer's
/// weight gradients, on the compute stream.
enum class GradAccumulation { fused, buffer, autograd };
inline constexpr NameTable<GradAccumulation, 3> kGradAccumulationNames{{
    {GradAccumulation::fused, "fused", "the weight-gradient GEMM accumulates into the buffer (Megatron since 2022, Megatron-Core)"},
    {GradAccumulation::buffer, "buffer", "a kernel adds each micro-batch's gradient into a buffer of `precision.gradients` (Megatron-LM 2021, FSDP2)"},
    {GradAccumulation::autograd, "autograd", "autograd adds into `.grad` from the second micro-batch on (torch DDP no_sync, DeepSpeed ZeRO-0/1)"}}};

/// Which pipeline sends overlap the compute after them. A blocking send holds the
/// compute stream until its transfer is done (the framework waits on the request and
/// synchronises the device before the next pass); an overlapped one runs beside it.
/// `none`: every schedule blocks (Megatron-LM 2021, DeepSpeed's pipeline engine);
/// `interleaved`: only interleaved-1f1b overlaps (Megatron-Core, whose
/// --overlap-p2p-communication is on by default and refused without interleaving);
/// `all`: every send overlaps (PyTorch's pipelining schedules).
enum class P2pOverlap { none, interleaved, all };
inline constexpr NameTable<P2pOverlap, 3> kP2pOverlapNames{{
    {P2pOverlap::none, "none", "every pipeline send blocks the compute stream until done (Megatron-LM 2021, DeepSpeed)"},
    {P2pOverlap::interleaved, "interleaved", "sends overlap compute under interleaved-1f1b only (Megatron-Core)"},
    {P2pOverlap::all, "all", "every send overlaps compute (PyTorch pipelining)"}}};

/// How ZeRO-1 brings each rank the sum of its shard's gradients [DSBF]: a reduce-scatter
/// (Megatron's distributed optimizer, DeepSpeed's ZeRO-1/2), or an all-reduce of the whole
/// gradient, each rank then updating its own shard (DeepSpeed's BF16_Optimizer under its
/// pipeline engine): twice the bytes.
enum class Zero1GradReduce { reduce_scatter, all_reduce };
inline constexpr NameTable<Zero1GradReduce, 2> kZero1GradReduceNames{{
    {Zero1GradReduce::reduce_scatter, "reduce-scatter", "each rank receives its shard's sum (Megatron's distributed optimizer, DeepSpeed ZeRO-1/2)"},
    {Zero1GradReduce::all_reduce, "all-reduce", "every rank receives the whole sum and updates its shard (DeepSpeed's BF16_Optimizer in its pipeline engine)"}}};

/// How a layer's local experts run their GEMMs: one kernel per expert (TransformerEngine's
/// GroupedLinear, a cuBLAS GEMM per expert over four streams; a loop over experts), or one
/// grouped kernel for all of them (torch._grouped_mm, a CUTLASS grouped GEMM) [GGM].
enum class GroupedGemm { per_expert, single_kernel };
inline constexpr NameTable<GroupedGemm, 2> kGroupedGemmNames{{
    {GroupedGemm::per_expert, "per-expert", "one GEMM kernel per local expert, each with its launch (TransformerEngine's GroupedLinear, Megatron-Core; DeepSpeed's expert loop)"},
    {GroupedGemm::single_kernel, "single-kernel", "one grouped GEMM kernel for all local experts (torch._grouped_mm, torchtitan; a CUTLASS grouped GEMM)"}}};

/// A preset: the framework's choices and its profile. A scenario's `implementation`
/// (ImplementationSpec) holds the same fields, the preset's bundle first, then its keys;
/// the defaults are megatron-core's.
struct ImplementationBundle {
  AttentionKind attention = AttentionKind::flash;
  bool fused_elementwise = true;
  /// The loss as a fused, in-place cross-entropy (Megatron's vocab-parallel one, a compiled
  /// loss); false: eager F.cross_entropy on an fp32 copy of the logits.
  bool fused_loss = true;
  /// RMSNorm / LayerNorm as one fused kernel whatever fused_elementwise says of the other
  /// element-wise ops (torchtitan's fused_rmsnorm beside eager SwiGLU and RoPE); unset:
  /// as fused_elementwise. No preset sets it.
  std::optional<bool> fused_norm;
  /// Overlap switches: TP collectives overlapped with the adjacent GEMMs; gradient
  /// reduction overlapped with the backward (false: after it); ZeRO / FSDP weight
  /// gathers prefetched (false: exposed before the layer).
  bool tp_comm_overlap = false;
  bool dp_overlap = true;
  bool param_gather_overlap = true;
  /// ZeRO-3 weight gathers and gradient reduce-scatters: calls per layer.
  GatherGranularity gather_granularity = GatherGranularity::layer;
  ReduceGranularity reduce_granularity = ReduceGranularity::bucket;
  /// ZeRO-3 keeps parameter tensors of fewer elements than this whole on every rank: never
  /// gathered (their gradients are still reduced). 0: every tensor is sharded.
  double persistence_threshold = 0;
  /// ZeRO-3 under full recompute: a module whose weights, gathered for its recomputed
  /// forward, would wait behind more parameters than this before its backward is
  /// released and gathered again. 0: always kept.
  double max_reuse_distance = 0;
  /// ZeRO-3 sub-module prefetch: a module's weights are fetched ahead, during the module
  /// before it, only while that module's parameters (per TP rank) number fewer than this;
  /// otherwise the module waits for its own gather. 0: every module prefetched [DSPF].
  double max_live_parameters = 0;
  /// ZeRO-3 gathered weights freed after the forward, the backward or the step.
  Reshard reshard = Reshard::after_forward;
  /// Each ZeRO-3 weight gather is PyTorch's list-form all_gather: NCCL fills a flat buffer,
  /// then one copy kernel per rank of the group moves that rank's slice into its own tensor.
  bool gather_list_copies = false;
  /// FSDP2's per-parameter sharding [FSDP2]: each ZeRO-3 gather's flat output is copied out
  /// into the unsharded parameters and each gradient reduce-scatter's flat input copied in
  /// from the unsharded gradients (into the reduce dtype), both on the compute stream's
  /// path. False: the collectives read and write the parameters' and gradients' own flat
  /// storage (FSDP1's FlatParameter, DeepSpeed's and Megatron's buffers).
  bool per_parameter_sharding = false;
  /// Weight gradients summed over a step's micro-batches.
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  /// MoE dispatch's token permutations as fused kernels (TransformerEngine's moe_permute /
  /// moe_unpermute, Megatron-Core's --moe-permute-fusion) rather than as PyTorch ops: an
  /// index_select into expert order, a regrouping by local expert after the all-to-all
  /// (split and cat) and back, the probabilities' product and a scatter_add into zeros,
  /// each with its autograd backward. False in every preset [MCP].
  bool moe_permute_fusion = false;
  /// MoE router as fused kernels (TransformerEngine's fused router, Megatron-Core's
  /// --moe-router-fusion): one kernel each for the top-k with its softmax and masks, the
  /// aux-loss scores and the aux loss, forward and backward, where Megatron-Core's
  /// TopKRouter otherwise runs some twenty PyTorch ops each way. False in every preset [MRF].
  bool moe_router_fusion = false;
  /// Kernels per grouped expert GEMM: one per local expert, or one for all [GGM].
  GroupedGemm grouped_gemm = GroupedGemm::per_expert;
  /// ZeRO-1's gradient reduction: reduce-scatter or all-reduce [DSBF].
  Zero1GradReduce zero1_grad_reduce = Zero1GradReduce::reduce_scatter;
  /// Pipeline sends that overlap compute [P2P].
  P2pOverlap p2p_overlap = P2pOverlap::interleaved;
  /// Without sequence parallelism, each TP rank sends 1/tp of a pipeline boundary
  /// tensor and the receiver all-gathers it over its TP group [P2P].
  bool pp_scatter_gather = false;
  /// Activation offload (layout.offload.activations) as DeepSpeed's cpu_checkpointing
  /// runs it [DSCK]: every layer's stored input goes to host memory as soon as the layer's
  /// forward ends and comes back just before its backward, each copy waited for before the
  /// next op. False: copies beside the compute, two layers ahead, the last two layers of a
  /// chunk kept on the GPU.
  bool blocking_offload_copies = false;
  /// Coefficient of variation of the sustained compute speed of one GPU against another of
  /// the same type in the same job (manufacturing spread and power management): a
  /// synchronous step waits for the slowest of its GPUs (workloads/analysis/scale_noise.hpp).
  double compute_variability = 0;
  /// Host costs per kernel and per layer (an empty name: unset, resolve() takes the preset's).
  ImplementationProfile profile;
};

/// megatron-core, megatron-lm-2021, deepspeed, pytorch-fsdp. nullopt otherwise.
std::optional<ImplementationBundle> implementation_preset(std::string_view name);
std::vector<std::string> implementation_preset_names();
/// The preset scenarios without `implementation:` get.
inline constexpr std::string_view kDefaultImplementation = "megatron-core";

/// One calibratable constant of ImplementationProfile (same shape as ProfileConstant).
struct ImplementationConstant {
  std::string_view name;
  std::string_view unit;
  std::string_view doc;
  double lower = 0;
  double upper = 0;
  double (*get)(const ImplementationProfile&) = nullptr;
  void (*set)(ImplementationProfile&, double) = nullptr;
};
std::span<const ImplementationConstant> implementation_constants();

}  // namespace ls::wl

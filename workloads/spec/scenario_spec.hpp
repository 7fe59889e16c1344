// workloads/spec/scenario_spec.hpp — a scenario as plain data: hardware, model, layout, precision,
// perturbations, simulation settings. Filled by the scenario loader (the only
// yaml-cpp user) or by hand, then completed and validated by wl::resolve
// (resolve.hpp), which derives every field marked "unset" below the same way for
// both. Units: bytes, bytes/s, FLOP/s, sim::Time; counts are integers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/time.hpp"
#include "topology/cluster_spec.hpp"
#include "workloads/spec/compute_profile.hpp"
#include "workloads/spec/implementation_profile.hpp"
#include "workloads/spec/names.hpp"
#include "workloads/spec/training_spec.hpp"

namespace ls::wl {

/// One GPU model. Presets in hardware.hpp cite their datasheets.
/// Unset (no name, no peak_flops): resolve() uses the h100-sxm preset.
struct GpuSpec {
  std::string name;
  double peak_flops = 0;            // dense bf16, FLOP/s
  /// Dense FP8 tensor-core FLOP/s (datasheet, without sparsity); 0: the part has no FP8
  /// tensor cores (A100), and precision.compute fp8 / mxfp8 is an error.
  double fp8_peak_flops = 0;
  /// Block-scaled MX formats (MXFP8: 32-element blocks with an 8-bit scale) run on the
  /// tensor cores natively (Blackwell and later); precision.compute mxfp8 needs it.
  bool mx_formats = false;
  double memory_bytes = 0;          // HBM capacity
  double hbm_bandwidth_Bps = 0;
  double nvlink_bandwidth_Bps = 0;  // per GPU, per direction
  double nic_bandwidth_Bps = 0;     // typical NIC per GPU, per direction
  double matmul_efficiency = 0.75;  // achieved / peak for large matmuls
  /// Board power (W): the datasheet's maximum the peaks are quoted at (0: not known), and
  /// the limit the run sets (nvidia-smi -pl, a site's default cap; 0: the TDP). Under a
  /// lower limit the tensor cores hold a lower clock (hardware.hpp power_clock_fraction).
  double tdp_watts = 0;
  double power_limit_watts = 0;
  /// Arithmetic-intensity floor: a matmul with fewer rows (tokens b·s per device)
  /// than this runs at efficiency · rows / saturation_rows.
  double saturation_rows = 1024;
  sim::Time kernel_overhead = sim::us(5);  // fixed cost per compute op (launches)
  /// Device memory the training process cannot use for tensors: CUDA context, NCCL
  /// buffers, cuBLAS/cuDNN workspaces (headroom.hpp). -1: unset, resolve() takes the
  /// preset's figure (headroom.hpp default_reserved_memory).
  double reserved_memory_bytes = -1;
  /// Kernel-level cost constants (compute_profile.hpp): what prices every compute op.
  /// A preset carries its own; an empty name (a GPU given as a map without a preset)
  /// means "derive one" (hardware.hpp compute_profile_of).
  ComputeProfile compute{};
};

enum class Activation { gelu, swiglu };
inline constexpr NameTable<Activation, 2> kActivationNames{{
    {Activation::gelu, "gelu", "an MLP of two matrices, `ffn_hidden` wide (GPT)"},
    {Activation::swiglu, "swiglu", "a gated MLP of three matrices (Llama)"}}};

/// How a layer's attention projects its keys and values (model.hpp attention_shape).
enum class AttentionArch { mha, gqa, mla };
inline constexpr NameTable<AttentionArch, 3> kAttentionArchNames{{
    {AttentionArch::mha, "mha", "multi-head attention: every head its own K and V (kv_heads = heads)"},
    {AttentionArch::gqa, "gqa", "grouped-query attention: kv_heads K/V heads shared by the query heads"},
    {AttentionArch::mla, "mla",
     "multi-head latent attention (DeepSeek-V2/V3): K and V up-projected per head from a compressed latent, `model.mla`"}}};

/// Multi-head latent attention's shape (DeepSeek-AI 2024, "DeepSeek-V2", §2.1): the
/// hidden state is compressed to a kv_lora_rank latent (plus one rope_head_dim key
/// shared by the heads) and, with q_lora_rank > 0, to a q_lora_rank query latent; per
/// head, queries and keys have nope_head_dim + rope_head_dim features, values v_head_dim.
struct MlaSpec {
  std::int64_t kv_lora_rank = 0;
  std::int64_t q_lora_rank = 0;     // 0: the query is projected from the hidden state directly
  std::int64_t rope_head_dim = 0;
  std::int64_t nope_head_dim = 0;   // 0: unset, resolve() sets v_head_dim
  std::int64_t v_head_dim = 0;
};

enum class RoutingKind { balanced, zipf, load };

struct MoeSpec {
  int experts = 0;                  // 0: dense model
  int top_k = 0;
  std::int64_t expert_ffn_hidden = 0;  // 0: unset, resolve() sets the model's ffn_hidden
  int every_n_layers = 1;           // MoE layer every n layers (1: all)
  int shared_experts = 0;
  double capacity_factor = 0;       // 0: no token dropping
  RoutingKind routing = RoutingKind::balanced;
  double zipf_alpha = 1.0;
  std::uint64_t routing_seed = 1;
  std::vector<double> load;         // per-expert relative load (routing: load)
  /// Node-limited routing (DeepSeek-V3): each token's experts lie on at most this
  /// many of the nodes its expert-parallel group spans, and the dispatch sends a
  /// token once per selected node, relayed inside the node over NVLink. 0: no limit,
  /// every (token, expert) pair sent directly (Megatron-Core's all-to-all dispatcher).
  int max_nodes_per_token = 0;
};

struct ModelSpec {
  std::string name;
  int layers = 0;
  std::int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;                 // GQA; == heads for MHA; 0: unset, resolve() sets heads
  std::int64_t head_dim = 0;        // features per head (mha/gqa); 0: hidden / heads
  std::int64_t ffn_hidden = 0;      // 0: unset, resolve() sets 4·hidden
  std::int64_t vocab = 0;
  std::int64_t seq_len = 0;
  Activation activation = Activation::gelu;
  bool tied_embeddings = false;
  MoeSpec moe;
  /// Dropout probability (attention, residual and embedding dropout alike); 0: no
  /// dropout kernels and no masks kept.
  double dropout = 0;
  /// Biases on every linear layer (and a bias beside each LayerNorm's weight). Unset:
  /// resolve() sets it from the activation, true for gelu (GPT style), false for swiglu.
  std::optional<bool> bias;
  /// GPT-J / PaLM block: attention and MLP read the output of one norm and their
  /// outputs are summed into the residual, so a layer has one norm and, under TP, one
  /// all-reduce per pass instead of two (Wang & Komatsuzaki 2021; Chowdhery et al.
  /// 2022, §2 "Parallel Layers"). Dense models only.
  bool parallel_block = false;
  /// Sliding-window attention: each query attends to the last `sliding_window` keys
  /// (itself included). 0: every earlier key (full causal attention). Without cp.
  std::int64_t sliding_window = 0;
  /// MoE models: the first `dense_layers` layers keep a dense MLP of ffn_hidden
  /// (DeepSeek-V3's first 3); the MoE layers follow moe.every_n_layers after them.
  int dense_layers = 0;
  /// Multi-token prediction (DeepSeek-V3 §2.2): D modules after the main model on the
  /// last pipeline stage, module d predicting the token d+1 ahead. Each joins the
  /// previous hidden state and the embedding of the next input token (an RMSNorm of
  /// each, concatenated, projected 2h → h), runs one transformer block (block index
  /// layers + d, dense or MoE by the model's layer rule) and the shared output head
  /// with its own loss. The embedding and head weights are the main model's. 0: none.
  int mtp_depth = 0;
  /// Unset: resolve() sets gqa when kv_heads < heads, else mha.
  std::optional<AttentionArch> attention;
  MlaSpec mla;                       // attention: mla
};

enum class Schedule { gpipe, one_f_one_b, interleaved_1f1b, zb_h1, zb_2p, zb_v, dualpipe };
enum class Recompute { none, selective, every_second_matmul, full };
enum class StageLayersMode { auto_even, balanced, explicit_list };
/// How context-parallel ranks share keys and values (cp_attention.hpp): `ring` passes
/// K/V chunks peer to peer, overlapped with the attention blocks (Megatron-Core);
/// `all_gather` gathers them before the attention (Llama 3).
enum class CpKind { ring, all_gather };

inline constexpr NameTable<Recompute, 4> kRecomputeNames{{
    {Recompute::none, "none", "every activation the backward needs is kept"},
    {Recompute::selective, "selective",
     "the attention core (scores, softmax, dropout) recomputed in the backward (Korthikanti et al. 2022)"},
    {Recompute::every_second_matmul, "every-second-matmul",
     "per-op: the layer keeps its input, the attention's output and the output of every odd-numbered matmul in the "
     "order a PyTorch block calls them (q, v, the gate and down projections of a Llama block), and reruns the "
     "even-numbered ones (k, out, up) and every other op (torchtitan's `op` selective checkpointing)"},
    {Recompute::full, "full", "each layer keeps only its input and runs its forward again in the backward"}}};
inline constexpr NameTable<CpKind, 2> kCpKindNames{{
    {CpKind::ring, "ring", "K/V chunks passed peer to peer, overlapped with the attention (Megatron-Core)"},
    {CpKind::all_gather, "all-gather", "K/V gathered before the attention, dK/dV reduce-scattered after it (Llama 3)"}}};
/// The scalar spellings of layout.stage_layers (a list is the third mode).
inline constexpr NameTable<StageLayersMode, 2> kStageLayersNames{{
    {StageLayersMode::auto_even, "auto", "an even split"}, {StageLayersMode::balanced, "balanced", "split by compute time"}}};

struct RecomputeLayers {
  int every = 1;           // 1: every layer
  std::vector<int> list;   // non-empty: exactly these layers (0-based), `every` unused
  bool operator==(const RecomputeLayers&) const = default;
};

struct LayoutSpec {
  int dp = 0;                             // 0: unset, resolve() sets devices / (tp·cp·pp) (1 if that does not divide)
  int tp = 1, pp = 1, ep = 1;
  /// The expert layers' tensor parallelism (layout.expert_tp); 0: unset, the same as tp.
  int expert_tp = 0;
  int cp = 1;                             // context parallelism: each sequence split over cp ranks
  CpKind cp_kind = CpKind::ring;
  int zero = 0;                           // 0..3
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  /// The layers `recompute` applies to (layout.recompute.layers); the others keep every
  /// activation. every = k: the model's k-th, 2k-th, ... layer (1-based, torchtitan's
  /// layer-level selective checkpointing); a non-empty list: those 0-based layers.
  RecomputeLayers recompute_layers;
  int microbatch_size = 1;                // sequences per micro-batch (b)
  int microbatches = 1;                   // per step per pipeline (m)
  /// 0: unset. Else sequences per step, and resolve() sets microbatches =
  /// global_batch / (microbatch_size·dp) (it must divide).
  std::int64_t global_batch = 0;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;                 // v (interleaved-1f1b)
  StageLayersMode stage_layers_mode = StageLayersMode::auto_even;
  std::vector<int> stage_layers;          // explicit: per stage (pp entries)
  /// Fastest-varying first; "cp" may be left out and then sits right after "tp"
  /// (so [tp, dp, pp] is [tp, cp, dp, pp]).
  std::vector<std::string> placement{"tp", "dp", "pp"};
  double dp_bucket_bytes = 25e6 * 4;      // gradient bucket (Megatron default 40M params… here bytes)
  bool embedding_free = false;            // tests: make embedding and LM head cost nothing
  /// ZeRO-2/3 with m > 1 micro-batches: keep a full unsharded gradient buffer and reduce
  /// once per step (PyTorch FSDP no_sync) instead of reduce-scattering every micro-batch.
  bool accumulate_unsharded = false;
  /// HSDP: ZeRO shards over groups of this many dp ranks and replicates across the
  /// dp / shard_group groups (PyTorch HYBRID_SHARD). 0: unset, resolve() sets dp.
  int shard_group = 0;
  /// The axes ZeRO shards over: dp and cp (Megatron-Core's data-parallel-with-context-
  /// parallel group, torchtitan's FSDP mesh), or dp alone, each cp rank then holding
  /// a replica of the dp shards (gradients all-reduced across the cp replicas).
  bool shard_over_cp = true;
  /// What moves to host memory over the GPU's PCIe link (offload.hpp).
  struct Offload {
    bool activations = false;
    bool optimizer = false;
    bool operator==(const Offload&) const = default;
  } offload;
  bool operator==(const LayoutSpec&) const = default;
};

/// The number format of the linear layers' GEMMs (TransformerEngine recipes): bf16 / fp16
/// at the dense bf16 peak; fp8 with one scale per tensor (E4M3 forward, E5M2 gradients,
/// delayed or current scaling); mxfp8 with one 8-bit scale per 32-element block
/// (Blackwell). Attention, the LM head and the router stay in bf16 (kernels.hpp).
enum class ComputePrecision { bf16, fp16, fp8, mxfp8, fp8_blockwise };

/// Bytes per parameter for each state term. 18 B/param: {2, 4, 4, 8}; 16 B/param: {2, 2, 4, 8}.
struct PrecisionSpec {
  int weights = 2;      // bf16
  int gradients = 4;    // fp32
  int master = -1;      // -1: unset, resolve() sets 4 (fp32 master copy), or 0 when weights are fp32
  int optimizer = 8;    // Adam: two fp32 moments
  int activations = 2;  // bf16 activations (Korthikanti's 16-bit formulas)
  /// Bytes per element the data-parallel gradient reduction moves, where the framework
  /// casts the gradient buffer for it (DeepSpeed's communication_data_type); 0: gradients'.
  int grad_reduce = 0;
  ComputePrecision compute = ComputePrecision::bf16;
};

/// How the framework runs the layer (layer_kernels.hpp, implementation_profile.hpp):
/// which attention kernel, whether norms, bias + activation, bias + dropout + add,
/// softmax, RoPE and the loss are fused kernels (Apex / TransformerEngine) or one eager
/// kernel per tensor op, and the framework's per-kernel host cost. The loader applies
/// `preset`'s bundle first, then the explicit keys; the defaults are megatron-core's.
struct ImplementationSpec : ImplementationBundle {
  // The choices are the bundle's fields, so a preset applies by one assignment and a new
  // choice is declared once. Unset here, resolve() takes the preset's spread
  // (scale_noise.hpp) and profile (an empty name).
  ImplementationSpec() { compute_variability = -1; }
  std::string preset{kDefaultImplementation};
  double gather_bucket_bytes = 50e6;  // bytes per call under GatherGranularity::bucket
};

struct DeviceSlowdown {
  std::string device;
  double compute_slowdown = 1.0;
  /// A slowdown that grows as the device heats and throttles: step k (from 0) runs at
  /// compute_slowdown · (1 + drift_per_step)^k. 0: constant.
  double drift_per_step = 0;
};
struct LinkFactor { std::string link; double bandwidth_factor = 1.0; };
struct JitterSpec { double compute_cv = 0; double comm_cv = 0; std::uint64_t seed = 0; };

struct PerturbationSpec {
  std::vector<DeviceSlowdown> devices;
  std::vector<LinkFactor> links;
  JitterSpec jitter;
};

/// Allocator fragmentation: the fraction of HBM the caching allocator cannot hand out
/// as tensors (headroom.hpp).
struct MemorySpec {
  double fragmentation = 0.05;
};

struct SimulationSpec {
  int steps = 1;
  /// Simulate one dp replica per class of alike ones (workloads/build/symmetry.hpp);
  /// false: every rank, always.
  bool symmetry = true;
  /// The most simulated ops whose traces the critical path keeps (24 bytes each: 25 M
  /// is 0.6 GB); past it the critical path is left out, with a warning. No other number
  /// depends on it.
  std::int64_t critical_path_ops = 25'000'000;
};

/// topo::ClusterSpec's defaults with both link bandwidths unset (0): resolve() sets
/// them from the GPU (nvlink_bandwidth per GPU inside a node, nic_bandwidth per NIC).
inline topo::ClusterSpec cluster_with_unset_link_rates() {
  topo::ClusterSpec c;
  c.intra.bandwidth_Bps = 0;
  c.inter.bandwidth_Bps = 0;
  return c;
}

struct Scenario {
  std::string name;       // empty: unset, resolve() derives it from source
  std::string source;     // file name (for messages), "<default>" for the built-in one
  topo::ClusterSpec cluster = cluster_with_unset_link_rates();
  GpuSpec gpu;
  ModelSpec model;
  LayoutSpec layout;
  PrecisionSpec precision;
  PerturbationSpec perturbations;
  SimulationSpec simulation;
  ImplementationSpec implementation;
  TrainingSpec training;      // what is trained (training_method.hpp)
  CheckpointSpec checkpoint;  // checkpoint cost (checkpoint.hpp)
  FailuresSpec failures;
  MemorySpec memory;
};

}  // namespace ls::wl

// workloads/scenario_keys.cpp — the key table, and the README tables printed from it.
#include "workloads/scenario_keys.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace ls::wl {

const std::vector<ScenarioKey>& scenario_keys() {
  // Sibling order is the order of the loader's "valid keys here" lists.
  static const std::vector<ScenarioKey> keys{
      {"name", "string", {}, "the file name without directory and extension (`default` for the built-in scenario)", ""},
      {"cluster", "map", {}, "", ""},
      {"model", "map", {}, "", "(*required*; `model: PRESET` is short for `model: {preset: PRESET}`)"},
      {"layout", "map", {}, "", ""},
      {"precision", "map", {}, "", "(bytes per parameter / per activation element)"},
      {"perturbations", "map", {}, "", ""},
      {"simulation", "map", {}, "", ""},
      {"implementation", "map", {}, "", "the software stack (workloads/implementation_profile.hpp)"},
      {"memory", "map", {}, "", "what of the GPU's memory tensors can use (workloads/headroom.hpp)"},

      {"cluster.gpu", "preset name or map", {}, "`h100-sxm`",
       "(presets: `a100-40gb`, `a100-80gb`, `h100-sxm`, `h200`, `b200`); a map is merged over its `preset`"},
      {"cluster.nodes", "int", {}, "1", "(nodes × gpus_per_node ≤ 131072)"},
      {"cluster.gpus_per_node", "int", {}, "8", ""},
      {"cluster.intra_node", "map", {}, "", "the links inside a node, per GPU per direction"},
      {"cluster.inter_node", "map", {}, "", "the network between nodes, per NIC per direction"},
      {"cluster.graph", "map", {}, "",
       "an explicit topology *instead of* `nodes`, `gpus_per_node`, `intra_node`, `inter_node` (both is an error); "
       "`nodes` / `gpus_per_node` become max N+1 / max G+1 of its GPU names"},
      {"cluster.network", "", {"real", "ideal"}, "`real`", "(what-if `ideal`: communication costs nothing)"},

      {"cluster.gpu.preset", "preset name", {}, "", "to start from"},
      {"cluster.gpu.name", "string", {}, "the preset's name, else `custom`", ""},
      {"cluster.gpu.peak_tflops", "number", {}, "preset; *required* without one",
       "dense bf16 TFLOP/s (or a string with a unit, `\"312 TFLOP/s\"`)"},
      {"cluster.gpu.memory", "size", {}, "preset; *required* without one", "(HBM capacity)"},
      {"cluster.gpu.hbm_bandwidth", "bandwidth", {}, "preset; *required* without one", ""},
      {"cluster.gpu.matmul_efficiency", "number", {}, "0.75", "in (0, 1]"},
      {"cluster.gpu.nvlink_bandwidth", "bandwidth", {}, "preset (*required* without one unless `intra_node.bandwidth` is given)",
       "per GPU per direction"},
      {"cluster.gpu.nic_bandwidth", "bandwidth", {}, "preset (*required* without one unless `inter_node.bandwidth` is given)",
       "per GPU per direction"},
      {"cluster.gpu.saturation_rows", "number", {}, "1024", "> 0: matmul rows at full efficiency"},
      {"cluster.gpu.kernel_overhead", "time", {}, "5 us", "per compute op"},
      {"cluster.gpu.reserved_memory", "size", {}, "2 GB",
       "held outside tensors: CUDA context, NCCL buffers, cuBLAS/cuDNN workspaces; in [0, memory / 4]; "
       "usable = memory − reserved_memory − fragmentation · memory"},
      {"cluster.gpu.profile", "file", {}, "none",
       "a `layoutsim calibrate --out` profile applied over the preset's constants (its `gpu` must match; "
       "relative to the scenario file)"},

      {"cluster.intra_node.kind", "", {"nvswitch", "nvlink", "pcie"}, "`nvswitch`", ""},
      {"cluster.intra_node.bandwidth", "bandwidth", {}, "the GPU's `nvlink_bandwidth`", "per GPU per direction"},
      {"cluster.intra_node.latency", "time", {}, "1 us", ""},

      {"cluster.inter_node.kind", "", {"infiniband", "ethernet"}, "`infiniband`", ""},
      {"cluster.inter_node.bandwidth", "bandwidth", {}, "the GPU's `nic_bandwidth`", "per NIC per direction"},
      {"cluster.inter_node.latency", "time", {}, "3 us", ""},
      {"cluster.inter_node.nics_per_node", "int", {}, "0", "0 = one NIC per GPU (rails); at most gpus_per_node"},
      {"cluster.inter_node.fabric", "", {"rail-optimized", "fat-tree"}, "`rail-optimized`", ""},
      {"cluster.inter_node.oversubscription", "number", {}, "1", "> 0 (leaf downlink : uplink capacity)"},
      {"cluster.inter_node.nodes_per_leaf", "int", {}, "16", ""},
      {"cluster.inter_node.spines", "int", {}, "0", "0 = derived from the uplinks needed; the fabric may have at most 4,194,304 links"},
      {"cluster.inter_node.pcie_bandwidth", "bandwidth", {}, "64 GB/s (PCIe Gen5 x16)", "GPU ↔ NIC"},

      {"cluster.graph.vertices", "list of maps", {}, "", "*required*; GPU names unique, ≥ 1 GPU"},
      {"cluster.graph.links", "list of maps", {}, "", ""},
      {"cluster.graph.vertices[].name", "string", {}, "", "*required*; GPUs are named `node<N>.gpu<G>`"},
      {"cluster.graph.vertices[].kind", "", {"gpu", "nvswitch", "pcie-switch", "nic", "switch"}, "", "*required*"},
      {"cluster.graph.links[].from", "vertex name", {}, "", "*required*"},
      {"cluster.graph.links[].to", "vertex name", {}, "", "*required*"},
      {"cluster.graph.links[].kind", "", {"nvlink", "pcie", "infiniband", "ethernet"}, "", "*required*"},
      {"cluster.graph.links[].bandwidth", "bandwidth", {}, "", "*required*"},
      {"cluster.graph.links[].latency", "time", {}, "1 us for `nvlink` and `pcie`, else 3 us", ""},
      {"cluster.graph.links[].duplex", "bool", {}, "true", ""},

      {"model.preset", "preset name", {}, "", "(`gpt3-175b`, `llama3-8b`, `llama3-70b`, `llama3-405b`, `seed-70b`, ...)"},
      {"model.name", "string", {}, "the preset's name, else `custom`", ""},
      {"model.layers", "int", {}, "preset; *required* without one", ""},
      {"model.hidden", "int", {}, "preset; *required* without one", ""},
      {"model.heads", "int", {}, "preset; *required* without one", ""},
      {"model.kv_heads", "int", {}, "`heads` (MHA; an MHA preset stays MHA when only `heads` is given)", "(GQA)"},
      {"model.ffn_hidden", "int", {}, "preset, else 4·hidden", ""},
      {"model.vocab", "int", {}, "preset; *required* without one", ""},
      {"model.seq_len", "int", {}, "preset; *required* without one", ""},
      {"model.activation", "", {"gelu", "swiglu"}, "preset, else `gelu`", ""},
      {"model.tied_embeddings", "bool", {}, "preset, else false", ""},
      {"model.dropout", "number", {}, "0", "in [0, 1): attention, residual and embedding dropout (0: no dropout kernels or masks)"},
      {"model.moe", "map", {}, "absent: dense model", "merged over a MoE preset's"},

      {"model.moe.experts", "int", {}, "", "*required* in `moe`"},
      {"model.moe.top_k", "int", {}, "", "*required* in `moe`; ≤ experts"},
      {"model.moe.expert_ffn_hidden", "int", {}, "`ffn_hidden`", ""},
      {"model.moe.every_n_layers", "int", {}, "1 (every layer is MoE)", ""},
      {"model.moe.shared_experts", "int", {}, "0", ""},
      {"model.moe.capacity_factor", "number", {}, "0", "≥ 0; 0 = no token dropping"},
      {"model.moe.routing", "", {"balanced"}, "`balanced`", "or a map: `{skew: zipf, alpha, seed}` or `{load: [...]}`"},

      {"model.moe.routing.skew", "", {"zipf"}, "", "*required* without `load`"},
      {"model.moe.routing.alpha", "number", {}, "1", "> 0 (Zipf exponent)"},
      {"model.moe.routing.seed", "int", {}, "1", "≥ 0"},
      {"model.moe.routing.load", "list of numbers", {}, "",
       "≥ 0, one per expert, not all 0: relative loads (instead of `skew`)"},

      {"layout.dp", "int or `auto`", {}, "`auto`: devices / (tp·pp) when that divides, else 1", ""},
      {"layout.tp", "int", {}, "1", ""},
      {"layout.pp", "int", {}, "1", ""},
      {"layout.ep", "int", {}, "1", ""},
      {"layout.zero", "int", {}, "0", "0..3"},
      {"layout.sequence_parallel", "bool", {}, "false", ""},
      {"layout.recompute", "", {"none", "selective", "full"}, "`none`", ""},
      {"layout.microbatch_size", "int", {}, "1", "sequences per micro-batch"},
      {"layout.microbatches", "int", {}, "1", "per step per pipeline; devices × microbatches × (layers per stage + 1) ≤ 16,777,216 (bounded memory and time)"},
      {"layout.global_batch", "int", {}, "",
       "instead of `microbatches`: a multiple of microbatch_size·dp; microbatches = global_batch / (microbatch_size·dp). "
       "Both in one file is an error; a `--set` of one replaces the other"},
      {"layout.schedule", "", {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"}, "`1f1b`", ""},
      {"layout.virtual_stages", "int", {}, "1", "(interleaved-1f1b)"},
      {"layout.stage_layers", "", {"auto", "balanced"}, "`auto`",
       "or `[INT, ...]` one per stage; `auto`: even split, `balanced`: by compute time"},
      {"layout.placement", "list", {"tp", "dp", "pp"}, "`[tp, dp, pp]`", "a permutation, fastest-varying first"},
      {"layout.dp_bucket", "size", {}, "100 MB", "gradient all-reduce bucket"},
      {"layout.embedding_free", "bool", {}, "false", "(what-if/tests: embedding and LM head cost nothing)"},
      {"layout.accumulate_unsharded", "bool", {}, "false",
       "ZeRO-2/3: keep a full gradient buffer and reduce once per step (FSDP `no_sync`; gradient memory as ZeRO-1) "
       "instead of reduce-scattering after every micro-batch"},
      {"layout.shard_group", "int", {}, "dp",
       "HSDP (PyTorch HYBRID_SHARD): ZeRO shards within groups of this many dp ranks and replicates across them; "
       "must divide dp, needs zero ≥ 1"},
      {"layout.offload", "map", {}, "", "state moved to host memory over the GPU's PCIe link (workloads/offload.hpp)"},
      {"layout.offload.activations", "bool", {}, "false",
       "stored activations copied to the host during the forward, prefetched back in the backward"},
      {"layout.offload.optimizer", "bool", {}, "false",
       "master weights and moments live on the host; the step runs on the CPU (gradients down, weights up)"},

      {"precision.weights", "", {"fp8", "bf16", "fp16", "fp32"}, "`bf16` (2 B)", ""},
      {"precision.gradients", "", {"bf16", "fp16", "fp32"}, "`fp32` (4 B)", ""},
      {"precision.master", "", {"fp32", "none"}, "`fp32` (4 B); `none` when weights are fp32", ""},
      {"precision.optimizer", "", {"adam-fp32", "adam-bf16", "adamw-fp32", "adamw-bf16", "sgd", "sgd-momentum"}, "`adam-fp32`",
       "(8, 4, 8, 4, 0, 4 B per parameter)"},
      {"precision.activations", "", {"fp8", "bf16", "fp16", "fp32"}, "`bf16` (2 B)", ""},

      {"perturbations.devices", "list of maps", {}, "none", ""},
      {"perturbations.links", "list of maps", {}, "none", ""},
      {"perturbations.jitter", "map", {}, "no jitter", ""},
      {"perturbations.devices[].device", "`node<N>.gpu<G>`", {}, "", "*required*; must exist, each at most once"},
      {"perturbations.devices[].compute_slowdown", "number", {}, "1", "> 0"},
      {"perturbations.links[].link", "link name", {}, "",
       "*required*; a directed link of the cluster (`node3.nic5->leaf5`, `leaf0->spine1`) or `a<->b` for both "
       "directions; checked against the built topology, with did-you-mean"},
      {"perturbations.links[].bandwidth_factor", "number", {}, "1",
       "in [0, 1000]; `0` means the link is **down**: routes avoid it (ECMP over the other spines; a dead rail relays "
       "through a peer GPU's NIC over NVLink, like NCCL's PXN), and one that would disconnect two GPUs is an error"},
      {"perturbations.jitter.compute_cv", "number", {}, "0", "≥ 0"},
      {"perturbations.jitter.comm_cv", "number", {}, "0", "≥ 0"},
      {"perturbations.jitter.seed", "int", {}, "0", "≥ 0"},

      {"simulation.steps", "int", {}, "1", "1..10000"},

      {"implementation.preset", "", {"megatron-core", "megatron-lm-2021", "deepspeed", "pytorch-fsdp"}, "`megatron-core`",
       "a bundle of attention kernel, fusion and per-kernel host cost; the keys below override its choices"},
      {"implementation.attention", "", {"flash", "triton", "unfused"}, "the preset's (`flash`)",
       "FlashAttention-2/3 or cuDNN, LLM Foundry's Triton flash attention, or QKᵀ/softmax/·V through HBM"},
      {"implementation.fused_elementwise", "bool", {}, "the preset's (`true`)",
       "fused norms, bias+activation, bias+dropout+add, softmax, RoPE, loss; false: one eager kernel per op"},

      {"memory.fragmentation", "number", {}, "0.05",
       "in [0, 0.5]: share of HBM the caching allocator cannot hand out as tensors; a layout above 95 % of the usable "
       "memory gets a `memory-tight` warning"},
  };
  return keys;
}

namespace {

/// "a.b" → "a"; "a" → ""; "x.links[].to" → "x.links[]".
std::string_view parent_of(std::string_view path) {
  const auto dot = path.find_last_of('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

std::string_view leaf_of(std::string_view path) {
  const auto dot = path.find_last_of('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

std::string type_column(const ScenarioKey& k) {
  std::string out;
  for (const auto v : k.values) out += fmt::format("{}`{}`", out.empty() ? "" : " \\| ", v);
  if (out.empty()) out = std::string(k.type);
  else if (!k.type.empty()) out = fmt::format("{} of {}", k.type, out);
  if (!k.doc.empty()) out += out.empty() ? std::string(k.doc) : fmt::format("{}{}", k.doc.front() == '(' ? " " : ", ", k.doc);
  return out;
}

/// The rows of `parent`'s subtree, depth first (each key followed by its own keys).
void subtree_rows(std::string_view parent, std::string& out) {
  for (const auto& k : scenario_keys()) {
    if (parent_of(k.path) != parent) continue;
    out += fmt::format("| `{}` | {} | {} |\n", k.path, type_column(k), k.default_text.empty() ? "—" : k.default_text);
    subtree_rows(k.path, out);
    // The entries of a list of maps are keyed "path[]".
    subtree_rows(std::string(k.path) + "[]", out);
  }
}

}  // namespace

std::vector<std::string> scenario_key_names(std::string_view parent) {
  std::vector<std::string> out;
  for (const auto& k : scenario_keys())
    if (parent_of(k.path) == parent) out.emplace_back(leaf_of(k.path));
  return out;
}

std::vector<std::string> scenario_key_values(std::string_view path) {
  for (const auto& k : scenario_keys())
    if (k.path == path && !k.values.empty()) return {k.values.begin(), k.values.end()};
  throw std::logic_error(fmt::format("scenario key table: no choice '{}'", path));
}

std::string scenario_keys_markdown() {
  std::string out;
  for (const auto& top : scenario_keys()) {
    if (!parent_of(top.path).empty()) continue;
    // Each top-level key is a section; a map's rows are its keys, a scalar's is itself.
    const bool map = top.type == "map";
    out += fmt::format("{}### `{}`{}\n\n| key | type / values | default |\n|---|---|---|\n", out.empty() ? "" : "\n", top.path,
                       map && !top.doc.empty() ? fmt::format(" {}", top.doc) : "");
    if (map) subtree_rows(top.path, out);
    else out += fmt::format("| `{}` | {} | {} |\n", top.path, type_column(top), top.default_text.empty() ? "—" : top.default_text);
  }
  return out;
}

}  // namespace ls::wl

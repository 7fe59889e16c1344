// tools/scenario/scenario_keys.cpp — the key table, and the README tables printed from it.
#include "tools/scenario/scenario_keys.hpp"

#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "tools/scenario/scenario_reader.hpp"
#include "topology/cluster.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::tools {
namespace {

// Row makers for bound keys. `field` is a generic lambda `[](auto& s) -> auto& {
// return s.layout.tp; }`, so one accessor serves the reader (writes) and show (reads).

ScenarioKey bound_row(ScenarioKey row, std::string default_value,
                 std::function<void(Reader&, const YNode&, const std::string&, wl::Scenario&)> read,
                 std::function<std::string(const wl::Scenario&)> show) {
  if (row.default_text.empty()) row.default_text = default_value;
  row.binding = std::make_shared<const KeyBinding>(KeyBinding{std::move(read), std::move(show), std::move(default_value)});
  return row;
}

/// An integer in [lo, hi]; the type column states the bounds.
/// No `def`: derived (from a preset, or by resolve()), and `default_text` says how.
template <typename Field>
ScenarioKey int_key(std::string_view path, Field field, std::int64_t lo, std::int64_t hi, std::optional<std::int64_t> def,
                    std::string_view doc, std::string default_text = "") {
  return bound_row(ScenarioKey{path, fmt::format("int in [{}, {}]", lo, hi), {}, std::move(default_text), doc},
              def ? fmt::format("{}", *def) : std::string(),
              [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) {
                if (auto c = r.integer(v, p, lo, hi)) field(s) = static_cast<std::remove_reference_t<decltype(field(s))>>(*c);
              },
              [=](const wl::Scenario& s) { return fmt::format("{}", field(s)); });
}

/// A plain number in [lo, hi] (lo excluded when lo_open).
template <typename Field>
ScenarioKey number_key(std::string_view path, Field field, double lo, double hi, bool lo_open, std::string def,
                       std::string_view doc, std::string default_text = "") {
  return bound_row(ScenarioKey{path, fmt::format("number in {}{}, {}]", lo_open ? "(" : "[", lo, hi), {}, std::move(default_text), doc}, def,
              [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) {
                assign(field(s), r.number(v, p, lo, hi, lo_open));
              },
              [=](const wl::Scenario& s) { return fmt::format("{}", field(s)); });
}

/// A number in [lo, hi] read in `unit`s (TFLOP/s) into a field in base units.
template <typename Field>
ScenarioKey scaled_number_key(std::string_view path, Field field, double unit, double lo, double hi, std::string def,
                              std::string_view doc, std::string default_text = "") {
  return bound_row(ScenarioKey{path, fmt::format("number in [{}, {}]", lo, hi), {}, std::move(default_text), doc}, def,
                   [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) {
                     if (auto x = r.number(v, p, lo, hi, false)) field(s) = *x * unit;
                   },
                   [=](const wl::Scenario& s) { return fmt::format("{}", field(s) / unit); });
}

template <typename Field>
ScenarioKey string_key(std::string_view path, Field field, std::string_view doc, std::string default_text) {
  return bound_row(ScenarioKey{path, "string", {}, std::move(default_text), doc}, "",
                   [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) { assign(field(s), r.string(v, p)); },
                   [=](const wl::Scenario& s) { return std::string(field(s)); });
}

template <typename Field>
ScenarioKey bool_key(std::string_view path, Field field, std::optional<bool> def, std::string_view doc,
                     std::string default_text = "") {
  return bound_row(ScenarioKey{path, "bool", {}, std::move(default_text), doc}, !def ? "" : *def ? "true" : "false",
              [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) { assign(field(s), r.boolean(v, p)); },
              [=](const wl::Scenario& s) { return std::string(field(s) ? "true" : "false"); });
}

/// A bool whose absence means something else than either value (the field is a
/// std::optional<bool>, which resolve() or the cost model fills): no default to write.
template <typename Field>
ScenarioKey optional_bool_key(std::string_view path, Field field, std::string default_text, std::string_view doc) {
  return bound_row(ScenarioKey{path, "bool", {}, std::move(default_text), doc}, "",
                   [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) {
                     if (auto b = r.boolean(v, p)) field(s) = *b;
                   },
                   [=](const wl::Scenario& s) {
                     const std::optional<bool>& b = field(s);
                     return std::string(!b ? "" : *b ? "true" : "false");
                   });
}

/// A size in bytes ("100 MB"), greater than zero.
template <typename Field>
ScenarioKey bytes_key(std::string_view path, Field field, std::string def, std::string_view doc, std::string default_text = "") {
  return bound_row(ScenarioKey{path, "size", {}, std::move(default_text), doc}, def,
              [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) { assign(field(s), r.bytes(v, p)); },
              [=](const wl::Scenario& s) { return fmt::format("{}", field(s)); });
}

/// A rate in bytes/s ("400 Gb/s"), greater than zero; an empty `def` is derived by resolve().
template <typename Field>
ScenarioKey bandwidth_key(std::string_view path, Field field, std::string def, std::string_view doc,
                          std::string default_text = "") {
  return bound_row(ScenarioKey{path, "bandwidth", {}, std::move(default_text), doc}, def,
                   [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) { assign(field(s), r.bandwidth(v, p)); },
                   [=](const wl::Scenario& s) { return fmt::format("{}", field(s)); });
}

/// A duration ("3 us").
template <typename Field>
ScenarioKey time_key(std::string_view path, Field field, std::string def, std::string_view doc, std::string default_text = "") {
  return bound_row(ScenarioKey{path, "time", {}, std::move(default_text), doc}, def,
                   [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) { assign(field(s), r.time(v, p)); },
                   [=](const wl::Scenario& s) { return fmt::format("{} ps", field(s).ps()); });
}

/// One of `values`, kept as its spelling (a string field); an empty `def` is derived.
template <typename Field>
ScenarioKey string_choice_key(std::string_view path, Field field, std::vector<std::string_view> values, std::string def,
                              std::string_view doc, std::string default_text = "") {
  if (default_text.empty() && !def.empty()) default_text = fmt::format("`{}`", def);
  const std::vector<std::string> allowed(values.begin(), values.end());
  return bound_row(ScenarioKey{path, "", std::move(values), std::move(default_text), doc}, def,
                   [=](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) { assign(field(s), r.choice(v, p, allowed)); },
                   [=](const wl::Scenario& s) { return std::string(field(s)); });
}

/// One of an enum's spellings (its wl::NameTable); the default is shown in backticks.
template <typename Field, typename E, std::size_t N>
ScenarioKey choice_key(std::string_view path, Field field, const wl::NameTable<E, N>& names, std::optional<std::type_identity_t<E>> def,
                       std::string_view doc, std::string default_text = "") {
  std::vector<std::string_view> values, value_docs;
  for (const auto& entry : names) {
    values.push_back(entry.name);
    value_docs.push_back(entry.doc);
  }
  const std::string def_name = def ? std::string(wl::name_of(names, *def)) : std::string();
  const std::vector<std::string> allowed(values.begin(), values.end());
  if (default_text.empty() && def) default_text = fmt::format("`{}`", def_name);
  ScenarioKey row{path, "", std::move(values), std::move(default_text), doc};
  row.value_docs = std::move(value_docs);
  return bound_row(std::move(row), def_name,
              [=, &names](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) {
                if (auto c = r.choice(v, p, allowed))
                  if (auto e = wl::from_name(names, *c)) field(s) = *e;
              },
              [=, &names](const wl::Scenario& s) { return std::string(wl::name_of(names, field(s))); });
}

/// simulation.symmetry and cluster.network spell a bool.
constexpr wl::NameTable<bool, 2> kSymmetryNames{{
    {true, "auto",
     "data-parallel replicas grouped in classes of provably alike ones (alike links, compute factors and expert load; "
     "no jitter or drifting slowdown) and one replica per class simulated, the others' traffic accounted; the numbers "
     "equal `off`'s"},
    {false, "off", "every rank simulated"}}};
constexpr wl::NameTable<bool, 2> kCheckpointFormatNames{{{false, "sharded", "one file per rank"},
                                                        {true, "consolidated", "one file, written by one rank"}}};
constexpr wl::NameTable<bool, 2> kNetworkNames{{{false, "real", "the cluster's links"},
                                               {true, "ideal", "communication costs nothing (a what-if)"}}};

/// layout.stage_layers: a scalar spelling (its NameTable) or a list, read by hand.
ScenarioKey stage_layers_row() {
  ScenarioKey row{"layout.stage_layers", "", {}, "`auto`", "layers per pipeline stage: `[INT, ...]`, one per stage (per model chunk with virtual stages; the first and the last may be 0: the embedding alone, the LM head and loss alone), or a rule"};
  for (const auto& entry : wl::kStageLayersNames) {
    row.values.push_back(entry.name);
    row.value_docs.push_back(entry.doc);
  }
  return row;
}

/// layout.recompute: one of kRecomputeNames (short for `{ops: WORD}`) or a map, read by hand.
ScenarioKey recompute_row() {
  ScenarioKey row{"layout.recompute", "", {}, "`none`",
                  "what each layer recomputes in the backward: a word, short for `{ops: WORD}`, or a map of `ops` and `layers`"};
  for (const auto& entry : wl::kRecomputeNames) {
    row.values.push_back(entry.name);
    row.value_docs.push_back(entry.doc);
  }
  return row;
}

ScenarioKey recompute_ops_row() {
  ScenarioKey row = recompute_row();
  row.path = "layout.recompute.ops";
  row.doc = "what a recomputing layer reruns (the same words)";
  return row;
}

}  // namespace

// The field of a bound row, as a generic accessor (see the row makers above).
#define LS_FIELD(member) [](auto& s) -> auto& { return s.member; }

const std::vector<ScenarioKey>& scenario_keys() {
  // Sibling order is the order of the loader's "valid keys here" lists.
  static const std::vector<ScenarioKey> keys{
      {"name", "string", {}, "the file name without directory and extension (`default` for the built-in scenario)", ""},
      {"cluster", "map", {}, "", ""},
      {"model", "preset name or map", {}, "", "(*required*; `model: PRESET` is short for `model: {preset: PRESET}`)"},
      {"layout", "map", {}, "", ""},
      {"precision", "map", {}, "", "(bytes per parameter / per activation element)"},
      {"perturbations", "map", {}, "", ""},
      {"simulation", "map", {}, "", ""},
      {"implementation", "map", {}, "", "the software stack (workloads/spec/implementation_profile.hpp)"},
      {"training", "map", {}, "", "what is trained (workloads/cost/training_method.hpp) and the whole run's token budget and price (workloads/model/training_cost.hpp)"},
      {"checkpoint", "map", {}, "", "checkpoint cost (workloads/build/checkpoint.hpp); absent: not priced"},
      {"failures", "map", {}, "", "failure model for goodput (needs `checkpoint`)"},
      {"memory", "map", {}, "", "what of the GPU's memory tensors can use (workloads/model/headroom.hpp)"},

      {"cluster.gpu", "preset name or map", {}, "`h100-sxm`",
       "(presets: `a100-40gb`, `a100-80gb`, `h100-sxm`, `h200`, `h800`, `b200`, `b300`, `gb200`, `gb300`); a map is merged over its `preset`"},
      int_key("cluster.nodes", LS_FIELD(cluster.nodes), 1, kMaxDevices, 1, "(nodes × gpus_per_node within the same bound)"),
      int_key("cluster.gpus_per_node", LS_FIELD(cluster.gpus_per_node), 1, 1024, 8, ""),
      {"cluster.nvlink_domain", "int", {}, "`gpus_per_node`",
       "GPUs on one NVLink switch fabric, a multiple of gpus_per_node: consecutive nodes form a domain whose GPUs talk "
       "over NVLink, never the network (GB200/GB300 NVL72: `gpus_per_node: 4, nvlink_domain: 72`); the last domain may be "
       "partial; not with `graph`"},
      {"cluster.intra_node", "map", {}, "", "the links inside a node, per GPU per direction"},
      {"cluster.inter_node", "map", {}, "", "the network between nodes, per NIC per direction"},
      {"cluster.graph", "map", {}, "",
       "an explicit topology *instead of* `nodes`, `gpus_per_node`, `intra_node`, `inter_node` (both is an error); "
       "`nodes` / `gpus_per_node` become max N+1 / max G+1 of its GPU names"},
      choice_key("cluster.network", LS_FIELD(cluster.ideal_network), kNetworkNames, false, ""),

      {"cluster.gpu.preset", "preset name", {}, "", "to start from"},
      string_key("cluster.gpu.name", LS_FIELD(gpu.name), "", "the preset's name, else `custom`"),
      {"cluster.gpu.peak_tflops", "number", {}, "preset; *required* without one",
       "dense bf16 TFLOP/s (or a string with a unit, `\"312 TFLOP/s\"`)"},
      bytes_key("cluster.gpu.memory", LS_FIELD(gpu.memory_bytes), "",
                "(HBM capacity as CUDA sees it: nvidia-smi's memory.total, e.g. `81559 MiB` for an \"80 GB\" H100; a marketed "
                "\"80 GB\" is 80 GiB, not 80e9 bytes)",
                "preset; *required* without one"),
      bandwidth_key("cluster.gpu.hbm_bandwidth", LS_FIELD(gpu.hbm_bandwidth_Bps), "", "", "preset; *required* without one"),
      number_key("cluster.gpu.matmul_efficiency", LS_FIELD(gpu.matmul_efficiency), 0, 1, true, "",
                 "achieved/peak of large BF16 GEMMs (on a preset: replaces its profile's gemm_sustained_fraction)",
                 "preset's GEMM fraction, else 0.75"),
      scaled_number_key("cluster.gpu.fp8_tflops", LS_FIELD(gpu.fp8_peak_flops), 1e12, 0, 1e9, "",
                        "dense FP8 TFLOP/s (`precision.compute: fp8` needs it)", "preset, else 0 (no FP8 tensor cores)"),
      number_key("cluster.gpu.tdp", LS_FIELD(gpu.tdp_watts), 0, 1e5, true, "",
                 "watts, the board power the datasheet's peaks are quoted at",
                 "preset (A100 400, H100/H200/H800 700, B200 1000, B300 1100, GB200 1200, GB300 1400), else unknown"),
      number_key("cluster.gpu.power_limit", LS_FIELD(gpu.power_limit_watts), 0, 1e5, true, "",
                 "watts, the board power cap the run sets (nvidia-smi -pl), in [tdp / 4, tdp]: GEMM and attention run at "
                 "the clock fraction (power_limit / tdp)^(1/3) (the H100 NVL at 400 W quotes 0.844 of the 700 W SXM's "
                 "peak, the law 0.830); memory-bound kernels keep their rate; MFU stays against the datasheet peak",
                 "`tdp` (no cap)"),
      bool_key("cluster.gpu.mx_formats", LS_FIELD(gpu.mx_formats), std::nullopt,
               "block-scaled MX formats on the tensor cores (`precision.compute: mxfp8` needs it)", "preset, else false"),
      bandwidth_key("cluster.gpu.nvlink_bandwidth", LS_FIELD(gpu.nvlink_bandwidth_Bps), "", "per GPU per direction",
                    "preset (*required* without one unless `intra_node.bandwidth` is given)"),
      bandwidth_key("cluster.gpu.nic_bandwidth", LS_FIELD(gpu.nic_bandwidth_Bps), "", "per GPU per direction",
                    "preset (*required* without one unless `inter_node.bandwidth` is given)"),
      number_key("cluster.gpu.saturation_rows", LS_FIELD(gpu.saturation_rows), 0, 1e9, true, "",
                 "the GEMM row count this GPU needs for full efficiency; the small-microbatch warning compares the kernel model's "
                 "efficiency below it with the efficiency at it",
                 "preset (1024 on the A100s, 2048 on H100 and later), else 1024"),
      time_key("cluster.gpu.kernel_overhead", LS_FIELD(gpu.kernel_overhead), "", "per kernel launch",
               "the profile's launch overhead (4 us on the presets)"),
      bytes_key("cluster.gpu.reserved_memory", LS_FIELD(gpu.reserved_memory_bytes), "",
                "held outside tensors: CUDA context, NCCL buffers, cuBLAS/cuDNN workspaces; in [0, memory / 4]; "
                "usable = memory − reserved_memory − fragmentation · memory",
                fmt::format("{:g} GB", wl::default_reserved_memory() / 1e9)),
      {"cluster.gpu.profile", "file", {}, "none",
       "a `layoutsim calibrate --out` profile applied over the preset's constants (its `gpu` must match; "
       "relative to the scenario file)"},

      string_choice_key("cluster.intra_node.kind", LS_FIELD(cluster.intra.kind), {"nvswitch", "nvlink", "pcie"}, "nvswitch", ""),
      bandwidth_key("cluster.intra_node.bandwidth", LS_FIELD(cluster.intra.bandwidth_Bps), "", "per GPU per direction", "the GPU's `nvlink_bandwidth`"),
      time_key("cluster.intra_node.latency", LS_FIELD(cluster.intra.latency), "1 us", ""),

      string_choice_key("cluster.inter_node.kind", LS_FIELD(cluster.inter.kind), {"infiniband", "ethernet"}, "infiniband", ""),
      bandwidth_key("cluster.inter_node.bandwidth", LS_FIELD(cluster.inter.bandwidth_Bps), "", "per NIC per direction", "the GPU's `nic_bandwidth`"),
      time_key("cluster.inter_node.latency", LS_FIELD(cluster.inter.latency), "3 us", ""),
      int_key("cluster.inter_node.nics_per_node", LS_FIELD(cluster.inter.nics_per_node), 0, 1024, 0, "0 = one NIC per GPU (rails); at most gpus_per_node"),
      string_choice_key("cluster.inter_node.fabric", LS_FIELD(cluster.inter.fabric), {"rail-optimized", "fat-tree"}, "rail-optimized", ""),
      number_key("cluster.inter_node.oversubscription", LS_FIELD(cluster.inter.oversubscription), 0, 1024, true, "1", "(a full leaf's downlink : uplink capacity; a partly filled leaf has the same uplink ports, so it is less oversubscribed)"),
      int_key("cluster.inter_node.nodes_per_leaf", LS_FIELD(cluster.inter.nodes_per_leaf), 1, kMaxDevices, 16, ""),
      int_key("cluster.inter_node.spines", LS_FIELD(cluster.inter.spines), 0, static_cast<std::int64_t>(topo::Cluster::kMaxEcmpPaths), 0, "0 = derived from the uplinks needed; the bound is the equal-cost paths a GPU pair is routed over; the fabric "
       "may have at most 4,194,304 links"),
      string_choice_key("cluster.inter_node.routing", LS_FIELD(cluster.inter.routing), {"ecmp", "dmodk"}, "", "how a flow between leaves picks its spine: `dmodk` by its destination (InfiniBand fat-tree routing: shift "
       "patterns such as rings and pipeline sends never share a spine link), `ecmp` by a hash of the flow (hash "
       "collisions share links)", "`dmodk` on infiniband, `ecmp` on ethernet"),
      bool_key("cluster.inter_node.pxn", LS_FIELD(cluster.inter.pxn), true, "rail-optimized fabrics: a point-to-point transfer (pipeline send, all-to-all) to a GPU on another rail "
       "crosses NVLink to the GPU on the receiver's rail and leaves by its NIC, as NCCL's PXN does by default; "
       "`false`: it leaves by the sender's NIC and crosses the spines"),
      bandwidth_key("cluster.inter_node.pcie_bandwidth", LS_FIELD(cluster.inter.pcie_bandwidth_Bps), "64 GB/s", "GPU ↔ NIC", "64 GB/s (PCIe Gen5 x16)"),

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
      string_key("model.name", LS_FIELD(model.name), "", "the preset's name, else `custom`"),
      int_key("model.layers", LS_FIELD(model.layers), 1, kMaxLayers, std::nullopt,
              "at most 65,536 (some 500 times the deepest published model; the program of a million layers takes seconds to "
              "build)", "preset; *required* without one"),
      int_key("model.hidden", LS_FIELD(model.hidden), 1, kMaxDim, std::nullopt, "", "preset; *required* without one"),
      int_key("model.heads", LS_FIELD(model.heads), 1, kMaxCount, std::nullopt, "", "preset; *required* without one"),
      int_key("model.kv_heads", LS_FIELD(model.kv_heads), 1, kMaxCount, std::nullopt, "(GQA)",
              "`heads` (MHA; an MHA preset stays MHA when only `heads` is given)"),
      int_key("model.head_dim", LS_FIELD(model.head_dim), 1, kMaxDim, std::nullopt,
              "features per query, key and value head (mha / gqa; Qwen3-30B-A3B: 128 with hidden 2048 and 32 heads)",
              "`hidden / heads`"),
      int_key("model.ffn_hidden", LS_FIELD(model.ffn_hidden), 1, kMaxDim, std::nullopt, "", "preset, else 4·hidden"),
      int_key("model.vocab", LS_FIELD(model.vocab), 1, kMaxDim, std::nullopt, "", "preset; *required* without one"),
      int_key("model.seq_len", LS_FIELD(model.seq_len), 1, kMaxDim, std::nullopt, "", "preset; *required* without one"),
      choice_key("model.activation", LS_FIELD(model.activation), wl::kActivationNames, std::nullopt, "",
                 "preset, else `gelu`"),
      bool_key("model.tied_embeddings", LS_FIELD(model.tied_embeddings), std::nullopt,
               "the LM head reuses the embedding table; where the pipeline puts the two on different stages the last "
               "stage keeps a copy (its state as an untied head's) and the two copies' gradients are all-reduced "
               "before every optimizer step, under comm.pp (Megatron, DeepSpeed)",
               "preset, else false"),
      {"model.dropout", "number", {}, "0", "in [0, 1): attention, residual and embedding dropout (0: no dropout kernels or masks)"},
      // Unset stays unset (resolve() derives it from the activation).
      optional_bool_key("model.bias", LS_FIELD(model.bias), "`true` with `activation: gelu` (GPT style), `false` with `swiglu` (Llama style)",
                        "biases on every linear layer (and beside each LayerNorm's weight)"),
      bool_key("model.parallel_block", LS_FIELD(model.parallel_block), false,
               "GPT-J / PaLM block: attention and MLP side by side on one norm's output, one TP all-reduce per pass "
               "(dense models)"),
      // Unset stays unset (resolve() derives it from kv_heads), so no choice_key.
      [] {
        std::vector<std::string_view> values, value_docs;
        for (const auto& entry : wl::kAttentionArchNames) {
          values.push_back(entry.name);
          value_docs.push_back(entry.doc);
        }
        std::vector<std::string> allowed(values.begin(), values.end());
        ScenarioKey row{"model.attention", "", std::move(values), "`gqa` when `kv_heads` < `heads`, else `mha`",
                        "how a layer's attention projects keys and values"};
        row.value_docs = std::move(value_docs);
        return bound_row(std::move(row), "",
                         [allowed](Reader& r, const YNode& v, const std::string& p, wl::Scenario& s) {
                           if (auto c = r.choice(v, p, allowed))
                             if (auto e = wl::from_name(wl::kAttentionArchNames, *c)) s.model.attention = *e;
                         },
                         [](const wl::Scenario& s) {
                           return s.model.attention ? std::string(wl::name_of(wl::kAttentionArchNames, *s.model.attention)) : std::string();
                         });
      }(),
      {"model.mla", "map", {}, "", "the latent attention's shape; only with `attention: mla` (DeepSeek-V2 §2.1)"},
      int_key("model.mla.kv_lora_rank", LS_FIELD(model.mla.kv_lora_rank), 1, kMaxDim, std::nullopt,
              "width of the compressed key/value latent (DeepSeek-V3: 512)", "*required* with `attention: mla`"),
      int_key("model.mla.q_lora_rank", LS_FIELD(model.mla.q_lora_rank), 0, kMaxDim, 0,
              "width of the compressed query latent; 0: the query is projected from the hidden state (DeepSeek-V3: 1536)"),
      int_key("model.mla.rope_head_dim", LS_FIELD(model.mla.rope_head_dim), 1, kMaxDim, std::nullopt,
              "rotary query/key features per head, the key's shared by every head (DeepSeek-V3: 64)", "*required* with `attention: mla`"),
      int_key("model.mla.nope_head_dim", LS_FIELD(model.mla.nope_head_dim), 1, kMaxDim, std::nullopt,
              "query/key features per head without rotary embedding (DeepSeek-V3: 128)", "`v_head_dim`"),
      int_key("model.mla.v_head_dim", LS_FIELD(model.mla.v_head_dim), 1, kMaxDim, std::nullopt,
              "value features per head (DeepSeek-V3: 128)", "*required* with `attention: mla`"),
      int_key("model.dense_layers", LS_FIELD(model.dense_layers), 0, kMaxCount, 0,
              "MoE models: the first N layers keep a dense MLP of `ffn_hidden` (DeepSeek-V3: 3)", "preset, else 0"),
      int_key("model.mtp_depth", LS_FIELD(model.mtp_depth), 0, 16, 0,
              "multi-token prediction modules after the main model, on the last stage (DeepSeek-V3: 1): each an RMSNorm "
              "of the hidden state and of the next token's embedding, a 2h → h projection, one transformer block and "
              "the shared output head with its own loss"),
      int_key("model.sliding_window", LS_FIELD(model.sliding_window), 0, kMaxDim, 0,
              "sliding-window attention: each query attends the last N keys (0: all earlier keys; FLOPs and "
              "FlashAttention's blocks over the window; without cp)"),
      {"model.moe", "map", {}, "absent: dense model", "merged over a MoE preset's"},

      int_key("model.moe.experts", LS_FIELD(model.moe.experts), 1, kMaxCount, std::nullopt, "",
              "preset; *required* in `moe` without one"),
      int_key("model.moe.top_k", LS_FIELD(model.moe.top_k), 1, kMaxCount, std::nullopt, "≤ experts",
              "preset; *required* in `moe` without one"),
      int_key("model.moe.expert_ffn_hidden", LS_FIELD(model.moe.expert_ffn_hidden), 1, kMaxDim, std::nullopt, "",
              "preset, else `ffn_hidden`"),
      int_key("model.moe.every_n_layers", LS_FIELD(model.moe.every_n_layers), 1, kMaxCount, 1,
              "a MoE layer every n layers", "preset, else 1 (every layer is MoE)"),
      int_key("model.moe.shared_experts", LS_FIELD(model.moe.shared_experts), 0, kMaxCount, 0, "", "preset, else 0"),
      number_key("model.moe.capacity_factor", LS_FIELD(model.moe.capacity_factor), 0, 1e6, false, "0",
                 "0 = no token dropping", "preset, else 0"),
      int_key("model.moe.max_nodes_per_token", LS_FIELD(model.moe.max_nodes_per_token), 0, kMaxCount, 0,
              "node-limited routing (DeepSeek-V3: 4): a token's experts lie on at most N of the nodes its expert-parallel "
              "group spans; the dispatch sends it once per selected node and relays it over NVLink there "
              "(0: no limit, one copy per (token, expert) pair); balanced routing only"),
      {"model.moe.routing", "", {"balanced"}, "`balanced`", "or a map: `{skew: zipf, alpha, seed}` or `{load: [...]}`"},

      {"model.moe.routing.skew", "", {"zipf"}, "", "*required* without `load`"},
      {"model.moe.routing.alpha", "number", {}, "1", "> 0 (Zipf exponent)"},
      {"model.moe.routing.seed", "int", {}, "1", "≥ 0"},
      {"model.moe.routing.load", "list of numbers", {}, "",
       "≥ 0, one per expert, not all 0: relative loads (instead of `skew`)"},

      {"layout.dp", "int or `auto`", {}, "`auto`: devices / (tp·cp·pp) when that divides, else 1", ""},
      int_key("layout.tp", LS_FIELD(layout.tp), 1, kMaxDevices, 1, ""),
      int_key("layout.pp", LS_FIELD(layout.pp), 1, kMaxDevices, 1, ""),
      int_key("layout.ep", LS_FIELD(layout.ep), 1, kMaxDevices, 1,
              "expert parallelism: each expert-parallel group holds experts / ep experts per rank; expert_tp·ep must divide "
              "tp·cp·dp (the expert layers fold a stage's ranks, Megatron-Core's MoE parallel folding)"),
      {"layout.expert_tp", "int", {}, "`tp`",
       "the expert layers' tensor parallelism (Megatron-Core `expert_tensor_parallel_size`): each routed expert's MLP split "
       "expert_tp ways; a stage's ranks, tp fastest, then cp, then dp, are regrouped as expert_tp (fastest) × ep × expert-dp"},
      int_key("layout.cp", LS_FIELD(layout.cp), 1, kMaxDevices, 1, "context parallelism: each sequence split in 2·cp chunks over cp ranks (seq_len divisible by 2·cp; dense models)"),
      choice_key("layout.cp_kind", LS_FIELD(layout.cp_kind), wl::kCpKindNames, wl::CpKind::ring, "how context-parallel ranks share keys and values"),
      int_key("layout.zero", LS_FIELD(layout.zero), 0, 3, 0, ""),
      bool_key("layout.sequence_parallel", LS_FIELD(layout.sequence_parallel), false, ""),
      recompute_row(),
      recompute_ops_row(),
      {"layout.recompute.layers", "`all`, `every-K` or list", {}, "`all`",
       "the layers that recompute; the others keep every activation: `every-K` the model's K-th, 2K-th, ... layer "
       "(1-based, torchtitan's layer-level selective checkpointing), or a list of 0-based layer indices"},
      int_key("layout.microbatch_size", LS_FIELD(layout.microbatch_size), 1, kMaxCount, 1, "sequences per micro-batch"),
      {"layout.microbatches", "int", {}, "1", "per step per pipeline; devices × microbatches × (layers per stage + 1) ≤ 16,777,216 (bounded memory and time)"},
      {"layout.global_batch", "int", {}, "",
       "instead of `microbatches`: a multiple of microbatch_size·dp; microbatches = global_batch / (microbatch_size·dp). "
       "Both in one file is an error; a `--set` of one replaces the other"},
      choice_key("layout.schedule", LS_FIELD(layout.schedule), wl::kScheduleNames, wl::Schedule::one_f_one_b, ""),
      int_key("layout.virtual_stages", LS_FIELD(layout.virtual_stages), 1, kMaxCount, 1, "model chunks per stage (interleaved-1f1b; zb-v and dualpipe always 2)"),
      stage_layers_row(),
      {"layout.placement", "list", {"tp", "cp", "dp", "pp"}, "`[tp, cp, dp, pp]`",
       "a permutation, fastest-varying first; `cp` may be left out (then it sits right after `tp`)"},
      bytes_key("layout.dp_bucket", LS_FIELD(layout.dp_bucket_bytes), "100 MB", "gradient all-reduce bucket"),
      bool_key("layout.embedding_free", LS_FIELD(layout.embedding_free), false, "(what-if/tests: embedding and LM head cost nothing)"),
      bool_key("layout.accumulate_unsharded", LS_FIELD(layout.accumulate_unsharded), false, "ZeRO-2/3: keep a full gradient buffer and reduce once per step (FSDP `no_sync`; gradient memory as ZeRO-1) "
       "instead of reduce-scattering after every micro-batch"),
      {"layout.shard_group", "int", {}, "dp",
       "HSDP (PyTorch HYBRID_SHARD): ZeRO shards within groups of this many dp ranks and replicates across them; "
       "must divide dp, needs zero ≥ 1"},
      {"layout.shard_over", "list", {"dp", "cp"}, "`[dp, cp]`",
       "the axes ZeRO shards over: `[dp, cp]` (Megatron-Core's data-parallel-with-context-parallel group, torchtitan's FSDP mesh) "
       "or `[dp]` (each cp rank keeps a replica of the dp shards; their gradients all-reduce across cp)"},
      {"layout.offload", "map", {}, "", "state moved to host memory over the GPU's PCIe link (workloads/build/offload.hpp)"},
      bool_key("layout.offload.activations", LS_FIELD(layout.offload.activations), false, "stored activations copied to the host during the forward, prefetched back in the backward"),
      bool_key("layout.offload.optimizer", LS_FIELD(layout.offload.optimizer), false, "master weights and moments live on the host; the step runs on the CPU (gradients down, weights up)"),

      {"precision.weights", "", {"fp8", "bf16", "fp16", "fp32"}, "`bf16` (2 B)", ""},
      {"precision.gradients", "", {"bf16", "fp16", "fp32"}, "`fp32` (4 B)", ""},
      {"precision.grad_reduce", "", {"bf16", "fp16", "fp32"}, "as `precision.gradients`",
       "the dtype the data-parallel gradient reduction moves where the framework casts the gradient buffer for it "
       "(DeepSpeed's communication_data_type: bf16 over its BF16_Optimizer's fp32 gradients); the casts to it and back "
       "run as memory-bound kernels before each reduction"},
      {"precision.master", "", {"fp32", "none"}, "`fp32` (4 B); `none` when weights are fp32", ""},
      {"precision.optimizer", "", {"adam-fp32", "adam-bf16", "adamw-fp32", "adamw-bf16", "sgd", "sgd-momentum"}, "`adam-fp32`",
       "(8, 4, 8, 4, 0, 4 B per parameter)"},
      {"precision.activations", "", {"fp8", "bf16", "fp16", "fp32"}, "`bf16` (2 B)", ""},
      {"precision.compute", "", {"bf16", "fp16", "fp8", "mxfp8", "fp8-blockwise"}, "`bf16`",
       "the linear layers' GEMMs: `fp8` per-tensor scaling at the GPU's FP8 peak, `mxfp8` block scaling (B200 and later), "
       "`fp8-blockwise` DeepSeek-V3's 1×128 / 128×128 fp32 scales (Hopper and later); "
       "attention, LM head and router stay bf16; quantize kernels added (workloads/cost/low_precision.hpp)"},

      {"perturbations.devices", "list of maps", {}, "none", ""},
      {"perturbations.links", "list of maps", {}, "none", ""},
      {"perturbations.jitter", "map", {}, "no jitter", ""},
      {"perturbations.devices[].device", "`node<N>.gpu<G>`", {}, "", "*required*; must exist, each at most once"},
      {"perturbations.devices[].compute_slowdown", "number", {}, "1", "> 0"},
      {"perturbations.devices[].drift", "map", {}, "absent: constant", "a slowdown that grows per step (a GPU throttling as it heats)"},

      {"perturbations.devices[].drift.per_step", "number", {}, "",
       "*required* in `drift`; in [0, 1]: step k (from 0) runs at compute_slowdown · (1 + per_step)^k; needs simulation.steps ≥ 2"},
      {"perturbations.links[].link", "link name", {}, "",
       "*required*; a directed link of the cluster (`node3.nic5->leaf5`, `leaf0->spine1`) or `a<->b` for both "
       "directions; checked against the built topology, with did-you-mean"},
      {"perturbations.links[].bandwidth_factor", "number", {}, "1",
       "in [0, 1000]; `0` means the link is **down**: routes avoid it (spread over the other spines; a dead rail relays "
       "through a peer GPU's NIC over NVLink, like NCCL's PXN), and one that would disconnect two GPUs is an error"},
      number_key("perturbations.jitter.compute_cv", LS_FIELD(perturbations.jitter.compute_cv), 0, 10, false, "0",
                 "coefficient of variation of each compute op's duration"),
      number_key("perturbations.jitter.comm_cv", LS_FIELD(perturbations.jitter.comm_cv), 0, 10, false, "0",
                 "coefficient of variation of each collective's bytes"),
      int_key("perturbations.jitter.seed", LS_FIELD(perturbations.jitter.seed), 0, std::numeric_limits<std::int64_t>::max(), 0, ""),

      int_key("simulation.steps", LS_FIELD(simulation.steps), 1, kMaxSteps, 1, ""),
      int_key("simulation.critical_path_ops", LS_FIELD(simulation.critical_path_ops), 0, std::numeric_limits<std::int32_t>::max() - 1,
              25'000'000,
              "the most simulated ops whose traces the critical path keeps (24 bytes each); past it the critical path is left "
              "out, with a warning; no other number depends on it"),
      choice_key("simulation.symmetry", LS_FIELD(simulation.symmetry), kSymmetryNames, true,
                 "which ranks run (the JSON's `engine.symmetry` says which was used, or why not)"),

      {"training.tokens", "count", {}, "none",
       "in (0, 1e18], tokens to train on, with an optional SI multiplier: `15T`, `300B` (B = billion), `2.5M`; gives "
       "`time_to_train_s` and `gpu_hours`"},
      {"training.gpu_hour_price", "price", {}, "none",
       "in [0, 1e9], price of one GPU-hour with a currency code: `2.5 USD`; gives `cost` (with `tokens`) and `cost_per_million_tokens`"},

      {"implementation.preset", "", {"megatron-core", "megatron-lm-2021", "deepspeed", "pytorch-fsdp", "torchtitan"}, "`megatron-core`",
       "a bundle of attention kernel, fusion, overlap switches and per-kernel host cost (README: implementation presets); "
       "the keys below override its choices"},
      choice_key("implementation.attention", LS_FIELD(implementation.attention), wl::kAttentionNames, wl::AttentionKind::flash, "the attention core's kernels", "the preset's (`flash`)"),
      bool_key("implementation.fused_elementwise", LS_FIELD(implementation.fused_elementwise), true, "fused norms, bias+activation, bias+dropout+add, softmax, RoPE; false: one eager kernel per op (RMSNorm on an fp32 copy, as eager PyTorch runs it)", "the preset's (`true`)"),
      // Unset follows fused_elementwise (the layer's kernels decide).
      optional_bool_key("implementation.fused_norm", LS_FIELD(implementation.fused_norm), "`fused_elementwise`",
                        "RMSNorm / LayerNorm as one fused kernel (Apex, TransformerEngine, torchtitan's `fused_rmsnorm`) "
                        "whatever `fused_elementwise` says of the other element-wise ops; false: RMSNorm on an fp32 copy, "
                        "one eager kernel per op (LayerNorm stays one kernel)"),
      bool_key("implementation.fused_loss", LS_FIELD(implementation.fused_loss), true, "the loss as a fused, in-place vocab-parallel cross-entropy (Megatron's; a compiled loss): its working buffers are the logits and one fp32 copy; false: eager `F.cross_entropy(logits.float())`, two more fp32 copies while it runs and one kernel per op", "the preset's (`true`; `false` for `pytorch-fsdp` and `torchtitan`)"),
      bool_key("implementation.tp_comm_overlap", LS_FIELD(implementation.tp_comm_overlap), false, "TP collectives overlapped with the adjacent GEMMs (exposed: what exceeds the GEMMs; the GEMMs slow down by "
       "the preset's SM-sharing factor)", "the preset's (`false`)"),
      bool_key("implementation.dp_overlap", LS_FIELD(implementation.dp_overlap), true, "gradient reduction overlapped with the backward; false: after the backward", "the preset's (`true`)"),
      bool_key("implementation.param_gather_overlap", LS_FIELD(implementation.param_gather_overlap), true, "ZeRO / FSDP weight gathers prefetched; false: ZeRO-3's exposed before each layer, ZeRO-1/2's after the optimizer step (as Megatron's distributed optimizer and DeepSpeed run them)", "the preset's (`true`; `false` for `deepspeed`)"),
      choice_key("implementation.gather_granularity", LS_FIELD(implementation.gather_granularity), wl::kGatherGranularityNames, wl::GatherGranularity::layer,
                 "ZeRO-3 weight all-gathers per layer; each call pays the collective's latency over the group", "the preset's (`parameter` for `deepspeed`, else `layer`)"),
      choice_key("implementation.reduce_granularity", LS_FIELD(implementation.reduce_granularity), wl::kReduceGranularityNames,
                 wl::ReduceGranularity::bucket,
                 "ZeRO-3 gradient reduce-scatters; each call pays the collective's latency over the group (with "
                 "`gather_list_copies`, its inputs are copied in rank by rank too); ZeRO-1/2 reduce in `layout.dp_bucket`s",
                 "the preset's (`parameter` for `deepspeed`, else `bucket`)"),
      number_key("implementation.persistence_threshold", LS_FIELD(implementation.persistence_threshold), 0, 1e12, false, "",
                 "ZeRO-3: parameter tensors of fewer elements (per TP shard) stay whole on every rank and are never gathered "
                 "(DeepSpeed's stage3_param_persistence_threshold); their gradients are still reduced",
                 "the preset's (100000 for `deepspeed`, else 0)"),
      number_key("implementation.max_reuse_distance", LS_FIELD(implementation.max_reuse_distance), 0, 1e15, false, "",
                 "ZeRO-3 with full recompute: after a module's recomputed forward the layer's later modules run twice "
                 "(recomputed, then their backward) before its backward; when those hold more parameters (per TP rank) than "
                 "this, the module's weights are released and gathered again (DeepSpeed's stage3_max_reuse_distance); 0: kept",
                 "the preset's (1e9 for `deepspeed`, else 0)"),
      number_key("implementation.max_live_parameters", LS_FIELD(implementation.max_live_parameters), 0, 1e15, false, "",
                 "ZeRO-3 with prefetched gathers, per module or parameter: a module's weights are fetched ahead, during "
                 "the module before it, only while that module holds fewer parameters (per TP rank) than this; otherwise "
                 "its gather waits until it is needed, exposed (DeepSpeed's stage3_max_live_parameters); 0: every module "
                 "prefetched",
                 "the preset's (1e9 for `deepspeed`, else 0)"),
      choice_key("implementation.grad_accumulation", LS_FIELD(implementation.grad_accumulation), wl::kGradAccumulationNames,
                 wl::GradAccumulation::fused,
                 "how weight gradients are summed over a step's micro-batches where they are reduced once, after the last "
                 "(ZeRO-0/1; ZeRO-2/3 with `layout.accumulate_unsharded`): a memory-bound add after each layer's weight "
                 "gradients, w + 2g bytes per parameter every micro-batch (`buffer`) or 3w from the second on (`autograd`), "
                 "w and g the bytes of `precision.weights` and `precision.gradients`",
                 "the preset's (`buffer` for `megatron-lm-2021`, `pytorch-fsdp` and `torchtitan`, `autograd` for `deepspeed`, `fused` for "
                 "`megatron-core`)"),
      bool_key("implementation.moe_permute_fusion", LS_FIELD(implementation.moe_permute_fusion), false,
               "MoE layers: each token's copies gathered into expert order and combined back by one fused kernel each "
               "(TransformerEngine's moe_permute / moe_unpermute, Megatron-Core's --moe-permute-fusion; a dispatch that "
               "writes tokens in expert order); false: as PyTorch ops, as Megatron-Core's dispatcher runs them by default "
               "(index_select, a split-and-cat regrouping by local expert after the all-to-all and back, the probabilities' "
               "product and a scatter_add into zeros, each with its backward)",
               "the preset's (`false`)"),
      bool_key("implementation.moe_router_fusion", LS_FIELD(implementation.moe_router_fusion), false,
               "MoE layers: the router's top-k with its softmax and masks, the aux-loss scores and the aux loss as one "
               "fused kernel each, forward and backward (TransformerEngine 2.7+, Megatron-Core's --moe-router-fusion); "
               "false: as the PyTorch ops of Megatron-Core's TopKRouter (top-k, softmax and cast, gates and routing map "
               "scattered into zeroed tensors, a full fp32 softmax and column sums for the aux loss, some twenty small "
               "kernels each way)",
               "the preset's (`false`)"),
      choice_key("implementation.grouped_gemm", LS_FIELD(implementation.grouped_gemm), wl::kGroupedGemmNames,
                 wl::GroupedGemm::per_expert,
                 "MoE layers: how the local experts' GEMMs run — one kernel per expert, each paying the GPU's launch gap "
                 "(TransformerEngine's GroupedLinear issues a cuBLAS GEMM per expert; a loop over experts), or one grouped "
                 "kernel for all of them",
                 "the preset's (`single-kernel` for `pytorch-fsdp` and `torchtitan`, else `per-expert`)"),
      choice_key("implementation.zero1_grad_reduce", LS_FIELD(implementation.zero1_grad_reduce), wl::kZero1GradReduceNames,
                 wl::Zero1GradReduce::reduce_scatter,
                 "layout.zero 1: how each rank gets the summed gradients of the shard it updates; an all-reduce moves "
                 "twice a reduce-scatter's bytes",
                 "`reduce-scatter` (every preset)"),
      choice_key("implementation.p2p_overlap", LS_FIELD(implementation.p2p_overlap), wl::kP2pOverlapNames, wl::P2pOverlap::interleaved,
                 "which schedules' pipeline sends run beside the compute after them; a blocking send holds the compute "
                 "stream until its transfer is done (the framework waits on it and synchronises the device), its time "
                 "counted as exposed pp communication",
                 "the preset's (`interleaved` for `megatron-core`, `all` for `pytorch-fsdp` and `torchtitan`, `none` for `megatron-lm-2021` "
                 "and `deepspeed`)"),
      bool_key("implementation.pp_scatter_gather", LS_FIELD(implementation.pp_scatter_gather), false,
               "without sequence parallelism, each TP rank sends 1/tp of a pipeline boundary tensor and the receiver "
               "all-gathers it over its TP group (Megatron-LM's scatter_gather_tensors_in_pipeline, DeepSpeed's partitioned "
               "pipeline tensors); false: each TP rank sends the whole tensor",
               "the preset's (`true` for `megatron-lm-2021` and `deepspeed`, else `false`)"),
      choice_key("implementation.reshard", LS_FIELD(implementation.reshard), wl::kReshardNames, wl::Reshard::after_forward,
                 "ZeRO-3 / FSDP: when a layer's gathered weights are freed; the later two hold the stage's layers unsharded",
                 "the preset's (`after-forward`)"),
      bytes_key("implementation.gather_bucket", LS_FIELD(implementation.gather_bucket_bytes), "50 MB", "bytes per ZeRO-3 weight all-gather under `gather_granularity: bucket`"),
      bool_key("implementation.blocking_offload_copies", LS_FIELD(implementation.blocking_offload_copies), false,
               "activation offload (`layout.offload.activations`) as DeepSpeed's CPU checkpointing runs it: every layer's "
               "stored input goes to host memory when the layer's forward ends and comes back just before its backward, the "
               "next op waiting for each copy (pageable copies: priced at the pinned rate, the least they cost; the stage's "
               "compute time includes them, as the compute stream is busy with them); false: "
               "copies beside the compute, two layers ahead, the last two layers of a chunk kept on the GPU. With ZeRO-3, "
               "`layout.offload.optimizer` and `dp_overlap`, also the gradient shards as DeepSpeed's ZeRO-3 copies them: "
               "each goes to the host as soon as its bucket's reduce-scatter is done, the backward waiting for the "
               "reduction and the copy (last micro-batch only); false: every shard goes down after the backward",
               "the preset's (`true` for `deepspeed`, else `false`)"),
      bool_key("implementation.gather_list_copies", LS_FIELD(implementation.gather_list_copies), false,
               "each ZeRO-3 weight gather is PyTorch's list-form all_gather: after the collective, one copy kernel per rank "
               "of the group moves that rank's slice (DeepSpeed up to 0.5); each call costs ranks × the larger of the GPU's "
               "launch overhead and the host's time per rank (a view made, a copy issued: 10 µs in every preset) + its bytes "
               "read and written through HBM, on the compute stream; ZeRO-3's gradient reduce-scatters are "
               "list-form too, their inputs copied in the same way before the collective",
               "the preset's (`true` for `deepspeed`, else `false`)"),
      bool_key("implementation.per_parameter_sharding", LS_FIELD(implementation.per_parameter_sharding), false,
               "ZeRO-3 as PyTorch FSDP2 (fully_shard) shards: parameter by parameter, so each weight gather's flat output is "
               "copied out into the parameters and each gradient reduce-scatter's flat input is copied in from the "
               "gradients, into the reduce dtype, both on the compute stream (each gathered byte read and written once "
               "through HBM; w + r bytes per gradient element); false: the collectives work in the flat storage of FSDP1's "
               "FlatParameter, DeepSpeed's and Megatron's buffers",
               "the preset's (`true` for `torchtitan`, else `false`)"),
      number_key("implementation.compute_variability", LS_FIELD(implementation.compute_variability), 0, 0.2, false, "",
                 "coefficient of variation of one GPU's sustained compute speed against another's of the same type; the "
                 "step runs at the slowest of its N GPUs, 1 + cv·E[max of N standard normals] (`scale_noise_s`); 0: none",
                 "the preset's (0.015: Sinha et al., SC22)"),

      {"training.method", "", {"pretrain", "full-finetune", "lora"}, "`pretrain`",
       "`pretrain` and `full-finetune` train every parameter not in `frozen`; `lora` freezes the base model and trains adapters"},
      {"training.frozen", "list", {"embedding", "head", "attention", "mlp", "norms", "layers"}, "`[]`",
       "parts with bf16 weights only: no gradient, master, moments, weight-gradient GEMM or DP gradient traffic"},
      {"training.lora", "map", {}, "", "(with `method: lora`)"},
      int_key("training.lora.rank", LS_FIELD(training.lora.rank), 1, 65536, 16, ""),
      number_key("training.lora.alpha", LS_FIELD(training.lora.alpha), 0, 1e9, true, "32", "(scaling alpha/rank; no cost)"),
      {"training.lora.targets", "list", {"qkv", "proj", "fc1", "fc2"}, "`[qkv, proj, fc1, fc2]`",
       "linears that get adapters (fc1/fc2: dense MLPs only)"},
      number_key("training.lora.dropout", LS_FIELD(training.lora.dropout), 0, 0.999, false, "0", "dropout on the adapter input"),

      {"checkpoint.every", "steps or duration", {}, "", "*required*: `\"500 steps\"` or `\"30 min\"` (s, min, h, d)"},
      {"checkpoint.storage_bandwidth", "bandwidth", {}, "`storage_bandwidth_per_node` × nodes",
       "aggregate write/read rate of the storage (one of the two is *required*)"},
      {"checkpoint.storage_bandwidth_per_node", "bandwidth", {}, "`storage_bandwidth` / nodes", "per node"},
      choice_key("checkpoint.format", LS_FIELD(checkpoint.consolidated), kCheckpointFormatNames, false, ""),
      bool_key("checkpoint.async", LS_FIELD(checkpoint.async), false, "copy to host memory and write in the background"),

      {"failures.mtbf_per_gpu", "duration", {}, "", "*required*: mean time between failures of one GPU, like `\"50000 h\"`"},

      number_key("memory.fragmentation", LS_FIELD(memory.fragmentation), 0, 0.5, false, "0.05", "share of HBM the caching allocator cannot hand out as tensors; a layout above 95 % of the usable "
       "memory gets a `memory-tight` warning"),
  };
  return keys;
}

#undef LS_FIELD

std::string scenario_key_description(const ScenarioKey& k) {
  std::string out;
  for (std::size_t i = 0; i < k.values.size(); ++i) {
    const std::string_view doc = i < k.value_docs.size() ? k.value_docs[i] : std::string_view();
    out += fmt::format("{}`{}`{}", out.empty() ? "" : " \\| ", k.values[i], doc.empty() ? "" : fmt::format(" — {}", doc));
  }
  if (out.empty()) out = std::string(k.type);
  else if (!k.type.empty()) out = fmt::format("{} of {}", k.type, out);
  if (k.doc.empty()) return out;
  // Values with their meanings read best after what the key is.
  if (!k.value_docs.empty()) return fmt::format("{}: {}", k.doc, out);
  return out.empty() ? std::string(k.doc) : fmt::format("{}{}{}", out, k.doc.front() == '(' ? " " : ", ", k.doc);
}

const ScenarioKey* find_scenario_key(std::string_view path) {
  for (const auto& k : scenario_keys())
    if (k.path == path) return &k;
  return nullptr;
}

bool read_bound_key(Reader& r, const YNode& v, const std::string& path, wl::Scenario& s) {
  const ScenarioKey* k = find_scenario_key(path);
  if (!k || !k->binding) return false;
  k->binding->read(r, v, path, s);
  return true;
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

/// The rows of `parent`'s subtree, depth first (each key followed by its own keys).
void subtree_rows(std::string_view parent, std::string& out) {
  for (const auto& k : scenario_keys()) {
    if (parent_of(k.path) != parent) continue;
    out += fmt::format("| `{}` | {} | {} |\n", k.path, scenario_key_description(k), k.default_text.empty() ? "—" : k.default_text);
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
    // Each top-level key is a section; one with keys under it (a map, or a preset name
    // or map) lists them, a scalar's row is itself.
    const bool map = !scenario_key_names(top.path).empty();
    out += fmt::format("{}### `{}`{}\n\n| key | type / values | default |\n|---|---|---|\n", out.empty() ? "" : "\n", top.path,
                       map && !top.doc.empty() ? fmt::format(" {}", top.doc) : "");
    if (map) subtree_rows(top.path, out);
    else out += fmt::format("| `{}` | {} | {} |\n", top.path, scenario_key_description(top), top.default_text.empty() ? "—" : top.default_text);
  }
  return out;
}

}  // namespace ls::tools

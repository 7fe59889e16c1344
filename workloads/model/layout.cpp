// workloads/model/layout.cpp — layout rules, mesh map, stage/chunk layer maps.
#include "workloads/model/layout.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/model/headroom.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ls::wl {

namespace {

std::string join(const std::vector<int>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return "[" + out + "]";
}

/// Collects errors with one line per rule.
struct Errors {
  std::vector<LayoutError> list;
  void add(std::string key, std::string message, std::string hint) {
    list.push_back({std::move(key), std::move(message), std::move(hint)});
  }
};

void check_model(const ModelSpec& m, Errors& e) {
  if (m.layers < 1) e.add("model.layers", fmt::format("layers must be >= 1, got {}", m.layers), "set model.layers");
  if (m.hidden < 1) e.add("model.hidden", fmt::format("hidden must be > 0, got {}", m.hidden), "set model.hidden");
  if (m.heads < 1) e.add("model.heads", fmt::format("heads must be > 0, got {}", m.heads), "set model.heads");
  if (m.seq_len < 1) e.add("model.seq_len", fmt::format("seq_len must be > 0, got {}", m.seq_len), "set model.seq_len");
  if (m.vocab < 1) e.add("model.vocab", fmt::format("vocab must be > 0, got {}", m.vocab), "set model.vocab");
  if (m.ffn_hidden < 1)
    e.add("model.ffn_hidden", fmt::format("ffn_hidden must be > 0, got {}", m.ffn_hidden), "set model.ffn_hidden (4·hidden for GPT)");
  if (m.heads >= 1 && m.hidden >= 1 && m.hidden % m.heads != 0)
    e.add("model.hidden", fmt::format("hidden ({}) must be a multiple of heads ({}): head dimension = hidden / heads", m.hidden, m.heads),
          "choose hidden = heads × head_dim");
  if (m.heads >= 1 && (m.kv_heads < 1 || m.kv_heads > m.heads || m.heads % m.kv_heads != 0))
    e.add("model.kv_heads",
          fmt::format("kv_heads ({}) must be between 1 and heads ({}) and divide it (grouped-query attention)", m.kv_heads, m.heads),
          "use kv_heads = heads for multi-head attention");
  if (m.moe.experts < 0) e.add("model.moe.experts", fmt::format("experts must be >= 0, got {}", m.moe.experts), "0 means a dense model");
  if (m.moe.experts > 0) {
    if (m.moe.top_k < 1 || m.moe.top_k > m.moe.experts)
      e.add("model.moe.top_k", fmt::format("top_k ({}) must be between 1 and experts ({})", m.moe.top_k, m.moe.experts), "top_k is usually 1 or 2");
    if (m.moe.every_n_layers < 1)
      e.add("model.moe.every_n_layers", fmt::format("every_n_layers must be >= 1, got {}", m.moe.every_n_layers), "1 makes every layer MoE");
    if (m.moe.max_nodes_per_token > 0 && m.moe.routing != RoutingKind::balanced)
      e.add("model.moe.max_nodes_per_token", "node-limited routing is modelled with balanced routing only",
            "drop model.moe.routing, or max_nodes_per_token");
    if (m.moe.routing == RoutingKind::load && m.moe.load.size() != static_cast<std::size_t>(m.moe.experts))
      e.add("model.moe.routing.load", fmt::format("load has {} entries, the model has {} experts", m.moe.load.size(), m.moe.experts),
            "give one relative load per expert");
  }
}

/// Hardware: the GPU's rates and memory.
void check_hardware(const Scenario& s, Errors& e) {
  if (!(s.gpu.peak_flops > 0)) e.add("cluster.gpu", fmt::format("GPU peak_flops must be > 0, got {}", s.gpu.peak_flops), "use a preset (a100-80gb, h100-sxm, ...) or set peak_tflops");
  if (!(s.gpu.memory_bytes > 0)) e.add("cluster.gpu", "GPU memory must be > 0", "set cluster.gpu.memory, e.g. 80 GB");
  if (!(s.gpu.hbm_bandwidth_Bps > 0)) e.add("cluster.gpu", "GPU hbm_bandwidth must be > 0", "set cluster.gpu.hbm_bandwidth, e.g. 2 TB/s");
  if (!(s.gpu.matmul_efficiency > 0 && s.gpu.matmul_efficiency <= 1))
    e.add("cluster.gpu", fmt::format("matmul_efficiency must be in (0, 1], got {}", s.gpu.matmul_efficiency), "typical values are 0.6-0.8");
  if (s.gpu.power_limit_watts > 0) {
    if (!(s.gpu.tdp_watts > 0))
      e.add("cluster.gpu.power_limit", "a power limit needs the GPU's TDP, and this GPU has none",
            "set cluster.gpu.tdp (the board power its peak_tflops is quoted at), or start from a preset");
    else if (s.gpu.power_limit_watts > s.gpu.tdp_watts || s.gpu.power_limit_watts < s.gpu.tdp_watts / 4)
      e.add("cluster.gpu.power_limit",
            fmt::format("power_limit ({:g} W) must be within [tdp / 4, tdp] = [{:g}, {:g}] W", s.gpu.power_limit_watts,
                        s.gpu.tdp_watts / 4, s.gpu.tdp_watts),
            s.gpu.power_limit_watts > s.gpu.tdp_watts
                ? "a cap above the TDP does not raise the clocks; raise peak_tflops for a faster part"
                : "the cube law is checked down to 400/700 of the TDP; far below (drivers stop near a quarter) "
                  "state the part's own peak_tflops instead");
  }
}

/// Each degree at least 1, and dp·tp·cp·pp the cluster's GPU count.
void check_degrees(const Scenario& s, Errors& e) {
  const LayoutSpec& L = s.layout;
  bool degrees_ok = true;
  for (auto [key, v] : {std::pair{"layout.dp", L.dp}, {"layout.tp", L.tp}, {"layout.pp", L.pp}, {"layout.ep", L.ep}, {"layout.cp", L.cp}}) {
    if (v < 1) {
      e.add(key, fmt::format("{} must be >= 1, got {}", std::string(key).substr(7), v), "1 disables this kind of parallelism");
      degrees_ok = false;
    }
  }
  const int devices = device_count(s.cluster);
  if (devices < 1) e.add("cluster", fmt::format("the cluster has {} GPUs", devices), "set cluster.nodes and cluster.gpus_per_node");
  if (degrees_ok && devices >= 1 && static_cast<long long>(L.dp) * L.tp * L.pp * L.cp != devices) {
    const std::string where = s.cluster.graph ? "the explicit graph"
                                              : fmt::format("{} nodes × {} GPUs", s.cluster.nodes, s.cluster.gpus_per_node);
    e.add("layout",
          L.cp > 1 ? fmt::format("dp·tp·cp·pp = {}·{}·{}·{} = {} must equal the cluster's {} GPUs ({})", L.dp, L.tp, L.cp, L.pp,
                                 static_cast<long long>(L.dp) * L.tp * L.pp * L.cp, devices, where)
                   : fmt::format("dp·tp·pp = {}·{}·{} = {} must equal the cluster's {} GPUs ({})", L.dp, L.tp, L.pp,
                                 static_cast<long long>(L.dp) * L.tp * L.pp, devices, where),
          "change a degree or the number of nodes");
  }
}

/// Context parallelism: 2·cp chunks per sequence (causal load balance), dense models.
void check_context_parallel(const LayoutSpec& L, const ModelSpec& m, Errors& e) {
  if (L.cp > 1) {
    if (m.seq_len >= 1 && m.seq_len % (2 * L.cp) != 0)
      e.add("layout.cp", fmt::format("seq_len ({}) must be divisible by 2·cp = {}: each sequence is split in 2·cp chunks, two per rank "
                                     "(causal load balance)", m.seq_len, 2 * L.cp),
            fmt::format("use a cp that divides seq_len / 2 = {}", m.seq_len / 2));
    if (m.sliding_window > 0)
      e.add("model.sliding_window",
            fmt::format("a sliding window ({} keys) with cp = {} is not modelled (which K/V chunks a rank needs depends on the window)",
                        m.sliding_window, L.cp),
            "use cp: 1, or drop sliding_window");
  }
}

/// Model keys that constrain each other: dense_layers needs MoE layers to keep dense,
/// the parallel block is a dense block, the attention kind agrees with kv_heads and
/// model.mla (after resolve() derived the attention kind).
void check_model_variants(const Scenario& s, Errors& e) {
  const ModelSpec& m = s.model;
  const MlaSpec& x = m.mla;
  const bool mla = m.attention == AttentionArch::mla;
  if (m.attention == AttentionArch::mha && m.kv_heads != m.heads)
    e.add("model.attention", fmt::format("mha gives every one of the {} heads its own K and V, but kv_heads is {}", m.heads, m.kv_heads),
          "attention: gqa, or drop kv_heads");
  if (mla) {
    if (x.kv_lora_rank <= 0) e.add("model.mla.kv_lora_rank", "missing required key: attention mla compresses K and V to this latent", "DeepSeek-V3: 512");
    if (x.rope_head_dim <= 0) e.add("model.mla.rope_head_dim", "missing required key: the rotary features per head", "DeepSeek-V3: 64");
    if (x.v_head_dim <= 0) e.add("model.mla.v_head_dim", "missing required key: the value features per head", "DeepSeek-V3: 128");
    if (m.kv_heads != m.heads)
      e.add("model.kv_heads", fmt::format("mla up-projects K and V for every head: kv_heads must be heads ({}), not {}", m.heads, m.kv_heads),
            "drop kv_heads");
    if (m.head_dim > 0)
      e.add("model.head_dim", "mla states its head widths in model.mla (nope_head_dim, rope_head_dim, v_head_dim)", "drop head_dim");
    for (const auto& target : s.training.lora.targets)
      if (s.training.method == TrainingMethod::lora && (target == "qkv" || target == "proj"))
        e.add("training.lora.targets", fmt::format("LoRA on '{}' of a latent-attention (mla) layer is not modelled", target),
              "adapt fc1/fc2 only, or use attention: mha/gqa");
  } else if (x.kv_lora_rank > 0 || x.q_lora_rank > 0 || x.rope_head_dim > 0 || x.nope_head_dim > 0 || x.v_head_dim > 0) {
    e.add("model.mla", "the latent attention's shape is read only with attention: mla", "set attention: mla, or drop mla");
  }

  if (m.mtp_depth > 0 && s.layout.embedding_free)
    e.add("model.mtp_depth", "multi-token prediction runs the output head once per module; this layout has no embedding or head",
          "drop mtp_depth, or embedding_free");
  if (m.mtp_depth > 0 && s.training.method != TrainingMethod::pretrain)
    e.add("model.mtp_depth", "multi-token prediction is a pretraining objective; fine-tuning with it is not modelled",
          "drop mtp_depth for fine-tuning");
  if (m.dense_layers > 0 && m.moe.experts <= 0)
    e.add("model.dense_layers", "dense_layers keeps the first layers of an MoE model dense; this model has no moe", "drop dense_layers");
  else if (m.dense_layers >= m.layers && m.layers > 0)
    e.add("model.dense_layers", fmt::format("dense_layers ({}) leaves none of the {} layers MoE", m.dense_layers, m.layers),
          "use fewer dense_layers, or drop moe");
  if (m.parallel_block && m.moe.experts > 0)
    e.add("model.parallel_block", "the parallel block is modelled for dense models only (GPT-J, PaLM)",
          "drop parallel_block, or moe");
}

/// Tensor parallelism splits heads, KV heads and the FFN (Megatron column/row parallel).
void check_tensor_parallel(const LayoutSpec& L, const ModelSpec& m, Errors& e) {
  if (L.tp >= 1) {
    if (m.heads >= 1 && m.heads % L.tp != 0)
      e.add("layout.tp", fmt::format("tp ({}) must divide heads ({})", L.tp, m.heads), "tensor parallelism splits attention heads");
    if (m.kv_heads >= 1 && m.kv_heads % L.tp != 0)
      e.add("layout.tp", fmt::format("tp ({}) must divide kv_heads ({})", L.tp, m.kv_heads),
            "tensor parallelism splits KV heads; use tp <= kv_heads");
    if (m.ffn_hidden >= 1 && m.ffn_hidden % L.tp != 0)
      e.add("layout.tp", fmt::format("tp ({}) must divide ffn_hidden ({})", L.tp, m.ffn_hidden), "tensor parallelism splits the MLP");
    // Routed experts split by expert_tp (checked below); shared experts by tp.
    const bool tp_splits_experts = expert_tp_of(L) == L.tp || m.moe.shared_experts > 0;
    if (m.moe.experts > 0 && tp_splits_experts && m.moe.expert_ffn_hidden > 0 && m.moe.expert_ffn_hidden % L.tp != 0)
      e.add("layout.tp", fmt::format("tp ({}) must divide expert_ffn_hidden ({})", L.tp, m.moe.expert_ffn_hidden),
            "tensor parallelism splits each expert's MLP");
  }
}

/// Expert parallelism (folded, expert_tp_of): expert_tp · ep ranks of a stage's
/// tp·cp·dp hold one copy of the experts.
void check_expert_parallel(const LayoutSpec& L, const ModelSpec& m, Errors& e) {
  if (L.ep > 1) {
    if (m.moe.experts <= 0)
      e.add("layout.ep", fmt::format("ep = {} needs an MoE model (model.moe.experts > 0)", L.ep), "set ep: 1 for a dense model");
    else if (m.moe.experts % L.ep != 0)
      e.add("layout.ep", fmt::format("ep ({}) must divide experts ({})", L.ep, m.moe.experts), "each EP rank holds experts / ep experts");
    else if (m.moe.max_nodes_per_token > 0 && m.moe.top_k >= 1 &&
             static_cast<long long>(m.moe.max_nodes_per_token) * (m.moe.experts / L.ep) < m.moe.top_k)
      // With one ep rank per node a node holds experts/ep experts: M of them must hold top_k.
      e.add("model.moe.max_nodes_per_token",
            fmt::format("max_nodes_per_token ({}) × experts / ep ({}) is under top_k ({}): a token cannot find its experts "
                        "on so few nodes", m.moe.max_nodes_per_token, m.moe.experts / L.ep, m.moe.top_k),
            "raise max_nodes_per_token, or lower ep");
  }
  if (L.expert_tp != 0 && L.expert_tp != L.tp) {
    if (m.moe.experts <= 0)
      e.add("layout.expert_tp", fmt::format("expert_tp = {} needs an MoE model (model.moe.experts > 0)", L.expert_tp),
            "leave expert_tp out for a dense model");
    const double width = m.moe.expert_ffn_hidden > 0 ? m.moe.expert_ffn_hidden : m.ffn_hidden;
    if (m.moe.experts > 0 && width >= 1 && static_cast<long long>(width) % L.expert_tp != 0)
      e.add("layout.expert_tp", fmt::format("expert_tp ({}) must divide the experts' ffn width ({})", L.expert_tp, width),
            "expert tensor parallelism splits each expert's MLP");
  }
  const long long ranks = static_cast<long long>(L.tp) * L.cp * std::max(1, L.dp), folded = static_cast<long long>(expert_tp_of(L)) * L.ep;
  if (L.dp >= 1 && m.moe.experts > 0 && folded > 0 && ranks % folded != 0)
    e.add(L.ep > 1 ? "layout.ep" : "layout.expert_tp",
          fmt::format("expert_tp·ep = {}·{} = {} must divide tp·cp·dp = {}·{}·{} = {}: the expert layers fold a stage's ranks "
                      "into expert_tp × ep × expert-dp", expert_tp_of(L), L.ep, folded, L.tp, L.cp, L.dp, ranks),
          "pick ep (and expert_tp) whose product divides tp·cp·dp");
}

/// Micro-batching, ZeRO.
void check_batching(const LayoutSpec& L, Errors& e) {
  if (L.microbatches < 1)
    e.add("layout.microbatches", fmt::format("microbatches must be >= 1, got {}", L.microbatches), "micro-batches per step per pipeline");
  if (L.microbatch_size < 1)
    e.add("layout.microbatch_size", fmt::format("microbatch_size must be >= 1, got {}", L.microbatch_size), "sequences per micro-batch");
  if (L.zero < 0 || L.zero > 3)
    e.add("layout.zero", fmt::format("zero must be 0, 1, 2 or 3, got {}", L.zero),
          "1 shards optimizer state, 2 also gradients, 3 also weights");
  if (!(L.dp_bucket_bytes > 0))
    e.add("layout.dp_bucket_bytes", fmt::format("dp bucket must be > 0 bytes, got {}", L.dp_bucket_bytes), "Megatron uses 40M parameters");
}

/// Schedule and virtual stages; returns the model chunks per stage (1 unless interleaved).
int check_schedule(const LayoutSpec& L, Errors& e) {
  const bool interleaved = L.schedule == Schedule::interleaved_1f1b;
  if (interleaved) {
    if (L.virtual_stages < 2)
      e.add("layout.virtual_stages", fmt::format("interleaved-1f1b needs virtual_stages >= 2, got {}", L.virtual_stages),
            "use schedule: 1f1b for one chunk per stage");
    if (L.pp < 2)
      e.add("layout.pp", fmt::format("interleaved-1f1b needs pp >= 2, got {}", L.pp), "use schedule: 1f1b without pipeline parallelism");
    if (L.pp >= 1 && L.microbatches >= 1 && L.microbatches % L.pp != 0)
      e.add("layout.microbatches",
            fmt::format("interleaved-1f1b needs microbatches to be a multiple of pp (Megatron-LM's rule): {} is not a multiple of {}",
                        L.microbatches, L.pp),
            [&] {
              const int pp = std::max(L.pp, 1);
              const int lo = std::max(pp, L.microbatches / pp * pp), hi = (L.microbatches / pp + 1) * pp;
              return lo == hi ? fmt::format("use {} micro-batches", lo) : fmt::format("use {} or {} micro-batches", lo, hi);
            }());
  } else if (L.schedule == Schedule::zb_v) {
    if (L.virtual_stages != 2)
      e.add("layout.virtual_stages", fmt::format("zb-v runs two chunks per stage in a V: virtual_stages must be 2, got {}", L.virtual_stages),
            "leave virtual_stages out (zb-v sets 2)");
    return 2;
  } else if (L.schedule == Schedule::dualpipe) {
    // DualPipe's reference implementation asserts an even rank count and an even
    // number of micro-batches of at least twice the ranks (half fed from each end).
    if (L.virtual_stages != 2)
      e.add("layout.virtual_stages", fmt::format("dualpipe runs two chunks per stage (one per copy of the model): virtual_stages must be 2, got {}",
                                                 L.virtual_stages),
            "leave virtual_stages out (dualpipe sets 2)");
    if (L.pp < 2 || L.pp % 2 != 0)
      e.add("layout.pp", fmt::format("dualpipe needs an even pp >= 2 (its two directions meet in the middle), got {}", L.pp),
            "use an even pp, or schedule: zb-v");
    if (L.pp >= 2 && L.microbatches >= 1 && (L.microbatches % 2 != 0 || L.microbatches < 2 * L.pp))
      e.add("layout.microbatches",
            fmt::format("dualpipe feeds half the micro-batches from each end: it needs an even number of at least 2·pp = {}, got {}",
                        2 * L.pp, L.microbatches),
            fmt::format("use {} micro-batches", std::max(2 * L.pp, L.microbatches + L.microbatches % 2)));
    if (L.cp > 1)
      e.add("layout.cp", "dualpipe with context parallelism is not modelled (its K/V exchange shares the stream the pair's all-to-alls use)",
            "use cp: 1 with dualpipe, or schedule: zb-v");
    if (L.zero >= 3)
      e.add("layout.zero", "dualpipe with ZeRO-3 is not modelled (the two passes of a pair would gather weights through one queue)",
            "use zero: 1 (DeepSeek-V3 shards its optimizer state, not its weights) or 2");
    return 1;  // one copy of the model is cut into pp chunks
  } else if (L.virtual_stages != 1) {
    e.add("layout.virtual_stages",
          fmt::format("virtual_stages = {} is only meaningful with schedule: interleaved-1f1b, zb-v or dualpipe (schedule is {})", L.virtual_stages,
                      schedule_name(L.schedule)),
          "set virtual_stages: 1 or schedule: interleaved-1f1b");
  }
  return interleaved ? std::max(L.virtual_stages, 1) : 1;
}

/// Stage layers: `v` model chunks per stage.
void check_stage_layers(const LayoutSpec& L, const ModelSpec& m, int v, Errors& e) {
  if (L.pp >= 1 && m.layers >= 1) {
    const int chunks = L.pp * v;
    switch (L.stage_layers_mode) {
      case StageLayersMode::auto_even:
        if (m.layers % chunks != 0)
          e.add("layout.pp",
                v > 1 ? fmt::format("layers ({}) must be divisible by pp·virtual_stages = {}·{} = {} for stage_layers: auto", m.layers, L.pp, v, chunks)
                      : fmt::format("layers ({}) must be divisible by pp ({}) for stage_layers: auto", m.layers, L.pp),
                "use stage_layers: balanced or an explicit list");
        break;
      case StageLayersMode::balanced:
        if (m.layers < chunks)
          e.add("layout.pp", fmt::format("layers ({}) must be at least pp·virtual_stages ({}): every chunk needs a layer", m.layers, chunks),
                "reduce pp or virtual_stages");
        break;
      case StageLayersMode::explicit_list: {
        const auto& sl = L.stage_layers;
        // With chunks per stage (v > 1): one entry per model chunk, or one per stage
        // (each stage's layers split evenly over its chunks).
        if (static_cast<int>(sl.size()) != chunks && (v == 1 || static_cast<int>(sl.size()) != L.pp)) {
          e.add("layout.stage_layers",
                v > 1 ? fmt::format("stage_layers has {} entries, {} chunks per stage need pp = {} (per stage) or pp·virtual_stages = {} "
                                    "(model-chunk order)", sl.size(), v, L.pp, chunks)
                      : fmt::format("stage_layers has {} entries, pp is {}", sl.size(), L.pp),
                "one entry per pipeline stage, or per model chunk with virtual stages");
        } else if (static_cast<int>(sl.size()) == L.pp && v > 1) {
          for (std::size_t i = 0; i < sl.size(); ++i)
            if (sl[i] < v)
              e.add("layout.stage_layers", fmt::format("stage_layers[{}] = {}: a stage of {} chunks needs at least {} layers", i, sl[i], v, v),
                    "give each chunk a layer");
        }
        // The first model chunk may hold the embedding alone and the last the LM head and
        // loss alone (Llama 3's pipeline, Dubey et al. 2024 §3.3.2); a middle chunk without
        // a layer would only relay its input.
        for (std::size_t i = 0; i < sl.size(); ++i) {
          const bool end = i == 0 || i + 1 == sl.size();
          if (sl[i] < 0)
            e.add("layout.stage_layers", fmt::format("stage_layers[{}] = {}: an entry cannot be negative", i, sl[i]),
                  "give each entry a layer count");
          else if (sl[i] == 0 && !end)
            e.add("layout.stage_layers",
                  fmt::format("stage_layers[{}] = 0: only the first and the last entry may hold no layer (the embedding alone, "
                              "or the LM head and loss alone)", i),
                  "give every middle entry a layer");
        }
        const long long sum = std::accumulate(sl.begin(), sl.end(), 0LL);
        if (sum != m.layers)
          e.add("layout.stage_layers", fmt::format("stage_layers {} sums to {}, the model has {} layers", join(sl), sum, m.layers),
                "the entries must add up to model.layers");
        break;
      }
    }
  }
}

/// layout.recompute.layers: every-K within the model, list entries distinct layers of it.
void check_recompute_layers(const LayoutSpec& L, const ModelSpec& m, Errors& e) {
  const RecomputeLayers& r = L.recompute_layers;
  if (L.recompute == Recompute::none && (!r.list.empty() || r.every != 1))
    e.add("layout.recompute.layers", "selects layers to recompute, but layout.recompute.ops is none",
          "give the ops too: recompute: {ops: full, layers: " + recompute_layers_text(r) + "}");
  if (r.list.empty() && (r.every < 1 || (m.layers >= 1 && r.every > m.layers)))
    e.add("layout.recompute.layers", fmt::format("every-{} selects no layer of the model's {}", r.every, m.layers),
          "every-K with 1 <= K <= model.layers");
  std::vector<int> seen;
  for (std::size_t i = 0; i < r.list.size(); ++i) {
    const int l = r.list[i];
    if (l < 0 || l >= m.layers)
      e.add("layout.recompute.layers", fmt::format("layers[{}] = {} is not a layer of the model (0 to {})", i, l, m.layers - 1),
            "0-based layer indices in model order");
    else if (std::find(seen.begin(), seen.end(), l) != seen.end())
      e.add("layout.recompute.layers", fmt::format("layers[{}] = {} is listed twice", i, l), "list each layer once");
    seen.push_back(l);
  }
}

/// Placement: a permutation of the mesh axes (cp optional: right after tp).
void check_placement(const LayoutSpec& L, Errors& e) {
  if (!valid_placement(L.placement)) {
    std::string got;
    for (std::size_t i = 0; i < L.placement.size(); ++i) got += (i ? ", " : "") + L.placement[i];
    const bool has_ep = std::find(L.placement.begin(), L.placement.end(), "ep") != L.placement.end();
    e.add("layout.placement", fmt::format("placement [{}] must be a permutation of tp, dp, pp (cp optional)", got),
          has_ep ? "ep is not a placement axis: expert groups are consecutive dp ranks" : "e.g. [tp, dp, pp] (fastest-varying first)");
  }
}

/// Precision and simulation.
void check_precision_and_steps(const Scenario& s, Errors& e) {
  const auto& pr = s.precision;
  if (pr.weights < 1) e.add("precision.weights", fmt::format("weights must use >= 1 byte, got {}", pr.weights), "bf16 is 2");
  if (pr.activations < 1) e.add("precision.activations", fmt::format("activations must use >= 1 byte, got {}", pr.activations), "bf16 is 2");
  for (auto [key, val] : {std::pair{"precision.gradients", pr.gradients}, {"precision.master", pr.master}, {"precision.optimizer", pr.optimizer}})
    if (val < 0) e.add(key, fmt::format("bytes per parameter must be >= 0, got {}", val), "0 means the state is not kept");
  if (s.simulation.steps < 1)
    e.add("simulation.steps", fmt::format("steps must be >= 1, got {}", s.simulation.steps), "simulate at least one step");
}

}  // namespace

int expert_tp_of(const LayoutSpec& L) { return L.expert_tp > 0 ? L.expert_tp : L.tp; }

int expert_dp_of(const LayoutSpec& L) {
  const long long folded = static_cast<long long>(expert_tp_of(L)) * std::max(1, L.ep);
  return static_cast<int>(std::max(1LL, static_cast<long long>(L.tp) * L.cp * std::max(1, L.dp) / folded));
}

ExpertCoord expert_coord(const LayoutSpec& L, const Coord& c) {
  const int etp = expert_tp_of(L), ep = std::max(1, L.ep);
  const long long u = c.tp + static_cast<long long>(L.tp) * (c.cp + static_cast<long long>(L.cp) * c.dp);
  return {static_cast<int>(u % etp), static_cast<int>(u / etp % ep), static_cast<int>(u / (static_cast<long long>(etp) * ep))};
}

int expert_dp_block(const LayoutSpec& L) {
  const long long folded = static_cast<long long>(expert_tp_of(L)) * std::max(1, L.ep), replica = static_cast<long long>(L.tp) * L.cp;
  if (folded <= replica) return replica % folded == 0 ? 1 : 0;
  return folded % replica == 0 ? static_cast<int>(folded / replica) : 0;
}

Recompute recompute_of_layer(const LayoutSpec& L, int layer) {
  const RecomputeLayers& r = L.recompute_layers;
  const bool selected = r.list.empty() ? (layer + 1) % std::max(1, r.every) == 0
                                       : std::find(r.list.begin(), r.list.end(), layer) != r.list.end();
  return selected ? L.recompute : Recompute::none;
}

double recomputed_layer_share(const LayoutSpec& L, int layers) {
  if (layers <= 0) return 0;
  int n = 0;
  for (int l = 0; l < layers; ++l) n += recompute_of_layer(L, l) != Recompute::none ? 1 : 0;
  return static_cast<double>(n) / layers;
}

std::string recompute_layers_text(const RecomputeLayers& r) {
  if (!r.list.empty()) return fmt::format("[{}]", fmt::join(r.list, ", "));
  return r.every <= 1 ? "all" : fmt::format("every-{}", r.every);
}

int device_count(const topo::ClusterSpec& c) {
  if (c.graph) {
    return static_cast<int>(std::count_if(c.graph->vertices.begin(), c.graph->vertices.end(),
                                          [](const topo::GraphVertexSpec& v) { return v.kind == "gpu"; }));
  }
  return c.nodes * c.gpus_per_node;
}

int derived_dp(const LayoutSpec& l, const topo::ClusterSpec& c) {
  if (l.dp > 0) return l.dp;
  const std::int64_t rest = std::int64_t{l.tp} * l.pp * l.cp;
  const int n = device_count(c);
  return rest > 0 && n > 0 && n % rest == 0 ? static_cast<int>(n / rest) : 1;
}

std::vector<LayoutError> validate(const Scenario& s) {
  Errors e;
  const LayoutSpec& L = s.layout;
  const ModelSpec& m = s.model;
  // One rule family at a time, in the order the errors are listed.
  check_model(m, e);
  check_hardware(s, e);
  check_degrees(s, e);
  check_context_parallel(L, m, e);
  check_model_variants(s, e);
  check_tensor_parallel(L, m, e);
  check_expert_parallel(L, m, e);
  check_batching(L, e);
  const int v = check_schedule(L, e);
  check_stage_layers(L, m, v, e);
  check_recompute_layers(L, s.model, e);
  check_placement(L, e);
  check_precision_and_steps(s, e);
  for (auto& x : validate_memory_options(s)) e.add(std::move(x.key_path), std::move(x.message), std::move(x.hint));
  return std::move(e.list);
}

bool valid_placement(const std::vector<std::string>& placement) {
  std::vector<std::string> sorted = placement;
  std::sort(sorted.begin(), sorted.end());
  return sorted == std::vector<std::string>{"dp", "pp", "tp"} || sorted == std::vector<std::string>{"cp", "dp", "pp", "tp"};
}

std::vector<std::string> placement_with_cp(const std::vector<std::string>& placement) {
  if (std::find(placement.begin(), placement.end(), "cp") != placement.end()) return placement;
  std::vector<std::string> out;
  for (const auto& a : placement) {
    out.push_back(a);
    if (a == "tp") out.push_back("cp");
  }
  return out;
}

Mesh::Mesh(int dp, int tp, int pp, const std::vector<std::string>& placement, int cp) : dp_(dp), tp_(tp), pp_(pp), cp_(cp) {
  if (dp < 1 || tp < 1 || pp < 1 || cp < 1)
    throw std::invalid_argument(fmt::format("Mesh: degrees must be >= 1 (dp {}, tp {}, pp {}, cp {})", dp, tp, pp, cp));
  if (!valid_placement(placement)) throw std::invalid_argument("Mesh: placement must be a permutation of tp, dp, pp (and cp)");
  int stride = 1;
  std::size_t k = 0;
  for (const auto& axis : placement_with_cp(placement)) {
    if (axis == "tp") { stride_tp_ = stride; stride *= tp; order_[k] = &Coord::tp; degree_[k] = tp; }
    else if (axis == "cp") { stride_cp_ = stride; stride *= cp; order_[k] = &Coord::cp; degree_[k] = cp; }
    else if (axis == "dp") { stride_dp_ = stride; stride *= dp; order_[k] = &Coord::dp; degree_[k] = dp; }
    else { stride_pp_ = stride; stride *= pp; order_[k] = &Coord::pp; degree_[k] = pp; }
    ++k;
  }
}

void Mesh::next(Coord& c) const {
  for (std::size_t k = 0; k < order_.size(); ++k) {
    int& x = c.*order_[k];
    if (++x < degree_[k]) return;
    x = 0;
  }
}

Coord Mesh::coord(int rank) const {
  if (rank < 0 || rank >= size()) throw std::out_of_range(fmt::format("Mesh: rank {} outside 0..{}", rank, size() - 1));
  return Coord{(rank / stride_dp_) % dp_, (rank / stride_tp_) % tp_, (rank / stride_pp_) % pp_, (rank / stride_cp_) % cp_};
}

int Mesh::rank(Coord c) const {
  if (c.dp < 0 || c.dp >= dp_ || c.tp < 0 || c.tp >= tp_ || c.pp < 0 || c.pp >= pp_ || c.cp < 0 || c.cp >= cp_)
    throw std::out_of_range(fmt::format("Mesh: coordinate (dp {}, tp {}, pp {}, cp {}) outside ({}, {}, {}, {})", c.dp, c.tp, c.pp,
                                        c.cp, dp_, tp_, pp_, cp_));
  return c.dp * stride_dp_ + c.tp * stride_tp_ + c.pp * stride_pp_ + c.cp * stride_cp_;
}

int grad_reduce_bytes(const Scenario& s) { return s.precision.grad_reduce > 0 ? s.precision.grad_reduce : s.precision.gradients; }

double grad_accumulation_bytes_per_param(const Scenario& s, int microbatch) {
  const LayoutSpec& L = s.layout;
  if (L.zero >= 2 && !L.accumulate_unsharded) return 0;
  const double w = s.precision.weights, g = s.precision.gradients;
  switch (s.implementation.grad_accumulation) {
    case GradAccumulation::fused: return 0;
    case GradAccumulation::buffer: return w + 2 * g;  // read the new one, read and write the sum
    case GradAccumulation::autograd: return microbatch == 0 ? 0 : 3 * w;  // the first becomes .grad as it is
  }
  return 0;
}

std::vector<int> even_stage_layers(int layers, int parts) {
  if (parts < 1 || layers < parts)
    throw std::invalid_argument(fmt::format("even_stage_layers: cannot split {} layers into {} non-empty parts", layers, parts));
  std::vector<int> out(static_cast<std::size_t>(parts), layers / parts);
  for (int i = 0; i < layers % parts; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

std::vector<int> balanced_stage_layers(int layers, int pp, const std::vector<double>& extra) {
  if (pp < 1 || layers < pp)
    throw std::invalid_argument(fmt::format("balanced_stage_layers: cannot split {} layers into {} non-empty stages", layers, pp));
  auto extra_of = [&](int i) { return static_cast<std::size_t>(i) < extra.size() ? extra[static_cast<std::size_t>(i)] : 0.0; };
  // For a target cost T, stage i can take at most floor(T − extra_i) layers (≥ 1);
  // the smallest T whose capacities reach `layers` minimises the worst stage.
  // Bisection on T (100 halvings of a range ≤ layers + max extra) finds it far
  // below the resolution of one layer.
  auto capacity = [&](double T) {
    long long sum = 0;
    for (int i = 0; i < pp; ++i) sum += std::max(1LL, static_cast<long long>(std::floor(T - extra_of(i) + 1e-9)));
    return sum;
  };
  double lo = 0, hi = layers;
  for (int i = 0; i < pp; ++i) hi = std::max(hi, layers + extra_of(i));
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (capacity(mid) >= layers ? hi : lo) = mid;
  }
  std::vector<int> out(static_cast<std::size_t>(pp));
  long long sum = 0;
  for (int i = 0; i < pp; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<int>(std::max(1LL, static_cast<long long>(std::floor(hi - extra_of(i) + 1e-9))));
    sum += out[static_cast<std::size_t>(i)];
  }
  // Capacities at the optimum may exceed `layers`: take the surplus from the latest
  // stages first (ties towards earlier stages keep their layers).
  for (int i = pp - 1; i >= 0 && sum > layers; --i) {
    const long long take = std::min<long long>(sum - layers, out[static_cast<std::size_t>(i)] - 1);
    out[static_cast<std::size_t>(i)] -= static_cast<int>(take);
    sum -= take;
  }
  return out;
}

std::vector<int> model_chunk_layers(const LayoutSpec& layout, int layers) {
  const int v = layout.schedule == Schedule::interleaved_1f1b ? std::max(layout.virtual_stages, 1) : 1;
  const int chunks = layout.pp * v;
  if (layout.stage_layers_mode == StageLayersMode::explicit_list) {
    const auto& sl = layout.stage_layers;
    const long long sum = std::accumulate(sl.begin(), sl.end(), 0LL);
    if (static_cast<int>(sl.size()) != chunks || sum != layers ||
        std::any_of(sl.begin(), sl.end(), [](int n) { return n < 0; }))
      throw std::invalid_argument(fmt::format("stage_layers {} does not split {} layers into {} chunks", join(sl), layers, chunks));
    return sl;
  }
  return even_stage_layers(layers, chunks);
}

LayerRange chunk_layer_range(const std::vector<int>& chunk_layers, int pp, int stage, int chunk) {
  const int k = chunk * pp + stage;
  if (pp < 1 || stage < 0 || stage >= pp || chunk < 0 || k >= static_cast<int>(chunk_layers.size()))
    throw std::out_of_range(fmt::format("chunk_layer_range: stage {} chunk {} outside {} model chunks of pp {}", stage, chunk,
                                        chunk_layers.size(), pp));
  const int begin = std::accumulate(chunk_layers.begin(), chunk_layers.begin() + k, 0);
  return {begin, begin + chunk_layers[static_cast<std::size_t>(k)]};
}

std::vector<int> stage_layer_counts(const std::vector<int>& chunk_layers, int pp) {
  if (pp < 1 || chunk_layers.size() % static_cast<std::size_t>(pp) != 0)
    throw std::invalid_argument(fmt::format("stage_layer_counts: {} chunks do not divide into pp {}", chunk_layers.size(), pp));
  std::vector<int> out(static_cast<std::size_t>(pp), 0);
  for (std::size_t k = 0; k < chunk_layers.size(); ++k) out[k % static_cast<std::size_t>(pp)] += chunk_layers[k];
  return out;
}

bool pipeline_sends_block(const Scenario& s) {
  const P2pOverlap o = s.implementation.p2p_overlap;
  if (s.layout.schedule == Schedule::dualpipe) return false;
  return o == P2pOverlap::none || (o == P2pOverlap::interleaved && s.layout.schedule != Schedule::interleaved_1f1b);
}

}  // namespace ls::wl

// workloads/cost/training_method.cpp — trained and frozen parameters, LoRA adapters (see
// training_method.hpp).
#include "workloads/cost/training_method.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "workloads/model/model.hpp"

namespace ls::wl {

namespace {

bool lists(const std::vector<std::string>& v, std::string_view name) { return std::find(v.begin(), v.end(), name) != v.end(); }
bool gpt_style(const ModelSpec& m) { return m.activation == Activation::gelu; }
/// The attention's parameters, as model.cpp counts them.
double attention_part(const ModelSpec& m) { return attention_params(m); }
/// The pre-norms of a layer (model.cpp's norms_per_layer × norm_params).
double norms_part(const ModelSpec& m) { return norms_per_layer(m) * norm_params(m); }
/// A layer's parameters without its routed experts.
double dense_part(const ModelSpec& m, int layer) {
  return layer_params(m, layer) - (layer_is_moe(m, layer) ? m.moe.experts * expert_params(m) : 0.0);
}

/// One adapted linear on one device: A is in_local × r, B is r × out_local.
struct Adapter {
  std::string_view name;
  double in_local = 0, out_local = 0;
};

std::vector<Adapter> adapters(const ModelSpec& m, const LoraSpec& lora, int layer, int tp) {
  const AttentionShape A = attention_shape(m);
  const double h = static_cast<double>(m.hidden), t = tp, kv = A.k_width() + A.v_width();
  const double f = static_cast<double>(m.ffn_hidden), gate = gpt_style(m) ? 1 : 2;
  std::vector<Adapter> out;
  for (const auto& target : lora.targets) {
    if (target == "qkv") out.push_back({"lora.qkv", h, (A.q_width() + kv) / t});      // column-parallel: B split
    else if (target == "proj") out.push_back({"lora.proj", A.context_width() / t, h});  // row-parallel: A split
    else if (layer_is_moe(m, layer)) continue;                                // routed experts keep no adapters
    else if (target == "fc1") out.push_back({"lora.fc1", h, gate * f / t});
    else if (target == "fc2") out.push_back({"lora.fc2", f / t, h});
  }
  return out;
}

Kernel gemm_kernel(std::string_view name, GemmShape shape) {
  Kernel k;
  k.name = name;
  k.category = KernelCategory::gemm;
  k.kind = KernelKind::gemm;
  k.shape = shape;
  k.flops = shape.flops();
  k.executed_flops = k.flops;
  return k;
}

Kernel memory_kernel(std::string_view name, double bytes, double saved = 0) {
  Kernel k;
  k.name = name;
  k.kind = KernelKind::memory;
  k.category = KernelCategory::elementwise;
  k.bytes = bytes;
  k.saved_bytes = saved;
  return k;
}

/// LoRA's kernels of one pass of one layer (see training_kernels).
std::vector<Kernel> lora_kernels(const Scenario& s, int layer, LayerPass pass, const KernelOptions& o) {
  std::vector<Kernel> out;
  if (s.training.method != TrainingMethod::lora) return out;
  if (pass == LayerPass::recompute && o.recompute != Recompute::full) return out;
  const double T = o.microbatch_size * static_cast<double>(s.model.seq_len), r = s.training.lora.rank, ab = o.activation_bytes;
  const bool drop = s.training.lora.dropout > 0;
  for (const auto& a : adapters(s.model, s.training.lora, layer, o.tp)) {
    switch (pass) {
      case LayerPass::forward:
      case LayerPass::recompute:
        // The dropped input and its 1-byte mask are kept for dA; X·A (T×r) for dB.
        if (drop) {
          out.push_back(memory_kernel("lora.dropout", T * a.in_local * (2 * ab + 1), T * a.in_local * (ab + 1)));
          out.back().random_elements = T * a.in_local;
        }
        out.push_back(gemm_kernel("lora.a", {T, r, a.in_local}));
        out.push_back(gemm_kernel("lora.b", {T, a.out_local, r}));
        out.back().saved_bytes = T * r * ab;
        out.push_back(memory_kernel("lora.scale_add", 3 * T * a.out_local * ab));  // Y += (alpha/r)·XAB
        break;
      case LayerPass::backward_input:
        out.push_back(gemm_kernel("lora.b.dgrad", {T, r, a.out_local}));
        out.push_back(gemm_kernel("lora.a.dgrad", {T, a.in_local, r}));
        out.push_back(memory_kernel("lora.dgrad_add", 3 * T * a.in_local * ab));  // into the base linear's dX
        break;
      case LayerPass::backward_weight:
        out.push_back(gemm_kernel("lora.b.wgrad", {r, a.out_local, T}));
        out.push_back(gemm_kernel("lora.a.wgrad", {a.in_local, r, T}));
        break;
    }
  }
  return out;
}

/// Does this weight-gradient kernel belong to a frozen part?
bool frozen_kernel(const TrainingSpec& t, KernelPart part, const Kernel& k) {
  if (part == KernelPart::embedding) return is_frozen(t, "embedding");  // its backward is all weight gradient
  const std::string_view n = k.name;
  if (n.size() < 6 || n.substr(n.size() - 6) != ".wgrad") return false;
  if (part == KernelPart::head) return is_frozen(t, "head");
  if (n.rfind("qkv", 0) == 0 || n.rfind("attention.", 0) == 0) return is_frozen(t, "attention");
  return is_frozen(t, "mlp");  // mlp, router, experts, shared experts
}

}  // namespace

const char* training_method_name(TrainingMethod m) {
  switch (m) {
    case TrainingMethod::pretrain: return "pretrain";
    case TrainingMethod::full_finetune: return "full-finetune";
    case TrainingMethod::lora: return "lora";
  }
  return "pretrain";
}

const std::vector<std::string>& frozen_part_names() {
  static const std::vector<std::string> names{"embedding", "head", "attention", "mlp", "norms", "layers"};
  return names;
}

const std::vector<std::string>& lora_target_names() {
  static const std::vector<std::string> names{"qkv", "proj", "fc1", "fc2"};
  return names;
}

bool is_frozen(const TrainingSpec& t, std::string_view part) {
  if (t.method == TrainingMethod::lora) return true;
  if (lists(t.frozen, part)) return true;
  return (part == "attention" || part == "mlp" || part == "norms") && lists(t.frozen, "layers");
}

double lora_params_on_device(const Scenario& s, int layer) {
  if (s.training.method != TrainingMethod::lora) return 0;
  double p = 0;
  for (const auto& a : adapters(s.model, s.training.lora, layer, s.layout.tp)) p += (a.in_local + a.out_local) * s.training.lora.rank;
  return p;
}

double trained_fraction_dense(const Scenario& s, int layer) {
  const auto& t = s.training;
  const double all = dense_part(s.model, layer);
  if (all <= 0) return 0;
  const double attn = attention_part(s.model), norms = norms_part(s.model);
  double trained = all;
  if (is_frozen(t, "attention")) trained -= attn;
  if (is_frozen(t, "norms")) trained -= norms;
  if (is_frozen(t, "mlp")) trained -= all - attn - norms;
  return std::clamp(trained / all, 0.0, 1.0);
}

double trained_fraction_experts(const Scenario& s) { return is_frozen(s.training, "mlp") ? 0.0 : 1.0; }

ParameterSplit parameter_split(const Scenario& s) {
  const auto& m = s.model;
  ParameterSplit out;
  double base = 0, trained = 0;
  for (int l = 0; l < block_count(m); ++l) {
    // An MTP module (pretraining only) is trained whole: its block and its entry.
    const double dense = dense_part(m, l) + (is_mtp_block(m, l) ? mtp_entry_params(m) : 0.0),
                 experts = layer_params(m, l) - dense_part(m, l);
    base += dense + experts;
    trained += dense * trained_fraction_dense(s, l) + experts * trained_fraction_experts(s);
    if (s.training.method == TrainingMethod::lora)
      for (const auto& a : adapters(m, s.training.lora, l, 1)) out.adapters += (a.in_local + a.out_local) * s.training.lora.rank;
  }
  const double emb = embedding_params(m), head = lm_head_params(m), fnorm = final_norm_params(m);
  base += emb + head + fnorm;
  if (!is_frozen(s.training, "embedding")) trained += emb;
  if (!is_frozen(s.training, "head")) trained += head;
  if (!is_frozen(s.training, "norms")) trained += fnorm;
  out.trained = trained + out.adapters;
  out.frozen = base - trained;
  return out;
}

StateBytes training_state_bytes(double trained, double frozen, const PrecisionSpec& prec, int zero, int dp) {
  StateBytes sb = state_bytes(trained, prec, zero, dp);
  sb.weights += frozen * prec.weights / (zero >= 3 ? std::max(1, dp) : 1);
  return sb;
}

std::vector<Kernel> training_kernels(const Scenario& s, int layer, KernelPart part, LayerPass pass, const KernelOptions& o,
                                     std::vector<Kernel> base, double& flops_delta) {
  const auto& t = s.training;
  if (t.method != TrainingMethod::lora && t.frozen.empty()) return base;
  std::vector<Kernel> out;
  out.reserve(base.size());
  for (auto& k : base) {
    const bool weight_pass = pass == LayerPass::backward_weight;
    if (weight_pass && frozen_kernel(t, part, k)) {
      flops_delta -= k.flops;
      continue;
    }
    out.push_back(std::move(k));
  }
  if (part == KernelPart::layer)
    for (auto& k : lora_kernels(s, layer, pass, o)) {
      flops_delta += k.flops;
      out.push_back(std::move(k));
    }
  return out;
}

double lora_activation_bytes(const Scenario& s, int layer, const KernelOptions& o, bool ignore_recompute) {
  if (!ignore_recompute && o.recompute == Recompute::full) return 0;  // rebuilt from the layer input
  double saved = 0;
  for (const auto& k : lora_kernels(s, layer, LayerPass::forward, o)) saved += k.saved_bytes;
  return saved;
}

std::vector<ScenarioIssue> training_issues(const Scenario& s) {
  std::vector<ScenarioIssue> out;
  const auto& c = s.checkpoint;
  if (c.enabled && c.every_steps <= 0 && c.every_s <= 0)
    out.push_back({"checkpoint.every", "missing: how often a checkpoint is written", "e.g. every: \"500 steps\" or \"30 min\"",
                   "checkpoint", false});
  if (c.enabled && c.storage_Bps <= 0 && c.storage_per_node_Bps <= 0)
    out.push_back({"checkpoint.storage_bandwidth", "missing: the storage's write rate",
                   "e.g. storage_bandwidth: \"20 GB/s\" (aggregate) or storage_bandwidth_per_node: \"2 GB/s\"", "checkpoint", false});
  if (s.failures.mtbf_per_gpu_s > 0 && !c.enabled)
    out.push_back({"failures", "a failure model needs a checkpoint to restart from",
                   "add checkpoint: {every: \"500 steps\", storage_bandwidth: \"20 GB/s\"}", "", false});
  if (s.training.method == TrainingMethod::lora && s.training.lora.rank > s.model.hidden)
    out.push_back({"training.lora.rank",
                   fmt::format("rank {} is larger than the hidden size {}: not a low-rank adapter", s.training.lora.rank, s.model.hidden),
                   "ranks of 8 to 64 are usual", "", true});
  if (s.training.method != TrainingMethod::lora && is_frozen(s.training, "embedding") && is_frozen(s.training, "head") &&
      is_frozen(s.training, "attention") && is_frozen(s.training, "mlp") && is_frozen(s.training, "norms"))
    out.push_back({"training.frozen", "every part is frozen: nothing is trained", "use method: lora, or unfreeze a part", "", true});
  return out;
}

}  // namespace ls::wl

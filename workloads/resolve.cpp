// workloads/resolve.cpp — derive the unset fields, then validate once.
#include "workloads/resolve.hpp"
#include "workloads/cost/training_method.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "topology/cluster.hpp"
#include "workloads/spec/did_you_mean.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/cost/hardware_checks.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/time_range.hpp"

namespace ls::wl {
namespace {

constexpr std::size_t kMaxHintedNames = 20;  // unknown link names that get a did-you-mean

void throw_if_any(std::vector<ScenarioIssue>& issues) {
  if (!issues.empty()) throw InvalidScenario(std::move(issues));
}

/// `s` with each byte that does not start a well-formed UTF-8 sequence (RFC 3629: no
/// overlong forms, no surrogates, at most U+10FFFF) replaced by U+FFFD: a file name is
/// any bytes, but the name it gives ends up in the JSON summary and the Chrome trace,
/// which must be UTF-8.
std::string utf8_or_replaced(const std::string& s) {
  std::string out;
  const auto byte = [&](std::size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned c = byte(i);
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {  // E0: no overlong form; ED: no surrogate
      len = 3;
      lo = c == 0xE0 ? 0xA0 : 0x80;
      hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {  // F0: no overlong form; F4: at most U+10FFFF
      len = 4;
      lo = c == 0xF0 ? 0x90 : 0x80;
      hi = c == 0xF4 ? 0x8F : 0xBF;
    }
    bool ok = len > 0;
    for (std::size_t k = 1; ok && k < len; ++k) {
      const unsigned b = byte(i + k);
      ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

/// "dir/llama.yaml" → "llama"; the built-in scenario is "default".
std::string name_from_source(const std::string& source) {
  if (source == "<default>") return "default";
  std::string n = source;
  if (auto p = n.find_last_of('/'); p != std::string::npos) n = n.substr(p + 1);
  if (auto p = n.find_last_of('.'); p != std::string::npos && p > 0) n = n.substr(0, p);
  return n.empty() ? "scenario" : utf8_or_replaced(n);
}

bool gpu_unset(const GpuSpec& g) { return g.name.empty() && g.peak_flops == 0; }

void derive_links(Scenario& s, std::vector<ScenarioIssue>& issues) {
  auto& c = s.cluster;
  // An explicit graph carries its own rates; the generator's are then never read.
  if (c.graph) {
    if (!(c.intra.bandwidth_Bps > 0)) c.intra.bandwidth_Bps = DerivedDefaults::idle_intra_bandwidth_Bps();
    if (!(c.inter.bandwidth_Bps > 0)) c.inter.bandwidth_Bps = DerivedDefaults::idle_inter_bandwidth_Bps();
    return;
  }
  // Link rates follow the GPU (H100: NVLink 4 450 GB/s per direction, one 400 Gb/s
  // NIC per GPU — per the preset's datasheet citations in hardware.cpp).
  if (!(c.intra.bandwidth_Bps > 0)) {
    if (s.gpu.nvlink_bandwidth_Bps > 0) c.intra.bandwidth_Bps = s.gpu.nvlink_bandwidth_Bps;
    else if (c.gpus_per_node > 1)
      issues.push_back({"cluster.intra_node.bandwidth", "missing: the GPU has no nvlink_bandwidth to default from",
                        "give cluster.intra_node.bandwidth or cluster.gpu.nvlink_bandwidth", "cluster", false});
    else c.intra.bandwidth_Bps = DerivedDefaults::idle_intra_bandwidth_Bps();
  }
  if (!(c.inter.bandwidth_Bps > 0)) {
    if (s.gpu.nic_bandwidth_Bps > 0) c.inter.bandwidth_Bps = s.gpu.nic_bandwidth_Bps;
    else if (c.nodes > 1)
      issues.push_back({"cluster.inter_node.bandwidth", "missing: the GPU has no nic_bandwidth to default from",
                        "give cluster.inter_node.bandwidth or cluster.gpu.nic_bandwidth", "cluster", false});
    else c.inter.bandwidth_Bps = DerivedDefaults::idle_inter_bandwidth_Bps();
  }
}

void derive_model(ModelSpec& m) {
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  if (!m.bias) m.bias = m.activation == Activation::gelu;  // GPT style has biases, Llama style none
  if (!m.attention) m.attention = m.kv_heads < m.heads ? AttentionArch::gqa : AttentionArch::mha;
  if (m.attention == AttentionArch::mla && m.mla.nope_head_dim == 0) m.mla.nope_head_dim = m.mla.v_head_dim;
  if (m.ffn_hidden == 0) m.ffn_hidden = DerivedDefaults::ffn_hidden_per_hidden * m.hidden;
  if (m.moe.experts > 0 && m.moe.expert_ffn_hidden == 0) m.moe.expert_ffn_hidden = m.ffn_hidden;
}

void derive_layout(Scenario& s, std::vector<ScenarioIssue>& issues) {
  auto& l = s.layout;
  // zb-v and dualpipe always run two chunks per stage (the V; the two copies):
  // virtual_stages left at 1 means 2.
  if (two_chunks_per_stage(l.schedule) && l.virtual_stages == 1) l.virtual_stages = 2;
  // dp is whatever the other degrees leave of the cluster.
  if (l.dp == 0) l.dp = derived_dp(l, s.cluster);
  if (l.global_batch > 0 && l.microbatch_size >= 1 && l.dp >= 1) {
    const std::int64_t per = std::int64_t{l.microbatch_size} * l.dp;
    const std::int64_t gb = l.global_batch;
    if (gb % per != 0) {
      const std::int64_t lo = gb / per * per;
      issues.push_back({"layout.global_batch",
                        fmt::format("{} is not a multiple of microbatch_size·dp = {}·{} = {}", gb, l.microbatch_size, l.dp, per),
                        lo > 0 ? fmt::format("try {} or {}", lo, lo + per) : fmt::format("try {}", per), "", true});
    } else if (gb / per > kMaxMicrobatches) {
      issues.push_back({"layout.global_batch", fmt::format("gives {} micro-batches, at most {}", gb / per, kMaxMicrobatches), "",
                        "", true});
    } else {
      l.microbatches = static_cast<int>(gb / per);
    }
  }
}

/// Bounded work for bounded input: the size of the step's programs, estimated from
/// the counts alone, against kMaxLayerPasses (resolve.hpp), blaming the larger of
/// micro-batches and layers per stage.
void check_work(const Scenario& s, std::vector<ScenarioIssue>& issues) {
  const auto& l = s.layout;
  const std::int64_t devices = device_count(s.cluster);
  const std::int64_t pp = std::max(1, l.pp), micro = std::max(1, l.microbatches);
  const std::int64_t per_stage = (std::int64_t{s.model.layers} + pp - 1) / pp + 1;
  if (devices <= 0) return;
  // Overflow-safe: each factor is below 2^31, so compare by division.
  if (micro > kMaxLayerPasses / devices || per_stage > kMaxLayerPasses / (devices * micro)) {
    const bool blame_micro = micro >= per_stage;
    issues.push_back({blame_micro ? "layout.microbatches" : "model.layers",
                      fmt::format("the step would hold {} devices × {} micro-batches × {} layers per stage (+1) = {:.3g} layer "
                                  "passes, above the limit of {} (about 2.5 GB and a minute of simulation)",
                                  devices, micro, per_stage - 1,
                                  static_cast<double>(devices) * static_cast<double>(micro) * static_cast<double>(per_stage),
                                  kMaxLayerPasses),
                      blame_micro ? "use fewer micro-batches (a larger microbatch_size) or a smaller cluster"
                                  : "use fewer layers, more pipeline stages or a smaller cluster",
                      "", false});
  }
}

/// The topology exists only once built: build it (O(links)) so that a cluster that
/// cannot be built is a user error here, not a failure inside simulate(); then check
/// every perturbed device and link name against it, with the nearest real names as
/// the hint, and that the links taken down (factor 0) leave every GPU reachable.
void check_topology(const Scenario& s, std::vector<ScenarioIssue>& issues) {
  std::optional<topo::Cluster> cluster;
  try {
    cluster.emplace(topo::Cluster::build(s.cluster));
  } catch (const std::exception& e) {
    // The builder names the key it rejects first ("cluster.inter_node.spines: ..."):
    // point there when it is one, else at the cluster.
    const std::string what = e.what();
    const auto end = what.find_first_of(": ");
    const std::string key = what.substr(0, end);
    const bool named = what.rfind("cluster.", 0) == 0 && end != std::string::npos && key != "cluster.down_links";
    const std::string rest = named ? what.substr(what.find_first_not_of(": ", end)) : what;
    issues.push_back({named ? key : "cluster", rest, "", "", false});
    return;
  }
  for (std::size_t i = 0; i < s.perturbations.devices.size(); ++i) {
    const std::string& name = s.perturbations.devices[i].device;
    if (cluster->gpu_index(name) < 0)
      issues.push_back({fmt::format("perturbations.devices[{}].device", i), fmt::format("no device \"{}\" in this cluster", name),
                        fmt::format("devices are named like '{}'", cluster->gpu_name(0)), "", false});
    if (s.perturbations.devices[i].drift_per_step > 0 && s.simulation.steps < 2)
      issues.push_back({fmt::format("perturbations.devices[{}].drift.per_step", i),
                        "grows the slowdown from one step to the next, and simulation.steps is 1: it would change nothing",
                        "set simulation.steps to the number of steps to watch", "", false});
  }
  std::vector<std::string> names;
  // Each link may be perturbed once ("a<->b" covers "a->b"): a second entry would
  // silently win. Link id → the entry that perturbs it.
  std::unordered_map<sim::LinkId, std::size_t> perturbed_by;
  std::size_t unknown = 0;
  for (std::size_t i = 0; i < s.perturbations.links.size(); ++i) {
    const std::string& name = s.perturbations.links[i].link;
    const auto found = cluster->find_links(name);
    if (!found.empty()) {
      for (const sim::LinkId id : found) {
        const auto [it, fresh] = perturbed_by.emplace(id, i);
        if (fresh) continue;
        issues.push_back({fmt::format("perturbations.links[{}].link", i),
                          fmt::format("link '{}' is already perturbed by perturbations.links[{}] ('{}')",
                                      cluster->link(id).name, it->second, s.perturbations.links[it->second].link),
                          "give each link one entry", "", true});
        break;
      }
      continue;
    }
    if (names.empty())
      for (std::size_t l = 0; l < cluster->link_count(); ++l) names.push_back(cluster->link(static_cast<sim::LinkId>(l)).name);
    // Did-you-mean scans every link name: only for the first few unknown names, so
    // 100,000 of them stay linear (only the first 20 errors are shown anyway).
    const std::string near = ++unknown <= kMaxHintedNames ? closest_match(name, names, 4) : std::string();
    issues.push_back({fmt::format("perturbations.links[{}].link", i), fmt::format("no link named '{}' in this cluster", name),
                      near.empty() ? fmt::format("links are named FROM->TO, e.g. '{}'", names.front())
                                   : fmt::format("did you mean '{}'?", near),
                      "", false});
  }
  if (!issues.empty()) return;
  topo::ClusterSpec down = s.cluster;
  for (const auto& lf : s.perturbations.links)
    if (lf.bandwidth_factor == 0) down.down_links.push_back(lf.link);
  if (down.down_links.empty()) return;
  try {
    (void)topo::Cluster::build(down);
  } catch (const std::exception& e) {
    issues.push_back({"perturbations.links", e.what(), "", "", false});
  }
}

/// The stages of resolve() that read the layout and the implementation switches: the
/// layout's derived fields, then its rules, then the work's bounds, each stage only when
/// the one before passes. Throws InvalidScenario with `issues` (those found before it
/// too, reported with the first stage's).
void resolve_layout(Scenario& s, std::vector<ScenarioIssue>& issues) {
  derive_layout(s, issues);
  if (s.layout.schedule == Schedule::dualpipe && s.implementation.tp_comm_overlap && s.layout.tp > 1)
    // Both would thread collectives through the one side stream the pair's all-to-alls use.
    issues.push_back({"implementation.tp_comm_overlap", "dualpipe with TP communication overlap is not modelled",
                      "set implementation.tp_comm_overlap: false with dualpipe (DeepSeek-V3 trains it at tp 1)", "", false});
  for (auto& issue : hardware_issues(s)) issues.push_back(std::move(issue));
  throw_if_any(issues);

  for (auto& e : validate(s)) issues.push_back({std::move(e.key_path), std::move(e.message), std::move(e.hint), "", false});
  for (auto& e : training_issues(s)) issues.push_back(std::move(e));  // training.*, checkpoint.*, failures.*
  throw_if_any(issues);

  check_work(s, issues);
  throw_if_any(issues);
}

}  // namespace

ResolvedScenario resolve_variant(const ResolvedScenario& base, const LayoutSpec& layout, const ImplementationSpec& implementation) {
  Scenario s = base.scenario();
  s.layout = layout;
  s.implementation = implementation;
  std::vector<ScenarioIssue> issues;
  resolve_layout(s, issues);
  return ResolvedScenario(std::move(s));
}

double DerivedDefaults::idle_intra_bandwidth_Bps() { return topo::ClusterSpec{}.intra.bandwidth_Bps; }
double DerivedDefaults::idle_inter_bandwidth_Bps() { return topo::ClusterSpec{}.inter.bandwidth_Bps; }

ResolvedScenario resolve(Scenario s) {
  std::vector<ScenarioIssue> issues;
  if (s.name.empty()) s.name = name_from_source(s.source);
  if (gpu_unset(s.gpu)) s.gpu = *gpu_preset(DerivedDefaults::gpu_preset);
  // Whether a link rate is the user's or the GPU's decides which key a time-range
  // error blames (time_range.hpp).
  const LinkRateOrigin origin{!(s.cluster.intra.bandwidth_Bps > 0), !(s.cluster.inter.bandwidth_Bps > 0)};
  derive_links(s, issues);
  derive_model(s.model);
  // The framework's per-kernel constants and the per-GPU speed spread come with its preset
  // unless the scenario states them (implementation_profile.hpp).
  const auto bundle = implementation_preset(s.implementation.preset);
  if (bundle && s.implementation.compute_variability < 0) s.implementation.compute_variability = bundle->compute_variability;
  if (s.implementation.profile.name.empty()) {
    if (bundle)
      s.implementation.profile = bundle->profile;
    else
      issues.push_back({"implementation.preset", fmt::format("unknown implementation preset '{}'", s.implementation.preset),
                        "", "", false});
  }
  // fp32 weights are their own master copy.
  if (s.precision.master < 0) s.precision.master = s.precision.weights == 4 ? 0 : 4;
  resolve_layout(s, issues);

  check_topology(s, issues);
  throw_if_any(issues);

  // Last: a step past int64 picoseconds is located here, not found mid-simulation.
  check_time_range(s, origin, issues);
  throw_if_any(issues);
  return ResolvedScenario(std::move(s));
}

}  // namespace ls::wl

// tools/study/reshard.cpp — see reshard.hpp.
#include "tools/study/reshard.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/report/atomic_file.hpp"
#include "tools/scenario/scenario.hpp"
#include "tools/report/human_units.hpp"
#include "tools/scenario/yaml_tree.hpp"
#include "workloads/build/stage_layers.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/cost/training_method.hpp"

namespace ls::tools {

namespace {

/// A parameter group's place and size in one layout: the stage that holds it and its
/// trained parameters (all tp slices together).
struct Group {
  int stage = 0;
  double params = 0;
};

/// Groups in model order: embedding, layers 0..L-1, LM head.
std::vector<Group> groups(const wl::Scenario& s) {
  const wl::DeviceParams params(s);
  const wl::StageLayers layers = wl::stage_layers(s);
  const int t = s.layout.tp, L = s.model.layers;
  std::vector<Group> out(static_cast<std::size_t>(L) + 2);
  for (int st = 0; st < s.layout.pp; ++st)
    for (const auto& ch : layers.chunks[static_cast<std::size_t>(st)])
      for (int l = ch.begin; l < ch.end; ++l) out[static_cast<std::size_t>(l) + 1].stage = st;
  for (int l = 0; l < L; ++l) out[static_cast<std::size_t>(l) + 1].params = (params.trained_dense(l) + params.trained_experts(l)) * t;
  out.front() = {0, params.trained_embedding()};
  out.back() = {s.layout.pp - 1, params.trained_head()};  // the last model chunk is on the last stage
  // Scaled to the whole-model count, as the checkpoint is (checkpoint.cpp): a LoRA factor
  // replicated over tp is saved once, and the final norm rides with the last group.
  double sum = 0;
  for (const auto& g : out) sum += g.params;
  const double trained = wl::parameter_split(s).trained;
  if (sum > 0)
    for (auto& g : out) g.params *= trained / sum;
  return out;
}

[[noreturn]] void fail(std::string_view yaml, const std::string& source, const std::string& path, const std::string& what,
                       const std::string& hint) {
  const YNode root = parse_scenario_yaml(yaml, source);
  const Loc at = locate(root, path, source);
  throw ScenarioError(fmt::format("{}:{}:{}: error: {}: {}{}", at.source, at.line, at.col, path, what,
                                  hint.empty() ? "" : fmt::format(" ({})", hint)));
}

void check_same_model(const wl::Scenario& a, const wl::Scenario& b, std::string_view yaml, const std::string& source) {
  const auto& x = a.model;
  const auto& y = b.model;
  const std::tuple<const char*, double, double> fields[] = {
      {"layers", x.layers, y.layers},           {"hidden", double(x.hidden), double(y.hidden)},
      {"heads", x.heads, y.heads},              {"kv_heads", x.kv_heads, y.kv_heads},
      {"ffn_hidden", double(x.ffn_hidden), double(y.ffn_hidden)}, {"vocab", double(x.vocab), double(y.vocab)},
      {"activation", double(x.activation), double(y.activation)}, {"tied_embeddings", x.tied_embeddings, y.tied_embeddings},
      {"moe.experts", x.moe.experts, y.moe.experts},
  };
  for (const auto& [name, va, vb] : fields)
    if (va != vb)
      fail(yaml, source, "model",
           fmt::format("a different model from {} ({}: {} there, {} here)", a.source, name, va, vb),
           "reshard moves one model's checkpoint between two layouts; give both scenarios the same model");
  const auto& ta = a.training;
  const auto& tb = b.training;
  if (ta.method != tb.method || ta.frozen != tb.frozen ||
      (ta.method == wl::TrainingMethod::lora && (ta.lora.rank != tb.lora.rank || ta.lora.targets != tb.lora.targets)))
    fail(yaml, source, "training", fmt::format("trains other parameters than {}", a.source),
         "the checkpoint holds the trained parameters: method, frozen parts and LoRA adapters must match");
  const auto& pa = a.precision;
  const auto& pb = b.precision;
  if (pa.weights != pb.weights || pa.master != pb.master || pa.optimizer != pb.optimizer)
    fail(yaml, source, "precision", fmt::format("other state bytes per parameter than {}", a.source),
         "converting precisions is not a re-layout");
  if (a.layout.ep > 1 || b.layout.ep > 1)
    fail(yaml, source, "layout.ep", "expert parallelism is not modelled by reshard", "use ep: 1 in both scenarios");
}

double overlap(double a0, double a1, double b0, double b1) { return std::max(0.0, std::min(a1, b1) - std::max(a0, b0)); }

}  // namespace

ReshardPlan plan_reshard(const wl::Scenario& from, const wl::Scenario& to, std::string_view to_yaml, const std::string& to_source) {
  check_same_model(from, to, to_yaml, to_source);
  ReshardPlan p;
  p.from = from.name;
  p.to = to.name;
  const auto& F = from.layout;
  const auto& T = to.layout;
  const std::vector<Group> gf = groups(from), gt = groups(to);
  const auto& pr = from.precision;
  const double w = pr.weights, mo = std::max(0, pr.master) + pr.optimizer;
  for (const auto& g : gf) p.checkpoint_bytes += g.params * (w + mo);

  for (std::size_t g = 1; g + 1 < gf.size(); ++g) p.layers_moved += gf[g].stage != gt[g].stage;
  const bool same_stages = F.pp == T.pp && p.layers_moved == 0;
  p.kind = !same_stages ? "moves layers between stages"
           : (F.tp == T.tp && F.dp == T.dp && F.zero == T.zero) ? "unchanged" : "re-slicing";

  const int ft = F.tp, fd = F.dp, n = ft * fd;  // source pieces per group
  p.source_shards = F.pp * n;
  p.target_ranks = T.pp * T.tp * T.dp;
  for (int st = 0; st < T.pp; ++st)
    for (int j = 0; j < T.tp; ++j)
      for (int k = 0; k < T.dp; ++k) {
        ReshardRank r{st, j, k, 0, {}};
        std::map<std::tuple<int, int, int>, double> by_source;
        const double slice0 = double(j) / T.tp, slice1 = double(j + 1) / T.tp;
        const double piece0 = (j + double(k) / T.dp) / T.tp, piece1 = (j + double(k + 1) / T.dp) / T.tp;
        const double w0 = T.zero >= 3 ? piece0 : slice0, w1 = T.zero >= 3 ? piece1 : slice1;
        const double m0 = T.zero >= 1 ? piece0 : slice0, m1 = T.zero >= 1 ? piece1 : slice1;
        for (std::size_t g = 0; g < gt.size(); ++g) {
          if (gt[g].stage != st || gf[g].params <= 0) continue;
          const int lo = static_cast<int>(std::floor(w0 * n + 1e-9)), hi = static_cast<int>(std::ceil(w1 * n - 1e-9));
          for (int q = std::max(0, lo); q < std::min(n, hi); ++q) {
            const double q0 = double(q) / n, q1 = double(q + 1) / n;
            const double bytes = gf[g].params * (overlap(w0, w1, q0, q1) * w + overlap(m0, m1, q0, q1) * mo);
            if (bytes <= 0) continue;
            by_source[{gf[g].stage, q / fd, q % fd}] += bytes;
          }
        }
        for (const auto& [src, bytes] : by_source) {
          r.reads.push_back({fmt::format("s{}.t{}.d{}", std::get<0>(src), std::get<1>(src), std::get<2>(src)), bytes});
          r.bytes += bytes;
        }
        p.bytes_moved += r.bytes;
        p.max_rank_read_bytes = std::max(p.max_rank_read_bytes, r.bytes);
        p.ranks.push_back(std::move(r));
      }

  // Time: storage when either scenario prices checkpoints, else peer to peer.
  const wl::CheckpointSpec& c = to.checkpoint.enabled ? to.checkpoint : from.checkpoint;
  const int nodes = std::max(1, to.cluster.nodes);
  const int per_node = std::min(p.target_ranks, std::max(1, to.cluster.gpus_per_node));
  if (c.enabled) {
    const double A = c.storage_Bps > 0 ? c.storage_Bps : c.storage_per_node_Bps * nodes;
    const double P = c.storage_per_node_Bps > 0 ? c.storage_per_node_Bps : c.storage_Bps / nodes;
    p.medium = "storage";
    p.bandwidth_Bps = A;
    p.time_s = std::max(p.bytes_moved / A, per_node * p.max_rank_read_bytes / P);
  } else {
    const auto& inter = to.cluster.inter;
    const int nics = inter.nics_per_node > 0 ? inter.nics_per_node : to.cluster.gpus_per_node;
    p.medium = "network";
    p.bandwidth_Bps = nodes > 1 ? inter.bandwidth_Bps * nics / std::max(1, to.cluster.gpus_per_node) : to.cluster.intra.bandwidth_Bps;
    p.time_s = p.max_rank_read_bytes / p.bandwidth_Bps;
  }
  return p;
}

std::string format_reshard(const ReshardPlan& p) {
  std::string out = fmt::format("layoutsim reshard: {} -> {} ({})\n\n", p.from, p.to, p.kind);
  out += fmt::format("  checkpoint             {} (trained state)\n", human_bytes(p.checkpoint_bytes));
  out += fmt::format("  shards                 {} source, {} target ranks\n", p.source_shards, p.target_ranks);
  if (p.layers_moved > 0) out += fmt::format("  layers changing stage  {}\n", p.layers_moved);
  out += fmt::format("  bytes moved            {}\n", human_bytes(p.bytes_moved));
  out += fmt::format("  largest rank read      {}\n", human_bytes(p.max_rank_read_bytes));
  out += fmt::format("  time                   {} over the {} ({}/s)\n", human_seconds(p.time_s), p.medium, human_bytes(p.bandwidth_Bps));
  out += "\nTarget ranks (stage.tp.dp: bytes <- source shards)\n";
  const std::size_t show = 16;
  for (std::size_t i = 0; i < p.ranks.size() && i < show; ++i) {
    const auto& r = p.ranks[i];
    std::string reads;
    for (const auto& rd : r.reads) reads += fmt::format("{}{} {}", reads.empty() ? "" : ", ", rd.source, human_bytes(rd.bytes));
    out += fmt::format("  s{}.t{}.d{}  {:>10}  <- {}\n", r.stage, r.tp, r.dp, human_bytes(r.bytes), reads);
  }
  if (p.ranks.size() > show) out += fmt::format("  ... {} more (--json has all)\n", p.ranks.size() - show);
  return out;
}

std::string reshard_json(const ReshardPlan& p) {
  nlohmann::ordered_json j;
  j["from"] = p.from;
  j["to"] = p.to;
  j["kind"] = p.kind;
  j["layers_moved"] = p.layers_moved;
  j["source_shards"] = p.source_shards;
  j["target_ranks"] = p.target_ranks;
  j["checkpoint_bytes"] = p.checkpoint_bytes;
  j["bytes_moved"] = p.bytes_moved;
  j["max_rank_read_bytes"] = p.max_rank_read_bytes;
  j["time_s"] = p.time_s;
  j["medium"] = p.medium;
  j["bandwidth_bytes_per_s"] = p.bandwidth_Bps;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const auto& r : p.ranks) {
    nlohmann::ordered_json reads = nlohmann::ordered_json::array();
    for (const auto& rd : r.reads) reads.push_back({{"source", rd.source}, {"bytes", rd.bytes}});
    ranks.push_back({{"stage", r.stage}, {"tp", r.tp}, {"dp", r.dp}, {"bytes", r.bytes}, {"reads", std::move(reads)}});
  }
  j["ranks"] = std::move(ranks);
  return j.dump(2) + "\n";
}

}  // namespace ls::tools

namespace ls::tools {

int reshard_command(const std::string& from_path, const std::string& to_path, const std::string& json_path) {
  const wl::ResolvedScenario from = load_scenario_file(from_path);
  const wl::ResolvedScenario to = load_scenario_file(to_path);
  std::ifstream in(to_path, std::ios::binary);  // readable: load_scenario_file just read it
  std::ostringstream text;
  text << in.rdbuf();
  const ReshardPlan p = plan_reshard(from.scenario(), to.scenario(), text.str(), to_path);
  if (!json_path.empty()) write_output(json_path, reshard_json(p));
  if (json_path != "-") write_output("-", format_reshard(p));
  return 0;
}

}  // namespace ls::tools

// tools/report/finetune_report.cpp — see finetune_report.hpp.
#include "tools/report/finetune_report.hpp"

#include <cmath>

#include <fmt/format.h>

#include "tools/report/human_units.hpp"
#include "workloads/cost/training_method.hpp"

namespace ls::tools {

namespace {
using nlohmann::ordered_json;
ordered_json num(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); }

/// Intervals and MTBFs run to hours and days: seconds below a minute, else min / h / d.
std::string duration(double s) {
  if (s < 60) return human_seconds(s);
  if (s < 3600) return fmt::format("{:.4g} min", s / 60);
  if (s < 86400 * 3) return fmt::format("{:.4g} h", s / 3600);
  return fmt::format("{:.4g} d", s / 86400);
}

std::string params_text(double p) {
  if (p >= 1e9) return fmt::format("{:.4g} G", p / 1e9);
  if (p >= 1e6) return fmt::format("{:.4g} M", p / 1e6);
  return fmt::format("{:.4g}", p);
}
}  // namespace

static void append_parameters_line(std::string& out, const std::string& method, double trained, double frozen, double adapters) {
  out += fmt::format("\nParameters ({}): {} trained, {} frozen", method, params_text(trained), params_text(frozen));
  if (adapters > 0) out += fmt::format(" ({} in LoRA adapters)", params_text(adapters));
  out += "\n";
}

void append_plan_parameters(std::string& out, const wl::Scenario& s) {
  if (s.training.method == wl::TrainingMethod::pretrain && s.training.frozen.empty()) return;
  const wl::ParameterSplit p = wl::parameter_split(s);
  append_parameters_line(out, wl::training_method_name(s.training.method), p.trained, p.frozen, p.adapters);
}

void append_finetune_summary(std::string& out, const wl::Result& r) {
  if (r.training_method != "pretrain" || r.frozen_parameters > 0)
    append_parameters_line(out, r.training_method, r.trained_parameters, r.frozen_parameters, r.adapter_parameters);
  if (!r.has_checkpoint) return;
  const auto& c = r.checkpoint;
  out += fmt::format("\nCheckpoint ({}, {}): {} every {} ({:.4g} steps)\n", c.consolidated ? "consolidated" : "sharded",
                     c.async ? "async" : "sync", human_bytes(c.bytes_total), duration(c.interval_s), c.interval_steps);
  out += fmt::format("  content                weights {}, master {}, optimizer {}\n", human_bytes(c.bytes_weights),
                     human_bytes(c.bytes_master), human_bytes(c.bytes_optimizer));
  out += fmt::format("  shards                 {} (per rank {} .. {}, mean {})\n", c.shards, human_bytes(c.bytes_per_rank_min),
                     human_bytes(c.bytes_per_rank_max), human_bytes(c.bytes_per_rank_mean));
  out += fmt::format("  save                   {} at {} ({} per node)\n", duration(c.save_s),
                     fmt::format("{}/s", human_bytes(c.storage_Bps)), fmt::format("{}/s", human_bytes(c.storage_per_node_Bps)));
  if (c.async)
    out += fmt::format("  async copy             {} stall, {} pinned host memory per node\n", human_seconds(c.copy_s),
                       human_bytes(c.host_bytes_per_node));
  out += fmt::format("  stall per checkpoint   {} = {} of wall-clock time\n", human_seconds(c.stall_s), percent(c.overhead_fraction));
  out += fmt::format("  restore                {} ({} read)\n", duration(c.restore_s), human_bytes(c.restore_bytes));
  if (c.failures)
    out += fmt::format("  failures               cluster MTBF {}; goodput {} at this interval, {} at the optimal {} (Young/Daly)\n",
                       duration(c.mtbf_cluster_s), percent(c.goodput), percent(c.goodput_at_optimal),
                       duration(c.optimal_interval_s));
}

void add_training_memory_json(ordered_json& memory, const wl::Result& r) {
  memory["training_method"] = r.training_method;
  memory["trained_parameters"] = num(r.trained_parameters);
  memory["frozen_parameters"] = num(r.frozen_parameters);
  memory["adapter_parameters"] = num(r.adapter_parameters);
}

void add_checkpoint_json(ordered_json& j, const wl::Result& r) {
  if (!r.has_checkpoint) return;
  const auto& c = r.checkpoint;
  ordered_json e;
  e["format"] = c.consolidated ? "consolidated" : "sharded";
  e["async"] = c.async;
  e["bytes_total"] = num(c.bytes_total);
  e["bytes_weights"] = num(c.bytes_weights);
  e["bytes_master"] = num(c.bytes_master);
  e["bytes_optimizer"] = num(c.bytes_optimizer);
  e["bytes_per_rank_max"] = num(c.bytes_per_rank_max);
  e["bytes_per_rank_min"] = num(c.bytes_per_rank_min);
  e["bytes_per_rank_mean"] = num(c.bytes_per_rank_mean);
  e["shards"] = c.shards;
  ordered_json per_stage = ordered_json::array();
  for (double b : c.shard_bytes_per_stage) per_stage.push_back(num(b));
  e["shard_bytes_per_stage"] = std::move(per_stage);
  e["storage_bytes_per_s"] = num(c.storage_Bps);
  e["storage_bytes_per_s_per_node"] = num(c.storage_per_node_Bps);
  e["interval_s"] = num(c.interval_s);
  e["interval_steps"] = num(c.interval_steps);
  e["save_s"] = num(c.save_s);
  e["copy_s"] = num(c.copy_s);
  e["host_bytes_per_node"] = num(c.host_bytes_per_node);
  e["stall_s"] = num(c.stall_s);
  e["restore_bytes"] = num(c.restore_bytes);
  e["restore_s"] = num(c.restore_s);
  e["overhead_fraction"] = num(c.overhead_fraction);
  if (c.failures) {
    e["mtbf_cluster_s"] = num(c.mtbf_cluster_s);
    e["optimal_interval_s"] = num(c.optimal_interval_s);
    e["goodput_at_optimal"] = num(c.goodput_at_optimal);
  }
  j["checkpoint"] = std::move(e);
  if (c.failures) j["goodput"] = num(c.goodput);
}

}  // namespace ls::tools

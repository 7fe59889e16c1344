// tools/scenario/scenario_convert_training.cpp — `training:`, `checkpoint:` and `failures:` of
// the located YAML tree into wl::TrainingSpec, wl::CheckpointSpec, wl::FailuresSpec.
#include <charconv>
#include <cmath>

#include "tools/scenario/scenario_convert.hpp"
#include "tools/scenario/scenario_keys.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "workloads/cost/training_method.hpp"

namespace ls::tools {
namespace {

/// "500 steps" → {500, 0}; "30 min" → {0, 1800}: a count of steps or a duration in
/// s, min, h or d (hours and days are what intervals and MTBFs are quoted in).
struct Interval {
  double steps = 0, seconds = 0;
};

std::optional<Interval> interval(Reader& r, const YNode& n, const std::string& path, bool allow_steps) {
  const std::string example = allow_steps ? "\"500 steps\" or \"30 min\"" : "\"50000 h\"";
  auto text = r.scalar(n, path, fmt::format("a count of steps or a duration, like {}", example));
  if (!text) return std::nullopt;
  const std::string_view t = *text;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  std::string_view unit(ptr, static_cast<std::size_t>(t.data() + t.size() - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (ec != std::errc() || !std::isfinite(v) || v <= 0 || unit.empty()) {
    r.diag().error(n.loc, path, fmt::format("expected a positive number with a unit, like {}, got \"{}\"", example, t),
                   allow_steps ? "units: steps, s, min, h, d" : "units: s, min, h, d");
    return std::nullopt;
  }
  Interval out;
  if (allow_steps && (unit == "steps" || unit == "step")) {
    if (v != std::floor(v) || v > 1e9) {
      r.diag().error(n.loc, path, fmt::format("a whole number of steps up to 1e9, got {}", v));
      return std::nullopt;
    }
    out.steps = v;
    return out;
  }
  const double scale = unit == "s" ? 1 : unit == "min" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : 0;
  if (scale == 0) {
    r.diag().error(n.loc, path, fmt::format("unknown unit \"{}\"", unit), allow_steps ? "units: steps, s, min, h, d" : "units: s, min, h, d");
    return std::nullopt;
  }
  out.seconds = v * scale;
  return out;
}

/// A list of names from `valid`, each at most once.
std::optional<std::vector<std::string>> name_list(Reader& r, const YNode& n, const std::string& path,
                                                  const std::vector<std::string>& valid) {
  if (!r.seq(n, path, "names")) return std::nullopt;
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    const std::string at = join_index(path, i);
    auto v = r.choice(n.items[i], at, valid);
    if (!v) return std::nullopt;
    if (std::find(out.begin(), out.end(), *v) != out.end()) {
      r.diag().error(n.items[i].loc, at, fmt::format("\"{}\" is listed twice", *v));
      return std::nullopt;
    }
    out.push_back(*v);
  }
  return out;
}

void training(Reader& r, const YNode& n, wl::Scenario& s) {
  wl::TrainingSpec& t = s.training;
  if (!r.map(n, "training", keys("training"))) return;
  if (const YEntry* e = n.find("method")) {
    if (auto v = r.choice(e->value, "training.method", values("training.method")))
      t.method = *v == "lora" ? wl::TrainingMethod::lora
                 : *v == "full-finetune" ? wl::TrainingMethod::full_finetune
                                         : wl::TrainingMethod::pretrain;
  }
  if (const YEntry* e = n.find("frozen")) {
    if (auto v = name_list(r, e->value, "training.frozen", wl::frozen_part_names())) t.frozen = *v;
  }
  if (const YEntry* e = n.find("lora")) {
    if (!r.map(e->value, "training.lora", keys("training.lora"))) return;
    t.lora.given = true;
    const YNode& l = e->value;
    for (const auto& e : l.entries) read_bound_key(r, e.value, join_key("training.lora", e.key), s);
    if (const YEntry* k = l.find("targets")) {
      if (auto v = name_list(r, k->value, "training.lora.targets", wl::lora_target_names())) {
        if (v->empty()) r.diag().error(k->value.loc, "training.lora.targets", "at least one target", "targets: qkv, proj, fc1, fc2");
        else t.lora.targets = *v;
      }
    }
  }
}

void checkpoint(Reader& r, const YNode& n, wl::Scenario& s) {
  wl::CheckpointSpec& c = s.checkpoint;
  if (!r.map(n, "checkpoint", keys("checkpoint"))) return;
  c.enabled = true;
  if (const YEntry* e = n.find("every")) {
    if (auto v = interval(r, e->value, "checkpoint.every", true)) {
      c.every_steps = static_cast<int>(v->steps);
      c.every_s = v->seconds;
    }
  }
  if (const YEntry* e = n.find("storage_bandwidth")) assign(c.storage_Bps, r.bandwidth(e->value, "checkpoint.storage_bandwidth"));
  if (const YEntry* e = n.find("storage_bandwidth_per_node"))
    assign(c.storage_per_node_Bps, r.bandwidth(e->value, "checkpoint.storage_bandwidth_per_node"));
  for (const auto& e : n.entries) read_bound_key(r, e.value, join_key("checkpoint", e.key), s);
}

void failures(Reader& r, const YNode& n, wl::FailuresSpec& f) {
  if (!r.map(n, "failures", keys("failures"))) return;
  if (const YEntry* e = n.find("mtbf_per_gpu")) {
    if (auto v = interval(r, e->value, "failures.mtbf_per_gpu", false)) f.mtbf_per_gpu_s = v->seconds;
  }
}

}  // namespace

void convert_training(const YNode& root, Reader& r, wl::Scenario& s) {
  if (const YEntry* e = root.find("training")) training(r, e->value, s);
  if (const YEntry* e = root.find("checkpoint")) checkpoint(r, e->value, s);
  if (const YEntry* e = root.find("failures")) failures(r, e->value, s.failures);
}

}  // namespace ls::tools

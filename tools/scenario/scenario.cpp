// tools/scenario/scenario.cpp — the scenario loader's public API: read the text, build the
// located tree (yaml_tree), apply --set overrides (set_overrides), convert it
// (scenario_convert), then wl::resolve it, pointing each of resolve's errors at the
// key it blames in the file. The keys, their types, defaults and docs are the key
// table (tools/scenario/scenario_keys.cpp), printed into the README by `layoutsim keys`.
#include "tools/scenario/scenario.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "tools/scenario/input_limits.hpp"
#include "tools/scenario/scenario_convert.hpp"
#include "tools/scenario/set_overrides.hpp"
#include "tools/scenario/yaml_tree.hpp"
#include "workloads/model/layout.hpp"

namespace ls::tools {
namespace embedded {
extern const std::string_view default_scenario_yaml_text;  // generated: default_scenario.cpp
}

namespace {

/// The scenario as written (sets applied), before resolve(), with the tree its issues
/// are located in.
struct Parsed {
  YNode root;
  wl::Scenario partial;
};

Parsed parse_partial(std::string_view yaml, const std::string& source_name, const std::vector<std::string>& sets) {
  YNode root = parse_scenario_yaml(yaml, source_name);
  Diag d;
  apply_sets(root, sets, d);
  d.throw_if_any();
  wl::Scenario partial = convert_scenario(root, source_name, d);
  d.throw_if_any();
  return {std::move(root), std::move(partial)};
}

/// resolve(), its issues located in the tree (ScenarioError).
wl::ResolvedScenario resolve_located(const YNode& root, wl::Scenario partial, const std::string& source_name) {
  Diag d;
  try {
    return wl::resolve(std::move(partial));
  } catch (const wl::InvalidScenario& e) {
    for (const auto& issue : e.issues()) {
      const std::string& blame = issue.blame_path.empty() ? issue.key_path : issue.blame_path;
      d.error(locate(root, blame, source_name, issue.at_value), issue.key_path, issue.message, issue.hint);
    }
    d.throw_if_any();
    throw;
  }
}

std::string read_scenario_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ScenarioError(fmt::format("{}:1:1: error: is a directory, not a scenario file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw ScenarioError(fmt::format("{}:1:1: error: cannot open the scenario file: {}", path, std::strerror(err)));
  }
  std::string text;  // past kMaxScenarioBytes, load_scenario_string reports the size
  if (!read_at_most(in, kMaxScenarioBytes, text))
    throw ScenarioError(fmt::format("{}:1:1: error: cannot read the scenario file", path));
  return text;
}

/// Sequences per step as the layout states them: global_batch, else micro-batches ×
/// micro-batch size × dp (dp unset: resolve()'s derivation).
std::int64_t stated_global_batch(const wl::Scenario& s) {
  const auto& L = s.layout;
  if (L.global_batch > 0) return L.global_batch;
  return std::int64_t{std::max(1, L.microbatches)} * std::max(1, L.microbatch_size) * wl::derived_dp(L, s.cluster);
}

}  // namespace

wl::ResolvedScenario load_scenario_string(std::string_view yaml, const std::string& source_name,
                                          const std::vector<std::string>& sets) {
  Parsed p = parse_partial(yaml, source_name, sets);
  return resolve_located(p.root, std::move(p.partial), source_name);
}

wl::ResolvedScenario load_scenario_file(const std::string& path, const std::vector<std::string>& sets) {
  return load_scenario_string(read_scenario_file(path), path, sets);
}

SearchBase load_search_base_string(std::string_view yaml, const std::string& source_name, const std::vector<std::string>& sets) {
  Parsed p = parse_partial(yaml, source_name, sets);
  const std::int64_t global_batch = stated_global_batch(p.partial);
  std::string first_issue;
  try {
    return {wl::resolve(p.partial), global_batch, ""};
  } catch (const wl::InvalidScenario& e) {
    const auto& issues = e.issues();
    const bool layout_only = std::all_of(issues.begin(), issues.end(), [](const wl::ScenarioIssue& i) {
      return i.key_path.rfind("layout.", 0) == 0;
    });
    if (!layout_only) resolve_located(p.root, p.partial, source_name);  // throws the located errors
    if (!issues.empty()) first_issue = issues.front().key_path + ": " + issues.front().message;
  }
  // The search replaces the layout: start from a neutral one the cluster always admits.
  wl::Scenario neutral = p.partial;
  auto& L = neutral.layout;
  L.tp = L.pp = L.cp = L.ep = 1;
  L.expert_tp = 0;
  L.dp = 0;
  L.virtual_stages = 1;
  L.schedule = wl::Schedule::one_f_one_b;
  L.stage_layers_mode = wl::StageLayersMode::auto_even;
  L.stage_layers.clear();
  L.recompute_layers = {};
  L.microbatch_size = 1;
  L.microbatches = 1;
  L.global_batch = 0;
  L.shard_group = 0;
  try {
    return {wl::resolve(std::move(neutral)), global_batch,
            fmt::format("the scenario's own layout does not resolve ({}); the search starts from its cluster, model and "
                        "global batch of {} sequences",
                        first_issue, global_batch)};
  } catch (const wl::InvalidScenario&) {
    resolve_located(p.root, p.partial, source_name);  // the user's own errors, located
    throw;
  }
}

SearchBase load_search_base_file(const std::string& path, const std::vector<std::string>& sets) {
  return load_search_base_string(read_scenario_file(path), path, sets);
}

SearchBase load_default_search_base(const std::vector<std::string>& sets) {
  return load_search_base_string(default_scenario_yaml(), "<default>", sets);
}

std::string_view default_scenario_yaml() { return embedded::default_scenario_yaml_text; }

wl::ResolvedScenario load_default_scenario(const std::vector<std::string>& sets) {
  return load_scenario_string(default_scenario_yaml(), "<default>", sets);
}

}  // namespace ls::tools

// tests/test_key_bindings.cpp — the bound rows of the key table (scenario_keys.hpp) are
// the one definition of their keys: the default a row states is what resolve() gives
// when the key is left out, every allowed value of a choice reads back as itself, and
// an integer just outside a row's bounds is a located error naming the key.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/scenario/scenario.hpp"
#include "tools/scenario/scenario_convert.hpp"
#include "tools/scenario/scenario_keys.hpp"
#include "tools/scenario/set_overrides.hpp"
#include "tools/scenario/yaml_tree.hpp"

using namespace ls;
using namespace ls::tools;

namespace {

// The smallest scenario: everything but the model left to its default (the GPU named,
// so that a key set under it merges over the preset, as the default GPU is).
constexpr std::string_view kMinimal = "model: llama3-8b\ncluster: {gpu: h100-sxm}\n";
// The keys under model.moe need a MoE model to sit in.
constexpr std::string_view kMoe = "model: mixtral-8x7b\ncluster: {gpu: h100-sxm}\n";

// The keys of an optional section need the section's required keys beside them.
constexpr std::string_view kCheckpoint = "model: llama3-8b\ncluster: {gpu: h100-sxm}\ncheckpoint: {every: 500 steps, storage_bandwidth: 20 GB/s}\n";
constexpr std::string_view kLora = "model: llama3-8b\ncluster: {gpu: h100-sxm}\ntraining: {method: lora}\n";

std::string_view base_of(std::string_view path) {
  if (path.rfind("model.moe.", 0) == 0) return kMoe;
  if (path.rfind("checkpoint.", 0) == 0) return kCheckpoint;
  if (path.rfind("training.lora.", 0) == 0) return kLora;
  return kMinimal;
}

std::vector<const ScenarioKey*> bound_keys() {
  std::vector<const ScenarioKey*> out;
  for (const auto& k : scenario_keys())
    if (k.binding) out.push_back(&k);
  return out;
}

/// The partial scenario the converter makes of kMinimal with `set` applied (no resolve:
/// a value may need sibling keys that resolve() checks), and the errors it reported.
wl::Scenario converted(const std::string& set, Diag& d) {
  YNode root = parse_scenario_yaml(base_of(set), "minimal.yaml");
  apply_sets(root, {set}, d);
  return convert_scenario(root, "minimal.yaml", d);
}

}  // namespace

TEST_CASE("the key table binds the scalar keys of cluster, the GPU, the model, layout, simulation, implementation and memory") {
  // A new key of these kinds is one row; this list says which ones are bound today.
  std::vector<std::string> paths;
  for (const auto* k : bound_keys()) paths.emplace_back(k->path);
  CHECK(paths.size() >= 70);
  for (const char* p : {"cluster.nodes", "cluster.inter_node.latency", "layout.tp", "layout.schedule", "layout.cp_kind", "simulation.steps", "implementation.attention",
                        "model.layers", "model.activation", "model.moe.top_k", "cluster.gpu.memory", "cluster.gpu.kernel_overhead",
                        "memory.fragmentation"})
    CHECK(std::find(paths.begin(), paths.end(), p) != paths.end());
}

TEST_CASE("every bound key's stated default, spelled out, resolves as leaving the key out") {
  for (const auto* k : bound_keys()) {
    if (k->binding->default_value.empty()) continue;  // derived by resolve() or from a preset
    CAPTURE(k->path);
    CAPTURE(k->binding->default_value);
    const std::string set = std::string(k->path) + "=" + k->binding->default_value;
    const wl::ResolvedScenario absent = load_scenario_string(base_of(k->path), "minimal.yaml");
    const wl::ResolvedScenario given = load_scenario_string(base_of(k->path), "minimal.yaml", {set});
    CHECK(k->binding->show(given) == k->binding->show(absent));
  }
}

TEST_CASE("every allowed value of a bound choice reads back as itself") {
  for (const auto* k : bound_keys()) {
    for (const auto value : k->values) {
      CAPTURE(k->path);
      CAPTURE(value);
      Diag d;
      const wl::Scenario s = converted(std::string(k->path) + "=" + std::string(value), d);
      CHECK(d.errors.empty());
      CHECK(k->binding->show(s) == value);
    }
  }
}

TEST_CASE("an integer just outside a bound row's range is an error naming the key") {
  for (const auto* k : bound_keys()) {
    const std::string type(k->type);
    if (type.rfind("int in [", 0) != 0) continue;
    const auto comma = type.find(',');
    const long long lo = std::stoll(type.substr(8, comma - 8));
    const long long hi = std::stoll(type.substr(comma + 2));
    // One past each bound; past INT64_MAX, the decimal text of 2^63 (not an int64).
    const std::string above = hi == std::numeric_limits<long long>::max() ? "9223372036854775808" : std::to_string(hi + 1);
    for (const std::string& bad : {std::to_string(lo - 1), above}) {
      CAPTURE(k->path);
      CAPTURE(bad);
      Diag d;
      (void)converted(std::string(k->path) + "=" + bad, d);
      REQUIRE(d.errors.size() == 1);
      CHECK(d.errors.front().find("error: " + std::string(k->path) + ": ") != std::string::npos);
    }
    for (const long long good : {lo, hi}) {
      CAPTURE(k->path);
      Diag d;
      const wl::Scenario s = converted(std::string(k->path) + "=" + std::to_string(good), d);
      // A bound may still break a rule across keys (131072 nodes of 8 GPUs; top_k above
      // the experts), but never the row's own range.
      for (const auto& e : d.errors) CHECK(e.find("out of range") == std::string::npos);
      CHECK(k->binding->show(s) == std::to_string(good));
    }
  }
}

TEST_CASE("an enum's values carry their meaning into the reference, one phrase each") {
  // The value docs come from the enum's NameTable (workloads/spec/names.hpp), the same
  // table the loader and the reports spell the values with.
  int documented = 0;
  for (const auto& k : scenario_keys()) {
    if (k.value_docs.empty()) continue;
    CAPTURE(k.path);
    REQUIRE(k.value_docs.size() == k.values.size());
    for (std::size_t i = 0; i < k.values.size(); ++i) {
      CHECK_FALSE(k.value_docs[i].empty());
      CHECK(scenario_key_description(k).find(fmt::format("`{}` — {}", k.values[i], k.value_docs[i])) != std::string::npos);
    }
    ++documented;
  }
  CHECK(documented >= 10);  // schedule, recompute, cp_kind, stage_layers, attention, gather, reshard, activation, symmetry, network
}

// tools/scenario/scenario.hpp — the scenario loader: YAML text → wl::ResolvedScenario.
//
// The loader (tools/yaml_tree, set_overrides, scenario_reader, scenario_convert*)
// is the only code in layoutsim that touches yaml-cpp. It reads what the file says
// into a partial wl::Scenario and hands it to wl::resolve, which fills the defaults
// and checks the rules exactly as for a hand-built Scenario. The keys, units and
// defaults are the key table (tools/scenario/scenario_keys.hpp), from which the README's
// scenario reference is generated; see also README.md.
//
// Errors are compiler style, one per line of ScenarioError::what():
//   FILE:LINE:COL: error: KEY.PATH: what was expected (hint)
// LINE and COL are 1-based. Errors in a `--set KEY=VALUE` override are located at
// `--set:N:COL`, N being the override's 1-based position in `sets` and COL the column
// inside the "KEY=VALUE" text. The loader reports every problem it can find in one
// pass (all unknown keys, all bad values); wl::resolve's rules (derived defaults,
// layout rules, perturbed link names against the built topology) are checked only
// once the file itself converts cleanly, and each is located at the key it blames.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/error.hpp"
#include "workloads/resolve.hpp"

namespace ls::tools {

/// An invalid scenario: what() holds one compiler-style message per line.
struct ScenarioError : UserError {
  using UserError::UserError;
  std::string message() const override { return what(); }  // already located, one error per line
};

/// Reads and loads a scenario file. `sets` are "KEY.PATH=YAML-VALUE" overrides applied
/// in order to the document tree before conversion (later ones win). Throws ScenarioError.
wl::ResolvedScenario load_scenario_file(const std::string& path, const std::vector<std::string>& sets = {});

/// Loads scenario text; `source_name` is used in messages and stored in Scenario::source
/// (the name defaults to it: "dir/x.yaml" → "x", "<default>" → "default").
wl::ResolvedScenario load_scenario_string(std::string_view yaml, const std::string& source_name,
                                          const std::vector<std::string>& sets = {});

/// The base of a layout search: the scenario resolved as load_scenario_string does, but
/// when its own layout fails only the layout rules (layout.* errors; the search replaces
/// the layout anyway) it is resolved again with a neutral layout (every GPU
/// data-parallel, one micro-batch of one sequence, the user's other layout keys kept),
/// and `layout_note` says so. `global_batch`: the scenario's sequences per step
/// (layout.global_batch, else micro-batches × micro-batch size × dp). Errors outside
/// the layout, or a neutral layout that fails too, throw ScenarioError as the loader does.
struct SearchBase {
  wl::ResolvedScenario scenario;
  std::int64_t global_batch = 0;
  std::string layout_note;  // empty when the scenario's own layout resolved
};
SearchBase load_search_base_string(std::string_view yaml, const std::string& source_name, const std::vector<std::string>& sets = {});
SearchBase load_search_base_file(const std::string& path, const std::vector<std::string>& sets = {});
SearchBase load_default_search_base(const std::vector<std::string>& sets = {});

/// The built-in default scenario's YAML (tools/scenario/default_scenario.yaml, embedded at build time).
std::string_view default_scenario_yaml();

/// load_scenario_string(default_scenario_yaml(), "<default>", sets).
wl::ResolvedScenario load_default_scenario(const std::vector<std::string>& sets = {});

}  // namespace ls::tools
